// SPDX-License-Identifier: GPL-2.0

//! The items of a [`Scope`](super::Scope): a closure, the slot of its result and the claim that
//! makes exactly one thread call the closure (its worker, a thread joining its handle, or the
//! scope's join).

use crate::{
    bindings,
    prelude::*,
    str::CStr,
    sync::{
        atomic::{
            Atomic,
            Full,
            Relaxed, //
        },
        Completion,
        LockClassKey, //
    },
    workqueue::{
        HasWork,
        RawWorkItem,
        Work,
        WorkItem,
        WorkItemPointer, //
    },
};
use core::{
    cell::UnsafeCell,
    mem::MaybeUninit,
    ptr::NonNull, //
};

/// An item of a scope, with its closure and result types erased.
///
/// The item may borrow for the scope's `'scope` only, but is stored as `'static`, as
/// `std::thread::scope` stores its closures: the scope frees every item at the end of its join,
/// before `'scope` ends, and a `'scope` in the type would make the scope's own drop outlive
/// `'scope`. Freeing an item runs no code of the scope's users: its closure was called, and its
/// result was taken, dropped or leaked with its handle, before (see [`ScopedItem`]).
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
    /// Calls the closure, stores its result (or drops it, if the item's handle is gone) and
    /// marks the item done.
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
    /// The caller is the item's handle, which calls this or [`ScopedResult::release_result`],
    /// once.
    unsafe fn take_result(&self) -> T;
    /// Lets go of the result without taking it: drops it now if it is stored, or leaves it to
    /// the thread that calls the closure.
    ///
    /// # Safety
    ///
    /// The caller is the item's handle, which calls this or [`ScopedResult::take_result`],
    /// once.
    unsafe fn release_result(&self);
}

/// Claims the closure of `item` and calls it on the current thread; returns whether it did.
pub(super) fn call_if_unclaimed<W: ScopedWork + ?Sized>(item: &W) -> bool {
    if !item.claim() {
        return false;
    }
    // Off its queue if it has not started: no worker needs to start for nothing. If a worker
    // already took it, the worker finds the closure claimed and returns.
    item.cancel();
    // SAFETY: the claim above succeeded, and only the claimer calls this.
    unsafe { item.run_claimed() };
    true
}

/// Waits for `item`, calling its closure here if nobody claimed it yet, and takes its result.
///
/// # Safety
///
/// As [`ScopedResult::take_result`]'s second condition: the caller is the item's handle.
pub(super) unsafe fn join_result<T>(item: &dyn ScopedResult<T>) -> T {
    if !call_if_unclaimed(item) {
        item.wait_done();
    }
    // SAFETY: the item is done: this thread called it, or whoever claimed it did and
    // `wait_done()` returned; the caller is its handle, by the safety requirements.
    unsafe { item.take_result() }
}

/// A closure spawned as a work item, with the slot of its result.
///
/// The result is dropped by the last of the two that hold it, as `std`'s scoped threads do:
/// the thread that calls the closure (once it stored the result) and the item's handle (once it
/// took the result, or was dropped). So an untaken result is dropped where the scope's join
/// still waits (before `done` is completed, or by a handle dropped in the body or in an item),
/// and never when the join frees the items, where a result that holds another item's handle or
/// spawns into the scope would reach freed items or a scope done joining. A leaked handle leaks
/// its result.
///
/// # Invariants
///
/// - `func` is initialised until the thread whose `claim()` succeeded (`claimed` went from
///   false to true) reads it, once; nobody else touches it.
/// - `result` is written only by that thread, once, before it decrements `result_refs` and
///   before it completes `done`; it is read, at most once, only by the item's one
///   [`ScopedJoinHandle`](super::ScopedJoinHandle) after `done` was completed, or dropped by
///   whoever brings `result_refs` to 0.
/// - `result_refs` counts the holders of `result` still to let go of it: 2, then 1 when either
///   the closure's thread stored it or the handle was dropped without taking it, and 0 when
///   both happened.
#[pin_data(PinnedDrop)]
pub(super) struct ScopedItem<F, T> {
    #[pin]
    work: Work<ScopedItem<F, T>>,
    /// Whether the closure was claimed; see [`ScopedWork::claim`].
    claimed: Atomic<bool>,
    /// Completed once the closure returned and its result is stored.
    #[pin]
    done: Completion,
    /// Read by the thread that claimed it.
    func: UnsafeCell<MaybeUninit<F>>,
    /// The closure's return value, once stored, until its handle takes it or it is dropped.
    result: UnsafeCell<MaybeUninit<T>>,
    /// See the type's documentation.
    result_refs: Atomic<u32>,
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
        // INVARIANT: `func` is initialised and unclaimed, there is no result, and both its
        // holders are still to come.
        pin_init!(Self {
            work <- Work::new(name, key),
            claimed: Atomic::new(false),
            done <- Completion::new(),
            func: UnsafeCell::new(MaybeUninit::new(f)),
            result: UnsafeCell::new(MaybeUninit::uninit()),
            result_refs: Atomic::new(2),
        })
    }
}

#[pinned_drop]
impl<F, T> PinnedDrop for ScopedItem<F, T> {
    fn drop(self: Pin<&mut Self>) {
        // An item the scope frees after its join was claimed and called: nothing to drop (its
        // result was taken or dropped, or its handle leaked it). One that could not be recorded
        // was never queued nor claimed: its closure is dropped uncalled.
        if !self.claimed.load(Relaxed) {
            // SAFETY: unclaimed, so `func` is initialised and nobody else may touch it: the item
            // is being dropped.
            unsafe { (*self.func.get()).assume_init_drop() };
        }
    }
}

crate::impl_has_work! {
    impl{F, T} HasWork<ScopedItem<F, T>> for ScopedItem<F, T> { self.work }
}

// SAFETY: the closure and result slots are shared between threads only as the type invariants
// say: `func` by the one thread whose claim succeeded (an atomic exchange), `result` written
// before and read after the completion `done`, or dropped by whoever brings `result_refs` to 0
// (a fully ordered decrement, which orders the write before the drop); both are `Send`.
unsafe impl<F: Send, T: Send> Sync for ScopedItem<F, T> {}

impl<F: FnOnce() -> T + Send, T: Send> ScopedWork for ScopedItem<F, T> {
    fn claim(&self) -> bool {
        // Relaxed: the closure's captures were published with the item before anyone could
        // claim it: by its queueing (to a worker), by the scope's lock (to the join), or by
        // whatever sent the handle to the joining thread (or program order on the spawning
        // thread); the claim only decides who calls it.
        !self.claimed.xchg(true, Relaxed)
    }

    unsafe fn run_claimed(&self) {
        // SAFETY: the caller's claim succeeded and this is its only call: `func` is initialised
        // and this thread's, by the type invariants.
        let func = unsafe { (*self.func.get()).assume_init_read() };
        let ret = func();
        // SAFETY: only this thread writes the result, once, before the decrement below and
        // before completing `done`.
        unsafe { (*self.result.get()).write(ret) };
        // INVARIANT: the result is stored; if the handle let go of it already, this is the last
        // holder and drops it, before `done`, so that whatever its drop does (spawn into the
        // scope, join another handle) happens while the scope's join still waits.
        if self.result_refs.fetch_sub(1, Full) == 1 {
            // SAFETY: the result was written above, and its handle will not read it: it let go.
            unsafe { (*self.result.get()).assume_init_drop() };
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
        // the result before completing `done`; the handle still holds it, so nobody dropped it,
        // and this is the handle's only read.
        unsafe { (*self.result.get()).assume_init_read() }
    }

    unsafe fn release_result(&self) {
        // INVARIANT: the handle lets go; if the result is stored already, it is the last holder
        // and drops it. Fully ordered: the write of the result comes before this decrement.
        if self.result_refs.fetch_sub(1, Full) == 1 {
            // SAFETY: the closure's thread stored the result and let go of it; the handle, the
            // only reader, is going.
            unsafe { (*self.result.get()).assume_init_drop() };
        }
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
