#!/bin/busybox sh
# PID 1 of the cgroup v2 test VM (tests/integration/cgroupv2_qemu.sh): mounts
# the pseudo file systems, cgroup2 alone at /sys/fs/cgroup (unified mode),
# runs the live cgroup tests and prints one marker line with their exit
# code, which the host script greps from the serial console.
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup

read -r up _ </proc/uptime
echo "CUBELET-VM-BOOTED uptime=${up}s kernel=$(uname -r) cgroup.controllers=$(cat /sys/fs/cgroup/cgroup.controllers)"

cd /tmp || exit 1
CK_DEFAULT_TIMEOUT=120 /test/test_cgroups_live
rc=$?
read -r finished _ </proc/uptime
echo "CUBELET-VM-RESULT rc=${rc} test_seconds=$(awk "BEGIN{print ${finished}-${up}}")"
leftover=$(ls -d /sys/fs/cgroup/cubelet-test-* 2>/dev/null)
[ -n "$leftover" ] && echo "CUBELET-VM-LEFTOVER ${leftover}"
sync
poweroff -f
# poweroff failed: exiting PID 1 panics the kernel, and panic=-1 with
# qemu -no-reboot ends the VM.
exit 1
