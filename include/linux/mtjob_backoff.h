/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A backoff for paths whose mtjob_run() jobs repeat: after a job whose
 * helpers were stopped (&mtjob.stop_when_slower), the path asks for no
 * helpers for a while.  kernel/mtjob_backoff.c.
 */
#ifndef _LINUX_MTJOB_BACKOFF_H
#define _LINUX_MTJOB_BACKOFF_H

#include <linux/mtjob.h>

/**
 * struct mtjob_backoff - a path left serial for a while after stopped helpers
 * @level: the stops in a row, 0 to %MTJOB_BACKOFF_MAX_LEVEL; 0: no backoff.
 * @until: in jiffies, the end of the current or the last window.
 *
 * For a path whose jobs repeat (every large teardown) and set
 * &mtjob.stop_when_slower: helpers that had to be stopped slowed their job
 * down, and what slowed them (a host that deschedules its guest's vCPUs,
 * threads busy on every CPU) is rarely gone a moment later.  After such a job the path asks
 * for no helpers for a window of "mtjob.backoff_ms" milliseconds, doubled
 * at each stop in a row: 1, 2, 4, ... 32 times it for %MTJOB_BACKOFF_MAX_LEVEL
 * stops and more.  A job of two threads or more that ends after the window
 * with its helpers kept to its end ends the count; jobs that end within a
 * window neither double nor end it (a stop only moves its end).  One per
 * path, shared by every task of it, read and written with READ_ONCE() and
 * WRITE_ONCE() without a lock: a job that ends the count as another's stop
 * opens a window may close that window, which only gives the next job its
 * helpers.  Zero-initialised: no backoff.
 */
struct mtjob_backoff {
	int level;
	unsigned long until;
};

/* Stops in a row counted at most: the window is then 32 times the first. */
#define MTJOB_BACKOFF_MAX_LEVEL	6

bool mtjob_backoff_active(const struct mtjob_backoff *b);
void mtjob_backoff_update(struct mtjob_backoff *b,
			  const struct mtjob_report *report);

/* "mtjob.backoff_ms", for kernel/mtjob_backoff_test.c. */
extern unsigned int mtjob_backoff_ms;

#endif /* _LINUX_MTJOB_BACKOFF_H */
