# Sourced by integration tests (not a test itself: tests/integration/*.sh
# are the tests). Under the ASan+UBSan build the agent reports what the
# sanitizers find (a leak at exit too) on its stderr, which the tests keep in
# log files; nothing else would notice, since the agent may still behave.

# sanitizer_findings FILE...: prints the first finding and fails if any file
# has one.
sanitizer_findings() {
        local f pat='ERROR: (Address|Leak)Sanitizer|runtime error:'
        for f in "$@"; do
                [ -f "$f" ] || continue
                if grep -qE "$pat" "$f"; then
                        echo "FAIL: a sanitizer finding in $(basename "$f"):"
                        grep -m1 -A30 -E "$pat" "$f"
                        return 1
                fi
        done
        return 0
}
