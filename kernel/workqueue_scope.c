// SPDX-License-Identifier: GPL-2.0
/*
 * The defined end of a task that oopses with a kernel::workqueue::scope!()
 * open (rust/kernel/workqueue/scoped.rs).
 *
 * The items of a scope may borrow from the stack of the task that opened it,
 * because the scope's join waits for them before the frame returns.  An oops
 * (a Rust panic is BUG()) kills the task inside the scope: the join never
 * runs, and do_exit() goes on to free the task's stack (or, on x86, runs on
 * what is left of it) while items still queued or running write through
 * their borrows.  Waiting for the items is no way out after an oops: the task
 * may hold locks they take, or they may wait for it.  So a task that dies
 * with a scope open panics, as panic_on_oops would have it do for every oops.
 * A scope's thread that leaves it by do_exit() without an oops (a kthread
 * calling kthread_exit(), as a failed KUnit assertion does) is not caught:
 * nothing marks that path; such code must not exit inside a scope.
 * C's on-stack work items and completions, padata's on-stack job and
 * hrtimer's scoped start in Rust have the same hole; a scope marks its frame,
 * so this one is closed.
 */

#include <linux/compiler.h>
#include <linux/export.h>
#include <linux/kasan.h>
#include <linux/panic.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/workqueue_scope.h>

/* "Scop"; with the marker's own address beside it. */
#define WQ_SCOPE_OPEN	0x53636f70UL

/**
 * wq_scope_open - mark a scope open in its frame
 * @marker: the scope's marker, on the stack of the current task, not moved
 *	until wq_scope_close()
 */
void wq_scope_open(struct wq_scope_marker *marker)
{
	/* Untagged, as task_stack_page() is (KASAN_SW_TAGS and KASAN_STACK). */
	marker->self = kasan_reset_tag(marker);
	/* Last: an oops may come at any point. */
	WRITE_ONCE(marker->magic, WQ_SCOPE_OPEN);
}
EXPORT_SYMBOL_GPL(wq_scope_open);

/**
 * wq_scope_close - mark a scope joined
 * @marker: as given to wq_scope_open()
 */
void wq_scope_close(struct wq_scope_marker *marker)
{
	WRITE_ONCE(marker->magic, 0);
}
EXPORT_SYMBOL_GPL(wq_scope_close);

/**
 * wq_scope_check_dead - panic if the dying task has a scope open
 *
 * Called after an oops, before the dying task's stack is reused: by
 * x86's oops_end() before it rewinds the stack, and by make_task_dead() on
 * the others (and as a fallback).  Reads the task's whole stack (THREAD_SIZE
 * bytes, without KASAN's checks: dead frames are poisoned).
 */
void wq_scope_check_dead(void)
{
	const unsigned long *p = task_stack_page(current);
	const unsigned long *end = p + THREAD_SIZE / sizeof(*p) - 1;

	for (; p < end; p++) {
		if (READ_ONCE_NOCHECK(p[0]) == WQ_SCOPE_OPEN &&
		    READ_ONCE_NOCHECK(p[1]) == (unsigned long)p)
			panic("Oops with a workqueue scope open: its work items may still use the stack of %s[%d]\n",
			      current->comm, task_pid_nr(current));
	}
}
