// SPDX-License-Identifier: GPL-2.0
/*
 * Parallel freeing of the pages an mmu_gather collected.
 *
 * A large munmap() or exit() spends most of its time freeing pages, with one
 * thread taking each zone's lock in turn.  Here the pages of a large gather
 * are freed by the calling task and kworker helpers with mt_job_run().  It
 * is off until vm.parallel_free is set to 1 (a static key).  Then:
 *
 * - Where a gather would stop at MAX_GATHER_BATCH_COUNT batches, it reserves
 *   helpers: at most one per other CPU that is idle now, and at most
 *   vm.parallel_free_max_helpers for all gathers together.  Only with a
 *   reservation does it grow on, up to vm.parallel_free_threshold pages to
 *   free, counted by size (a PMD-mapped THP is HPAGE_PMD_NR pages): an
 *   estimate, the private anonymous folios (COW copies included) no longer
 *   mapped when gathered, which the flush frees, not page cache or folios
 *   mapped elsewhere, which only lose a reference.  A growing gather stops at
 *   twice the threshold gathered.  A gather whose task gets no helpers (or
 *   finds none idle) is refused for good: it is not asked again.
 *
 * - A gather does not grow while memory is short: a node the task may
 *   allocate from below the low watermarks of its zones, or a memory cgroup
 *   of the task (or above it) with less than the threshold left below its
 *   memory.high or memory.max.  The pages it would hold back are out of the
 *   task's RSS, still charged, and out of the OOM reaper's reach.  Nor while
 *   most of what it gathered would not be freed.  Both are asked again at
 *   the next round.
 *
 * - Only a flush of at least the threshold is parallel; a grown gather that
 *   ends below it (the tail of a teardown) is freed serially.  After each
 *   flush the reservation is given back and the batch list trimmed to
 *   MAX_GATHER_BATCH_COUNT, so every round of a long teardown decides again.
 *
 * - Helpers are kworkers: nice 0, root cgroup, their time charged to no
 *   cgroup.  Tasks whose CPU use is restricted in any way stay serial
 *   (sched_task_offload_allowed()), as do kernel threads (the OOM reaper),
 *   teardowns of another task's mm (process_mrelease()), OOM victims and
 *   tasks with a fatal signal; the last two are checked again at every
 *   batch a gather grows by.
 *
 * - A helper that has not started when the caller runs out of batches is
 *   cancelled (a nowait job), so on a loaded system the caller does the
 *   work alone.  The page table walk stays serial: the free of a full
 *   gather runs after its TLB flush and before the walk resumes.
 *
 * - With vm.parallel_free_by_node, batches are sorted by the node of their
 *   first page and freed with MT_JOB_AFFINITY_BY_INDEX, so that helpers on
 *   node N take node N's batches first and contend for node N's zone locks;
 *   batches of a node without an idle CPU are tied to no node.
 */

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/cpuset.h>
#include <linux/init.h>
#include <linux/jump_label.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/mt_job.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/oom.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/sysctl.h>
#include <linux/vmstat.h>

#include <asm/tlb.h>

#include "internal.h"

/*
 * vm.parallel_free_threshold: 1 GiB by default (the batch of Aaron Lu's 2017
 * "mm: support parallel free of memory"), at most 8 GiB held back, at least
 * what a gather holds without growing.
 */
#define TLB_PARALLEL_FREE_DEFAULT_PAGES	(SZ_1G >> PAGE_SHIFT)
#define TLB_PARALLEL_FREE_MAX_PAGES	(SZ_8G >> PAGE_SHIFT)
#define TLB_PARALLEL_FREE_MIN_PAGES	(MAX_GATHER_BATCH_COUNT * MAX_GATHER_BATCH)

/* Enabled while vm.parallel_free is 1. */
DEFINE_STATIC_KEY_FALSE(tlb_parallel_free_key);

/* Sysctls, see Documentation/admin-guide/sysctl/vm.rst. */
static int sysctl_parallel_free;
static unsigned long sysctl_parallel_free_threshold =
	TLB_PARALLEL_FREE_DEFAULT_PAGES;
/*
 * vm.parallel_free_max_helpers: two per node with memory at boot, set by
 * tlb_parallel_free_init().  The best workqueue max_active of the 2017
 * series' measurements was 4 on a 2-node machine and 4 to 8 on a 4-node one.
 */
#define TLB_PARALLEL_FREE_HELPERS_PER_NODE	2
static int sysctl_parallel_free_max_helpers =
	TLB_PARALLEL_FREE_HELPERS_PER_NODE;
static int sysctl_parallel_free_by_node = 1;
static DEFINE_MUTEX(tlb_parallel_free_lock);

/* Helpers reserved by all gathers, <= vm.parallel_free_max_helpers. */
static atomic_t tlb_parallel_free_helpers = ATOMIC_INIT(0);

/* A gathered batch and the node it is freed on, NUMA_NO_NODE for any. */
struct tlb_free_batch {
	struct mmu_gather_batch *batch;
	int nid;
};

/* Is the gather tearing down the calling task's own mm? */
static bool tlb_parallel_free_own_mm(struct mmu_gather *tlb)
{
	/* exit_mm() clears current->mm before its mmput() runs exit_mmap(). */
	if (!current->mm)
		return (current->flags & PF_EXITING) &&
		       current->active_mm == tlb->mm;
	return current->mm == tlb->mm;
}

/* May helpers free the pages of this gather?  See the top of this file. */
static bool tlb_parallel_free_allowed(struct mmu_gather *tlb)
{
	if (current->flags & PF_KTHREAD || !tlb_parallel_free_own_mm(tlb))
		return false;
	if (tsk_is_oom_victim(current) || fatal_signal_pending(current))
		return false;
	return sched_task_offload_allowed(current);
}

#ifdef CONFIG_MEMCG
/*
 * Is a memory cgroup of the calling task, or one above it, within @threshold
 * pages of its memory.high or memory.max?  The gather's mm is the task's own
 * (tlb_parallel_free_allowed()); its memcg is read from the task, since exit
 * clears mm->owner before exit_mmap().
 */
static bool tlb_parallel_free_memcg_short(unsigned long threshold)
{
	struct mem_cgroup *memcg;
	bool low = false;

	if (mem_cgroup_disabled())
		return false;
	rcu_read_lock();
	for (memcg = mem_cgroup_from_task(current);
	     memcg && !mem_cgroup_is_root(memcg);
	     memcg = parent_mem_cgroup(memcg)) {
		unsigned long limit = min(READ_ONCE(memcg->memory.high),
					  READ_ONCE(memcg->memory.max));

		if (page_counter_read(&memcg->memory) + threshold > limit) {
			low = true;
			break;
		}
	}
	rcu_read_unlock();
	return low;
}
#else
static bool tlb_parallel_free_memcg_short(unsigned long threshold)
{
	return false;
}
#endif

/*
 * Is memory too short to hold back up to @threshold pages?  A node the task
 * may allocate from below the low watermarks of its zones (where allocations
 * wake kswapd; watermark boosting left out), or a memory cgroup within
 * @threshold of its limit.  Read without locks: a heuristic, asked again at
 * every round of a teardown, under the page table lock.
 */
static bool tlb_parallel_free_memory_short(unsigned long threshold)
{
	bool low = false;
	int nid, z;

	for_each_node_state(nid, N_MEMORY) {
		struct pglist_data *pgdat = NODE_DATA(nid);
		unsigned long free = 0, min_free = 0;

		if (!node_isset(nid, cpuset_current_mems_allowed))
			continue;

		for (z = 0; z < MAX_NR_ZONES; z++) {
			struct zone *zone = &pgdat->node_zones[z];

			if (!populated_zone(zone))
				continue;
			free += zone_page_state(zone, NR_FREE_PAGES);
			min_free += READ_ONCE(zone->_watermark[WMARK_LOW]);
		}
		if (free < min_free) {
			low = true;
			break;
		}
	}
	if (!low)
		low = tlb_parallel_free_memcg_short(threshold);
	if (low)
		count_vm_event(TLB_PARALLEL_FREE_NOGROW_MEMORY);
	return low;
}

/*
 * Reserves helpers: at most one per other online CPU that is idle now, within
 * vm.parallel_free_max_helpers for all gathers.  Returns how many, maybe 0.
 */
static unsigned int tlb_parallel_free_reserve(void)
{
	int max = READ_ONCE(sysctl_parallel_free_max_helpers);
	int self = raw_smp_processor_id();
	int cpu, idle = 0, old, nr;

	/* mt_job.engine=serial or mt_job.max_threads=1: no helper to have. */
	if (!mt_job_may_use_helpers(true))
		return 0;
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

static void tlb_parallel_free_release(struct mmu_gather *tlb)
{
	atomic_sub(tlb->parallel_free_helpers, &tlb_parallel_free_helpers);
	tlb->parallel_free_helpers = 0;
}

/**
 * __tlb_parallel_free_grow - may a full gather allocate one more batch?
 * @tlb: a gather whose MAX_GATHER_BATCH_COUNT or more batches are full
 *
 * Called by tlb_next_batch() where upstream stops gathering.  The gather
 * grows until it holds vm.parallel_free_threshold pages to free (or twice
 * that gathered), and only while it holds a reservation of helpers, which the
 * first call of a round takes unless the task gets no helpers (then the
 * gather is not asked again), most of what it gathered would not be freed, or
 * memory is short.
 *
 * Return: true if another batch may be allocated.
 */
bool __tlb_parallel_free_grow(struct mmu_gather *tlb)
{
	unsigned long threshold = READ_ONCE(sysctl_parallel_free_threshold);

	/* Enough to free in parallel, or mostly pages a flush does not free. */
	if (tlb->parallel_free_refused ||
	    tlb->parallel_free_freeable >= threshold ||
	    tlb->parallel_free_pages >= 2 * threshold)
		return false;
	if (tlb->parallel_free_helpers) {
		/* Chosen by the OOM killer or killed since: stop holding back. */
		if (tsk_is_oom_victim(current) || fatal_signal_pending(current)) {
			tlb_parallel_free_release(tlb);
			tlb->parallel_free_refused = 1;
			return false;
		}
		return true;
	}
	/*
	 * Not this round (a round is what a gather holds without growing): a
	 * gather of mostly page cache or shared folios, or memory too short to
	 * hold pages back.
	 */
	if (2 * tlb->parallel_free_freeable < tlb->parallel_free_pages)
		return false;
	if (!tlb_parallel_free_allowed(tlb))
		goto refused;
	tlb->parallel_free_helpers = tlb_parallel_free_reserve();
	if (!tlb->parallel_free_helpers)
		goto refused;
	if (tlb_parallel_free_memory_short(threshold)) {
		tlb_parallel_free_release(tlb);
		return false;
	}
	return true;
refused:
	/* Not asked again: this runs under the page table lock. */
	tlb->parallel_free_refused = 1;
	count_vm_event(TLB_PARALLEL_FREE_NOGROW);
	return false;
}

static int tlb_free_batches(unsigned long start, unsigned long end,
			    void *arg)
{
	struct tlb_free_batch *batches = arg;

	/* Each batch is freed by one thread, MAX_NR_FOLIOS_PER_FREE at a time. */
	for (; start < end; start++)
		tlb_batch_free_encoded_pages(batches[start].batch);
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

/*
 * Frees the gathered batches with the reserved helpers.  Returns false, with
 * nothing freed, if there is only one batch or the batch array cannot be
 * allocated.
 */
static bool tlb_free_parallel(struct mmu_gather *tlb)
{
	struct mt_job job = {
		.thread_fn	= tlb_free_batches,
		.align		= 1,
		.min_chunk	= 1,
		.max_threads	= tlb->parallel_free_helpers + 1,
		.nowait		= true,
		.name		= "mmu_gather",
	};
	nodemask_t idle_nodes = NODE_MASK_NONE;
	struct tlb_free_batch *batches;
	struct mmu_gather_batch *batch;
	unsigned int nr = 0, i;
	bool by_node;
	int cpu;

	for (batch = &tlb->local; batch && batch->nr; batch = batch->next)
		nr++;
	if (nr < 2)
		return false;
	batches = kmalloc_objs(*batches, nr, GFP_NOWAIT);
	if (!batches)
		return false;

	by_node = READ_ONCE(sysctl_parallel_free_by_node) &&
		  num_node_state(N_MEMORY) > 1;
	if (by_node) {
		for_each_online_cpu(cpu)
			if (idle_cpu(cpu))
				node_set(cpu_to_node(cpu), idle_nodes);
	}
	for (i = 0, batch = &tlb->local; i < nr; i++, batch = batch->next) {
		int nid = NUMA_NO_NODE;

		if (by_node)
			nid = page_to_nid(encoded_page_ptr(batch->encoded_pages[0]));
		batches[i].batch = batch;
		batches[i].nid = nid != NUMA_NO_NODE &&
				 node_isset(nid, idle_nodes) ? nid : NUMA_NO_NODE;
	}
	if (by_node)
		sort(batches, nr, sizeof(*batches), tlb_free_batch_cmp, NULL);

	job.fn_arg = batches;
	job.size = nr;
	if (by_node) {
		job.affinity = MT_JOB_AFFINITY_BY_INDEX;
		job.node_of = tlb_free_batch_nid;
	} else {
		job.affinity = MT_JOB_AFFINITY_INTERLEAVE;
	}
	/* The job is valid by construction: on failure nothing ran. */
	if (WARN_ON_ONCE(mt_job_run(&job))) {
		kfree(batches);
		return false;
	}
	kfree(batches);
	/* One thread: the caller alone, or a helper that took every batch. */
	if (job.nr_threads < 2) {
		count_vm_event(TLB_PARALLEL_FREE_FALLBACK);
	} else {
		count_vm_event(TLB_PARALLEL_FREE);
		count_vm_events(TLB_PARALLEL_FREE_THREADS, job.nr_threads);
	}
	return true;
}

/* Gives back the batches a gather grew by, once they are empty. */
static void tlb_parallel_free_trim(struct mmu_gather *tlb)
{
	struct mmu_gather_batch *batch = &tlb->local, *next;
	unsigned int i;

	if (tlb->batch_count <= MAX_GATHER_BATCH_COUNT)
		return;
	for (i = 0; i < MAX_GATHER_BATCH_COUNT; i++)
		batch = batch->next;
	next = batch->next;
	batch->next = NULL;
	while (next) {
		batch = next;
		next = batch->next;
		free_page((unsigned long)batch);
	}
	tlb->batch_count = MAX_GATHER_BATCH_COUNT;
}

/**
 * __tlb_parallel_free_flush - free the gathered pages
 * @tlb: the gather, its TLB already flushed
 *
 * Frees the pages with the reserved helpers (reserving them now if the
 * gather did not have to grow, as with THPs) when the gather holds at least
 * vm.parallel_free_threshold pages to free and vm.parallel_free is 1,
 * serially otherwise.  Then gives back the reservation and the batches beyond
 * MAX_GATHER_BATCH_COUNT.
 *
 * Return: true: every page is freed.
 */
bool __tlb_parallel_free_flush(struct mmu_gather *tlb)
{
	unsigned long pages = tlb->parallel_free_freeable;
	struct mmu_gather_batch *batch;
	bool freed = false;

	tlb->parallel_free_pages = 0;
	tlb->parallel_free_freeable = 0;
	/* Not once vm.parallel_free is 0: the gather only shrinks back. */
	if (static_branch_unlikely(&tlb_parallel_free_key) &&
	    pages >= READ_ONCE(sysctl_parallel_free_threshold)) {
		if (!tlb->parallel_free_helpers && !tlb->parallel_free_refused &&
		    tlb_parallel_free_allowed(tlb))
			tlb->parallel_free_helpers = tlb_parallel_free_reserve();
		freed = tlb->parallel_free_helpers && tlb_free_parallel(tlb);
		if (!freed)
			count_vm_event(TLB_PARALLEL_FREE_FALLBACK);
	}
	if (!freed) {
		for (batch = &tlb->local; batch && batch->nr; batch = batch->next)
			tlb_batch_free_encoded_pages(batch);
	}
	if (tlb->parallel_free_helpers)
		tlb_parallel_free_release(tlb);
	tlb_parallel_free_trim(tlb);
	return true;
}

/* A gather ends holding a reservation only if the key was disabled meanwhile. */
void __tlb_parallel_free_finish(struct mmu_gather *tlb)
{
	tlb_parallel_free_release(tlb);
}

static int tlb_parallel_free_sysctl(const struct ctl_table *table, int write,
				    void *buffer, size_t *lenp, loff_t *ppos)
{
	int ret;

	mutex_lock(&tlb_parallel_free_lock);
	ret = proc_dointvec_minmax(table, write, buffer, lenp, ppos);
	if (!ret && write) {
		if (sysctl_parallel_free)
			static_branch_enable(&tlb_parallel_free_key);
		else
			static_branch_disable(&tlb_parallel_free_key);
	}
	mutex_unlock(&tlb_parallel_free_lock);
	return ret;
}

static unsigned long threshold_min = TLB_PARALLEL_FREE_MIN_PAGES;
static unsigned long threshold_max = TLB_PARALLEL_FREE_MAX_PAGES;

static const struct ctl_table tlb_parallel_free_table[] = {
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
		.proc_handler	= proc_doulongvec_minmax,
		.extra1		= &threshold_min,
		.extra2		= &threshold_max,
	},
	{
		.procname	= "parallel_free_max_helpers",
		.data		= &sysctl_parallel_free_max_helpers,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ONE,
		.extra2		= SYSCTL_INT_MAX,
	},
	{
		.procname	= "parallel_free_by_node",
		.data		= &sysctl_parallel_free_by_node,
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= proc_dointvec_minmax,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
};

static int __init tlb_parallel_free_init(void)
{
	sysctl_parallel_free_max_helpers = TLB_PARALLEL_FREE_HELPERS_PER_NODE *
		max_t(int, num_node_state(N_MEMORY), 1);
	register_sysctl_init("vm", tlb_parallel_free_table);
	return 0;
}
subsys_initcall(tlb_parallel_free_init);
