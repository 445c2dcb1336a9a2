/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Multithreaded jobs over index ranges: the successor of
 * padata_do_multithreaded() that may be used after boot and returns errors.
 *
 * The engine is written in Rust (rust/kernel/mtjob/, enabled by
 * CONFIG_MTJOB_RUST); kernel/mtjob.c validates the job and selects it, the
 * padata engine (during boot only: the default without CONFIG_MTJOB_RUST,
 * or "mtjob.engine=padata") or a serial loop.
 */
#ifndef _LINUX_MTJOB_H
#define _LINUX_MTJOB_H

#include <linux/gfp_types.h>
#include <linux/lockdep.h>
#include <linux/types.h>

/**
 * enum mtjob_affinity - where the helpers of a job run
 * @MTJOB_AFFINITY_NONE: helpers are queued with queue_work() on the unbound
 *	workqueue, near the calling CPU.
 * @MTJOB_AFFINITY_INTERLEAVE: helpers are spread round-robin over the nodes
 *	that have CPUs, as padata's numa_aware does.
 * @MTJOB_AFFINITY_NODE: all helpers run on @mtjob.node; the calling thread
 *	takes chunks while they run only when it runs on a CPU of that node
 *	(cpumask_of_node(); with numa=fake= a CPU is one of every emulated node
 *	of its physical node), the node has no CPU (N_CPU), or the job may not
 *	wait for helpers (@mtjob.gfp is %GFP_NOWAIT, or it runs from a work
 *	item or with PF_MEMALLOC).
 * @MTJOB_AFFINITY_BY_INDEX: @mtjob.node_of tells which node each index
 *	lives on; helpers are queued on those nodes and take their own node's
 *	chunks first, then help with the others.
 *	The chunks of a node without CPUs belong to its nearest node with CPUs
 *	(numa_nearest_node() over N_CPU).
 * @MTJOB_AFFINITY_BY_INDEX_STRICT: as %MTJOB_AFFINITY_BY_INDEX, but the
 *	chunks of node N run only on a helper queued on node N or on the caller
 *	if numa_node_id() is N; chunks of nodes without a helper
 *	(@mtjob.max_threads below the number of nodes) run on the caller.  A
 *	caller on a node without chunks, when the threads suffice for a helper
 *	on each node of the chunks (all with CPUs), does not count as a thread
 *	and runs only what the helpers left.  A job of one thread is one chunk:
 *	a helper on its node runs it, unless the caller is on that node.
 *
 * Whatever the affinity, once every helper has finished or was cancelled
 * before it started, the caller runs any chunk left, so placement is best
 * effort and a job never ends without running every index (unless a chunk
 * failed); &mtjob_report.nr_off_node counts the chunks that ran off their
 * node.
 */
enum mtjob_affinity {
	MTJOB_AFFINITY_NONE,
	MTJOB_AFFINITY_INTERLEAVE,
	MTJOB_AFFINITY_NODE,
	MTJOB_AFFINITY_BY_INDEX,
	MTJOB_AFFINITY_BY_INDEX_STRICT,
};

/**
 * enum mtjob_engine - which engine ran a job
 * @MTJOB_ENGINE_SERIAL: the calling thread alone, in one call; also what
 *	&mtjob_report.engine says of a job refused with -EINVAL, which ran
 *	nowhere.
 * @MTJOB_ENGINE_RUST: the Rust engine (kernel::mtjob).
 * @MTJOB_ENGINE_PADATA: padata_do_multithreaded(), only while booting and
 *	only for jobs that may wait (@mtjob.gfp is %GFP_KERNEL).
 */
enum mtjob_engine {
	MTJOB_ENGINE_SERIAL,
	MTJOB_ENGINE_RUST,
	MTJOB_ENGINE_PADATA,
};

/**
 * struct mtjob - a multithreaded job over the half-open range
 *	[@start, @start + @size)
 * @thread_fn: called for each chunk [start, end) with @fn_arg, from the
 *	calling thread and from helpers at the same time; returns 0 or a
 *	negative errno (every engine treats a positive return as 0 and one
 *	below -MAX_ERRNO as -EINVAL).  The first error stops new chunks from
 *	being handed out and is returned by mtjob_run().  Runs in process
 *	context and may sleep.
 * @fn_arg: argument of @thread_fn and @node_of.
 * @start: first index of the job (units are the caller's: pfns, pages, ...).
 * @size: number of indices; @start + @size must not overflow.
 * @align: a power of two; every chunk boundary is a multiple of it, except
 *	@start and @start + @size themselves.
 * @min_chunk: no chunk is smaller than this except at the ends of the job;
 *	0 means no minimum.
 * @max_threads: upper bound on the threads working at once, the calling
 *	thread included (>= 1).  The Rust engine also caps it at the online
 *	CPUs, and "mtjob.max_threads=" caps every job.
 * @affinity: where the helpers run, see &enum mtjob_affinity.
 * @node: the node for %MTJOB_AFFINITY_NODE.
 * @node_of: for the by-index affinities, the node of an index: asked for
 *	the first index of each chunk, only by the calling thread, before any
 *	chunk runs; %NUMA_NO_NODE, or any node that is not possible, means none.
 * @gfp: the flags the engine allocates its bookkeeping with (helpers' work
 *	items, per-node segments): %GFP_KERNEL, or %GFP_NOWAIT for callers
 *	that must not enter reclaim (the mmu_gather free path); no other value
 *	is accepted, as the engine has no use for other flags.  With
 *	%GFP_NOWAIT a failed allocation means fewer helpers or one segment,
 *	never an error, and the caller never waits for a helper that has not
 *	started: it cancels those and runs their chunks itself.
 * @stop_when_slower: the Rust engine stops the helpers once they slow the
 *	job down.  The caller first runs a probe alone, timed, before queueing
 *	helpers: the first max(@min_chunk, 1) indices, up to the next multiple
 *	of @align (one more chunk).  After each of its chunks it compares the
 *	time an index has taken since with the probe's: once the threads
 *	together run fewer indices a second than the caller did alone, helpers
 *	take no new chunk and the caller runs the rest
 *	(&mtjob_report.helpers_stopped).  For jobs whose indices cost about the
 *	same, on machines busier than they look (a guest whose vCPUs outnumber
 *	its host's cores).  Ignored for %MTJOB_AFFINITY_NODE and
 *	%MTJOB_AFFINITY_BY_INDEX_STRICT jobs and where the rest after the probe
 *	would be one thread's.
 * @name: a short name for reports and warnings.
 */
struct mtjob {
	int (*thread_fn)(unsigned long start, unsigned long end, void *arg);
	void *fn_arg;
	unsigned long start;
	unsigned long size;
	unsigned long align;
	unsigned long min_chunk;
	int max_threads;
	enum mtjob_affinity affinity;
	int node;
	int (*node_of)(unsigned long index, void *arg);
	gfp_t gfp;
	bool stop_when_slower;
	const char *name;
};

/**
 * struct mtjob_report - how mtjob_run_report() ran a job
 * @engine: the engine that ran the job.
 * @nr_threads: the threads that worked on the job: helpers that started,
 *	and the caller if it ran a chunk (Rust engine); padata does not say,
 *	so for it this is the threads it was asked for,
 *	min(max(&mtjob.size / max(&mtjob.min_chunk, &mtjob.align), 1),
 *	&mtjob.max_threads capped by "mtjob.max_threads="); 0 for an empty
 *	job or one refused with -EINVAL.
 * @nr_off_node: chunks of a node (%MTJOB_AFFINITY_NODE and the by-index
 *	affinities) that started on a CPU not in that node's cpumask_of_node();
 *	0 for the padata and serial engines, which do not count them.  The
 *	chunks of a by-index node without CPUs count as its nearest node's.
 * @helpers_stopped: the helpers stopped taking chunks because they slowed
 *	the job down (&mtjob.stop_when_slower; Rust engine only).
 */
struct mtjob_report {
	enum mtjob_engine engine;
	int nr_threads;
	unsigned long nr_off_node;
	bool helpers_stopped;
};

int __mtjob_run(const struct mtjob *job, struct mtjob_report *report,
		struct lockdep_map *map, struct lock_class_key *key,
		const char *class_name);
const char *mtjob_engine_name(enum mtjob_engine engine);
bool mtjob_may_use_helpers(gfp_t gfp);

/**
 * mtjob_run() - run a multithreaded job and wait for it
 * @job: the job; see &struct mtjob.  It is not changed.
 *
 * Splits [@job->start, @job->start + @job->size) into chunks and calls
 * @job->thread_fn on each, from the calling thread and from helpers on
 * workqueues.  Returns only after every helper has finished or was cancelled
 * before it started; then runs any chunk still left on the calling thread.
 * Must be called from a context that may sleep.
 *
 * With the Rust engine each call site has its own lockdep class (named after
 * the calling function): the helpers run under it and the wait for them
 * acquires it, so lockdep reports a caller that waits while holding a lock
 * its helpers take.  The padata engine is used only while booting: callers
 * that may run after init memory is freed get the Rust or serial engine.
 *
 * Return: 0 when every chunk succeeded, the first error a chunk returned, or
 * -EINVAL with nothing run when @job->thread_fn is NULL, @job->align is not a
 * power of two, @job->max_threads < 1, @job->start + @job->size overflows,
 * @job->affinity is unknown, @job->node is not a possible node for
 * %MTJOB_AFFINITY_NODE, @job->node_of is NULL for a by-index affinity, or
 * @job->gfp is neither %GFP_KERNEL nor %GFP_NOWAIT.
 */
#define mtjob_run(job)		mtjob_run_report(job, NULL)

/* The join's map of a call site of mtjob_run_report(), of its __mtjob_key. */
#ifdef CONFIG_LOCKDEP
#define __MTJOB_MAP_INIT	STATIC_LOCKDEP_MAP_INIT(__func__, &__mtjob_key)
#else
#define __MTJOB_MAP_INIT	{ }
#endif

/**
 * mtjob_run_report() - mtjob_run(), saying how the job ran
 * @job: the job
 * @report: if not NULL, always set on return, also when a chunk failed;
 *	for a job refused with -EINVAL: %MTJOB_ENGINE_SERIAL, no thread and
 *	no chunk.  See &struct mtjob_report.
 *
 * Return: as mtjob_run().
 */
#define mtjob_run_report(job, report)					\
({									\
	static struct lock_class_key __mtjob_key;			\
	static struct lockdep_map __mtjob_map = __MTJOB_MAP_INIT;	\
									\
	__mtjob_run(job, report, &__mtjob_map, &__mtjob_key, __func__);	\
})

/*
 * The Rust engine's entry points (kernel/mtjob_rust.rs, built with
 * CONFIG_RUST_MTJOB), for kernel/mtjob.c and its tests only.  Declared here,
 * where the Rust bindings see them, so that #[export] checks the Rust
 * definitions against these prototypes; declared without CONFIG_RUST_MTJOB
 * too: the calls are compiled out with IS_ENABLED() rather than #ifdef.
 */
int mtjob_rust_run(const struct mtjob *job, int max_threads,
		   struct mtjob_report *report, struct lockdep_map *map,
		   struct lock_class_key *key, const char *class_name);
int mtjob_rust_init(void);
/* Test hook for kernel/mtjob_test.c, built with CONFIG_MTJOB_KUNIT_TEST. */
unsigned int mtjob_rust_fail_nth_helper(unsigned int nth);

#endif /* _LINUX_MTJOB_H */
