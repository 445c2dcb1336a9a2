// SPDX-License-Identifier: GPL-2.0

//! The items of a [`Scope`](super::Scope): a closure, the slot of its result and the claim that
//! makes exactly one thread call the closure (its worker, a thread joining its handle, or the
//! scope's join).

use super::super::{
    HasWork,
    RawWorkItem,
    Work,
    WorkItem,
    WorkItemPointer, //
};
use crate::{
    bindings,
    prelude::*,
    str::CStr,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Completion,
        LockClassKey, //
    },
};
use core::{
    cell::UnsafeCell,
    ptr::NonNull, //
};

/// An item of a scope, with its closure and result types erased.
///
/// The item may borrow for the scope's `'scope` only, but is stored as `'static`, as
/// `std::thread::scope` stores its closures: the scope frees every item at the end of its join,
/// before `'scope` ends, and a `'scope` in the type would make the scope's own drop outlive
/// `'scope`.
///
/// # Invariants
///
/// `item` is pinned: it was initialised in place in its box, which `Entry` only holds and drops,
/// and never moves it out of (see `Scope::spawn_inner` for why the box is not a `Pin`).
pub(super) struct Entry {
    pub(super) item: KBox<dyn ScopedWork>,
}

/// A [`ScopedItem`] without its closure and result types: the claim of its closure and the
/// operations of its [`Work`].
///
/// Whoever calls the closure first claims it ([`ScopedWork::claim`]): the worker the item runs
/// on, a thread joining its [`ScopedJoinHandle`](super::ScopedJoinHandle), or the scope's join.
/// Exactly one claim succeeds, so the closure is called once whatever the order; cancelling the
/// item only keeps a worker from starting it for nothing.
pub(super) trait ScopedWork: Send + Sync {
    /// Claims the closure: returns true for the first caller only.
    fn claim(&self) -> bool;
    /// Calls the closure, stores its result and marks the item done.
    ///
    /// # Safety
    ///
    /// [`ScopedWork::claim`] returned true to the caller, and this was not called before.
    unsafe fn run_claimed(&self);
    /// Waits until whoever claimed the closure has called it and stored its result. Must be
    /// called from a context that may sleep, after a claim that failed.
    fn wait_done(&self);
    /// `cancel_work()`: whether the item was taken off its queue before it started.
    fn cancel(&self) -> bool;
    /// `cancel_work_sync()`: also waits for the item's function if it is running.
    fn cancel_sync(&self);
    /// `flush_work()`: whether it waited for the item.
    fn flush(&self) -> bool;
}

/// The result of a [`ScopedItem`], typed, for its [`ScopedJoinHandle`](super::ScopedJoinHandle).
pub(super) trait ScopedResult<T>: ScopedWork {
    /// Takes the closure's result.
    ///
    /// # Safety
    ///
    /// The item is done: the caller's [`ScopedWork::claim`] succeeded and it called
    /// [`ScopedWork::run_claimed`], or its claim failed and [`ScopedWork::wait_done`] returned.
    /// This was not called before for the item.
    unsafe fn take_result(&self) -> T;
}

/// A closure spawned as a work item, with the slot of its result.
///
/// # Invariants
///
/// - `func` is accessed only by the thread whose `claim()` succeeded (`claimed` went from false
///   to true), once.
/// - `result` is written only by that thread, before it completes `done`, and read only after
///   `done` was completed, by the item's one [`ScopedJoinHandle`](super::ScopedJoinHandle), or
///   dropped with the item.
#[pin_data]
pub(super) struct ScopedItem<F, T> {
    #[pin]
    work: Work<ScopedItem<F, T>>,
    /// Whether the closure was claimed; see [`ScopedWork::claim`].
    claimed: Atomic<bool>,
    /// Completed once the closure returned and its result is stored.
    #[pin]
    done: Completion,
    /// Taken by the thread that claimed it.
    func: UnsafeCell<Option<F>>,
    /// The closure's return value until a handle takes it.
    result: UnsafeCell<Option<T>>,
}

impl<F, T> ScopedItem<F, T> {
    /// An item that calls `f`, with a `Work` of the lock class `key` named `name`.
    pub(super) fn new(
        name: &'static CStr,
        key: Pin<&'static LockClassKey>,
        f: F,
    ) -> impl PinInit<Self>
    where
        F: FnOnce() -> T + Send,
        T: Send,
    {
        pin_init!(Self {
            work <- Work::new(name, key),
            claimed: Atomic::new(false),
            done <- Completion::new(),
            func: UnsafeCell::new(Some(f)),
            result: UnsafeCell::new(None),
        })
    }
}

crate::impl_has_work! {
    impl{F, T} HasWork<ScopedItem<F, T>> for ScopedItem<F, T> { self.work }
}

// SAFETY: the closure and result slots are shared between threads only as the type invariants
// say: `func` by the one thread whose claim succeeded (an atomic exchange), `result` written
// before and read after the completion `done`, which orders them; both are `Send`.
unsafe impl<F: Send, T: Send> Sync for ScopedItem<F, T> {}

impl<F: FnOnce() -> T + Send, T: Send> ScopedWork for ScopedItem<F, T> {
    fn claim(&self) -> bool {
        // Relaxed: the closure's captures were published with the item, by its queueing (to a
        // worker) or by the scope's lock (to the join); the claim only decides who calls it.
        !self.claimed.xchg(true, Relaxed)
    }

    unsafe fn run_claimed(&self) {
        // SAFETY: the caller's claim succeeded and this is its only call: the closure slot is
        // this thread's, by the type invariants.
        let func = unsafe { (*self.func.get()).take() };
        if let Some(func) = func {
            let ret = func();
            // SAFETY: only this thread writes the result, before completing `done`; readers wait
            // for `done`.
            unsafe { *self.result.get() = Some(ret) };
        }
        self.done.complete_all();
    }

    fn wait_done(&self) {
        self.done.wait_for_completion();
    }

    fn cancel(&self) -> bool {
        self.work.cancel()
    }

    fn cancel_sync(&self) {
        self.work.cancel_sync();
    }

    fn flush(&self) -> bool {
        self.work.flush()
    }
}

impl<F: FnOnce() -> T + Send, T: Send> ScopedResult<T> for ScopedItem<F, T> {
    unsafe fn take_result(&self) -> T {
        // SAFETY: the item is done, by the safety requirements: whoever called the closure wrote
        // the result before completing `done`, and nobody else reads it.
        let ret = unsafe { (*self.result.get()).take() };
        // SAFETY: `run_claimed()` stores the result before it completes `done`, and this is the
        // only take: it is there.
        unsafe { ret.unwrap_unchecked() }
    }
}

impl<F: FnOnce() -> T + Send, T: Send> WorkItem for ScopedItem<F, T> {
    type Pointer = ScopedItemRef<F, T>;

    fn run(this: ScopedItemRef<F, T>) {
        // SAFETY: by the invariants of `ScopedItemRef`, the item is alive while its function
        // runs.
        let item = unsafe { this.0.as_ref() };
        if item.claim() {
            // SAFETY: the claim succeeded, and only the claimer calls this.
            unsafe { item.run_claimed() };
        }
        // `this` is not used again: the scope may free the item as soon as this returns.
    }
}

/// A non-owning pointer to a queued [`ScopedItem`]; the scope owns the item.
///
/// # Invariants
///
/// `self.0` points to an item owned by a [`Scope`], which frees it only after its function, if
/// a worker started it, returned.
pub(super) struct ScopedItemRef<F, T>(pub(super) NonNull<ScopedItem<F, T>>);

// SAFETY: the pointer only hands the item over to the worker that runs it: the item is `Sync`
// (its closure is called by whoever claims it), and the worker may call the closure, which is
// `Send`, and store its result, which is `Send`.
unsafe impl<F: FnOnce() -> T + Send, T: Send> Send for ScopedItemRef<F, T> {}

// SAFETY: `__enqueue` passes the `work_struct` of the item `self` points to, which is valid for
// the call. By the type invariant the scope keeps the item alive until its function, if it
// started, has returned, and the join's `cancel_work_sync()` of every item waits for that, so the
// pointer stays valid as long as `RawWorkItem` requires. `Pin<KBox<T>>`'s implementation cannot
// be used: its `run` frees the item, which the join still reads.
unsafe impl<F: FnOnce() -> T + Send, T: Send> RawWorkItem<0> for ScopedItemRef<F, T> {
    type EnqueueOutput = bool;

    unsafe fn __enqueue<Q>(self, queue_work_on: Q) -> bool
    where
        Q: FnOnce(*mut bindings::work_struct) -> bool,
    {
        // SAFETY: by the type invariant `self.0` points to a live item.
        let work = unsafe { Work::raw_get(core::ptr::addr_of!((*self.0.as_ptr()).work)) };
        queue_work_on(work)
    }
}

// SAFETY: `ScopedItem`'s `Work` is initialised by `Work::new`, whose function is this `run`.
unsafe impl<F: FnOnce() -> T + Send, T: Send> WorkItemPointer<0> for ScopedItemRef<F, T> {
    unsafe extern "C" fn run(ptr: *mut bindings::work_struct) {
        // The `work_struct` is the one `__enqueue` queued, inside a `Work<ScopedItem<F, T>>`.
        let ptr = ptr.cast::<Work<ScopedItem<F, T>>>();
        // SAFETY: `ptr` points to the `work` field of a live `ScopedItem`.
        let item = unsafe { <ScopedItem<F, T> as HasWork<_>>::work_container_of(ptr) };
        // SAFETY: `item` is not null; by the scope's invariants it stays alive until this
        // function returns.
        // INVARIANT: as just said.
        let this = ScopedItemRef(unsafe { NonNull::new_unchecked(item) });
        <ScopedItem<F, T> as WorkItem>::run(this)
    }
}
