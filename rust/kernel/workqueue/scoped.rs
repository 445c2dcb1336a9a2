// SPDX-License-Identifier: GPL-2.0

//! Scoped work: work items that may borrow from the caller's stack.
//!
//! [`scope!`] is the kernel's counterpart of `std::thread::scope`: its body gets a [`Scope`] on
//! which it spawns closures as work items, on any queue and, for unbound queues, on a given
//! node. The closures may borrow anything that outlives the call, because [`scope!`] returns only
//! after every spawned closure has run exactly once: on a worker, or, if its item was cancelled
//! before it started, on the calling thread in the join.
//!
//! The join is straight-line code in [`scope_with_key`] after the body returned, not a
//! destructor: `mem::forget` cannot skip it (the pre-1.0 `thread::scoped` joined in `Drop`,
//! which rust-lang/rust#24292 showed unsound once leaking became safe).
//!
//! # Lockdep
//!
//! Items are initialised with the scope's lock class, one per call site of [`scope!`], which the
//! worker holds while an item runs (`process_one_work()`). The join acquires the same class
//! through a static [`LockdepMap`] of the call site, as `flush_work()` does, but always, not only
//! when an item is still pending or running: a caller that joins while holding a lock that one of
//! its items takes gets a lockdep report even when the item happened to finish first. The class
//! is named after the call site unless [`scope!`] is given a name, and the join is recorded at
//! the caller's instance of [`scope_with_key`], whose symbol names the caller.
//!
//! A limitation: a scope opened inside an item of a scope of the same call site (recursion, as a
//! divide-and-conquer function would do) is reported as recursive locking, as a `flush_work()` of
//! the same class from inside a work item of that class is, although it cannot deadlock when
//! every level's items are its own. A subclass per nesting level would lift it, but an item does
//! not know the level of the scope that spawned it without one more field in every item, and
//! lockdep has eight subclasses; until a user needs it, nested scopes come from different call
//! sites (as `kernel::mtjob`'s nested jobs do).
//!
//! # Forward progress
//!
//! An item that has not started waits for an idle worker of its queue, and creating a worker
//! allocates with `GFP_KERNEL`. Only `WQ_MEM_RECLAIM` queues have a rescuer. So the join waits
//! for an item that has not started only when the calling thread may wait for one
//! ([`Scope::may_wait`]: not in reclaim, not in a work item); otherwise it cancels the item and
//! calls its closure itself, and waits only for items already running. A caller that would
//! rather run the closures of items that have not started yet than wait for a worker calls
//! [`Scope::cancel_unstarted`] first; the join calls them all the same. Either way every closure
//! is called exactly once, and no caller needs to redo cancelled work by hand.
//!
//! [`scope!`]: crate::workqueue::scope

use super::{
    Queue,
    RawWorkItem,
    UnboundQueue,
    Work,
    WorkItem,
    WorkItemPointer, //
};
use crate::{
    alloc::{
        AllocError,
        Flags,
        KBox,
        KVec,
        NumaNode, //
    },
    bindings,
    prelude::*,
    str::CStr,
    sync::{
        lockdep::LockdepMap,
        LockClassKey, //
    },
};
use core::{
    cell::{
        RefCell,
        UnsafeCell, //
    },
    marker::PhantomData,
    ptr::NonNull, //
};

/// Runs `body` with a [`Scope`] and waits for every work item it spawned.
///
/// `scope!("name", |s| ...)` is [`scope_with_key`] with a lock class of its own for the call site,
/// as [`new_work!`](crate::workqueue::new_work) makes one for a work item. Without a name,
/// `scope!(|s| ...)` names the class after the call site's file and line, as `new_work!()` does.
///
/// If the calling thread dies while the scope is open (an oops, or a Rust panic, which is
/// `BUG()`), it is parked with its stack kept; see [`scope_with_key`].
///
/// # Examples
///
/// ```
/// use kernel::sync::atomic::{Atomic, Relaxed};
/// use kernel::workqueue::{self, scope};
///
/// let mut parts = [0u64; 4];
/// let drops = Atomic::new(0u32);
/// scope!("doc_sum", |s| -> Result {
///     for (i, part) in parts.iter_mut().enumerate() {
///         let drops = &drops;
///         s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
///             *part = (i as u64 * 100..(i as u64 + 1) * 100).sum();
///             drops.add(1, Relaxed);
///         })?;
///     }
///     Ok(())
/// })?;
/// // Every item ran and the borrows of `parts` and `drops` ended with the scope.
/// assert_eq!(parts.iter().sum::<u64>(), (0..400).sum());
/// assert_eq!(drops.load(Relaxed), 4);
///
/// // Without a name: the class is named after this file and line.
/// let mut x = 0;
/// scope!(|s| s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, || x += 1))?;
/// assert_eq!(x, 1);
/// # Ok::<(), Error>(())
/// ```
// Exported under a hidden name and re-exported as `kernel::workqueue::scope`: `#[macro_export]` is
// the only way for a `macro_rules!` macro to reach other crates, and it puts it at the crate root.
#[doc(hidden)]
#[macro_export]
macro_rules! __workqueue_scope {
    ($name:literal, $body:expr $(,)?) => {
        $crate::__workqueue_scope!(@__named $crate::optional_name!($name), $body)
    };
    // Internal: the two public arms with the name made.
    (@__named $cname:expr, $body:expr) => {{
        // Statics, so that the name has one address however often the call site is inlined or
        // monomorphised (lockdep compares a class's names by address), and the join's lockdep
        // map is made at build time, once per call site, as `STATIC_LOCKDEP_MAP_INIT()` does.
        // `$body` is expanded outside the block that names them (items are not hygienic).
        let (name, key, map) = {
            static NAME: &$crate::str::CStr = $cname;
            static KEY: $crate::sync::LockClassKey =
                // SAFETY: a static, which is never dropped nor moved.
                unsafe { $crate::sync::LockClassKey::new_static() };
            static MAP: $crate::sync::lockdep::LockdepMap =
                $crate::sync::lockdep::LockdepMap::new_static(NAME, &KEY);
            (NAME, $crate::prelude::Pin::static_ref(&KEY), &MAP)
        };
        $crate::workqueue::scope_with_key(name, key, map, $body)
    }};
    ($body:expr $(,)?) => {
        $crate::__workqueue_scope!(@__named $crate::optional_name!(), $body)
    };
}

/// Runs `body` with a [`Scope`] whose items use the lock class `key` named `name` and whose join
/// acquires `map`, then waits for every item spawned on it.
///
/// Must be called from a context that may sleep. `map` is of the class `key` (a
/// [`LockdepMap::new_static`] of `name` and `key`). Lockdep compares the names of a class by
/// address: every scope of `key` must pass the same `name` pointer, such as the value of a
/// `static` (as [`scope!`](crate::workqueue::scope) does, with a static map per call site).
///
/// # Guarantees
///
/// When this function returns, the closure of every item spawned on the scope has been called
/// exactly once and has returned: on a worker, or on the calling thread in the join if the item
/// was cancelled before it started ([`Scope::cancel_unstarted`], or the join's own cancel when
/// the thread may not wait, see [`Scope::may_wait`]). The items' memory is freed and no workqueue
/// holds a pointer to it. Closures must therefore not wait for one another: two of them may run
/// one after the other on the calling thread.
///
/// Before `workqueue_init()`, where no worker runs yet, the join cancels every item and calls
/// its closure itself.
///
/// # The death of the calling thread
///
/// If the calling thread dies inside the scope (an oops in `body` or in a closure the join calls,
/// a Rust panic there, which is `BUG()`, or a `kthread_exit()`), nothing is unwound and the join
/// never runs, while items may still be queued or running with borrows of the thread's stack.
/// The scope lends the stack for as long as it is open (`CurrentTask::lend_stack()`), so the
/// thread is parked instead of exiting (`make_task_dead()` and `do_exit()`, `kernel/exit.c`; on
/// x86 `oops_end()` does not rewind its stack): it never runs again, and its stack, its memory
/// and the locks it held stay. Items that finish do so on valid memory; items that wait for
/// something the thread held wait forever, as waiters on any oopsed task's locks do. Only
/// `panic_on_oops` (or `panic_on_warn` for the `kthread_exit()`) makes it a panic.
///
/// A failed KUnit assertion in the body is such a `kthread_exit()`: the test's thread is parked
/// (with a warning), and KUnit waits for it until its timeout and then for ever in
/// `kthread_stop()`. Tests check their results after the scope, not in its body.
pub fn scope_with_key<'env, F, T>(
    name: &'static CStr,
    key: Pin<&'static LockClassKey>,
    map: &'static LockdepMap,
    body: F,
) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    crate::task::might_sleep();
    // Where lockdep records the join, a diagnostic hint: this function's instance for `body`'s
    // type, whose symbol usually names the caller (a closure's type path is that of the function
    // defining it). Not guaranteed: identical instances may be merged, a `fn` pointer body shares
    // one instance among callers, and kallsyms leaves out symbols of 512 characters or more, for
    // which `%pS` then prints a neighbour.
    let this: fn(&'static CStr, Pin<&'static LockClassKey>, &'static LockdepMap, F) -> T =
        scope_with_key::<F, T>;
    let ip = this as usize;
    // INVARIANT: there is no item yet.
    let scope = Scope {
        items: RefCell::new(KVec::new()),
        name,
        key,
        scope: PhantomData,
        env: PhantomData,
    };
    let task = current!();
    // SAFETY: ended below, in this frame, after the join: then every item has returned and
    // nothing borrows this stack any more. Nothing in between returns early (kernel panics do
    // not unwind).
    unsafe { task.lend_stack() };
    let ret = body(&scope);
    // The body may have returned a guard: the join sleeps.
    crate::task::might_sleep();
    // As `flush_work()` does, but whether or not an item is still running, and even if no item
    // could be spawned: the caller's held locks now come before the class the items run under.
    map.acquire_release(ip);
    scope.join();
    // SAFETY: lent above; every item has returned.
    unsafe { task.end_stack_loan() };
    ret
}

/// What the scope knows of an item.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Queued; may or may not have started.
    Queued,
    /// A `cancel_work()` found it running or finished: it will not be queued again.
    Started,
    /// Cancelled before it started: its closure is the scope's thread's, to call in the join.
    Cancelled,
    /// Cancelled, and its closure called by the join.
    Ran,
}

/// An item of a scope, with its closure type erased.
///
/// The item may borrow for the scope's `'scope` only, but is stored as `'static`, as
/// `std::thread::scope` stores its closures: the scope frees every item in its join, before
/// `'scope` ends, and a `'scope` in the type would make the scope's own drop outlive `'scope`.
///
/// # Invariants
///
/// `item` is pinned: it was initialised in place in its box, which `Entry` only holds and drops,
/// and never moves it out of (see `Scope::spawn_inner` for why the box is not a `Pin`).
struct Entry {
    item: KBox<dyn ScopedWork>,
    state: State,
}

/// A [`ScopedItem`] without its closure type: the operations of its [`Work`].
trait ScopedWork {
    /// `cancel_work()`: whether the item was taken off its queue before it started.
    fn cancel(&self) -> bool;
    /// `cancel_work_sync()`.
    fn cancel_sync(&self);
    /// `flush_work()`: whether it waited for the item.
    fn flush(&self) -> bool;
    /// Calls the closure on the current thread.
    ///
    /// # Safety
    ///
    /// [`ScopedWork::cancel`] returned true for the item, and this was not called before: no
    /// worker claimed it, so the closure slot is the caller's.
    unsafe fn run_cancelled(&self);
}

/// A scope in which work items that borrow from the caller are spawned.
///
/// Made by [`scope!`](crate::workqueue::scope) or [`scope_with_key`], and only lent to their
/// body.
///
/// `'scope` is the lifetime of the scope, `'env` that of the borrows the items may hold. Both are
/// invariant, as in `std::thread::Scope`. `Scope` is not `Sync`: items cannot spawn into it, a
/// nested scope is opened instead.
///
/// While it is open, its thread's stack is lent (`CurrentTask::lend_stack()`).
///
/// # Invariants
///
/// - Every item in `items` was initialised with `name` and `key`, queued exactly once, is owned
///   by the scope and never moves (it is pinned in its box).
/// - An item is freed only when its state is `State::Cancelled` (its `cancel_work()` returned
///   true) or after the join's `flush_work()`/`cancel_work_sync()` for it returned.
/// - An item's closure belongs to the worker once the worker claimed the item (cleared its
///   pending bit), and to the scope's thread after a `cancel_work()` that returned true (the join
///   then calls it, once) or after the join.
pub struct Scope<'scope, 'env: 'scope> {
    items: RefCell<KVec<Entry>>,
    name: &'static CStr,
    key: Pin<&'static LockClassKey>,
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// Spawns `f` as a work item on `queue` (`WORK_CPU_UNBOUND`: for an unbound queue any CPU,
    /// for a per-CPU queue the local one).
    ///
    /// The item and the scope's bookkeeping are allocated with `flags` (`GFP_NOWAIT` is fine).
    ///
    /// # Errors
    ///
    /// Returns [`AllocError`] if memory could not be allocated; nothing was queued then and `f`
    /// was dropped without being called.
    pub fn try_spawn<F>(
        &'scope self,
        queue: &'scope Queue,
        flags: Flags,
        f: F,
    ) -> Result<(), AllocError>
    where
        F: FnOnce() + Send + 'scope,
    {
        self.spawn_inner(queue, None, flags, f)
    }

    /// Spawns `f` as a work item on the unbound `queue`, on a CPU of `node`
    /// ([`UnboundQueue::enqueue_on_node`]).
    ///
    /// If `node` has no online CPU the item runs on any CPU. Placement is strict only on a queue
    /// with strict NUMA affinity ([`OwnedQueue::set_numa_strict`]). An item cancelled before it
    /// started ([`Scope::cancel_unstarted`], or by the join of a thread that may not wait) has its
    /// closure called on the scope's thread, wherever that runs.
    ///
    /// [`OwnedQueue::set_numa_strict`]: crate::workqueue::OwnedQueue::set_numa_strict
    ///
    /// # Errors
    ///
    /// As [`Scope::try_spawn`].
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::alloc::NumaNode;
    /// use kernel::sync::atomic::{Atomic, Relaxed};
    /// use kernel::workqueue::{self, scope};
    ///
    /// let ran = Atomic::new(0usize);
    /// scope!("doc_node", |s| -> Result {
    ///     let mut node = NumaNode::next_with_cpus(None);
    ///     for _ in 0..4 {
    ///         let Some(n) = node else { break };
    ///         let ran = &ran;
    ///         s.try_spawn_on_node(workqueue::system_dfl(), n, GFP_KERNEL, move || {
    ///             ran.add(1, Relaxed);
    ///         })?;
    ///         node = NumaNode::next_with_cpus(Some(n));
    ///     }
    ///     Ok(())
    /// })?;
    /// assert_eq!(ran.load(Relaxed), 4);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn try_spawn_on_node<F>(
        &'scope self,
        queue: &'scope UnboundQueue,
        node: NumaNode,
        flags: Flags,
        f: F,
    ) -> Result<(), AllocError>
    where
        F: FnOnce() + Send + 'scope,
    {
        self.spawn_inner(queue, Some(node), flags, f)
    }

    /// Queues `f` on `queue`, on a CPU of `node` if `node` is `Some`.
    ///
    /// `node` is `Some` only for an unbound queue (the callers take an [`UnboundQueue`] then).
    fn spawn_inner<F>(
        &'scope self,
        queue: &'scope Queue,
        node: Option<NumaNode>,
        flags: Flags,
        f: F,
    ) -> Result<(), AllocError>
    where
        F: FnOnce() + Send + 'scope,
    {
        let mut items = self.items.borrow_mut();
        // Reserve the entry first: once queued, the item must be recorded.
        items.reserve(1, flags)?;
        let item = KBox::pin_init(
            pin_init!(ScopedItem {
                work <- Work::new(self.name, self.key),
                func: UnsafeCell::new(Some(f)),
            }),
            flags,
        )
        .map_err(|_| AllocError)?;
        // INVARIANT: the item is owned by `items` from the push below, which frees it only after
        // it was cancelled or its function returned; a failed push frees it before it is queued.
        let item_ref = ScopedItemRef(NonNull::from(&*item));
        // The item is stored unpinned as `KBox<dyn ScopedWork>`: a `Pin<KBox<_>>` cannot be
        // unsized to `Pin<KBox<dyn _>>` (the kernel's `Box` does not implement the unstable
        // `PinCoerceUnsized`), and every move of a `Pin<KBox<dyn _>>` is such a coercion. `Entry`
        // keeps the pinning promise instead: it holds the box and never moves the item out.
        // SAFETY: the item stays pinned: `Entry` holds the box and never moves the item out of it.
        let item: KBox<ScopedItem<F>> = unsafe { Pin::into_inner_unchecked(item) };
        let erased: KBox<dyn ScopedWork + 'scope> = item;
        // SAFETY: only the lifetime bound changes, which leaves the layout as it is. The item is
        // freed by the join, before `'scope` ends (see `Entry`), and nothing uses it after that.
        let item = unsafe {
            core::mem::transmute::<KBox<dyn ScopedWork + 'scope>, KBox<dyn ScopedWork + 'static>>(
                erased,
            )
        };
        // Within the capacity reserved above: this does not allocate and does not fail.
        items
            .push_within_capacity(Entry {
                item,
                state: State::Queued,
            })
            .map_err(|_| AllocError)?;
        // SAFETY: By the type invariants the item stays valid until its function has run or it
        // was cancelled, and the join in `scope_with_key` waits for that before `'scope` ends, so
        // the function is never called after the borrows of `F` expire; if the thread dies before
        // the join, its stack is lent (`scope_with_key`) and stays. `ScopedItemRef<F>` is `Send`,
        // so the function may run on another thread. `node` is `Some` only for an unbound queue.
        // INVARIANT: the item is recorded in `items` (above) and queued exactly once (here): it
        // was never queued, so this returns true.
        let queued = unsafe { queue.enqueue_scoped(item_ref, node) };
        debug_assert!(queued);
        Ok(())
    }

    /// Cancels every item that has not started yet and returns how many it cancelled.
    ///
    /// The join calls a cancelled item's closure on the scope's thread, so that every closure
    /// still runs exactly once; cancelling only keeps items that would start late off their
    /// workers. Items that already started are left alone, and the join waits for them. Items
    /// spawned after this call are joined as any other.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::sync::atomic::{Atomic, Relaxed};
    /// use kernel::workqueue::{self, scope};
    ///
    /// // Counts the closures dropped, whether they ran or not.
    /// struct Token<'a>(&'a Atomic<usize>);
    /// impl Drop for Token<'_> {
    ///     fn drop(&mut self) {
    ///         self.0.add(1, Relaxed);
    ///     }
    /// }
    ///
    /// let (ran, dropped) = (Atomic::new(0usize), Atomic::new(0usize));
    /// let cancelled = scope!("doc_cancel", |s| -> Result<usize> {
    ///     for _ in 0..8 {
    ///         let (ran, token) = (&ran, Token(&dropped));
    ///         s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || {
    ///             let _token = token;
    ///             ran.add(1, Relaxed);
    ///         })?;
    ///     }
    ///     Ok(s.cancel_unstarted())
    /// })?;
    /// // Every closure ran once, the cancelled ones on this thread in the join, and every closure
    /// // was dropped by the time the scope returned.
    /// assert!(cancelled <= 8);
    /// assert_eq!(ran.load(Relaxed), 8);
    /// assert_eq!(dropped.load(Relaxed), 8);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn cancel_unstarted(&self) -> usize {
        let mut cancelled = 0;
        for entry in self.items.borrow_mut().iter_mut() {
            if entry.state != State::Queued {
                continue;
            }
            // INVARIANT: `cancel_work()` returns true only if it took the item off the queue
            // before its function started: the closure stays the scope's, for the join to call.
            // Otherwise the item is running or done, and is not queued again.
            if entry.item.cancel() {
                entry.state = State::Cancelled;
                cancelled += 1;
            } else {
                entry.state = State::Started;
            }
        }
        cancelled
    }

    /// Returns whether the scope's thread may wait for items that have not started.
    ///
    /// It may not when it has `PF_MEMALLOC` set (it is reclaiming memory, and starting an item
    /// may need a kworker allocated with `GFP_KERNEL`), nor, deliberately more strictly than
    /// `check_flush_dependency()`, when it runs a work item itself: its items may need a worker
    /// of a pool that is short of them, or a new one, and the scope does not know which queue
    /// the caller runs on. The join asks this too: when it is false, the join cancels the items
    /// that have not started and calls their closures itself. A caller that knows it will take
    /// their work anyway (as `kernel::mtjob` does) calls [`Scope::cancel_unstarted`] earlier.
    pub fn may_wait(&self) -> bool {
        !super::in_work_item() && !current!().in_memalloc()
    }

    /// Whether the join may call `flush_work()`: not before `workqueue_init()`, when no worker
    /// runs and `flush_work()` warns.
    fn may_flush() -> bool {
        #[cfg(CONFIG_RUST_WORKQUEUE_SCOPE_KUNIT_TEST)]
        if tests::pretend_offline() {
            return false;
        }
        // SAFETY: `workqueue_online()` only reads a flag.
        unsafe { bindings::workqueue_online() }
    }

    /// Calls the closures of the cancelled items, waits for the others, then frees all items.
    fn join(&self) {
        let may_wait = self.may_wait() && Self::may_flush();
        let mut items = self.items.borrow_mut();
        // A thread that may not wait for items that have not started takes them all off their
        // queues first, so that none that a running item waits for is left behind a wait below.
        // Before `workqueue_init()` none has started: all are cancelled and called here.
        if !may_wait {
            for entry in items.iter_mut().filter(|e| e.state == State::Queued) {
                // INVARIANT: as in `cancel_unstarted`.
                entry.state = if entry.item.cancel() {
                    State::Cancelled
                } else {
                    State::Started
                };
            }
        }
        // The cancelled items' closures, before waiting for any running item, which may wait for
        // one of them.
        for entry in items.iter_mut().filter(|e| e.state == State::Cancelled) {
            // SAFETY: `cancel_work()` returned true for it, and its state changes to `Ran` next:
            // this is the only call.
            unsafe { entry.item.run_cancelled() };
            entry.state = State::Ran;
        }
        for entry in items.iter_mut() {
            match entry.state {
                // Waits until its function has returned (the thread may wait). `flush_work()`
                // also returns false for an item that already ran: then `cancel_work()` finds it
                // done, or, if a worker had not yet claimed it, the join calls it.
                State::Queued => {
                    if !entry.item.flush() {
                        if entry.item.cancel() {
                            // SAFETY: `cancel_work()` returned true, and the state changes next.
                            unsafe { entry.item.run_cancelled() };
                            entry.state = State::Ran;
                        } else {
                            entry.item.cancel_sync();
                        }
                    }
                }
                // A `cancel_work()` found it running or done, and it is never queued again: this
                // waits for its function to return if it still runs, and unlike `flush_work()`
                // needs no check for waiting on pending items (`check_flush_dependency()`).
                State::Started => entry.item.cancel_sync(),
                State::Cancelled | State::Ran => {}
            }
        }
        // INVARIANT: every item's closure has been called and has returned.
        drop(core::mem::take(&mut *items));
    }
}

/// A closure spawned as a work item.
#[pin_data]
struct ScopedItem<F> {
    #[pin]
    work: Work<ScopedItem<F>>,
    /// Taken by the worker that runs the item; still set if the item was cancelled.
    func: UnsafeCell<Option<F>>,
}

crate::impl_has_work! {
    impl{F} HasWork<ScopedItem<F>> for ScopedItem<F> { self.work }
}

impl<F: FnOnce() + Send> ScopedWork for ScopedItem<F> {
    fn cancel(&self) -> bool {
        self.work.cancel()
    }

    fn cancel_sync(&self) {
        self.work.cancel_sync();
    }

    fn flush(&self) -> bool {
        self.work.flush()
    }

    unsafe fn run_cancelled(&self) {
        // SAFETY: no worker claimed the item and this is the only call, by the safety
        // requirements: the closure slot is the calling thread's.
        let func = unsafe { (*self.func.get()).take() };
        if let Some(func) = func {
            func();
        }
    }
}

impl<F: FnOnce() + Send> WorkItem for ScopedItem<F> {
    type Pointer = ScopedItemRef<F>;

    fn run(this: ScopedItemRef<F>) {
        // SAFETY: by the invariants of `ScopedItemRef`, the item is alive while its function
        // runs, and the worker that claimed it owns the closure slot.
        let func = unsafe { (*(*this.0.as_ptr()).func.get()).take() };
        if let Some(func) = func {
            func();
        }
        // `this` is not used again: the scope may free the item as soon as this returns.
    }
}

/// A non-owning pointer to a queued [`ScopedItem`]; the scope owns the item.
///
/// # Invariants
///
/// `self.0` points to an item owned by a [`Scope`], which frees it only after it was cancelled
/// or its function returned.
struct ScopedItemRef<F>(NonNull<ScopedItem<F>>);

// SAFETY: the pointer only hands the item over to the worker that runs it: the worker takes the
// closure, which is `Send`, and the `Work` it reads is `Sync`; the scope's thread does not touch
// the closure slot until the item was cancelled or its function returned.
unsafe impl<F: FnOnce() + Send> Send for ScopedItemRef<F> {}

// SAFETY: `__enqueue` passes the `work_struct` of the item `self` points to, which is valid for
// the call. By the type invariant the scope keeps the item alive until its function has run or
// `cancel_work()` (`Work::cancel`) or `cancel_work_sync()` returned true for it, so the pointer
// stays valid as long as `RawWorkItem` requires. `Pin<KBox<T>>`'s implementation cannot be used:
// its `run` frees the item, which the join still reads.
unsafe impl<F: FnOnce() + Send> RawWorkItem<0> for ScopedItemRef<F> {
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
unsafe impl<F: FnOnce() + Send> WorkItemPointer<0> for ScopedItemRef<F> {
    unsafe extern "C" fn run(ptr: *mut bindings::work_struct) {
        // The `work_struct` is the one `__enqueue` queued, inside a `Work<ScopedItem<F>>`.
        let ptr = ptr.cast::<Work<ScopedItem<F>>>();
        // SAFETY: `ptr` points to the `work` field of a live `ScopedItem`.
        let item = unsafe { <ScopedItem<F> as super::HasWork<_>>::work_container_of(ptr) };
        // SAFETY: `item` is not null; by the scope's invariants it stays alive until this
        // function returns.
        // INVARIANT: as just said.
        let this = ScopedItemRef(unsafe { NonNull::new_unchecked(item) });
        <ScopedItem<F> as WorkItem>::run(this)
    }
}

#[cfg(CONFIG_RUST_WORKQUEUE_SCOPE_KUNIT_TEST)]
mod tests;
