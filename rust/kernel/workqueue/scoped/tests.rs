// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of scoped work ([`scope!`](crate::workqueue::scope)).

use crate::{
    bindings,
    prelude::*,
    sync::atomic::{
        Acquire,
        Atomic,
        Relaxed,
        Release, //
    },
    time::{
        delay::fsleep,
        Delta, //
    },
    workqueue::{
        self,
        scope,
        OwnedQueue,
        QueueFlag,
        Scope,
        ScopedJoinHandle, //
    },
};

/// The thread whose joins act as before `workqueue_init()`, or null.
static OFFLINE: Atomic<*mut bindings::task_struct> = Atomic::new(core::ptr::null_mut());

/// Whether the calling thread's joins act as before `workqueue_init()` (a test hook).
pub(super) fn pretend_offline() -> bool {
    let me = crate::task::Task::current_raw();
    OFFLINE.load(Relaxed) == me
}

/// Counts the closures dropped, whether they ran or not.
struct Token<'a>(&'a Atomic<usize>);

impl Drop for Token<'_> {
    fn drop(&mut self) {
        self.0.add(1, Relaxed);
    }
}

#[kunit_tests(rust_workqueue_scope)]
mod cases {
    use super::*;

    /// Items write into the caller's stack; every write is seen after the scope.
    #[test]
    fn borrows_from_the_stack() -> Result {
        let mut slots = [0u32; 16];
        scope!("scope_test_borrow", |s| -> Result {
            for (i, slot) in slots.iter_mut().enumerate() {
                s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
                    *slot = i as u32 + 1;
                })?;
            }
            Ok(())
        })?;
        for (i, slot) in slots.iter().enumerate() {
            assert_eq!(*slot, i as u32 + 1);
        }
        Ok(())
    }

    /// The join waits for items that are still running when the body returns.
    #[test]
    fn join_waits_for_every_item() -> Result {
        let done = Atomic::new(0usize);
        scope!("scope_test_join", |s| -> Result {
            for _ in 0..4 {
                let done = &done;
                s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
                    fsleep(Delta::from_millis(20));
                    done.fetch_add(1, Release);
                })?;
            }
            Ok(())
        })?;
        assert_eq!(done.load(Acquire), 4);
        Ok(())
    }

    /// A handle's join gives its item's result, on whatever thread the item ran.
    #[test]
    fn handles_give_results() -> Result {
        let sum = scope!("scope_test_handles", |s| -> Result<u64> {
            let mut handles = KVec::new();
            for i in 0..16u64 {
                handles.push(
                    s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || i * i)?,
                    GFP_KERNEL,
                )?;
            }
            Ok(handles.into_iter().map(|h| h.join()).sum())
        })?;
        assert_eq!(sum, (0..16u64).map(|i| i * i).sum());
        Ok(())
    }

    /// A handle joined before a worker could start its item (behind a running item of an
    /// ordered queue) calls the closure on the joining thread, without waiting for a worker.
    #[test]
    fn handle_join_calls_an_unstarted_item() -> Result {
        let queue = OwnedQueue::new_ordered(c"scope_test_handle_ordered")?;
        let me = current!().as_ptr().addr();
        let (started, go) = (Atomic::new(false), Atomic::new(false));
        let (here, blocked_ran) = scope!("scope_test_handle_join", |s| -> Result<(bool, bool)> {
            let (st, g) = (&started, &go);
            // Nothing waits for `go` if this fails.
            let first = s.try_spawn(&queue, GFP_KERNEL, move || {
                st.store(true, Release);
                while !g.load(Acquire) {
                    fsleep(Delta::from_micros(100));
                }
                true
            })?;
            let res = (|| -> Result<bool> {
                let second =
                    s.try_spawn(&queue, GFP_KERNEL, move || current!().as_ptr().addr() == me)?;
                while !started.load(Acquire) {
                    fsleep(Delta::from_micros(100));
                }
                // The ordered queue runs `first` until `go`: `second` cannot have started.
                Ok(second.join())
            })();
            // Whatever failed: `first`, and so the join, waits for it.
            go.store(true, Release);
            Ok((res?, first.join()))
        })?;
        assert!(here);
        assert!(blocked_ran);
        Ok(())
    }

    /// Divide and conquer: items spawn into the scope they run in and join the handles of the
    /// items they spawned; the scope's join also waits for items spawned by items.
    #[test]
    fn items_spawn_into_their_scope() -> Result {
        fn sum<'s>(s: &'s Scope<'s, '_>, v: &'s [u64], items: &'s Atomic<usize>) -> Result<u64> {
            if v.len() <= 16 {
                return Ok(v.iter().sum());
            }
            let (lo, hi) = v.split_at(v.len() / 2);
            let hi = s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
                sum(s, hi, items)
            })?;
            items.add(1, Relaxed);
            let lo = sum(s, lo, items);
            let hi = hi.join();
            Ok(lo? + hi?)
        }
        let mut v = KVec::new();
        for i in 0..1024u64 {
            v.push(i, GFP_KERNEL)?;
        }
        let (items, fire_and_forget) = (Atomic::new(0usize), Atomic::new(0usize));
        let total = scope!("scope_test_divide", |s| -> Result<u64> {
            // An item that spawns one more and returns without joining it: the scope's join
            // waits for that one too.
            let f = &fire_and_forget;
            s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
                let res = s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
                    fsleep(Delta::from_millis(20));
                    f.add(1, Relaxed);
                });
                if res.is_err() {
                    f.add(1, Relaxed);
                }
            })?;
            sum(s, &v, &items)
        })?;
        assert_eq!(total, 1023 * 1024 / 2);
        // 1024 / 16 leaves, one spawn per inner node.
        assert_eq!(items.load(Relaxed), 63);
        assert_eq!(fire_and_forget.load(Relaxed), 1);
        Ok(())
    }

    /// A handle moved into another item is joined there; results nobody joins are dropped once
    /// both the item and its handle are done with them, before the scope returns.
    #[test]
    fn handles_move_and_unjoined_results_drop() -> Result {
        let dropped = Atomic::new(0usize);
        let got = scope!("scope_test_handle_move", |s| -> Result<u32> {
            let a = s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, || 41u32)?;
            let b = s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || a.join() + 1)?;
            for _ in 0..4 {
                let d = &dropped;
                // The handle is dropped at once; the result, a token, after the closure.
                s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || Token(d))?;
            }
            Ok(b.join())
        })?;
        assert_eq!(got, 42);
        assert_eq!(dropped.load(Relaxed), 4);
        Ok(())
    }

    /// Results nobody joins are dropped while the scope still waits, never when it frees its
    /// items: one holds the handle of an earlier item and joins it when dropped, another spawns
    /// into the scope when dropped.
    #[test]
    fn unjoined_results_may_join_and_spawn() -> Result {
        struct JoinOnDrop<'s>(Option<ScopedJoinHandle<'s, u32>>, &'s Atomic<u32>);
        impl Drop for JoinOnDrop<'_> {
            fn drop(&mut self) {
                if let Some(h) = self.0.take() {
                    self.1.store(h.join(), Relaxed);
                }
            }
        }
        struct SpawnOnDrop<'s, 'e>(&'s Scope<'s, 'e>, &'s Atomic<usize>);
        impl Drop for SpawnOnDrop<'_, '_> {
            fn drop(&mut self) {
                let ran = self.1;
                if self
                    .0
                    .try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
                        ran.add(1, Relaxed);
                    })
                    .is_err()
                {
                    ran.add(1, Relaxed);
                }
            }
        }
        let (joined, ran) = (Atomic::new(0u32), Atomic::new(0usize));
        scope!("scope_test_result_drop", |s| -> Result {
            let first = s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, || 7u32)?;
            let j = &joined;
            // Neither handle is joined: the results are dropped by whoever comes last.
            s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
                JoinOnDrop(Some(first), j)
            })?;
            let r = &ran;
            s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
                SpawnOnDrop(s, r)
            })?;
            Ok(())
        })?;
        assert_eq!(joined.load(Relaxed), 7);
        assert_eq!(ran.load(Relaxed), 1);
        Ok(())
    }

    /// Items of a BH queue run in softirq context: one spawns into its scope from there
    /// (`GFP_ATOMIC`), and the joins' lockdep annotations agree with the class being taken in
    /// softirq (the kunit stage fails on the "inconsistent lock state" report they gave before
    /// they disabled bottom halves).
    #[test]
    fn bh_items_spawn_and_join() -> Result {
        let ran = Atomic::new(0usize);
        let got = scope!("scope_test_bh", |s| -> Result<u32> {
            let r = &ran;
            let h = s.try_spawn(workqueue::system_bh(), GFP_ATOMIC, move || {
                let res = s.try_spawn(workqueue::system_bh(), GFP_ATOMIC, move || {
                    r.add(1, Relaxed);
                });
                if res.is_err() {
                    r.add(1, Relaxed);
                }
                5u32
            })?;
            // Long enough for the BH item to run first, usually.
            fsleep(Delta::from_millis(10));
            Ok(h.join())
        })?;
        assert_eq!(got, 5);
        assert_eq!(ran.load(Relaxed), 1);
        Ok(())
    }

    /// Behind a running item of an ordered queue, the others cannot start: all of them are
    /// cancelled, and the join calls their closures on the test's thread, each once.
    #[test]
    fn cancel_before_start() -> Result {
        let queue = OwnedQueue::new_ordered(c"scope_test_ordered")?;
        let (ran, dropped) = (Atomic::new(0usize), Atomic::new(0usize));
        let here = Atomic::new(0usize);
        let me = current!().as_ptr().addr();
        let (started, go) = (Atomic::new(false), Atomic::new(false));
        let cancelled = scope!("scope_test_cancel", |s| -> Result<(usize, usize)> {
            let (r, st, g) = (&ran, &started, &go);
            let token = Token(&dropped);
            // Nothing waits for `go` if this fails.
            s.try_spawn(&queue, GFP_KERNEL, move || {
                let _token = token;
                st.store(true, Release);
                while !g.load(Acquire) {
                    fsleep(Delta::from_micros(100));
                }
                r.add(1, Relaxed);
            })?;
            let res = (|| -> Result<(usize, usize)> {
                for _ in 0..7 {
                    let (token, here) = (Token(&dropped), &here);
                    s.try_spawn(&queue, GFP_KERNEL, move || {
                        let _token = token;
                        if current!().as_ptr().addr() == me {
                            here.add(1, Relaxed);
                        }
                        r.add(1, Relaxed);
                    })?;
                }
                while !started.load(Acquire) {
                    fsleep(Delta::from_micros(100));
                }
                let cancelled = s.cancel_unstarted();
                // A second call finds nothing left to cancel. No assert in a body whose items
                // borrow this stack: a failed one ends the thread without the join.
                Ok((cancelled, s.cancel_unstarted()))
            })();
            // Whatever failed: the first item, and so the join, waits for it.
            go.store(true, Release);
            res
        })?;
        assert_eq!(cancelled, (7, 0));
        assert_eq!(ran.load(Relaxed), 8);
        assert_eq!(here.load(Relaxed), 7);
        assert_eq!(dropped.load(Relaxed), 8);
        Ok(())
    }

    /// A thread in reclaim (`PF_MEMALLOC`) that does not cancel anything: the join does not
    /// `flush_work()` items that have not started (which warns, `check_flush_dependency()`), it
    /// cancels them and calls their closures itself; every closure runs exactly once.
    #[test]
    fn memalloc_join_runs_every_closure_once() -> Result {
        let queue = OwnedQueue::new_ordered(c"scope_test_memalloc")?;
        let (ran, dropped) = (Atomic::new(0usize), Atomic::new(0usize));
        let (started, go) = (Atomic::new(false), Atomic::new(false));
        // SAFETY: `test_taint()` only reads the taint mask.
        let warned_before = unsafe { bindings::test_taint(bindings::TAINT_WARN) } != 0;
        // SAFETY: restored below, on this thread, before the test returns.
        let noreclaim = unsafe { bindings::memalloc_noreclaim_save() };
        let res = scope!("scope_test_memalloc", |s| -> Result<bool> {
            let may_wait = s.may_wait();
            let (r, st, g) = (&ran, &started, &go);
            let token = Token(&dropped);
            // Nothing waits for `go` if this fails.
            s.try_spawn(&queue, GFP_KERNEL, move || {
                let _token = token;
                st.store(true, Release);
                while !g.load(Acquire) {
                    fsleep(Delta::from_micros(100));
                }
                r.add(1, Relaxed);
            })?;
            let res = (|| -> Result {
                for _ in 0..7 {
                    let token = Token(&dropped);
                    s.try_spawn(&queue, GFP_KERNEL, move || {
                        let _token = token;
                        r.add(1, Relaxed);
                    })?;
                }
                while !started.load(Acquire) {
                    fsleep(Delta::from_micros(100));
                }
                Ok(())
            })();
            // Whatever failed: the first item, and so the join, waits for it.
            go.store(true, Release);
            res.map(|()| may_wait)
        });
        // SAFETY: saved above, on this thread.
        unsafe { bindings::memalloc_noreclaim_restore(noreclaim) };
        assert!(!res?);
        assert_eq!(ran.load(Relaxed), 8);
        assert_eq!(dropped.load(Relaxed), 8);
        // SAFETY: as above.
        let warned = unsafe { bindings::test_taint(bindings::TAINT_WARN) } != 0;
        // The join did not warn.
        assert!(warned_before || !warned);
        Ok(())
    }

    /// An item opens a scope of its own; the outer join waits for the inner items too, since
    /// the outer item returns only after its own join.
    #[test]
    fn nested_scopes() -> Result {
        let queue = OwnedQueue::new_ordered(c"scope_test_outer")?;
        let inner_ran = Atomic::new(0usize);
        let errors = Atomic::new(0usize);
        // Asserts in a kworker are not reported to KUnit: count, then assert here.
        let waited = Atomic::new(0usize);
        scope!("scope_test_outer", |s| -> Result {
            for _ in 0..2 {
                let (inner_ran, errors, waited) = (&inner_ran, &errors, &waited);
                s.try_spawn(&queue, GFP_KERNEL, move || {
                    let res = scope!("scope_test_inner", |inner| -> Result {
                        // A work item may not wait for items that have not started.
                        if inner.may_wait() {
                            waited.add(1, Relaxed);
                        }
                        for _ in 0..3 {
                            inner.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
                                inner_ran.add(1, Relaxed);
                            })?;
                        }
                        Ok(())
                    });
                    if res.is_err() {
                        errors.add(1, Relaxed);
                    }
                })?;
            }
            Ok(())
        })?;
        assert_eq!(errors.load(Relaxed), 0);
        assert_eq!(waited.load(Relaxed), 0);
        assert_eq!(inner_ran.load(Relaxed), 6);
        Ok(())
    }

    /// A scope with no item returns the body's value at once; the calling thread may wait.
    #[test]
    fn empty_scope() {
        let v = scope!("scope_test_empty", |s| {
            assert!(s.may_wait());
            42
        });
        assert_eq!(v, 42);
    }

    /// A join before `workqueue_init()` (pretended for this thread) calls `flush_work()` on no
    /// item, which would warn: it cancels those that have not started and calls them itself, and
    /// every closure still runs exactly once.
    #[test]
    fn join_before_workqueue_init() -> Result {
        let me = current!().as_ptr().addr();
        let (ran, here) = (Atomic::new(0usize), Atomic::new(0usize));
        let dropped = Atomic::new(0usize);
        OFFLINE.store(crate::task::Task::current_raw(), Relaxed);
        let res = scope!("scope_test_offline", |s| -> Result {
            for _ in 0..32 {
                let (ran, here, token) = (&ran, &here, Token(&dropped));
                s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
                    let _token = token;
                    ran.add(1, Relaxed);
                    if current!().as_ptr().addr() == me {
                        here.add(1, Relaxed);
                    }
                })?;
            }
            Ok(())
        });
        OFFLINE.store(core::ptr::null_mut(), Relaxed);
        res?;
        assert_eq!(ran.load(Relaxed), 32);
        assert_eq!(dropped.load(Relaxed), 32);
        pr_info!(
            "scope_test_offline: {} of 32 items run by the join\n",
            here.load(Relaxed)
        );
        Ok(())
    }

    /// Node placement is offered on unbound queues only: a per-CPU queue has no unbound view
    /// (`queue_work_node()` would warn), an unbound one has, and places items.
    #[test]
    fn node_spawn_needs_an_unbound_queue() -> Result {
        let percpu = OwnedQueue::new(c"scope_test_percpu", QueueFlag::Percpu.into(), 0)?;
        assert!(percpu.as_unbound().is_none());
        let unbound = OwnedQueue::new(c"scope_test_unbound", QueueFlag::Unbound.into(), 0)?;
        let queue = unbound.as_unbound().ok_or(EINVAL)?;
        let node = crate::alloc::NumaNode::next_with_cpus(None).ok_or(ENODEV)?;
        let ran = Atomic::new(0usize);
        scope!("scope_test_unbound_node", |s| {
            let ran = &ran;
            s.try_spawn_on_node(queue, node, GFP_KERNEL, move || {
                ran.add(1, Relaxed);
            })
            .map(drop)
        })?;
        assert_eq!(ran.load(Relaxed), 1);
        Ok(())
    }

    /// An item placed on a node runs, on every node with CPUs.
    #[test]
    fn try_spawn_on_every_node() -> Result {
        let ran = Atomic::new(0usize);
        let mut nodes = 0;
        scope!("scope_test_node", |s| -> Result {
            let first = crate::alloc::NumaNode::next_with_cpus(None).ok_or(ENODEV)?;
            let mut node = first;
            loop {
                let ran = &ran;
                s.try_spawn_on_node(workqueue::system_dfl(), node, GFP_KERNEL, move || {
                    ran.add(1, Relaxed);
                })?;
                nodes += 1;
                node = crate::alloc::NumaNode::next_with_cpus(Some(node)).ok_or(ENODEV)?;
                if node == first || nodes == 64 {
                    break;
                }
            }
            Ok(())
        })?;
        assert_eq!(ran.load(Relaxed), nodes);
        Ok(())
    }
}
