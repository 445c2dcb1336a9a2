// SPDX-License-Identifier: GPL-2.0

//! Workqueues allocated by their user.

use super::Queue;
use crate::{
    bindings, c_str,
    error::{code::ENOMEM, to_result, Result},
    str::CStr,
};
use core::{ops::Deref, ptr::NonNull};

/// A workqueue allocated with `alloc_workqueue()`, destroyed (after draining it) when dropped.
///
/// # Invariants
///
/// `self.0` points to a workqueue this object allocated and nobody else destroys.
pub struct OwnedQueue(NonNull<bindings::workqueue_struct>);

// SAFETY: a workqueue may be used and destroyed from any thread.
unsafe impl Send for OwnedQueue {}
// SAFETY: a workqueue may be used from several threads at once.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// Allocates an unbound workqueue (`WQ_UNBOUND`) whose work items queued on a node run only
    /// on the online CPUs of that node: affinity scope `WQ_AFFN_NUMA` with `affn_strict` set
    /// (see Documentation/core-api/workqueue.rst, "Affinity Scopes"). Items queued on a node
    /// without online CPUs run on any CPU.
    ///
    /// `alloc_workqueue()` copies `name`.
    ///
    /// # Errors
    ///
    /// Returns [`ENOMEM`] if the workqueue or its attributes could not be allocated, or the error
    /// of `apply_workqueue_attrs()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, workqueue::OwnedQueue};
    ///
    /// let queue = OwnedQueue::new_unbound_numa_strict(c_str!("doc_strict"))?;
    /// queue.try_spawn(GFP_KERNEL, || pr_info!("queued on a strict workqueue\n"))?;
    /// // Dropping the queue drains it.
    /// drop(queue);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn new_unbound_numa_strict(name: &CStr) -> Result<Self> {
        // SAFETY: the format string takes one string argument, and `name` is a valid C string.
        let wq = unsafe {
            bindings::alloc_workqueue(
                c_str!("%s").as_char_ptr(),
                bindings::wq_flags_WQ_UNBOUND,
                bindings::wq_consts_WQ_UNBOUND_MAX_ACTIVE as _,
                name.as_char_ptr(),
            )
        };
        // INVARIANT: the workqueue was just allocated; only `drop` destroys it.
        let queue = Self(NonNull::new(wq).ok_or(ENOMEM)?);
        // SAFETY: no preconditions; returns null or attributes owned by the caller.
        let attrs = unsafe { bindings::alloc_workqueue_attrs() };
        if attrs.is_null() {
            return Err(ENOMEM);
        }
        // SAFETY: `attrs` is valid and only ours.
        unsafe {
            (*attrs).affn_scope = bindings::wq_affn_scope_WQ_AFFN_NUMA;
            (*attrs).affn_strict = true;
        }
        // SAFETY: `queue` is an unbound workqueue nothing was queued on yet; `attrs` is valid and
        // is copied, not kept.
        let ret = unsafe { bindings::apply_workqueue_attrs(queue.0.as_ptr(), attrs) };
        // SAFETY: `attrs` came from `alloc_workqueue_attrs()` and is no longer used.
        unsafe { bindings::free_workqueue_attrs(attrs) };
        to_result(ret)?;
        Ok(queue)
    }

    /// Allocates an ordered workqueue, as `alloc_ordered_workqueue()` does: unbound, and its
    /// work items run one at a time in the order they were queued.
    ///
    /// `alloc_workqueue()` copies `name`.
    ///
    /// # Errors
    ///
    /// Returns [`ENOMEM`] if the workqueue could not be allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, workqueue::OwnedQueue};
    ///
    /// let queue = OwnedQueue::new_ordered(c_str!("doc_ordered"))?;
    /// queue.try_spawn(GFP_KERNEL, || pr_info!("first\n"))?;
    /// queue.try_spawn(GFP_KERNEL, || pr_info!("second, after the first returned\n"))?;
    /// # Ok::<(), Error>(())
    /// ```
    pub fn new_ordered(name: &CStr) -> Result<Self> {
        // SAFETY: the format string takes one string argument, and `name` is a valid C string.
        let wq = unsafe {
            bindings::alloc_workqueue(
                c_str!("%s").as_char_ptr(),
                bindings::wq_flags_WQ_UNBOUND | bindings::wq_flags___WQ_ORDERED,
                1,
                name.as_char_ptr(),
            )
        };
        // INVARIANT: the workqueue was just allocated; only `drop` destroys it.
        Ok(Self(NonNull::new(wq).ok_or(ENOMEM)?))
    }

    /// Keeps the workqueue for the rest of the kernel's life and returns it.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{c_str, workqueue::{OwnedQueue, Queue}};
    ///
    /// // A queue made once at boot and used by everyone after.
    /// let queue: &'static Queue = OwnedQueue::new_unbound_numa_strict(c_str!("doc_leak"))?.leak();
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
