// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of struct mtjob_backoff (kernel/mtjob_backoff.c), built with
 * the mtjob_run() tests where a user selects the backoff
 * (CONFIG_MTJOB_BACKOFF_KUNIT_TEST).
 */

#include <kunit/test.h>
#include <linux/jiffies.h>
#include <linux/limits.h>
#include <linux/minmax.h>
#include <linux/mtjob_backoff.h>

/*
 * The window of a struct mtjob_backoff, in jiffies from now: what is left of
 * it, so at most what it was opened for.
 */
static long backoff_left(const struct mtjob_backoff *b)
{
	return (long)(READ_ONCE(b->until) - jiffies);
}

/* Ends @b's window now, as if its time had passed. */
static void backoff_expire(struct mtjob_backoff *b)
{
	WRITE_ONCE(b->until, jiffies - 1);
}

/*
 * struct mtjob_backoff: each stop in a row, once the last window ended,
 * opens a window of mtjob.backoff_ms times 1, 2, 4, ... up to 32; jobs that
 * end within a window (they started before it) neither double nor end it,
 * a stop only moving its end; a job that kept its helpers after the window
 * ends the count, a serial one changes nothing, a window stays open up to
 * 32 times the first window at the current mtjob.backoff_ms, and
 * mtjob.backoff_ms=0 turns it off.  The windows
 * are checked against their ends, not slept through; a window is ended by
 * moving its end into the past.
 */
static void mtjob_test_backoff(struct kunit *test)
{
	const struct mtjob_report stopped = {
		.nr_threads = 2, .helpers_stopped = true,
	};
	const struct mtjob_report kept = { .nr_threads = 2 };
	const struct mtjob_report serial = { .nr_threads = 1 };
	unsigned int saved = mtjob_backoff_ms;
	struct mtjob_backoff b = {};
	unsigned long window;
	int stop;

	WRITE_ONCE(mtjob_backoff_ms, 1000);
	KUNIT_EXPECT_FALSE(test, mtjob_backoff_active(&b));
	for (stop = 1; stop <= MTJOB_BACKOFF_MAX_LEVEL + 2; stop++) {
		backoff_expire(&b);
		mtjob_backoff_update(&b, &stopped);
		window = msecs_to_jiffies(1000) <<
			 (min(stop, MTJOB_BACKOFF_MAX_LEVEL) - 1);
		KUNIT_EXPECT_EQ(test, b.level, min(stop, MTJOB_BACKOFF_MAX_LEVEL));
		KUNIT_EXPECT_LE(test, backoff_left(&b), (long)window);
		/* Not preempted for half the window meanwhile, even under TCG. */
		KUNIT_EXPECT_GT(test, backoff_left(&b), (long)window / 2);
		KUNIT_EXPECT_TRUE(test, mtjob_backoff_active(&b));
		/*
		 * Jobs ending in the window: neither a new stop nor an end; a
		 * stop moves the end to a whole window from now.
		 */
		mtjob_backoff_update(&b, &serial);
		mtjob_backoff_update(&b, &kept);
		WRITE_ONCE(b.until, jiffies + msecs_to_jiffies(500));
		mtjob_backoff_update(&b, &stopped);
		KUNIT_EXPECT_EQ(test, b.level, min(stop, MTJOB_BACKOFF_MAX_LEVEL));
		KUNIT_EXPECT_GT(test, backoff_left(&b), (long)window / 2);
		KUNIT_EXPECT_TRUE(test, mtjob_backoff_active(&b));
	}
	backoff_expire(&b);
	KUNIT_EXPECT_FALSE(test, mtjob_backoff_active(&b));
	/* Over for longer than time_before() can tell: still over. */
	WRITE_ONCE(b.until, jiffies - 2 - LONG_MAX);
	KUNIT_EXPECT_FALSE(test, mtjob_backoff_active(&b));
	/* After the window, a job that kept its helpers ends the count. */
	mtjob_backoff_update(&b, &kept);
	KUNIT_EXPECT_EQ(test, b.level, 0);
	mtjob_backoff_update(&b, &stopped);
	KUNIT_EXPECT_EQ(test, b.level, 1);
	KUNIT_EXPECT_TRUE(test, mtjob_backoff_active(&b));
	/* A first window of 10 ms: the open 1 s one is past its longest. */
	WRITE_ONCE(mtjob_backoff_ms, 10);
	KUNIT_EXPECT_FALSE(test, mtjob_backoff_active(&b));
	WRITE_ONCE(mtjob_backoff_ms, 1000);
	KUNIT_EXPECT_TRUE(test, mtjob_backoff_active(&b));
	/* mtjob.backoff_ms=0: no window, even one already open. */
	WRITE_ONCE(mtjob_backoff_ms, 0);
	KUNIT_EXPECT_FALSE(test, mtjob_backoff_active(&b));
	b = (struct mtjob_backoff){};
	mtjob_backoff_update(&b, &stopped);
	KUNIT_EXPECT_EQ(test, b.level, 0);
	WRITE_ONCE(mtjob_backoff_ms, saved);
}

static struct kunit_case mtjob_backoff_test_cases[] = {
	KUNIT_CASE(mtjob_test_backoff),
	{}
};

static struct kunit_suite mtjob_backoff_test_suite = {
	.name = "mtjob_backoff",
	.test_cases = mtjob_backoff_test_cases,
};

kunit_test_suite(mtjob_backoff_test_suite);

MODULE_DESCRIPTION("KUnit tests for struct mtjob_backoff");
MODULE_LICENSE("GPL");
