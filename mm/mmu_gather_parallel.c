// SPDX-License-Identifier: GPL-2.0
/*
 * Parallel freeing of the pages an mmu_gather collected.
 *
 * A large munmap() or exit() spends most of its time freeing pages, with one
 * thread taking each zone's lock in turn.  Aaron Lu's 2017 series ("mm:
 * support parallel free of memory", never merged) freed gathered batches of
 * 256K pages in workqueue workers: 320 GiB went from 10.8 s to 5.8 s on a
 * 4-node Haswell-EX, 1 TiB from 41.7 s to 22 s on a 1024-CPU machine.  This
 * file does the same with mt_job_run(), and answers the review of that
 * series:
 *
 * - Who tunes it, how many workers: vm.parallel_free_max_helpers bounds the
 *   helpers freeing at once in the whole system (default 4, the best
 *   max_active of the 2017 measurements: 2 nodes, 100 GiB: 1.70 s with 2,
 *   1.62 s with 4, 1.64 s with 8; 4 nodes, 320 GiB: 4.84 s with 4, 4.77 s
 *   with 8, 6.21 s with 32); the calling task always works too.
 *
 * - CPU accounting and cgroups: the caller frees alongside its helpers, and
 *   tasks whose CPU time is limited or pinned stay serial: tasks with a
 *   CFS bandwidth limit (cpu.max) anywhere up their cgroup hierarchy, tasks
 *   that may not run on every online CPU (sched_setaffinity, cpuset), RT
 *   and deadline tasks (normal-priority kworkers would invert their
 *   priority), kernel threads (the OOM reaper) and OOM victims.  In 6.12 a
 *   work item cannot be confined to the caller's CPUs or charged to its
 *   cgroup (unbound workqueue attributes are per workqueue), hence serial
 *   rather than partial answers.  What helpers of an unconstrained task
 *   spend is system time of kworkers, at most max_helpers threads at once.
 *
 * - Busy systems, power and latency: helpers are only asked for when other
 *   CPUs are idle at the time of the flush, at most one per idle CPU; a
 *   helper that is not running yet when the caller has finished is
 *   cancelled (kernel::mt_job), so on a loaded system the caller ends up
 *   doing the work alone, as before.  No CPU is woken to poll.
 *
 * - The page table walk stays serial (Vlastimil Babka): the walk gathers up
 *   to vm.parallel_free_threshold pages, and only their freeing runs in
 *   parallel, synchronously; the walk resumes when all of them are free.
 *   This keeps the mmu_gather rules (pages are freed after the TLB flush,
 *   before tlb_finish_mmu() returns) and bounds the memory held back.
 *
 * - Zone-lock contention (Dave Hansen's fake-NUMA experiment: 70% less time
 *   when each worker freed to its own node): with vm.parallel_free_by_node
 *   the batches are sorted by the node of their first page and freed with
 *   MT_JOB_AFFINITY_BY_INDEX, so helpers on node N take node N's batches
 *   first and contend only for node N's zone locks.
 */

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/init.h>
#include <linux/mm.h>
#include <linux/mt_job.h>
#include <linux/mutex.h>
#include <linux/oom.h>
#include <linux/sched.h>
#include <linux/sched/rt.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/sysctl.h>
#include <linux/vmstat.h>

#include <asm/tlb.h>

#include "internal.h"

/*
 * Capacity of a gather upstream: the on-stack bundle plus
 * MAX_GATHER_BATCH_COUNT batches, about 10K entries.
 */
#define TLB_UPSTREAM_ENTRIES \
	(MMU_GATHER_BUNDLE + MAX_GATHER_BATCH_COUNT * MAX_GATHER_BATCH)

/* Most pages one gather may hold back: 8 GiB (2097152 pages of 4 KiB). */
#define TLB_PARALLEL_FREE_MAX_THRESHOLD	(SZ_8G / PAGE_SIZE)

/* Sysctls, see Documentation/admin-guide/sysctl/vm.rst. */
static int sysctl_parallel_free = 1;
/* 256K pages, the ASYNC_FREE_THRESHOLD of the 2017 series (1 GiB). */
static unsigned long sysctl_parallel_free_threshold = 256 * 1024;
static int sysctl_parallel_free_max_helpers = 4;
static int sysctl_parallel_free_by_node = 1;

/*
 * Batches a gather must have allocated (tlb->batch_count) before one of its
 * flushes can be parallel; UINT_MAX when parallel freeing is off.  Read on
 * every flush, written by the sysctl handler under tlb_parallel_free_lock.
 */
unsigned int tlb_parallel_free_batches __read_mostly = UINT_MAX;
static DEFINE_MUTEX(tlb_parallel_free_lock);
/* Helpers of all parallel flushes in progress, <= max_helpers. */
static atomic_t tlb_parallel_free_helpers = ATOMIC_INIT(0);

/* A gathered batch and the node of its first page. */
struct tlb_free_batch {
	struct mmu_gather_batch *batch;
	int nid;
};

static void tlb_parallel_free_update(void)
{
	unsigned long threshold = READ_ONCE(sysctl_parallel_free_threshold);
	unsigned int min_batches;

	lockdep_assert_held(&tlb_parallel_free_lock);
	/*
	 * A flush can reach the threshold only with this many batches, and
	 * can only exceed the upstream capacity with one more than upstream.
	 */
	min_batches = threshold > MMU_GATHER_BUNDLE ?
		(threshold - MMU_GATHER_BUNDLE) / MAX_GATHER_BATCH : 0;
	min_batches = min_t(unsigned int, min_batches,
			    MAX_GATHER_BATCH_COUNT + 1);
	WRITE_ONCE(tlb_parallel_free_batches,
		   READ_ONCE(sysctl_parallel_free) ? min_batches : UINT_MAX);
}

/* Whether the calling task may have its pages freed by helpers at all. */
static bool tlb_parallel_free_allowed(void)
{
	bool limited;

	if (current->flags & PF_KTHREAD || tsk_is_oom_victim(current))
		return false;
	if (rt_or_dl_task(current))
		return false;
	if (!cpumask_subset(cpu_online_mask, current->cpus_ptr))
		return false;
	rcu_read_lock();
	limited = cfs_task_bw_constrained(current);
	rcu_read_unlock();
	return !limited;
}

/* Decides once per gather; counts a refusal once. */
static bool tlb_parallel_free_decide(struct mmu_gather *tlb)
{
	if (!tlb->parallel_free_checked) {
		tlb->parallel_free_checked = 1;
		tlb->parallel_free = tlb_parallel_free_allowed();
		if (!tlb->parallel_free)
			count_vm_event(PARALLEL_FREE_FALLBACK);
	}
	return tlb->parallel_free;
}

/**
 * tlb_parallel_free_grow - may the gather allocate one more batch?
 * @tlb: a gather that has allocated at least MAX_GATHER_BATCH_COUNT batches
 *
 * Called by tlb_next_batch() where upstream stops gathering.  A gather grows
 * past MAX_GATHER_BATCH_COUNT only if it will be freed in parallel, and only
 * up to vm.parallel_free_threshold pages.
 *
 * Return: true if another batch may be allocated.
 */
bool tlb_parallel_free_grow(struct mmu_gather *tlb)
{
	if (READ_ONCE(tlb_parallel_free_batches) == UINT_MAX)
		return false;
	/* Grow until the gather can hold the threshold, not beyond. */
	if (tlb->batch_count >=
	    DIV_ROUND_UP(READ_ONCE(sysctl_parallel_free_threshold),
			 MAX_GATHER_BATCH))
		return false;
	return tlb_parallel_free_decide(tlb);
}

/*
 * Reserves helpers: at most one per other CPU that is idle now, within the
 * system-wide vm.parallel_free_max_helpers.  Returns how many, maybe 0.
 */
static int tlb_parallel_free_reserve(void)
{
	int max = READ_ONCE(sysctl_parallel_free_max_helpers);
	int self = raw_smp_processor_id();
	int cpu, idle = 0, old, nr;

	for_each_online_cpu(cpu) {
		if (cpu != self && idle_cpu(cpu) && ++idle >= max)
			break;
	}
	old = atomic_read(&tlb_parallel_free_helpers);
	do {
		nr = min(idle, max - old);
		if (nr <= 0)
			return 0;
	} while (!atomic_try_cmpxchg(&tlb_parallel_free_helpers, &old,
				     old + nr));
	return nr;
}

static int tlb_free_batches(unsigned long start, unsigned long end,
			    void *arg)
{
	struct tlb_free_batch *batches = arg;

	/* Each batch is freed by one thread, MAX_NR_FOLIOS_PER_FREE at a time. */
	for (; start < end; start++)
		__tlb_batch_free_encoded_pages(batches[start].batch);
	return 0;
}

static int tlb_free_batch_nid(unsigned long index, void *arg)
{
	struct tlb_free_batch *batches = arg;

	return batches[index].nid;
}

static int tlb_free_batch_cmp(const void *a, const void *b)
{
	const struct tlb_free_batch *x = a, *y = b;

	return x->nid - y->nid;
}

/**
 * __tlb_parallel_free_flush - free the gathered batches with several threads
 * @tlb: the gather, its TLB already flushed
 *
 * Frees in parallel when the gather holds at least vm.parallel_free_threshold
 * pages, or more than an upstream gather can hold (it grew because it was to
 * be freed in parallel), the task is allowed (see the top of this file), and
 * a helper is available.  Returns when every page is freed.
 *
 * Return: true if the batches were freed, false if the caller must free them
 * serially (nothing was freed).
 */
bool __tlb_parallel_free_flush(struct mmu_gather *tlb)
{
	struct mt_job job = {
		.thread_fn	= tlb_free_batches,
		.align		= 1,
		.min_chunk	= 1,
		.nowait		= true,
		.name		= "mmu_gather",
	};
	unsigned long entries = 0, threshold;
	struct tlb_free_batch *batches;
	struct mmu_gather_batch *batch;
	unsigned int nr = 0, i;
	bool by_node;
	int helpers;

	for (batch = &tlb->local; batch && batch->nr; batch = batch->next) {
		entries += batch->nr;
		nr++;
	}
	threshold = READ_ONCE(sysctl_parallel_free_threshold);
	if (entries < threshold && entries <= TLB_UPSTREAM_ENTRIES)
		return false;
	if (!tlb_parallel_free_decide(tlb))
		return false;

	helpers = tlb_parallel_free_reserve();
	if (!helpers)
		goto serial;
	batches = kmalloc_array(nr, sizeof(*batches), GFP_NOWAIT | __GFP_NOWARN);
	if (!batches)
		goto release;

	by_node = READ_ONCE(sysctl_parallel_free_by_node) &&
		  num_node_state(N_MEMORY) > 1;
	for (i = 0, batch = &tlb->local; i < nr; i++, batch = batch->next) {
		batches[i].batch = batch;
		batches[i].nid = by_node ?
			page_to_nid(encoded_page_ptr(batch->encoded_pages[0])) :
			NUMA_NO_NODE;
	}
	if (by_node)
		sort(batches, nr, sizeof(*batches), tlb_free_batch_cmp, NULL);

	job.fn_arg = batches;
	job.size = nr;
	job.max_threads = helpers + 1;
	if (by_node) {
		job.affinity = MT_JOB_AFFINITY_BY_INDEX;
		job.node_of = tlb_free_batch_nid;
	} else {
		job.affinity = MT_JOB_AFFINITY_INTERLEAVE;
	}
	/* The job is valid by construction: on failure nothing ran. */
	if (WARN_ON_ONCE(mt_job_run(&job))) {
		kfree(batches);
		goto release;
	}
	count_vm_event(PARALLEL_FREE);
	count_vm_events(PARALLEL_FREE_THREADS, job.nr_threads);
	kfree(batches);
	atomic_sub(helpers, &tlb_parallel_free_helpers);
	return true;

release:
	atomic_sub(helpers, &tlb_parallel_free_helpers);
serial:
	count_vm_event(PARALLEL_FREE_FALLBACK);
	return false;
}

static int tlb_parallel_free_sysctl(const struct ctl_table *table, int write,
				    void *buffer, size_t *lenp, loff_t *ppos)
{
	int ret;

	mutex_lock(&tlb_parallel_free_lock);
	if (table->data == &sysctl_parallel_free_threshold)
		ret = proc_doulongvec_minmax(table, write, buffer, lenp, ppos);
	else
		ret = proc_dointvec_minmax(table, write, buffer, lenp, ppos);
	if (!ret && write)
		tlb_parallel_free_update();
	mutex_unlock(&tlb_parallel_free_lock);
	return ret;
}

static unsigned long threshold_min = 1;
static unsigned long threshold_max = TLB_PARALLEL_FREE_MAX_THRESHOLD;

static struct ctl_table tlb_parallel_free_table[] = {
	{
		.procname	= "parallel_free",
		.data		= &sysctl_parallel_free,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= tlb_parallel_free_sysctl,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{
		.procname	= "parallel_free_threshold",
		.data		= &sysctl_parallel_free_threshold,
		.maxlen		= sizeof(unsigned long),
		.mode		= 0644,
		.proc_handler	= tlb_parallel_free_sysctl,
		.extra1		= &threshold_min,
		.extra2		= &threshold_max,
	},
	{
		.procname	= "parallel_free_max_helpers",
		.data		= &sysctl_parallel_free_max_helpers,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= tlb_parallel_free_sysctl,
		.extra1		= SYSCTL_ONE,
		.extra2		= SYSCTL_INT_MAX,
	},
	{
		.procname	= "parallel_free_by_node",
		.data		= &sysctl_parallel_free_by_node,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= tlb_parallel_free_sysctl,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
};

static int __init tlb_parallel_free_init(void)
{
	mutex_lock(&tlb_parallel_free_lock);
	tlb_parallel_free_update();
	mutex_unlock(&tlb_parallel_free_lock);
	register_sysctl_init("vm", tlb_parallel_free_table);
	return 0;
}
subsys_initcall(tlb_parallel_free_init);
