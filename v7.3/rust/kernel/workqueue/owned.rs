// SPDX-License-Identifier: GPL-2.0

//! Workqueues allocated by their user.

use super::Queue;
use crate::{
    bindings,
    error::{
        code::ENOMEM,
        to_result, //
    },
    prelude::*,
    str::CStr,
};
use core::{
    ops::{
        BitOr,
        Deref, //
    },
    ptr::NonNull, //
};

/// Flags of a workqueue allocated with [`OwnedQueue::new`] (`WQ_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueFlags(u32);

impl QueueFlags {
    /// A per-CPU workqueue: items run on the CPU they were queued on.
    pub const PERCPU: QueueFlags = QueueFlags(bindings::wq_flags_WQ_PERCPU);
    /// Workers not bound to a CPU (`WQ_UNBOUND`); placed by the queue's affinity scope.
    pub const UNBOUND: QueueFlags = QueueFlags(bindings::wq_flags_WQ_UNBOUND);
    /// A rescuer thread guarantees forward progress under memory pressure (`WQ_MEM_RECLAIM`).
    pub const MEM_RECLAIM: QueueFlags = QueueFlags(bindings::wq_flags_WQ_MEM_RECLAIM);
    /// High-priority workers (`WQ_HIGHPRI`).
    pub const HIGHPRI: QueueFlags = QueueFlags(bindings::wq_flags_WQ_HIGHPRI);
}

impl BitOr for QueueFlags {
    type Output = QueueFlags;

    fn bitor(self, rhs: QueueFlags) -> QueueFlags {
        QueueFlags(self.0 | rhs.0)
    }
}

/// A workqueue allocated with `alloc_workqueue()`, destroyed (after draining it) when dropped.
///
/// # Invariants
///
/// `self.0` points to a workqueue this object allocated, with the `WQ_*` flags `self.1`, and
/// nobody else destroys.
pub struct OwnedQueue(NonNull<bindings::workqueue_struct>, u32);

// SAFETY: a workqueue may be used and destroyed from any thread.
unsafe impl Send for OwnedQueue {}
// SAFETY: a workqueue may be used from several threads at once.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// Allocates a workqueue named `name` with `flags` and at most `max_active` items of it
    /// running at once per CPU (per node for unbound queues); 0 means the default
    /// (`WQ_DFL_ACTIVE`). `alloc_workqueue()` copies `name`.
    ///
    /// # Errors
    ///
    /// Returns [`ENOMEM`] if the workqueue could not be allocated, or [`EINVAL`] if `max_active`
    /// is above `WQ_MAX_ACTIVE`.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::workqueue::{OwnedQueue, QueueFlags};
    ///
    /// let queue = OwnedQueue::new(c"doc_owned", QueueFlags::UNBOUND, 0)?;
    /// queue.try_spawn(GFP_KERNEL, || pr_info!("queued on an owned workqueue\n"))?;
    /// // Dropping the queue drains it.
    /// drop(queue);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn new(name: &CStr, flags: QueueFlags, max_active: usize) -> Result<Self> {
        let max_active = i32::try_from(max_active)
            .ok()
            .filter(|&m| m <= bindings::wq_consts_WQ_MAX_ACTIVE as i32)
            .ok_or(EINVAL)?;
        Self::alloc(name, flags.0, max_active)
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
        // SAFETY: the format string takes one string argument, and `name` is a valid C string.
        let wq = unsafe {
            bindings::alloc_workqueue_noprof(
                c"%s".as_char_ptr(),
                flags,
                max_active,
                name.as_char_ptr(),
            )
        };
        // INVARIANT: the workqueue was just allocated with `flags`; only `drop` destroys it.
        Ok(Self(NonNull::new(wq).ok_or(ENOMEM)?, flags))
    }

    /// Makes the items queued on a node run only on the online CPUs of that node: affinity scope
    /// `WQ_AFFN_NUMA` with `affn_strict` set (Documentation/core-api/workqueue.rst, "Affinity
    /// Scopes"). Items queued on a node without online CPUs run on any CPU.
    ///
    /// # Errors
    ///
    /// Returns [`EINVAL`] for a queue that is not unbound, [`ENOMEM`] if the attributes could not
    /// be allocated, or the error of `apply_workqueue_attrs()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::workqueue::{OwnedQueue, QueueFlags};
    ///
    /// let queue = OwnedQueue::new(c"doc_strict", QueueFlags::UNBOUND, 0)?;
    /// queue.set_numa_strict()?;
    /// let percpu = OwnedQueue::new(c"doc_percpu", QueueFlags::PERCPU, 0)?;
    /// assert_eq!(percpu.set_numa_strict(), Err(EINVAL));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn set_numa_strict(&self) -> Result {
        // `apply_workqueue_attrs()` would refuse it too, with a warning.
        if self.1 & bindings::wq_flags_WQ_UNBOUND == 0 {
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
        }
        // SAFETY: the workqueue is valid and unbound by the type invariant; `attrs` is copied.
        let ret = unsafe { bindings::apply_workqueue_attrs(self.0.as_ptr(), attrs) };
        // SAFETY: `attrs` came from `alloc_workqueue_attrs()` and is no longer used.
        unsafe { bindings::free_workqueue_attrs(attrs) };
        to_result(ret)
    }

    /// Keeps the workqueue for the rest of the kernel's life and returns it.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::workqueue::{OwnedQueue, Queue, QueueFlags};
    ///
    /// // A queue made once at boot and used by everyone after.
    /// let queue: &'static Queue = OwnedQueue::new(c"doc_leak", QueueFlags::UNBOUND, 0)?.leak();
    /// queue.try_spawn(GFP_KERNEL, || pr_info!("on a leaked queue\n"))?;
    /// # Ok::<(), Error>(())
    /// ```
    pub fn leak(self) -> &'static Queue {
        let wq = self.0;
        core::mem::forget(self);
        // SAFETY: the workqueue is valid, and since `self` was forgotten, never destroyed.
        unsafe { Queue::from_raw(wq.as_ptr()) }
    }
}

impl Deref for OwnedQueue {
    type Target = Queue;

    fn deref(&self) -> &Queue {
        // SAFETY: by the type invariant the workqueue is valid until `self` is dropped.
        unsafe { Queue::from_raw(self.0.as_ptr()) }
    }
}

impl Drop for OwnedQueue {
    fn drop(&mut self) {
        // SAFETY: by the type invariant we allocated the workqueue and nobody else destroys it;
        // work items queued on it through `Deref` are drained first by `destroy_workqueue()`.
        unsafe { bindings::destroy_workqueue(self.0.as_ptr()) };
    }
}
