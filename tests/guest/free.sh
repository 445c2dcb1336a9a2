#!/bin/sh
# Parallel freeing in the mmu_gather path, run by the guest's init when the
# kernel command line has mttest.free=test, quick or bench (scripts/guest.py
# freetest, freebench).  Each test case prints one line the host checks:
#   FREECASE <name> rc=<exit code> memfree_before=<kB> memfree_after=<kB>
#            pf=<parallel flushes> pft=<their threads> pff=<fallbacks>
#            png=<gathers refused growth for good>
#            pnm=<rounds refused for lack of memory>
#            pnb=<rounds without helpers: no idle CPU or the cap reached>
# (the /proc/vmstat tlb_parallel_free* deltas over the case; memfree_before
# is the previous case's memfree_after when one ran), and first
#   FREEDEFAULT parallel_free=<sysctl at boot> counters=<sum at boot>
# exit_mmap()'s parallel zap has cases of its own, whose line is
#   ZAPCASE <name> rc=<exit code> memfree_before=<kB> memfree_after=<kB>
#           pz=<parallel zaps> pzt=<their threads> pzs=<zaps of one thread>
#           pzr=<refused: the task> pzb=<refused: no idle CPU or the cap>
#           pzn=<refused: no memory for the plan>
# (the /proc/vmstat parallel_zap* deltas), after
#   ZAPDEFAULT parallel_zap=<sysctl at boot> counters=<sum at boot>
# Both lines end with held=<nr_parallel_free_held after the case>, which
# must be 0.  munmap-2g-thp-off prints FREEHELD max=<pages> samples=<N>
# after=<pages> (the gauge sampled during a 2 GiB munmap()), and the upstream
# mm selftests one line each:
#   MMSELFTEST <name> rc=<exit code> pz=<parallel zaps> pzt=<their threads>
# After each case and selftest, what it took (centiseconds of uptime), and
# how much of that its memfree() readings took:
#   CASETIME <name> total_cs=<cs> memfree_cs=<cs>
# The cases run traced print what the tracepoints recorded as FREETRACE
# (acct-parallel) and TOGGLETRACE (key-toggling) lines.
# mttest.free=quick leaves out the cases run with full_case (below);
# mttest.free=toggling runs key-toggling alone, mttest.free=zap the zap's
# cases that quick runs.
# The benchmark prints BENCH lines; mttest.free=hotplug runs teardowns while
# CPUs go offline and online and prints FREECASE hotplug ... cycles=<N>.

VM=/proc/sys/vm
# What depends on the page size (arm64 runs with 4 KiB and 64 KiB pages):
# PAGE_KB, a PMD block's pages (PTRS_PER_PTE: a page of 8-byte entries) and
# MiB, and pages() of MiB.
PAGE_KB=$(awk '$1 == "KernelPageSize:" { print $2; exit }' /proc/self/smaps)
if [ -z "$PAGE_KB" ]; then
	# BENCH-FAILED: a line scripts/guest.py fails every suite on.
	echo "BENCH-FAILED free.sh: no KernelPageSize in /proc/self/smaps (CONFIG_PROC_PAGE_MONITOR); taking 4 KiB pages"
	PAGE_KB=4
fi
PMD_PAGES=$((PAGE_KB * 1024 / 8))
PMD_MIB=$((PMD_PAGES * PAGE_KB / 1024))
pages() { echo $(($1 * 1024 / PAGE_KB)); }
# A workload the zap is to split: MiB, or two PMD blocks if that is more
# (with 64 KiB pages a block is 512 MiB: one populated entry is one chunk).
zmib() { echo $(($1 > 2 * PMD_MIB ? $1 : 2 * PMD_MIB)); }
# The lowest vm.parallel_free_threshold: what a gather holds without growing,
# MAX_GATHER_BATCH_COUNT x MAX_GATHER_BATCH (include/asm-generic/tlb.h: a
# batch is a page less its 16-byte header, in pointers; 10000 pointers' worth
# of batches, at least one): 19 x 510 with 4 KiB pages, 1 x 8190 with 64 KiB.
gather_batch=$(((PAGE_KB * 1024 - 16) / 8))
gather_count=$((10000 / gather_batch))
[ $gather_count -ge 1 ] || gather_count=1
LOWEST=$((gather_count * gather_batch))
# The default thresholds, 1 GiB's pages; the parallel free's highest, 8 GiB.
DEFAULT_PAGES=$(pages 1024)
arg() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
# Free memory in kB: MemFree plus the pages on per-CPU lists (zoneinfo's
# "count"), which MemFree leaves out until they are drained.  Page cache and
# reclaimable slab are dropped first, then every slab cache is shrunk (its
# per-CPU and empty slabs freed; on a generic KASAN kernel this also frees
# the cache's objects in the quarantine), and the reading waits a second, so
# that memory freed late by the previous case (RCU, lazy vmalloc purge,
# shrinkers) is not counted as this case's leak or gain.
# The highest of three readings a second apart: memory still on its way
# back (RCU, per-CPU caches) lowers one reading, a leak lowers all three.
memfree() {
	mf_best=0
	for mf_try in 1 2 3; do
		sync
		echo 3 > $VM/drop_caches
		for mf_shrink in /sys/kernel/slab/*/shrink; do
			echo 1 > "$mf_shrink"
		done 2>/dev/null
		sleep 1
		pcp=$(awk -v kb=$PAGE_KB '$1 == "count:" { n += $2 } END { print n * kb }' /proc/zoneinfo)
		mf=$(($(awk '$1 == "MemFree:" { print $2 }' /proc/meminfo) + pcp))
		[ "$mf" -gt "$mf_best" ] && mf_best=$mf
	done
	echo $mf_best
}
# The last case's MemFree after it (counted()); empty: none yet.
mf_last=
# A counter the kernel does not have is named on stderr (the console):
# guest.py fails the zap checks on a VMSTAT-MISSING line.
vmstat() {
	awk -v k="$1" '$1 == k { print $2; f = 1 }
		END { if (!f) print "VMSTAT-MISSING " k > "/dev/stderr" }' /proc/vmstat
}
# Uptime in centiseconds, for the CASETIME lines.
uptime_cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }
counters() {
	for k in tlb_parallel_free tlb_parallel_free_threads \
		tlb_parallel_free_fallback tlb_parallel_free_nogrow \
		tlb_parallel_free_nogrow_memory tlb_parallel_free_nogrow_busy; do
		printf '%s ' "$(vmstat $k)"
	done
}

zap_counters() {
	for k in parallel_zap parallel_zap_threads parallel_zap_serial \
		parallel_zap_refused parallel_zap_busy parallel_zap_nomem; do
		printf '%s ' "$(vmstat $k)"
	done
}

# counted LINE COUNTERS K1 ... K6 NAME COMMAND...: COMMAND between two
# readings of free memory and of the six counters COUNTERS prints; prints
# "LINE NAME rc=... memfree_before=... memfree_after=... K1=... K6=...
# held=..." with the counters' deltas and, after COMMAND, the gauge
# nr_parallel_free_held (pages of grown gathers not yet flushed).
counted() {
	local line=$1 fn=$2 keys="$3 $4 $5 $6 $7 $8" name=$9 mf0 mf1 c0 c1 rc
	local u0 u1 u2 u3
	shift 9
	u0=$(uptime_cs)
	# What the previous case read after itself, when one ran (a reading
	# costs about 4.5 s under TCG): only sysctl writes, which allocate
	# nothing, run between cases.  The readings still drift by a few
	# 8 MiB steps, which the next case then carries; zap_cases starts
	# afresh.  Never call this in a subshell: mf_last would not be set.
	mf0=${mf_last:-$(memfree)}
	u1=$(uptime_cs)
	c0=$($fn)
	"$@"
	rc=$?
	c1=$($fn)
	u2=$(uptime_cs)
	mf1=$(memfree)
	mf_last=$mf1
	u3=$(uptime_cs)
	echo "CASETIME $name total_cs=$((u3 - u0)) memfree_cs=$((u1 - u0 + u3 - u2))"
	echo "$line $name rc=$rc memfree_before=$mf0 memfree_after=$mf1" \
		"$(echo "$keys|$c0|$c1" | awk -F'|' '{
			n = split($1, k, " "); split($2, a, " "); split($3, b, " ")
			for (i = 1; i <= n; i++)
				printf "%s%s=%d", (i > 1 ? " " : ""), k[i], b[i] - a[i]
		}') held=$(vmstat nr_parallel_free_held)"
}
run_case() { counted FREECASE counters pf pft pff png pnm pnb "$@"; }
# mttest.zap_skip=NAME,...: cases the kernel or the page size cannot run
# (scripts/guest.py's zap_skips(): no HMM test driver, 64 KiB pages).
run_zap() {
	case " $(arg mttest.zap_skip | tr , ' ') " in
	*" $1 "*) echo "ZAPSKIP $1"; return 0 ;;
	esac
	counted ZAPCASE zap_counters pz pzt pzs pzr pzb pzn "$@"
}
# The same for the zap of a live mm (issue 38): munmap()'s or
# MADV_DONTNEED's two counters in the pz and pzt columns, the four others
# shared with the exit's.
live_counters() {
	for k in parallel_zap_$1 parallel_zap_$1_threads parallel_zap_serial \
		parallel_zap_refused parallel_zap_busy parallel_zap_nomem; do
		printf '%s ' "$(vmstat $k)"
	done
}
zap_munmap_counters() { live_counters munmap; }
zap_dontneed_counters() { live_counters dontneed; }
run_zap_munmap() {
	case " $(arg mttest.zap_skip | tr , ' ') " in
	*" $1 "*) echo "ZAPSKIP $1"; return 0 ;;
	esac
	counted ZAPCASE zap_munmap_counters pz pzt pzs pzr pzb pzn "$@"
}
run_zap_dontneed() {
	case " $(arg mttest.zap_skip | tr , ' ') " in
	*" $1 "*) echo "ZAPSKIP $1"; return 0 ;;
	esac
	counted ZAPCASE zap_dontneed_counters pz pzt pzs pzr pzb pzn "$@"
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

cgroup2() {
	[ -e /sys/fs/cgroup/cgroup.procs ] && return 0
	mkdir -p /sys/fs/cgroup
	mount -t cgroup2 none /sys/fs/cgroup &&
		echo "+cpu +memory" > /sys/fs/cgroup/cgroup.subtree_control
}

# in_cgroup NAME FILE VALUE COMMAND...: COMMAND in cgroup NAME with FILE=VALUE.
in_cgroup() {
	cg=/sys/fs/cgroup/$1
	cgroup2 && mkdir -p "$cg" && echo "$3" > "$cg/$2" || return 1
	shift 3
	sh -c 'echo $$ > '"$cg"'/cgroup.procs && exec "$@"' sh "$@"
}

# A node's free pages and low watermarks, summed over its zones, as
# tlb_parallel_free_memory_short() reads them: zoneinfo's "low" includes
# the watermark boost, which it does not.
node_watermark() {
	awk -v n="$1" '$1 == "Node" { node = $2 + 0 }
		node == n && $1 == "pages" && $2 == "free" { free += $3 }
		node == n && $1 == "boost" { boost += $2 }
		node == n && $1 == "low" { low += $2 }
		END { printf "free=%d low=%d", free, low - boost }' /proc/zoneinfo
}

# The last node held below its low watermark: vm.watermark_scale_factor at
# 1000 puts low 10% of the node's memory above min, and 2M huge pages (more
# asked for than it has) take the node's memory down towards min, which
# allocations stop at; kswapd finds little to reclaim there.  A 2 GiB
# munmap() is then refused growth for memory, round after round, never
# for good.
node_low() {
	nl_node=$(ls -d /sys/devices/system/node/node* | sed 's/.*node//' |
		sort -n | tail -n 1)
	nl_nr=/sys/devices/system/node/node$nl_node/hugepages/hugepages-2048kB/nr_hugepages
	[ "$nl_node" -gt 0 ] && [ -e "$nl_nr" ] ||
		{ echo "free.sh: node-low: needs two nodes and hugetlbfs"; return 1; }
	nl_wsf=$(cat $VM/watermark_scale_factor)
	echo 1000 > $VM/watermark_scale_factor
	echo 1000000 > "$nl_nr"
	echo "NODELOW node=$nl_node huge=$(cat "$nl_nr") $(node_watermark "$nl_node")"
	# Not bound half to each node as free_test binds it by default.
	FREE_TEST_LOCAL=1 free_test munmap 2048 0
	nl_rc=$?
	echo "NODELOW-AFTER node=$nl_node $(node_watermark "$nl_node")"
	echo 0 > "$nl_nr"
	echo "$nl_wsf" > $VM/watermark_scale_factor
	return $nl_rc
}

# The OOM killer picks a task in the middle of its munmap(): the teardown
# must stop growing, free everything and let the other task have its memory.
oom_mid_teardown() {
	rm -f /tmp/oom-child-ok
	cgroup2 && mkdir -p /sys/fs/cgroup/oom &&
		echo 0 > /sys/fs/cgroup/oom/memory.swap.max || return 1
	in_cgroup oom memory.max 1520M free_test oom 1200
	rc=$?
	for i in $(seq 60); do
		[ -e /tmp/oom-child-ok ] && break
		sleep 1
	done
	echo "free.sh: oom: free_test exited with $rc" \
		"($([ $rc = 137 ] && echo killed || echo not killed))"
	[ -e /tmp/oom-child-ok ] || { echo "free.sh: oom: the child failed"; return 1; }
	# The child exits after writing the file: wait until it is dead, so
	# that the memory it frees on exit is not read as this case's leak
	# (seen on the 16-vCPU stress guest: 456 MiB read 1 s too early).
	# cgroup.procs leaves out a leader whose threads are all exiting
	# before exit_mm(); "populated 0" waits for the last one to be dead
	# (cgroup_task_dead(), after its final schedule), which on the KCSAN
	# kernel took longer than memfree()'s 3 s (191 MiB read too early).
	for i in $(seq 120); do
		grep -q '^populated 0$' /sys/fs/cgroup/oom/cgroup.events && break
		sleep 1
	done
	grep -q '^populated 0$' /sys/fs/cgroup/oom/cgroup.events ||
		echo "free.sh: oom: the cgroup still has a task after 120 s"
	# Killed (137) or finished first (0): both leave the memory back.
	[ $rc = 137 ] || [ $rc = 0 ]
}

# vm.parallel_free switched off and on every 0.1 s while 1200 MiB
# teardowns run at the lowest threshold, so that gathers grow and go
# parallel between switches: a gather grown (or counted as held back)
# before a switch frees serially and shrinks back, its counts are not
# carried over, and nr_parallel_free_held ends at 0 (checked on the
# FREECASE line).  Run traced (TOGGLETRACE): no parallel flush counts more
# pages than its batches hold, as one would with pages counted before a
# switch (guest.py's toggle_trace_checks()).
toggling() {
	echo $LOWEST > $VM/parallel_free_threshold
	rm -f /tmp/toggle-stop
	( while [ ! -e /tmp/toggle-stop ]; do
		echo 0 > $VM/parallel_free
		sleep 0.1
		echo 1 > $VM/parallel_free
		sleep 0.1
	  done ) & t=$!
	rc=0
	# Twice in the full tests, once in the quick ones.
	for i in $([ "$(arg mttest.free)" = quick ] && echo 1 || echo 1 2); do
		free_test munmap 1200 0 || rc=1
		free_test exit 1200 0 || rc=1
	done
	touch /tmp/toggle-stop
	wait $t
	rm -f /tmp/toggle-stop
	echo 1 > $VM/parallel_free
	echo $DEFAULT_PAGES > $VM/parallel_free_threshold
	return $rc
}

on_busy_cpus() {
	pids=
	for i in 1 2 3 4; do
		sh -c 'while :; do :; done' & pids="$pids $!"
	done
	sleep 1
	if [ $# -gt 0 ]; then "$@"; else free_test munmap 256 0; fi
	rc=$?
	kill $pids
	wait 2>/dev/null
	return $rc
}

# traced COMMAND...: COMMAND with the tracepoints mmu_gather:tlb_parallel_free
# and mtjob:mtjob_run on; what they recorded is printed as FREETRACE lines
# (traced_as TAG COMMAND...: as TAG lines).
traced() { traced_as FREETRACE "$@"; }
traced_as() {
	tag=$1
	shift
	tr=/sys/kernel/tracing
	mount -t tracefs nodev $tr 2>/dev/null
	echo > $tr/trace
	echo 1 > $tr/events/mmu_gather/tlb_parallel_free/enable &&
		echo 1 > $tr/events/mtjob/mtjob_run/enable || return 1
	"$@"
	rc=$?
	echo 0 > $tr/events/mmu_gather/tlb_parallel_free/enable
	echo 0 > $tr/events/mtjob/mtjob_run/enable
	grep -v '^#' $tr/trace | sed "s/^/$tag /"
	return $rc
}

# zap_traced COMMAND...: COMMAND with the tracepoint
# zap_parallel:exit_mmap_zap_parallel on; what it recorded is printed as
# ZAPTRACE lines.
zap_traced() {
	tr=/sys/kernel/tracing
	mount -t tracefs nodev $tr 2>/dev/null
	echo > $tr/trace
	echo 1 > $tr/events/zap_parallel/exit_mmap_zap_parallel/enable || return 1
	"$@"
	rc=$?
	echo 0 > $tr/events/zap_parallel/exit_mmap_zap_parallel/enable
	grep -v '^#' $tr/trace | sed 's/^/ZAPTRACE /'
	return $rc
}

# with_sysctl NAME VALUE COMMAND...: run COMMAND with vm.NAME=VALUE, then
# restore the old value.
# Nests: its variables are local, so an inner call does not change which
# knob the outer one restores.
with_sysctl() {
	local knob=$VM/$1 old rc
	old=$(cat "$knob") && echo "$2" > "$knob" || return 1
	shift 2
	"$@"
	rc=$?
	echo "$old" > "$knob"
	return $rc
}

# Out-of-range values are refused (EINVAL) and leave the old value; every
# value read can be written back.
sysctl_bounds() {
	for k in parallel_free parallel_free_threshold \
		parallel_free_max_helpers parallel_free_by_node; do
		cat $VM/$k > $VM/$k || { echo "free.sh: vm.$k: write-back failed"; return 1; }
	done
	# 8 GiB's pages is the highest threshold.
	for kv in parallel_free:2 parallel_free_threshold:0 \
		parallel_free_threshold:$((LOWEST - 1)) \
		parallel_free_threshold:$(($(pages 8192) + 1)) parallel_free_max_helpers:0 \
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
	# The bounds themselves are accepted (so free.sh's are the kernel's).
	accepts parallel_free_threshold $LOWEST $(pages 8192)
}

# accepts KNOB VALUE...: vm.KNOB takes each VALUE; its old value back after.
accepts() {
	k=$1
	shift
	old=$(cat $VM/$k)
	for v in "$@"; do
		echo "$v" > $VM/$k && [ "$(cat $VM/$k)" = "$v" ] ||
			{ echo "free.sh: vm.$k refused $v"; echo "$old" > $VM/$k; return 1; }
	done
	echo "$old" > $VM/$k
}

# zap_nomem MIB: an exit of MIB whose plan allocation fails (failslab, the
# exiting child's first GFP_NOWAIT slab allocation, nothing else's): the zap
# falls back to unmap_vmas() before anything ran.  Prints
#   ZAPNOMEM failed=<failslab failures>
zap_nomem() {
	local d=/sys/kernel/debug/failslab rc
	mount -t debugfs none /sys/kernel/debug 2>/dev/null
	[ -d $d ] || { echo "free.sh: no $d"; return 1; }
	echo Y > $d/task-filter && echo 100 > $d/probability &&
		echo 1 > $d/interval && echo 1 > $d/times &&
		echo 0 > $d/space && echo 0 > $d/verbose || return 1
	FREE_TEST_FAIL_EXIT=1 free_test exit "$1" 0 > /dev/null
	rc=$?
	echo "ZAPNOMEM failed=$((1 - $(cat $d/times)))"
	echo 0 > $d/probability
	return $rc
}

# mrelease_late MIB: free_test mrelease-late with the test kernel's hooks
# (CONFIG_PARALLEL_ZAP_REAPER_TEST): process_mrelease() sleeps 2 s between
# finding the mm and reaping it, and every chunk of that mm's exit but the
# first waits up to 10 s for the reaper to start.  Prints the hooks' lines
# that this case added to the log:
#   ZAPMRELEASE after=<chunks started after the reaper> rss_from=<pages>
#     rss_to=<pages> (the mm's RSS when the reap started and ended)
mrelease_late() {
	local d=/sys/module/oom_kill/parameters/mrelease_test_delay_ms
	local w=/sys/module/zap_parallel/parameters/test_wait_reaper_ms
	local n0 rc after rss
	[ -w $d ] && [ -w $w ] ||
		{ echo "free.sh: no $d or $w (CONFIG_PARALLEL_ZAP_REAPER_TEST)"; return 1; }
	n0=$(dmesg | wc -l)
	echo 2000 > $d && echo 10000 > $w || return 1
	free_test mrelease-late "$1"
	rc=$?
	echo 0 > $d
	echo 0 > $w
	after=$(dmesg | tail -n +$((n0 + 1)) |
		sed -n 's/.*zap_parallel: test: \([0-9]*\) chunks started after.*/\1/p' | tail -n 1)
	rss=$(dmesg | tail -n +$((n0 + 1)) |
		sed -n 's/.*RSS went from \([0-9]*\) to \([0-9]*\) pages.*/rss_from=\1 rss_to=\2/p' | tail -n 1)
	echo "ZAPMRELEASE after=${after:-0} ${rss:-rss_from=0 rss_to=0}"
	return $rc
}

# switched_out COMMAND...: COMMAND with the test kernel's hook
# (CONFIG_PARALLEL_ZAP_REAPER_TEST) that has an exit above the zap's
# threshold sleep 20 ms before it is checked, so that it comes back as a
# lazy-TLB task with the active_mm of what ran before it: the exit must be
# judged the same (zap-busy-cpus: busy, not refused).
switched_out() {
	local s=/sys/module/zap_parallel/parameters/test_exit_sleep_ms
	local rc
	[ -w $s ] ||
		{ echo "free.sh: no $s (CONFIG_PARALLEL_ZAP_REAPER_TEST)"; return 1; }
	echo 20 > $s || return 1
	"$@"
	rc=$?
	echo 0 > $s
	return $rc
}

# mremap_folios MIB: free_test mremap MIB with 64 KiB anonymous folios
# enabled (mTHP), then
#   ZAPMREMAP split_pmd=<thp_split_pmd delta> mthp64=<64 KiB folios faulted>
# the PMD THPs mremap() made PTE-mapped and the small large folios made.
mremap_folios() {
	local g=/sys/kernel/mm/transparent_hugepage t old gold s0 m0 rc
	t=$g/hugepages-64kB
	old=$(sed 's/.*\[\(.*\)\].*/\1/' $t/enabled)
	gold=$(sed 's/.*\[\(.*\)\].*/\1/' $g/enabled)
	# PMD THPs where free_test asks (MADV_HUGEPAGE), 64 KiB elsewhere.
	echo madvise > $g/enabled && echo always > $t/enabled || return 1
	s0=$(vmstat thp_split_pmd) m0=$(cat $t/stats/anon_fault_alloc)
	free_test mremap "$1"
	rc=$?
	echo "ZAPMREMAP split_pmd=$(($(vmstat thp_split_pmd) - s0))" \
		"mthp64=$(($(cat $t/stats/anon_fault_alloc) - m0))"
	echo "$old" > $t/enabled
	echo "$gold" > $g/enabled
	return $rc
}

# The parallel zap's sysctls: out-of-range values refused, every value read
# can be written back.
zap_sysctl_bounds() {
	for k in parallel_zap parallel_zap_threshold parallel_zap_max_helpers; do
		cat $VM/$k > $VM/$k || { echo "free.sh: vm.$k: write-back failed"; return 1; }
	done
	# The lowest threshold is one PMD's pages: 512 of 4 KiB, 8192 of 64 KiB.
	for kv in parallel_zap:2 parallel_zap:-1 parallel_zap_threshold:0 \
		parallel_zap_threshold:$((PMD_PAGES - 1)) parallel_zap_max_helpers:0; do
		k=${kv%%:*}
		v=${kv#*:}
		old=$(cat $VM/$k)
		if echo "$v" 2>/dev/null > $VM/$k; then
			echo "free.sh: vm.$k accepted $v"
			return 1
		fi
		[ "$(cat $VM/$k)" = "$old" ] || return 1
	done
	accepts parallel_zap_threshold $PMD_PAGES
}

# zapmix in a memory cgroup of its own, with two huge pages reserved for its
# hugetlb mapping: afterwards the cgroup, now empty, prints
#   ZAPMEMCG <name> current_kb=<memory.current> swap_kb=<memory.swap.current>
zap_mix() {
	echo 2 > $VM/nr_hugepages
	in_cgroup zapmix memory.max max free_test zapmix "$1"
	rc=$?
	echo 0 > $VM/nr_hugepages
	cg=/sys/fs/cgroup/zapmix
	echo "ZAPMEMCG zap-mixed current_kb=$(($(cat $cg/memory.current) / 1024))" \
		"swap_kb=$(($(cat $cg/memory.swap.current) / 1024))"
	return $rc
}

# The exit_mmap() cases (ZAPCASE lines), with vm.parallel_free on as the
# cases before left it, vm.parallel_zap off at first.  After the default
# threshold's cases they run at 256 MiB with 512 MiB workloads, to keep
# make check within its hour (with 64 KiB pages at one PMD block, 512 MiB,
# with workloads of two blocks: zmib()).
ZAP_LOW=$(pages 256)
[ $ZAP_LOW -ge $PMD_PAGES ] || ZAP_LOW=$PMD_PAGES
zap_cases() {
	mf_last=
	echo "ZAPDEFAULT parallel_zap=$(cat $VM/parallel_zap)" \
		"counters=$(zap_counters | awk '{ print $1 + $2 + $3 + $4 + $5 + $6 }')"
	run_zap zap-default-off free_test exit 1200 0
	run_zap zap-sysctl-bounds zap_sysctl_bounds
	echo 1 > $VM/parallel_zap
	grep -H . $VM/parallel_zap*
	# The default threshold (1 GiB resident): below it unmap_vmas(),
	# nothing counted; above it zapped in parallel.
	full_case_zap zap-exit-512m-default free_test exit 512 0
	run_zap zap-exit-1200m-thp-off free_test exit 1200 0
	echo $ZAP_LOW > $VM/parallel_zap_threshold
	full_case_zap zap-exit-128m free_test exit 128 0
	run_zap zap-exit-512m-thp-on free_test exit "$(zmib 512)" 1
	run_zap zap-mixed zap_mix "$(zmib 512)"
	# The plan's one allocation fails: unmap_vmas(), nothing lost.
	run_zap zap-nomem zap_nomem "$(zmib 384)"
	# Large folios PTE-mapped across the zap's chunk boundaries.
	run_zap zap-mremap mremap_folios 256
	# Device-private entries (the HMM test driver) in the exiting mm.
	run_zap zap-hmm free_test hmm-exit 512
	# Sparse address spaces: 64 GiB reserved, 1 GiB touched in one corner
	# or spread over every block; one helper, so that the tracepoint's
	# caller_cpu_ns and helper_ns are the two threads' shares.
	run_zap zap-sparse-corner with_sysctl parallel_zap_max_helpers 1 \
		zap_traced free_test sparse corner 1024
	run_zap zap-sparse-spread with_sysctl parallel_zap_max_helpers 1 \
		zap_traced free_test sparse spread 1024
	run_zap zap-nice-19 free_test nice19 exit "$(zmib 512)" 0
	full_case_zap zap-rt free_test rt exit "$(zmib 512)" 0
	full_case_zap zap-cgroup-cpu-max in_cgroup limited cpu.max \
		"50000 100000" free_test exit "$(zmib 512)" 0
	run_zap zap-busy-cpus on_busy_cpus switched_out \
		free_test exit "$(zmib 512)" 0
	# The helpers' CPU time in the cgroup's usage_usec (FREEACCT lines);
	# the parallel one with the tracepoint on.
	run_zap zap-acct-parallel zap_traced in_cgroup acct cpu.weight 100 \
		free_test acct-exit zap-parallel "$(zmib 512)"
	run_zap zap-acct-serial with_sysctl parallel_zap 0 \
		with_sysctl parallel_free 0 in_cgroup acct cpu.weight 100 \
		free_test acct-exit zap-serial "$(zmib 512)"
	full_case_zap zap-many-3x512m free_test many 3 "$(zmib 512)"
	# The last thread to leave is not the leader.
	run_zap zap-threads free_test threads "$(zmib 384)"
	# exec() drops the old mm: not the exiting task's own, refused.
	run_zap zap-exec free_test execbig "$(zmib 384)"
	# process_mrelease() reaps the mm while its exit may be zapping it.
	run_zap zap-mrelease free_test mrelease "$(zmib 384)"
	# process_mrelease() reaps while the job runs, by the test hooks.
	run_zap zap-mrelease-late mrelease_late "$(zmib 512)"
	# The OOM victim itself stays serial; its child (oom_score_adj -1000)
	# exits with 900 MiB resident after it.
	run_zap zap-oom oom_mid_teardown
	# Every fork child of 64 MiB (two blocks with 64 KiB pages) zapped in
	# parallel: 3 of them.
	run_zap zap-lowest-threshold with_sysctl parallel_zap_threshold $PMD_PAGES \
		free_test loop 24 "$(zmib 64)"
	zap_munmap_cases
	echo $DEFAULT_PAGES > $VM/parallel_zap_threshold
	echo 0 > $VM/parallel_zap
}
# munmap() and MADV_DONTNEED of a live range (issue 38), at ZAP_LOW:
# free_test live unmaps
# the middle of a mapping, its ends off PMD boundaries, while a thread on
# every CPU uses the pages beside both ends and maps, faults and unmaps
# memory of its own; it checks the neighbours, that the range faults, and
# the memfd's or the COW child's copy.  Each kind of mapping, THP on and
# off, pages swapped out, a range of three VMAs; refused for nice 19,
# nothing counted below the threshold or with vm.parallel_zap_live=0.
zap_munmap_cases() {
	local m
	m=$(zmib 512)
	echo $ZAP_LOW > $VM/parallel_zap_threshold
	run_zap_munmap zap-munmap-off free_test live anon "$m" 0
	# 1 GiB with a page in each PMD block, unmapped 10 times beside 8
	# threads: serially here, then with the live zap on, where the pages
	# the plan estimates (far below ZAP_LOW) leave it serial too; the
	# harness compares their times and shootdown IPIs (SPARSELOOP).
	run_zap_munmap zap-munmap-sparse-off free_test sparse-loop \
		"$(zmib 1024)" 10
	echo 1 > $VM/parallel_zap_live
	run_zap_munmap zap-munmap-sparse free_test sparse-loop "$(zmib 1024)" 10
	run_zap_munmap zap-munmap-anon free_test live anon "$m" 0
	run_zap_munmap zap-munmap-thp free_test live anon "$m" 1
	run_zap_munmap zap-munmap-cow free_test live cow "$m" 0
	run_zap_munmap zap-munmap-shared free_test live shared "$m" 0
	run_zap_munmap zap-munmap-mlock free_test live mlock "$m" 0
	run_zap_munmap zap-munmap-swap free_test swap "$m"
	# Registered with a userfaultfd: missing mode (anonymous), and
	# write-protected (a memfd): every test kernel has USERFAULTFD and
	# uffd-wp (x86_64, arm64), so a kernel without fails the case.
	run_zap_munmap zap-munmap-uffd free_test live uffd "$m" 0
	full run_zap_munmap zap-munmap-uffd-wp free_test live uffd-wp "$m" 0
	# Three VMAs in the range (its middle third MADV_RANDOM, checked in
	# /proc/self/maps): one job.
	run_zap_munmap zap-munmap-split free_test live split "$m" 0
	full run_zap_munmap zap-munmap-nice-19 free_test nice19 live anon "$m" 0
	# 128 MiB: below ZAP_LOW with 4 KiB and with 64 KiB pages.
	run_zap_munmap zap-munmap-small free_test live anon 128 0
	# MADV_DONTNEED(_LOCKED) of the same ranges, the mapping left: the
	# range reads zero after (the memfd's data for shared).
	run_zap_dontneed zap-dontneed-anon free_test live anon "$m" 0 dontneed
	run_zap_dontneed zap-dontneed-thp free_test live anon "$m" 1 dontneed
	# Three VMAs: one job over all of them (madvise_dontneed_vmas()),
	# not one a VMA.
	run_zap_dontneed zap-dontneed-split \
		free_test live split "$m" 0 dontneed
	# Refused (nice 19): its VMAs zapped serially one by one, the range
	# read back as zero.
	run_zap_dontneed zap-dontneed-split-nice-19 \
		free_test nice19 live split "$m" 0 dontneed
	# A range of four VMAs whose third madvise() refuses (sealed: EPERM;
	# mlocked: EINVAL) or reports to a userfaultfd (REMOVE), or is a hole
	# (ENOMEM, the walk goes on): upstream's result (MADVMID lines), the
	# two VMAs before it zapped as one job.
	run_zap_dontneed zap-dontneed-mid-sealed free_test madv-mid sealed "$m"
	run_zap_dontneed zap-dontneed-mid-locked free_test madv-mid locked "$m"
	run_zap_dontneed zap-dontneed-mid-uffd free_test madv-mid uffd "$m"
	run_zap_dontneed zap-dontneed-mid-gap free_test madv-mid gap "$m"
	run_zap_dontneed zap-dontneed-cow free_test live cow "$m" 0 dontneed
	run_zap_dontneed zap-dontneed-shared \
		free_test live shared "$m" 0 dontneed
	run_zap_dontneed zap-dontneed-locked \
		free_test live mlock "$m" 0 dontneed
	# The REMOVE event of the range, then the handler fills what reads
	# it; a memfd write-protected keeps a marker in every zapped entry.
	full run_zap_dontneed zap-dontneed-uffd free_test live uffd "$m" 0 dontneed
	run_zap_dontneed zap-dontneed-uffd-wp \
		free_test live uffd-wp "$m" 0 dontneed
	echo 0 > $VM/parallel_zap_live
}

# The upstream mm selftests in /bin/mm (scripts/guest.py's MM_SELFTESTS,
# built from the kernel tree) with vm.parallel_zap=1 at its lowest
# threshold, one PMD block's pages, where the smallest chunk is one block
# too: an exit with at least 512 pages resident over two blocks or more
# may be zapped in parallel (most of these tests' processes are smaller;
# pz says how many were), and so may a munmap() (vm.parallel_zap_live=1)
# whose populated page tables reach two blocks.  The parallel free is on at
# its lowest threshold as well.  One line each:
#   MMSELFTEST <name> rc=<exit code> pz=<parallel zaps> pzt=<their threads>
#     pzm=<munmap()s zapped in parallel> pzmt=<their threads>
# rc 4 is kselftest's skip.
mm_selftests() {
	[ -d /bin/mm ] ||
		{ echo "MMSELFTEST none rc=127 pz=0 pzt=0 pzm=0 pzmt=0"; return; }
	echo 32 > $VM/nr_hugepages
	echo 1 > $VM/parallel_zap
	echo 1 > $VM/parallel_zap_live
	echo $PMD_PAGES > $VM/parallel_zap_threshold
	echo 1 > $VM/parallel_free
	echo $LOWEST > $VM/parallel_free_threshold
	# mttest.free=selftest: mttest.selftest_parallel=0 is the control, with
	# the zap and the free off; mttest.selftests=NAME,... runs only those.
	if [ "$(arg mttest.selftest_parallel)" = 0 ]; then
		echo 0 > $VM/parallel_zap
		echo 0 > $VM/parallel_zap_live
		echo 0 > $VM/parallel_free
	fi
	# mttest.selftests_skip=NAME,... leaves those out (scripts/guest.py's
	# MM_SELFTESTS_FULL_ONLY in 'make check').
	mm_only=$(arg mttest.selftests | tr , ' ')
	mm_skip=$(arg mttest.selftests_skip | tr , ' ')
	for t in /bin/mm/*; do
		if [ -n "$mm_only" ]; then
			case " $mm_only " in *" ${t##*/} "*) ;; *) continue ;; esac
		fi
		case " $mm_skip " in *" ${t##*/} "*) continue ;; esac
		z0=$(vmstat parallel_zap) t0=$(vmstat parallel_zap_threads)
		m0=$(vmstat parallel_zap_munmap)
		n0=$(vmstat parallel_zap_munmap_threads)
		u0=$(uptime_cs)
		# hmm-tests' benchmark_thp_migration times migrations (5 x 2
		# directions x 7 sizes up to 256 MiB) against the harness's
		# 120 s timeout: 64 s of it on an idle TCG guest here, over
		# 120 s on a slower CI host at stop 53.  It checks nothing the
		# migrate tests do not, so it is left out; kselftest_harness's
		# -T excludes a test by name.
		args=
		case ${t##*/} in
		hmm-tests) args="-T benchmark_thp_migration" ;;
		esac
		# In their own directory: ksm_functional_tests executes
		# ./ksm_functional_tests.
		(cd /bin/mm && timeout 300 "$t" $args > /tmp/mmselftest.log 2>&1)
		rc=$?
		z1=$(vmstat parallel_zap) t1=$(vmstat parallel_zap_threads)
		m1=$(vmstat parallel_zap_munmap)
		n1=$(vmstat parallel_zap_munmap_threads)
		# A failure's log: its failed subtests (kselftest's "not ok"
		# lines, wherever they are), then its last 40 lines.
		[ $rc = 0 ] || { grep '^not ok' /tmp/mmselftest.log; \
			tail -n 40 /tmp/mmselftest.log; } |
			sed "s|^|MMSELFTEST-LOG ${t##*/}: |"
		echo "MMSELFTEST ${t##*/} rc=$rc pz=$((z1 - z0)) pzt=$((t1 - t0))" \
			"pzm=$((m1 - m0)) pzmt=$((n1 - n0))"
		echo "CASETIME mm-${t##*/} total_cs=$(($(uptime_cs) - u0)) memfree_cs=0"
	done
	rm -f /tmp/mmselftest.log
	echo 0 > $VM/nr_hugepages
	echo $DEFAULT_PAGES > $VM/parallel_zap_threshold
	echo 0 > $VM/parallel_zap
	echo 0 > $VM/parallel_zap_live
	echo $DEFAULT_PAGES > $VM/parallel_free_threshold
}

full_case_zap() {
	full run_zap "$@"
}
# full COMMAND...: COMMAND in the full tests only (mttest.free=test).
full() {
	[ "$(arg mttest.free)" = test ] || return 0
	"$@"
}

swap_on_zram() {
	[ -e /sys/block/zram0 ] || return 0
	echo 2G > /sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null &&
		swapon /dev/zram0
}

# mttest.free_sizes=MiB,MiB..., mttest.free_modes=mode,mode...,
# mttest.free_thp=0,1 and mttest.free_what=munmap,exit narrow the benchmark
# (scripts/guest.py freebench --sizes, --modes, --thp, --what).  Mode zap is
# the parallel zap with the parallel free off: exit_mmap()'s for exits,
# munmap()'s (vm.parallel_zap_live, issue 38) for munmap().  Each parallel
# zap's tracepoint (zap_parallel:exit_mmap_zap_parallel or
# live_zap_parallel) follows its BENCH line as a ZAPTRACE line.  With
# mttest.free_phases=1 (freebench --phases; needs
# CONFIG_FUNCTION_PROFILER, which the benchmark kernel has) every run is
# profiled by ftrace's function profiler over PROFILE_FUNCS, each
# function's time with that of what it calls, without time asleep, and
# each CPU's figures follow as PROFILE lines (scripts/freebench.py makes
# the phases of them).
# With mttest.free_locks=1 too (freebench --locks), the locks the page
# frees take are profiled as well (scripts/freebench.py's lock table):
# free_pcppages_bulk() and free_one_page() hold a zone's lock (their time
# includes the wait for it), folio_lruvec_lock_irqsave() takes a node's LRU
# lock (the wait included, not the hold), and queued_spin_lock_slowpath()
# is every contended spinlock's wait, one call per contended acquisition.
# Their hooks slow every run (about 90 000 calls at 4 GiB, against 2 300),
# so they are not in the phases' profile.
PROFILE_LOCKS="free_pcppages_bulk free_one_page folio_lruvec_lock_irqsave
queued_spin_lock_slowpath"
PROFILE_FUNCS="unmap_vmas unmap_vma_range zap_vma_range_batched
zap_vma_range_chunk flush_tlb_mm_range free_pages_and_swap_cache
free_pgtables tlb_finish_mmu"
# tlb_counts: the tlb:tlb_flush events of the last teardown (between
# free_test's "mtbench teardown" and "mtbench done" marks), by reason:
#   BENCHTLB switch=<N> remote=<N> local=<N> local_mm=<N> sent=<N> wrong=<N>
# (flush on task switch, remote shootdown: a flush an IPI asked for, local
# shootdown, local MM shootdown: a flush of the whole mm, remote IPI send,
# remote wrong CPU), and free_test's FREETLB line the IPIs received.
tlb_counts() {
	[ "$tlbev" = /dev/null ] && return
	awk '/tracing_mark_write: mtbench teardown/ { on = 1; next }
		/tracing_mark_write: mtbench done/ { on = 0; next }
		on && / tlb_flush: / {
			if (/task switch/) s++; else if (/remote shootdown/) r++
			else if (/local MM shootdown/) m++
			else if (/local shootdown/) l++; else if (/remote IPI send/) i++
			else w++
		}
		END { printf "BENCHTLB switch=%d remote=%d local=%d local_mm=%d sent=%d wrong=%d\n",
			s, r, l, m, i, w }' $tr/trace
}

# What the policy did in a run, from /proc/vmstat, after its BENCH line:
#   BENCHPOLICY zap=<parallel zaps: exits, munmap()s, MADV_DONTNEEDs>
#     zap_stopped=<of those, helpers stopped> zap_serial=<zaps by one thread>
#     zap_busy=<refused: no idle CPU> zap_refused=<refused: task>
#     free=<parallel frees> free_stopped=<helpers stopped>
#     zap_backoff=<refused: helpers stopped in a zap just before>
# (struct mtjob.stop_when_slower and struct mtjob_backoff); a counter the
# kernel lacks counts 0.
POLICY_COUNTERS="parallel_zap parallel_zap_munmap parallel_zap_dontneed
parallel_zap_helpers_stopped parallel_zap_serial parallel_zap_busy
parallel_zap_refused tlb_parallel_free tlb_parallel_free_helpers_stopped
parallel_zap_stopped_backoff"
policy_counts() {
	awk -v names="$(echo $POLICY_COUNTERS)" '
		{ v[$1] = $2 }
		END { n = split(names, k, " ")
		      for (i = 1; i <= n; i++) printf "%d ", v[k[i]] }' /proc/vmstat
}
policy_delta() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) d[i] = y[i] - x[i]
		printf "BENCHPOLICY zap=%d zap_stopped=%d zap_serial=%d", \
			d[1] + d[2] + d[3], d[4], d[5]
		printf " zap_busy=%d zap_refused=%d free=%d free_stopped=%d", \
			d[6], d[7], d[8], d[9]
		printf " zap_backoff=%d\n", d[10] }'
}

bench() {
	reps=$(arg mttest.free_reps)
	sizes=$(arg mttest.free_sizes | tr , ' ')
	modes=$(arg mttest.free_modes | tr , ' ')
	thps=$(arg mttest.free_thp | tr , ' ')
	whats=$(arg mttest.free_what | tr , ' ')
	phases=$(arg mttest.free_phases)
	[ "$(arg mttest.free_locks)" = 1 ] &&
		PROFILE_FUNCS="$PROFILE_FUNCS $PROFILE_LOCKS"
	[ "$(arg mttest.free_spread)" = 1 ] && export FREE_TEST_SPREAD=1
	[ "$(arg mttest.free_local)" = 1 ] && export FREE_TEST_LOCAL=1
	tr=/sys/kernel/tracing
	mount -t tracefs nodev $tr 2>/dev/null
	# x86's tlb:tlb_flush, counted by reason between free_test's marks.
	tlbev=$tr/events/tlb/tlb_flush/enable
	[ -e $tlbev ] || tlbev=/dev/null
	if [ "$phases" = 1 ]; then
		if [ ! -e $tr/function_profile_enabled ]; then
			echo "BENCH-FAILED phases: no function profiler (CONFIG_FUNCTION_PROFILER)"
			phases=0
		else
			# One name a write: a missing one fails alone.
			for f in $PROFILE_FUNCS; do
				echo $f >> $tr/set_ftrace_filter ||
					echo "BENCH-FAILED phases: $f cannot be profiled"
			done
			echo 0 > $tr/options/sleep-time
			echo "PHASES $(tr '\n' ' ' < $tr/set_ftrace_filter)" \
				"graph-time=$(cat $tr/options/graph-time)" \
				"sleep-time=$(cat $tr/options/sleep-time)"
		fi
	fi
	for i in $(seq "${reps:-3}"); do
		for mib in ${sizes:-2048 4096 6144}; do
			for thp in ${thps:-0}; do
			for what in ${whats:-munmap exit}; do
				for mode in ${modes:-off by_node interleave by_node_1h}; do
					h=4 z=0
					case $mode in
					off) p=0 n=1 ;;
					by_node) p=1 n=1 ;;
					interleave) p=1 n=0 ;;
					by_node_1h) p=1 n=1 h=1 ;;
					zap) p=0 n=1 z=1 ;;
					esac
					echo $p > $VM/parallel_free
					echo $n > $VM/parallel_free_by_node
					echo $h > $VM/parallel_free_max_helpers
					echo $z > $VM/parallel_zap
					if [ $what != exit ] && [ $z = 1 ] &&
					   ! [ -e $VM/parallel_zap_live ]; then
						echo "BENCH-FAILED $mode $what $mib: no vm.parallel_zap_live"
						continue
					fi
					[ -e $VM/parallel_zap_live ] &&
						echo $z > $VM/parallel_zap_live
					echo > $tr/trace
					echo $z > $tr/events/zap_parallel/exit_mmap_zap_parallel/enable
					echo $z > $tr/events/zap_parallel/live_zap_parallel/enable
					echo 1 > $tlbev
					[ "$phases" = 1 ] && echo 1 > $tr/function_profile_enabled
					pol0=$(policy_counts)
					case $what in
					# A live process: threads on every CPU use
					# the mm (asleep 3/4 of the time) while the
					# middle of a mapping is unmapped or
					# MADV_DONTNEEDed (free_test live).
					live) out=$(FREE_TEST_EVERY_CPU=1 free_test live anon $mib $thp) ;;
					live-dontneed) out=$(FREE_TEST_EVERY_CPU=1 free_test live anon $mib $thp dontneed) ;;
					*) out=$(free_test $what $mib $thp) ;;
					esac || echo "BENCH-FAILED $mode $what $mib"
					[ "$phases" = 1 ] && echo 0 > $tr/function_profile_enabled
					echo 0 > $tlbev
					echo "BENCH $mode $out"
					policy_delta "$pol0" "$(policy_counts)"
					echo 0 > $tr/events/zap_parallel/exit_mmap_zap_parallel/enable
					echo 0 > $tr/events/zap_parallel/live_zap_parallel/enable
					grep -E ' (exit_mmap|live)_zap_parallel: ' $tr/trace | sed 's/^/ZAPTRACE /'
					tlb_counts
					[ "$phases" = 1 ] && for f in $tr/trace_stat/function*; do
						sed -n "s/^ *\([a-z_][a-z_]*\) /PROFILE cpu=${f##*function} \1 /p" $f
					done
				done
			done
			done
		done
	done
	echo 0 > $VM/parallel_free
	echo 0 > $VM/parallel_zap
	echo 0 > $VM/parallel_zap_live
	echo 1 > $VM/parallel_free_by_node
	echo 4 > $VM/parallel_free_max_helpers
}

# live_zaps [_threads]: munmap()'s and MADV_DONTNEED's parallel zaps (or
# their threads), summed; 0 without CONFIG_PARALLEL_ZAP_LIVE (vmstat() then
# reports the counters missing).
live_zaps() {
	local m d
	m=$(vmstat parallel_zap_munmap$1) d=$(vmstat parallel_zap_dontneed$1)
	echo $((${m:-0} + ${d:-0}))
}

# CPUs 1 and up go offline and online, one at a time and then all at once,
# while teardowns of 128 to 512 MiB (some forking COW children) run with the
# lowest threshold, and exits are zapped in parallel (mode hotplug).
hotplug() {
	cpus=$(ls -d /sys/devices/system/cpu/cpu[1-9]* | sed 's/.*cpu//')
	end=$(($(date +%s) + $(arg mttest.hotplug_seconds)))
	z0=$(vmstat parallel_zap) t0=$(vmstat parallel_zap_threads)
	l0=$(live_zaps) lt0=$(live_zaps _threads) zb0=$(vmstat parallel_zap_busy)
	( while [ "$(date +%s)" -lt "$end" ]; do
		free_test loop 4 256 || exit 1
	  done ) & w1=$!
	( while [ "$(date +%s)" -lt "$end" ]; do
		free_test munmap 512 0 && free_test fork 128 || exit 1
	  done ) & w2=$!
	# A live mm's munmap() and MADV_DONTNEED (vm.parallel_zap_live on in
	# mode hotplug), with threads using the range's neighbours.
	( while [ "$(date +%s)" -lt "$end" ]; do
		free_test live anon "$(zmib 256)" 0 &&
			free_test live anon "$(zmib 256)" 0 dontneed || exit 1
	  done ) & w3=$!
	n=0
	while [ "$(date +%s)" -lt "$end" ]; do
		# One CPU at a time, then all but CPU 0 at once (the nodes of
		# those CPUs have none left while they are down).
		for c in $cpus; do
			echo 0 > /sys/devices/system/cpu/cpu$c/online &&
				echo 1 > /sys/devices/system/cpu/cpu$c/online &&
				n=$((n + 1))
		done
		for c in $cpus; do
			echo 0 > /sys/devices/system/cpu/cpu$c/online
		done
		for c in $cpus; do
			echo 1 > /sys/devices/system/cpu/cpu$c/online && n=$((n + 1))
		done
	done
	rc=0
	wait $w1 || rc=1
	wait $w2 || rc=1
	wait $w3 || rc=1
	# The gate after hotplug: every CPU is back online and the workloads
	# are done, so a live munmap() must be zapped in parallel again (what
	# hotplug must not leave stale: the unbound cpumask, the idle CPUs the
	# gate counts).  A few tries, a second apart, for CPUs still settling.
	after=0 tries=0
	while [ $tries -lt 5 ] && [ $after = 0 ]; do
		tries=$((tries + 1))
		sleep 1
		a0=$(live_zaps)
		free_test live anon "$(zmib 256)" 0 || rc=1
		after=$(($(live_zaps) - a0))
	done
	echo "FREEHOTPLUG-AFTER tries=$tries parallel=$after"
	# The exits zapped in parallel meanwhile, and their threads; the live
	# ranges' (munmap() and MADV_DONTNEED together).
	echo "FREEHOTPLUG cycles=$n zaps=$(($(vmstat parallel_zap) - z0))" \
		"zap_threads=$(($(vmstat parallel_zap_threads) - t0))" \
		"live=$(($(live_zaps) - l0))" \
		"live_threads=$(($(live_zaps _threads) - lt0))" \
		"zap_busy=$(($(vmstat parallel_zap_busy) - zb0))"
	return $rc
}

# The scheduler's events while CPUs go up and down, kept for when a
# warning fires: traceoff_on_warning stops tracing at the first WARN, so
# the per-CPU buffers end with what each CPU did just before it (on the
# 6.12 base this showed the dl_server timer firing on a dying CPU while its
# stopper ran, doc/results.md).  Printed
# only if tracing was turned off, as TRACE lines, the last 300 events of
# each CPU.
TRACE=/sys/kernel/tracing
sched_trace_setup() {
	mount -t tracefs nodev $TRACE 2>/dev/null
	[ -d $TRACE/events/sched ] || { echo "free.sh: no $TRACE/events/sched"; return 1; }
	echo 1024 > $TRACE/buffer_size_kb || return 1
	for e in sched_switch sched_wakeup sched_wakeup_new \
		sched_migrate_task sched_process_exit sched_process_free; do
		echo 1 > $TRACE/events/sched/$e/enable || return 1
	done
	# And the deadline timer, which also starts and replenishes the fair
	# class's dl_server (rq->fair_server).
	dl=$(awk '$3 == "dl_task_timer" { print $1; exit }' /proc/kallsyms)
	[ -n "$dl" ] || { echo "free.sh: no dl_task_timer in /proc/kallsyms"; return 1; }
	for e in hrtimer_start hrtimer_expire_entry; do
		echo "function == 0x$dl" > $TRACE/events/timer/$e/filter &&
			echo 1 > $TRACE/events/timer/$e/enable || return 1
	done
	echo 1 > /proc/sys/kernel/traceoff_on_warning &&
		echo 1 > $TRACE/tracing_on
}
sched_trace_report() {
	[ "$(cat $TRACE/tracing_on)" = 0 ] || return 0
	echo "TRACE a warning turned tracing off; each CPU's last events:"
	for d in $TRACE/per_cpu/cpu*; do
		tail -n 300 $d/trace | sed "s/^/TRACE ${d##*/}: /"
	done
}

# Fault injection (make stress; CONFIG_FAIL_PAGE_ALLOC, CONFIG_FAILSLAB,
# CONFIG_FAULT_INJECTION_DEBUG_FS): half of the GFP_NOWAIT/GFP_ATOMIC page
# and slab allocations of the tasks run with inject fail (task-filter; those
# that may reclaim are never failed), which hits the gather's batch pages
# and the engine's helper work items and segments.
FAULT_TIMES=1000000
faults_setup() {
	mount -t debugfs none /sys/kernel/debug 2>/dev/null
	for a in fail_page_alloc failslab; do
		d=/sys/kernel/debug/$a
		[ -d $d ] || { echo "free.sh: no $d"; return 1; }
		echo Y > $d/task-filter && echo 50 > $d/probability &&
			echo 1 > $d/interval && echo $FAULT_TIMES > $d/times &&
			echo 0 > $d/verbose && echo 0 > $d/space || return 1
	done
	echo 0 > /sys/kernel/debug/fail_page_alloc/min-order
}
faults_count() {
	for a in fail_page_alloc failslab; do
		printf '%s=%s ' $a $((FAULT_TIMES - $(cat /sys/kernel/debug/$a/times)))
	done
}
inject() {
	sh -c 'echo 1 > /proc/self/make-it-fail && exec "$@"' sh "$@"
}

# Before anything is set: parallel freeing is off and has counted nothing.
echo "FREEDEFAULT parallel_free=$(cat $VM/parallel_free)" \
	"counters=$(counters | awk '{ print $1 + $2 + $3 + $4 + $5 + $6 }')"
swap_on_zram || echo "free.sh: no swap on zram"
# Each case checks what its own teardowns did: helpers stopped in a case
# before it (struct mtjob.stop_when_slower, on a slow host) must not leave
# its teardowns serial (struct mtjob_backoff), so the tests turn the
# backoff off; the benchmark keeps it, as it measures the policy.  (The
# kselftest parallel_teardown turns it off for each of its tests, and
# back.)
[ "$(arg mttest.free)" = bench ] ||
	{ [ -w /sys/module/mtjob/parameters/backoff_ms ] &&
		echo 0 > /sys/module/mtjob/parameters/backoff_ms; }
# mttest.free=quick ('make check'): the cases run by full_case (and by
# full) are left out; 16 of 33 remain: off by default, the sysctl bounds,
# below the threshold, munmap() of 2 GiB without THP and exit() with, three
# of the policies that refuse helpers (SCHED_FIFO, nice 19, cpu.max), busy
# CPUs, CPU accounting parallel and serial, a tight memory cgroup, a node
# below its low watermark, OOM mid-teardown, the key switched during
# teardowns and the lowest threshold, then the zap's cases and the mm
# selftests; nothing of swap, COW forks (the kselftest parallel_teardown
# has one), page cache, concurrent exits, pressure, a roomy memory cgroup
# or vm.parallel_free_by_node=0 (stop 56 moved the COW fork, page cache
# and roomy memcg cases to the full tests, for issue 50's 50 minutes).
# mttest.free=test ('make check-full') runs every case.
full_case() {
	[ "$(arg mttest.free)" = test ] || return 0
	run_case "$@"
}
case $(arg mttest.free) in
test|quick)
	# Off (the default): a 2 GiB teardown counts nothing.
	run_case default-off free_test munmap 2048 0
	echo 1 > $VM/parallel_free
	grep -H . $VM/parallel_free*
	run_case sysctl-bounds sysctl_bounds
	# Below the default threshold (1 GiB): serial, nothing counted.
	full_case munmap-64m free_test munmap 64 0
	run_case munmap-256m free_test munmap 256 0
	full_case munmap-512m free_test munmap 512 0
	# A child's 2 GiB munmap(), its parent sampling nr_parallel_free_held.
	run_case munmap-2g-thp-off free_test held 2048
	full_case munmap-2g-thp-on free_test munmap 2048 1
	full_case exit-2g-thp-off free_test exit 2048 0
	run_case exit-2g-thp-on free_test exit 2048 1
	full_case fork-cow-1200m free_test fork 1200
	# 2 GiB of page cache (a memfd mapped MAP_SHARED): the flush only drops
	# references, so it does not count towards the threshold.
	full_case shared-2g free_test shared 2048
	full_case swap-2g free_test swap 2048
	full_case many-3x1200m free_test many 3 1200
	full_case pressure pressure
	# Tasks that get no helpers: the gather is refused where it would grow
	# (about 38 MiB in), so 256 MiB shows it.
	run_case rt free_test rt munmap 256 0
	full_case sched-idle free_test idle munmap 256 0
	full_case sched-batch free_test batch munmap 256 0
	run_case nice-19 free_test nice19 munmap 256 0
	full_case taskset-cpu0 taskset 1 free_test munmap 256 0
	run_case cgroup-cpu-max in_cgroup limited cpu.max "50000 100000" \
		free_test munmap 256 0
	full_case cgroup-cpu-weight-10 in_cgroup light cpu.weight 10 \
		free_test munmap 256 0
	full_case cgroup-cpu-idle in_cgroup idle cpu.idle 1 \
		free_test munmap 256 0
	run_case busy-cpus on_busy_cpus
	# The helpers' CPU time is charged to the caller's cgroup: its
	# cpu.stat usage_usec grows by more than the caller's own CPU time
	# when the free is parallel, by the same when it is serial.  The
	# parallel one runs with the tracepoints on.
	run_case acct-parallel traced in_cgroup acct cpu.weight 100 \
		free_test acct parallel 2048
	run_case acct-serial with_sysctl parallel_free 0 \
		in_cgroup acct cpu.weight 100 free_test acct serial 2048
	# A memory cgroup with less than the threshold (1 GiB) left above a
	# 2 GiB teardown: the gather does not grow, for lack of memory, until
	# the rounds freed serially made room; with room from the start, it
	# grows at once.
	run_case memcg-tight in_cgroup tight memory.max 2700M \
		free_test munmap 2048 0
	full_case memcg-tight-exit in_cgroup tight memory.max 2700M \
		free_test exit 2048 0
	full_case memcg-roomy in_cgroup roomy memory.max 3500M \
		free_test munmap 2048 0
	run_case node-low node_low
	full_case by-node-off with_sysctl parallel_free_by_node 0 free_test munmap 2048 0
	run_case oom-mid-teardown oom_mid_teardown
	run_case key-toggling traced_as TOGGLETRACE toggling
	# 60 rounds of 96 MiB (24576 pages): two flushes at the lowest threshold
	# each, plus a fork and exit every eighth round.
	run_case lowest-threshold with_sysctl parallel_free_threshold $LOWEST free_test loop 60 96
	zap_cases
	mm_selftests
	;;
isolcpus)
	# Booted with isolcpus=domain,1 on two vCPUs: the only other CPU is
	# isolated, out of the unbound workqueue cpumask, so no helpers.
	echo 1 > $VM/parallel_free
	run_case isolcpus free_test munmap 2048 0
	;;
oom)
	echo 1 > $VM/parallel_free
	run_case oom-mid-teardown oom_mid_teardown
	;;
zap)
	# The zap's cases alone, as in quick (guest.py freetest --only zap).
	zap_cases
	;;
toggling)
	# The key-toggling case alone, as 'make check' runs it (guest.py
	# freetest --only toggling).
	echo 1 > $VM/parallel_free
	run_case key-toggling traced_as TOGGLETRACE toggling
	;;
faults)
	echo 1 > $VM/parallel_free
	echo $LOWEST > $VM/parallel_free_threshold
	# And every exit zapped in parallel (the helpers' gathers fail too).
	echo 1 > $VM/parallel_zap
	echo $PMD_PAGES > $VM/parallel_zap_threshold
	faults_setup || exit 1
	run_case faults-munmap inject free_test munmap 2048 0
	run_case faults-exit inject free_test exit 2048 0
	run_case faults-fork-cow inject free_test fork 1200
	run_case faults-loop inject free_test loop 20 96
	echo "FAULTS $(faults_count)"
	;;
hotplug|hotplug-serial)
	# hotplug-serial: the same teardowns and hotplug with the parallel free
	# off, the control for whatever the hotplug run's log shows.
	[ "$(arg mttest.free)" = hotplug ] && echo 1 > $VM/parallel_free &&
		echo 1 > $VM/parallel_zap && echo 1 > $VM/parallel_zap_live
	echo $LOWEST > $VM/parallel_free_threshold
	echo $PMD_PAGES > $VM/parallel_zap_threshold
	sched_trace_setup || exit 1
	run_case hotplug hotplug
	sched_trace_report
	;;
selftest)
	# Chasing one selftest's failure: mttest.selftests=NAME run
	# mttest.selftest_reps=N times (free.sh's mm_selftests).
	for i in $(seq "$(arg mttest.selftest_reps)"); do
		mm_selftests
	done
	;;
bench)
	bench
	;;
esac
