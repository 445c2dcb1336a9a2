#!/bin/sh
# Parallel freeing in the mmu_gather path, run by the guest's init when the
# kernel command line has mtjob.free=test or mtjob.free=bench (scripts/guest.py
# freetest, freebench).  Each test case prints one line the host checks:
#   FREECASE <name> rc=<exit code> memfree_before=<kB> memfree_after=<kB>
#            pf=<parallel flushes> pft=<their threads> pff=<fallbacks>
# (the vmstat deltas over the case).  The benchmark prints BENCH lines.

VM=/proc/sys/vm
arg() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
# Free memory in kB: MemFree plus the pages on per-CPU lists (zoneinfo's
# "count"), which MemFree leaves out until they are drained.  Page cache and
# reclaimable slab are dropped first and the reading waits a second, so that
# memory freed late by the previous case (RCU, lazy vmalloc purge, shrinkers)
# is not counted as this case's leak or gain.
memfree() {
	sync
	echo 3 > $VM/drop_caches
	sleep 1
	pcp=$(awk '$1 == "count:" { n += $2 } END { print n * 4 }' /proc/zoneinfo)
	echo $(($(awk '$1 == "MemFree:" { print $2 }' /proc/meminfo) + pcp))
}
vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }

run_case() {
	name=$1
	shift
	mf0=$(memfree); a0=$(vmstat parallel_free)
	t0=$(vmstat parallel_free_threads); f0=$(vmstat parallel_free_fallback)
	"$@"
	rc=$?
	echo "FREECASE $name rc=$rc memfree_before=$mf0 memfree_after=$(memfree)" \
		"pf=$(($(vmstat parallel_free) - a0))" \
		"pft=$(($(vmstat parallel_free_threads) - t0))" \
		"pff=$(($(vmstat parallel_free_fallback) - f0))"
}

# munmap() and exit() while other processes hog memory and swap to zram.
pressure() {
	free_test hog 3000 20 & h1=$!
	free_test hog 3000 20 & h2=$!
	rc=0
	for i in 1 2 3; do
		free_test munmap 1200 0 || rc=1
		free_test exit 1200 0 || rc=1
	done
	wait $h1 || rc=1
	wait $h2 || rc=1
	return $rc
}

in_cpu_limited_cgroup() {
	mkdir -p /sys/fs/cgroup
	mount -t cgroup2 none /sys/fs/cgroup || return 1
	echo +cpu > /sys/fs/cgroup/cgroup.subtree_control || return 1
	mkdir -p /sys/fs/cgroup/limited
	echo "50000 100000" > /sys/fs/cgroup/limited/cpu.max || return 1
	sh -c 'echo $$ > /sys/fs/cgroup/limited/cgroup.procs &&
		exec free_test munmap 1200 0'
}

on_busy_cpus() {
	pids=
	for i in 1 2 3 4; do
		sh -c 'while :; do :; done' & pids="$pids $!"
	done
	sleep 1
	free_test munmap 1200 0
	rc=$?
	kill $pids
	wait 2>/dev/null
	return $rc
}

# with_sysctl NAME VALUE COMMAND...: run COMMAND with vm.NAME=VALUE, then
# restore the old value.
with_sysctl() {
	knob=$VM/$1
	old=$(cat "$knob") && echo "$2" > "$knob" || return 1
	shift 2
	"$@"
	rc=$?
	echo "$old" > "$knob"
	return $rc
}

# Out-of-range values are refused (EINVAL) and leave the old value.
sysctl_bounds() {
	for kv in parallel_free:2 parallel_free_threshold:0 \
		parallel_free_threshold:2097153 parallel_free_max_helpers:0 \
		parallel_free_by_node:-1; do
		k=${kv%%:*}
		v=${kv#*:}
		old=$(cat $VM/$k)
		if echo "$v" 2>/dev/null > $VM/$k; then
			echo "free.sh: vm.$k accepted $v"
			return 1
		fi
		[ "$(cat $VM/$k)" = "$old" ] || return 1
	done
}

swap_on_zram() {
	[ -e /sys/block/zram0 ] || return 0
	echo 2G > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null &&
		swapon /dev/zram0
}

bench() {
	reps=$(arg mtjob.free_reps)
	for i in $(seq "${reps:-3}"); do
		for mib in 2048 4096 6144; do
			for what in munmap exit; do
				for mode in off by_node interleave by_node_1h; do
					h=4
					case $mode in
					off) p=0 n=1 ;;
					by_node) p=1 n=1 ;;
					interleave) p=1 n=0 ;;
					by_node_1h) p=1 n=1 h=1 ;;
					esac
					echo $p > $VM/parallel_free
					echo $n > $VM/parallel_free_by_node
					echo $h > $VM/parallel_free_max_helpers
					out=$(free_test $what $mib 0) || echo "BENCH-FAILED $mode $what $mib"
					echo "BENCH $mode $out"
				done
			done
		done
	done
	echo 1 > $VM/parallel_free
	echo 1 > $VM/parallel_free_by_node
	echo 4 > $VM/parallel_free_max_helpers
}

swap_on_zram || echo "free.sh: no swap on zram"
grep -H . $VM/parallel_free*
case $(arg mtjob.free) in
test)
	run_case parallel-off with_sysctl parallel_free 0 free_test munmap 2048 0
	run_case sysctl-bounds sysctl_bounds
	run_case munmap-2g-thp-off free_test munmap 2048 0
	run_case munmap-2g-thp-on free_test munmap 2048 1
	run_case exit-2g-thp-off free_test exit 2048 0
	run_case exit-2g-thp-on free_test exit 2048 1
	run_case fork-cow-1200m free_test fork 1200
	run_case swap-2g free_test swap 2048
	run_case many-3x1200m free_test many 3 1200
	run_case pressure pressure
	run_case rt free_test rt munmap 1200 0
	run_case taskset-cpu0 taskset 1 free_test munmap 1200 0
	run_case cgroup-cpu-max in_cpu_limited_cgroup
	run_case busy-cpus on_busy_cpus
	run_case by-node-off with_sysctl parallel_free_by_node 0 free_test munmap 2048 0
	run_case lowest-threshold with_sysctl parallel_free_threshold 1 free_test loop 1200 8
	;;
bench)
	bench
	;;
esac
