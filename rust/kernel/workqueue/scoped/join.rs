// SPDX-License-Identifier: GPL-2.0

//! The scope's list of items and its join.

use super::{
    item::{
        call_if_unclaimed,
        Entry,
        ScopedWork, //
    },
    Scope, //
};
use crate::{
    alloc::{
        kvec::PushError,
        AllocError,
        Flags,
        KVec, //
    },
    bindings, //
};

impl Scope<'_, '_> {
    /// Whether the join may call `flush_work()`: not before `workqueue_init()`, when no worker
    /// runs and `flush_work()` warns.
    fn may_flush() -> bool {
        #[cfg(CONFIG_RUST_WORKQUEUE_SCOPE_KUNIT_TEST)]
        if super::tests::pretend_offline() {
            return false;
        }
        // SAFETY: `workqueue_online()` only reads a flag.
        unsafe { bindings::workqueue_online() }
    }

    /// Adds `entry` to `items`, growing it outside the lock when it is full.
    ///
    /// # Errors
    ///
    /// Returns [`AllocError`] if a larger vector could not be allocated with `flags`; `entry`
    /// is dropped then, outside the lock.
    pub(super) fn record(&self, mut entry: Entry, flags: Flags) -> Result<(), AllocError> {
        loop {
            let mut items = self.items.lock();
            entry = match items.push_within_capacity(entry) {
                Ok(()) => return Ok(()),
                Err(PushError(entry)) => entry,
            };
            // Room for twice as many, allocated with the lock released.
            let want = items.capacity().max(4) * 2;
            drop(items);
            let mut spare = KVec::with_capacity(want, flags)?;
            let mut items = self.items.lock();
            // Unless another thread grew it meanwhile, the entries move to the larger vector,
            // within its capacity; what is left in `spare` (the old vector, emptied, or the
            // unused new one) is freed after the lock is released.
            if items.capacity() < want {
                core::mem::swap(&mut *items, &mut spare);
                for e in spare.drain_all() {
                    // The entries number at most the old capacity, below `want`, the new one:
                    // this cannot fail.
                    let _ = items.push_within_capacity(e);
                }
            }
            drop(items);
            drop(spare);
        }
    }

    /// Returns the `i`th item.
    ///
    /// # Safety
    ///
    /// `i` is below the number of entries, and the join has not freed the items yet; the
    /// reference must not be used after that.
    unsafe fn item(&self, i: usize) -> &dyn ScopedWork {
        let items = self.items.lock();
        let item: *const dyn ScopedWork = &*items[i].item;
        drop(items);
        // SAFETY: by `Scope`'s type invariants (`scoped.rs`) the item is never moved (a push may
        // move the boxes in `items`, not the items) nor freed before the end of the join, which
        // the caller has not reached.
        unsafe { &*item }
    }

    /// Calls the closures of items nobody else calls, waits for the others, then frees all
    /// items, including those items spawned while the join ran.
    ///
    /// # Safety
    ///
    /// Called once, by `scope_with_key` after the body returned: from then on nothing but the
    /// join uses the items, and no handle is used any more (each borrows `'scope`, which has
    /// ended for the body), so freeing them leaves no dangling reference.
    pub(super) unsafe fn join(&self) {
        let may_wait = self.may_wait() && Self::may_flush();
        let mut start = 0;
        loop {
            // The items spawned so far and not yet joined; those that items spawn meanwhile are
            // joined in the next round.
            let end = self.items.lock().len();
            if start == end {
                break;
            }
            // A thread that may not wait for items that have not started calls their closures
            // first, so that none that a running item waits for is left behind a wait below.
            // Before `workqueue_init()` none has started: all are called here.
            if !may_wait {
                for i in start..end {
                    // SAFETY: `i < end`, the number of entries, and the items are freed only
                    // below, after the loop.
                    call_if_unclaimed(unsafe { self.item(i) });
                }
            }
            for i in start..end {
                // SAFETY: as above.
                let item = unsafe { self.item(i) };
                // Waits until it has run if it is still queued (the thread may wait).
                if may_wait {
                    item.flush();
                }
                // Cancelled before it started: its closure is still unclaimed. Otherwise a
                // worker or a handle's join claimed it: wait until they have called it.
                if !call_if_unclaimed(item) {
                    item.wait_done();
                }
                // A worker that started the item may still be in its function, if only to find
                // the closure claimed: the item must outlive that.
                item.cancel_sync();
            }
            start = end;
        }
        // INVARIANT: every item's closure has been called and has returned, its result was
        // taken, dropped or leaked, and no worker runs the function of any: nothing refers to the
        // items any more, and freeing them (outside the lock) runs none of the users' code.
        let items = core::mem::take(&mut *self.items.lock());
        drop(items);
    }
}
