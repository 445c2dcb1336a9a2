// SPDX-License-Identifier: GPL-2.0
/*
 * struct mtjob_backoff: a path whose jobs repeat asks for no helpers for a
 * while after a job whose helpers were stopped.  Its parameter keeps the
 * name of mtjob_run()'s others: "mtjob.backoff_ms".
 */

#include <linux/compiler.h>
#include <linux/jiffies.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/mtjob_backoff.h>

#undef MODULE_PARAM_PREFIX
#define MODULE_PARAM_PREFIX "mtjob."

/*
 * The first window of a struct mtjob_backoff, in ms: a few large teardowns
 * long (a munmap() of 1 GiB took 0.25 to 2 s on the guests of the series'
 * slowdown benchmark), short enough that a stop on a machine busy only for
 * a moment costs little: serial teardowns, as without the series.
 */
unsigned int mtjob_backoff_ms = 1000;
/* Longer first windows are taken as this one, 60 s; it reads back as set. */
#define MTJOB_BACKOFF_MS_MAX	60000U
module_param_named(backoff_ms, mtjob_backoff_ms, uint, 0644);
MODULE_PARM_DESC(backoff_ms, "Window in ms a path stays serial after a job whose helpers were stopped, doubled at each stop in a row (0: no backoff)");

/* The window, in jiffies, of a backoff at @level stops in a row, @level >= 1. */
static unsigned long mtjob_backoff_window(int level)
{
	unsigned int ms = min(READ_ONCE(mtjob_backoff_ms), MTJOB_BACKOFF_MS_MAX);

	/* No overflow: 60 s of jiffies times 32 fits 32 bits. */
	return (unsigned long)msecs_to_jiffies(ms) << (level - 1);
}

/*
 * Whether a backoff read as @level and @until is within its window: from 1
 * to the longest window's jiffies left, so that a reader that sees a new
 * end with the old level still sees the window.  Not time_before(), under
 * which a window that ended more than LONG_MAX jiffies ago (24.8 days on 32
 * bits, with no job since) would read as open until as long again; here it
 * reads as open again only for the longest window every 2^32 jiffies.
 */
static bool mtjob_backoff_open(int level, unsigned long until)
{
	if (!level || !READ_ONCE(mtjob_backoff_ms))
		return false;
	return until - jiffies - 1 <
	       mtjob_backoff_window(MTJOB_BACKOFF_MAX_LEVEL);
}

/**
 * mtjob_backoff_active() - is a path to ask for no helpers now?
 * @b: the path's backoff
 *
 * Context: Any context.
 * Return: true within the window the last stop of @b's jobs opened, while
 * "mtjob.backoff_ms" is not 0.
 */
bool mtjob_backoff_active(const struct mtjob_backoff *b)
{
	return mtjob_backoff_open(READ_ONCE(b->level), READ_ONCE(b->until));
}

/**
 * mtjob_backoff_update() - how a job of a path ran, for its next jobs
 * @b: the path's backoff
 * @report: the job's report, from mtjob_run_report()
 *
 * A job whose helpers were stopped opens a window, from now, of
 * "mtjob.backoff_ms" milliseconds (at most 60000) times 2^(stops in a row
 * - 1), counting up to %MTJOB_BACKOFF_MAX_LEVEL stops; one that ends
 * within a window (it started before the window opened) only moves the
 * window's end to as long from now, without counting.  A job of two
 * threads or more that ends after the window, its helpers kept to its end,
 * ends the count of stops; one that ends within a window changes nothing.
 * A job of one thread tells nothing and changes nothing.
 *
 * Context: Any context.
 */
void mtjob_backoff_update(struct mtjob_backoff *b,
			  const struct mtjob_report *report)
{
	int level = READ_ONCE(b->level);
	bool open = mtjob_backoff_open(level, READ_ONCE(b->until));

	if (report->helpers_stopped && READ_ONCE(mtjob_backoff_ms)) {
		/* Open or not, @level is at least 1 from here on. */
		if (!open)
			level = min(level + 1, MTJOB_BACKOFF_MAX_LEVEL);
		WRITE_ONCE(b->until, jiffies + mtjob_backoff_window(level));
		WRITE_ONCE(b->level, level);
	} else if (report->nr_threads > 1 && !report->helpers_stopped &&
		   level && !open) {
		WRITE_ONCE(b->level, 0);
	}
}
