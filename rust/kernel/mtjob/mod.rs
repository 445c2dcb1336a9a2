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
    alloc::{
        flags::GFP_KERNEL,
        Flags,
        NumaNode, //
    },
    cpu::CpuId,
    page::Pfn,
    prelude::*,
    str::CStr,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        lockdep::LockdepMap,
        LockClassKey, //
    },
    workqueue::scope_with_key, //
};
use core::{
    marker::PhantomData,
    num::NonZeroUsize,
    ops::Range, //
};

mod plan;
mod shared;
#[cfg(CONFIG_RUST_MTJOB_KUNIT_TEST)]
mod tests;

use plan::{
    Plan,
    Segment, //
};
#[cfg(CONFIG_MTJOB_KUNIT_TEST)]
#[doc(hidden)]
pub use shared::fail_helper;
pub use shared::prepare_node_workqueue;
use shared::Shared;

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

/// What a finished [`Job`] used.
///
/// # Examples
///
/// ```
/// use core::num::NonZeroUsize;
/// use kernel::mtjob::new_job;
///
/// // Two threads cut 1000 indices into 8 chunks of 125 (four chunks per thread, each at least
/// // `min_chunk`), if there are two CPUs; one thread runs the range as one chunk.
/// let two = NonZeroUsize::new(2).ok_or(EINVAL)?;
/// let report = new_job!(0usize..1000)?.min_chunk(100).max_threads(two).run(|_| Ok(()))?;
/// assert!(report.chunks() == 8 || (report.threads() == 1 && report.chunks() == 1));
/// let report = new_job!(0usize..1000)?.min_chunk(100).run(|_| Ok(()))?;
/// assert_eq!(report.threads(), 1);
/// assert_eq!(report.chunks(), 1);
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    threads: usize,
    chunks: usize,
    off_node: usize,
}

impl Report {
    /// Returns the number of threads that took part: helpers that started, and the calling
    /// thread if it ran a chunk. Helpers cancelled before they started are not counted.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Returns the number of chunks the range was cut into.
    pub fn chunks(&self) -> usize {
        self.chunks
    }

    /// Returns the number of chunks that have a node (by-index affinities, or
    /// [`Affinity::Node`]) and ran on a CPU that is not one of that node's
    /// ([`NumaNode::cpumask`]) when the chunk started.
    /// The chunks of a by-index node without CPUs count as its nearest node's.
    pub fn off_node(&self) -> usize {
        self.off_node
    }
}

/// A multithreaded job over the half-open range `start..end` of an [`Index`].
///
/// Built with [`new_job!`] (or [`Job::new`]) and the setters, run with [`Job::run`]. By default
/// there is no alignment, no minimum chunk size, a single thread and no affinity.
///
/// # Invariants
///
/// `self.start <= self.end`.
pub struct Job<'a, I: Index> {
    start: u64,
    end: u64,
    align: Align,
    min_chunk: u64,
    max_threads: NonZeroUsize,
    affinity: Affinity<'a, I>,
    alloc_flags: Flags,
    name: &'static CStr,
    key: Pin<&'static LockClassKey>,
    map: &'static LockdepMap,
}

impl<'a, I: Index> Job<'a, I> {
    /// Returns a job over `range`, with one thread, whose helpers run under the lock class `key`
    /// named `name` and whose join acquires `map`, of that class (see
    /// [`workqueue::scope_with_key`]); [`new_job!`] makes the three, static, for the call site.
    /// `name` must be the same pointer for every job of `key`.
    ///
    /// [`workqueue::scope_with_key`]: crate::workqueue::scope_with_key
    ///
    /// # Errors
    ///
    /// Returns [`EINVAL`] if `range.start > range.end`.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::mtjob::new_job;
    ///
    /// assert!(new_job!(core::ops::Range { start: 10usize, end: 5 }).is_err());
    /// // An empty range is valid; the chunk function is never called.
    /// let report = new_job!(5usize..5)?.run(|_| Err(EIO))?;
    /// assert_eq!(report.chunks(), 0);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn new(
        range: Range<I>,
        name: &'static CStr,
        key: Pin<&'static LockClassKey>,
        map: &'static LockdepMap,
    ) -> Result<Self> {
        let (start, end) = (range.start.into_u64(), range.end.into_u64());
        if start > end {
            return Err(EINVAL);
        }
        // INVARIANT: `start <= end` was checked.
        Ok(Self {
            start,
            end,
            align: Align::ONE,
            min_chunk: 0,
            max_threads: NonZeroUsize::MIN,
            affinity: Affinity::None,
            alloc_flags: GFP_KERNEL,
            name,
            key,
            map,
        })
    }

    /// Sets the alignment: every chunk boundary is a multiple of `align`, except the start and
    /// end of the job.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroUsize;
    /// use kernel::mtjob::{new_job, Align};
    /// use kernel::page::Pfn;
    /// use kernel::sync::{new_spinlock, Arc};
    ///
    /// let bad = Arc::pin_init(new_spinlock!(0usize), GFP_KERNEL)?;
    /// new_job!(Pfn::new(1000)..Pfn::new(100_000))?
    ///     .align(Align::new(512)?)
    ///     .max_threads(NonZeroUsize::new(4).ok_or(EINVAL)?)
    ///     .run(|pfns| {
    ///         let inner = |p: Pfn| p != Pfn::new(1000) && p != Pfn::new(100_000);
    ///         for p in [pfns.start, pfns.end] {
    ///             if inner(p) && p.as_usize() % 512 != 0 {
    ///                 *bad.lock() += 1;
    ///             }
    ///         }
    ///         Ok(())
    ///     })?;
    /// assert_eq!(*bad.lock(), 0);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn align(mut self, align: Align) -> Self {
        self.align = align;
        self
    }

    /// Sets the minimum chunk size in indices: no chunk is smaller, except the first and last
    /// of the job. Zero means no minimum.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroUsize;
    /// use kernel::mtjob::new_job;
    ///
    /// // 100 indices with a minimum of 40 cannot make more than 3 chunks.
    /// let eight = NonZeroUsize::new(8).ok_or(EINVAL)?;
    /// let report = new_job!(0u64..100)?.min_chunk(40).max_threads(eight).run(|_| Ok(()))?;
    /// assert!(report.chunks() <= 3);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn min_chunk(mut self, min_chunk: u64) -> Self {
        self.min_chunk = min_chunk;
        self
    }

    /// Sets the maximum number of threads working at once, the calling thread included. A job
    /// never uses more threads than there are online CPUs.
    pub fn max_threads(mut self, max_threads: NonZeroUsize) -> Self {
        self.max_threads = max_threads;
        self
    }

    /// Sets the node affinity of the helpers.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroUsize;
    /// use kernel::alloc::NumaNode;
    /// use kernel::mtjob::{new_job, Affinity};
    /// use kernel::sync::atomic::{Atomic, Relaxed};
    ///
    /// // Helpers go to the caller's node; the job uses no more threads than it has CPUs.
    /// let here = NumaNode::current();
    /// let chunks = Atomic::new(0usize);
    /// let report = new_job!(0usize..4096)?
    ///     .max_threads(NonZeroUsize::new(64).ok_or(EINVAL)?)
    ///     .affinity(Affinity::Node(here))
    ///     .run(|_| {
    ///         chunks.add(1, Relaxed);
    ///         Ok(())
    ///     })?;
    /// assert!(report.threads() <= here.nr_cpus() as usize);
    /// assert_eq!(chunks.load(Relaxed), report.chunks());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn affinity(mut self, affinity: Affinity<'a, I>) -> Self {
        self.affinity = affinity;
        self
    }

    /// Sets the flags of the engine's own allocations: the helpers' work items and, with a
    /// by-index affinity, the per-node segments. [`GFP_KERNEL`] by default.
    ///
    /// Callers that must not enter reclaim, such as the mmu_gather free path, pass
    /// `GFP_NOWAIT`: if an allocation fails, the job runs with fewer helpers (or as one segment),
    /// never with an error.
    ///
    /// The flags also decide whether the calling thread may wait for helpers that have not
    /// started, which may depend on a kworker being created with `GFP_KERNEL`: only when they
    /// contain [`GFP_KERNEL`]. Otherwise, once the calling thread runs out of chunks, it cancels
    /// the helpers that did not start and runs their chunks itself, also in
    /// [`Affinity::Node`] and [`Affinity::ByIndexStrict`] jobs (see [`Report::off_node`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroUsize;
    /// use kernel::alloc::flags::{GFP_NOWAIT, __GFP_NOWARN};
    /// use kernel::mtjob::new_job;
    ///
    /// let report = new_job!(0usize..64)?
    ///     .max_threads(NonZeroUsize::new(2).ok_or(EINVAL)?)
    ///     .alloc_flags(GFP_NOWAIT | __GFP_NOWARN)
    ///     .run(|_| Ok(()))?;
    /// assert!(report.threads() >= 1 && report.threads() <= 2);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn alloc_flags(mut self, flags: Flags) -> Self {
        self.alloc_flags = flags;
        self
    }

    /// Runs `f` over every chunk of the range and waits for all helpers to finish.
    ///
    /// `f` may be called concurrently from several threads, in any order, in process context,
    /// and may sleep. Chunks are never empty, never overlap and cover the range exactly once
    /// (unless a chunk fails). `f` should call `cond_resched()` in long chunks.
    ///
    /// Must be called from a context that may sleep.
    ///
    /// # Errors
    ///
    /// Returns the first error `f` returned: once a chunk fails no new chunk is started, the
    /// chunks already running finish, and this error is returned. Failing to allocate helpers is
    /// not an error: the job then runs with fewer threads.
    ///
    /// # An oops in a chunk
    ///
    /// If `f` oopses (or a Rust panic happens in it, an index out of bounds included) on the
    /// calling thread while helpers may still run, the thread is parked, its stack kept: the
    /// helpers borrow `f` and what it borrows (see [`workqueue::scope_with_key`]). An oops on a
    /// helper kills that kworker as any oops in a work item does, and the caller then waits for
    /// it forever. A job of one thread run without a scope gets the ordinary oops: nothing else
    /// borrows its stack.
    ///
    /// [`workqueue::scope_with_key`]: crate::workqueue::scope_with_key
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroUsize;
    /// use kernel::mtjob::new_job;
    ///
    /// let two = NonZeroUsize::new(2).ok_or(EINVAL)?;
    /// let res = new_job!(0usize..1000)?.max_threads(two).min_chunk(100).run(|chunk| {
    ///     if chunk.contains(&450) { Err(ENOSPC) } else { Ok(()) }
    /// });
    /// assert_eq!(res, Err(ENOSPC));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn run<F>(&self, f: F) -> Result<Report>
    where
        F: Fn(Range<I>) -> Result + Sync,
    {
        let (res, report) = self.run_and_report(f);
        res.map(|()| report)
    }

    /// Runs `f` as [`Job::run`] does, and returns what the job used even when a chunk failed.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::mtjob::new_job;
    ///
    /// let (res, report) = new_job!(0usize..1000)?.min_chunk(100).run_and_report(|chunk| {
    ///     if chunk.contains(&450) { Err(EIO) } else { Ok(()) }
    /// });
    /// assert_eq!(res, Err(EIO));
    /// // One thread: one chunk, the whole range.
    /// assert_eq!(report.threads(), 1);
    /// assert_eq!(report.chunks(), 1);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn run_and_report<F>(&self, f: F) -> (Result, Report)
    where
        F: Fn(Range<I>) -> Result + Sync,
    {
        crate::task::might_sleep();
        let plan = Plan::new(self);
        if plan.chunks == 0 {
            return (Ok(()), Report::default());
        }
        let node = match self.affinity {
            Affinity::Node(node) => Some(node),
            // A job of one thread is one chunk, placed by its first index.
            Affinity::ByIndex(node_of) | Affinity::ByIndexStrict(node_of) if plan.threads == 1 => {
                plan::chunk_node(node_of, I::from_u64(plan.range(0).start))
            }
            _ => None,
        };
        // A job of one thread that the calling thread may run needs no helper and no segments:
        // one call, as padata runs a job of one thread. A `Node` or strict job whose node is
        // another goes on below, to a helper on that node; a `ByIndex` chunk off its node is
        // only counted.
        if plan.threads == 1 {
            let here = node.is_none_or(on_node);
            let placed = matches!(
                self.affinity,
                Affinity::Node(_) | Affinity::ByIndexStrict(_)
            );
            if here || !placed {
                return self.run_alone(&plan, &f, here);
            }
        }
        let whole = [Segment::new(0, plan.chunks, node)];
        // A job of one thread that got here is one chunk, placed in `whole` above.
        let per_node = match self.affinity {
            Affinity::ByIndex(node_of) | Affinity::ByIndexStrict(node_of) if plan.threads > 1 => {
                plan.segments::<I>(node_of, self.alloc_flags)
            }
            _ => None,
        };
        let segments: &[Segment] = per_node.as_deref().unwrap_or(&whole);
        let shared = Shared {
            plan,
            segments,
            strict: matches!(self.affinity, Affinity::ByIndexStrict(_)),
            f: &f,
            error: Atomic::new(0),
            off_node: Atomic::new(0),
            _index: PhantomData,
        };
        let threads = shared.run(
            &self.affinity,
            self.alloc_flags,
            self.name,
            self.key,
            self.map,
        );
        let report = Report {
            threads,
            chunks: plan.chunks,
            off_node: shared.off_node.load(Relaxed),
        };
        match shared.error.load(Relaxed) {
            0 => (Ok(()), report),
            errno => (Err(Error::from_errno(errno)), report),
        }
    }

    /// Runs a job of one thread, one chunk, as one call of `f` on the calling thread. With
    /// lockdep the call is made in a scope that spawns nothing, so that lockdep learns the same
    /// ordering from the call site as from its larger jobs (the scope's join acquires the class);
    /// without it the scope would only cost time (a job of one index took 1.4 us with it and
    /// 0.5 us without, `make bench-engine` under QEMU TCG).
    ///
    /// `here` is whether the chunk starts on its node's CPUs, or has no node: a chunk off its node
    /// counts in [`Report::off_node`], as the threads of a larger job count it.
    fn run_alone<F>(&self, plan: &Plan, f: &F, here: bool) -> (Result, Report)
    where
        F: Fn(Range<I>) -> Result,
    {
        debug_assert_eq!(plan.chunks, 1);
        let r = plan.range(0);
        let off_node = usize::from(!here);
        let res = if cfg!(CONFIG_LOCKDEP) {
            scope_with_key(self.name, self.key, self.map, |_| {
                f(I::from_u64(r.start)..I::from_u64(r.end))
            })
        } else {
            f(I::from_u64(r.start)..I::from_u64(r.end))
        };
        let report = Report {
            threads: 1,
            chunks: 1,
            off_node,
        };
        (res, report)
    }
}
