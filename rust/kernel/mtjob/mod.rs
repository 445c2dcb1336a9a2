// SPDX-License-Identifier: GPL-2.0

//! Multithreaded jobs over index ranges.
//!
//! A [`Job`] runs a chunk function over a half-open range of a typed [`Index`], splitting it into
//! chunks that the calling thread and up to `max_threads - 1` helpers take from a shared cursor.
//! Helpers are closures spawned on a [`workqueue::scope!`]: on `system_dfl_wq` (where padata
//! queues its helpers since b6d02e0e41aa), or, when the job has a node [`Affinity`], on
//! `mtjob_node`, an unbound workqueue with strict NUMA affinity, queued on their node.
//! [`Job::run`] returns only after every helper has finished or was cancelled before it started,
//! so the chunk function may borrow from the caller's stack; then
//! the calling thread runs any chunk still left, so a job that returns `Ok` ran every index,
//! whatever helper allocation, CPU hotplug or node state did meanwhile. A job of one thread is
//! one chunk, the whole range; unless it is an [`Affinity::Node`] or [`Affinity::ByIndexStrict`]
//! job whose node is another, the calling thread runs it without spawning anything, as padata
//! runs a job of one thread.
//!
//! [`workqueue::scope!`]: crate::workqueue::scope
//!
//! It is the successor of `padata_do_multithreaded()` (kernel/padata.c), which is `__init`,
//! untyped, cannot return errors and only round-robins helpers over nodes. Compared with it:
//!
//! - chunk functions return [`Result`]; the first error stops new chunks and is returned;
//! - it may be called at any time from a context that may sleep, not only during boot;
//! - chunks are handed out with one atomic increment of a per-segment cursor instead of a
//!   spinlock held around the job's `start`/`size`;
//! - with [`Affinity::ByIndex`] the range is split into per-node segments and a thread takes the
//!   chunks of its own node first; with [`Affinity::ByIndexStrict`] it takes only those;
//!   padata's `numa_aware` only chooses where a helper runs;
//! - when helpers cannot be allocated the job runs with fewer of them, down to the caller alone.
//!
//! C header: [`include/linux/mtjob.h`](srctree/include/linux/mtjob.h)
//!
//! Each call site has a lock class of its own, made by [`new_job!`]: the helpers run under it and
//! the wait for them acquires it, so lockdep reports a caller that waits while holding a lock its
//! chunks take, without relating unrelated callers' locks to each other.
//!
//! # Examples
//!
//! ```
//! use core::num::NonZeroUsize;
//! use kernel::mtjob::{new_job, Align};
//! use kernel::sync::atomic::{Atomic, Relaxed};
//!
//! // Sum 0..100_000 in chunks that start on multiples of 64, with up to four threads.
//! let sum = Atomic::new(0u64);
//! let report = new_job!(0u64..100_000)?
//!     .align(Align::new(64)?)
//!     .min_chunk(1024)
//!     .max_threads(NonZeroUsize::new(4).ok_or(EINVAL)?)
//!     .run(|chunk| {
//!         sum.add(chunk.sum::<u64>(), Relaxed);
//!         Ok(())
//!     })?;
//! assert_eq!(sum.load(Relaxed), 99_999 * 100_000 / 2);
//! assert!(report.threads() >= 1 && report.threads() <= 4);
//! # Ok::<(), Error>(())
//! ```

use crate::{
    alloc::NumaNode,
    cpu::CpuId,
    page::Pfn,
    prelude::*, //
};

mod job;
mod pace;
mod plan;
mod shared;
#[cfg(CONFIG_RUST_MTJOB_KUNIT_TEST)]
mod tests;

pub use job::{
    Job,
    Report, //
};
#[cfg(CONFIG_MTJOB_KUNIT_TEST)]
#[doc(hidden)]
pub use shared::fail_helper;
pub use shared::prepare_node_workqueue;

/// Returns a [`Job`] over `range` whose helpers and join use a lock class of the call site,
/// named after it (`file:line`) or as given.
///
/// # Examples
///
/// ```
/// use kernel::mtjob::new_job;
///
/// let report = new_job!(0usize..64, "doc_job")?.run(|_| Ok(()))?;
/// assert_eq!(report.chunks(), 1);
/// # Ok::<(), Error>(())
/// ```
#[macro_export]
macro_rules! new_job {
    ($range:expr $(, $name:literal)? $(,)?) => {{
        // A static, so that the name has one address however often the call site is inlined or
        // monomorphised: lockdep compares a class's names by address.
        static NAME: &$crate::str::CStr = $crate::optional_name!($($name)?);
        static KEY: $crate::sync::LockClassKey =
            // SAFETY: a static, which is never dropped nor moved.
            unsafe { $crate::sync::LockClassKey::new_static() };
        // The join's map, made at build time for the call site.
        static MAP: $crate::sync::lockdep::LockdepMap =
            $crate::sync::lockdep::LockdepMap::new_static(NAME, &KEY);
        $crate::mtjob::Job::new($range, NAME, $crate::prelude::Pin::static_ref(&KEY), &MAP)
    }};
}
pub use new_job;

/// Returns whether the caller runs on one of the CPUs of `node` ([`NumaNode::cpumask`]).
///
/// Under NUMA emulation (`numa=fake=`) a CPU is one of every emulated node of its physical
/// node. The caller may move right after: a placement hint.
#[inline]
fn on_node(node: NumaNode) -> bool {
    // An online CPU is in `cpumask_of_node(numa_node_id())` (under NUMA emulation too), so the
    // mask is only read for another node; a wrong answer would only misplace a chunk.
    node == NumaNode::current()
        || node
            .cpumask()
            .is_some_and(|mask| mask.test(CpuId::current()))
}

/// An index type a [`Job`] can range over.
///
/// The engine does its arithmetic on `u64` positions; an implementation maps its values to
/// positions and back. A mistaken implementation can make a job visit the wrong indices, but it
/// cannot cause undefined behaviour.
///
/// # Examples
///
/// ```
/// use kernel::mtjob::Index;
/// use kernel::page::Pfn;
///
/// assert_eq!(Pfn::from_u64(Pfn::new(42).into_u64()), Pfn::new(42));
/// assert_eq!(7usize.into_u64(), 7);
/// ```
pub trait Index: Copy + Ord + Send + Sync {
    /// Returns the position of `self`. Must be monotonic: `a < b` implies
    /// `a.into_u64() < b.into_u64()`.
    fn into_u64(self) -> u64;

    /// Returns the index at position `pos`, the inverse of [`Index::into_u64`]. The engine only
    /// passes positions between the `into_u64()` of a job's start and end.
    fn from_u64(pos: u64) -> Self;
}

impl Index for u64 {
    #[inline]
    fn into_u64(self) -> u64 {
        self
    }

    #[inline]
    fn from_u64(pos: u64) -> Self {
        pos
    }
}

impl Index for usize {
    #[inline]
    fn into_u64(self) -> u64 {
        self as u64
    }

    #[inline]
    fn from_u64(pos: u64) -> Self {
        // Positions come from values of this type, so this never truncates.
        pos as usize
    }
}

impl Index for Pfn {
    #[inline]
    fn into_u64(self) -> u64 {
        self.as_usize() as u64
    }

    #[inline]
    fn from_u64(pos: u64) -> Self {
        Pfn::new(pos as usize)
    }
}

/// The alignment of chunk boundaries: a power of two, in units of the job's index.
///
/// # Invariants
///
/// `self.0` is a power of two (so it is not zero).
///
/// # Examples
///
/// ```
/// use kernel::mtjob::Align;
///
/// assert_eq!(Align::new(512)?.get(), 512);
/// assert_eq!(Align::new(3), Err(EINVAL));
/// assert_eq!(Align::new(0), Err(EINVAL));
/// assert_eq!(Align::ONE.get(), 1);
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Align(u64);

impl Align {
    /// No alignment: chunks may start on any index.
    // INVARIANT: 1 is a power of two.
    pub const ONE: Align = Align(1);

    /// Returns the alignment `align`.
    ///
    /// # Errors
    ///
    /// Returns [`EINVAL`] if `align` is not a power of two (zero included).
    pub const fn new(align: u64) -> Result<Self> {
        if align.is_power_of_two() {
            // INVARIANT: checked just above.
            Ok(Align(align))
        } else {
            Err(EINVAL)
        }
    }

    /// Returns the alignment as a number of indices.
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// Where the helpers of a [`Job`] run and which chunks they take first.
///
/// # The node of an index
///
/// The closure of [`Affinity::ByIndex`] and [`Affinity::ByIndexStrict`] (`node_of`) is called
/// on the job's calling thread, once per chunk with the chunk's first index, before any chunk
/// runs, and never after [`Job::run`] returns. It places chunks and nothing else: whatever it
/// answers, even a node that is offline, not possible or different from one call to the next,
/// every index of the range still runs exactly once; only where it runs changes. It is `Sync`
/// because the job is shared with its helpers, which do not call it.
///
/// # Examples
///
/// ```
/// use core::num::NonZeroUsize;
/// use kernel::alloc::NumaNode;
/// use kernel::mtjob::{new_job, Affinity};
/// use kernel::page::Pfn;
///
/// // Pretend the first half of the pfns is on the caller's node and the rest on another.
/// let here = NumaNode::current();
/// let other = NumaNode::next_with_cpus(Some(here));
/// let node_of = |pfn: Pfn| if pfn.as_usize() < 512 { Some(here) } else { other };
/// let report = new_job!(Pfn::new(0)..Pfn::new(1024))?
///     .max_threads(NonZeroUsize::new(2).ok_or(EINVAL)?)
///     .affinity(Affinity::ByIndex(&node_of))
///     .run(|_pfns| Ok(()))?;
/// assert!(report.threads() <= 2);
/// # Ok::<(), Error>(())
/// ```
pub enum Affinity<'a, I> {
    /// Helpers are queued with `queue_work()`, near the calling CPU.
    None,
    /// Helpers are spread round-robin over the nodes with CPUs, like padata's `numa_aware`.
    Interleave,
    /// All helpers are queued on this node. The calling thread takes chunks only if it runs on a
    /// CPU of that node (one of [`NumaNode::cpumask`]: under `numa=fake=` a CPU of every emulated
    /// node of its physical node), if the node has no CPU ([`NumaNode::has_cpus`]), or if the job
    /// may not wait for helpers: allocation flags without `GFP_KERNEL` (see
    /// [`Job::alloc_flags`]), a job run from a work item, or a calling thread with `PF_MEMALLOC`
    /// set ([`Scope::may_wait`]). The job uses at most as many threads as the node has online
    /// CPUs.
    /// Unlike the chunks of a by-index job, a job on a node without CPUs is not moved to the
    /// nearest node with CPUs: the caller runs it alone, as upstream runs such a node's deferred
    /// struct page init on one thread.
    ///
    /// [`Scope::may_wait`]: crate::workqueue::Scope::may_wait
    Node(NumaNode),
    /// The closure tells the node of an index (`None`, or a node that is not possible such as
    /// [`NumaNode::NO_NODE`]: no node). The range is cut into
    /// segments of chunks whose first index is on the same node; helpers are queued on those
    /// nodes, take the chunks of their own node first and then help with the others. The
    /// closure is called once per chunk before any chunk runs.
    /// The chunks of a node without CPUs belong to its nearest node with CPUs
    /// ([`NumaNode::nearest_with_cpus`]): a helper there takes them first, and they count as off
    /// their node only when they run elsewhere.
    ByIndex(&'a (dyn Fn(I) -> Option<NumaNode> + Sync)),
    /// Like [`Affinity::ByIndex`], but a thread takes only the chunks of the node it works for:
    /// the chunks of node N run on a helper queued on node N, or on the caller if
    /// [`NumaNode::current`] is N. Chunks of no node (`None`), or of a node
    /// no helper was queued for (when `max_threads` is below the number of nodes, or a helper
    /// could not be allocated) run on the caller. A caller on a node without chunks, in a job
    /// whose threads suffice for a helper on each node of its chunks (all with CPUs), does not
    /// count as a thread: each of those nodes gets a helper, and the caller runs only what they
    /// left. A job of one thread is one chunk: a helper on its node runs it, unless the caller is
    /// on that node.
    /// Placement is best effort: whatever a helper could not do (it was cancelled, or its node
    /// lost its CPUs) the caller runs after the helpers finished, and [`Report::off_node`]
    /// counts it.
    ByIndexStrict(&'a (dyn Fn(I) -> Option<NumaNode> + Sync)),
}
