// SPDX-License-Identifier: GPL-2.0

//! NUMA node identifiers.
//!
//! C header: [`include/linux/nodemask.h`](srctree/include/linux/nodemask.h)

use crate::{
    bindings,
    error::{code::EINVAL, Result},
};

/// The identifier of a possible NUMA node.
///
/// # Invariants
///
/// `self.0` is in `0..MAX_NUMNODES` and the node is set in `node_states[N_POSSIBLE]`.
///
/// # Examples
///
/// ```
/// use kernel::numa::NodeId;
///
/// let here = NodeId::current();
/// assert_eq!(NodeId::new(here.as_raw())?, here);
/// assert!(NodeId::new(-1).is_err());
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(i32);

impl NodeId {
    /// Returns the node with identifier `id`.
    ///
    /// # Errors
    ///
    /// Returns [`EINVAL`] when `id` is negative, not below `MAX_NUMNODES`, or not a possible
    /// node (so `NUMA_NO_NODE` is rejected).
    pub fn new(id: i32) -> Result<Self> {
        if id < 0 || id as u32 >= bindings::MAX_NUMNODES {
            return Err(EINVAL);
        }
        // SAFETY: `id` is in `0..MAX_NUMNODES`, so `node_state` reads inside the node mask.
        if !unsafe { bindings::node_state(id, bindings::node_states_N_POSSIBLE) } {
            return Err(EINVAL);
        }
        // INVARIANT: `id` was checked against `MAX_NUMNODES` and `N_POSSIBLE` above.
        Ok(Self(id))
    }

    /// Returns the node of the CPU the caller is running on.
    ///
    /// Without preemption disabled the caller may move to another node right after; the answer
    /// is a placement hint, as `numa_node_id()` is in C.
    pub fn current() -> Self {
        // SAFETY: `numa_node_id()` has no preconditions.
        let id = unsafe { bindings::numa_node_id() };
        // INVARIANT: the node of an online CPU is a possible node below `MAX_NUMNODES`.
        Self(id)
    }

    /// Returns the C identifier of the node.
    pub fn as_raw(self) -> i32 {
        self.0
    }

    /// Returns whether the node has at least one online CPU (`N_CPU`).
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::numa::NodeId;
    ///
    /// // The caller runs on a CPU, so its node has one.
    /// assert!(NodeId::current().has_cpus());
    /// ```
    pub fn has_cpus(self) -> bool {
        // SAFETY: by the type invariant `self.0` is in `0..MAX_NUMNODES`.
        unsafe { bindings::node_state(self.0, bindings::node_states_N_CPU) }
    }

    /// Returns whether the CPU the caller is running on is one of the node's CPUs
    /// (`cpumask_of_node()`).
    ///
    /// On real NUMA machines this is `NodeId::current() == self`. Under NUMA emulation
    /// (`numa=fake=`) a CPU is one of the CPUs of every emulated node carved out of its physical
    /// node, while `numa_node_id()` names only one of them. As with [`NodeId::current`], the
    /// caller may move right after: the answer is a placement hint.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::{new_spinlock, numa::NodeId, stack_pin_init};
    ///
    /// // A held spinlock keeps the caller on its CPU, so both answers are about the same CPU.
    /// stack_pin_init!(let lock = new_spinlock!(()));
    /// let _guard = lock.lock();
    /// assert!(NodeId::current().has_current_cpu());
    /// ```
    pub fn has_current_cpu(self) -> bool {
        // SAFETY: by the type invariant `self.0` is a possible node, so below `nr_node_ids`,
        // whose cpumasks exist from early boot on (a single `cpu_online_mask` without
        // `CONFIG_NUMA`, where node 0 is the only possible node); `raw_smp_processor_id()` has no
        // preconditions.
        unsafe { bindings::node_has_current_cpu(self.0) }
    }

    /// Returns the number of online CPUs of the node, a snapshot that CPU hotplug may change
    /// right after.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::numa::NodeId;
    ///
    /// assert!(NodeId::current().nr_cpus() >= 1);
    /// ```
    pub fn nr_cpus(self) -> usize {
        // SAFETY: by the type invariant `self.0` is a possible node, which `cpumask_of_node()`
        // accepts.
        unsafe { bindings::nr_online_cpus_node(self.0) as usize }
    }

    /// Returns the next node with CPUs after `prev`, wrapping around; the first such node when
    /// `prev` is `None`. Returns `None` only when no node has an online CPU.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::numa::NodeId;
    ///
    /// let first = NodeId::next_with_cpus(None).ok_or(ENODEV)?;
    /// assert!(first.has_cpus());
    /// // Walking the ring comes back to the first node.
    /// let mut n = first;
    /// for _ in 0..64 {
    ///     n = NodeId::next_with_cpus(Some(n)).ok_or(ENODEV)?;
    ///     if n == first {
    ///         break;
    ///     }
    /// }
    /// assert_eq!(n, first);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn next_with_cpus(prev: Option<NodeId>) -> Option<NodeId> {
        let prev = prev.map_or(-1, |n| n.0);
        // SAFETY: `node_states` is a static array of `NR_NODE_STATES` masks and `N_CPU` is below
        // that; `addr_of!` takes its address without creating a reference to the mutable static.
        let mask = unsafe {
            core::ptr::addr_of!(bindings::node_states[bindings::node_states_N_CPU as usize])
        };
        // SAFETY: `mask` points to a valid, initialised node mask; `__next_node_in` only reads it
        // and accepts `-1` as "before the first node".
        let next = unsafe { bindings::__next_node_in(prev, mask) };
        if next >= bindings::MAX_NUMNODES {
            return None;
        }
        // INVARIANT: `next` is below `MAX_NUMNODES` and set in `N_CPU`, which implies
        // `N_POSSIBLE`.
        Some(Self(next as i32))
    }
}
