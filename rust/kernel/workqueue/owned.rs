// SPDX-License-Identifier: GPL-2.0

//! Workqueues allocated by their user.

use super::{
    Queue,
    UnboundQueue, //
};
use crate::{
    bindings,
    error::{
        code::ENOMEM,
        to_result, //
    },
    impl_flags,
    prelude::*,
    str::CStr, //
};
use core::{
    mem::ManuallyDrop,
    ops::Deref,
    ptr::NonNull, //
};

impl_flags!(
    /// Flags of a workqueue allocated with [`OwnedQueue::new`] (`WQ_*`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct QueueFlags(u32);

    /// One flag of a workqueue allocated with [`OwnedQueue::new`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum QueueFlag {
        /// A per-CPU workqueue: items run on the CPU they were queued on (`WQ_PERCPU`).
        Percpu = bindings::wq_flags_WQ_PERCPU,
        /// Workers not bound to a CPU (`WQ_UNBOUND`); placed by the queue's affinity scope.
        Unbound = bindings::wq_flags_WQ_UNBOUND,
        /// A rescuer thread guarantees forward progress under memory pressure (`WQ_MEM_RECLAIM`).
        MemReclaim = bindings::wq_flags_WQ_MEM_RECLAIM,
        /// High-priority workers (`WQ_HIGHPRI`).
        HighPri = bindings::wq_flags_WQ_HIGHPRI,
    }
);

/// A workqueue allocated with `alloc_workqueue()` and destroyed when dropped.
///
/// Dropping it runs `destroy_workqueue()`, which drains it: every item queued on it has run when
/// the drop returns. So it must be dropped where the thread may sleep, and never by one of its
/// own work items (the drain would wait for that item).
///
/// A delayed work item whose timer has not fired would queue itself on the freed workqueue
/// later; [`Queue::enqueue_delayed`] takes only a `&'static Queue`, which an `OwnedQueue` gives
/// only through [`OwnedQueue::leak`], after which it is never destroyed.
///
/// # Invariants
///
/// `self.0` points to a workqueue this object allocated, with the `WQ_*` flags `self.1`, that only
/// its drop destroys; no delayed work item was queued on it.
pub struct OwnedQueue(NonNull<bindings::workqueue_struct>, u32);

// SAFETY: a workqueue may be used and destroyed from any thread.
unsafe impl Send for OwnedQueue {}
// SAFETY: a workqueue may be used from several threads at once.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// Allocates a workqueue named `name` with `flags` and at most `max_active` items of it
    /// running at once per CPU (for unbound queues, in all, split over the nodes); 0 means the
    /// default (`WQ_DFL_ACTIVE`). `alloc_workqueue()` copies `name`.
    ///
    /// # Errors
    ///
    /// Returns [`EINVAL`] if `flags` has neither or both of [`QueueFlag::Percpu`] and
    /// [`QueueFlag::Unbound`] (`alloc_workqueue()` would warn and choose), or if `max_active` is
    /// above `WQ_MAX_ACTIVE`; [`ENOMEM`] if the workqueue could not be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::workqueue::{OwnedQueue, QueueFlag};
    ///
    /// let queue = OwnedQueue::new(c"doc_owned", QueueFlag::Unbound.into(), 0)?;
    /// queue.try_spawn(GFP_KERNEL, || pr_info!("queued on an owned workqueue\n"))?;
    /// // Dropping the queue waits for the item, then destroys the workqueue.
    /// drop(queue);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn new(name: &CStr, flags: QueueFlags, max_active: usize) -> Result<Self> {
        let flags = u32::from(flags);
        let kind = flags & (bindings::wq_flags_WQ_PERCPU | bindings::wq_flags_WQ_UNBOUND);
        if kind.count_ones() != 1 {
            return Err(EINVAL);
        }
        let max_active = i32::try_from(max_active)
            .ok()
            .filter(|&m| m <= bindings::wq_consts_WQ_MAX_ACTIVE as i32)
            .ok_or(EINVAL)?;
        Self::alloc(name, flags, max_active)
    }

    /// Allocates an ordered workqueue, as `alloc_ordered_workqueue()` does: unbound, and its
    /// work items run one at a time in the order they were queued.
    ///
    /// # Errors
    ///
    /// Returns [`ENOMEM`] if the workqueue could not be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::workqueue::OwnedQueue;
    ///
    /// let queue = OwnedQueue::new_ordered(c"doc_ordered")?;
    /// queue.try_spawn(GFP_KERNEL, || pr_info!("first\n"))?;
    /// queue.try_spawn(GFP_KERNEL, || pr_info!("second, after the first returned\n"))?;
    /// # Ok::<(), Error>(())
    /// ```
    pub fn new_ordered(name: &CStr) -> Result<Self> {
        Self::alloc(
            name,
            bindings::wq_flags_WQ_UNBOUND | bindings::wq_flags___WQ_ORDERED,
            1,
        )
    }

    fn alloc(name: &CStr, flags: u32, max_active: i32) -> Result<Self> {
        // `alloc_workqueue()` (with its allocation hooks), which copies `name`.
        // SAFETY: `name` is a valid C string.
        let wq = unsafe { bindings::alloc_workqueue(name.as_char_ptr(), flags, max_active) };
        // INVARIANT: the workqueue was just allocated with `flags`; nothing was queued on it.
        Ok(Self(NonNull::new(wq).ok_or(ENOMEM)?, flags))
    }

    /// Makes the items queued on a node run only on the online CPUs of that node: affinity scope
    /// `WQ_AFFN_NUMA` with `affn_strict` set (Documentation/core-api/workqueue.rst, "Affinity
    /// Scopes"). Items queued on a node without online CPUs run on any CPU.
    ///
    /// The queue keeps its priority (`WQ_HIGHPRI`: nice -20) and every online CPU.
    ///
    /// # Errors
    ///
    /// Returns [`EINVAL`] for a queue that is not unbound, or ordered (its items would no longer
    /// run one at a time), [`ENOMEM`] if the attributes could not be allocated, or the error of
    /// `apply_workqueue_attrs()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::workqueue::{OwnedQueue, QueueFlag};
    ///
    /// let queue = OwnedQueue::new(c"doc_strict", QueueFlag::Unbound.into(), 0)?;
    /// queue.set_numa_strict()?;
    /// let percpu = OwnedQueue::new(c"doc_percpu", QueueFlag::Percpu.into(), 0)?;
    /// assert_eq!(percpu.set_numa_strict(), Err(EINVAL));
    /// let ordered = OwnedQueue::new_ordered(c"doc_strict_ordered")?;
    /// assert_eq!(ordered.set_numa_strict(), Err(EINVAL));
    /// // A queue is either per-CPU or unbound.
    /// assert!(OwnedQueue::new(c"doc_neither", QueueFlag::HighPri.into(), 0).is_err());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn set_numa_strict(&self) -> Result {
        // `apply_workqueue_attrs()` would refuse a queue that is not unbound too, with a warning;
        // an ordered one it would split into per-node pools.
        if self.1 & bindings::wq_flags_WQ_UNBOUND == 0
            || self.1 & bindings::wq_flags___WQ_ORDERED != 0
        {
            return Err(EINVAL);
        }
        // SAFETY: no preconditions; returns null or attributes owned by the caller.
        let attrs = unsafe { bindings::alloc_workqueue_attrs_noprof() };
        if attrs.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `attrs` is valid and only ours.
        unsafe {
            (*attrs).affn_scope = bindings::wq_affn_scope_WQ_AFFN_NUMA;
            (*attrs).affn_strict = true;
            // As `alloc_workqueue()` set them up (`HIGHPRI_NICE_LEVEL`).
            if self.1 & bindings::wq_flags_WQ_HIGHPRI != 0 {
                (*attrs).nice = bindings::MIN_NICE;
            }
        }
        // SAFETY: the workqueue is valid and unbound by the type invariant; `attrs` is copied.
        let ret = unsafe { bindings::apply_workqueue_attrs(self.0.as_ptr(), attrs) };
        // SAFETY: `attrs` came from `alloc_workqueue_attrs()` and is no longer used.
        unsafe { bindings::free_workqueue_attrs(attrs) };
        to_result(ret)
    }

    /// Returns the workqueue, never to be destroyed: for a queue made once and used for the rest
    /// of the kernel's life, which may then also take delayed work.
    pub fn leak(self) -> &'static Queue {
        let this = ManuallyDrop::new(self);
        // SAFETY: by the type invariant the workqueue is valid, and with the drop skipped nothing
        // destroys it.
        unsafe { Queue::from_raw(this.0.as_ptr()) }
    }
}

impl OwnedQueue {
    /// Returns the workqueue as an unbound one, if it was allocated with [`QueueFlag::Unbound`].
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::workqueue::{OwnedQueue, QueueFlag};
    ///
    /// let percpu = OwnedQueue::new(c"doc_percpu", QueueFlag::Percpu.into(), 0)?;
    /// assert!(percpu.as_unbound().is_none());
    /// let unbound = OwnedQueue::new(c"doc_unbound", QueueFlag::Unbound.into(), 0)?;
    /// assert!(unbound.as_unbound().is_some());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn as_unbound(&self) -> Option<&UnboundQueue> {
        if self.1 & bindings::wq_flags_WQ_UNBOUND == 0 {
            return None;
        }
        // SAFETY: by the type invariant the workqueue is valid until `self` is dropped, which the
        // borrow cannot outlive, and was allocated with the flags `self.1`, which include
        // `WQ_UNBOUND`.
        Some(unsafe { UnboundQueue::from_raw(self.0.as_ptr()) })
    }

    /// Returns the workqueue as an unbound one, never to be destroyed, if it was allocated with
    /// [`QueueFlag::Unbound`]; otherwise gives it back.
    ///
    /// # Errors
    ///
    /// Returns `self` if the queue is not unbound.
    pub fn leak_unbound(self) -> Result<&'static UnboundQueue, Self> {
        if self.1 & bindings::wq_flags_WQ_UNBOUND == 0 {
            return Err(self);
        }
        let this = ManuallyDrop::new(self);
        // SAFETY: by the type invariant the workqueue is valid, was allocated with the flags
        // `self.1`, which include `WQ_UNBOUND` (checked above), and with the drop skipped nothing
        // destroys it.
        Ok(unsafe { UnboundQueue::from_raw(this.0.as_ptr()) })
    }
}

impl Drop for OwnedQueue {
    fn drop(&mut self) {
        crate::task::might_sleep();
        // SAFETY: by the type invariant the workqueue is valid, only this drop destroys it, and no
        // delayed work item was queued on it (so no timer can queue one on it later); every other
        // item queued on it runs before `destroy_workqueue()` frees it, and nothing can queue
        // more, since nothing borrows `self` any more.
        unsafe { bindings::destroy_workqueue(self.0.as_ptr()) };
    }
}

impl Deref for OwnedQueue {
    type Target = Queue;

    fn deref(&self) -> &Queue {
        // SAFETY: by the type invariant the workqueue is valid until `self` is dropped, which the
        // borrow cannot outlive. `Queue::enqueue_delayed` needs a `&'static Queue`, which this is
        // not.
        unsafe { Queue::from_raw(self.0.as_ptr()) }
    }
}
