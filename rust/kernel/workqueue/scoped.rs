// SPDX-License-Identifier: GPL-2.0

//! Scoped work: work items that may borrow from the caller's stack.
//!
//! [`scope!`] is the kernel's counterpart of `std::thread::scope`: its body gets a [`Scope`] on
//! which it spawns closures as work items, on any queue and, for unbound queues, on a given
//! node. The closures may borrow anything that outlives the call, because [`scope!`] returns only
//! after every spawned closure has run exactly once: on a worker, or, if its item had not started
//! when someone came to wait for it, on the thread that waits (the join, or a
//! [`ScopedJoinHandle::join`]).
//!
//! As with `std::thread::scope`, a spawn returns a [`ScopedJoinHandle`] whose `join()` gives the
//! closure's return value, and items may spawn into their own scope (a [`Scope`] is `Sync`), for
//! divide and conquer; neither `padata_do_multithreaded()` nor a work item of its own can express
//! either.
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
//! [`ScopedJoinHandle::join`] acquires the class too, but not inside a work item: an item joining
//! the handle of an item it spawned into its own scope is what handles are for, and lockdep would
//! take that for recursive locking of the class. Both acquire it with bottom halves disabled, as
//! `touch_work_lockdep_map()` does for a `WQ_BH` queue, whose items run, and take the class, in
//! softirq context.
//!
//! A limitation: a scope opened inside an item of a scope of the same call site (recursion, as a
//! divide-and-conquer function would do without spawning into its own scope) is reported as
//! recursive locking, as a `flush_work()` of
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
//! ([`Scope::may_wait`]: not in reclaim, not in a work item); otherwise it claims the item's
//! closure and calls it itself, and waits only for items already running. A
//! [`ScopedJoinHandle::join`] never waits for an item that has not started: it calls the closure
//! itself. A caller that would
//! rather run the closures of items that have not started yet than wait for a worker calls
//! [`Scope::cancel_unstarted`] first; the join calls them all the same. Either way every closure
//! is called exactly once, and no caller needs to redo cancelled work by hand.
//!
//! [`scope!`]: crate::workqueue::scope

use super::{
    Queue,
    UnboundQueue, //
};
use crate::{
    alloc::{
        AllocError,
        Flags,
        KBox,
        KVec,
        NumaNode, //
    },
    prelude::*,
    str::CStr,
    sync::{
        lockdep::LockdepMap,
        new_spinlock_irq,
        LockClassKey,
        SpinLockIrq, //
    },
};
use core::{
    marker::PhantomData,
    ptr::NonNull, //
};
use item::{
    Entry,
    ScopedItem,
    ScopedItemRef,
    ScopedResult,
    ScopedWork, //
};

mod handle;
mod item;
mod join;

pub use handle::ScopedJoinHandle;

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
/// // Without a name: the class is named after this file and line. A handle gives an item's
/// // result.
/// let x = 40;
/// let y = scope!(|s| -> Result<u32> {
///     let h = s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, || x + 2)?;
///     Ok(h.join())
/// })?;
/// assert_eq!(y, 42);
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
/// When this function returns, the closure of every item spawned on the scope, by `body` or by
/// other items, has been called exactly once and has returned: on a worker, on a thread that
/// joined its [`ScopedJoinHandle`] before a worker started it, or on the calling thread in the
/// join if the item had not started ([`Scope::cancel_unstarted`], or the join itself when the
/// thread may not wait, see [`Scope::may_wait`]). The results nobody joined were dropped (or
/// leaked with a leaked handle), the items' memory is freed, and no workqueue holds a pointer to
/// them. Closures must therefore not wait for one
/// another except through a [`ScopedJoinHandle`]: two of them may run one after the other on the
/// calling thread.
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
    // A local of its own, not a field: the scope is borrowed for `'scope`, its own lifetime
    // parameter, which a value whose drop may use it (the pinned slot of a lock) cannot be.
    pin_init::stack_pin_init!(let items =
        new_spinlock_irq!(KVec::new(), "workqueue::Scope::items"));
    // INVARIANT: there is no item yet.
    let scope = Scope {
        items: &items,
        name,
        key,
        map,
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
    map.acquire_release_bh(ip);
    // SAFETY: once, after `body` returned: nothing uses `scope` or its items after this but the
    // join itself, and the handles, which `body`'s `'scope` borrow has ended.
    unsafe { scope.join() };
    // SAFETY: lent above; every item has returned.
    unsafe { task.end_stack_loan() };
    ret
}

/// A scope in which work items that borrow from the caller are spawned.
///
/// Made by [`scope!`](crate::workqueue::scope) or [`scope_with_key`], and only lent to their
/// body.
///
/// `'scope` is the lifetime of the scope, `'env` that of the borrows the items may hold. Both are
/// invariant, as in `std::thread::Scope`. `Scope` is `Sync`: items may spawn into the scope they
/// run in, and the join waits for those too.
///
/// While it is open, its thread's stack is lent (`CurrentTask::lend_stack()`).
///
/// # Invariants
///
/// - Every item in `items` was initialised with `name` and `key`, queued exactly once, is owned
///   by the scope and never moves (it is pinned in its box); items are only added to `items`
///   until the join frees them all at its end.
/// - An item's closure is called only by the thread whose claim of it succeeded (`item.rs`).
/// - An item is freed only at the end of the join (`join.rs`), once its closure was called and
///   returned and its function, if a worker started it, returned (`cancel_work_sync()`).
pub struct Scope<'scope, 'env: 'scope> {
    /// Taken only to add, find or take out entries: nothing allocates, frees or runs a closure
    /// under it, so spawning works where sleeping does not, and its class, shared by every
    /// scope, has no dependency on reclaim. With interrupts off: an item of a `WQ_BH` queue (or
    /// the drop of its result) may spawn from softirq context.
    items: &'scope SpinLockIrq<KVec<Entry>>,
    name: &'static CStr,
    key: Pin<&'static LockClassKey>,
    map: &'static LockdepMap,
    scope: PhantomData<&'scope mut &'scope ()>,
    env: PhantomData<&'env mut &'env ()>,
}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// Spawns `f` as a work item on `queue` (`WORK_CPU_UNBOUND`: for an unbound queue any CPU,
    /// for a per-CPU queue the local one), and returns a handle that gives its result.
    ///
    /// The item and the scope's bookkeeping are allocated with `flags` (`GFP_NOWAIT` is fine).
    /// Items may spawn into the scope they run in.
    ///
    /// # Errors
    ///
    /// Returns [`AllocError`] if memory could not be allocated; nothing was queued then and `f`
    /// was dropped without being called.
    ///
    /// # Examples
    ///
    /// Divide and conquer: each item sums half its range and spawns the other half into the
    /// same scope, then joins it.
    ///
    /// ```
    /// use kernel::workqueue::{self, scope, Scope};
    ///
    /// fn sum<'s>(s: &'s Scope<'s, '_>, v: &'s [u64]) -> Result<u64> {
    ///     if v.len() <= 64 {
    ///         return Ok(v.iter().sum());
    ///     }
    ///     let (lo, hi) = v.split_at(v.len() / 2);
    ///     let hi = s.try_spawn(workqueue::system_dfl(), GFP_KERNEL, move || sum(s, hi))?;
    ///     let lo = sum(s, lo);
    ///     // Joined even if `lo` failed; `?` only after.
    ///     let hi = hi.join();
    ///     Ok(lo? + hi?)
    /// }
    ///
    /// let mut v = KVec::new();
    /// for i in 0..1000u64 {
    ///     v.push(i, GFP_KERNEL)?;
    /// }
    /// let total = scope!("doc_divide", |s| sum(s, &v))?;
    /// assert_eq!(total, 999 * 1000 / 2);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn try_spawn<F, T>(
        &'scope self,
        queue: &'scope Queue,
        flags: Flags,
        f: F,
    ) -> Result<ScopedJoinHandle<'scope, T>, AllocError>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        self.spawn_inner(queue, None, flags, f)
    }

    /// Spawns `f` as a work item on the unbound `queue`, on a CPU of `node`
    /// ([`UnboundQueue::enqueue_on_node`]), and returns a handle that gives its result.
    ///
    /// If `node` has no online CPU the item runs on any CPU. Placement is strict only on a queue
    /// with strict NUMA affinity ([`OwnedQueue::set_numa_strict`]). An item whose closure is
    /// called before a worker started it ([`Scope::cancel_unstarted`], a
    /// [`ScopedJoinHandle::join`], or the join of a thread that may not wait) runs on that
    /// thread, wherever it runs.
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
    pub fn try_spawn_on_node<F, T>(
        &'scope self,
        queue: &'scope UnboundQueue,
        node: NumaNode,
        flags: Flags,
        f: F,
    ) -> Result<ScopedJoinHandle<'scope, T>, AllocError>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        self.spawn_inner(queue, Some(node), flags, f)
    }

    /// Queues `f` on `queue`, on a CPU of `node` if `node` is `Some`.
    ///
    /// `node` is `Some` only for an unbound queue (the callers take an [`UnboundQueue`] then).
    fn spawn_inner<F, T>(
        &'scope self,
        queue: &'scope Queue,
        node: Option<NumaNode>,
        flags: Flags,
        f: F,
    ) -> Result<ScopedJoinHandle<'scope, T>, AllocError>
    where
        F: FnOnce() -> T + Send + 'scope,
        T: Send + 'scope,
    {
        let item = KBox::pin_init(ScopedItem::new(self.name, self.key, f), flags)
            .map_err(|_| AllocError)?;
        // INVARIANT: the item is owned by the scope from `record()` below, which frees it only
        // after its function, if a worker started it, returned.
        let item_ref = ScopedItemRef(NonNull::from(&*item));
        let result = NonNull::from(&*item as &(dyn ScopedResult<T> + 'scope));
        // The item is stored unpinned as `KBox<dyn ScopedWork>`: a `Pin<KBox<_>>` cannot be
        // unsized to `Pin<KBox<dyn _>>` (the kernel's `Box` does not implement the unstable
        // `PinCoerceUnsized`), and every move of a `Pin<KBox<dyn _>>` is such a coercion. `Entry`
        // keeps the pinning promise instead: it holds the box and never moves the item out.
        // SAFETY: the item stays pinned: `Entry` holds the box and never moves the item out of it.
        let item: KBox<ScopedItem<F, T>> = unsafe { Pin::into_inner_unchecked(item) };
        let erased: KBox<dyn ScopedWork + 'scope> = item;
        // SAFETY: only the lifetime bound changes, which leaves the layout as it is. The item is
        // freed by the join, before `'scope` ends (see `Entry`), and nothing uses it after that.
        let item = unsafe {
            core::mem::transmute::<KBox<dyn ScopedWork + 'scope>, KBox<dyn ScopedWork + 'static>>(
                erased,
            )
        };
        // Recorded before it is queued. On failure the item is freed unqueued, with `f` in it,
        // outside the lock (`f`'s captures may do anything when dropped, spawn into this scope
        // included); no handle was made for it.
        // INVARIANT: the item is owned by `items` from here on, which frees it only at the end of
        // the join.
        self.record(Entry { item }, flags)?;
        // SAFETY: the scope frees the item only at the end of its join (`join.rs`), after
        // `'scope`; this is the item's one handle, made once, here, and only it takes or lets go
        // of the result; `self.map` is the scope's.
        let handle = unsafe { ScopedJoinHandle::new(result, self.map) };
        // SAFETY: By the type invariants the item stays valid until its closure has returned and
        // its function, if a worker started it, has returned, and the join in `scope_with_key`
        // waits for that before `'scope` ends, so neither is called after the borrows of `F`
        // expire; if the thread dies before the join, its stack is lent (`scope_with_key`) and
        // stays. `ScopedItemRef<F, T>` is `Send`, so the function may run on another thread.
        // `node` is `Some` only for an unbound queue.
        // INVARIANT: the item is recorded in `items` (above) and queued exactly once (here): it
        // was never queued, so this returns true.
        let queued = unsafe { queue.enqueue_scoped(item_ref, node) };
        debug_assert!(queued);
        Ok(handle)
    }

    /// Cancels every item that has not started yet and returns how many it cancelled.
    ///
    /// The join calls a cancelled item's closure on the scope's thread (or a
    /// [`ScopedJoinHandle::join`] on its own), so that every closure still runs exactly once;
    /// cancelling only keeps items that would start late off their workers. Items that already
    /// started are left alone, and the join waits for them. Items spawned after this call are
    /// joined as any other.
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
        // `cancel_work()` returns true only if it took the item off its queue before its
        // function started; the closure then stays unclaimed, for the join (or its handle) to
        // call. A running or finished item is left as it is, and is never queued again.
        self.items
            .lock()
            .iter()
            .filter(|entry| entry.item.cancel())
            .count()
    }

    /// Returns whether the scope's thread may wait for items that have not started.
    ///
    /// It may not when it has `PF_MEMALLOC` set (it is reclaiming memory, and starting an item
    /// may need a kworker allocated with `GFP_KERNEL`), nor, deliberately more strictly than
    /// `check_flush_dependency()`, when it runs a work item itself: its items may need a worker
    /// of a pool that is short of them, or a new one, and the scope does not know which queue
    /// the caller runs on. The join asks this too: when it is false, the join claims the
    /// closures of the items that have not started and calls them itself. A caller that knows it
    /// will take their work anyway (as `kernel::mtjob` does) calls [`Scope::cancel_unstarted`]
    /// earlier.
    pub fn may_wait(&self) -> bool {
        !super::in_work_item() && !current!().in_memalloc()
    }
}

#[cfg(CONFIG_RUST_WORKQUEUE_SCOPE_KUNIT_TEST)]
mod tests;
