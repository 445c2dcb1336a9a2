/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C side of kernel::workqueue::scope!() (rust/kernel/workqueue/scoped.rs):
 * a marker on the stack of a task that has a scope open, which the oops path
 * looks for.  A scope's work items may borrow from its task's stack until the
 * scope's join returns; a task that oopses inside a scope never reaches the
 * join, and its stack would be freed while the items still use it.
 */
#ifndef _LINUX_WORKQUEUE_SCOPE_H
#define _LINUX_WORKQUEUE_SCOPE_H

/**
 * struct wq_scope_marker - marks a stack frame that holds an open scope
 * @magic: a value of its own while the scope is open, 0 once it is joined
 * @self: the marker's own address (untagged), so that a stale or chance
 *	value is not taken for a marker
 */
struct wq_scope_marker {
	unsigned long magic;
	const struct wq_scope_marker *self;
};

#ifdef CONFIG_RUST
void wq_scope_open(struct wq_scope_marker *marker);
void wq_scope_close(struct wq_scope_marker *marker);
void wq_scope_check_dead(void);
#else
static inline void wq_scope_check_dead(void)
{
}
#endif

#endif /* _LINUX_WORKQUEUE_SCOPE_H */
