#!/bin/sh
# An oops inside a scope (issue 47), run by the guest's init when the kernel
# command line has mttest.oops=caller or mttest.oops=helper (scripts/check.sh,
# stage oops-park; the test kernel, with CONFIG_PARALLEL_ZAP_REAPER_TEST's
# zap_parallel.test_oops_chunk).  A process munmap()s 1 GiB with the live
# parallel zap on, and the next job with helpers oopses (a write through NULL) at
# the start of a chunk: the caller's own (after a helper started one, so that the helpers
# zap with the job's state on the caller's stack) or a helper's.  Then it
# prints
#   OOPS-STATE which=<caller|helper> pid=<pid> state=<state letter> \
#              rss_kb=<VmRSS of the dying process, or -> armed=<0 once fired>
# (the caller is parked, "X", with its mm kept; with a helper dead, the
# caller waits for it in the join, "D"), and the survivors: another process
# maps, touches and munmap()s 256 MiB, and another exits with as much,
# with the parallel zap still on:
#   OOPS-SURVIVOR what=<munmap|exit> rc=<free_test's exit code>
# and OOPS-END.  With panic_on_oops=1 the kernel panics at the oops instead
# and none of this is printed.

VM=/proc/sys/vm
P=/sys/module/zap_parallel/parameters/test_oops_chunk
arg() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
which=$(arg mttest.oops)
case "$which" in
caller) n=1 ;;
helper) n=2 ;;
*) echo "OOPS-FAILED mttest.oops=$which: caller or helper"; exit 0 ;;
esac
if [ ! -w $P ] || [ ! -w $VM/parallel_zap_live ]; then
	echo "OOPS-FAILED no $P or $VM/parallel_zap_live: the test kernel has them"
	exit 0
fi
for d in /sys/kernel/mm/hugepages/hugepages-*; do
	[ -d "$d" ] && echo 0 > "$d/nr_hugepages"
done
echo 1 > $VM/parallel_zap
echo 1 > $VM/parallel_zap_live
echo $n > $P
# The oops comes within seconds of the munmap(): the mapping is touched
# first (a few seconds under TCG), then the caller waits at most a second
# for a helper.  A munmap() the policy zapped serially (no idle CPU at that
# instant: parallel_zap_busy) exits and leaves the knob armed: try again,
# up to five times.
try=0
while [ $try -lt 5 ] && [ "$(cat $P)" != 0 ]; do
	try=$((try + 1))
	free_test munmap 1024 0 > /tmp/oops.out 2>&1 &
	pid=$!
	i=0
	while [ $i -lt 120 ] && [ "$(cat $P)" != 0 ] && [ -d /proc/$pid ] &&
		[ "$(sed 's/^.*) \(.\).*/\1/' /proc/$pid/stat 2>/dev/null)" != Z ]; do
		sleep 1
		i=$((i + 1))
	done
	[ "$(cat $P)" != 0 ] && wait $pid
done
echo "OOPS-TRIES $try"
sleep 2
state=$(sed 's/^.*) \(.\).*/\1/' /proc/$pid/stat 2>/dev/null)
rss=$(awk '$1 == "VmRSS:" { print $2 }' /proc/$pid/status 2>/dev/null)
echo "OOPS-STATE which=$which pid=$pid state=${state:-gone} rss_kb=${rss:--}" \
	"armed=$(cat $P)"
grep -E '^(State|Threads|VmRSS):' /proc/$pid/status 2>/dev/null | sed 's/^/OOPS-STATUS /'
sed 's/^/OOPS-STACK /' /proc/$pid/stack 2>/dev/null
echo 0 > $P
free_test munmap 256 0 > /dev/null 2>&1
echo "OOPS-SURVIVOR what=munmap rc=$?"
free_test exit 256 0 > /dev/null 2>&1
echo "OOPS-SURVIVOR what=exit rc=$?"
grep -E '^parallel_zap' /proc/vmstat | tr '\n' ' ' | sed 's/^/OOPS-VMSTAT /'
echo
echo OOPS-END
