#!/bin/sh
# The teardown part of 'make run' (scripts/guest.py run, scripts/runreport.py),
# run by the guest's init when the kernel command line has
# mttest.teardown=MIB: the munmap() of MIB MiB of anonymous memory (THP off,
# half on each node) with the parallel free off and on, and the exit of a
# process holding as much with the parallel zap off and on
# (tests/guest/free_test.c, as the free tests run it).  Each run prints
#   TEARDOWN what=<munmap|exit> mode=<serial|parallel> mib=<MiB> us=<us> \
#            rc=<free_test's exit code> <vmstat counter>=<delta> ...
# with the /proc/vmstat deltas over the run of every counter in COUNTERS:
# they show which path ran (a serial run counts nothing; a parallel one
# counts its flushes or zaps and their threads), and of kswapd's and
# kcompactd's counters (BG_COUNTERS); with mttest.teardown_trace an exit
# also prints
#   TEARDOWN-RUNNABLE what=exit mode=<mode>: <comm[pid]@cpu> ...
# the other tasks in state R just before the child's exit (free_test's
# FREE_TEST_RUNNABLE): what the exit's idle-CPU check had to compete with.
# Not by default: the scan of /proc opens and drops an inode per task, whose
# RCU frees may wake the grace-period kthread onto the other CPU just as the
# exit looks for an idle one (before the fix of sched_offload_idle_cpus(),
# 8 of 15 exits were refused with the scan, 4 of 15 without it).
# mttest.teardown_reps=N runs each pair N times (default 1);
# mttest.teardown_first=parallel runs the parallel mode of each pair first
# (default serial first); the order flips every repetition.
# Huge pages allocated at boot are given back first, so that they do not
# take the memory the teardown maps.
# mttest.teardown_trace (a diagnosis, issue 46): the scheduler's switches
# and wake-ups are traced over every parallel-mode run, and the trace of a
# run the policy declined (a refusal counter moved) is printed between
# TEARDOWN-TRACE and TEARDOWN-TRACE-END: what ran on the other CPUs when the
# gate looked (the tracing itself makes refusals rare: 0 in 22 exits).

VM=/proc/sys/vm
COUNTERS="tlb_parallel_free tlb_parallel_free_threads tlb_parallel_free_fallback
	tlb_parallel_free_nogrow_busy parallel_zap parallel_zap_threads
	parallel_zap_serial parallel_zap_busy parallel_zap_refused
	parallel_zap_stopped_backoff
	parallel_zap_nomem"
# What else ran in the guest during the run (issue 46: an exit refused as
# busy on a quiet machine): kswapd's and kcompactd's work, and the watermark
# boosts that wake kswapd after a fragmenting allocation.
BG_COUNTERS="pageoutrun pgscan_kswapd pgsteal_kswapd compact_daemon_wake
	compact_daemon_migrate_scanned compact_daemon_free_scanned
	kswapd_low_wmark_hit_quickly kswapd_high_wmark_hit_quickly"
arg() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
snap() { awk '{ printf "%s %s\n", $1, $2 }' /proc/vmstat; }
deltas() {
	# $1, $2: two snap outputs; print "name=delta" for COUNTERS.
	for k in $COUNTERS $BG_COUNTERS; do
		a=$(echo "$1" | awk -v k=$k '$1 == k { print $2 }')
		b=$(echo "$2" | awk -v k=$k '$1 == k { print $2 }')
		printf ' %s=%s' $k $((${b:-0} - ${a:-0}))
	done
}

mib=$(arg mttest.teardown)
T=/sys/kernel/tracing
trace=
case " $(cat /proc/cmdline) " in *" mttest.teardown_trace "*)
	mount -t tracefs nodev $T 2>/dev/null
	if [ -w $T/trace ]; then
		trace=1
		echo 0 > $T/tracing_on
		echo 16384 > $T/buffer_size_kb
		echo sched:sched_switch sched:sched_wakeup sched:sched_wakeup_new \
			workqueue:workqueue_queue_work > $T/set_event
	fi ;;
esac
reps=$(arg mttest.teardown_reps)
first=$(arg mttest.teardown_first)
for d in /sys/kernel/mm/hugepages/hugepages-*; do
	[ -d "$d" ] && echo 0 > "$d/nr_hugepages"
done
echo "TEARDOWN-SETUP engine=$(cat /sys/module/mtjob/parameters/engine 2>/dev/null)" \
	"free_threshold=$(cat $VM/parallel_free_threshold)" \
	"zap_threshold=$(cat $VM/parallel_zap_threshold)" \
	"free_max_helpers=$(cat $VM/parallel_free_max_helpers)" \
	"zap_max_helpers=$(cat $VM/parallel_zap_max_helpers)"
echo 0 > $VM/parallel_free
echo 0 > $VM/parallel_zap
order="serial parallel"
[ "$first" = parallel ] && order="parallel serial"
for i in $(seq "${reps:-1}"); do
	for what in munmap exit; do
		for mode in $order; do
			p=0
			[ $mode = parallel ] && p=1
			if [ $what = munmap ]; then
				echo $p > $VM/parallel_free
			else
				echo $p > $VM/parallel_zap
			fi
			if [ -n "$trace" ] && [ $mode = parallel ]; then
				echo > $T/trace
				echo 1 > $T/tracing_on
			fi
			s0=$(snap)
			if [ -n "$trace" ]; then
				out=$(FREE_TEST_RUNNABLE=1 free_test $what "$mib" 0)
			else
				out=$(free_test $what "$mib" 0)
			fi
			rc=$?
			s1=$(snap)
			if [ -n "$trace" ] && [ $mode = parallel ]; then
				echo 0 > $T/tracing_on
				d=$(deltas "$s0" "$s1")
				case "$d" in *_busy=[1-9]*|*_refused=[1-9]*|*_serial=[1-9]*|*_nogrow=[1-9]*)
					echo "TEARDOWN-TRACE what=$what"
					# 100 events before the mark (the exit
					# starts right after it), 300 from it on.
					awk '/tracing_mark_write: mtbench teardown/ {
						for (i = NR - 100; i < NR; i++)
							if (i > 0) print l[i % 100]
						n = 300 }
					n > 0 { print; n-- }
					{ l[NR % 100] = $0 }' $T/trace
					echo TEARDOWN-TRACE-END ;;
				esac
			fi
			echo 0 > $VM/parallel_free
			echo 0 > $VM/parallel_zap
			us=$(echo "$out" | sed -n 's/^FREE .* us=\([0-9]*\)$/\1/p')
			# What else was runnable at the exit's start (issue 46).
			echo "$out" | sed -n "s/^FREERUNNABLE \(.*\)/TEARDOWN-RUNNABLE what=$what mode=$mode: \1/p"
			echo "TEARDOWN what=$what mode=$mode mib=$mib us=${us:--1}" \
				"rc=$rc$(deltas "$s0" "$s1")"
		done
	done
	# The next repetition starts with the other mode.
	set -- $order
	order="$2 $1"
done
echo TEARDOWN-END
