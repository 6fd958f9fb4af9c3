# Sourced by the graceful node shutdown tests after lib/harness.sh (not a
# test itself): node_shutdown.sh (lib/fake_logind.py on the bus) and
# node_shutdown_logind.sh (the real systemd-logind with
# lib/systemd1_standin.py). What both set up the same way: a private mount
# namespace, a tmpfs over /etc/systemd in it, a private system bus, the
# agent's shutdown configuration, the stand-in's journal and the pods.
# Everything started here is tracked (the harness's cleanup stops it); the
# mounts end with the namespace.

# shutdown_private_ns ARGS...: the script again, with ARGS (its "$@"), in a
# private mount namespace; returns in the script run there. Skips where
# unshare is missing or cannot make one.
shutdown_private_ns() {
        need_tools unshare
        unshare --mount --propagation private true 2>/dev/null ||
                skip "cannot make a private mount namespace (unshare --mount)"
        if [ "${CUBELET_SHUTDOWN_NS:-}" != "$$" ]; then
                CUBELET_SHUTDOWN_NS=$$ exec unshare --mount --propagation private -- bash "$0" "$@"
        fi
}
# shutdown_tmpfs PATH SIZE NAME: a tmpfs over PATH that only the private
# namespace sees (dies outside it: the host's own PATH is never covered).
shutdown_tmpfs() {
        [ "${CUBELET_SHUTDOWN_NS:-}" = "$$" ] || die "shutdown_tmpfs $1 outside the private mount namespace"
        mount -t tmpfs -o "mode=0755,size=$2" "$3" "$1" ||
                die "cannot mount a tmpfs over $1 in the private namespace"
}
# shutdown_etc_systemd: the tmpfs over /etc/systemd, where the agent writes
# logind's drop-in (as the kubelet does) and logind reads its configuration.
shutdown_etc_systemd() { shutdown_tmpfs /etc/systemd 1m cubelet-test-etc-systemd; }

# shutdown_bus NAME...: a private system bus at $tmp/bus ($BUS): a
# dbus-daemon (tracked, its log $tmp/dbus.log) on which only NAME... may be
# owned ("*": any name).
shutdown_bus() {
        cat >"$tmp/bus.conf" <<EOC
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>cubelet-test</type>
  <listen>unix:path=$tmp/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
$(printf '    <allow own="%s"/>\n' "$@")
  </policy>
</busconfig>
EOC
        BUS=unix:path=$tmp/bus
        dbus-daemon --config-file="$tmp/bus.conf" --nofork --nopidfile >>"$tmp/dbus.log" 2>&1 &
        track $!
        poll 10 test -S "$tmp/bus" || die "dbus-daemon did not listen on $tmp/bus: $(cat "$tmp/dbus.log")"
}

# shutdown_config: $tmp/config.yaml, shutdownGracePeriod 12 s of which the
# critical pods get the last 4 s.
shutdown_config() {
        cat >"$tmp/config.yaml" <<EOC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
shutdownGracePeriod: 12s
shutdownGracePeriodCriticalPods: 4s
EOC
}

# The stand-in's journal ($journal: lines "<time> WORD ..."): jt WORD [N],
# the time of the Nth (default last) WORD line; jcount WORD, how many.
jt() { awk -v w="$1" '$2 == w {print $1}' "$journal" | sed -n "${2:-\$}p"; }
jcount() { awk -v w="$1" '$2 == w' "$journal" | wc -l; }
epoch() { date -d "$1" +%s; }

# mkp NAME GRACE COMMAND [priorityClassName]: a pod (restartPolicy Never)
# of one busybox container running COMMAND.
mkp() {
        mkpod "$1" Never "$2" <<EOP
  ${4:+priorityClassName: $4}
  containers:
  - {name: c, image: busybox:1.36, command: [sh, -c, '$3']}
EOP
}
# fin POD: when its container ended; killed POD: its Killing event (epoch s).
fin() { epoch "$(pj "$1" '{.status.containerStatuses[0].state.terminated.finishedAt}')"; }
killed() { epoch "$(k get events --field-selector "involvedObject.name=$1,reason=Killing" -o jsonpath='{.items[0].firstTimestamp}')"; }
