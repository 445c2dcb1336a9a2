// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of mtjob_run(), through its C API.
 *
 * Chunk functions record what they saw; the assertions run in the test
 * thread after mtjob_run() returns, since helpers are not KUnit tasks.
 */

#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/debug_locks.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/limits.h>
#include <linux/moduleparam.h>
#include <linux/mtjob.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/isolation.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/topology.h>

#define MAX_CHUNKS	1024

struct chunk_rec {
	unsigned long start;
	unsigned long end;
	int node;
	bool wide;		/* on a kworker allowed off its node */
	bool worker;		/* on a kworker, not the caller */
};

struct rec {
	unsigned long base;		/* index of counts[0] */
	unsigned long nr;		/* entries of counts */
	atomic_t *counts;		/* calls per index */
	spinlock_t lock;
	unsigned int nr_chunks;
	struct chunk_rec chunks[MAX_CHUNKS];
	atomic_t active;		/* threads inside thread_fn */
	atomic_t max_active;
	atomic_t calls;
	unsigned int delay_us;		/* per chunk, to overlap threads */
	bool busy;			/* spin for delay_us instead of sleeping */
	bool fast_first;		/* the first call returns at once */
	unsigned long fail_at;		/* the chunk containing it fails */
	int fail_errno;
	atomic_t failed;		/* set by the failing chunk */
	atomic_t late;			/* chunks started after that */
};

static struct rec *rec_alloc(struct kunit *test, unsigned long base,
			     unsigned long nr)
{
	struct rec *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, r);
	r->counts = kunit_kcalloc(test, nr ?: 1, sizeof(*r->counts), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r->counts);
	r->base = base;
	r->nr = nr;
	spin_lock_init(&r->lock);
	r->fail_at = ULONG_MAX;
	return r;
}

static int rec_fn(unsigned long start, unsigned long end, void *arg)
{
	struct rec *r = arg;
	unsigned long i;
	int active, seen;
	bool first;

	first = atomic_inc_return(&r->calls) == 1;
	if (atomic_read(&r->failed))
		atomic_inc(&r->late);
	active = atomic_inc_return(&r->active);
	seen = atomic_read(&r->max_active);
	while (active > seen && !atomic_try_cmpxchg(&r->max_active, &seen, active))
		;

	spin_lock(&r->lock);
	if (r->nr_chunks < MAX_CHUNKS) {
		r->chunks[r->nr_chunks].start = start;
		r->chunks[r->nr_chunks].end = end;
		r->chunks[r->nr_chunks].node = numa_node_id();
		r->chunks[r->nr_chunks].worker =
			!!(current->flags & PF_WQ_WORKER);
		r->chunks[r->nr_chunks].wide =
			(current->flags & PF_WQ_WORKER) &&
			!cpumask_subset(current->cpus_ptr,
					cpumask_of_node(numa_node_id()));
	}
	r->nr_chunks++;
	spin_unlock(&r->lock);

	for (i = start; i < end && i - r->base < r->nr; i++)
		atomic_inc(&r->counts[i - r->base]);
	if (r->fast_first && first)
		goto out;
	if (r->delay_us && r->busy)
		udelay(r->delay_us);
	else if (r->delay_us)
		usleep_range(r->delay_us, r->delay_us + 100);
out:
	atomic_dec(&r->active);

	if (r->fail_at >= start && r->fail_at < end) {
		atomic_set(&r->failed, 1);
		return r->fail_errno;
	}
	return 0;
}

static struct mtjob job_of(struct rec *r, unsigned long start,
			   unsigned long size)
{
	return (struct mtjob) {
		.thread_fn	= rec_fn,
		.fn_arg		= r,
		.start		= start,
		.size		= size,
		.align		= 1,
		.max_threads	= 1,
		.gfp		= GFP_KERNEL,
		.name		= "mtjob_test",
	};
}

static void expect_each_once(struct kunit *test, struct rec *r)
{
	unsigned long i, bad = 0;

	for (i = 0; i < r->nr; i++)
		if (atomic_read(&r->counts[i]) != 1)
			bad++;
	KUNIT_EXPECT_EQ_MSG(test, bad, 0UL, "indices not run exactly once");
}

/* Every inner boundary aligned; inner chunks at least min_chunk. */
static void expect_shape(struct kunit *test, struct rec *r,
			 const struct mtjob *job)
{
	unsigned long end = job->start + job->size;
	unsigned int i;

	KUNIT_ASSERT_LE(test, r->nr_chunks, (unsigned int)MAX_CHUNKS);
	for (i = 0; i < r->nr_chunks; i++) {
		struct chunk_rec *c = &r->chunks[i];

		KUNIT_EXPECT_LT(test, c->start, c->end);
		if (c->start != job->start)
			KUNIT_EXPECT_EQ(test, c->start % job->align, 0UL);
		if (c->end != end)
			KUNIT_EXPECT_EQ(test, c->end % job->align, 0UL);
		if (c->start != job->start && c->end != end)
			KUNIT_EXPECT_GE(test, c->end - c->start, job->min_chunk);
	}
}

static void cover_one(struct kunit *test, unsigned long align,
		      unsigned long min_chunk, int threads,
		      enum mtjob_affinity aff)
{
	struct rec *r = rec_alloc(test, 1000003, 20011);
	struct mtjob job = job_of(r, r->base, r->nr);
	struct mtjob_report rep;

	job.align = align;
	job.min_chunk = min_chunk;
	job.max_threads = threads;
	job.affinity = aff;
	job.node = first_online_node;
	KUNIT_ASSERT_EQ(test, mtjob_run_report(&job, &rep), 0);
	expect_each_once(test, r);
	expect_shape(test, r, &job);
	KUNIT_EXPECT_GE(test, rep.nr_threads, 1);
	KUNIT_EXPECT_LE(test, rep.nr_threads, threads);
	if (IS_ENABLED(CONFIG_MTJOB_RUST))
		KUNIT_EXPECT_EQ(test, rep.engine, MTJOB_ENGINE_RUST);
	kunit_kfree(test, r->counts);
	kunit_kfree(test, r);
}

/* Every index exactly once, aligned boundaries, min_chunk, for all shapes. */
static void mtjob_test_cover(struct kunit *test)
{
	static const unsigned long aligns[] = { 1, 8, 512 };
	static const unsigned long min_chunks[] = { 0, 1, 100, 4096 };
	static const int threads[] = { 1, 2, 4, 8 };
	unsigned int a, m, t, aff;

	for (a = 0; a < ARRAY_SIZE(aligns); a++) {
		for (m = 0; m < ARRAY_SIZE(min_chunks); m++) {
			for (t = 0; t < ARRAY_SIZE(threads); t++) {
				for (aff = MTJOB_AFFINITY_NONE;
				     aff <= MTJOB_AFFINITY_NODE; aff++)
					cover_one(test, aligns[a], min_chunks[m],
						  threads[t], aff);
			}
		}
	}
}

static void mtjob_test_max_threads(struct kunit *test)
{
	int t;

	for (t = 1; t <= 6; t++) {
		struct rec *r = rec_alloc(test, 0, 4096);
		struct mtjob job = job_of(r, 0, r->nr);
		struct mtjob_report rep;

		r->delay_us = 2000;
		job.max_threads = t;
		KUNIT_ASSERT_EQ(test, mtjob_run_report(&job, &rep), 0);
		expect_each_once(test, r);
		KUNIT_EXPECT_LE(test, atomic_read(&r->max_active), t);
		KUNIT_EXPECT_LE(test, rep.nr_threads, t);
		/* The engine is parallel: with room for it, threads overlap. */
		if (IS_ENABLED(CONFIG_MTJOB_RUST) && t > 1 &&
		    num_online_cpus() > 1)
			KUNIT_EXPECT_GE(test, atomic_read(&r->max_active), 2);
	}
}

/* A thread cap far above the CPUs neither fails nor starts more threads. */
static void mtjob_test_many_threads(struct kunit *test)
{
	struct rec *r = rec_alloc(test, 0, 1 << 16);
	struct mtjob job = job_of(r, 0, r->nr);
	struct mtjob_report rep;

	job.max_threads = INT_MAX;
	KUNIT_ASSERT_EQ(test, mtjob_run_report(&job, &rep), 0);
	expect_each_once(test, r);
	KUNIT_EXPECT_LE(test, rep.nr_threads, (int)num_online_cpus());
}

static int first_node_with_cpus(void)
{
	return first_node(node_states[N_CPU]);
}

/*
 * All chunks of a node-affine job run on that node.  The chunks spin rather
 * than sleep: a woken worker of the (non-strict) unbound pool may be placed
 * on any CPU, which is the scheduler's choice, not the engine's.
 */
static void mtjob_test_affinity_node(struct kunit *test)
{
	int node;

	for_each_node_state(node, N_CPU) {
		struct rec *r = rec_alloc(test, 0, 1 << 14);
		struct mtjob job = job_of(r, 0, r->nr);
		struct mtjob_report rep;
		unsigned int i;

		r->delay_us = 200;
		r->busy = true;
		job.max_threads = 4;
		job.affinity = MTJOB_AFFINITY_NODE;
		job.node = node;
		KUNIT_ASSERT_EQ(test, mtjob_run_report(&job, &rep), 0);
		expect_each_once(test, r);
		/* No more threads than the node has CPUs. */
		KUNIT_EXPECT_LE(test, rep.nr_threads, nr_cpus_node(node));
		for (i = 0; i < min(r->nr_chunks, MAX_CHUNKS); i++)
			KUNIT_EXPECT_EQ_MSG(test, r->chunks[i].node, node,
					    "chunk [%lu, %lu) off its node",
					    r->chunks[i].start, r->chunks[i].end);
		/* And the engine's own count agrees. */
		if (rep.engine == MTJOB_ENGINE_RUST)
			KUNIT_EXPECT_EQ(test, rep.nr_off_node, 0UL);
	}
}

/* Interleaved helpers reach every node with CPUs. */
static void mtjob_test_affinity_interleave(struct kunit *test)
{
	struct rec *r = rec_alloc(test, 0, 1 << 14);
	struct mtjob job = job_of(r, 0, r->nr);
	nodemask_t seen = NODE_MASK_NONE;
	unsigned int i;

	if (num_node_state(N_CPU) < 2)
		kunit_skip(test, "needs 2 nodes with CPUs");
	r->delay_us = 2000;
	job.max_threads = 2 * num_node_state(N_CPU);
	job.affinity = MTJOB_AFFINITY_INTERLEAVE;
	KUNIT_ASSERT_EQ(test, mtjob_run(&job), 0);
	expect_each_once(test, r);
	for (i = 0; i < min(r->nr_chunks, MAX_CHUNKS); i++)
		node_set(r->chunks[i].node, seen);
	KUNIT_EXPECT_TRUE(test, nodes_equal(seen, node_states[N_CPU]));
}

struct by_index {
	struct rec *r;
	unsigned long half;
	int lo, hi;
};

static int by_index_fn(unsigned long start, unsigned long end, void *arg)
{
	struct by_index *b = arg;

	return rec_fn(start, end, b->r);
}

static int by_index_node(unsigned long index, void *arg)
{
	struct by_index *b = arg;

	return index < b->half ? b->lo : b->hi;
}

/* Helpers queued on node N take node N's chunks first. */
static void mtjob_test_affinity_by_index(struct kunit *test)
{
	struct by_index b = { .half = 1 << 13 };
	unsigned int i, local[2] = { 0, 0 }, total[2] = { 0, 0 };
	struct mtjob job;

	if (num_node_state(N_CPU) < 2)
		kunit_skip(test, "needs 2 nodes with CPUs");
	b.lo = first_node_with_cpus();
	b.hi = next_node_in(b.lo, node_states[N_CPU]);
	b.r = rec_alloc(test, 0, 1 << 14);
	b.r->delay_us = 2000;
	job = job_of(b.r, 0, b.r->nr);
	job.thread_fn = by_index_fn;
	job.fn_arg = &b;
	job.max_threads = 4;
	job.affinity = MTJOB_AFFINITY_BY_INDEX;
	job.node_of = by_index_node;
	KUNIT_ASSERT_EQ(test, mtjob_run(&job), 0);
	expect_each_once(test, b.r);
	for (i = 0; i < min(b.r->nr_chunks, MAX_CHUNKS); i++) {
		struct chunk_rec *c = &b.r->chunks[i];
		int want = c->start < b.half ? 0 : 1;

		total[want]++;
		local[want] += c->node == (want ? b.hi : b.lo);
	}
	/* Most of each node's chunks ran on that node. */
	KUNIT_EXPECT_GT(test, 2 * local[0], total[0]);
	KUNIT_EXPECT_GT(test, 2 * local[1], total[1]);
}

static void mtjob_test_error(struct kunit *test)
{
	int t;

	for (t = 1; t <= 4; t++) {
		struct rec *r = rec_alloc(test, 0, 10000);
		struct mtjob job = job_of(r, 0, r->nr);

		r->fail_at = 1234;
		r->fail_errno = -ENOSPC;
		r->delay_us = 1000;
		job.max_threads = t;
		KUNIT_EXPECT_EQ(test, mtjob_run(&job), -ENOSPC);
		/* One thread (t == 1, or one CPU): one chunk, as padata. */
		if (t == 1 || r->nr_chunks == 1) {
			KUNIT_EXPECT_EQ(test, r->nr_chunks, 1U);
			KUNIT_EXPECT_EQ(test, r->chunks[0].start, 0UL);
			KUNIT_EXPECT_EQ(test, r->chunks[0].end, r->nr);
			continue;
		}
		/* The job stopped: the chunks after the failing one did not all run. */
		KUNIT_EXPECT_LT(test, atomic_read(&r->counts[r->nr - 1]), 1);
	}
}

/* A positive return from a chunk is success, in every engine. */
static void mtjob_test_positive_return(struct kunit *test)
{
	int t;

	for (t = 1; t <= 4; t += 3) {
		struct rec *r = rec_alloc(test, 0, 10000);
		struct mtjob job = job_of(r, 0, r->nr);

		r->fail_at = 1234;
		r->fail_errno = 1;
		job.max_threads = t;
		KUNIT_EXPECT_EQ(test, mtjob_run(&job), 0);
		expect_each_once(test, r);
	}
}

static void mtjob_test_einval(struct kunit *test)
{
	struct rec *r = rec_alloc(test, 0, 100);
	struct mtjob_report rep;
	struct mtjob bad[12];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		bad[i] = job_of(r, 0, r->nr);
	bad[0].thread_fn = NULL;
	bad[1].align = 0;
	bad[2].align = 3;
	bad[3].max_threads = 0;
	bad[4].start = ULONG_MAX - 5;
	bad[4].size = 10;
	bad[5].affinity = MTJOB_AFFINITY_BY_INDEX;
	bad[6].affinity = MTJOB_AFFINITY_NODE;
	bad[6].node = NUMA_NO_NODE;
	bad[7].affinity = 42;
	bad[8].max_threads = -3;
	bad[9].affinity = MTJOB_AFFINITY_BY_INDEX_STRICT;
	bad[10].gfp = 0;
	bad[11].gfp = GFP_ATOMIC;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		rep.nr_threads = -1;
		rep.nr_off_node = 1;
		KUNIT_EXPECT_EQ_MSG(test, mtjob_run_report(&bad[i], &rep),
				    -EINVAL, "bad job %u", i);
		/* Nothing ran, and the report says so. */
		KUNIT_EXPECT_EQ_MSG(test, rep.nr_threads, 0, "bad job %u", i);
		KUNIT_EXPECT_EQ_MSG(test, rep.nr_off_node, 0UL, "bad job %u", i);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&r->calls), 0);
}

static void mtjob_test_small(struct kunit *test)
{
	struct rec *r = rec_alloc(test, 7, 1);
	struct mtjob job = job_of(r, 7, 0);
	struct mtjob_report rep;

	job.max_threads = 4;
	KUNIT_EXPECT_EQ(test, mtjob_run_report(&job, &rep), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->calls), 0);

	job.size = 1;
	job.align = 64;
	job.min_chunk = 1000;
	KUNIT_EXPECT_EQ(test, mtjob_run_report(&job, &rep), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&r->calls), 1);
	KUNIT_EXPECT_EQ(test, r->chunks[0].start, 7UL);
	KUNIT_EXPECT_EQ(test, r->chunks[0].end, 8UL);
	KUNIT_EXPECT_EQ(test, rep.nr_threads, 1);
}

/*
 * A job of one thread placed on no node is one call over the whole range on
 * the caller (mtjob_run_alone() on the Rust engine), whatever its alignment,
 * minimum chunk and gfp, and returns its chunk's error as a larger job does;
 * so is one of up to 8 threads whose range holds fewer than two minimum
 * chunks.
 */
static void mtjob_test_one_thread(struct kunit *test)
{
	static const enum mtjob_affinity affs[] = {
		MTJOB_AFFINITY_NONE, MTJOB_AFFINITY_INTERLEAVE,
	};
	static const int errs[] = { 0, -ENOSPC, -MAX_ERRNO - 1 };
	unsigned int a, e, small;

	for (small = 0; small < 2; small++) {
		for (a = 0; a < ARRAY_SIZE(affs); a++) {
			for (e = 0; e < ARRAY_SIZE(errs); e++) {
				struct rec *r = rec_alloc(test, 100, 5000);
				struct mtjob job = job_of(r, 100, 5000);
				struct mtjob_report rep;
				int want = errs[e] < -MAX_ERRNO ? -EINVAL :
								 errs[e];

				job.align = 64;
				job.min_chunk = small ? 4096 : 7;
				job.max_threads = small ? 8 : 1;
				job.affinity = affs[a];
				job.gfp = e == 1 ? GFP_NOWAIT : GFP_KERNEL;
				r->fail_at = errs[e] ? 4000 : ULONG_MAX;
				r->fail_errno = errs[e];
				KUNIT_EXPECT_EQ(test,
						mtjob_run_report(&job, &rep),
						want);
				KUNIT_ASSERT_EQ(test, atomic_read(&r->calls), 1);
				KUNIT_EXPECT_EQ(test, r->chunks[0].start, 100UL);
				KUNIT_EXPECT_EQ(test, r->chunks[0].end, 5100UL);
				KUNIT_EXPECT_FALSE(test, r->chunks[0].worker);
				KUNIT_EXPECT_EQ(test, rep.nr_threads, 1);
				KUNIT_EXPECT_EQ(test, rep.nr_off_node, 0UL);
				if (IS_ENABLED(CONFIG_MTJOB_RUST))
					KUNIT_EXPECT_EQ(test, rep.engine,
							MTJOB_ENGINE_RUST);
				if (!errs[e])
					expect_each_once(test, r);
			}
		}
	}
}

/*
 * The edge of a job of one thread: a range of two units of
 * max(min_chunk, align) is two chunks when two threads may run it, one
 * index less is one chunk on the caller, as padata counts them.
 */
static void mtjob_test_one_unit_edge(struct kunit *test)
{
	unsigned int less;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs 2 CPUs");
	for (less = 0; less < 2; less++) {
		struct rec *r = rec_alloc(test, 0, 128 - less);
		struct mtjob job = job_of(r, 0, r->nr);
		struct mtjob_report rep;

		job.min_chunk = 64;
		job.max_threads = 2;
		KUNIT_ASSERT_EQ(test, mtjob_run_report(&job, &rep), 0);
		expect_each_once(test, r);
		KUNIT_EXPECT_EQ(test, r->nr_chunks, less ? 1U : 2U);
		if (less) {
			KUNIT_EXPECT_FALSE(test, r->chunks[0].worker);
			KUNIT_EXPECT_EQ(test, rep.nr_threads, 1);
		}
	}
}

/* Ranges that end at ULONG_MAX, where rounding a boundary up overflows. */
static void mtjob_test_ulong_max(struct kunit *test)
{
	static const unsigned long sizes[] = { 1, 1000, 65536 };
	unsigned int s;

	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		struct rec *r = rec_alloc(test, ULONG_MAX - sizes[s], sizes[s]);
		struct mtjob job = job_of(r, r->base, r->nr);

		job.align = 64;
		job.min_chunk = 100;
		job.max_threads = 4;
		KUNIT_ASSERT_EQ(test, mtjob_run(&job), 0);
		expect_each_once(test, r);
		expect_shape(test, r, &job);
	}
}

struct concurrent {
	struct kunit *test;
	struct rec *r;
	struct mtjob job;
	struct mtjob_report rep;
	int ret;
	struct completion done;
	int (*fn)(void *arg);	/* run_bound(): what its kthread runs */
	int node;		/* run_bound(): where */
	bool unbound;		/* run_bound()'s kthread may leave @node */
};

static int concurrent_fn(void *arg)
{
	struct concurrent *c = arg;

	c->ret = mtjob_run_report(&c->job, &c->rep);
	complete(&c->done);
	return 0;
}

static int bound_fn(void *arg)
{
	struct concurrent *c = arg;

	c->unbound = !cpumask_subset(current->cpus_ptr,
				     cpumask_of_node(c->node));
	return c->fn(c);
}

/*
 * Runs @fn(@c) in a kthread on the CPUs of @node; waits for c->done.  A
 * kthread is affined to its node when it starts (kthread_affine_node()),
 * which replaces an affinity set before its first wakeup: one made with
 * kthread_create() and set_cpus_allowed_ptr() would run anywhere.
 */
static void run_bound(struct kunit *test, int (*fn)(void *),
		      struct concurrent *c, int node)
{
	struct task_struct *t;

	/* With no housekeeping CPU there, kthread() affines it elsewhere. */
	if (!cpumask_intersects(cpumask_of_node(node),
				housekeeping_cpumask(HK_TYPE_DOMAIN)))
		kunit_skip(test, "node %d has no housekeeping CPU", node);
	c->ret = -EINPROGRESS;
	c->fn = fn;
	c->node = node;
	init_completion(&c->done);
	t = kthread_create_on_node(bound_fn, c, node, "mtjob_test/bound");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	wake_up_process(t);
	wait_for_completion(&c->done);
	KUNIT_EXPECT_FALSE_MSG(test, c->unbound,
			       "the caller may run off node %d", node);
}

/* Several jobs at once, from different kthreads. */
static void mtjob_test_concurrent(struct kunit *test)
{
	struct concurrent c[4];
	int i;

	for (i = 0; i < ARRAY_SIZE(c); i++) {
		struct task_struct *t;

		c[i].r = rec_alloc(test, i * 100000UL, 30000 + i);
		c[i].r->delay_us = 50;
		c[i].job = job_of(c[i].r, c[i].r->base, c[i].r->nr);
		c[i].job.max_threads = 3;
		c[i].job.align = 16;
		c[i].job.affinity = i % 3;
		c[i].job.node = first_node_with_cpus();
		c[i].ret = -EINPROGRESS;
		init_completion(&c[i].done);
		t = kthread_run(concurrent_fn, &c[i], "mtjob_test/%d", i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	}
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		wait_for_completion(&c[i].done);
		KUNIT_EXPECT_EQ(test, c[i].ret, 0);
		expect_each_once(test, c[i].r);
	}
}

/*
 * Strict by-index affinity: the chunks of node N run on node N.  The caller
 * is a kthread bound to the first node, so it may take that node's chunks;
 * the chunks spin so that the scheduler has no reason to move a helper.
 * Where a chunk ran is partly chance; that the helper could run nowhere
 * else is not, and is checked too.
 */
static void mtjob_test_affinity_by_index_strict(struct kunit *test)
{
	struct by_index b = { .half = 1 << 13 };
	struct concurrent c;
	unsigned int i;
	int threads;

	if (num_node_state(N_CPU) < 2)
		kunit_skip(test, "needs 2 nodes with CPUs");
	b.lo = first_node_with_cpus();
	b.hi = next_node_in(b.lo, node_states[N_CPU]);
	for (threads = 1; threads <= 4; threads += 3) {
		b.r = rec_alloc(test, 0, 1 << 14);
		b.r->delay_us = 300;
		b.r->busy = true;
		c.job = job_of(b.r, 0, b.r->nr);
		c.job.thread_fn = by_index_fn;
		c.job.fn_arg = &b;
		c.job.max_threads = threads;
		c.job.affinity = MTJOB_AFFINITY_BY_INDEX_STRICT;
		c.job.node_of = by_index_node;
		run_bound(test, concurrent_fn, &c, b.lo);
		KUNIT_ASSERT_EQ(test, c.ret, 0);
		expect_each_once(test, b.r);
		if (threads == 1)	/* no helper: the caller runs every chunk */
			continue;
		for (i = 0; i < min(b.r->nr_chunks, MAX_CHUNKS); i++) {
			struct chunk_rec *ch = &b.r->chunks[i];

			KUNIT_EXPECT_EQ_MSG(test, ch->node,
					    ch->start < b.half ? b.lo : b.hi,
					    "chunk [%lu, %lu) off its node",
					    ch->start, ch->end);
			KUNIT_EXPECT_FALSE_MSG(test, ch->wide,
					       "chunk [%lu, %lu) on a helper allowed off node %d",
					       ch->start, ch->end, ch->node);
		}
	}
}

static int all_hi_node(unsigned long index, void *arg)
{
	struct by_index *b = arg;

	return b->hi;
}

/* Keeps its CPU until stopped, above every SCHED_NORMAL kworker. */
static int spinner_fn(void *arg)
{
	atomic_t *running = arg;

	atomic_inc(running);
	while (!kthread_should_stop())
		cpu_relax();
	return 0;
}

/* Runs b->r's strict nowait job from a kthread bound to node b->lo. */
static void strict_nowait_run(struct kunit *test, struct by_index *b,
			      struct concurrent *c)
{
	b->r = rec_alloc(test, 0, 1 << 12);
	c->job = job_of(b->r, 0, b->r->nr);
	c->job.thread_fn = by_index_fn;
	c->job.fn_arg = b;
	c->job.max_threads = 4;
	c->job.affinity = MTJOB_AFFINITY_BY_INDEX_STRICT;
	c->job.node_of = all_hi_node;
	c->job.gfp = GFP_NOWAIT;
	run_bound(test, concurrent_fn, c, b->lo);
}

/*
 * A nowait strict job whose caller (bound to another node) has no chunk of
 * its own: it cancels the helpers that did not start yet instead of waiting
 * for them, and runs their chunks after the join.  Every index still runs
 * exactly once.  First with the other node's CPUs taken by SCHED_FIFO
 * spinners, so that no helper can start there: the caller must have run
 * every chunk, off its node, alone; then 40 times on an idle machine, where
 * how often helpers were cancelled is timing, so it is only reported.
 */
static void mtjob_test_strict_nowait(struct kunit *test)
{
	struct by_index b = { .half = 0 };
	atomic_t running = ATOMIC_INIT(0);
	struct task_struct **spinners;
	unsigned long off = 0;
	struct task_struct *t;
	struct concurrent c;
	int i, cpu, n = 0;

	if (num_node_state(N_CPU) < 2)
		kunit_skip(test, "needs 2 nodes with CPUs");
	b.lo = first_node_with_cpus();
	b.hi = next_node_in(b.lo, node_states[N_CPU]);

	spinners = kunit_kcalloc(test, nr_cpu_ids, sizeof(*spinners), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, spinners);
	for_each_cpu_and(cpu, cpumask_of_node(b.hi), cpu_online_mask) {
		t = kthread_create_on_cpu(spinner_fn, &running, cpu, "mtjob_spin/%u");
		KUNIT_ASSERT_FALSE(test, IS_ERR(t));
		sched_set_fifo(t);
		wake_up_process(t);
		spinners[n++] = t;
	}
	while (atomic_read(&running) < n)
		usleep_range(100, 200);
	strict_nowait_run(test, &b, &c);
	for (i = 0; i < n; i++)
		kthread_stop(spinners[i]);
	KUNIT_ASSERT_EQ(test, c.ret, 0);
	expect_each_once(test, b.r);
	if (c.rep.engine == MTJOB_ENGINE_RUST) {
		KUNIT_EXPECT_EQ(test, c.rep.nr_threads, 1);
		KUNIT_EXPECT_EQ(test, c.rep.nr_off_node, (unsigned long)b.r->nr_chunks);
	}
	kunit_kfree(test, b.r->counts);
	kunit_kfree(test, b.r);

	for (i = 0; i < 40; i++) {
		strict_nowait_run(test, &b, &c);
		KUNIT_ASSERT_EQ(test, c.ret, 0);
		expect_each_once(test, b.r);
		off += c.rep.nr_off_node;
		kunit_kfree(test, b.r->counts);
		kunit_kfree(test, b.r);
	}
	kunit_info(test, "%lu chunks ran off their node over 40 jobs\n", off);
}

static int nowait_node(unsigned long index, void *arg)
{
	int first = first_node_with_cpus();

	return index < 2048 ? first : next_node_in(first, node_states[N_CPU]);
}

/*
 * nowait: the engine's allocations use GFP_NOWAIT (the mmu_gather free path);
 * the job still covers every index, by index as well, and runs in parallel.
 */
static void mtjob_test_nowait(struct kunit *test)
{
	enum mtjob_affinity aff;

	for (aff = MTJOB_AFFINITY_NONE; aff <= MTJOB_AFFINITY_BY_INDEX;
	     aff++) {
		struct rec *r = rec_alloc(test, 0, 4096);
		struct mtjob job = job_of(r, 0, r->nr);
		struct mtjob_report rep;

		if (aff == MTJOB_AFFINITY_NODE)
			continue;
		r->delay_us = 2000;
		job.max_threads = 4;
		job.gfp = GFP_NOWAIT;
		job.affinity = aff;
		job.node_of = aff == MTJOB_AFFINITY_BY_INDEX ? nowait_node :
								NULL;
		KUNIT_ASSERT_EQ(test, mtjob_run_report(&job, &rep), 0);
		expect_each_once(test, r);
		KUNIT_EXPECT_LE(test, rep.nr_threads, 4);
		if (IS_ENABLED(CONFIG_MTJOB_RUST) && num_online_cpus() > 1)
			KUNIT_EXPECT_GE(test, atomic_read(&r->max_active), 2);
	}
}

/*
 * struct mtjob.stop_when_slower through mtjob_run_report(): the caller's
 * probe (its first call, 8 indices) returns at once and every other chunk
 * (about 31 indices) sleeps 20 ms, so an index costs the threads about
 * 320 us each, where the probe took microseconds (a probe preempted for up
 * to 2.5 ms still leaves the stop due).  The Rust engine stops the helpers
 * once one ran a chunk: the caller's check after its next chunk sees it.  A
 * stopped helper runs the chunk it has and at most one it took just before;
 * without the stop it would take about half of the 8.  Without
 * stop_when_slower, or on another engine, nothing stops.  Every index runs
 * once either way.
 */
static void mtjob_test_stop_when_slower(struct kunit *test)
{
	int pass;

	for (pass = 0; pass < 2; pass++) {
		struct rec *r = rec_alloc(test, 0, 256);
		struct mtjob job = job_of(r, 0, r->nr);
		struct mtjob_report rep;
		unsigned int i, helper = 0;

		r->delay_us = 20000;
		r->fast_first = true;
		job.min_chunk = 8;
		job.max_threads = 2;
		job.stop_when_slower = pass == 0;
		KUNIT_ASSERT_EQ(test, mtjob_run_report(&job, &rep), 0);
		expect_each_once(test, r);
		for (i = 0; i < min(r->nr_chunks, MAX_CHUNKS); i++)
			helper += r->chunks[i].worker;
		KUNIT_EXPECT_EQ(test, rep.helpers_stopped,
				job.stop_when_slower && helper > 0 &&
				rep.engine == MTJOB_ENGINE_RUST);
		if (rep.helpers_stopped)
			KUNIT_EXPECT_LE(test, helper, 2);
	}
}

/*
 * A job of one thread is one chunk. Placed on a node (node and strict
 * affinities), it runs on that node: on the caller when it is there, else on
 * a helper there. A by-index one runs on the caller wherever it is, and
 * counts as off its node when the caller is elsewhere. Here the chunk's node
 * is @hi and the caller is kept on @lo, then on @hi.
 */
static void mtjob_test_placed_one_thread(struct kunit *test)
{
	static const enum mtjob_affinity affs[] = {
		MTJOB_AFFINITY_NODE, MTJOB_AFFINITY_BY_INDEX,
		MTJOB_AFFINITY_BY_INDEX_STRICT,
	};
	struct by_index b = { .half = 0 };
	unsigned int a, on_hi;

	if (num_node_state(N_CPU) < 2)
		kunit_skip(test, "needs 2 nodes with CPUs");
	if (!IS_ENABLED(CONFIG_MTJOB_RUST))
		kunit_skip(test, "padata runs a job of one thread on the caller");
	b.lo = first_node_with_cpus();
	b.hi = next_node_in(b.lo, node_states[N_CPU]);
	/* Under numa=fake a CPU is on every emulated node of its own. */
	if (cpumask_intersects(cpumask_of_node(b.lo), cpumask_of_node(b.hi)))
		kunit_skip(test, "needs nodes that share no CPU");
	for (a = 0; a < ARRAY_SIZE(affs); a++) {
		for (on_hi = 0; on_hi < 2; on_hi++) {
			bool by_index = affs[a] == MTJOB_AFFINITY_BY_INDEX;
			int caller = on_hi ? b.hi : b.lo;
			const struct cpumask *mask;
			struct mtjob_report rep;
			struct mtjob job;

			b.r = rec_alloc(test, 0, 1 << 10);
			job = job_of(b.r, 0, b.r->nr);
			job.thread_fn = by_index_fn;
			job.fn_arg = &b;
			job.max_threads = 1;
			job.affinity = affs[a];
			job.node = b.hi;
			job.node_of = by_index_node;
			mask = cpumask_of_node(caller);
			KUNIT_ASSERT_EQ(test,
					set_cpus_allowed_ptr(current, mask), 0);
			KUNIT_EXPECT_EQ(test, mtjob_run_report(&job, &rep), 0);
			set_cpus_allowed_ptr(current, cpu_possible_mask);
			expect_each_once(test, b.r);
			KUNIT_ASSERT_EQ(test, b.r->nr_chunks, 1U);
			KUNIT_EXPECT_EQ(test, b.r->chunks[0].node,
					by_index ? caller : b.hi);
			/* A helper only for a placed chunk off the caller. */
			KUNIT_EXPECT_EQ(test, b.r->chunks[0].worker,
					!by_index && !on_hi);
			KUNIT_EXPECT_EQ(test, rep.nr_off_node,
					by_index && !on_hi ? 1UL : 0UL);
			KUNIT_EXPECT_EQ(test, rep.nr_threads, 1);
			KUNIT_EXPECT_EQ(test, rep.engine, MTJOB_ENGINE_RUST);
		}
	}
}

static int first_node_without_cpus(void)
{
	int node;

	for_each_node_state(node, N_MEMORY)
		if (!node_state(node, N_CPU))
			return node;
	return NUMA_NO_NODE;
}

/* Thirds of the range on three nodes: @lo, @hi and @cpuless. */
struct thirds {
	struct rec *r;
	int node[3];
	/* The nodes of the CPUs that chunks of node[2] started on. */
	nodemask_t cpuless_ran_on;
};

static int thirds_fn(unsigned long start, unsigned long end, void *arg)
{
	struct thirds *t = arg;

	if (3 * (start - t->r->base) / t->r->nr >= 2)
		node_set(cpu_to_node(raw_smp_processor_id()), t->cpuless_ran_on);
	return rec_fn(start, end, t->r);
}

static int thirds_node(unsigned long index, void *arg)
{
	struct thirds *t = arg;

	return t->node[min(3 * (index - t->r->base) / t->r->nr, 2UL)];
}

/*
 * Every index on the last of the three nodes (the one without CPUs in our
 * QEMU setup) or on none: no node with CPUs owns a segment.
 */
static int lone_node(unsigned long index, void *arg)
{
	struct thirds *t = arg;

	return index & 1 ? NUMA_NO_NODE : t->node[2];
}

/*
 * A node with memory and no CPU: node-affine jobs on it run on the caller,
 * by-index jobs run its chunks somewhere, strict ones too, also with fewer
 * threads than nodes; a node job's chunks count as off their node.
 */
static void mtjob_test_cpuless_node(struct kunit *test)
{
	static const enum mtjob_affinity affs[] = {
		MTJOB_AFFINITY_NODE, MTJOB_AFFINITY_BY_INDEX,
		MTJOB_AFFINITY_BY_INDEX_STRICT,
	};
	struct thirds t;
	unsigned int a;
	int threads;

	t.node[2] = first_node_without_cpus();
	if (t.node[2] == NUMA_NO_NODE)
		kunit_skip(test, "needs a node with memory and no CPU");
	t.node[0] = first_node_with_cpus();
	t.node[1] = next_node_in(t.node[0], node_states[N_CPU]);
	for (a = 0; a < ARRAY_SIZE(affs); a++) {
		for (threads = 1; threads <= 4; threads++) {
			struct mtjob job;
			struct mtjob_report rep;

			t.r = rec_alloc(test, 3000, 3 << 12);
			t.r->delay_us = 100;
			job = job_of(t.r, t.r->base, t.r->nr);
			job.thread_fn = thirds_fn;
			job.fn_arg = &t;
			job.max_threads = threads;
			job.affinity = affs[a];
			job.node = t.node[2];
			job.node_of = thirds_node;
			KUNIT_ASSERT_EQ(test, mtjob_run_report(&job, &rep), 0);
			expect_each_once(test, t.r);
			/*
			 * The caller is off the node of a node job on the
			 * CPU-less node; by-index jobs give that node's chunks
			 * to its nearest node (mtjob_test_cpuless_nearest).
			 */
			if (rep.engine == MTJOB_ENGINE_RUST &&
			    affs[a] == MTJOB_AFFINITY_NODE)
				KUNIT_EXPECT_GT_MSG(test, rep.nr_off_node, 0UL,
						    "affinity %d, %d threads",
						    affs[a], threads);
			KUNIT_EXPECT_LE(test, rep.nr_off_node,
					(unsigned long)t.r->nr_chunks);
			if (affs[a] == MTJOB_AFFINITY_NODE)
				KUNIT_EXPECT_EQ(test, rep.nr_threads, 1);
			kunit_kfree(test, t.r->counts);
			kunit_kfree(test, t.r);
		}
	}
}

static void mtjob_test_cpuless_nearest(struct kunit *test)
{
	/*
	 * A node without CPUs in a strict by-index job with a thread for
	 * each node: its chunks belong to its nearest node with CPUs
	 * (numa_nearest_node()), so a helper there runs them and every chunk
	 * runs on its node.  The caller is kept on the first node with CPUs,
	 * and the QEMU setup's distances make the second node the nearest,
	 * so the caller's own chunks tell nothing.
	 */
	struct thirds t;
	nodemask_t near;
	int threads, nearest;

	t.node[2] = first_node_without_cpus();
	if (t.node[2] == NUMA_NO_NODE)
		kunit_skip(test, "needs a node with memory and no CPU");
	if (!IS_ENABLED(CONFIG_MTJOB_RUST))
		kunit_skip(test, "padata does not place chunks by node");
	t.node[0] = first_node_with_cpus();
	t.node[1] = next_node_in(t.node[0], node_states[N_CPU]);
	nearest = numa_nearest_node(t.node[2], N_CPU);
	KUNIT_ASSERT_TRUE(test, node_state(nearest, N_CPU));
	if (nearest == t.node[0])
		kunit_skip(test, "needs distances that make another node nearest");
	near = nodemask_of_node(nearest);
	KUNIT_ASSERT_EQ(test, set_cpus_allowed_ptr(current,
						   cpumask_of_node(t.node[0])), 0);
	for (threads = 2; threads <= 4; threads++) {
		struct mtjob job;
		struct mtjob_report rep;

		t.r = rec_alloc(test, 3000, 3 << 12);
		t.r->delay_us = 100;
		job = job_of(t.r, t.r->base, t.r->nr);
		job.thread_fn = thirds_fn;
		job.fn_arg = &t;
		job.max_threads = threads;
		job.affinity = MTJOB_AFFINITY_BY_INDEX_STRICT;
		job.node_of = thirds_node;
		nodes_clear(t.cpuless_ran_on);
		KUNIT_ASSERT_EQ(test, mtjob_run_report(&job, &rep), 0);
		expect_each_once(test, t.r);
		KUNIT_EXPECT_EQ(test, rep.engine, MTJOB_ENGINE_RUST);
		KUNIT_EXPECT_TRUE_MSG(test, nodes_equal(t.cpuless_ran_on, near),
				      "%d threads: node %d's chunks ran on %*pbl, not on node %d",
				      threads, t.node[2],
				      nodemask_pr_args(&t.cpuless_ran_on), nearest);
		KUNIT_EXPECT_EQ(test, rep.nr_off_node, 0UL);
		kunit_kfree(test, t.r->counts);
		kunit_kfree(test, t.r);
	}
	set_cpus_allowed_ptr(current, cpu_possible_mask);
}

struct hotplug {
	struct completion done;
	bool stop;
	unsigned int cycles;
	int err;
};

/* Offline CPUs from the last down to CPU 1, then online them again. */
static int hotplug_fn(void *arg)
{
	struct hotplug *h = arg;
	int cpu, ret;

	while (!READ_ONCE(h->stop)) {
		for (cpu = nr_cpu_ids - 1; cpu > 0; cpu--) {
			if (!cpu_online(cpu))
				continue;
			ret = remove_cpu(cpu);
			if (ret && !h->err)
				h->err = ret;
			usleep_range(5000, 6000);
		}
		for (cpu = 1; cpu < nr_cpu_ids; cpu++) {
			if (!cpu_present(cpu) || cpu_online(cpu))
				continue;
			ret = add_cpu(cpu);
			if (ret && !h->err)
				h->err = ret;
			usleep_range(5000, 6000);
		}
		h->cycles++;
	}
	complete(&h->done);
	return 0;
}

/*
 * CPUs (and with them whole nodes' CPUs) go offline and online while jobs of
 * every affinity run: every job covers every index exactly once.  At least
 * 200 jobs of each affinity, and until two hotplug cycles went by (at most
 * 5000 jobs).  A third of the by-index jobs have no segment on a node with
 * CPUs, so that the search for a helper's node walks the whole ring of nodes
 * with CPUs while it changes.
 */
static void mtjob_test_hotplug(struct kunit *test)
{
	struct hotplug h = { .stop = false };
	struct task_struct *task;
	unsigned int i, bad = 0;
	struct thirds t;

	if (!IS_ENABLED(CONFIG_HOTPLUG_CPU) || num_present_cpus() < 2)
		kunit_skip(test, "needs CPU hotplug and 2 CPUs");
	t.node[0] = first_node_with_cpus();
	t.node[1] = next_node_in(t.node[0], node_states[N_POSSIBLE]);
	t.node[2] = next_node_in(t.node[1], node_states[N_POSSIBLE]);
	init_completion(&h.done);
	task = kthread_run(hotplug_fn, &h, "mtjob_test/hotplug");
	KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	for (i = 0; i < 5 * 200 || (READ_ONCE(h.cycles) < 2 && i < 5000); i++) {
		struct mtjob job;
		int ret;

		t.r = rec_alloc(test, 0, 4096 + i);
		t.r->delay_us = 20;
		job = job_of(t.r, 0, t.r->nr);
		job.thread_fn = thirds_fn;
		job.fn_arg = &t;
		job.max_threads = 1 + i % 4;
		job.affinity = i % 5;
		job.node = t.node[i % 3];
		job.node_of = (i / 5) % 3 == 2 ? lone_node : thirds_node;
		job.gfp = i % 7 == 0 ? GFP_NOWAIT : GFP_KERNEL;
		ret = mtjob_run(&job);
		KUNIT_EXPECT_EQ_MSG(test, ret, 0, "job %u", i);
		expect_each_once(test, t.r);
		bad += ret != 0;
		kunit_kfree(test, t.r->counts);
		kunit_kfree(test, t.r);
	}
	WRITE_ONCE(h.stop, true);
	wait_for_completion(&h.done);
	KUNIT_EXPECT_EQ(test, bad, 0U);
	KUNIT_EXPECT_EQ(test, h.err, 0);
	KUNIT_EXPECT_GT(test, h.cycles, 0U);
	KUNIT_EXPECT_EQ(test, num_online_cpus(), num_present_cpus());
	kunit_info(test, "%u jobs over %u hotplug cycles\n", i, h.cycles);
}

struct nested {
	struct rec *r;		/* the inner jobs' indices */
	enum mtjob_affinity affinity;
	int node;
	atomic_t errors;
};

/* Every other run of 1024 indices on the first node, the others on none. */
static int nested_node_of(unsigned long index, void *arg)
{
	return index & 1024 ? first_node_with_cpus() : NUMA_NO_NODE;
}

/* An outer chunk [start, end) runs indices [start * 256, end * 256). */
static int nested_outer_fn(unsigned long start, unsigned long end, void *arg)
{
	struct nested *n = arg;
	struct mtjob job = job_of(n->r, start * 256, (end - start) * 256);
	int ret;

	job.max_threads = 2;
	job.affinity = n->affinity;
	job.node = n->node;
	job.node_of = nested_node_of;
	job.fn_arg = n->r;
	ret = mtjob_run(&job);
	if (ret)
		atomic_inc(&n->errors);
	return ret;
}

/* A chunk function that runs a job of its own, for every affinity. */
static void mtjob_test_nested(struct kunit *test)
{
	enum mtjob_affinity aff;

	for (aff = MTJOB_AFFINITY_NONE; aff <= MTJOB_AFFINITY_BY_INDEX_STRICT;
	     aff++) {
		struct nested n = {
			.affinity = aff,
			.node = first_node_with_cpus(),
			.errors = ATOMIC_INIT(0),
		};
		struct mtjob job;

		n.r = rec_alloc(test, 0, 64 * 256);
		n.r->delay_us = 10;
		job = job_of(n.r, 0, 64);
		job.thread_fn = nested_outer_fn;
		job.fn_arg = &n;
		job.max_threads = 4;
		job.affinity = aff;
		job.node = n.node;
		job.node_of = nested_node_of;
		KUNIT_ASSERT_EQ(test, mtjob_run(&job), 0);
		KUNIT_EXPECT_EQ(test, atomic_read(&n.errors), 0);
		expect_each_once(test, n.r);
		kunit_kfree(test, n.r->counts);
		kunit_kfree(test, n.r);
	}
}

/*
 * Helpers of GFP_KERNEL jobs fail as a failed allocation would (the Rust
 * engine's test hook: failslab does not fail allocations that may reclaim
 * unless debugfs says so): every affinity, the nth helper; the job still runs
 * every index, with no more threads than the helpers before it and the caller.
 */
static void alloc_failure_gfp_kernel(struct kunit *test)
{
	unsigned int nth, fired = 0, rust = 0;
	enum mtjob_affinity aff;
	int nid, node = first_node_with_cpus();

	/* The node with the most CPUs: a node job of one CPU spawns no helper. */
	for_each_node_state(nid, N_CPU)
		if (nr_cpus_node(nid) > nr_cpus_node(node))
			node = nid;

	for (aff = MTJOB_AFFINITY_NONE; aff <= MTJOB_AFFINITY_BY_INDEX_STRICT;
	     aff++) {
		for (nth = 1; nth <= 4; nth++) {
			struct rec *r = rec_alloc(test, 0, 4096);
			struct mtjob job = job_of(r, 0, r->nr);
			struct mtjob_report rep;
			unsigned int left;
			int ret;

			r->delay_us = 200;
			job.max_threads = 4;
			job.affinity = aff;
			job.node = node;
			job.node_of = nowait_node;
			mtjob_rust_fail_nth_helper(nth);
			ret = mtjob_run_report(&job, &rep);
			left = mtjob_rust_fail_nth_helper(0);
			KUNIT_EXPECT_EQ_MSG(test, ret, 0, "affinity %d nth %u",
					    aff, nth);
			expect_each_once(test, r);
			KUNIT_EXPECT_GE(test, rep.nr_threads, 1);
			rust += rep.engine == MTJOB_ENGINE_RUST;
			if (!left) {
				fired++;
				KUNIT_EXPECT_LE_MSG(test, rep.nr_threads, nth,
						    "affinity %d nth %u", aff,
						    nth);
			}
			kunit_kfree(test, r->counts);
			kunit_kfree(test, r);
		}
	}
	/* On the Rust engine, the first helper of every affinity at least. */
	if (rust == 5 * 4)
		KUNIT_EXPECT_GE(test, fired, 5U);
}

/*
 * The engine's helper and segment allocations fail (failslab's fail-nth,
 * which reaches GFP_NOWAIT allocations): the job still runs every index,
 * with fewer threads.  Then the same for GFP_KERNEL jobs through the test
 * hook.
 */
static void mtjob_test_alloc_failure(struct kunit *test)
{
#ifdef CONFIG_FAILSLAB
	enum mtjob_affinity aff;
	unsigned int nth;

	for (aff = MTJOB_AFFINITY_NONE; aff <= MTJOB_AFFINITY_BY_INDEX_STRICT;
	     aff++) {
		for (nth = 1; nth <= 6; nth++) {
			struct rec *r = rec_alloc(test, 0, 4096);
			struct mtjob job = job_of(r, 0, r->nr);
			struct mtjob_report rep;
			int ret;

			r->delay_us = 200;
			job.max_threads = 4;
			job.gfp = GFP_NOWAIT;
			job.affinity = aff;
			job.node = first_node_with_cpus();
			job.node_of = nowait_node;
			current->fail_nth = nth;
			ret = mtjob_run_report(&job, &rep);
			/* Not reached: fewer allocations than nth. */
			current->fail_nth = 0;
			KUNIT_EXPECT_EQ(test, ret, 0);
			expect_each_once(test, r);
			KUNIT_EXPECT_GE(test, rep.nr_threads, 1);
			kunit_kfree(test, r->counts);
			kunit_kfree(test, r);
		}
	}
	/* With the first allocation failing, no helper: the caller alone. */
	{
		struct rec *r = rec_alloc(test, 0, 4096);
		struct mtjob job = job_of(r, 0, r->nr);
		struct mtjob_report rep;

		job.max_threads = 4;
		job.gfp = GFP_NOWAIT;
		current->fail_nth = 1;
		KUNIT_EXPECT_EQ(test, mtjob_run_report(&job, &rep), 0);
		current->fail_nth = 0;
		expect_each_once(test, r);
		if (rep.engine == MTJOB_ENGINE_RUST)
			KUNIT_EXPECT_EQ(test, rep.nr_threads, 1);
	}
#endif
	if (IS_ENABLED(CONFIG_MTJOB_RUST))
		alloc_failure_gfp_kernel(test);
#ifndef CONFIG_FAILSLAB
	kunit_skip(test, "needs CONFIG_FAILSLAB for GFP_NOWAIT allocations");
#endif
}

static int lockdep_report;
module_param(lockdep_report, int, 0444);
MODULE_PARM_DESC(lockdep_report,
		 "Run mtjob_test_lockdep_report, which ends lockdep for the boot: 1 joins two threads, 2 runs a job of one thread");

static DEFINE_MUTEX(mtjob_test_mutex);

static int take_mutex_fn(unsigned long start, unsigned long end, void *arg)
{
	mutex_lock(&mtjob_test_mutex);
	mutex_unlock(&mtjob_test_mutex);
	return 0;
}

/* One call site, hence one lock class, for both jobs below. */
static noinline int lockdep_run(struct mtjob *job)
{
	return mtjob_run(job);
}

static int lockdep_caller_fn(void *arg)
{
	struct concurrent *c = arg;

	/*
	 * First the helpers take the mutex, then the caller joins holding it:
	 * two threads, or one (mtjob_run_alone(), whose call is followed by
	 * the join's acquisition).
	 */
	c->ret = lockdep_run(&c->job);
	if (!c->ret) {
		struct rec *r = c->r;
		struct mtjob job = job_of(r, 0, r->nr);

		job.max_threads = lockdep_report == 2 ? 1 : 2;
		mutex_lock(&mtjob_test_mutex);
		c->ret = lockdep_run(&job);
		mutex_unlock(&mtjob_test_mutex);
	}
	complete(&c->done);
	return 0;
}

/*
 * The join is visible to lockdep: helpers that take a mutex, then a caller
 * that joins its helpers while holding it, is reported as a possible
 * deadlock even though it did not happen.  The report turns lockdep off for
 * the rest of the boot, so this runs only with mtjob_test.lockdep_report=1
 * (a join of two threads) or 2 (a job of one thread under the mutex); make
 * check boots it alone with each and expects the report.
 */
static void mtjob_test_lockdep_report(struct kunit *test)
{
	struct concurrent c;
	int lo, hi;

	if (!lockdep_report)
		kunit_skip(test, "needs mtjob_test.lockdep_report=1 or 2");
	if (!IS_ENABLED(CONFIG_PROVE_LOCKING) || num_node_state(N_CPU) < 2)
		kunit_skip(test, "needs CONFIG_PROVE_LOCKING and 2 nodes with CPUs");
	KUNIT_ASSERT_TRUE(test, debug_locks);
	lo = first_node_with_cpus();
	hi = next_node_in(lo, node_states[N_CPU]);
	c.r = rec_alloc(test, 0, 4096);
	/* Node affinity elsewhere: only helpers run chunks, the caller waits. */
	c.job = job_of(c.r, 0, 64);
	c.job.thread_fn = take_mutex_fn;
	c.job.max_threads = 2;
	c.job.affinity = MTJOB_AFFINITY_NODE;
	c.job.node = hi;
	run_bound(test, lockdep_caller_fn, &c, lo);
	KUNIT_EXPECT_EQ(test, c.ret, 0);
	KUNIT_EXPECT_FALSE_MSG(test, debug_locks,
			       "no lockdep report for a join under a mutex its helpers take");
}

static int oops_in_scope;
module_param(oops_in_scope, int, 0444);
MODULE_PARM_DESC(oops_in_scope,
		 "Run mtjob_test_oops_in_scope, which oopses a thread of its own: a job's caller oopses in its chunk while helpers write to its stack");

/* Chunks the helpers of the oopsing job finished: outlives its caller. */
static atomic_t oops_helper_chunks;

struct oops_job {
	struct task_struct *caller;
	int *bad;
	unsigned long slots[64];
};

/*
 * The caller oopses in its first chunk once the helpers are writing (a write
 * through NULL, as a buggy chunk function would do); each helper chunk
 * writes into the caller's stack (@arg) for 100 ms or more.
 */
static int oops_chunk(unsigned long start, unsigned long end, void *arg)
{
	struct oops_job *o = arg;
	unsigned long i, n;

	if (current == o->caller) {
		msleep(20);
		WRITE_ONCE(*o->bad, 1);
	}
	for (n = 0; n < 200; n++) {
		for (i = start; i < end; i++)
			WRITE_ONCE(o->slots[i % ARRAY_SIZE(o->slots)], n);
		usleep_range(500, 1000);
	}
	atomic_inc(&oops_helper_chunks);
	return 0;
}

/* The oopsing job's caller: a thread of its own, so that KUnit goes on. */
static int oops_caller(void *unused)
{
	struct oops_job o = { .caller = current };
	struct mtjob job = {
		.thread_fn	= oops_chunk,
		.fn_arg		= &o,
		.size		= ARRAY_SIZE(o.slots),
		.align		= 1,
		.min_chunk	= 1,
		.max_threads	= 4,
		.affinity	= MTJOB_AFFINITY_NONE,
		.gfp		= GFP_KERNEL,
	};

	mtjob_run(&job);
	return 0;
}

/*
 * A thread that oopses with a workqueue scope open (here the Rust engine's,
 * around a job whose helpers borrow the caller's stack) is parked with its
 * stack kept (kernel/exit.c, task_stack_lent()), and the helpers finish
 * their chunks on it; the kernel goes on.  Booted alone with
 * mtjob_test.oops_in_scope=1 (make check, stage oops-park): the oops taints
 * the kernel and its report fails any other suite's log check.
 */
static void mtjob_test_oops_in_scope(struct kunit *test)
{
	struct task_struct *t;
	int i, done;

	if (!oops_in_scope)
		kunit_skip(test, "needs mtjob_test.oops_in_scope=1, and oopses");
	if (!IS_ENABLED(CONFIG_MTJOB_RUST))
		kunit_skip(test, "the scope is the Rust engine's");
	atomic_set(&oops_helper_chunks, 0);
	t = kthread_create(oops_caller, NULL, "mtjob_oops");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	get_task_struct(t);
	wake_up_process(t);
	for (i = 0; i < 1500 && READ_ONCE(t->exit_state) != EXIT_DEAD; i++)
		msleep(20);
	KUNIT_EXPECT_EQ_MSG(test, READ_ONCE(t->exit_state), EXIT_DEAD,
			    "the caller was not parked");
	KUNIT_EXPECT_TRUE(test, task_stack_lent(t));
	/* The helpers finish their chunks, writing to the parked stack. */
	do {
		done = atomic_read(&oops_helper_chunks);
		msleep(1000);
	} while (atomic_read(&oops_helper_chunks) != done);
	KUNIT_EXPECT_GT_MSG(test, done, 0, "no helper chunk finished");
	KUNIT_EXPECT_NOT_NULL_MSG(test, try_get_task_stack(t),
				  "the parked caller's stack was freed");
	put_task_stack(t);
	kunit_info(test, "caller %s[%d] parked: exit_state %d, stack lent %d, helper chunks done %d\n",
		   t->comm, task_pid_nr(t), t->exit_state, task_stack_lent(t),
		   done);
	put_task_struct(t);
}

static struct kunit_case mtjob_test_cases[] = {
	KUNIT_CASE(mtjob_test_cover),
	KUNIT_CASE(mtjob_test_max_threads),
	KUNIT_CASE(mtjob_test_many_threads),
	KUNIT_CASE(mtjob_test_affinity_node),
	KUNIT_CASE(mtjob_test_affinity_interleave),
	KUNIT_CASE(mtjob_test_affinity_by_index),
	KUNIT_CASE(mtjob_test_error),
	KUNIT_CASE(mtjob_test_positive_return),
	KUNIT_CASE(mtjob_test_einval),
	KUNIT_CASE(mtjob_test_small),
	KUNIT_CASE(mtjob_test_ulong_max),
	KUNIT_CASE(mtjob_test_concurrent),
	KUNIT_CASE(mtjob_test_affinity_by_index_strict),
	KUNIT_CASE(mtjob_test_nowait),
	KUNIT_CASE(mtjob_test_stop_when_slower),
	KUNIT_CASE(mtjob_test_strict_nowait),
	KUNIT_CASE(mtjob_test_one_thread),
	KUNIT_CASE(mtjob_test_one_unit_edge),
	KUNIT_CASE(mtjob_test_placed_one_thread),
	KUNIT_CASE(mtjob_test_cpuless_node),
	KUNIT_CASE(mtjob_test_cpuless_nearest),
	KUNIT_CASE_SLOW(mtjob_test_hotplug),
	KUNIT_CASE(mtjob_test_nested),
	KUNIT_CASE(mtjob_test_alloc_failure),
	KUNIT_CASE(mtjob_test_lockdep_report),
	KUNIT_CASE_SLOW(mtjob_test_oops_in_scope),
	{}
};

static struct kunit_suite mtjob_test_suite = {
	.name = "mtjob",
	.test_cases = mtjob_test_cases,
};

kunit_test_suite(mtjob_test_suite);

MODULE_DESCRIPTION("KUnit tests for mtjob_run()");
MODULE_LICENSE("GPL");
