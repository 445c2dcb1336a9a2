// SPDX-License-Identifier: GPL-2.0
/*
 * mtjob_run(): the C entry point of multithreaded jobs.
 *
 * It checks the job, then hands it to one of three engines:
 *  - "rust": kernel::mtjob (rust/kernel/mtjob/, glued in by
 *    kernel/mtjob_rust.rs), with CONFIG_MTJOB_RUST, the default then;
 *  - "padata": padata_do_multithreaded(), which is __init, so it is used only
 *    while the kernel is still booting (until the late_initcall_sync level
 *    closes it, waiting for the padata jobs still running) and only for
 *    jobs that may wait (GFP_KERNEL).  It is the default without
 *    CONFIG_MTJOB_RUST, so that kernels built without Rust keep the boot
 *    parallelism they had; with it, "mtjob.engine=padata" selects it for
 *    comparisons.  Jobs padata cannot take go to "rust" if built, else run
 *    serially;
 *  - "serial": the caller alone, one call over the whole range.
 */

#include <linux/bug.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/export.h>
#include <linux/gfp.h>
#include <linux/init.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/lockdep.h>
#include <linux/log2.h>
#include <linux/moduleparam.h>
#include <linux/mtjob.h>
#include <linux/nodemask.h>
#include <linux/numa.h>
#include <linux/overflow.h>
#include <linux/padata.h>
#include <linux/rwsem.h>
#include <linux/sched/clock.h>
#include <linux/smp.h>
#include <linux/string.h>
#include <linux/topology.h>

#define CREATE_TRACE_POINTS
#include <trace/events/mtjob.h>

static const char * const mtjob_engine_names[] = {
	[MTJOB_ENGINE_SERIAL]	= "serial",
	[MTJOB_ENGINE_RUST]	= "rust",
	[MTJOB_ENGINE_PADATA]	= "padata",
};

static enum mtjob_engine mtjob_engine =
	IS_ENABLED(CONFIG_MTJOB_RUST) ? MTJOB_ENGINE_RUST : MTJOB_ENGINE_PADATA;
static int mtjob_max_threads;

/**
 * mtjob_engine_name() - the name of an engine, for reports
 * @engine: an engine, as returned in &mtjob_report.engine
 *
 * Return: "serial", "rust" or "padata"; "?" for a value that is no engine.
 */
const char *mtjob_engine_name(enum mtjob_engine engine)
{
	if (engine >= ARRAY_SIZE(mtjob_engine_names))
		return "?";
	return mtjob_engine_names[engine];
}
EXPORT_SYMBOL_GPL(mtjob_engine_name);

static bool mtjob_padata_usable(void);
static enum mtjob_engine mtjob_pick_engine(gfp_t gfp);

/*
 * "rust" without the Rust engine, and "padata" once padata is closed, are
 * refused: the parameter reads back the engine jobs get.
 */
static int mtjob_engine_set(const char *val, const struct kernel_param *kp)
{
	int i = sysfs_match_string(mtjob_engine_names, val);

	if (i < 0 || (i == MTJOB_ENGINE_RUST && !IS_ENABLED(CONFIG_MTJOB_RUST)) ||
	    (i == MTJOB_ENGINE_PADATA && !mtjob_padata_usable()))
		return -EINVAL;
	WRITE_ONCE(mtjob_engine, i);
	return 0;
}

/* The engine a GFP_KERNEL job gets now: after boot, never "padata". */
static int mtjob_engine_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n",
			  mtjob_engine_name(mtjob_pick_engine(GFP_KERNEL)));
}

static const struct kernel_param_ops mtjob_engine_ops = {
	.set = mtjob_engine_set,
	.get = mtjob_engine_get,
};
module_param_cb(engine, &mtjob_engine_ops, NULL, 0644);
MODULE_PARM_DESC(engine, "Engine of mtjob_run(): rust (default with CONFIG_MTJOB_RUST), padata (boot only; the default without) or serial; reads back the engine jobs get now");
module_param_named(max_threads, mtjob_max_threads, int, 0644);
MODULE_PARM_DESC(max_threads, "Cap on the threads of every job, caller included (0: no cap)");

static int mtjob_check(const struct mtjob *job)
{
	unsigned long end;

	if (!job->thread_fn || job->max_threads < 1)
		return -EINVAL;
	if (!job->align || !is_power_of_2(job->align))
		return -EINVAL;
	if (check_add_overflow(job->start, job->size, &end))
		return -EINVAL;
	if (job->gfp != GFP_KERNEL && job->gfp != GFP_NOWAIT)
		return -EINVAL;
	switch (job->affinity) {
	case MTJOB_AFFINITY_NONE:
	case MTJOB_AFFINITY_INTERLEAVE:
		return 0;
	case MTJOB_AFFINITY_NODE:
		if (job->node < 0 || job->node >= MAX_NUMNODES ||
		    !node_possible(job->node))
			return -EINVAL;
		return 0;
	case MTJOB_AFFINITY_BY_INDEX:
	case MTJOB_AFFINITY_BY_INDEX_STRICT:
		return job->node_of ? 0 : -EINVAL;
	}
	return -EINVAL;
}

/*
 * One meaning for a chunk's return in every engine: negative is an error,
 * and one below -MAX_ERRNO is -EINVAL, as the Rust engine reads it.
 */
static int mtjob_chunk(const struct mtjob *job, unsigned long start,
		       unsigned long end)
{
	int ret = job->thread_fn(start, end, job->fn_arg);

	if (ret >= 0)
		return 0;
	return ret < -MAX_ERRNO ? -EINVAL : ret;
}

static int mtjob_run_serial(const struct mtjob *job,
			    struct mtjob_report *report)
{
	report->engine = MTJOB_ENGINE_SERIAL;
	report->nr_threads = 1;
	return mtjob_chunk(job, job->start, job->start + job->size);
}

#ifdef CONFIG_PADATA
struct mtjob_padata {
	const struct mtjob *job;
	atomic_t error;
};

static void __init mtjob_padata_chunk(unsigned long start, unsigned long end,
				      void *arg)
{
	struct mtjob_padata *p = arg;
	int ret;

	/* padata cannot stop handing out chunks: skip them after an error. */
	if (atomic_read(&p->error))
		return;
	ret = mtjob_chunk(p->job, start, end);
	if (ret)
		atomic_cmpxchg(&p->error, 0, ret);
}

static int __init mtjob_run_padata(const struct mtjob *job, int max_threads,
				   struct mtjob_report *report)
{
	struct mtjob_padata p = { .job = job, .error = ATOMIC_INIT(0) };
	struct padata_mt_job pjob = {
		.thread_fn	= mtjob_padata_chunk,
		.fn_arg		= &p,
		.start		= job->start,
		.size		= job->size,
		.align		= job->align,
		.min_chunk	= job->min_chunk,
		.max_threads	= max_threads,
		/* As upstream: deferred init (node) was not numa_aware. */
		.numa_aware	= job->affinity == MTJOB_AFFINITY_INTERLEAVE ||
				  job->affinity == MTJOB_AFFINITY_BY_INDEX ||
				  job->affinity == MTJOB_AFFINITY_BY_INDEX_STRICT,
	};
	unsigned long works;

	/* padata does not say how many helpers it got: report what it asks. */
	works = max(job->size / max(job->min_chunk, job->align), 1UL);
	report->engine = MTJOB_ENGINE_PADATA;
	report->nr_threads = min_t(unsigned long, works, max_threads);
	padata_do_multithreaded(&pjob);
	return atomic_read(&p.error);
}

/*
 * padata's multithreaded code is __init: jobs may only be in it while init
 * memory is not freed.  Padata jobs hold the rwsem for reading; the last
 * initcall level takes it for writing and closes padata for good, so no job
 * is still in padata when free_initmem() runs after it.
 */
static DECLARE_RWSEM(mtjob_padata_rwsem);
static bool mtjob_padata_closed;

static bool mtjob_padata_usable(void)
{
	return !READ_ONCE(mtjob_padata_closed);
}

static int __ref mtjob_try_padata(const struct mtjob *job, int max_threads,
				  struct mtjob_report *report, bool *ran)
{
	int ret = 0;

	*ran = false;
	/* Closing, or closed: not padata. */
	if (!down_read_trylock(&mtjob_padata_rwsem))
		return 0;
	if (!mtjob_padata_closed) {
		*ran = true;
		ret = mtjob_run_padata(job, max_threads, report);
	}
	up_read(&mtjob_padata_rwsem);
	return ret;
}

static int __init mtjob_padata_close(void)
{
	down_write(&mtjob_padata_rwsem);
	WRITE_ONCE(mtjob_padata_closed, true);
	up_write(&mtjob_padata_rwsem);
	return 0;
}
late_initcall_sync(mtjob_padata_close);
#else
static int mtjob_try_padata(const struct mtjob *job, int max_threads,
			    struct mtjob_report *report, bool *ran)
{
	*ran = false;
	return 0;
}

static bool mtjob_padata_usable(void)
{
	return false;
}
#endif

/*
 * Whether the caller runs on a CPU of @nid, as kernel::mtjob asks it: under
 * NUMA emulation a CPU is in every emulated node of its physical node.
 */
static bool mtjob_on_node(int nid)
{
	return nid == numa_node_id() ||
	       cpumask_test_cpu(raw_smp_processor_id(), cpumask_of_node(nid));
}

/*
 * The node kernel::mtjob places the one chunk of a by-index job of one
 * thread on: its first index's node, or NUMA_NO_NODE for none.
 * A node without CPUs counts as its nearest node with CPUs.
 */
static int mtjob_first_node(const struct mtjob *job)
{
	int nid = job->node_of(job->start, job->fn_arg);

	if (nid < 0 || nid >= MAX_NUMNODES || !node_possible(nid))
		return NUMA_NO_NODE;
	if (!node_state(nid, N_CPU))
		nid = numa_nearest_node(nid, N_CPU);
	return nid != NUMA_NO_NODE && node_state(nid, N_CPU) ? nid :
							      NUMA_NO_NODE;
}

/*
 * Whether the Rust engine would run a job of one thread on the caller, and
 * whether its chunk is then off its node: a job placed on no node, a
 * by-index job (its chunk is only counted when off its node), or a node or
 * strict job whose node is the caller's. Otherwise its chunk goes to a
 * helper on that node, through the engine.
 */
static bool mtjob_caller_alone(const struct mtjob *job, bool *off_node)
{
	int nid;

	*off_node = false;
	switch (job->affinity) {
	case MTJOB_AFFINITY_NODE:
		return mtjob_on_node(job->node);
	case MTJOB_AFFINITY_BY_INDEX:
	case MTJOB_AFFINITY_BY_INDEX_STRICT:
		nid = mtjob_first_node(job);
		if (nid == NUMA_NO_NODE || mtjob_on_node(nid))
			return true;
		*off_node = true;
		return job->affinity == MTJOB_AFFINITY_BY_INDEX;
	default:
		return true;
	}
}

/*
 * Whether kernel::mtjob's plan gives the job one thread before it reads the
 * CPU counts: one allowed, or, as padata counts them, fewer than two units of
 * max(min_chunk, align) in the range.
 */
static bool mtjob_one_thread(const struct mtjob *job, int max_threads)
{
	return max_threads == 1 || !IS_ENABLED(CONFIG_SMP) ||
	       job->size / max(job->min_chunk, job->align) < 2;
}

/*
 * A job of one thread that the Rust engine would run on the caller
 * (mtjob_caller_alone()): one call on the caller, as padata runs a job of
 * one work and as kernel::mtjob runs it after building its plan
 * (Job::run_alone()), without the cost of the plan. With lockdep the call is
 * followed by the join's acquisition of the call site's class, as that of
 * the engine's scope, so that lockdep learns the same ordering from it as
 * from the site's larger jobs.
 */
/*
 * The join's acquisition of the call site's class; nothing without lockdep.
 * Inlined, so that a report names the caller as the engine's join would.
 */
static __always_inline void mtjob_lockdep_join(struct lockdep_map *map)
{
	lock_map_acquire(map);
	lock_map_release(map);
}

static int mtjob_run_alone(const struct mtjob *job, bool off_node,
			   struct mtjob_report *report,
			   struct lockdep_map *map)
{
	int ret = mtjob_chunk(job, job->start, job->start + job->size);

	mtjob_lockdep_join(map);
	report->nr_threads = 1;
	report->nr_off_node = off_node;
	return ret;
}

/*
 * The engine for a job allocating with @gfp, now: padata only while booting
 * and for jobs that may wait; the Rust engine in its place when it is built.
 */
static enum mtjob_engine mtjob_pick_engine(gfp_t gfp)
{
	/* "rust" is refused, and not the default, without the Rust engine. */
	enum mtjob_engine engine = READ_ONCE(mtjob_engine);

	if (engine == MTJOB_ENGINE_PADATA &&
	    (!gfpflags_allow_blocking(gfp) || !mtjob_padata_usable()))
		engine = IS_ENABLED(CONFIG_MTJOB_RUST) ? MTJOB_ENGINE_RUST :
							  MTJOB_ENGINE_SERIAL;
	return engine;
}

/**
 * mtjob_may_use_helpers() - would mtjob_run() use helpers now?
 * @gfp: for a job with this &mtjob.gfp
 *
 * For callers that prepare work for helpers before the job exists (the
 * mmu_gather parallel free grows its gather only if helpers will free it).
 *
 * Return: false when the job would run on the serial engine (chosen with
 * "mtjob.engine=serial", or the only one left: padata after boot or for a
 * %GFP_NOWAIT job without CONFIG_MTJOB_RUST) or "mtjob.max_threads=1" makes
 * every job one thread; true otherwise.
 */
bool mtjob_may_use_helpers(gfp_t gfp)
{
	return mtjob_pick_engine(gfp) != MTJOB_ENGINE_SERIAL &&
	       READ_ONCE(mtjob_max_threads) != 1;
}

/**
 * __mtjob_run() - run a multithreaded job, see mtjob_run_report()
 * @job: the job
 * @report: where to say how it ran, or NULL
 * @map: the static lockdep map of the call site's join, of @key and named
 *	@class_name
 * @key: the static lock class key of the call site
 * @class_name: the name of their class, a static string
 *
 * Return: as mtjob_run().
 */
int __mtjob_run(const struct mtjob *job, struct mtjob_report *report,
		struct lockdep_map *map, struct lock_class_key *key,
		const char *class_name)
{
	int cap = READ_ONCE(mtjob_max_threads);
	struct mtjob_report rep = {};
	int max_threads = job->max_threads;
	bool ran = false, off_node;
	u64 start_ns = 0;
	int ret;

	might_sleep();
	ret = mtjob_check(job);
	if (ret) {
		/* Nothing ran: no engine, no thread. */
		if (report)
			*report = rep;
		return ret;
	}
	if (trace_mtjob_run_enabled())
		start_ns = local_clock();
	rep.engine = mtjob_pick_engine(job->gfp);
	if (!job->size)
		goto out;
	if (cap > 0)
		max_threads = min(max_threads, cap);

	if (rep.engine == MTJOB_ENGINE_RUST &&
	    mtjob_one_thread(job, max_threads) &&
	    mtjob_caller_alone(job, &off_node)) {
		ret = mtjob_run_alone(job, off_node, &rep, map);
		goto out;
	}

	if (rep.engine == MTJOB_ENGINE_PADATA)
		ret = mtjob_try_padata(job, max_threads, &rep, &ran);
	if (!ran && rep.engine != MTJOB_ENGINE_SERIAL &&
	    IS_ENABLED(CONFIG_MTJOB_RUST)) {
		ret = mtjob_rust_run(job, max_threads, &rep, map, key,
				     class_name);
		ran = true;
	}
	if (!ran)
		ret = mtjob_run_serial(job, &rep);
out:
	if (trace_mtjob_run_enabled())
		trace_mtjob_run(job, &rep, class_name, ret,
				start_ns ? local_clock() - start_ns : 0);
	if (report)
		*report = rep;
	return ret;
}
EXPORT_SYMBOL_GPL(__mtjob_run);

/*
 * Create kernel::mtjob's node workqueue before the first jobs (deferred
 * struct page init, one per node at once) need it, in every kernel with a
 * user of kernel::mtjob (CONFIG_RUST_MTJOB): Rust users need it without
 * CONFIG_MTJOB_RUST too.  Not on first use: creating a workqueue sleeps and
 * allocates with GFP_KERNEL, which a job's caller may not be able to do.
 * Workqueues exist by early_initcall time; their per-node pools follow once
 * the topology is known.
 */
static int __init mtjob_init(void)
{
	/*
	 * On failure jobs queue node-affine helpers on system_dfl_wq; the
	 * first such job warns once.
	 */
	if (IS_ENABLED(CONFIG_RUST_MTJOB))
		return mtjob_rust_init();
	return 0;
}
early_initcall(mtjob_init);
