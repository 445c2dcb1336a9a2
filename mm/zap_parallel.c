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
 *   vm.parallel_zap_threshold pages resident or swapped out (get_mm_rss()
 *   and MM_SWAPENTS, per-CPU counter sums read without folding; 1 GiB worth
 *   by default, the default of the parallel free), a task whose work
 *   kworkers may fairly do (sched_task_offload_allowed(): no real-time,
 *   SCHED_IDLE or niced-down policy, no CPU affinity or cgroup CPU
 *   restriction), not an OOM victim and not an mm the OOM reaper or
 *   process_mrelease() has queued or started (they are its second zapper
 *   already), and at least one other idle CPU of the unbound workqueue
 *   cpumask (sched_offload_idle_cpus()).  The helpers are reserved as with
 *   the parallel free: one per other idle CPU, at most
 *   vm.parallel_zap_max_helpers for all exits together, and no more than
 *   the job has chunks of the minimum size for them.  Otherwise
 *   unmap_vmas() runs as upstream.  A task killed by a signal is not
 *   refused: nothing is held back here, the memory comes back sooner.
 *
 * - What.  The job's indices are PMD_SIZE blocks of address space, those
 *   that the VMAs helpers may zap touch, each block once: a block shared by
 *   two VMAs (neither ending on a PMD boundary) belongs to the first, and
 *   the thread that has it zaps both parts.  So no two threads share a page
 *   table of the last level, and no chunk boundary splits a PMD mapping.
 *   Chunk boundaries are block boundaries, so they split no PMD-mapped THP;
 *   PUD leaves exist only in the VMAs that stay on the caller.
 *
 * - Which VMAs stay on the caller, zapped after the join with exit_mmap()'s
 *   own gather, exactly as unmap_vmas() would: hugetlb (hugetlb_zap_begin()
 *   takes the file's i_mmap_rwsem and the VMA lock for writing, and the
 *   range may widen over shared PMDs); VM_PFNMAP, VM_MIXEDMAP and VM_IO
 *   (driver memory, whose entries need no per-page work anyway, and whose
 *   PUD or PMD leaves a block boundary would split); DAX (PUD leaves);
 *   anonymous VMAs without an anon_vma (never faulted: nothing to zap, and
 *   their blocks would only dilute the job).  The caller's gather gets no
 *   parallel free for them: hugetlb pages and pfn mappings are nothing it
 *   frees.  Anonymous, shmem and page cache VMAs go to helpers, with
 *   userfaultfd markers (dropped, as unmap_vmas() does), swap entries, KSM,
 *   mlocked and device-private folios.  The zap of an entry takes the page
 *   table lock, and for what it frees or unmaps the swap cluster, LRU and
 *   memcg locks, as the OOM reaper's concurrent zap of private mappings
 *   does; for shared file mappings it may also mark folios dirty
 *   (folio_mark_dirty(), which filesystems take from any task that unmaps
 *   or writes back) and defer their rmap removal to its own gather's
 *   flush, as munmap() does; a device-private folio's last reference goes
 *   to its pgmap's page_free(), which runs wherever a folio_put() does.
 *   uprobe_munmap() returns at once for an mm without users.  No vm_ops
 *   callback runs in a zap: ->close() runs later, in tear_down_vmas().
 *
 * - How.  Each chunk has its own tlb_gather_mmu_fullmm() gather and ends it
 *   with tlb_finish_mmu(): its TLB flush precedes the free of its pages as
 *   in the serial path.  The mm's tlb_flush_pending counts every gather
 *   under way, exit_mmap()'s own among them, so each chunk's
 *   tlb_finish_mmu() takes itself for a nested gather and flushes the
 *   whole mm with freed_tables set: one flush per chunk (about four per
 *   thread) that a serial exit does not do, and on arm64 a broadcast TLBI
 *   per chunk where a fullmm exit issues none before free_pgtables().  A
 *   cost, bounded by the chunks, not a need: no CPU runs in a dying mm.
 *   The plan is an array of 24 bytes per VMA (kvmalloc(), without retrying
 *   reclaim).  The caller holds mmap_read_lock() for the whole job and
 *   waits for every helper before it unlocks (the helpers read VMAs it
 *   keeps stable); helpers take no mmap_lock.  Page tables are freed once,
 *   by the caller, in free_pgtables() after the join.  The mmu notifier
 *   range is started and ended by the caller around everything, as
 *   unmap_vmas() does.
 *
 * - The parallel free does not nest: each chunk's gather frees its own
 *   pages serially (it is marked refused), since the zap's threads already
 *   are the CPUs the free would have used, and a helper's gather may not
 *   have helpers anyway (kworkers are kernel threads).
 *
 * - Node affinity, where it is cheap to know: a VMA bound to one node
 *   (MPOL_BIND or MPOL_PREFERRED of one node, e.g. by mbind()) has its
 *   chunks zapped by a helper on that node (MTJOB_AFFINITY_BY_INDEX),
 *   which takes that node's zone locks when it frees; with no such VMA the
 *   helpers have no affinity (MTJOB_AFFINITY_NONE).
 *
 * - The helpers' CPU time (task_sched_runtime() around their chunks) is
 *   charged to the caller's cgroups after the job (sched_account_offload()).
 *   The job is GFP_NOWAIT: a helper that has not started when the caller
 *   runs out of chunks is cancelled, so on a loaded system the caller does
 *   the work alone.
 */

#include <linux/atomic.h>
#include <linux/dax.h>
#include <linux/fs.h>
#include <linux/jump_label.h>
#include <linux/mempolicy.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/mtjob.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/oom.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/cputime.h>
#include <linux/slab.h>
#include <linux/sizes.h>
#include <linux/sysctl.h>
#include <linux/vmstat.h>

#include <asm/tlb.h>

#define CREATE_TRACE_POINTS
#include <trace/events/zap_parallel.h>

#include "internal.h"

/* vm.parallel_zap_threshold: the default of vm.parallel_free_threshold. */
#define ZAP_PARALLEL_DEFAULT_PAGES	(SZ_1G >> PAGE_SHIFT)
/*
 * The smallest chunk at the default threshold, in blocks: 32 MiB of address
 * space (16 blocks of 2 MiB on x86-64 with 4 KiB pages; one block where
 * PMD_SIZE is larger), so that a chunk's gather, TLB flush and lookup cost
 * little next to its zap of up to 8192 entries.  A threshold lowered below
 * twice that shrinks it (zap_parallel_min_chunk()), trading that cost for
 * parallel zaps of smaller mms.  Not a constant everywhere: on powerpc
 * PMD_SIZE is known at boot.
 */
#define ZAP_PARALLEL_MIN_CHUNK		max_t(unsigned long, SZ_32M / PMD_SIZE, 1)
/* vm.parallel_zap_max_helpers: two per node with memory, as the free. */
#define ZAP_PARALLEL_HELPERS_PER_NODE	2

/* Enabled while vm.parallel_zap is 1. */
DEFINE_STATIC_KEY_FALSE(exit_mmap_zap_parallel_key);

static int sysctl_parallel_zap;
static unsigned long sysctl_parallel_zap_threshold = ZAP_PARALLEL_DEFAULT_PAGES;
static int sysctl_parallel_zap_max_helpers = ZAP_PARALLEL_HELPERS_PER_NODE;
static DEFINE_MUTEX(zap_parallel_lock);

/*
 * The smallest chunk for @threshold: ZAP_PARALLEL_MIN_CHUNK, or the blocks
 * of half the threshold's pages where that is less, down to one block, so
 * that an mm just above a threshold lowered below 64 MiB (as the tests
 * lower it) still has two chunks.
 */
static unsigned long zap_parallel_min_chunk(unsigned long threshold)
{
	unsigned long blocks = threshold / 2 / (PMD_SIZE >> PAGE_SHIFT);

	return clamp(blocks, 1UL, ZAP_PARALLEL_MIN_CHUNK);
}

/* Helpers reserved by all exits, <= vm.parallel_zap_max_helpers. */
static atomic_t zap_parallel_helpers = ATOMIC_INIT(0);

/*
 * A VMA helpers may zap, and the blocks it owns: [@first, next run's @first)
 * of the job's indices, from address @base on.  A run may own no block, when
 * its VMA lies in the last block of the run before.
 */
struct zap_run {
	struct vm_area_struct *vma;
	unsigned long first;
	unsigned long base;
};

struct zap_job {
	struct mm_struct *mm;
	/* The exiting task: the helpers' time is charged to it. */
	struct task_struct *caller;
	struct zap_run *runs;
	unsigned int nr_runs;
	/* Blocks in all: the job's size. */
	unsigned long nr_blocks;
	atomic64_t helper_ns;
};

/* May helpers zap this VMA?  See the top of this file. */
static bool zap_parallel_vma_ok(struct vm_area_struct *vma)
{
	if (vma->vm_flags & (VM_HUGETLB | VM_PFNMAP | VM_MIXEDMAP | VM_IO))
		return false;
	if (vma_is_anonymous(vma) && !vma->anon_vma)
		return false;
	return !vma_is_dax(vma);
}

/* Is @mm the mm of the exiting task, and may kworkers do its work? */
static bool zap_parallel_allowed(struct mm_struct *mm)
{
	/* exit_mm() clears current->mm before its mmput() runs exit_mmap(). */
	if (current->flags & PF_KTHREAD || current->mm ||
	    !(current->flags & PF_EXITING) || current->active_mm != mm)
		return false;
	/* The OOM reaper or process_mrelease() zaps it, or is about to. */
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

/* The run that owns block @index: the last with @first <= @index. */
static unsigned int zap_run_of(const struct zap_job *zj, unsigned long index)
{
	unsigned int lo = 0, hi = zj->nr_runs;

	while (hi - lo > 1) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (zj->runs[mid].first <= index)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The index after the last block run @i owns. */
static unsigned long zap_run_end(const struct zap_job *zj, unsigned int i)
{
	return i + 1 < zj->nr_runs ? zj->runs[i + 1].first : zj->nr_blocks;
}

/*
 * Zaps blocks [@start, @end) with a gather of its own: in each run, the
 * blocks' address range, of its VMA and of the VMAs after it that begin in
 * the run's last block.
 */
static int zap_parallel_chunk(unsigned long start, unsigned long end,
			      void *arg)
{
	struct zap_job *zj = arg;
	bool helper = current != zj->caller;
	struct mmu_gather tlb;
	unsigned int i, j;
	u64 runtime = 0;

	if (helper)
		runtime = task_sched_runtime(current);
	tlb_gather_mmu_fullmm(&tlb, zj->mm);
	/* The zap's threads free their own gathers (top of this file). */
	tlb.parallel_free_refused = 1;
	for (i = zap_run_of(zj, start); start < end; i++) {
		unsigned long stop = min(end, zap_run_end(zj, i));
		struct zap_run *run = &zj->runs[i];
		unsigned long lo, hi;

		if (stop <= start)
			continue;
		lo = run->base + (start - run->first) * PMD_SIZE;
		hi = run->base + (stop - run->first) * PMD_SIZE;
		for (j = i; j < zj->nr_runs; j++) {
			struct vm_area_struct *vma = zj->runs[j].vma;
			unsigned long s = max(lo, vma->vm_start);
			unsigned long e = min(hi, vma->vm_end);

			if (vma->vm_start >= hi)
				break;
			if (s < e)
				unmap_vma_range(&tlb, vma, s, e);
		}
		start = stop;
	}
	tlb_finish_mmu(&tlb);
	if (helper)
		atomic64_add(task_sched_runtime(current) - runtime,
			     &zj->helper_ns);
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

/* Asked by the caller alone, before any chunk runs (struct mtjob). */
static int zap_parallel_node_of(unsigned long index, void *arg)
{
	struct zap_job *zj = arg;

	return zap_vma_node(zj->runs[zap_run_of(zj, index)].vma);
}

/*
 * Fills @zj->runs with the VMAs helpers may zap, from the first VMA on, and
 * counts the blocks.  Returns true if one has a node of its own.
 */
static bool zap_parallel_plan(struct zap_job *zj, struct vm_area_struct *vma,
			      unsigned int max)
{
	VMA_ITERATOR(vmi, zj->mm, vma->vm_start);
	unsigned long next = 0;
	bool by_node = false;

	zj->nr_runs = 0;
	for_each_vma(vmi, vma) {
		struct zap_run *run;
		unsigned long end;

		if (!zap_parallel_vma_ok(vma))
			continue;
		if (WARN_ON_ONCE(zj->nr_runs == max))
			break;
		run = &zj->runs[zj->nr_runs++];
		run->vma = vma;
		run->first = zj->nr_blocks;
		run->base = max(ALIGN_DOWN(vma->vm_start, PMD_SIZE), next);
		end = ALIGN(vma->vm_end, PMD_SIZE);
		if (end > run->base) {
			zj->nr_blocks += (end - run->base) / PMD_SIZE;
			next = end;
		}
		if (zap_vma_node(vma) != NUMA_NO_NODE)
			by_node = true;
	}
	return by_node;
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
 * and the VMAs helpers may not zap with @tlb after the job.
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
		.helper_ns	= ATOMIC64_INIT(0),
	};
	struct mtjob job = {
		.thread_fn	= zap_parallel_chunk,
		.fn_arg		= &zj,
		.align		= 1,
		.gfp		= GFP_NOWAIT,
		.name		= "exit_mmap",
	};
	unsigned long pages = get_mm_rss(mm) + get_mm_counter(mm, MM_SWAPENTS);
	unsigned long threshold = READ_ONCE(sysctl_parallel_zap_threshold);
	struct mmu_notifier_range range;
	struct mtjob_report report = {};
	u64 start_ns = 0, job_ns = 0;
	struct vm_area_struct *vma;
	unsigned long chunks;
	int helpers, ret;
	bool by_node;

	if (pages < threshold)
		return false;
	if (!mtjob_may_use_helpers(GFP_NOWAIT) || !zap_parallel_allowed(mm)) {
		count_vm_event(PARALLEL_ZAP_REFUSED);
		return false;
	}
	/* No reclaim retries for it: an exit frees memory, it should not wait. */
	zj.runs = kvmalloc_array(mm->map_count, sizeof(*zj.runs),
				 GFP_KERNEL | __GFP_NORETRY | __GFP_NOWARN);
	if (!zj.runs) {
		count_vm_event(PARALLEL_ZAP_NOMEM);
		return false;
	}
	by_node = zap_parallel_plan(&zj, unmap->first, mm->map_count);
	/* Helpers for the chunks of the minimum size beyond the caller's. */
	job.min_chunk = zap_parallel_min_chunk(threshold);
	chunks = zj.nr_blocks / job.min_chunk;
	if (chunks < 2) {
		count_vm_event(PARALLEL_ZAP_SERIAL);
		kvfree(zj.runs);
		return false;
	}
	helpers = zap_parallel_reserve(min_t(unsigned long, chunks - 1, INT_MAX));
	if (!helpers) {
		count_vm_event(PARALLEL_ZAP_BUSY);
		kvfree(zj.runs);
		return false;
	}
	if (by_node) {
		job.affinity = MTJOB_AFFINITY_BY_INDEX;
		job.node_of = zap_parallel_node_of;
	} else {
		job.affinity = MTJOB_AFFINITY_NONE;
	}
	job.size = zj.nr_blocks;
	job.max_threads = helpers + 1;

	mmu_notifier_range_init(&range, MMU_NOTIFY_UNMAP, 0, mm,
				unmap->vma_start, unmap->vma_end);
	mmu_notifier_invalidate_range_start(&range);
	if (trace_exit_mmap_zap_parallel_enabled())
		start_ns = local_clock();
	ret = mtjob_run_report(&job, &report);
	/* Valid by construction: on -EINVAL nothing ran. */
	if (WARN_ON_ONCE(ret))
		zap_parallel_chunk(0, job.size, &zj);
	atomic_sub(helpers, &zap_parallel_helpers);
	sched_account_offload(current, atomic64_read(&zj.helper_ns));
	if (start_ns)
		job_ns = local_clock() - start_ns;

	/* What stays on the caller, in address order, as unmap_vmas(). */
	vma = unmap->first;
	do {
		if (!zap_parallel_vma_ok(vma))
			unmap_vma_range(tlb, vma, vma->vm_start, vma->vm_end);
		vma = mas_find(unmap->mas, unmap->tree_end - 1);
	} while (vma);
	mmu_notifier_invalidate_range_end(&range);
	if (start_ns)
		trace_exit_mmap_zap_parallel(pages, zj.nr_runs, zj.nr_blocks,
					     helpers, report.nr_threads, job_ns,
					     local_clock() - start_ns - job_ns,
					     atomic64_read(&zj.helper_ns));

	if (report.nr_threads < 2) {
		count_vm_event(PARALLEL_ZAP_SERIAL);
	} else {
		count_vm_event(PARALLEL_ZAP);
		count_vm_events(PARALLEL_ZAP_THREADS, report.nr_threads);
	}
	kvfree(zj.runs);
	return true;
}

static int zap_parallel_sysctl(const struct ctl_table *table, int write,
			       void *buffer, size_t *lenp, loff_t *ppos)
{
	int ret;

	mutex_lock(&zap_parallel_lock);
	ret = proc_dointvec_minmax(table, write, buffer, lenp, ppos);
	if (!ret && write) {
		if (sysctl_parallel_zap)
			static_branch_enable(&exit_mmap_zap_parallel_key);
		else
			static_branch_disable(&exit_mmap_zap_parallel_key);
	}
	mutex_unlock(&zap_parallel_lock);
	return ret;
}

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
