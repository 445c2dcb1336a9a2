// SPDX-License-Identifier: GPL-2.0
/*
 * Parallel zap of a dying address space.
 *
 * exit_mmap() unmaps every VMA of the mm with one thread: the page table
 * walk, the rmap, swap entry and RSS work of each entry, and (since the free
 * of the gathered pages follows each TLB flush) the page frees.  The
 * parallel free (mm/mmu_gather_parallel.c) takes only the last part off the
 * exiting thread, which bounds what it gains at the share of the free.  Here
 * the zap itself runs on kworker helpers as well as the exiting task, with
 * mtjob_run().  It is off until vm.parallel_zap is set to 1 (a static key);
 * then exit_mmap() asks exit_mmap_zap_parallel() before unmap_vmas().
 *
 * - When.  The exiting task's own mm (not the old mm exec() drops, nor one
 *   a kernel thread or process_mrelease() puts last), with at least
 *   vm.parallel_zap_threshold pages resident or swapped out (the exact sums
 *   of the mm's RSS and swap counters, as check_mm() reads them when the mm
 *   is freed; 1 GiB worth by default, the default of the parallel free), a
 *   task whose work kworkers may fairly do (sched_task_offload_allowed():
 *   no real-time, SCHED_IDLE or niced-down policy, no CPU affinity or
 *   cgroup CPU restriction), not an OOM victim and not an mm the OOM reaper
 *   or process_mrelease() had queued or started when it was asked, and at
 *   least one other idle CPU of the unbound workqueue cpumask
 *   (sched_offload_idle_cpus()).  The helpers are reserved as with the
 *   parallel free: one per other idle CPU, at most
 *   vm.parallel_zap_max_helpers for all exits together, and no more than
 *   the job has chunks of the minimum size for them.  Otherwise
 *   unmap_vmas() runs as upstream.  A task killed by a signal is not
 *   refused: nothing is held back here, the memory comes back sooner.
 *
 * - What helpers zap.  Anonymous, shmem and page cache VMAs, with
 *   userfaultfd and guard markers (dropped, as unmap_vmas() does), swap
 *   entries, the zero page, KSM, mlocked and device-private folios.  The
 *   caller keeps, and zaps after the join with exit_mmap()'s own gather
 *   exactly as unmap_vmas() would: hugetlb (hugetlb_zap_begin() takes the
 *   file's i_mmap_rwsem and the VMA lock for writing, and the range may
 *   widen over shared PMDs); VM_PFNMAP, VM_MIXEDMAP and VM_IO (driver
 *   memory, whose entries need no per-page work anyway, and whose PUD or
 *   PMD leaves a block boundary would split); DAX (PUD leaves).  Which is
 *   which is zap_parallel_vma_ok(), a function of vm_flags and vm_file
 *   alone: neither changes while the mm has no users and the caller holds
 *   mmap_read_lock(), so the plan, the helpers and the caller's tail all
 *   take the same decision for a VMA, and every VMA is zapped by exactly
 *   one of them.
 *
 * - How the job is cut.  The job's indices are segments of address space,
 *   [seg[i], seg[i + 1]), whose boundaries are multiples of PMD_SIZE: they
 *   split no page table of the last level and no PMD-mapped THP (PUD leaves
 *   exist only in VMAs the caller keeps), and a block shared by two VMAs is
 *   zapped, both parts, by whoever has its segment.  The segments cover,
 *   without gap or overlap, the span from the first VMA helpers may zap to the
 *   end of the last, so that nothing in it depends on where the boundaries
 *   fall.  Where they fall follows the work: the plan walks the upper levels of
 *   the page tables of those VMAs (PGD to PMD), estimates the pages under each
 *   populated PMD entry (zap_plan_pages(): a PMD leaf's PMD_SIZE worth, a page
 *   table's from ZAP_PLAN_SAMPLES of its entries), and starts a new segment
 *   every @target of those pages, @target being the smallest chunk's pages or
 *   the pages over ZAP_SEGS_MAX, whichever is more.  So a sparse address space
 *   (a JVM or Go heap reservation, an ASan shadow, 64 GiB reserved and 1 GiB
 *   touched in one corner) is cut where its pages are, every chunk carries a
 *   comparable share, and a range of page tables that each map a page or two is
 *   not worth a job (a munmap(): the threshold is on these pages). The walk
 *   reads every entry of each PMD table present and 8 cache lines of each page
 *   table, twice (one pass counts, one cuts): a quarter of the zap's reads of a
 *   page table, full or not.  The helpers find their VMAs in the maple tree
 *   (mt_find(), under RCU; the VMAs themselves stay because the caller holds
 *   mmap_read_lock() until every helper is done).
 *
 * - No reclaim for bookkeeping.  The only allocation is the segment table,
 *   one page, with GFP_NOWAIT; when it fails the exit is serial
 *   (vm.parallel_zap_nomem counts it).  The table cannot overflow, whatever
 *   the number of VMAs: its entries are boundaries of the work, not VMAs.
 *   The helpers' work items are GFP_NOWAIT too (struct mtjob.gfp): a
 *   helper that has not started when the caller runs out of chunks is
 *   cancelled, so on a loaded system the caller does the work alone.
 *
 * - TLB.  Each chunk has its own tlb_gather_mmu_fullmm() gather and ends it
 *   with tlb_finish_mmu(): its TLB flush precedes the free of its pages as
 *   in the serial path.  The gathers of a job run at the same time as one
 *   another and as exit_mmap()'s own, so tlb_finish_mmu() would take each
 *   for a nested gather and turn its last flush into a flush of the whole
 *   mm with freed_tables set: a flush per chunk that a serial exit does
 *   not do, and on arm64 a broadcast TLBI per chunk where a fullmm exit
 *   issues none before free_pgtables().  The upgrade is for a zapper that
 *   skipped an entry another had cleared and whose caller then relies on
 *   that entry being flushed (MADV_DONTNEED beside munmap()).  Nothing
 *   relies on a chunk's result before exit_mmap() takes mmap_write_lock():
 *   the job only returns to exit_mmap(), whose own gather frees the page
 *   tables with freed_tables set, and the only other zapper, the OOM
 *   reaper, keeps its own upgrade and holds mmap_read_lock(), which that
 *   write lock waits for.  A chunk frees only pages it cleared, after its
 *   own flush.  So a chunk's gather is marked (mmu_gather.zap_chunk)
 *   and keeps the last flush of a fullmm gather, exactly what each batch of
 *   the serial exit gets: on arm64 none (the ASID is not reused before the
 *   whole TLB is invalidated), on x86 flush_tlb_mm() without freed_tables
 *   (lazy CPUs are not interrupted: their stale entries are dropped before
 *   they run the mm, or another on that PCID, again).  Page tables are
 *   freed once, by the caller, in free_pgtables() after the join.
 *
 * - The OOM reaper and process_mrelease().  The check above is a snapshot:
 *   process_mrelease() may still start __oom_reap_task_mm() under its own
 *   mmap_read_lock() while the job runs, as it may during a serial
 *   unmap_vmas().  That concurrency is upstream's: the reaper zaps private
 *   mappings with its own non-fullmm gather, takes the same page table
 *   locks, skips what a helper cleared and keeps its own nested upgrade.
 *   OOM victims are refused all the same: their helpers would be kworkers
 *   woken on a system short of memory, to which the reaper already brings
 *   a second thread.
 *
 * - An oops in the exiting task's own chunk parks the task (its stack is
 *   lent to the job's helpers, task_stack_lent(); kernel/exit.c): the
 *   helpers use the job's state on its stack, which do_exit() would reuse,
 *   so the task never runs again and keeps its stack and mm; the helpers
 *   finish their chunks, unless one needs a page table lock the task died
 *   holding (a PMD's split lock covers 1 GiB), on which it spins, as any
 *   waiter on an oopsed holder's spinlock does.  An oops in a helper's
 *   chunk kills the kworker, and the exiting task waits for it forever in
 *   the join, as any flush of an oopsed work item does.
 *
 * - The parallel free does not nest: each chunk's gather frees its own
 *   pages serially, since the zap's threads already are the CPUs the free
 *   would have used, and a helper's gather may not have helpers anyway
 *   (kworkers are kernel threads).
 *
 * - Node affinity, where it is cheap to know: a segment whose first VMA is
 *   bound to one node (MPOL_BIND or MPOL_PREFERRED of one node, e.g. by
 *   mbind()) is zapped by a helper on that node (MTJOB_AFFINITY_BY_INDEX),
 *   which takes that node's zone locks when it frees; with no such VMA the
 *   helpers have no affinity (MTJOB_AFFINITY_NONE).
 *
 * - The helpers' CPU time (task_sched_runtime() around their chunks) is
 *   charged to the caller after the job (sched_account_offload()): to its
 *   cgroups and to its own system time and runtime, which its parent's
 *   wait4() rusage, times(), taskstats and BSD accounting read.  What their
 *   zaps of dirty shared file PTEs charged to the kworkers' I/O accounting
 *   (/proc/PID/io write_bytes, nr_dirtied) is moved to the caller too.
 *   The mmu notifier range is started and ended by the caller around
 *   everything, as unmap_vmas() does; no vm_ops callback runs in a zap
 *   (->close() runs later, in tear_down_vmas()), and uprobe_munmap()
 *   returns at once for an mm without users (for a live mm's chunks it
 *   may set MMF_RECALC_UPROBES, from a kworker, which is all it does).
 */

#include <linux/atomic.h>
#include <linux/cacheinfo.h>
#include <linux/dax.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/hash.h>
#include <linux/jump_label.h>
#include <linux/log2.h>
#include <linux/mempolicy.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/moduleparam.h>
#include <linux/mtjob.h>
#include <linux/mtjob_backoff.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/oom.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/cputime.h>
#include <linux/slab.h>
#include <linux/sizes.h>
#include <linux/sysfs.h>
#include <linux/sysctl.h>
#include <linux/task_io_accounting_ops.h>
#include <linux/userfaultfd_k.h>
#include <linux/vmstat.h>

#include <asm/tlb.h>

#define CREATE_TRACE_POINTS
#include <trace/events/zap_parallel.h>

#include "internal.h"

/* vm.parallel_zap_threshold: the default of vm.parallel_free_threshold. */
#define ZAP_PARALLEL_DEFAULT_PAGES	(SZ_1G >> PAGE_SHIFT)
/*
 * The smallest chunk at the default threshold, in pages the plan estimates:
 * 32 MiB worth (8192 pages of 4 KiB, 16 full page tables on x86-64), or one
 * PMD entry's where PMD_SIZE is more (arm64's 512 MiB with 64 KiB pages),
 * so that a chunk's gather, TLB flush and lookups cost little next to its
 * zap of 8192 pages.  A threshold lowered below twice that shrinks it
 * (zap_parallel_min_chunk()), trading that cost for parallel zaps of
 * smaller mms.  Not a constant everywhere: on powerpc PMD_SIZE is known at
 * boot.
 */
#define ZAP_PARALLEL_MIN_CHUNK		(max_t(unsigned long, SZ_32M, PMD_SIZE) >> \
					 PAGE_SHIFT)
/*
 * Entries of a page table the plan reads (zap_plan_pages()): 8, one in 64
 * with 4 KiB pages, each in a cache line of its own.
 */
#define ZAP_PLAN_SAMPLES		8
/* vm.parallel_zap_max_helpers: two per node with memory, as the free. */
#define ZAP_PARALLEL_HELPERS_PER_NODE	2
/*
 * Segments at most: one page of boundaries (512 with 4 KiB pages), enough
 * for mtjob's four chunks a thread (CHUNKS_PER_THREAD) of one segment each
 * for 128 threads; beyond that, chunks of several segments.
 */
#define ZAP_SEGS_MAX			(PAGE_SIZE / sizeof(unsigned long))

/* Enabled while vm.parallel_zap is 1. */
DEFINE_STATIC_KEY_FALSE(exit_mmap_zap_parallel_key);

static int sysctl_parallel_zap;
static unsigned long sysctl_parallel_zap_threshold = ZAP_PARALLEL_DEFAULT_PAGES;
static int sysctl_parallel_zap_max_helpers = ZAP_PARALLEL_HELPERS_PER_NODE;
static DEFINE_MUTEX(zap_parallel_lock);

/*
 * The smallest chunk for @threshold, in estimated pages:
 * ZAP_PARALLEL_MIN_CHUNK, or half the threshold where that is less, so that
 * an mm just above a threshold lowered below 64 MiB (as the tests lower it)
 * still has two chunks.
 */
static unsigned long zap_parallel_min_chunk(unsigned long threshold)
{
	return clamp(threshold / 2, 1UL, ZAP_PARALLEL_MIN_CHUNK);
}

/*
 * A chunk's gather: no nested upgrade in tlb_finish_mmu() and no parallel
 * free (top of this file).
 */
static void tlb_mark_zap_chunk(struct mmu_gather *tlb)
{
	tlb->zap_chunk = 1;
#ifdef CONFIG_MMU_GATHER_PARALLEL_FREE
	tlb->parallel_free_refused = 1;
#endif
}

/* Helpers reserved by all exits, <= vm.parallel_zap_max_helpers. */
static atomic_t zap_parallel_helpers = ATOMIC_INIT(0);
/* Zaps are serial for a while after one whose helpers were stopped. */
static struct mtjob_backoff zap_parallel_backoff;

/**
 * struct zap_job - the plan of a parallel zap, and what it measured
 * @mm: the mm, dying or (munmap()) live
 * @caller: the exiting or unmapping task; the helpers' time is charged to it
 * @side: a munmap()'s side tree of detached VMAs, indexed by position (0
 *	to @side_end - 1, in address order); NULL for an exit, whose VMAs are
 *	in the mm's tree, by address
 * @side_end: the number of VMAs in @side
 * @seg_vma: with @side, the position of the first VMA helpers may zap in
 *	each segment (the second half of @seg's page)
 * @cur_vma: while planning, the position in @side of the VMA counted
 * @one: a madvise()'s one live VMA, in place of a tree (position 0)
 * @details: with @one, madvise()'s zap_details for its chunks; without,
 *	chunks zap as unmap_vmas() does (unmap_vma_range())
 * @live: the mm has users: chunks gather with range flushes, not fullmm
 * @segs_max: segments at most, ZAP_SEGS_MAX, or half with @side
 * @start: the first address to zap (a munmap()'s start; 0 for an exit)
 * @limit: the end of the range to zap (ULONG_MAX for an exit)
 * @seg: the segments' first addresses, PMD_SIZE aligned and increasing;
 *	segment i is [@seg[i], @seg[i + 1]), the last ends at @end
 * @nr_segs: the job's size, <= @segs_max
 * @end: the end of the last segment, PMD_SIZE aligned
 * @seen: the end of the last block counted, while planning
 * @target: estimated pages a segment has before the next starts
 * @cut: while cutting, the pages counted when the next segment may start
 * @entries: populated PMD entries under the VMAs helpers may zap
 * @pages: the pages the plan estimates under them (zap_plan_pages())
 * @nr_vmas: those VMAs
 * @helper_ns: the helpers' CPU time in chunks
 * @caller_ns: the caller's CPU time in chunks, which only the caller writes
 * @write_bytes: what helpers' zaps of dirty shared file PTEs charged to their
 *	I/O accounting (task_io_account_write()), moved to the caller's
 * @nr_dirtied: pages they counted as dirtied (task_struct.nr_dirtied), ditto
 * @helpers: helpers reserved for the job
 * @threads: threads that zapped, the caller included if it ran a chunk
 * @helpers_stopped: the helpers stopped because they slowed the job down
 *	(&mtjob.stop_when_slower); vm.parallel_zap_helpers_stopped counts it
 * @job_ns: the job's time, in nanoseconds
 * @tail_ns: the time of the caller's zap of the VMAs it kept, after the job
 * @test_chunks: test only (CONFIG_PARALLEL_ZAP_REAPER_TEST): chunks started
 * @test_after: test only: chunks started after the reaper
 * @test_moves: test only: the chunks' threads' migrations to another CPU
 *	while in a chunk (se.nr_migrations at its end less at its start)
 */
struct zap_job {
	struct mm_struct *mm;
	struct task_struct *caller;
	struct maple_tree *side;
	unsigned long side_end;
	unsigned long *seg_vma;
	unsigned long cur_vma;
	struct vm_area_struct *one;
	struct zap_details *details;
	bool live;
	unsigned long segs_max;
	unsigned long start;
	unsigned long limit;
	unsigned long *seg;
	unsigned long nr_segs;
	unsigned long end;
	unsigned long seen;
	unsigned long target;
	unsigned long cut;
	unsigned long entries;
	unsigned long pages;
	unsigned int nr_vmas;
	atomic64_t helper_ns;
	u64 caller_ns;
	atomic64_t write_bytes;
	atomic_t nr_dirtied;
	int helpers;
	int threads;
	bool helpers_stopped;
	u64 job_ns;
	u64 tail_ns;
#ifdef CONFIG_PARALLEL_ZAP_REAPER_TEST
	atomic_t test_chunks;
	atomic_t test_after;
	atomic64_t test_moves;
#endif
};

#ifdef CONFIG_PARALLEL_ZAP_REAPER_TEST
/*
 * Test only, not for merging: while process_mrelease() holds off the reap of
 * this mm (oom_kill.mrelease_test_delay_ms, mrelease_test_mm), every chunk
 * but the job's first waits at its start, up to this long (ms), for the
 * reaper to start (MMF_UNSTABLE), so that the helpers zap while it zaps.
 */
static unsigned int test_wait_reaper_ms;
module_param(test_wait_reaper_ms, uint, 0644);

/*
 * Test only: the next job with helpers oopses (a write through NULL) at the
 * start of a chunk, once: 1 in a chunk of its caller, after a helper started
 * one (so that the helpers are zapping with the job's state on the caller's
 * stack), 2 in a chunk of a helper.  Reset to 0 when it fires.
 */
static unsigned int test_oops_chunk;
module_param(test_oops_chunk, uint, 0644);
/* Always NULL: the hook's oops is a write through it, as a buggy chunk's. */
static int *test_oops_null;

static void zap_test_oops(struct zap_job *zj)
{
	unsigned int which = READ_ONCE(test_oops_chunk);
	bool caller = current == zj->caller;
	int i;

	if (!which || zj->helpers < 1 || which != (caller ? 1 : 2))
		return;
	/*
	 * The caller waits up to a second for a helper's first chunk; without
	 * one it does not fire (the test tries another munmap()).
	 */
	for (i = 0; caller && i < 1000 && atomic_read(&zj->test_chunks) < 2; i++)
		usleep_range(1000, 2000);
	if (caller && atomic_read(&zj->test_chunks) < 2)
		return;
	if (cmpxchg(&test_oops_chunk, which, 0) != which)
		return;
	pr_info("zap_parallel: test: oops in a chunk of the %s (pid %d), job of pid %d with %d helper(s), %d chunk(s) started\n",
		caller ? "caller" : "helper", task_pid_nr(current),
		task_pid_nr(zj->caller), zj->helpers,
		atomic_read(&zj->test_chunks));
	WRITE_ONCE(*READ_ONCE(test_oops_null), 1);
}

/*
 * Test only: the migrations of threads while in a chunk, every job's since
 * boot (read-only).  A thread that moves leaves what it batched on the CPU
 * before (an munlock, for one) for that CPU to drain: the free guest's
 * Mlocked check wants it back exactly when munmap() returns only if none
 * moved.
 */
static atomic64_t test_chunk_moves = ATOMIC64_INIT(0);

static int test_chunk_moves_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&test_chunk_moves));
}

/* Read-only, on the command line too (parse_one() calls ->set). */
static int test_chunk_moves_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;
}

static const struct kernel_param_ops test_chunk_moves_ops = {
	.set = test_chunk_moves_set,
	.get = test_chunk_moves_get,
};
module_param_cb(test_chunk_moves, &test_chunk_moves_ops, NULL, 0444);

static void zap_test_chunk_start(struct zap_job *zj)
{
	unsigned int ms = READ_ONCE(test_wait_reaper_ms);
	unsigned long timeout;

	atomic64_sub(current->se.nr_migrations, &zj->test_moves);
	if (READ_ONCE(test_oops_chunk)) {
		atomic_inc(&zj->test_chunks);
		zap_test_oops(zj);
		return;
	}
	timeout = jiffies + msecs_to_jiffies(ms);
	if (!ms || READ_ONCE(mrelease_test_mm) != zj->mm ||
	    atomic_inc_return(&zj->test_chunks) == 1)
		return;
	while (!mm_flags_test(MMF_UNSTABLE, zj->mm) &&
	       time_before(jiffies, timeout))
		usleep_range(500, 1000);
	if (mm_flags_test(MMF_UNSTABLE, zj->mm))
		atomic_inc(&zj->test_after);
}

/* After the chunk's last drain of its CPU's batches. */
static void zap_test_chunk_end(struct zap_job *zj)
{
	atomic64_add(current->se.nr_migrations, &zj->test_moves);
}

static void zap_test_report(struct zap_job *zj)
{
	atomic64_add(atomic64_read(&zj->test_moves), &test_chunk_moves);
	if (atomic_read(&zj->test_after))
		pr_info("zap_parallel: test: %d chunks started after a reaper started on the mm of pid %d\n",
			atomic_read(&zj->test_after), task_pid_nr(zj->caller));
}

/*
 * Test only: an exit sleeps this long (ms) before it is checked, so that it
 * is switched out after exit_mm() and back in as a lazy-TLB task, as a
 * preemption there would do.
 */
static unsigned int test_exit_sleep_ms;
module_param(test_exit_sleep_ms, uint, 0644);

static void zap_test_switch_out(void)
{
	unsigned int ms = READ_ONCE(test_exit_sleep_ms);

	if (ms)
		msleep(ms);
}
#else
static inline void zap_test_chunk_start(struct zap_job *zj)
{
}

static inline void zap_test_chunk_end(struct zap_job *zj)
{
}

static inline void zap_test_switch_out(void)
{
}

static inline void zap_test_report(struct zap_job *zj)
{
}
#endif

/*
 * A zap that finds a dirty PTE of a shared file mapping marks its folio
 * dirty, and folio_account_dirtied() charges the dirtying to current: a
 * helper gives what its chunk charged it back to the job, for the caller.
 */
static void zap_helper_dirtied(struct zap_job *zj, u64 write_bytes,
			       int nr_dirtied)
{
#ifdef CONFIG_TASK_IO_ACCOUNTING
	u64 bytes = current->ioac.write_bytes - write_bytes;

	current->ioac.write_bytes = write_bytes;
	atomic64_add(bytes, &zj->write_bytes);
#endif
	atomic_add(current->nr_dirtied - nr_dirtied, &zj->nr_dirtied);
	current->nr_dirtied = nr_dirtied;
}

/* The caller takes the helpers' dirtying as its own, after the join. */
static void zap_caller_dirtied(struct zap_job *zj)
{
	task_io_account_write(atomic64_read(&zj->write_bytes));
	current->nr_dirtied += atomic_read(&zj->nr_dirtied);
}

/*
 * May helpers zap this VMA?  See the top of this file: vm_file and the
 * vm_flags tested here, which change only under the VMA's write lock
 * (vm_flags_set()), which the caller's mmap_lock or VMA lock excludes.
 */
static bool zap_parallel_vma_ok(struct vm_area_struct *vma)
{
	if (vma->vm_flags & (VM_HUGETLB | VM_PFNMAP | VM_MIXEDMAP | VM_IO))
		return false;
	return !vma_is_dax(vma);
}

/*
 * Is @mm one whose last reference the exiting task drops after exit_mm()
 * (its own in practice, rarely one a file it released held), and may
 * kworkers do its work?
 */
static bool zap_parallel_allowed(struct mm_struct *mm)
{
	/*
	 * exit_mm() clears current->mm before its mmput() runs exit_mmap().
	 * Not current->active_mm == @mm: a task preempted after exit_mm()
	 * cleared ->mm is switched back in as a lazy-TLB task, with the
	 * active_mm of whatever ran before it (context_switch()).
	 */
	if (current->flags & PF_KTHREAD || current->mm ||
	    !(current->flags & PF_EXITING))
		return false;
	/*
	 * OOM victims are left to the reaper (top of this file).  A reaper
	 * that starts after this check zaps beside the job, as it would beside
	 * unmap_vmas().
	 */
	if (tsk_is_oom_victim(current) ||
	    mm_flags_test(MMF_OOM_REAP_QUEUED, mm) ||
	    mm_flags_test(MMF_UNSTABLE, mm))
		return false;
	return sched_task_offload_allowed(current);
}

/*
 * Reserves helpers: at most one per other idle CPU that unbound kworkers may
 * run on, at most @cap, within vm.parallel_zap_max_helpers for all exits.
 * Returns how many, maybe 0.
 */
static int zap_parallel_reserve(int cap)
{
	int max = READ_ONCE(sysctl_parallel_zap_max_helpers);
	int idle, old, nr;

	idle = sched_offload_idle_cpus(current, min(max, cap));
	old = atomic_read(&zap_parallel_helpers);
	do {
		nr = min(idle, max - old);
		if (nr <= 0)
			return 0;
	} while (!atomic_try_cmpxchg(&zap_parallel_helpers, &old, old + nr));
	return nr;
}

/*
 * The pages the zap will find under a populated PMD entry @pmdval at @addr
 * (PMD_SIZE aligned), as far as the plan can tell without a lock: a leaf's,
 * or a swap or migration entry's, PMD_SIZE worth; a page table's estimated
 * from ZAP_PLAN_SAMPLES of its entries, one every PTRS_PER_PTE /
 * ZAP_PLAN_SAMPLES from an offset that depends on @addr, each in use
 * standing for that many (so that a pattern that repeats each block, such
 * as a page at the start of every 2 MiB, is not always or never seen).  A
 * range whose tables map a page or two each estimates near what it holds,
 * and is neither cut as if full nor taken as worth a job; the samples'
 * places depend on @addr alone, so both passes of the plan agree unless
 * faults or another zapper changed the table in between.  The table is read as
 * GUP-fast and the rmap walkers read it: pte_offset_map() under RCU, which
 * keeps a table that khugepaged or PT reclaim frees meanwhile; a table
 * gone counts for nothing, a count that is off moves a boundary.
 */
static unsigned long zap_plan_pages(struct zap_job *zj, pmd_t *pmd,
				    pmd_t pmdval, unsigned long addr)
{
	unsigned long step = max_t(unsigned long,
				   PTRS_PER_PTE / ZAP_PLAN_SAMPLES, 1);
	unsigned int bits = ilog2(step);
	unsigned long i, used = 0;
	pte_t *pte;

	if (!pmd_present(pmdval) || pmd_leaf(pmdval))
		return PMD_SIZE >> PAGE_SHIFT;
	pte = pte_offset_map(pmd, addr);
	if (!pte)
		return 0;
	for (i = bits ? hash_long(addr >> PMD_SHIFT, bits) : 0;
	     i < PTRS_PER_PTE; i += step) {
		if (!pte_none(ptep_get_lockless(pte + i)))
			used++;
	}
	pte_unmap(pte);
	return used * step;
}

/*
 * One populated PMD entry at @addr, PMD_SIZE aligned, in address order,
 * with its @pages.  Without a segment table (the counting pass) it is only
 * counted; with one, it starts a segment once the pages before it reach
 * the next @target.  The entry of a block seen before (two VMAs in one
 * block) is not counted again.
 */
static void zap_plan_entry(struct zap_job *zj, unsigned long addr,
			   unsigned long pages)
{
	if (addr < zj->seen)
		return;
	zj->seen = addr + PMD_SIZE;
	if (zj->seg && zj->pages >= zj->cut && zj->nr_segs < zj->segs_max) {
		if (zj->side)
			zj->seg_vma[zj->nr_segs] = zj->cur_vma;
		zj->seg[zj->nr_segs++] = addr;
		zj->cut = zj->pages + zj->target;
	}
	zj->entries++;
	zj->pages += pages;
}

/*
 * Counts the populated PMD entries under @vma and their pages, reading the
 * upper levels of its page tables and samples of its last (zap_plan_pages()).
 * The upper levels' reads take no lock: tables above the PTE level
 * stay while a VMA spans them (free_pgd_range() frees none a live VMA
 * spans; the caller keeps @vma, by mmap_lock or, for madvise(), its VMA
 * lock), and a count that is off would move a segment boundary, not change
 * what gets zapped.  A PUD leaf counts for nothing (only VMAs the caller
 * keeps have them).
 */
static void zap_plan_vma(struct zap_job *zj, struct vm_area_struct *vma)
{
	unsigned long addr = ALIGN_DOWN(max(vma->vm_start, zj->start),
					PMD_SIZE);
	unsigned long end = min(vma->vm_end, zj->limit);
	unsigned long next;

	for (; addr < end; addr = next) {
		pgd_t *pgd = pgd_offset(zj->mm, addr);
		p4d_t *p4d;
		pud_t *pud;
		pmd_t *pmd;

		cond_resched();
		next = pgd_addr_end(addr, end);
		if (pgd_none(pgdp_get(pgd)) || pgd_bad(pgdp_get(pgd)))
			continue;
		p4d = p4d_offset(pgd, addr);
		next = p4d_addr_end(addr, end);
		if (p4d_none(p4dp_get(p4d)) || p4d_bad(p4dp_get(p4d)))
			continue;
		pud = pud_offset(p4d, addr);
		next = pud_addr_end(addr, end);
		if (pud_none(pudp_get(pud)) || pud_bad(pudp_get(pud)))
			continue;
		pmd = pmd_offset(pud, addr);
		for (; addr < next; addr += PMD_SIZE, pmd++) {
			pmd_t pmdval = pmdp_get_lockless(pmd);

			if (!pmd_none(pmdval))
				zap_plan_entry(zj, addr,
					       zap_plan_pages(zj, pmd, pmdval,
							      addr));
		}
	}
}

/*
 * The job's next VMA at or after *@pos that starts below @hi, and *@pos
 * moved past it: @pos is an address in the mm's tree (an exit) or a
 * position in a munmap()'s side tree.  mt_find() reads either under RCU;
 * neither changes while the job runs (the caller holds mmap_lock, and a
 * side tree is the caller's until it frees the VMAs after the job).
 */
static struct vm_area_struct *zap_next_vma(const struct zap_job *zj,
					   unsigned long *pos,
					   unsigned long hi)
{
	struct vm_area_struct *vma;

	if (zj->one) {
		if (*pos)
			return NULL;
		*pos = 1;
		return zj->one;
	}
	if (!zj->side) {
		/* The end of the job's range (ULONG_MAX for an exit). */
		hi = min(hi, zj->limit);
		if (*pos >= hi)
			return NULL;
		return mt_find(&zj->mm->mm_mt, pos, hi - 1);
	}
	if (*pos >= zj->side_end)
		return NULL;
	vma = mt_find(zj->side, pos, zj->side_end - 1);
	return vma && vma->vm_start < hi ? vma : NULL;
}

/* Where the VMAs of the job start: the first address, or position 0. */
static unsigned long zap_first_pos(const struct zap_job *zj,
				   struct vm_area_struct *first)
{
	return zj->side || zj->one ? 0 : first->vm_start;
}

/*
 * One pass over the VMAs helpers may zap, from @first on: without a segment
 * table it counts their entries and VMAs; with one it also cuts the
 * segments.  The first segment starts at the block of the first such VMA
 * and the last ends at the end of the last one's block, so that the
 * segments cover every VMA helpers zap, populated or not.
 */
static void zap_plan_pass(struct zap_job *zj, struct vm_area_struct *first)
{
	unsigned long pos = zap_first_pos(zj, first);
	struct vm_area_struct *vma;

	zj->nr_segs = 0;
	zj->entries = 0;
	zj->pages = 0;
	zj->cut = zj->target;
	zj->nr_vmas = 0;
	zj->seen = 0;
	zj->end = 0;
	while ((vma = zap_next_vma(zj, &pos, ULONG_MAX))) {
		if (!zap_parallel_vma_ok(vma))
			continue;
		/* mt_find() left @pos after the VMA's position. */
		zj->cur_vma = pos - 1;
		if (!zj->nr_vmas++ && zj->seg) {
			zj->seg[0] = ALIGN_DOWN(max(vma->vm_start, zj->start),
						PMD_SIZE);
			if (zj->side)
				zj->seg_vma[0] = zj->cur_vma;
			zj->nr_segs = 1;
		}
		zap_plan_vma(zj, vma);
		zj->end = ALIGN(min(vma->vm_end, zj->limit), PMD_SIZE);
	}
}

/*
 * Where a chunk from segment @index, from address @lo, finds its first VMA:
 * @lo in the mm's tree; in a side tree, the position the plan recorded,
 * moved back over any VMA before it that still reaches @lo (one helpers
 * may not zap, or one whose part of the block was not populated).
 */
static unsigned long zap_seg_pos(const struct zap_job *zj,
				 unsigned long index, unsigned long lo)
{
	unsigned long pos, prev;
	struct vm_area_struct *vma;

	if (zj->one)
		return 0;
	if (!zj->side)
		return lo;
	for (pos = zj->seg_vma[index]; pos; pos--) {
		prev = pos - 1;
		vma = mt_find(zj->side, &prev, pos - 1);
		if (!vma || vma->vm_end <= lo)
			break;
	}
	return pos;
}

/* The segments [@start, @end) as an address range: [*@lo, *@hi). */
static void zap_segs_range(const struct zap_job *zj, unsigned long start,
			   unsigned long end, unsigned long *lo,
			   unsigned long *hi)
{
	*lo = zj->seg[start];
	*hi = end < zj->nr_segs ? zj->seg[end] : zj->end;
}

/*
 * Zaps segments [@start, @end) with a gather of its own: every VMA helpers
 * may zap, where it meets their address range.
 */
static int zap_parallel_chunk(unsigned long start, unsigned long end,
			      void *arg)
{
	struct zap_job *zj = arg;
	bool helper = current != zj->caller;
	u64 runtime = task_sched_runtime(current);
	int nr_dirtied = current->nr_dirtied;
	unsigned long lo, hi, pos, from, to;
	struct vm_area_struct *vma;
	struct mmu_gather tlb;
	u64 write_bytes = 0;

#ifdef CONFIG_TASK_IO_ACCOUNTING
	write_bytes = current->ioac.write_bytes;
#endif

	zap_test_chunk_start(zj);
	zap_segs_range(zj, start, end, &lo, &hi);
	/* A live mm's chunk flushes its own range (top of this file). */
	if (zj->live)
		tlb_gather_mmu(&tlb, zj->mm);
	else
		tlb_gather_mmu_fullmm(&tlb, zj->mm);
	/* No nested upgrade, no parallel free (top of this file). */
	tlb_mark_zap_chunk(&tlb);
	/* The VMAs stay until the caller is done with the job. */
	pos = zap_seg_pos(zj, start, lo);
	while ((vma = zap_next_vma(zj, &pos, hi))) {
		from = max3(lo, vma->vm_start, zj->start);
		to = min3(hi, vma->vm_end, zj->limit);
		if (!zap_parallel_vma_ok(vma) || from >= to)
			continue;
#ifdef CONFIG_PARALLEL_ZAP_LIVE
		/* madvise()'s walk, with its zap_details. */
		if (zj->details) {
			zap_vma_range_chunk(&tlb, vma, from, to, zj->details);
			continue;
		}
#endif
		unmap_vma_range(&tlb, vma, from, to);
	}
	/*
	 * The chunk may leave the nested upgrade out only while its caller's
	 * gather is open across the job (top of this file): that one and
	 * this one pending at least.
	 */
	VM_WARN_ON_ONCE(!mm_tlb_flush_nested(zj->mm));
	tlb_finish_mmu(&tlb);
	/*
	 * Folios the chunk munlocked or marked accessed wait in this CPU's
	 * batches, with a reference each, until it drains them: a helper's
	 * CPU may not drain for long.  Drained here (after the flush, which
	 * removes the rmaps that munlock), Mlocked and the LRU are current
	 * when the job returns, but for what a thread that moved to another
	 * CPU during its chunk left on the one before.  A serial zap leaves
	 * its own CPU's batches to that CPU's next drain.
	 */
	lru_add_drain();
	zap_test_chunk_end(zj);
	runtime = task_sched_runtime(current) - runtime;
	if (helper) {
		atomic64_add(runtime, &zj->helper_ns);
		zap_helper_dirtied(zj, write_bytes, nr_dirtied);
	} else {
		zj->caller_ns += runtime;
	}
	return 0;
}

/* The node a VMA is bound to by its own policy, if one. */
static int zap_vma_node(struct vm_area_struct *vma)
{
#ifdef CONFIG_NUMA
	struct mempolicy *pol = vma->vm_policy;

	if (pol && (pol->mode == MPOL_BIND || pol->mode == MPOL_PREFERRED) &&
	    nodes_weight(pol->nodes) == 1)
		return first_node(pol->nodes);
#endif
	return NUMA_NO_NODE;
}

/*
 * Asked by the caller alone, under its mmap_read_lock(), before any chunk
 * runs (struct mtjob): the node of the first VMA helpers may zap in segment
 * @index.
 */
static int zap_parallel_node_of(unsigned long index, void *arg)
{
	struct zap_job *zj = arg;
	struct vm_area_struct *vma;
	unsigned long lo, hi, pos;

	zap_segs_range(zj, index, index + 1, &lo, &hi);
	pos = zap_seg_pos(zj, index, lo);
	while ((vma = zap_next_vma(zj, &pos, hi))) {
		/* Not a VMA before the range that shares its first block. */
		if (zap_parallel_vma_ok(vma) &&
		    vma->vm_end > max(lo, zj->start))
			return zap_vma_node(vma);
	}
	return NUMA_NO_NODE;
}

/* Does a VMA helpers may zap, from @first on, have a node of its own? */
static bool zap_parallel_by_node(const struct zap_job *zj,
				 struct vm_area_struct *first)
{
	unsigned long pos = zap_first_pos(zj, first);
	struct vm_area_struct *vma;

	if (!IS_ENABLED(CONFIG_NUMA) || nr_node_ids == 1)
		return false;
	while ((vma = zap_next_vma(zj, &pos, ULONG_MAX))) {
		if (zap_parallel_vma_ok(vma) &&
		    zap_vma_node(vma) != NUMA_NO_NODE)
			return true;
	}
	return false;
}

/*
 * Plans the job over the VMAs helpers may zap from @first on (@zj has its
 * mm, caller, tree or VMA and range set) and fills @job: two passes over the
 * upper levels of the page tables, helpers reserved in between.  Returns
 * false, with nothing held, counted in vmstat: when the pages it estimates
 * are fewer than @min_pages or make fewer than two chunks (serial), when no
 * helper can be reserved (busy) or the table cannot be allocated (nomem).
 */
static bool zap_parallel_plan(struct zap_job *zj, struct vm_area_struct *first,
			      unsigned long min_pages, struct mtjob *job,
			      const char *name)
{
	unsigned long threshold = READ_ONCE(sysctl_parallel_zap_threshold);
	unsigned long min_chunk, segs;

	/* Count first: segments of equal pages, as many as fit a page. */
	zap_plan_pass(zj, first);
	min_chunk = zap_parallel_min_chunk(threshold);
	segs = zj->pages / min_chunk;
	if (zj->pages < min_pages || segs < 2) {
		count_vm_event(PARALLEL_ZAP_SERIAL);
		return false;
	}
	zj->segs_max = ZAP_SEGS_MAX;
	if (zj->side)
		zj->segs_max /= 2;
	/* Before the second pass: no idle CPU, no more walking. */
	zj->helpers = zap_parallel_reserve((int)min(segs, zj->segs_max) - 1);
	if (!zj->helpers) {
		count_vm_event(PARALLEL_ZAP_BUSY);
		return false;
	}
	/* No reclaim for bookkeeping (top of this file). */
	zj->seg = kmalloc_array(ZAP_SEGS_MAX, sizeof(*zj->seg),
				GFP_NOWAIT | __GFP_NOWARN);
	if (!zj->seg) {
		count_vm_event(PARALLEL_ZAP_NOMEM);
		goto unreserve;
	}
	if (zj->side)
		zj->seg_vma = zj->seg + zj->segs_max;
	zj->target = max(min_chunk, DIV_ROUND_UP(zj->pages, zj->segs_max));
	zap_plan_pass(zj, first);
	if (zj->nr_segs < 2) {
		count_vm_event(PARALLEL_ZAP_SERIAL);
		kfree(zj->seg);
		goto unreserve;
	}
	if (zj->helpers > zj->nr_segs - 1) {
		atomic_sub(zj->helpers - (zj->nr_segs - 1),
			   &zap_parallel_helpers);
		zj->helpers = zj->nr_segs - 1;
	}
	*job = (struct mtjob) {
		.thread_fn	= zap_parallel_chunk,
		.fn_arg		= zj,
		.size		= zj->nr_segs,
		.align		= 1,
		.min_chunk	= 1,
		.max_threads	= zj->helpers + 1,
		.gfp		= GFP_NOWAIT,
		.affinity	= MTJOB_AFFINITY_NONE,
		.stop_when_slower	= true,
		.name		= name,
	};
	if (zap_parallel_by_node(zj, first)) {
		job->affinity = MTJOB_AFFINITY_BY_INDEX;
		job->node_of = zap_parallel_node_of;
	}
	return true;
unreserve:
	atomic_sub(zj->helpers, &zap_parallel_helpers);
	return false;
}

/*
 * Starts the mmu notifier range of a planned job: @unmap's, as unmap_vmas()
 * does, or without @unmap @zj->one's range, as zap_vma_range_batched().
 */
static u64 zap_parallel_start(struct zap_job *zj, struct unmap_desc *unmap,
			      struct mmu_notifier_range *range)
{
	if (unmap)
		mmu_notifier_range_init(range, MMU_NOTIFY_UNMAP, 0, zj->mm,
					unmap->vma_start, unmap->vma_end);
	else
		mmu_notifier_range_init(range, MMU_NOTIFY_CLEAR, 0, zj->mm,
					zj->start, zj->limit);
	mmu_notifier_invalidate_range_start(range);
	return local_clock();
}

/*
 * After the job, started at @start_ns (mtjob_run_report() returned @ret):
 * charges the helpers to
 * the caller, zaps with @tlb, in address order, the VMAs of @unmap helpers
 * may not, as unmap_vmas() would, and ends the notifier range.
 */
static void zap_parallel_finish(struct zap_job *zj, struct mmu_gather *tlb,
				struct unmap_desc *unmap,
				struct mmu_notifier_range *range, u64 start_ns,
				const struct mtjob_report *report, int ret)
{
	struct vm_area_struct *vma;

	/* Valid by construction: on -EINVAL nothing ran. */
	if (WARN_ON_ONCE(ret))
		zap_parallel_chunk(0, zj->nr_segs, zj);
	zap_test_report(zj);
	atomic_sub(zj->helpers, &zap_parallel_helpers);
	sched_account_offload(current, atomic64_read(&zj->helper_ns));
	zap_caller_dirtied(zj);
	zj->job_ns = local_clock() - start_ns;
	zj->threads = report->nr_threads;
	zj->helpers_stopped = report->helpers_stopped;
	mtjob_backoff_update(&zap_parallel_backoff, report);

	/*
	 * After the job, so out of address order: what a serial unmap would
	 * have zapped before or between the helpers' VMAs.  Nothing can tell:
	 * every entry of the range is cleared, flushed and freed before
	 * munmap() or exit_mmap() goes on, under the same mmap_lock, and each
	 * VMA is zapped whole by one thread as unmap_vmas() would.
	 */
	for (vma = unmap ? unmap->first : NULL; vma;
	     vma = mas_find(unmap->mas, unmap->tree_end - 1)) {
		if (!zap_parallel_vma_ok(vma))
			unmap_vma_range(tlb, vma,
					max(vma->vm_start, unmap->vma_start),
					min(vma->vm_end, unmap->vma_end));
	}
	mmu_notifier_invalidate_range_end(range);
	zj->tail_ns = local_clock() - start_ns - zj->job_ns;
	kfree(zj->seg);
}

/*
 * May the caller have helpers (@allowed, and mtjob would use them), is the
 * backoff after stopped helpers over, and is another CPU idle?  Counts the
 * refusal, the backoff or the busy CPUs if not.
 */
static bool zap_parallel_gate(bool allowed)
{
	if (!mtjob_may_use_helpers(GFP_NOWAIT) || !allowed) {
		count_vm_event(PARALLEL_ZAP_REFUSED);
		return false;
	}
	/*
	 * Helpers slowed a parallel zap down a moment ago (stop_when_slower):
	 * zaps are serial for a while (struct mtjob_backoff), every mm's, as
	 * what slowed them (a host that deschedules the vCPUs, threads busy on
	 * every CPU) is the machine's.
	 */
	if (mtjob_backoff_active(&zap_parallel_backoff)) {
		count_vm_event(PARALLEL_ZAP_STOPPED_BACKOFF);
		return false;
	}
	/* No idle CPU: not worth a walk of the page tables. */
	if (!sched_offload_idle_cpus(current, 1)) {
		count_vm_event(PARALLEL_ZAP_BUSY);
		return false;
	}
	return true;
}

/* Counts a job that ran: in parallel if two threads or more zapped. */
static void zap_parallel_count(const struct zap_job *zj,
			       enum vm_event_item done,
			       enum vm_event_item threads)
{
	if (zj->threads < 2) {
		count_vm_event(PARALLEL_ZAP_SERIAL);
	} else {
		count_vm_event(done);
		count_vm_events(threads, zj->threads);
	}
	if (zj->helpers_stopped)
		count_vm_event(PARALLEL_ZAP_HELPERS_STOPPED);
}

/**
 * __exit_mmap_zap_parallel - zap a dying mm with helpers
 * @tlb: exit_mmap()'s fullmm gather
 * @unmap: exit_mmap()'s description of the unmap: every VMA from
 *	@unmap->first on, under mmap_read_lock()
 *
 * Called where exit_mmap() calls unmap_vmas(), with vm.parallel_zap set.
 * Unmaps every VMA, as unmap_vmas() would, with an mtjob of kworker helpers
 * and the calling task, when the task and its mm qualify (top of this file),
 * and the VMAs helpers may not zap with @tlb after the job.  Decides before
 * the mmu notifier range starts and before any chunk runs; once it has
 * decided, the whole mm is zapped by it.
 *
 * Return: true if it did, false if it did nothing and unmap_vmas() is to
 * run.
 */
bool __exit_mmap_zap_parallel(struct mmu_gather *tlb, struct unmap_desc *unmap)
{
	struct mm_struct *mm = tlb->mm;
	struct zap_job zj = {
		.mm		= mm,
		.caller		= current,
		.limit		= ULONG_MAX,
		.helper_ns	= ATOMIC64_INIT(0),
		.write_bytes	= ATOMIC64_INIT(0),
		.nr_dirtied	= ATOMIC_INIT(0),
	};
	unsigned long threshold = READ_ONCE(sysctl_parallel_zap_threshold);
	struct mmu_notifier_range range;
	struct mtjob_report report = {};
	struct mtjob job;
	u64 start_ns;
	unsigned long pages;
	int ret;

	/* Exact sums: percpu_counter_read() is off by a batch per CPU. */
	pages = get_mm_rss_sum(mm) + get_mm_counter_sum(mm, MM_SWAPENTS);
	if (pages < threshold)
		return false;
	zap_test_switch_out();
	if (!zap_parallel_gate(zap_parallel_allowed(mm)))
		return false;
	if (!zap_parallel_plan(&zj, unmap->first, 0, &job, "exit_mmap"))
		return false;
	start_ns = zap_parallel_start(&zj, unmap, &range);
	/* Each caller its own call site: its own lockdep class. */
	ret = mtjob_run_report(&job, &report);
	zap_parallel_finish(&zj, tlb, unmap, &range, start_ns, &report,
			    ret);
	trace_exit_mmap_zap_parallel(pages, zj.nr_vmas, zj.entries,
				     zj.nr_segs, zj.helpers, zj.threads,
				     zj.job_ns, zj.tail_ns,
				     atomic64_read(&zj.helper_ns),
				     zj.caller_ns);
	zap_parallel_count(&zj, PARALLEL_ZAP, PARALLEL_ZAP_THREADS);
	return true;
}

/* A 0/1 sysctl in table->data that switches @key with it. */
static int zap_parallel_key_sysctl(const struct ctl_table *table, int write,
				   void *buffer, size_t *lenp, loff_t *ppos,
				   struct static_key_false *key)
{
	int ret;

	mutex_lock(&zap_parallel_lock);
	ret = proc_dointvec_minmax(table, write, buffer, lenp, ppos);
	if (!ret && write) {
		if (*(int *)table->data)
			static_branch_enable(key);
		else
			static_branch_disable(key);
	}
	mutex_unlock(&zap_parallel_lock);
	return ret;
}

static int zap_parallel_sysctl(const struct ctl_table *table, int write,
			       void *buffer, size_t *lenp, loff_t *ppos)
{
	return zap_parallel_key_sysctl(table, write, buffer, lenp, ppos,
				       &exit_mmap_zap_parallel_key);
}

#ifdef CONFIG_PARALLEL_ZAP_LIVE
/*
 * The parallel zap of a munmap() (vm.parallel_zap_live): a live mm.
 * vms_clear_ptes() asks __munmap_zap_parallel() before unmap_region(), for
 * munmap(), and for mmap(), mremap() and brk() where they unmap.  By then
 * do_vmi_align_munmap() has write-locked each VMA of the range
 * (vma_start_write()), moved it from the mm's tree into a side tree on its
 * stack, indexed by position, and maybe downgraded mmap_lock to read (on
 * mmap()'s MAP_FIXED path the VMAs stay in the mm's tree, write-locked, and
 * mmap_lock stays held for writing).  So nothing that finds VMAs through the mm
 * reaches the range while it is zapped: not a page fault (a per-VMA-lock fault
 * fails to lock a detached or write-locked VMA and retries under mmap_lock,
 * which finds none or waits), not another thread's madvise(), mprotect() or
 * userfaultfd ioctl, not the OOM reaper or process_mrelease() (both walk the
 * mm's tree under mmap_read_lock()).  The plan, the segments and the helpers'
 * walk read the side tree instead (zap_next_vma(): mt_find() under RCU; it does
 * not change until the caller frees the VMAs after the job), each segment with
 * the position of its first VMA.  What can still reach the range's page tables:
 * - faults and zaps in neighbouring VMAs, where the range shares a PTE   table
 * or a PMD table with them at its ends: every thread takes the   page table
 * locks as unmap_vmas() does, and clears only entries of   its own chunk's part
 * of a VMA of the range; - rmap walkers (reclaim, migration, khugepaged's
 * retract_page_tables()), which find the detached VMAs through the   anon_vma
 * and i_mmap trees until free_pgtables() unlinks them, as they   do during a
 * serial unmap_vmas().  They take the same locks.  One that   clears an entry
 * either flushes before it drops the page table lock   or defers the flush with
 * set_tlb_ubc_flush_pending(), which   zap_pte_range() waits for
 * (flush_tlb_batched_pending()) in every   thread; - GUP-fast, which walks
 * without locks: a PTE cleared by any thread is   rechecked by it after it
 * takes its reference, as with a serial zap,   and page tables are freed only
 * after the join, by the caller's   free_pgtables() and gather
 * (tlb_remove_table(): the IPI or RCU sync   GUP-fast relies on), exactly as
 * unmap_region() frees them; - mmu notifiers: the caller starts
 * MMU_NOTIFY_UNMAP over the whole   range before any chunk runs and ends it
 * after the join and its own   tail, as unmap_vmas() does; - userfaultfd:
 * markers are dropped (ZAP_FLAG_DROP_MARKER) and   unmap notifications were
 * queued by the caller before the detach   (userfaultfd_unmap_prep()), as for a
 * serial munmap(). Each chunk has its own gather, not fullmm: its flush covers
 * the range it cleared and reaches every CPU that may cache the mm's
 * translations (mm_cpumask() on x86, a broadcast TLBI by ASID and range on
 * arm64) before it frees the chunk's pages, as each batch of the serial path
 * does; page tables are not freed by chunks, so no chunk sets freed_tables.
 * The chunks leave the nested upgrade out, as an exit's do: they are each
 * other's nested gathers, and would each flush the whole mm. The upgrade is for
 * a zapper that skipped an entry another had cleared and not yet flushed.
 * Other zappers can still reach the range through the file's i_mmap tree
 * (unmap_mapping_range(): truncation, hole punching), until free_pgtables()
 * unlinks the VMAs; on mmap()'s MAP_FIXED path (vms_clean_up_area()) the VMAs
 * are even still in the mm's tree, write-locked, under mmap_write_lock(), which
 * keeps out every zapper that looks VMAs up.  Such a zapper keeps its own
 * upgrade and sees the chunks' pending gathers; it finishes its gather under
 * i_mmap_rwsem held for reading, which unlink_file_vma() takes for writing
 * before munmap() returns; and the caller's gather (hugetlb and VM_PFNMAP VMAs
 * after the job, then the page tables), open across the job, keeps the upgrade.
 * rmap walkers flush as said above.  The threshold is first the range's length,
 * then the pages the plan estimates in it (zap_plan_pages()), the work as the
 * exit's threshold counts it (resident and swapped-out pages), which the mm
 * does not keep per range: a range that reaches far and holds little (a page
 * per page table) costs a chunk a wake-up, a gather and a range flush for a few
 * entries, and stays serial.  The policy, the accounting and the counters are
 * the exit's (vm.parallel_zap_threshold and _max_helpers are shared), but a
 * live task's own mm, not an OOM victim's nor one being reaped, and not where
 * the data cache aliases (tlb_start_vma() would flush the cache of the whole
 * VMA once per chunk): zap_live_allowed().  As for an exit, an oops in the
 * caller's own chunk parks the caller with its stack kept (the helpers use the
 * job's state on its stack, and munmap()'s side tree): it never returns to user
 * space, never releases its mmap_lock, and its process's other threads block on
 * that lock as on any oopsed holder's (and a helper that needs a page table
 * lock it died holding spins).
 *
 * MADV_DONTNEED and MADV_DONTNEED_LOCKED share the walk: their
 * zap_vma_range_batched() is __zap_vma_range() over a range of one live
 * VMA, which __madvise_zap_parallel() cuts and shares out as above.  Under
 * mmap_read_lock() the walk instead leaves each VMA's part, once every
 * upstream check has passed for it, to its end, which zaps the parts as
 * one job (__madvise_zap_defer()): madvise()'s policy stays in
 * madvise_dontneed_free(), and only the time of the zap moves.  Each
 * chunk calls the same walk with madvise()'s zap_details
 * (zap_vma_range_chunk(); reclaim_pt frees a PTE table that became empty in
 * the chunk's own gather, with freed_tables set: a PTE table is in one
 * chunk only).  The VMA stays in the mm: faults may refill the range behind
 * any thread, as behind a serial zap, and the caller's VMA or mmap read lock
 * keeps the VMA for the job.  Other zappers can find the range (another
 * thread's MADV_DONTNEED, MADV_FREE or reclaim), which is what the nested
 * upgrade is for: a zapper that skipped an entry another cleared must not
 * return before that entry is flushed.  The chunks leave it out, as above,
 * since they are each other's nested gathers; madvise()'s own gather, open
 * across the job, keeps it: when madvise() ends it, after the join, any
 * other zapper still under way makes it flush the whole mm, as a serial
 * madvise() would.  MADV_FREE walks with walk_page_range() and its own PTE
 * callback (it marks folios lazyfree and frees nothing), and MADV_REMOVE
 * (like fallocate(PUNCH_HOLE)) zaps every mm that maps the file through
 * unmap_mapping_range() before it truncates: neither is this walk.
 */

/* Enabled while vm.parallel_zap_live is 1. */
DEFINE_STATIC_KEY_FALSE(live_zap_parallel_key);
static int sysctl_parallel_zap_live;

/* Is @mm the calling task's own, and may kworkers do its work? */
static bool zap_live_allowed(struct mm_struct *mm)
{
	if (current->flags & PF_KTHREAD || current->mm != mm)
		return false;
	/* An mm shared (CLONE_VM) with an OOM victim is being reaped. */
	if (tsk_is_oom_victim(current) ||
	    mm_flags_test(MMF_OOM_REAP_QUEUED, mm) ||
	    mm_flags_test(MMF_UNSTABLE, mm))
		return false;
	/* tlb_start_vma() flushes the whole VMA's cache once per chunk. */
	if (cpu_dcache_is_aliasing())
		return false;
	return sched_task_offload_allowed(current);
}

/**
 * __munmap_zap_parallel - zap the VMAs a munmap() detached, with helpers
 * @unmap: vms_clear_ptes()'s description: the VMAs of its side tree from
 *	@unmap->first on, the range [@unmap->vma_start, @unmap->vma_end) and
 *	the floor and ceiling of the page tables to free
 *
 * Called where vms_clear_ptes() calls unmap_region(), with
 * vm.parallel_zap_live set, under mmap_lock (for reading once
 * do_vmi_align_munmap() has downgraded it, for writing otherwise).  When
 * the task and the range qualify (top of this file), does all that
 * unmap_region() does: zaps every VMA, those helpers may zap with an mtjob
 * of kworker helpers and the calling task, each chunk with a gather of its
 * own, the others with the caller's gather after the job; then frees the
 * page tables with that gather and finishes it.
 *
 * Return: true if it did, false if it did nothing and unmap_region() is to
 * run.
 */
bool __munmap_zap_parallel(struct unmap_desc *unmap)
{
	struct mm_struct *mm = unmap->first->vm_mm;
	struct zap_job zj = {
		.mm		= mm,
		.caller		= current,
		.side		= unmap->mas->tree,
		.side_end	= unmap->tree_end,
		.live		= true,
		.start		= unmap->vma_start,
		.limit		= unmap->vma_end,
		.helper_ns	= ATOMIC64_INIT(0),
		.write_bytes	= ATOMIC64_INIT(0),
		.nr_dirtied	= ATOMIC_INIT(0),
	};
	unsigned long threshold = READ_ONCE(sysctl_parallel_zap_threshold);
	struct mmu_notifier_range range;
	struct mtjob_report report = {};
	struct mmu_gather tlb;
	struct mtjob job;
	u64 start_ns;
	int ret;

	/* The range's size first, then the pages the plan finds in it. */
	if ((unmap->vma_end - unmap->vma_start) >> PAGE_SHIFT < threshold)
		return false;
	if (!zap_parallel_gate(zap_live_allowed(mm)))
		return false;
	if (!zap_parallel_plan(&zj, unmap->first, threshold, &job, "munmap"))
		return false;
	tlb_gather_mmu(&tlb, mm);
	update_hiwater_rss(mm);
	start_ns = zap_parallel_start(&zj, unmap, &range);
	ret = mtjob_run_report(&job, &report);
	zap_parallel_finish(&zj, &tlb, unmap, &range, start_ns, &report,
			    ret);
	mas_set(unmap->mas, unmap->tree_reset);
	free_pgtables(&tlb, unmap);
	tlb_finish_mmu(&tlb);
	trace_live_zap_parallel(0, unmap->vma_start, unmap->vma_end,
				zj.nr_vmas, zj.entries, zj.nr_segs,
				zj.helpers, zj.threads, zj.job_ns,
				zj.tail_ns, atomic64_read(&zj.helper_ns),
				zj.caller_ns);
	zap_parallel_count(&zj, PARALLEL_ZAP_MUNMAP,
			   PARALLEL_ZAP_MUNMAP_THREADS);
	return true;
}

/*
 * madvise()'s job over [@start, @end): of @first alone (@one), or of every
 * VMA from @first on that the range meets, which the caller has checked
 * helpers may zap.
 */
static bool madvise_zap_job(struct mmu_gather *tlb,
			    struct vm_area_struct *first, bool one,
			    unsigned long start, unsigned long end,
			    struct zap_details *details, int behavior)
{
	struct mm_struct *mm = first->vm_mm;
	struct zap_job zj = {
		.mm		= mm,
		.caller		= current,
		.one		= one ? first : NULL,
		.details	= details,
		.live		= true,
		.start		= start,
		.limit		= end,
		.helper_ns	= ATOMIC64_INIT(0),
		.write_bytes	= ATOMIC64_INIT(0),
		.nr_dirtied	= ATOMIC_INIT(0),
	};
	unsigned long threshold = READ_ONCE(sysctl_parallel_zap_threshold);
	struct mmu_notifier_range range;
	struct mtjob_report report = {};
	struct mtjob job;
	u64 start_ns;
	int ret;

	if ((end - start) >> PAGE_SHIFT < threshold)
		return false;
	if (!zap_parallel_gate(zap_live_allowed(mm)))
		return false;
	if (!zap_parallel_plan(&zj, first, threshold, &job, "madvise"))
		return false;
	update_hiwater_rss(mm);
	start_ns = zap_parallel_start(&zj, NULL, &range);
	ret = mtjob_run_report(&job, &report);
	zap_parallel_finish(&zj, tlb, NULL, &range, start_ns, &report,
			    ret);
	trace_live_zap_parallel(behavior, start, end, zj.nr_vmas, zj.entries,
				zj.nr_segs, zj.helpers, zj.threads, zj.job_ns,
				zj.tail_ns, atomic64_read(&zj.helper_ns),
				zj.caller_ns);
	zap_parallel_count(&zj, PARALLEL_ZAP_DONTNEED,
			   PARALLEL_ZAP_DONTNEED_THREADS);
	return true;
}

/**
 * __madvise_zap_parallel - zap a range of one VMA for madvise(), with helpers
 * @tlb: madvise()'s gather, which stays open until the call returns
 * @vma: the VMA, read-locked or under mmap_read_lock()
 * @start: the first address to zap, in @vma
 * @end: the end of the range, in @vma
 * @details: madvise()'s zap_details (MADV_DONTNEED: reclaim_pt)
 * @behavior: MADV_DONTNEED or MADV_DONTNEED_LOCKED, for the tracepoint
 *
 * Called where madvise_dontneed_single_vma() calls
 * zap_vma_range_batched(), with vm.parallel_zap_live set.  When the task
 * and the range qualify (as a munmap(), above), zaps [@start, @end) with an
 * mtjob of kworker helpers and the calling task, each chunk with a gather
 * of its own, inside one MMU_NOTIFY_CLEAR range.
 *
 * Return: true if it did, false if it did nothing and
 * zap_vma_range_batched() is to run.
 */
bool __madvise_zap_parallel(struct mmu_gather *tlb, struct vm_area_struct *vma,
			    unsigned long start, unsigned long end,
			    struct zap_details *details, int behavior)
{
	if (!zap_parallel_vma_ok(vma))
		return false;
	return madvise_zap_job(tlb, vma, true, start, end, details, behavior);
}

/**
 * __madvise_zap_defer - leave a VMA's part of a MADV_DONTNEED to the walk's end
 * @mz: what the walk has left to zap so far
 * @tlb: madvise()'s gather, which stays open until after the flush
 * @vma: the VMA, under mmap_read_lock()
 * @start: the first address of its part, as madvise_dontneed_free() left it
 * @end: the end of its part
 * @details: madvise()'s zap_details, the same for every part of a walk
 * @behavior: MADV_DONTNEED or MADV_DONTNEED_LOCKED, for the tracepoint
 *
 * Called by madvise_dontneed_single_vma() in place of its zap, with
 * vm.parallel_zap_live set, under mmap_read_lock() (a VMA lock would keep
 * one VMA only): every check of the walk (madvise_vma_behavior(),
 * madvise_dontneed_free()) has passed for this part, where upstream would
 * zap it now.  Adds it to @mz if helpers may zap @vma and it is not
 * registered with a userfaultfd; a part that does not continue @mz's range
 * ends that range first (zapped now), as does a part zapped now, so a
 * range never spans a gap and parts are zapped in address order.
 * madvise_zap_flush() zaps the range, as one job (a range of VMAs bound to
 * different nodes has helpers on each at once) or VMA by VMA, before
 * mmap_lock may be dropped: before userfaultfd_remove() and when the walk
 * returns (madvise_do_behavior(), for a failed walk too: upstream zapped
 * the parts before the one that failed).  So madvise() zaps what upstream
 * zaps, with the same result.
 *
 * Return: true if the part was left to madvise_zap_flush(), false if the
 * caller is to zap it now.
 */
bool __madvise_zap_defer(struct madvise_zap *mz, struct mmu_gather *tlb,
			 struct vm_area_struct *vma, unsigned long start,
			 unsigned long end, const struct zap_details *details,
			 int behavior)
{
	/* Only mmap_lock keeps the helpers' VMAs: no VMA lock would do. */
	mmap_assert_locked(vma->vm_mm);
	/*
	 * Zapped now, in address order after what was left: a VMA helpers
	 * may not zap, and one registered with a userfaultfd, whose REMOVE
	 * event upstream follows with the zap at once (a monitor's
	 * UFFDIO_COPY after the event would otherwise race a zap that comes
	 * later).
	 */
	if (!zap_parallel_vma_ok(vma) || userfaultfd_armed(vma)) {
		if (mz->first)
			__madvise_zap_flush(mz, tlb);
		return false;
	}
	if (mz->first && start != mz->end)
		__madvise_zap_flush(mz, tlb);
	if (!mz->first) {
		mz->first = vma;
		mz->start = start;
		mz->details = *details;
		mz->behavior = behavior;
	}
	mz->end = end;
	return true;
}

/**
 * __madvise_zap_flush - zap what __madvise_zap_defer() left
 * @mz: the walk's range, with a first VMA
 * @tlb: madvise()'s gather
 *
 * Under the mmap_read_lock() the parts were left under: zaps [@mz->start,
 * @mz->end), every VMA of which helpers may zap, with an mtjob when the
 * task and the range qualify (as a munmap()), else each VMA's part with
 * zap_vma_range_batched() in address order, as madvise_dontneed_single_vma()
 * would have; then empties @mz.
 */
void __madvise_zap_flush(struct madvise_zap *mz, struct mmu_gather *tlb)
{
	VMA_ITERATOR(vmi, mz->first->vm_mm, mz->start);
	struct vm_area_struct *vma;
	unsigned long from;

	mmap_assert_locked(mz->first->vm_mm);
	if (!madvise_zap_job(tlb, mz->first, false, mz->start, mz->end,
			     &mz->details, mz->behavior)) {
		for_each_vma_range(vmi, vma, mz->end) {
			from = max(vma->vm_start, mz->start);
			zap_vma_range_batched(tlb, vma, from,
					      min(vma->vm_end, mz->end) - from,
					      &mz->details);
		}
	}
	mz->first = NULL;
}

static int zap_parallel_live_sysctl(const struct ctl_table *table,
				    int write, void *buffer, size_t *lenp,
				    loff_t *ppos)
{
	return zap_parallel_key_sysctl(table, write, buffer, lenp, ppos,
				       &live_zap_parallel_key);
}
#endif /* CONFIG_PARALLEL_ZAP_LIVE */

/* One block's pages, set at boot (PMD_SIZE is not constant everywhere). */
static unsigned long zap_threshold_min;
static unsigned long zap_threshold_max = ULONG_MAX >> PAGE_SHIFT;

static const struct ctl_table zap_parallel_table[] = {
	{
		.procname	= "parallel_zap",
		.data		= &sysctl_parallel_zap,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= zap_parallel_sysctl,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
#ifdef CONFIG_PARALLEL_ZAP_LIVE
	{
		.procname	= "parallel_zap_live",
		.data		= &sysctl_parallel_zap_live,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= zap_parallel_live_sysctl,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
#endif
	{
		.procname	= "parallel_zap_threshold",
		.data		= &sysctl_parallel_zap_threshold,
		.maxlen		= sizeof(unsigned long),
		.mode		= 0644,
		.proc_handler	= proc_doulongvec_minmax,
		.extra1		= &zap_threshold_min,
		.extra2		= &zap_threshold_max,
	},
	{
		.procname	= "parallel_zap_max_helpers",
		.data		= &sysctl_parallel_zap_max_helpers,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= SYSCTL_INT_MAX,
	},
};

static int __init zap_parallel_init(void)
{
	zap_threshold_min = PMD_SIZE >> PAGE_SHIFT;
	sysctl_parallel_zap_max_helpers = ZAP_PARALLEL_HELPERS_PER_NODE *
		max_t(int, num_node_state(N_MEMORY), 1);
	register_sysctl_init("vm", zap_parallel_table);
	return 0;
}
subsys_initcall(zap_parallel_init);
