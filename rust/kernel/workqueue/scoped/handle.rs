// SPDX-License-Identifier: GPL-2.0

//! Handles on spawned items, which give their closures' results.

use super::item::{
    join_result,
    ScopedResult, //
};
use crate::sync::lockdep::LockdepMap;
use core::{
    marker::PhantomData,
    mem::ManuallyDrop,
    ptr::NonNull, //
};

/// A handle on an item spawned on a [`Scope`](super::Scope), whose [`ScopedJoinHandle::join`]
/// gives the closure's return value, as `std::thread::ScopedJoinHandle` does.
///
/// Dropping the handle does not wait for the item: the scope's join does. The result is
/// dropped with the handle if the item is done, or else right after the item's closure returns.
/// A leaked handle (`mem::forget`) leaks the result.
///
/// # Invariants
///
/// `item` points to an item owned by a scope of lifetime `'scope`, which frees it only at the
/// end of its join, after `'scope` ends for the handle; this handle is the only one for the
/// item, and takes or lets go of its result once (`join()` or the drop). `map` is the scope's.
pub struct ScopedJoinHandle<'scope, T> {
    item: NonNull<dyn ScopedResult<T> + 'scope>,
    map: &'static LockdepMap,
    scope: PhantomData<&'scope ()>,
}

// SAFETY: the handle only lets its owner take the result, a `T: Send`, on any thread: the item
// is `Sync` (its closure and result slots are claimed through atomics and the completion).
unsafe impl<T: Send> Send for ScopedJoinHandle<'_, T> {}

// SAFETY: a shared handle gives access to nothing: `join()` takes it by value.
unsafe impl<T: Send> Sync for ScopedJoinHandle<'_, T> {}

impl<'scope, T> ScopedJoinHandle<'scope, T> {
    /// Makes the handle of `item`, spawned on a scope whose lockdep map is `map`.
    ///
    /// # Safety
    ///
    /// `item` points to an item owned by a scope of lifetime `'scope`, which frees it only at
    /// the end of its join, after `'scope` ends; no other handle for the item exists or will be
    /// made, and nothing else takes or lets go of its result. `map` is the scope's.
    pub(super) unsafe fn new(
        item: NonNull<dyn ScopedResult<T> + 'scope>,
        map: &'static LockdepMap,
    ) -> Self {
        // INVARIANT: as the caller promises.
        Self {
            item,
            map,
            scope: PhantomData,
        }
    }

    /// Waits for the item and returns its closure's result.
    ///
    /// If the item has not started, its closure is called on the current thread instead: the
    /// join never waits for a worker to start it, so it may be called in reclaim, from a work
    /// item, and from an item of the same scope (the handle of an item it spawned).
    ///
    /// Must be called from a context that may sleep. Outside work items the join acquires the
    /// scope's lock class for lockdep, as the scope's join does: a lock held across it that the
    /// item takes is reported. Inside a work item it does not: an item joining an item it
    /// spawned into its own scope is what handles are for, and lockdep would take it for
    /// recursion (see the module's documentation).
    ///
    /// A closure called here runs on the joining thread's stack, on top of what it is doing:
    /// deep divide and conquer in items that join handles nests closures on a kernel stack.
    pub fn join(self) -> T {
        crate::task::might_sleep();
        if !crate::workqueue::in_work_item() {
            let this: fn(Self) -> T = Self::join;
            self.map.acquire_release_bh(this as usize);
        }
        // The result is taken below, not let go of by the drop.
        let this = ManuallyDrop::new(self);
        // SAFETY: by the type invariants the item is alive for `'scope`, which this handle
        // borrows, and this is its only handle, which `join()` consumes: it takes the result
        // once.
        unsafe { join_result(this.item.as_ref()) }
    }
}

impl<T> Drop for ScopedJoinHandle<'_, T> {
    fn drop(&mut self) {
        // SAFETY: by the type invariants the item is alive for `'scope`, and this is its only
        // handle, which lets go of the result once, here (`join()` does not drop the handle).
        unsafe { self.item.as_ref().release_result() };
    }
}
