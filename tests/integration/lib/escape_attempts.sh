# shellcheck shell=sh
# The mount and exec escape attempts of the escape suite (issue 15), shared
# by tests/integration/escapes.sh (bash, cgroup v1 here) and the cgroup v2
# VM (tests/vm/init.sh under busybox sh, run by cgroupv2_qemu.sh): plain
# POSIX sh, so both run the very same pods and checks. docs/security.md
# lists each attempt with its defence.
#
# The caller provides:
#   $tmp      a writable work directory (pod manifests, outputs)
#   $logs     the --pod-logs-dir of the runs
#   $root     the --root-dir (for `image import`)
#   $CUBELET  the cubelet binary (its hash: the CVE-2019-5736 check)
#   $esc_tars the directory of the hostile image archives (escape_make_tars)
#   run NAME [FLAGS]   runs $tmp/NAME.yaml with `cubelet run-pod`; sets rc;
#                      $tmp/NAME.jsonl (status lines), $tmp/NAME.err (events)
#   attempt NAME       an attempt starts: returns 0 to make it, non-zero to
#                      skip its body (escape_names lists the names that way)
#   refused [DETAIL] / escaped DETAIL   its outcome
# Each attempt function begins with `attempt "NAME" || return 0`.

# The mount and exec attempts, in order (esc_proc_exe reads esc_pause's
# output).
escape_mount_exec="esc_vol_dev esc_vol_proc esc_vol_link esc_null_swap esc_workdir_fd esc_fds
esc_exec_workdir esc_pause esc_proc_exe esc_self_exe esc_ro_volume esc_ro_symlink esc_setup_window
esc_setup_window_ptrace esc_sysfs esc_propagation
esc_import_fifo esc_import_device esc_import_symlink"
# Run by escapes.sh on the host only: in the software-emulated v2 VM the
# watcher of esc_exec_window_ptrace saw no probe process at all in 2 of 4
# runs (looked=0, even over 30 s; the probes themselves ran there), so
# there it proves nothing either way.
escape_host_only="esc_exec_window_ptrace"

# escape_run LIST: each attempt of LIST.
escape_run() {
  for f in $1; do "$f"; done
}

# escape_names LIST: the name of each attempt of LIST, one a line (the
# attempts are not made).
escape_names() (
  attempt() { echo "$1"; return 1; }
  for f in $1; do "$f"; done
)

pod_log() { cat "$logs"/default_"$1"_*/"${2:-main}"/0.log 2>/dev/null | sed 's/^[^ ]* std[a-z]* [FP] //'; }
# said NAME TEXT: the pod's status lines or events contain TEXT
said() { grep -qF -- "$2" "$tmp/$1.jsonl" "$tmp/$1.err"; }
# grep without -q reads all its input: with -q it exits at the first match
# and, under pipefail, printf (line-buffered, one write per line) can die
# of SIGPIPE on a later line, failing the check although the line is there
# ("the pause process is not confined" with every line present, once)
has() { printf '%s\n' "$1" | grep -E -- "$2" >/dev/null; }

# pod_head NAME [SPEC-FRAGMENT]: the manifest's start, through "containers:"
# (hostNetwork: the pods need no CNI network; restartPolicy Never).
pod_head() {
  cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  hostNetwork: true
${2:-}
  containers:
EOF
}
# pod NAME CONTAINER-FRAGMENT [SPEC-FRAGMENT]: $tmp/NAME.yaml, a pod whose
# one container "main" runs busybox; the fragment is YAML for the container
# (indented 4) after "image:".
pod() {
  {
    pod_head "$1" "${3:-}"
    printf '  - name: main\n    image: busybox:1.36\n%s\n' "$2"
  } >"$tmp/$1.yaml"
}

# --- item 1: the masked-path source (runc CVE-2025-31133) ------------------------------
# refused_start NAME WHAT MESSAGE: the container must not run, and the
# refusal must say MESSAGE
refused_start() {
  if pod_log "$1" | grep started >/dev/null; then escaped "the container ran with $2"
  elif said "$1" "$3"; then refused "the start is refused"
  else escaped "no refusal message: $(tail -3 "$tmp/$1.err")"; fi
}

esc_vol_dev() {
  attempt "CVE-2025-31133: a volume over /dev" || return 0
  pod vol-dev "    command: [sh, -c, 'echo started']
    volumeMounts: [{name: v, mountPath: /dev}]" "  volumes: [{name: v, emptyDir: {}}]"
  run vol-dev
  refused_start vol-dev "a volume on /dev" "covers the runtime's /dev or /proc"
}

esc_vol_proc() {
  attempt "CVE-2025-31133: a volume in /proc" || return 0
  pod vol-proc "    command: [sh, -c, 'echo started']
    volumeMounts: [{name: v, mountPath: /proc/sys}]" "  volumes: [{name: v, emptyDir: {}}]"
  run vol-proc
  refused_start vol-proc "a volume on /proc/sys" "covers the runtime's /dev or /proc"
}

esc_vol_link() {
  attempt "CVE-2025-31133: a volume reaching /proc through a symlink in another volume" || return 0
  mkdir -p "$tmp/linkvol"
  ln -sfn /proc "$tmp/linkvol/p"
  pod vol-link "    command: [sh, -c, 'echo started']
    volumeMounts: [{name: l, mountPath: /l}, {name: v, mountPath: /l/p/sys}]" \
    "  volumes: [{name: l, hostPath: {path: $tmp/linkvol}}, {name: v, emptyDir: {}}]"
  run vol-link
  refused_start vol-link "a volume on /proc/sys" "is in /proc: refused"
}

esc_null_swap() {
  attempt "CVE-2025-31133: /dev/null replaced by a host file before the masks" || return 0
  printf 'SECRET\n' >"$tmp/victim"
  pod null-swap "    command: [sh, -c, 'echo pwned > /proc/timer_list; echo pwned > /proc/keys; echo keys=\$(stat -c %t:%T /proc/keys) timer=\$(stat -c %t:%T /proc/timer_list) \$(cat /proc/timer_list /proc/keys | head -c 20)']
    volumeMounts: [{name: v, mountPath: /dev/null}]" \
    "  volumes: [{name: v, hostPath: {path: $tmp/victim, type: File}}]"
  run null-swap
  out=$(pod_log null-swap)
  if [ "$(cat "$tmp/victim")" != SECRET ]; then escaped "the host file was written through a mask: $(cat "$tmp/victim")"
  elif ! has "$out" '^keys=1:3 timer=1:3 *$'; then escaped "the masks are not the null device: $out $(tail -2 "$tmp/null-swap.err")"
  else refused "masks are the runtime's /dev/null"; fi
}

# --- item 2: host fds and dumpability in the setup window (CVE-2024-21626) -------------
esc_workdir_fd() {
  attempt "CVE-2024-21626: workingDir through a leaked fd (/proc/self/fd/N)" || return 0
  # every fd the monitor had open (its state dir among them) is closed
  # before the setup, so no N leads to the host: one container per N
  {
    pod_head wd
    for n in 3 4 5 6 7 8 9; do
      printf '  - name: fd%s\n    image: busybox:1.36\n    command: [sh, -c, "echo cwd=$(pwd); ls /.."]\n    workingDir: /proc/self/fd/%s\n' "$n" "$n"
    done
  } >"$tmp/wd.yaml"
  run wd
  ok=1
  for n in 3 4 5 6 7 8 9; do
    if pod_log wd fd$n | grep cwd= >/dev/null; then ok=0; escaped "started in /proc/self/fd/$n: $(pod_log wd fd$n | head -3)"
    elif ! grep -q "working directory.*/proc/self/fd/$n" "$tmp/wd.err"; then
      ok=0; escaped "fd$n: no refusal of its working directory (rc $rc): $(tail -2 "$tmp/wd.err")"
    fi
  done
  [ $ok -eq 0 ] || refused "each start in /proc/self/fd/3..9 refused"
}

esc_fds() {
  attempt "CVE-2024-21626: fds the container's first process inherits" || return 0
  # (ls in a child of pid 1: a command substitution would give the shell a pipe)
  pod fds "    command: [sh, -c, 'ls -l /proc/1/fd; echo done']"
  run fds
  out=$(pod_log fds | grep -- '->' || true)
  extra=$(printf '%s\n' "$out" | grep -vE ' [012] -> ' || true)
  if [ -z "$out" ]; then escaped "no output: $(tail -3 "$tmp/fds.err")"
  elif [ -n "$extra" ]; then escaped "pid 1 holds more than stdio: $extra"
  else refused "pid 1 has only 0, 1, 2"; fi
}

# --- exec path: CVE-2024-21626 through an exec (probes and kubectl exec share it) --------
esc_exec_workdir() {
  attempt "CVE-2024-21626 via exec: the workingDir swapped for /proc/self/fd/N under exec probes" || return 0
  # The container's workingDir /home becomes a symlink to /proc/self/fd/N
  # (N = 3..9, 1.5 s each) after the start; an exec readiness probe every
  # second runs in the workingDir, as kubectl exec does, through the same
  # `cubelet __exec`. A probe that lands in a host directory would record a
  # cwd outside the container.
  mkdir -p "$tmp/execout"
  pod execwd "    command: [sh, -c, 'sleep 2; for n in 3 4 5 6 7 8 9; do rm -rf /home; ln -s /proc/self/fd/\$n /home; sleep 1.5; done; rm /home; mkdir /home; sleep 2; echo flipped']
    workingDir: /home
    readinessProbe:
      exec: {command: [sh, -c, 'echo \"cwd=\$(pwd -P) ls=\$(ls -a | head -4 | tr \"\\\\n\" ,)\" >> /out/probe.log']}
      periodSeconds: 1
    volumeMounts: [{name: o, mountPath: /out}]" "  volumes: [{name: o, hostPath: {path: $tmp/execout}}]"
  run execwd
  ran=$(grep -c '^cwd=' "$tmp/execout/probe.log" 2>/dev/null || true)
  outside=$(grep -vE '^cwd=/home ' "$tmp/execout/probe.log" 2>/dev/null || true)
  nrefused=$(grep -cE 'working directory .* is outside the container|cannot chdir to the working directory' "$tmp/execwd.err" || true)
  if ! pod_log execwd | grep flipped >/dev/null; then escaped "the container did not run: $(tail -3 "$tmp/execwd.err")"
  elif [ "${ran:-0}" -lt 1 ]; then escaped "no exec ran at all (no positive control): $(grep -i probe "$tmp/execwd.err" | tail -2)"
  elif [ -n "$outside" ]; then escaped "an exec ran outside /home: $outside"
  elif [ "${nrefused:-0}" -lt 1 ]; then escaped "no exec was refused during the swap: $(grep -i 'probe' "$tmp/execwd.err" | tail -3)"
  else refused "$ran exec(s) in /home, $nrefused refused while it pointed at /proc/self/fd/N"; fi
}

# --- items 3 and 4: the pause process; /proc/self/exe (CVE-2019-5736) -------------------
esc_pause() {
  attempt "pause: /proc/1/root of the shared PID namespace with SYS_PTRACE" || return 0
  sha_before=$(sha256sum "$CUBELET" | cut -d' ' -f1)
  pod pause "    command: [sh, -c, 'echo root=\$(ls -A /proc/1/root | wc -l); grep -E \"^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):\" /proc/1/status; echo exe=\$(readlink /proc/1/exe); cat /proc/1/root/etc/hostname && echo READ-HOST-FILE; echo x >> /proc/1/exe && echo WROTE-EXE; echo done']
    securityContext: {capabilities: {add: [SYS_PTRACE]}}" "  shareProcessNamespace: true"
  run pause
  pause_out=$(pod_log pause)
  out=$pause_out
  if ! has "$out" '^done'; then escaped "the probe did not run: $(tail -3 "$tmp/pause.err")"
  elif has "$out" 'READ-HOST-FILE|WROTE-EXE'; then escaped "$out"
  elif ! has "$out" '^root=0$'; then escaped "/proc/1/root is not empty: $out"
  elif ! has "$out" '^CapEff:\s+0+$' || ! has "$out" '^CapBnd:\s+0+$' ||
    ! has "$out" '^NoNewPrivs:\s+1$' || ! has "$out" '^Seccomp:\s+2$'; then
    escaped "the pause process is not confined: $out"
  else refused "empty root, no caps, no_new_privs, seccomp"; fi
}

esc_proc_exe() {
  attempt "CVE-2019-5736: write the runtime binary through /proc/<pid>/exe" || return 0
  out=${pause_out:-}
  same=no
  [ "$(sha256sum "$CUBELET" | cut -d' ' -f1)" = "${sha_before:-}" ] && same=yes
  if has "$out" '^exe=/memfd:cubelet' && ! has "$out" WROTE-EXE && [ $same = yes ]; then
    refused "the runtime runs from a sealed copy ($(printf '%s\n' "$out" | grep '^exe='))"
  else escaped "exe: $(printf '%s\n' "$out" | grep '^exe='), binary unchanged: $same"; fi
}

esc_self_exe() {
  attempt "CVE-2019-5736: ENTRYPOINT [/proc/self/exe]" || return 0
  pod selfexe "    command: [/proc/self/exe, version]"
  run selfexe
  if pod_log selfexe | grep cubelet >/dev/null; then escaped "the container ran the runtime: $(pod_log selfexe)"
  elif said selfexe "may not run the runtime"; then refused "the exec is refused"
  else escaped "no refusal message: $(tail -3 "$tmp/selfexe.err")"; fi
}

# --- item 6: read-only volumes; item 9: /sys -------------------------------------------
esc_ro_volume() {
  attempt "read-only volume stays read-only (remount through the mount's fd)" || return 0
  mkdir -p "$tmp/rovol"
  pod rovol "    command: [sh, -c, 'touch /ro/x 2>/dev/null && echo WROTE; mount -o remount,rw /ro 2>/dev/null && echo REMOUNTED; echo done']
    volumeMounts: [{name: v, mountPath: /ro, readOnly: true}]" \
    "  volumes: [{name: v, hostPath: {path: $tmp/rovol}}]"
  run rovol
  out=$(pod_log rovol)
  if ! has "$out" done; then escaped "did not run: $(tail -3 "$tmp/rovol.err")"
  elif has "$out" 'WROTE|REMOUNTED' || [ -e "$tmp/rovol/x" ]; then escaped "$out"
  else refused "writes fail"; fi
}

# --- item 6, by symlink: the readOnly target planted as a symlink ------------------------
esc_ro_symlink() {
  attempt "read-only remount by path: the readOnly target a symlink (planted in a shared emptyDir) to a writable place" || return 0
  # An init container makes /s/ro (in the emptyDir /s) a symlink to /s/w, a
  # writable directory of the same emptyDir, before the main container's
  # read-only volume is mounted at /s/ro. A remount that resolved the path
  # again could miss the bind; the bind itself is resolved in the rootfs.
  mkdir -p "$tmp/rovol2"
  rm -f "$tmp/rovol2/x"
  pod rolink "    command: [sh, -c, 'touch /s/ro/x 2>/dev/null && echo WROTE-RO; touch /s/w/x 2>/dev/null && echo WROTE-W; grep -c \" /s/w \" /proc/self/mounts; echo done']
    volumeMounts: [{name: s, mountPath: /s}, {name: v, mountPath: /s/ro, readOnly: true}]" \
    "  initContainers:
  - name: plant
    image: busybox:1.36
    command: [sh, -c, 'mkdir -p /s/w && ln -s /s/w /s/ro && echo planted']
    volumeMounts: [{name: s, mountPath: /s}]
  volumes: [{name: s, emptyDir: {}}, {name: v, hostPath: {path: $tmp/rovol2}}]"
  run rolink
  out=$(pod_log rolink)
  if [ -e "$tmp/rovol2/x" ]; then escaped "the read-only volume was written: $out"
  elif ! pod_log rolink plant | grep planted >/dev/null; then escaped "the symlink was not planted: $(tail -3 "$tmp/rolink.err")"
  elif has "$out" done; then
    if has "$out" 'WROTE-RO'; then escaped "the write through /s/ro landed somewhere writable: $out"
    else refused "writes through the symlink fail (the volume is read-only where it landed)"; fi
  elif said rolink "symlink" || said rolink "refus"; then refused "the start is refused: $(grep -o 'symlink[^"]*' "$tmp/rolink.err" | head -1 | cut -c1-100)"
  else escaped "did not run, no refusal: $(tail -3 "$tmp/rolink.err")"; fi
}

# --- item 2, from a sibling: /proc/<pid>/fd and root during the setup window ----------
esc_setup_window() {
  attempt "CVE-2024-21626: a sibling in the shared PID namespace reads /proc/<pid>/fd and /proc/<pid>/root of starting containers" || return 0
  # The watcher loops over every process of the pod's PID namespace for 4 s
  # while four more containers start: for each, /proc/<pid>/root must not
  # show the host (a marker file that exists only on the host) and no fd may
  # point at a host path. The starting process is non-dumpable until its
  # execve and holds no host fd.
  mkdir -p "$tmp/watchbin"
  : >"$tmp/watchbin/host-marker"
  cat >"$tmp/watchbin/watch.sh" <<EOF
me=\$\$
end=\$((\$(date +%s) + 4)); n=0; seen=" "
while [ "\$(date +%s)" -lt "\$end" ]; do
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "\$p" = "\$me" ] && continue
    [ -e "\$d/root$tmp/watchbin/host-marker" ] && echo "HOST-ROOT \$p"
    l=\$(ls -l "\$d/fd/" 2>/dev/null | grep -F -e "$tmp" -e "$root" -e /work)
    [ -n "\$l" ] && echo "HOST-FD \$p \$l"
    case "\$seen" in *" \$p "*) ;; *) seen="\$seen\$p " ;; esac
    n=\$((n + 1))
  done
done
echo "looked=\$n pids=\$(echo \$seen | wc -w)"
EOF
  {
    pod_head swin "  shareProcessNamespace: true
  volumes: [{name: t, hostPath: {path: $tmp/watchbin}}]"
    printf '  - name: watch\n    image: busybox:1.36\n    command: [sh, /t/watch.sh]\n'
    printf '    volumeMounts: [{name: t, mountPath: /t, readOnly: true}]\n'
    for i in 1 2 3 4; do
      printf '  - name: t%s\n    image: busybox:1.36\n    command: [sh, -c, "sleep 0.3"]\n' "$i"
    done
  } >"$tmp/swin.yaml"
  run swin
  out=$(pod_log swin watch)
  if ! has "$out" '^looked='; then escaped "the watcher did not finish: $(tail -3 "$tmp/swin.err")"
  elif has "$out" 'HOST-ROOT|HOST-FD'; then escaped "$(printf '%s\n' "$out" | grep -E 'HOST-' | head -3)"
  else refused "nothing of the host in $(printf '%s\n' "$out" | grep '^looked=')"; fi
}

# ptrace_watcher DIR SECONDS [MINPIDS]: DIR/host-marker (a file only the host
# has) and DIR/watch.sh, a watcher (run in a container with DIR at /t) that
# loops for SECONDS (and on, up to 3 x SECONDS, until it has seen MINPIDS
# other processes: the emulated VM can be slow to start them) over every
# other process of its PID namespace and prints
# HOST-ROOT, HOST-CWD or HOST-FD for any whose /proc/<pid>/root, cwd or an
# fd reaches the marker, then `looked=N pids=M`.
ptrace_watcher() {
  mkdir -p "$1"
  : >"$1/host-marker"
  cat >"$1/watch.sh" <<EOF
me=\$\$
t0=\$(date +%s); n=0; seen=" "
while :; do
  el=\$((\$(date +%s) - t0))
  [ "\$el" -ge $(($2 * 3)) ] && break
  [ "\$el" -ge $2 ] && [ "\$(echo \$seen | wc -w)" -ge ${3:-0} ] && break
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "\$p" = "\$me" ] && continue
    [ -e "\$d/root$1/host-marker" ] && echo "HOST-ROOT \$p"
    [ -e "\$d/cwd$1/host-marker" ] && echo "HOST-CWD \$p"
    for f in "\$d"/fd/*; do
      [ -e "\$f$1/host-marker" ] && echo "HOST-FD \$p \$f"
    done
    case "\$seen" in *" \$p "*) ;; *) seen="\$seen\$p " ;; esac
    n=\$((n + 1))
  done
done
echo "looked=\$n pids=\$(echo \$seen | wc -w)"
EOF
}

# --- item 2 with SYS_PTRACE: the same window, the watcher holding CAP_SYS_PTRACE -------
# CAP_SYS_PTRACE passes ptrace_may_access even for a non-dumpable process:
# only where the starting process stands and what it holds protect it.
# Before session 9 this escaped (27 of the watcher's looks in 6 s reached
# the host's marker file through /proc/<pid>/root: the starting process
# joined the pod's PID namespace before its pivot_root). Now each
# container's root is made before its first process is forked into the
# namespace (runtime/init.c), from the pod's procfs the pause process
# mounted (runtime/pause.c).
esc_setup_window_ptrace() {
  attempt "CVE-2024-21626 with SYS_PTRACE: a sibling with CAP_SYS_PTRACE reads /proc/<pid>/fd, root and cwd of starting containers" || return 0
  ptrace_watcher "$tmp/watchbin2" 6
  {
    pod_head swinp "  shareProcessNamespace: true
  volumes: [{name: t, hostPath: {path: $tmp/watchbin2}}]"
    printf '  - name: watch\n    image: busybox:1.36\n    command: [sh, /t/watch.sh]\n'
    printf '    securityContext: {capabilities: {add: [SYS_PTRACE]}}\n'
    printf '    volumeMounts: [{name: t, mountPath: /t, readOnly: true}]\n'
    for i in 1 2 3 4 5 6 7 8; do
      printf '  - name: t%s\n    image: busybox:1.36\n    command: [sh, -c, "sleep 0.2"]\n' "$i"
    done
  } >"$tmp/swinp.yaml"
  run swinp
  out=$(pod_log swinp watch)
  if ! has "$out" '^looked='; then escaped "the watcher did not finish: $(tail -3 "$tmp/swinp.err")"
  elif has "$out" 'HOST-'; then escaped "$(printf '%s\n' "$out" | grep -E 'HOST-' | cut -d' ' -f1 | sort | uniq -c | tr '\n' ' ')"
  else refused "nothing of the host in $(printf '%s\n' "$out" | grep '^looked=')"; fi
}

# --- item 2, exec: a container with CAP_SYS_PTRACE watches its own PID namespace -------
# for 10 s while exec probes (0.3 s each, every second, so the watcher sees
# them even in the software-emulated VM) run in it: each probe's process appears in the
# container's namespace. Before session 9 it did so with the host's root
# and cwd until its setns into the container's mounts (runtime/exec.c);
# now it is forked with the container's root and credentials.
esc_exec_window_ptrace() {
  attempt "CVE-2024-21626 with SYS_PTRACE, exec: a container with CAP_SYS_PTRACE reads /proc/<pid>/root, cwd and fd of its exec probes' processes" || return 0
  ptrace_watcher "$tmp/watchbin3" 10 3
  {
    pod_head ewinp "  volumes: [{name: t, hostPath: {path: $tmp/watchbin3}}]"
    printf '  - name: watch\n    image: busybox:1.36\n    command: [sh, /t/watch.sh]\n'
    printf '    securityContext: {capabilities: {add: [SYS_PTRACE]}}\n'
    printf '    volumeMounts: [{name: t, mountPath: /t, readOnly: true}]\n'
    printf '    readinessProbe: {exec: {command: [sleep, "0.3"]}, periodSeconds: 1}\n'
    printf '    livenessProbe: {exec: {command: [sleep, "0.3"]}, periodSeconds: 1, failureThreshold: 30}\n'
  } >"$tmp/ewinp.yaml"
  run ewinp
  out=$(pod_log ewinp watch)
  if ! has "$out" '^looked='; then escaped "the watcher did not finish: $(tail -3 "$tmp/ewinp.err")"
  elif has "$out" 'HOST-'; then escaped "$(printf '%s\n' "$out" | grep -E 'HOST-' | cut -d' ' -f1 | sort | uniq -c | tr '\n' ' ')"
  elif [ "$(printf '%s\n' "$out" | sed -n 's/.*pids=//p')" -lt 2 ]; then escaped "the watcher saw no probe process: $(printf '%s\n' "$out" | grep '^looked=')"
  else refused "nothing of the host in $(printf '%s\n' "$out" | grep '^looked=')"; fi
}

esc_sysfs() {
  attempt "sysfs: write the host's cgroupfs or sysfs" || return 0
  pod sysfs "    command: [sh, -c, 'mkdir /sys/fs/cgroup/esc 2>/dev/null && echo MKDIR; echo 1 > /sys/kernel/mm/ksm/run 2>/dev/null && echo WROTE; grep -E \" /sys \" /proc/self/mounts; echo done']"
  run sysfs
  out=$(pod_log sysfs)
  if ! has "$out" done; then escaped "did not run: $(tail -3 "$tmp/sysfs.err")"
  elif has "$out" 'MKDIR|WROTE' || ! has "$out" ' /sys sysfs ro,'; then escaped "$out"
  else refused "/sys is read-only"; fi
}

# --- item 7 (the mount half): mountPropagation is refused, never dropped ------------------
esc_propagation() {
  attempt "fail open: mountPropagation: HostToContainer on a hostPath volume" || return 0
  mkdir -p "$tmp/propvol"
  pod prop "    command: [sh, -c, 'echo started']
    volumeMounts: [{name: v, mountPath: /v, mountPropagation: HostToContainer}]" \
    "  volumes: [{name: v, hostPath: {path: $tmp/propvol}}]"
  run prop
  if pod_log prop | grep started >/dev/null; then escaped "the container ran with a private mount instead"
  elif said prop "mountPropagation: \\\"HostToContainer\\\": only None is implemented"; then refused "UnsupportedPodSpec"
  else escaped "no refusal message: $(tail -3 "$tmp/prop.err") $(tail -1 "$tmp/prop.jsonl")"; fi
}

# --- item 5 (archive half): hostile image archives ---------------------------------------
# escape_make_tars DIR: DIR/{fifo,device,symlink}.tar, archives whose
# manifest.json is a FIFO, a device or a symlink to a host file (python3;
# the VM gets them made on the host).
escape_make_tars() {
  mkdir -p "$1"
  python3 - "$1" <<'EOF'
import sys, tarfile
for kind in ("fifo", "device", "symlink"):
    with tarfile.open("%s/%s.tar" % (sys.argv[1], kind), "w") as t:
        ti = tarfile.TarInfo("manifest.json")
        if kind == "fifo":
            ti.type = tarfile.FIFOTYPE
        elif kind == "device":
            ti.type, ti.devmajor, ti.devminor = tarfile.CHRTYPE, 1, 5
        else:
            ti.type, ti.linkname = tarfile.SYMTYPE, "/etc/shadow"
        t.addfile(ti)
EOF
}
import_attempt() {
  [ -r "$esc_tars/$1.tar" ] || { escaped "no archive $esc_tars/$1.tar"; return; }
  rc=0
  timeout 20 "$CUBELET" --root-dir "$root" image import "$esc_tars/$1.tar" --name evil:1 \
    >"$tmp/import-$1.out" 2>"$tmp/import-$1.err" || rc=$?
  if [ $rc -eq 124 ]; then escaped "the import hangs"
  elif [ $rc -eq 0 ]; then escaped "the import succeeded"
  elif grep -qE 'not a regular file|not a file name|cannot open|refus|symlink|unsupported|not allowed' \
    "$tmp/import-$1.err"; then refused "$(head -c 150 "$tmp/import-$1.err")"
  else escaped "unexpected error: $(cat "$tmp/import-$1.err")"; fi
}
esc_import_fifo() { attempt "image import: manifest.json is a fifo" || return 0; import_attempt fifo; }
esc_import_device() { attempt "image import: manifest.json is a device" || return 0; import_attempt device; }
esc_import_symlink() { attempt "image import: manifest.json is a symlink" || return 0; import_attempt symlink; }
