#!/bin/busybox sh
# shellcheck shell=dash
# PID 1 of the cgroup v2 test VM (tests/integration/cgroupv2_qemu.sh).
#
# Stage 1 (on the initramfs): mounts the pseudo file systems, cgroup2 alone
# at /sys/fs/cgroup (unified mode), runs the live cgroup tests and prints one
# marker line with their exit code, which the host script greps from the
# serial console.
#
# Stage 2 (when the image holds /pod/pod.yaml): a real pod through cubelet.
# pivot_root(2) refuses the initial rootfs, so the files move to a tmpfs and
# switch_root re-executes this script there with "pod". It imports the
# busybox image, runs `cubelet run-pod` on /pod/pod.yaml and, while the pod
# runs, snapshots the v2 files of the pod and container cgroups; then it
# compares them with /pod/expect.txt (the plan of `cubelet inspect`, lines
# "NAME FILE VALUE", NAME a container or "pod") and the final status with
# what the pod must end in, and prints "CUBELET-POD-RESULT: PASS" or
# "CUBELET-POD-RESULT: FAIL <reasons>".
#
# Stage 3 (when the image holds /escapes/attempts.sh): the mount and exec
# escape attempts, on the same root (stage_escapes).
export PATH=/usr/local/bin:/bin:/sbin:/usr/bin:/usr/sbin

uptime_s() {
  read -r u _ </proc/uptime
  echo "$u"
}

finish() {
  sync
  poweroff -f
  # poweroff failed: exiting PID 1 panics the kernel, and panic=-1 with
  # qemu -no-reboot ends the VM.
  exit 1
}

stage_cgroups() {
  /bin/busybox --install -s
  mount -t proc proc /proc
  mount -t sysfs sysfs /sys
  mount -t devtmpfs devtmpfs /dev
  mount -t tmpfs tmpfs /tmp
  mount -t cgroup2 cgroup2 /sys/fs/cgroup

  up=$(uptime_s)
  echo "CUBELET-VM-BOOTED uptime=${up}s kernel=$(uname -r) cgroup.controllers=$(cat /sys/fs/cgroup/cgroup.controllers)"

  cd /tmp || exit 1
  CK_DEFAULT_TIMEOUT=120 /test/test_cgroups_live
  rc=$?
  finished=$(uptime_s)
  echo "CUBELET-VM-RESULT rc=${rc} test_seconds=$(awk "BEGIN{print ${finished}-${up}}")"
  leftover=$(ls -d /sys/fs/cgroup/cubelet-test-* 2>/dev/null)
  [ -n "$leftover" ] && echo "CUBELET-VM-LEFTOVER ${leftover}"
  [ -f /pod/pod.yaml ] || finish

  # To a tmpfs root: copy everything but the mount points and the tests
  # (switch_root then empties the rootfs, which frees its memory).
  cd / || finish
  umount /sys/fs/cgroup /sys /tmp /proc
  mkdir -p /newroot
  mount -t tmpfs -o mode=0755 root /newroot || finish
  for e in /*; do
    case $e in
      /proc | /sys | /dev | /tmp | /newroot | /test) mkdir -p "/newroot$e" ;;
      *) cp -a "$e" /newroot/ || { echo "CUBELET-POD-RESULT: FAIL cannot copy $e to the tmpfs root"; finish; } ;;
    esac
  done
  umount /dev
  # shellcheck disable=SC2093 # on success this script goes on there as "init pod"
  exec switch_root /newroot /init pod
  echo "CUBELET-POD-RESULT: FAIL switch_root failed"
  finish
}

# Copies the v2 files of cgroup $1 to $2 when processes run in it: a copy
# is kept only when cgroup.procs is still non-empty after it, so the values
# were there while the container ran (the monitor writes the limits before
# it places the first process).
snap_files="memory.max memory.min memory.low memory.high cpu.max cpu.weight pids.max"
snapshot() {
  read -r p <"$1/cgroup.procs" 2>/dev/null || return 1
  [ -n "$p" ] || return 1
  rm -rf /tmp/snap.new
  mkdir -p /tmp/snap.new
  for f in $snap_files; do
    cat "$1/$f" >"/tmp/snap.new/$f" 2>/dev/null || echo "<missing>" >"/tmp/snap.new/$f"
  done
  read -r p <"$1/cgroup.procs" 2>/dev/null || return 1
  [ -n "$p" ] || return 1
  rm -rf "$2"
  mv /tmp/snap.new "$2"
}

poll_cgroups() {
  pod_dir=$1
  while kill -0 "$2" 2>/dev/null; do
    for d in "$pod_dir"/*/; do
      [ -f "$d/cgroup.procs" ] || continue
      id=$(basename "$d")
      # the pod's files too, while one of its containers runs: kept only
      # when that container still runs after the read (as snapshot does),
      # so the teardown at the end cannot overwrite a good copy
      if snapshot "$d" "/tmp/snap/$id"; then
        rm -rf /tmp/snap.pod
        mkdir -p /tmp/snap.pod
        for f in $snap_files; do
          cat "$pod_dir/$f" >"/tmp/snap.pod/$f" 2>/dev/null || echo "<missing>" >"/tmp/snap.pod/$f"
        done
        read -r p <"$d/cgroup.procs" 2>/dev/null && [ -n "$p" ] &&
          rm -rf /tmp/snap/pod-while-running && mv /tmp/snap.pod /tmp/snap/pod-while-running
      fi
    done
    sleep 0.2
  done
}

fails=
fail() {
  fails="$fails; $*"
  echo "CUBELET-POD-CHECK: FAIL $*"
}

# check DIR NAME: DIR holds the snapshot of the cgroup of NAME ("pod" or a
# container); the plan's values must be there, and a memory.max or cpu.max
# the plan does not set must be unlimited.
check_cgroup() {
  dir=$1
  name=$2
  planned=" "
  while read -r n f v; do
    [ "$n" = "$name" ] || continue
    planned="$planned$f "
    got=$(cat "$dir/$f" 2>/dev/null)
    if [ "$got" = "$v" ]; then
      echo "CUBELET-POD-CHECK: ok $name $f = $got"
    else
      fail "$name $f is \"$got\", the plan says \"$v\""
    fi
  done </pod/expect.txt
  for pair in memory.max=max "cpu.max=max 100000"; do
    f=${pair%%=*}
    v=${pair#*=}
    case $planned in *" $f "*) continue ;; esac
    got=$(cat "$dir/$f" 2>/dev/null)
    if [ "$got" = "$v" ]; then
      echo "CUBELET-POD-CHECK: ok $name $f = $got (not in the plan: unlimited)"
    else
      fail "$name $f is \"$got\", not in the plan so it must be \"$v\""
    fi
  done
}

stage_pod() {
  mount -t proc proc /proc
  mount -t sysfs sysfs /sys
  mount -t devtmpfs devtmpfs /dev
  mkdir -p /dev/pts /dev/shm /var /run
  mount -t devpts devpts /dev/pts
  mount -t tmpfs tmpfs /tmp
  mount -t tmpfs tmpfs /var
  mount -t tmpfs tmpfs /run
  mount -t cgroup2 cgroup2 /sys/fs/cgroup
  hostname cubelet-vm
  ip link set lo up 2>/dev/null
  printf '127.0.0.1 localhost\n::1 localhost\n127.0.1.1 cubelet-vm\n' >/etc/hosts
  printf 'nameserver 10.0.2.3\nsearch vm.test\n' >/etc/resolv.conf
  printf 'PRETTY_NAME="cubelet test VM"\n' >/etc/os-release

  start=$(uptime_s)
  echo "CUBELET-POD-STAGE tmpfs root ready uptime=${start}s root=$(awk '$2 == "/" {print $3}' /proc/mounts | tail -n 1)"
  for m in /lib/modules/*.ko; do
    [ -f "$m" ] || continue
    insmod "$m" || { echo "CUBELET-POD-RESULT: FAIL insmod $m"; finish; }
  done
  grep -qw overlay /proc/filesystems || { echo "CUBELET-POD-RESULT: FAIL no overlay file system"; finish; }

  uid=$(cat /pod/uid)
  root=/var/lib/cubelet
  if ! cubelet --root-dir $root image import /pod/busybox.oci.tar --name busybox:1.36; then
    echo "CUBELET-POD-RESULT: FAIL cubelet image import failed"
    finish
  fi
  imported=$(uptime_s)

  pod_dir=/sys/fs/cgroup/cubelet-vm/kubepods/burstable/pod$uid
  mkdir -p /tmp/snap
  cubelet -v 1 --root-dir $root run-pod /pod/pod.yaml --pod-logs-dir /var/log/pods \
    --cgroup-root cubelet-vm >/tmp/runpod.jsonl 2>/tmp/runpod.err &
  pid=$!
  poll_cgroups "$pod_dir" "$pid"
  wait "$pid"
  rc=$?
  ended=$(uptime_s)
  echo "CUBELET-POD-STAGE run-pod exited $rc; stderr:"
  sed 's/^/CUBELET-POD-STDERR /' /tmp/runpod.err
  # the last status line (the very last line of a finished run is the timeline)
  last=$(jq -c "select(.status)" /tmp/runpod.jsonl | tail -n 1)
  # the outcome in short (the whole line when jq cannot read it)
  short=$(echo "$last" | jq -c '{phase: .status.phase, containers: [.status.containerStatuses[] | {(.name): .state}]}' 2>/dev/null) ||
    short=$last
  echo "CUBELET-POD-LAST ${short}"

  # The final status.
  [ "$rc" -eq 1 ] || fail "run-pod exited $rc, not 1 (a Failed pod)"
  st() { echo "$last" | jq -r "$1" 2>/dev/null; }
  phase=$(st .status.phase)
  [ "$phase" = Failed ] && echo "CUBELET-POD-CHECK: ok phase $phase" ||
    fail "phase is \"$phase\", not Failed"
  hog=$(st '.status.containerStatuses[] | select(.name == "hog") | .state.terminated | "\(.reason) \(.exitCode)"')
  [ "$hog" = "OOMKilled 137" ] && echo "CUBELET-POD-CHECK: ok hog terminated $hog" || fail "hog terminated \"$hog\", not \"OOMKilled 137\""
  reader=$(st '.status.containerStatuses[] | select(.name == "reader") | .state.terminated | "\(.reason) \(.exitCode)"')
  [ "$reader" = "Completed 0" ] && echo "CUBELET-POD-CHECK: ok reader terminated $reader" || fail "reader terminated \"$reader\", not \"Completed 0\""

  # The cgroups, as they were while the pod ran.
  for name in hog reader; do
    id=$(st ".status.containerStatuses[] | select(.name == \"$name\") | .state.terminated.containerID")
    id=${id#cubelet://}
    if [ -z "$id" ] || [ ! -d "/tmp/snap/$id" ]; then
      fail "no snapshot of the cgroup of $name (id \"$id\") while it ran; seen: $(ls /tmp/snap | tr '\n' ' ')"
      continue
    fi
    check_cgroup "/tmp/snap/$id" "$name"
    if [ "$name" = reader ]; then
      want="0::/cubelet-vm/kubepods/burstable/pod$uid/$id"
      log=$(cat /var/log/pods/default_vm-limits_"$uid"/reader/0.log 2>/dev/null)
      case $log in
        *" $want"*) echo "CUBELET-POD-CHECK: ok reader's /proc/self/cgroup is $want" ;;
        *) fail "reader's log does not show /proc/self/cgroup $want: $(echo "$log" | tr '\n' '|')" ;;
      esac
      case $log in
        *"init: 0::/cubelet-vm/kubepods/burstable/pod$uid/pause"*) echo "CUBELET-POD-CHECK: ok the pause process (pid 1) was born in pod$uid/pause" ;;
        *) fail "the pause process is not in pod$uid/pause: $(echo "$log" | tr '\n' '|')" ;;
      esac
      case $log in
        *"exec probe: $want"*) echo "CUBELET-POD-CHECK: ok the exec probe's command ran in $want" ;;
        *) fail "the exec probe's command did not run in $want: $(echo "$log" | tr '\n' '|')" ;;
      esac
      # the liveness probe timed out (its helper was stopped) at least twice,
      # and at most the one that had just started is still there
      timeouts=$(grep -c 'Liveness probe failed: command "sleep 30" timed out' /tmp/runpod.err || true)
      sleepers=$(echo "$log" | sed -n 's/.*sleepers: \([0-9]*\).*/\1/p')
      if [ "${timeouts:-0}" -ge 2 ] && [ -n "$sleepers" ] && [ "$sleepers" -le 1 ]; then
        echo "CUBELET-POD-CHECK: ok $timeouts exec probes timed out and were stopped ($sleepers left)"
      else
        fail "exec probes that timed out were not stopped: $timeouts timeouts, $sleepers of their commands left"
      fi
      case $log in
        *"/tmp/blk: Operation not permitted"*) echo "CUBELET-POD-CHECK: ok the device policy (BPF) refuses a block device" ;;
        *) fail "reader could open a block device it made: $(echo "$log" | tr '\n' '|')" ;;
      esac
    fi
  done
  if [ -d /tmp/snap/pod-while-running ]; then
    check_cgroup /tmp/snap/pod-while-running pod
  else
    fail "no snapshot of the pod cgroup $pod_dir while it ran"
  fi
  [ -d "$pod_dir" ] && fail "the pod cgroup $pod_dir is left behind"

  echo "CUBELET-POD-TIMES import=$(awk "BEGIN{print ${imported}-${start}}")s run-pod=$(awk "BEGIN{print ${ended}-${imported}}")s"
  if [ -z "$fails" ]; then
    echo "CUBELET-POD-RESULT: PASS"
  else
    echo "CUBELET-POD-RESULT: FAIL${fails#;}"
  fi
  [ -f /escapes/attempts.sh ] && stage_escapes
  finish
}

# Stage 3 (when the image holds /escapes/attempts.sh): the mount and exec
# escape attempts of the escape suite (tests/integration/lib/escape_attempts.sh,
# the same pods and checks as tests/integration/escapes.sh), each with
# `cubelet run-pod` on cgroup v2. Each attempt prints
# "CUBELET-ESCAPE: <name> REFUSED|ESCAPED" after a detail line; the host
# checks that every attempt of the list is there and refused.
stage_escapes() {
  tmp=/tmp/esc
  logs=/var/log/esc-pods
  esc_tars=/escapes/tars
  CUBELET=$(command -v cubelet)
  mkdir -p $tmp $logs
  cur=
  began=$(uptime_s)
  attempt() {
    cur=$1
    t0=$(uptime_s)
  }
  # outcome WORD DETAIL: the detail on one line, then the marker
  outcome() {
    d=$(printf '%s' "$2" | tr '\n' '|' | cut -c1-2000)
    echo "CUBELET-ESCAPE-DETAIL: $cur: $d ($(awk "BEGIN{print $(uptime_s)-$t0}")s)"
    echo "CUBELET-ESCAPE: $cur $1"
  }
  refused() { outcome REFUSED "${1:-}"; }
  escaped() { outcome ESCAPED "$*"; }
  run() {
    name=$1
    shift
    rc=0
    timeout 180 cubelet -v 1 --root-dir "$root" run-pod "$tmp/$name.yaml" --pod-logs-dir $logs \
      --cgroup-root cubelet-vm "$@" >"$tmp/$name.jsonl" 2>"$tmp/$name.err" || rc=$?
  }
  . /escapes/attempts.sh
  # shellcheck disable=SC2154 # set by attempts.sh
  escape_run "$escape_mount_exec"
  echo "CUBELET-ESCAPES-DONE seconds=$(awk "BEGIN{print $(uptime_s)-$began}")"
  # every pod's cgroup (and a pause process's leaf in it) is gone
  leftover=$(find /sys/fs/cgroup/cubelet-vm -mindepth 2 -type d -name 'pod*' 2>/dev/null)
  [ -n "$leftover" ] && echo "CUBELET-VM-LEFTOVER $(echo "$leftover" | tr '\n' ' ')"
}

if [ "${1:-}" = pod ]; then
  stage_pod
else
  stage_cgroups
fi
