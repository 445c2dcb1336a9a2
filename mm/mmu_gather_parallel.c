// SPDX-License-Identifier: GPL-2.0
/*
 * Parallel freeing of the pages an mmu_gather collected.
 *
 * A large munmap() or exit() spends most of its time freeing pages, with one
 * thread taking each zone's lock in turn.  Here the pages of a large gather
 * are freed by the calling task and kworker helpers with mtjob_run().  It
 * is off until vm.parallel_free is set to 1 (a static key).  Then:
 *
 * - A round is what a gather holds without growing (MAX_GATHER_BATCH_COUNT
 *   batches).  Before each round, outside the page table lock, the gather
 *   asks for helpers: when unmap_vmas() starts a teardown of at least
 *   vm.parallel_free_threshold pages (the range, or the anonymous RSS if
 *   smaller), and at each flush that ends a full round but the last.  It
 *   reserves at most one helper per other idle CPU of the unbound workqueue
 *   cpumask (sched_offload_idle_cpus(): isolated and nohz_full CPUs do not
 *   count), and at most vm.parallel_free_max_helpers for all gathers
 *   together.
 *
 * - Only with a reservation does a full gather grow on, up to
 *   vm.parallel_free_threshold pages to free, counted by size (a PMD-mapped
 *   THP is HPAGE_PMD_NR pages): an estimate, the private anonymous folios
 *   (COW copies included) no longer mapped when gathered, which the flush
 *   frees, not page cache or folios mapped elsewhere, which only lose a
 *   reference.  A growing gather stops at twice the threshold gathered, and
 *   a round whose gather holds mostly pages the flush does not free does not
 *   grow.  Under the page table lock (tlb_next_batch()) only the
 *   reservation, the gather's own counts and the task's OOM and fatal
 *   signal state are read; a reservation may be given back there.
 *
 * - No helpers for a round while no CPU is idle or the cap is reached, nor
 *   while memory is short: a node the task may allocate from below the low
 *   watermarks of its zones, or a memory cgroup of the task (or above it)
 *   with less than the threshold left below its memory.high or memory.max.
 *   The pages a grown gather holds back are out of the task's RSS, still
 *   charged, and out of the OOM reaper's reach.  Memory is asked again at
 *   the next flush; after a round without an idle CPU, or one that did not
 *   grow for lack of pages to free, the gather skips asking for 1, 3, 7, ...
 *   up to 63 rounds while it happens again, so that a busy system or a
 *   teardown of page cache does not scan every CPU at every round.  A task
 *   whose helpers would be unfair (below) is refused for the whole gather.
 *
 * - Only a flush of at least the threshold is parallel; a grown gather that
 *   ends below it (the tail of a teardown) is freed serially.  After each
 *   flush the reservation is given back and the batch list trimmed to
 *   MAX_GATHER_BATCH_COUNT, so every round of a long teardown decides again.
 *
 * - Helpers are kworkers: nice 0, root cgroup.  The CPU time they spend
 *   freeing (task_sched_runtime()) is charged to the caller after the job
 *   (sched_account_offload(): its cgroups' cpu.stat usage_usec and
 *   system_usec, its own system time and CPU clock).
 *   Tasks whose CPU use is restricted in any way stay serial
 *   (sched_task_offload_allowed()), as do kernel threads (the OOM reaper),
 *   teardowns of another task's mm (process_mrelease(), and the old mm that
 *   exec() drops, as current->mm is the new one by then), OOM victims and
 *   tasks with a fatal signal; the last two are checked again at every
 *   batch a gather grows by.
 *
 * - A helper that has not started when the caller runs out of batches is
 *   cancelled (a GFP_NOWAIT job), so on a loaded system the caller does the
 *   work alone.  The page table walk stays serial: the free of a full
 *   gather runs after its TLB flush and before the walk resumes.
 *
 * - The caller first frees one batch alone, timed, and stops the helpers
 *   once the threads together free slower than that (stop_when_slower).
 *   Unlike the zap, the free keeps no struct mtjob_backoff across
 *   teardowns: on an idle 2-vCPU guest it stopped its helpers in 1 to 3
 *   of 5 teardowns of 4 GiB, and with a backoff (and finer chunks,
 *   measured together) the rest of those teardowns ran serially.
 *
 * - The job's indices are the gather's batches, in the order of its batch
 *   list, which each chunk walks from its head: no array to allocate.  With
 *   vm.parallel_free_by_node, the list is first relinked by the node of each
 *   batch's first page and the batches freed with MTJOB_AFFINITY_BY_INDEX,
 *   so that helpers on node N take node N's batches first and contend for
 *   node N's zone locks; batches of a node without an idle CPU are tied to
 *   no node.
 */

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/cpuset.h>
#include <linux/init.h>
#include <linux/jump_label.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/mtjob.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/oom.h>
#include <linux/sched.h>
#include <linux/sched/clock.h>
#include <linux/sched/cputime.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/sysctl.h>
#include <linux/vmstat.h>
#include <linux/workqueue.h>

#include <asm/tlb.h>

#define CREATE_TRACE_POINTS
#include <trace/events/mmu_gather.h>

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

/*
 * A parallel flush: the job's indices are the batches of @tlb's list, from
 * tlb->local on, all holding pages.
 */
struct tlb_free_job {
	struct mmu_gather *tlb;
	/* The task whose gather it is: the helpers' time is charged to it. */
	struct task_struct *caller;
	atomic64_t helper_ns;
	/* Nodes with an idle CPU, for vm.parallel_free_by_node. */
	nodemask_t idle_nodes;
	/* Where tlb_free_batch_nid() is in the list: batch @at_index is @at. */
	struct mmu_gather_batch *at;
	unsigned long at_index;
};

/*
 * Is the gather tearing down the calling task's own mm?  Or, in do_exit()
 * after exit_mm(), an mm whose last reference the exiting task drops: its
 * own in practice (exit_mm()'s mmput()), or rarely one it held a reference
 * to (a file released by exit_files(), or by task_work afterwards); either
 * way the task that would do the work serially.
 */
static bool tlb_parallel_free_own_mm(struct mmu_gather *tlb)
{
	/*
	 * exit_mm() clears current->mm before its mmput() runs exit_mmap().
	 * Not current->active_mm == tlb->mm: a task preempted after that is
	 * switched back in as a lazy-TLB task, with the active_mm of whatever
	 * ran before it (context_switch()).
	 */
	if (!current->mm)
		return current->flags & PF_EXITING;
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

/*
 * Is memory too short to hold back up to @threshold pages?  A node the task
 * may allocate from below the low watermarks of its zones (where allocations
 * wake kswapd; watermark boosting left out), or a memory cgroup within
 * @threshold of its limit.  Read without locks: a heuristic, asked again at
 * every round of a teardown, outside the page table lock.
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
	/*
	 * The task's memcg, not mm->owner's: the gather's mm is the task's
	 * own (tlb_parallel_free_allowed()), and exit clears mm->owner before
	 * exit_mmap().
	 */
	if (!low)
		low = mem_cgroup_task_margin(current) < threshold;
	if (low)
		count_vm_event(TLB_PARALLEL_FREE_NOGROW_MEMORY);
	return low;
}

/*
 * Reserves helpers: at most one per other idle CPU that unbound kworkers may
 * run on, within vm.parallel_free_max_helpers for all gathers.  Returns how
 * many, maybe 0.
 */
static unsigned int tlb_parallel_free_reserve(void)
{
	int max = READ_ONCE(sysctl_parallel_free_max_helpers);
	int idle, old, nr;

	idle = sched_offload_idle_cpus(current, max);
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

/* nr_parallel_free_held: a grown gather's pages to free, until its flush. */
static void tlb_parallel_free_hold(struct mmu_gather *tlb, unsigned long pages)
{
	parallel_free_held_add((long)pages - (long)tlb->parallel_free_held);
	tlb->parallel_free_held = pages;
}

/* Rounds not to ask for helpers before the next try: 1, 3, 7, ... 63. */
#define TLB_PARALLEL_FREE_MAX_BACKOFF	63

static void tlb_parallel_free_back_off(struct mmu_gather *tlb)
{
	unsigned int rounds = min(2 * tlb->parallel_free_backoff + 1,
				  TLB_PARALLEL_FREE_MAX_BACKOFF);

	tlb->parallel_free_backoff = rounds;
	tlb->parallel_free_skip = rounds;
}

/*
 * Asks, outside the page table lock, for the next round's helpers: reserves
 * them, or refuses the gather for good (a task whose work helpers may not
 * do), or neither for this round (memory short, no CPU idle, the cap
 * reached).
 */
static void tlb_parallel_free_ask(struct mmu_gather *tlb)
{
	unsigned long threshold = READ_ONCE(sysctl_parallel_free_threshold);

	if (tlb->parallel_free_refused || tlb->parallel_free_helpers)
		return;
	/* mtjob.engine=serial or mtjob.max_threads=1: no helper to have. */
	if (!mtjob_may_use_helpers(GFP_NOWAIT) || !tlb_parallel_free_allowed(tlb)) {
		tlb->parallel_free_refused = 1;
		count_vm_event(TLB_PARALLEL_FREE_NOGROW);
		return;
	}
	if (tlb_parallel_free_memory_short(threshold))
		return;
	tlb->parallel_free_helpers = tlb_parallel_free_reserve();
	if (tlb->parallel_free_helpers)
		return;
	count_vm_event(TLB_PARALLEL_FREE_NOGROW_BUSY);
	tlb_parallel_free_back_off(tlb);
}

/**
 * __tlb_parallel_free_begin - a teardown starts
 * @tlb: its gather
 * @start: first address unmap_vmas() unmaps
 * @end: the address after its last
 *
 * Asks for helpers for the first round when the teardown may reach
 * vm.parallel_free_threshold pages: its range, or the mm's anonymous RSS if
 * smaller (file pages only lose a reference).  Gathers that do not go
 * through unmap_vmas() (MADV_DONTNEED and the other zap_vma_range() users)
 * first ask at the flush of their first full round.
 */
void __tlb_parallel_free_begin(struct mmu_gather *tlb, unsigned long start,
			       unsigned long end)
{
	unsigned long pages = min((end - start) >> PAGE_SHIFT,
				  get_mm_counter(tlb->mm, MM_ANONPAGES));

	if (pages >= READ_ONCE(sysctl_parallel_free_threshold))
		tlb_parallel_free_ask(tlb);
}

/**
 * __tlb_parallel_free_grow - may a full gather allocate one more batch?
 * @tlb: a gather whose MAX_GATHER_BATCH_COUNT or more batches are full
 *
 * Called by tlb_next_batch(), under the page table lock, where upstream stops
 * gathering.  The gather grows, with the helpers reserved before this round,
 * until it holds vm.parallel_free_threshold pages to free or twice that
 * gathered.  It does not grow in a round that starts with mostly pages the
 * flush would not free (it gives its helpers back and backs off), nor once
 * its task is an OOM victim or has a fatal signal.  Marks the round full, so
 * that its flush asks for the next one.
 *
 * Return: true if another batch may be allocated.
 */
bool __tlb_parallel_free_grow(struct mmu_gather *tlb)
{
	unsigned long threshold = READ_ONCE(sysctl_parallel_free_threshold);

	tlb->parallel_free_full = 1;
	if (!tlb->parallel_free_helpers ||
	    tlb->parallel_free_freeable >= threshold ||
	    tlb->parallel_free_pages >= 2 * threshold)
		return false;
	/* Chosen by the OOM killer or killed since: stop holding back. */
	if (tsk_is_oom_victim(current) || fatal_signal_pending(current)) {
		tlb_parallel_free_release(tlb);
		tlb->parallel_free_refused = 1;
		return false;
	}
	/* The first batch beyond upstream's: mostly page cache or shared? */
	if (tlb->batch_count == MAX_GATHER_BATCH_COUNT) {
		if (2 * tlb->parallel_free_freeable < tlb->parallel_free_pages) {
			tlb_parallel_free_release(tlb);
			tlb_parallel_free_back_off(tlb);
			return false;
		}
		/* A round that grows ends the back-off. */
		tlb->parallel_free_backoff = 0;
		if (trace_tlb_parallel_free_enabled())
			tlb->parallel_free_grown_ns = local_clock();
	}
	tlb_parallel_free_hold(tlb, tlb->parallel_free_freeable);
	return true;
}

/* The batch @n places after @batch in its list. */
static struct mmu_gather_batch *tlb_batch_after(struct mmu_gather_batch *batch,
						unsigned long n)
{
	while (n--)
		batch = batch->next;
	return batch;
}

/* The node of a batch's first page if a CPU there is idle, or none. */
static int tlb_batch_nid(struct mmu_gather_batch *batch,
			 const nodemask_t *idle_nodes)
{
	int nid = page_to_nid(encoded_page_ptr(batch->encoded_pages[0]));

	return node_isset(nid, *idle_nodes) ? nid : NUMA_NO_NODE;
}

/*
 * Relinks the @nr batches after tlb->local (all holding pages) by the node
 * tlb_batch_nid() gives them, in node order, those of no node last; empty
 * batches stay behind them.  tlb->local stays first: it is part of the
 * gather and holds at most MMU_GATHER_BUNDLE pages.
 */
static void tlb_free_sort_by_node(struct mmu_gather *tlb, unsigned int nr,
				  const nodemask_t *idle_nodes)
{
	struct mmu_gather_batch *rest = tlb->local.next, *last, *batch;
	struct mmu_gather_batch **link = &tlb->local.next, **pos;
	int nid = first_node(*idle_nodes);

	last = tlb_batch_after(&tlb->local, nr);
	*link = NULL;
	batch = last->next;
	last->next = NULL;
	for (;;) {
		bool any = nid >= MAX_NUMNODES;

		for (pos = &rest; *pos; ) {
			struct mmu_gather_batch *b = *pos;

			if (!any && tlb_batch_nid(b, idle_nodes) != nid) {
				pos = &b->next;
				continue;
			}
			*pos = b->next;
			b->next = NULL;
			*link = b;
			link = &b->next;
		}
		if (any)
			break;
		nid = next_node(nid, *idle_nodes);
	}
	*link = batch;
}

static int tlb_free_batches(unsigned long start, unsigned long end,
			    void *arg)
{
	struct tlb_free_job *fj = arg;
	struct mmu_gather_batch *batch;
	bool helper = current != fj->caller;
	u64 runtime = 0;

	if (helper)
		runtime = task_sched_runtime(current);
	/*
	 * Four chunks per thread (mtjob's plan), each walking the list from
	 * its head: about 8000 steps for 2 GiB gathered on four threads.
	 */
	batch = tlb_batch_after(&fj->tlb->local, start);
	/* Each batch is freed by one thread, MAX_NR_FOLIOS_PER_FREE at a time. */
	for (; start < end; start++, batch = batch->next)
		tlb_batch_free_encoded_pages(batch);
	if (helper)
		atomic64_add(task_sched_runtime(current) - runtime,
			     &fj->helper_ns);
	return 0;
}

static int tlb_free_batch_nid(unsigned long index, void *arg)
{
	struct tlb_free_job *fj = arg;

	/*
	 * Asked by the caller alone, before any chunk runs (struct mtjob):
	 * for rising indices in practice; a lower one walks from the head.
	 */
	if (index < fj->at_index) {
		fj->at = &fj->tlb->local;
		fj->at_index = 0;
	}
	fj->at = tlb_batch_after(fj->at, index - fj->at_index);
	fj->at_index = index;
	return tlb_batch_nid(fj->at, &fj->idle_nodes);
}

/*
 * Frees the gathered batches (@freeable pages to free of @gathered) with the
 * reserved helpers and charges their time to the caller's cgroups.  Returns
 * false, with nothing freed, if there is only one batch.
 */
static bool tlb_free_parallel(struct mmu_gather *tlb, unsigned long freeable,
			      unsigned long gathered)
{
	struct tlb_free_job fj = {
		.tlb		= tlb,
		.caller		= current,
		.helper_ns	= ATOMIC64_INIT(0),
		.idle_nodes	= NODE_MASK_NONE,
		.at		= &tlb->local,
	};
	struct mtjob job = {
		.thread_fn	= tlb_free_batches,
		.fn_arg		= &fj,
		.align		= 1,
		.min_chunk	= 1,
		.max_threads	= tlb->parallel_free_helpers + 1,
		.gfp		= GFP_NOWAIT,
		.stop_when_slower	= true,
		.name		= "mmu_gather",
	};
	struct mtjob_report report;
	struct mmu_gather_batch *batch;
	u64 start_ns = 0, helper_ns;
	unsigned int nr = 0;
	int cpu;

	for (batch = &tlb->local; batch && batch->nr; batch = batch->next)
		nr++;
	if (nr < 2)
		return false;

	/*
	 * Batch 0, tlb->local, holds MMU_GATHER_BUNDLE pages at most, every
	 * other one a page of them: the job leaves it to the caller, after,
	 * so that the probe of stop_when_slower is a full batch.
	 */
	job.start = 1;
	job.size = nr - 1;
	if (READ_ONCE(sysctl_parallel_free_by_node) &&
	    num_node_state(N_MEMORY) > 1) {
		for_each_cpu_and(cpu, workqueue_unbound_cpumask(),
				 cpu_online_mask)
			if (idle_cpu(cpu))
				node_set(cpu_to_node(cpu), fj.idle_nodes);
		tlb_free_sort_by_node(tlb, nr - 1, &fj.idle_nodes);
		job.affinity = MTJOB_AFFINITY_BY_INDEX;
		job.node_of = tlb_free_batch_nid;
	} else {
		job.affinity = MTJOB_AFFINITY_INTERLEAVE;
	}
	if (trace_tlb_parallel_free_enabled())
		start_ns = local_clock();
	/* The job is valid by construction: on failure nothing ran. */
	if (WARN_ON_ONCE(mtjob_run_report(&job, &report)))
		return false;
	tlb_free_batches(0, 1, &fj);
	helper_ns = atomic64_read(&fj.helper_ns);
	sched_account_offload(current, helper_ns);
	if (trace_tlb_parallel_free_enabled()) {
		u64 now = local_clock();
		u64 grown = tlb->parallel_free_grown_ns;

		trace_tlb_parallel_free(freeable, gathered, nr,
					tlb->parallel_free_helpers,
					report.nr_threads, grown ? now - grown : 0,
					start_ns ? now - start_ns : 0, helper_ns);
	}
	/* One thread: the caller alone, or a helper that took every batch. */
	if (report.nr_threads < 2) {
		count_vm_event(TLB_PARALLEL_FREE_FALLBACK);
	} else {
		count_vm_event(TLB_PARALLEL_FREE);
		count_vm_events(TLB_PARALLEL_FREE_THREADS, report.nr_threads);
	}
	if (report.helpers_stopped)
		count_vm_event(TLB_PARALLEL_FREE_HELPERS_STOPPED);
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
 * MAX_GATHER_BATCH_COUNT, and after a full round (but the last) asks for the
 * helpers of the next, unless it is backing off.
 */
void __tlb_parallel_free_flush(struct mmu_gather *tlb)
{
	unsigned long pages = tlb->parallel_free_freeable;
	unsigned long gathered = tlb->parallel_free_pages;
	bool full = tlb->parallel_free_full;
	struct mmu_gather_batch *batch;
	bool freed = false;

	tlb->parallel_free_pages = 0;
	tlb->parallel_free_freeable = 0;
	tlb->parallel_free_full = 0;
	/* Not once vm.parallel_free is 0: the gather only shrinks back. */
	if (static_branch_unlikely(&tlb_parallel_free_key) &&
	    pages >= READ_ONCE(sysctl_parallel_free_threshold)) {
		if (!tlb->parallel_free_helpers && !tlb->parallel_free_refused &&
		    mtjob_may_use_helpers(GFP_NOWAIT) && tlb_parallel_free_allowed(tlb))
			tlb->parallel_free_helpers = tlb_parallel_free_reserve();
		freed = tlb->parallel_free_helpers &&
			tlb_free_parallel(tlb, pages, gathered);
		/* Not for gathers refused helpers for good. */
		if (!freed && !tlb->parallel_free_refused)
			count_vm_event(TLB_PARALLEL_FREE_FALLBACK);
	}
	if (!freed) {
		for (batch = &tlb->local; batch && batch->nr; batch = batch->next)
			tlb_batch_free_encoded_pages(batch);
	}
	if (tlb->parallel_free_held)
		tlb_parallel_free_hold(tlb, 0);
	if (tlb->parallel_free_helpers)
		tlb_parallel_free_release(tlb);
	tlb->parallel_free_grown_ns = 0;
	tlb_parallel_free_trim(tlb);
	/* The next round: asked here, outside the page table lock. */
	if (full && static_branch_unlikely(&tlb_parallel_free_key)) {
		if (tlb->parallel_free_skip)
			tlb->parallel_free_skip--;
		else
			tlb_parallel_free_ask(tlb);
	}
}

/*
 * A gather ends holding a reservation if its last flush asked for a round
 * that did not come, or the key was disabled meanwhile.
 */
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
