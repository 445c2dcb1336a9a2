// SPDX-License-Identifier: GPL-2.0
/*
 * Randomized KUnit tests of mtjob_run(): many jobs with random start, size,
 * alignment, minimum chunk, thread cap and affinity, some with a failing
 * chunk, each checked against what mtjob.h promises.  The seed is printed
 * and can be set with mtjob_random_test.seed= to replay a run; the number
 * of jobs with mtjob_random_test.jobs=.
 */

#include <kunit/test.h>
#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/completion.h>
#include <linux/kthread.h>
#include <linux/limits.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/mtjob.h>
#include <linux/nodemask.h>
#include <linux/prandom.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/topology.h>

static unsigned long long seed = 20261122;
module_param(seed, ullong, 0444);
MODULE_PARM_DESC(seed, "Seed of the random jobs (printed by each case)");

static unsigned int jobs = 10000;
module_param(jobs, uint, 0444);
MODULE_PARM_DESC(jobs, "Random jobs per case (the concurrent case splits them over its kthreads)");

#define RANDOM_MAX_SIZE		BIT(16)
#define RANDOM_KTHREADS		8
/* Failures described in detail per case; the rest are only counted. */
#define RANDOM_REPORTS		5

struct random_chunk {
	unsigned long start;
	unsigned long end;
};

/* One thread's jobs: its random state and what its chunk function saw. */
struct random_ctx {
	struct rnd_state rnd;
	u64 seed;
	int id;
	unsigned int nr_jobs;
	/* The current job. */
	struct mtjob job;
	unsigned long period;		/* node_of changes node every period */
	int node_base;
	bool bad_node;			/* node_of returns impossible nodes */
	unsigned long fail_at;		/* the chunk holding it fails, or none */
	atomic_t *counts;		/* calls per index of the job */
	spinlock_t lock;
	unsigned int nr_chunks;
	unsigned int max_chunks;	/* entries of chunks */
	struct random_chunk *chunks;
	atomic_t active;
	atomic_t max_active;
	/* Results. */
	unsigned int nr_bad;
	unsigned int nr_failed_jobs;	/* with an injected error */
	char report[RANDOM_REPORTS][192];
	unsigned int nr_reports;
	struct completion done;
};

static u32 rnd_below(struct random_ctx *c, u32 n)
{
	return n ? prandom_u32_state(&c->rnd) % n : 0;
}

static unsigned long rnd_ulong(struct random_ctx *c)
{
	return ((unsigned long)prandom_u32_state(&c->rnd) << 31 << 1) |
	       prandom_u32_state(&c->rnd);
}

static int random_node_of(unsigned long index, void *arg)
{
	struct random_ctx *c = arg;
	unsigned long k = (index - c->job.start) / c->period;

	if (c->bad_node && k % 3 == 2)
		return k % 2 ? NUMA_NO_NODE : MAX_NUMNODES + (int)(k % 7);
	return (c->node_base + k) % nr_node_ids;
}

static int random_fn(unsigned long start, unsigned long end, void *arg)
{
	struct random_ctx *c = arg;
	unsigned long i;
	int active, seen;

	active = atomic_inc_return(&c->active);
	seen = atomic_read(&c->max_active);
	while (active > seen &&
	       !atomic_try_cmpxchg(&c->max_active, &seen, active))
		;
	spin_lock(&c->lock);
	if (c->nr_chunks < c->max_chunks) {
		c->chunks[c->nr_chunks].start = start;
		c->chunks[c->nr_chunks].end = end;
	}
	c->nr_chunks++;
	spin_unlock(&c->lock);
	/* Only indices of the job: a chunk out of range is reported later. */
	for (i = start; i < end && i - c->job.start < c->job.size; i++)
		atomic_inc(&c->counts[i - c->job.start]);
	atomic_dec(&c->active);
	return c->fail_at - start < end - start ? -EIO : 0;
}

/* A random job; sizes are spread evenly over orders of magnitude. */
static void random_job(struct random_ctx *c)
{
	unsigned long size, start, align;
	u32 pick;

	size = rnd_below(c, 17) ? 1UL << rnd_below(c, 17) : 0;
	size = min(size + rnd_below(c, size + 1), RANDOM_MAX_SIZE);
	pick = rnd_below(c, 4);
	if (pick == 0)
		start = ULONG_MAX - size;		/* ends at ULONG_MAX */
	else if (pick == 1)
		start = rnd_ulong(c) % (ULONG_MAX - size);
	else
		start = rnd_below(c, 1U << 20);
	align = 1UL << rnd_below(c, 13);

	c->job = (struct mtjob) {
		.thread_fn	= random_fn,
		.fn_arg		= c,
		.start		= start,
		.size		= size,
		.align		= align,
		.min_chunk	= rnd_below(c, 2) ? rnd_below(c, size + 1) : 0,
		.max_threads	= 1 + rnd_below(c, num_online_cpus() + 2),
		.affinity	= rnd_below(c, MTJOB_AFFINITY_BY_INDEX_STRICT + 1),
		.node		= first_node(node_states[N_POSSIBLE]),
		.node_of	= random_node_of,
		.gfp		= rnd_below(c, 4) ? GFP_KERNEL : GFP_NOWAIT,
		.name		= "mtjob_random_test",
	};
	if (c->job.affinity == MTJOB_AFFINITY_NODE) {
		int n = rnd_below(c, nr_node_ids);

		if (node_possible(n))
			c->job.node = n;
	}
	c->period = 1000 + rnd_below(c, 4000);
	c->node_base = rnd_below(c, nr_node_ids);
	c->bad_node = !rnd_below(c, 8);
	c->fail_at = size && !rnd_below(c, 10) ? start + rnd_below(c, size) :
						 ULONG_MAX;
	/* ULONG_MAX is never an index: a job ends at most there. */
}

/* Counts a broken promise, describes the first few; returns false. */
static bool random_report(struct random_ctx *c, unsigned int n,
			  const char *what, int ret)
{
	struct mtjob *j = &c->job;

	c->nr_bad++;
	if (c->nr_reports >= RANDOM_REPORTS)
		return false;
	snprintf(c->report[c->nr_reports++], sizeof(c->report[0]),
		 "job %u of thread %d (seed %llu): %s: start %#lx size %lu align %lu min_chunk %lu max_threads %d affinity %d gfp %pGg ret %d",
		 n, c->id, c->seed, what, j->start, j->size, j->align,
		 j->min_chunk, j->max_threads, j->affinity, &j->gfp, ret);
	return false;
}

/* Runs one job and checks every promise of mtjob_run(); false if broken. */
static bool random_one(struct random_ctx *c, unsigned int n)
{
	struct mtjob *j = &c->job;
	struct mtjob_report rep;
	unsigned long end, i, once = 0, more = 0;
	bool injected;
	unsigned int k;
	int ret;

	random_job(c);
	end = j->start + j->size;
	injected = c->fail_at != ULONG_MAX;
	memset(c->counts, 0, j->size * sizeof(*c->counts));
	c->nr_chunks = 0;
	atomic_set(&c->active, 0);
	atomic_set(&c->max_active, 0);

	ret = mtjob_run_report(j, &rep);
	if (injected)
		c->nr_failed_jobs++;
	if (ret != (injected ? -EIO : 0))
		return random_report(c, n, "unexpected return", ret);
	for (i = 0; i < j->size; i++) {
		int v = atomic_read(&c->counts[i]);

		once += v == 1;
		more += v > 1;
	}
	if (more)
		return random_report(c, n, "an index ran twice", ret);
	if (!injected && once != j->size)
		return random_report(c, n, "an index never ran", ret);
	if (injected && !atomic_read(&c->counts[c->fail_at - j->start]))
		return random_report(c, n, "the failing index never ran", ret);
	if (c->nr_chunks > c->max_chunks)
		return random_report(c, n, "more chunks than recorded", ret);
	/* A job of one thread is one chunk, the whole range, as padata. */
	if (j->size && j->max_threads == 1 && c->nr_chunks != 1)
		return random_report(c, n, "one thread but not one chunk", ret);
	for (k = 0; k < c->nr_chunks; k++) {
		struct random_chunk *ch = &c->chunks[k];

		if (ch->start >= ch->end || ch->start < j->start ||
		    ch->end > end)
			return random_report(c, n, "a chunk out of range", ret);
		if ((ch->start != j->start && ch->start % j->align) ||
		    (ch->end != end && ch->end % j->align))
			return random_report(c, n, "an unaligned boundary", ret);
		if (ch->start != j->start && ch->end != end &&
		    ch->end - ch->start < j->min_chunk)
			return random_report(c, n, "an inner chunk below min_chunk",
					     ret);
	}
	if (atomic_read(&c->max_active) > j->max_threads ||
	    (j->size && (rep.nr_threads < 1 || rep.nr_threads > j->max_threads)))
		return random_report(c, n, "more threads than the cap", ret);
	if (rep.nr_off_node > c->nr_chunks ||
	    (rep.nr_off_node && (j->affinity == MTJOB_AFFINITY_NONE ||
				j->affinity == MTJOB_AFFINITY_INTERLEAVE)))
		return random_report(c, n, "chunks off a node they do not have",
				     ret);
	return true;
}

KUNIT_DEFINE_ACTION_WRAPPER(random_kvfree, kvfree, const void *);

static struct random_ctx *random_ctx(struct kunit *test, int id,
				     unsigned int nr_jobs)
{
	struct random_ctx *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, c);
	c->counts = kvcalloc(RANDOM_MAX_SIZE, sizeof(*c->counts), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c->counts);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, random_kvfree,
							c->counts), 0);
	/*
	 * chunk = size / (threads * 4) rounded down, so up to 8 chunks per
	 * thread (size 25 on 4 threads: chunks of 1) and the ends; threads
	 * are at most the CPUs.
	 */
	c->max_chunks = 8 * num_possible_cpus() + 8;
	c->chunks = kunit_kcalloc(test, c->max_chunks, sizeof(*c->chunks),
				  GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c->chunks);
	c->id = id;
	c->seed = seed + id;
	c->nr_jobs = nr_jobs;
	prandom_seed_state(&c->rnd, c->seed);
	spin_lock_init(&c->lock);
	init_completion(&c->done);
	return c;
}

static void random_run(struct random_ctx *c)
{
	unsigned int n;

	for (n = 0; n < c->nr_jobs; n++) {
		/* Each job is checked whole; a broken one is counted. */
		random_one(c, n);
		cond_resched();
	}
}

static void random_expect(struct kunit *test, struct random_ctx *c)
{
	unsigned int k;

	for (k = 0; k < c->nr_reports; k++)
		kunit_err(test, "%s\n", c->report[k]);
	KUNIT_EXPECT_EQ_MSG(test, c->nr_bad, 0U,
			    "thread %d: %u of %u jobs broke a promise (seed %llu)",
			    c->id, c->nr_bad, c->nr_jobs, c->seed);
	/* About one job in ten fails on purpose: the path was exercised. */
	if (c->nr_jobs >= 100)
		KUNIT_EXPECT_GT(test, c->nr_failed_jobs, 0U);
}

/* Random jobs one after another from the test thread. */
static void mtjob_random_test_serial(struct kunit *test)
{
	struct random_ctx *c = random_ctx(test, 0, jobs);

	kunit_info(test, "%u jobs, seed %llu\n", jobs, seed);
	random_run(c);
	random_expect(test, c);
}

static int random_thread(void *arg)
{
	struct random_ctx *c = arg;

	random_run(c);
	complete(&c->done);
	return 0;
}

/* The same from eight kthreads at once, each with its own seed. */
static void mtjob_random_test_concurrent(struct kunit *test)
{
	struct random_ctx *c[RANDOM_KTHREADS];
	struct task_struct *t;
	int k;

	kunit_info(test, "%d kthreads x %u jobs, seeds %llu to %llu\n",
		   RANDOM_KTHREADS, jobs / RANDOM_KTHREADS, seed + 1,
		   seed + RANDOM_KTHREADS);
	for (k = 0; k < RANDOM_KTHREADS; k++)
		c[k] = random_ctx(test, k + 1, jobs / RANDOM_KTHREADS);
	for (k = 0; k < RANDOM_KTHREADS; k++) {
		t = kthread_run(random_thread, c[k], "mtjob_random/%d", k);
		if (IS_ERR(t)) {
			/* Those started hold pointers into this test: wait. */
			while (k--)
				wait_for_completion(&c[k]->done);
			KUNIT_FAIL(test, "kthread_run: %pe", t);
			return;
		}
	}
	for (k = 0; k < RANDOM_KTHREADS; k++) {
		wait_for_completion(&c[k]->done);
		random_expect(test, c[k]);
	}
}

static struct kunit_case mtjob_random_test_cases[] = {
	KUNIT_CASE_SLOW(mtjob_random_test_serial),
	KUNIT_CASE_SLOW(mtjob_random_test_concurrent),
	{}
};

static struct kunit_suite mtjob_random_test_suite = {
	.name = "mtjob_random",
	.test_cases = mtjob_random_test_cases,
};

kunit_test_suite(mtjob_random_test_suite);

MODULE_DESCRIPTION("Randomized KUnit tests of mtjob_run()");
MODULE_LICENSE("GPL");
