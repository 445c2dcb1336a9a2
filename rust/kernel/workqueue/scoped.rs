// SPDX-License-Identifier: GPL-2.0

//! Scoped work: work items that may borrow from the caller's stack.
//!
//! [`scope!`] is the kernel's counterpart of `std::thread::scope`: its body gets a [`Scope`] on
//! which it spawns closures as work items, on any queue and, for unbound queues, on a given
//! node. The closures may borrow anything that outlives the call, because [`scope!`] returns only
//! after every spawned item has either run to completion or was cancelled before it started.
//!
//! The join is straight-line code in [`scope_with_class`] after the body returned, not a
//! destructor: `mem::forget` cannot skip it (the pre-1.0 `thread::scoped` joined in `Drop`,
//! which rust-lang/rust#24292 showed unsound once leaking became safe).
//!
//! # Lockdep
//!
//! Items are initialised with the scope's lock class, which the worker holds while an item runs
//! (`process_one_work()`). The join acquires the same class, exclusively, as `flush_work()`
//! does, but always, not only when an item is still pending or running: a caller that joins
//! while holding a lock that one of its items takes gets a lockdep report even when the item
//! happened to finish first. Each [`ScopeClass`] has two classes: a scope opened while the
//! thread runs any work item (`current_work()` is set, for example in an item of another scope)
//! uses the second one, so that one level of nesting through one call site is not reported as
//! recursion; deeper nesting through one call site is reported, as a `flush_work()` of the same
//! class would be. Only the pointer `current_work()` returns is looked at: the item it points to
//! may already be freed.
//!
//! # Forward progress
//!
//! An item that has not started waits for an idle worker of its queue, and creating a worker
//! allocates with `GFP_KERNEL`. Only `WQ_MEM_RECLAIM` queues have a rescuer. A caller that must
//! make progress under memory pressure (for example because it frees memory), or that runs in a
//! work item itself, calls [`Scope::cancel_unstarted`] and does the cancelled items' work itself:
//! the join then waits only for items already running. [`Scope::may_wait`] says when that is
//! needed.
//!
//! It relates to other workqueue code in Rust as follows: `Queue::try_spawn` also runs a closure
//! as a work item, but a `'static` one that frees itself; later upstream's
//! `kernel::sync::Completion` would allow a join on a private count, which this scope does not
//! need since it waits on the workqueue's own barriers; later upstream's
//! `kernel::alloc::NumaNode` is [`NodeId`] here.

use super::{Queue, RawWorkItem, Work, WorkItem, WorkItemPointer};
use crate::{
    alloc::{AllocError, Flags, KBox, KVec},
    bindings,
    init::InPlaceInit,
    numa::NodeId,
    pin_init,
    str::CStr,
    sync::LockClassKey,
    types::Opaque,
};
use core::{cell::RefCell, cell::UnsafeCell, marker::PhantomData, pin::Pin, ptr::NonNull};
use macros::pin_data;

/// The lock classes of one call site of [`scope_with_class`]: one for scopes opened outside work
/// items, one for scopes opened inside a work item.
///
/// Made by [`static_scope_class!`](crate::workqueue::static_scope_class) (and
/// [`scope!`](crate::workqueue::scope)); lockdep expects statically allocated,
/// uninitialised keys. The layout is that of C's `struct lock_class_key[2]`.
#[repr(C)]
pub struct ScopeClass {
    top: LockClassKey,
    nested: LockClassKey,
}

impl ScopeClass {
    /// Returns the class made of the two keys at `keys`, for a class defined in C.
    ///
    /// # Safety
    ///
    /// `keys` must point to a `static struct lock_class_key[2]` (statically allocated, never
    /// freed, not used as another lock's key).
    pub unsafe fn from_raw(keys: *mut bindings::lock_class_key) -> &'static ScopeClass {
        // SAFETY: `ScopeClass` is `repr(C)` and made of two `repr(transparent)` wrappers of
        // `lock_class_key`, so it has the layout of `struct lock_class_key[2]`; the caller
        // promises that `keys` points to such static keys.
        unsafe { &*keys.cast::<ScopeClass>() }
    }
}

/// Defines a [`ScopeClass`] for one call site and returns a `&'static` reference to it.
#[macro_export]
macro_rules! static_scope_class {
    () => {{
        static CLASS: $crate::workqueue::ScopeClass =
            // SAFETY: lockdep expects uninitialised memory for statically allocated keys, and
            // `ScopeClass` is made of `LockClassKey`s only.
            unsafe { ::core::mem::MaybeUninit::uninit().assume_init() };
        &CLASS
    }};
}

/// Runs `body` with a [`Scope`] and waits for every work item it spawned.
///
/// `scope!("name", |s| ...)` is [`scope_with_class`] with a new lock class for the call site.
///
/// # Examples
///
/// ```
/// use core::sync::atomic::{AtomicU32, Ordering};
/// use kernel::workqueue::{self, scope};
///
/// let mut parts = [0u64; 4];
/// let drops = AtomicU32::new(0);
/// scope!("doc_sum", |s| -> Result {
///     for (i, part) in parts.iter_mut().enumerate() {
///         let drops = &drops;
///         s.spawn(workqueue::system_unbound(), GFP_KERNEL, move || {
///             *part = (i as u64 * 100..(i as u64 + 1) * 100).sum();
///             drops.fetch_add(1, Ordering::Relaxed);
///         })?;
///     }
///     Ok(())
/// })?;
/// // Every item ran and the borrows of `parts` and `drops` ended with the scope.
/// assert_eq!(parts.iter().sum::<u64>(), (0..400).sum());
/// assert_eq!(drops.load(Ordering::Relaxed), 4);
/// # Ok::<(), Error>(())
/// ```
#[macro_export]
macro_rules! scope {
    ($name:literal, $body:expr $(,)?) => {{
        // A static, so that the name has one address however often the call site is inlined or
        // monomorphised: lockdep compares a class's names by address.
        static NAME: &$crate::str::CStr = $crate::c_str!($name);
        $crate::workqueue::scope_with_class(NAME, $crate::static_scope_class!(), $body)
    }};
}

/// Runs `body` with a [`Scope`] named `name`, then waits for every item spawned on it.
///
/// Must be called from a context that may sleep. Lockdep compares the names of a class by
/// address: every scope of `class` must pass the same `name` pointer, such as the value of a
/// `static` (as [`scope!`](crate::workqueue::scope) does); a `c_str!` constant in a generic or
/// inlined function may have several addresses, which lockdep reports as a class with two names
/// (seen with KASAN, which keeps identical constants apart).
///
/// # Guarantees
///
/// When this function returns, every item spawned on the scope either was cancelled before its
/// closure started (the closure was dropped, never called) or its closure has returned; the
/// items' memory is freed and no workqueue holds a pointer to it.
///
/// The guarantee holds once `workqueue_init()` has run, before the first `early_initcall`:
/// before it, `flush_work()` warns and returns without waiting. No Rust code is called that early
/// (the earliest, `kernel/mt_job.c`, is an `early_initcall`).
///
/// The guarantee assumes that the calling thread reaches the join: a panic is `BUG()` in the
/// kernel and kills the thread without unwinding. If a closure panics, the join waits forever
/// (a hung task, not a use-after-free, since the borrowed frame stays alive); if the calling
/// thread itself dies inside `body`, its stack is gone under the running items, the same limit
/// as for C's on-stack work items and completions (`work_on_cpu_key()`).
pub fn scope_with_class<'env, F, T>(name: &'static CStr, class: &'static ScopeClass, body: F) -> T
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> T,
{
    crate::task::might_sleep();
    // SAFETY: `current_work()` has no preconditions; only the pointer is compared, the work item
    // it points to (if any) is not accessed.
    let nested = !unsafe { bindings::current_work() }.is_null();
    let key = if nested { &class.nested } else { &class.top };
    // INVARIANT: there is no item yet.
    let scope = Scope {
        items: RefCell::new(KVec::new()),
        name,
        key,
        nested,
        map: Opaque::uninit(),
        scope: PhantomData,
        env: PhantomData,
    };
    // SAFETY: `scope.map` is valid for writes; the name and key are static.
    unsafe { bindings::lockdep_init_map(scope.map.get(), name.as_char_ptr(), key.as_ptr(), 0) };
    let ret = body(&scope);
    scope.join();
    ret
}

/// What the scope knows of an item.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Queued; may or may not have started.
    Queued,
    /// A `cancel_work()` found it running or finished: it will not be queued again.
    Started,
    /// Cancelled before it started: its closure was never called.
    Cancelled,
}

/// An item of a scope, with its closure type erased.
///
/// The item may borrow for the scope's `'scope` only, but is stored as `'static`, as
/// `std::thread::scope` stores its closures: the scope frees every item in its join, before
/// `'scope` ends, and a `'scope` in the type would make the scope's own drop outlive `'scope`.
struct Entry {
    item: Pin<KBox<dyn ScopedWork>>,
    state: State,
}

/// A [`ScopedItem`] without its closure type.
trait ScopedWork {
    /// Returns the item's `work_struct`.
    fn work_ptr(self: Pin<&Self>) -> *mut bindings::work_struct;
}

/// A scope in which work items that borrow from the caller are spawned.
///
/// Made by [`scope!`](crate::workqueue::scope) or [`scope_with_class`], and only lent to their
/// body.
///
/// `'scope` is the lifetime of the scope, `'env` that of the borrows the items may hold. Both are
/// invariant, as in `std::thread::Scope`. `Scope` is not `Sync`: items cannot spawn into it, a
/// nested scope is opened instead.
///
/// # Invariants
///
/// - Every item in `items` was initialised with `name` and `key`, queued exactly once, is owned
///   by the scope and never moves (it is pinned in its box).
/// - An item is freed only when its state is `State::Cancelled` (its `cancel_work()` returned
///   true) or after the join's `flush_work()`/`cancel_work_sync()` for it returned.
/// - An item's closure belongs to the worker once the worker claimed the item (cleared its
///   pending bit), and to the scope's thread after a `cancel_work()` that returned true or after
///   the join.
pub struct Scope<'scope, 'env: 'scope> {
    items: RefCell<KVec<Entry>>,
    name: &'static CStr,
    key: &'static LockClassKey,
    /// Whether the scope was opened while the thread runs a work item.
    nested: bool,
    map: Opaque<bindings::lockdep_map>,
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
    pub fn spawn<F>(
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

    /// Spawns `f` as a work item on `queue`, on a CPU of `node` (`queue_work_node()`).
    ///
    /// `queue` must be unbound (`WQ_UNBOUND`), as `queue_work_node()` requires; on another queue
    /// the item is still queued, with a warning. If `node` has no online CPU the item runs on any
    /// CPU. Placement is strict only on a queue with strict NUMA affinity.
    ///
    /// # Errors
    ///
    /// As [`Scope::spawn`].
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::numa::NodeId;
    /// use kernel::workqueue::{self, scope};
    ///
    /// let ran = AtomicUsize::new(0);
    /// scope!("doc_node", |s| -> Result {
    ///     let mut node = NodeId::next_with_cpus(None);
    ///     for _ in 0..4 {
    ///         let Some(n) = node else { break };
    ///         let ran = &ran;
    ///         s.spawn_on_node(workqueue::system_unbound(), n, GFP_KERNEL, move || {
    ///             ran.fetch_add(1, Ordering::Relaxed);
    ///         })?;
    ///         node = NodeId::next_with_cpus(Some(n));
    ///     }
    ///     Ok(())
    /// })?;
    /// assert_eq!(ran.load(Ordering::Relaxed), 4);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn spawn_on_node<F>(
        &'scope self,
        queue: &'scope Queue,
        node: NodeId,
        flags: Flags,
        f: F,
    ) -> Result<(), AllocError>
    where
        F: FnOnce() + Send + 'scope,
    {
        self.spawn_inner(queue, Some(node), flags, f)
    }

    fn spawn_inner<F>(
        &'scope self,
        queue: &'scope Queue,
        node: Option<NodeId>,
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
        // SAFETY: the box is only turned into a raw pointer and back into a pinned box below; the
        // item does not move.
        let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(item) });
        let erased: *mut (dyn ScopedWork + 'scope) = raw;
        // SAFETY: only the lifetime bound changes. The item is freed by the join, before `'scope`
        // ends (see `Entry`), and nothing uses it after that.
        let erased: *mut (dyn ScopedWork + 'static) = unsafe { core::mem::transmute(erased) };
        // SAFETY: `erased` comes from `KBox::into_raw` just above and was pinned.
        let item = unsafe { Pin::new_unchecked(KBox::from_raw(erased)) };
        // Within the capacity reserved above: this does not allocate and cannot fail.
        items.push(
            Entry {
                item,
                state: State::Queued,
            },
            flags,
        )?;
        // SAFETY: `raw` comes from `KBox::into_raw`, so it is not null.
        // INVARIANT: the item is now owned by `items`, which frees it only after it was
        // cancelled or its function returned.
        let item_ref = ScopedItemRef(unsafe { NonNull::new_unchecked(raw) });
        let wq = queue.0.get();
        // SAFETY: the closure is called with a valid, initialised and never queued
        // `work_struct`, so the queueing functions return true. By the type invariants the item
        // stays valid until its function has run or it was cancelled, and the join in
        // `scope_with_class` waits for that before `'scope` ends, so the function is never called
        // after the borrows of `F` expire (`__enqueue`'s lifetime clause). `ScopedItemRef<F>` is
        // `Send`, so the function may run on another thread.
        // INVARIANT: the item is recorded in `items` (above) and queued exactly once (here).
        let queued = unsafe {
            item_ref.__enqueue(|work| match node {
                Some(node) => bindings::queue_work_node(node.as_raw(), wq, work),
                None => bindings::queue_work_on(
                    bindings::wq_misc_consts_WORK_CPU_UNBOUND as _,
                    wq,
                    work,
                ),
            })
        };
        debug_assert!(queued);
        Ok(())
    }

    /// Cancels every item that has not started yet and returns how many it cancelled.
    ///
    /// A cancelled item's closure is never called; it is dropped by the join. Items that already
    /// started are left alone, and the join waits only for them, unless more items are spawned
    /// after this call (the join waits for those to run). A caller that needs the cancelled
    /// items' work done does it itself.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::workqueue::{self, scope};
    ///
    /// // Counts the closures dropped, whether they ran or not.
    /// struct Token<'a>(&'a AtomicUsize);
    /// impl Drop for Token<'_> {
    ///     fn drop(&mut self) {
    ///         self.0.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let (ran, dropped) = (AtomicUsize::new(0), AtomicUsize::new(0));
    /// let cancelled = scope!("doc_cancel", |s| -> Result<usize> {
    ///     for _ in 0..8 {
    ///         let (ran, token) = (&ran, Token(&dropped));
    ///         s.spawn(workqueue::system_unbound(), GFP_KERNEL, move || {
    ///             let _token = token;
    ///             ran.fetch_add(1, Ordering::Relaxed);
    ///         })?;
    ///     }
    ///     Ok(s.cancel_unstarted())
    /// })?;
    /// // Each item either ran or was cancelled, never both, never neither, and every closure was
    /// // dropped by the time the scope returned.
    /// assert_eq!(ran.load(Ordering::Relaxed) + cancelled, 8);
    /// assert_eq!(dropped.load(Ordering::Relaxed), 8);
    ///
    /// // On an ordered workqueue, items behind one that is running and waits cannot start: they
    /// // are cancelled.
    /// use core::sync::atomic::AtomicBool;
    /// use kernel::{c_str, workqueue::OwnedQueue};
    ///
    /// # // No sleeping function in the kernel crate of this release.
    /// # fn sleep_a_little() {
    /// #     // SAFETY: `msleep()` may be called where sleeping is allowed.
    /// #     unsafe { kernel::bindings::msleep(1) };
    /// # }
    /// let queue = OwnedQueue::new_ordered(c_str!("doc_cancel_ordered"))?;
    /// let ran = AtomicUsize::new(0);
    /// let (started, go) = (AtomicBool::new(false), AtomicBool::new(false));
    /// let cancelled = scope!("doc_cancel_ordered", |s| -> Result<usize> {
    ///     let (r, st, g) = (&ran, &started, &go);
    ///     s.spawn(&queue, GFP_KERNEL, move || {
    ///         st.store(true, Ordering::Release);
    ///         while !g.load(Ordering::Acquire) {
    ///             sleep_a_little();
    ///         }
    ///         r.fetch_add(1, Ordering::Relaxed);
    ///     })?;
    ///     for _ in 0..7 {
    ///         s.spawn(&queue, GFP_KERNEL, move || {
    ///             r.fetch_add(1, Ordering::Relaxed);
    ///         })?;
    ///     }
    ///     // Cancelling the first before it started would let the next ones start.
    ///     while !started.load(Ordering::Acquire) {
    ///         sleep_a_little();
    ///     }
    ///     let cancelled = s.cancel_unstarted();
    ///     go.store(true, Ordering::Release);
    ///     Ok(cancelled)
    /// })?;
    /// assert_eq!(cancelled, 7);
    /// assert_eq!(ran.load(Ordering::Relaxed) + cancelled, 8);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn cancel_unstarted(&self) -> usize {
        let mut cancelled = 0;
        for entry in self.items.borrow_mut().iter_mut() {
            if entry.state != State::Queued {
                continue;
            }
            // SAFETY: the item is alive (owned by `items`) and was queued.
            // INVARIANT: `cancel_work()` returns true only if it took the item off the queue
            // before its function started: the closure stays the scope's and is never called.
            // Otherwise the item is running or done, and is not queued again.
            if unsafe { bindings::cancel_work(entry.item.as_ref().work_ptr()) } {
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
    /// It may not when it runs a work item itself (its items may need a worker of the same pool,
    /// or a new one) or when it has `PF_MEMALLOC` set (it is reclaiming memory, and starting an
    /// item may need a kworker allocated with `GFP_KERNEL`). Such a caller calls
    /// [`Scope::cancel_unstarted`] before the join and does the cancelled items' work itself.
    pub fn may_wait(&self) -> bool {
        // SAFETY: `get_current()` returns the running task, which is valid during this call.
        let flags = unsafe { (*bindings::get_current()).flags };
        !self.nested && flags & bindings::PF_MEMALLOC == 0
    }

    /// Waits for every item that was not cancelled, then frees all items.
    fn join(&self) {
        // As `flush_work()` does, but whether or not an item is still running, and even if no
        // item could be spawned: the caller's held locks now come before the class the items
        // run under.
        // SAFETY: `self.map` was initialised in `scope_with_class`; acquired and released here.
        unsafe {
            bindings::lock_map_acquire(self.map.get());
            bindings::lock_map_release(self.map.get());
        }
        let mut items = self.items.borrow_mut();
        for entry in items.iter() {
            let work = entry.item.as_ref().work_ptr();
            match entry.state {
                State::Cancelled => {}
                // A `cancel_work()` found it running or done, and it is never queued again: this
                // waits for its function to return if it still runs, and unlike `flush_work()`
                // needs no check for waiting on pending items (`check_flush_dependency()`).
                // SAFETY: the item is alive, was queued once and is not queued again.
                State::Started => unsafe {
                    bindings::cancel_work_sync(work);
                },
                // SAFETY: the item is alive and was queued: this waits until its function has
                // returned.
                State::Queued => unsafe {
                    bindings::flush_work(work);
                },
            }
        }
        // INVARIANT: every item was cancelled or has returned from its function; freeing them
        // drops the closures that never ran.
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
    fn work_ptr(self: Pin<&Self>) -> *mut bindings::work_struct {
        // SAFETY: `self.work` is a valid `Work`.
        unsafe { Work::raw_get(&self.work) }
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
// it was cancelled, so the pointer stays valid until the function is called. `Pin<KBox<T>>`'s
// implementation cannot be used: its `run` frees the item, which the join still reads.
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
