// SPDX-License-Identifier: GPL-2.0

//! Multithreaded jobs over index ranges.
//!
//! A [`Job`] runs a chunk function over a half-open range of a typed [`Index`], splitting it into
//! chunks that the calling thread and up to `max_threads - 1` helpers take from a shared cursor.
//! Helpers are work items on `system_unbound_wq`, or, when the job has a node [`Affinity`], on
//! `mt_job_node`, an unbound workqueue with strict NUMA affinity, queued with
//! `queue_work_node()`. [`Job::run`] returns only after every helper has finished (or was
//! cancelled before it started, once the caller ran out of chunks), so the chunk function may
//! borrow from the caller's stack.
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
//! C header: [`include/linux/mt_job.h`](srctree/include/linux/mt_job.h)
//!
//! # Examples
//!
//! ```
//! use core::sync::atomic::{AtomicU64, Ordering};
//! use kernel::mt_job::{Align, Job};
//!
//! // Sum 0..100_000 in chunks that start on multiples of 64, with up to four threads.
//! let sum = AtomicU64::new(0);
//! let report = Job::new(0u64..100_000)?
//!     .align(Align::new(64)?)
//!     .min_chunk(1024)
//!     .max_threads(4)?
//!     .run(|chunk| {
//!         sum.fetch_add(chunk.sum::<u64>(), Ordering::Relaxed);
//!         Ok(())
//!     })?;
//! assert_eq!(sum.load(Ordering::Relaxed), 99_999 * 100_000 / 2);
//! assert!(report.threads() >= 1 && report.threads() <= 4);
//! # Ok::<(), Error>(())
//! ```

use crate::{
    alloc::{flags::GFP_KERNEL, Flags, KVec},
    bindings, c_str,
    error::{
        code::{EINVAL, ENOMEM},
        Error, Result,
    },
    init::PinInit,
    numa::NodeId,
    page::Pfn,
    pin_init, stack_pin_init,
    sync::{CondVar, SpinLock},
    types::Opaque,
};
use core::{
    marker::PhantomData,
    ops::Range,
    pin::Pin,
    sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicUsize, Ordering},
};
use macros::pin_data;

/// Chunks per thread the range is cut into, so that threads finishing early can balance the
/// load. The value is padata's `load_balance_factor` (commit 004ed42638f4, "padata: add basic
/// support for multithreaded jobs").
const CHUNKS_PER_THREAD: u64 = 4;

/// An index type a [`Job`] can range over.
///
/// The engine does its arithmetic on `u64` positions; an implementation maps its values to
/// positions and back. A mistaken implementation can make a job visit the wrong indices, but it
/// cannot cause undefined behaviour.
///
/// # Examples
///
/// ```
/// use kernel::mt_job::Index;
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
/// use kernel::mt_job::Align;
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
/// # Examples
///
/// ```
/// use kernel::mt_job::{Affinity, Job};
/// use kernel::numa::NodeId;
/// use kernel::page::Pfn;
///
/// // Pretend the first half of the pfns is on the caller's node and the rest on another.
/// let here = NodeId::current();
/// let other = NodeId::next_with_cpus(Some(here));
/// let node_of = |pfn: Pfn| if pfn.as_usize() < 512 { Some(here) } else { other };
/// let report = Job::new(Pfn::new(0)..Pfn::new(1024))?
///     .max_threads(2)?
///     .affinity(Affinity::ByIndex(&node_of))
///     .run(|_pfns| Ok(()))?;
/// assert!(report.chunks() >= 2);
/// # Ok::<(), Error>(())
/// ```
pub enum Affinity<'a, I> {
    /// Helpers are queued with `queue_work()`, near the calling CPU.
    None,
    /// Helpers are spread round-robin over the nodes with CPUs, like padata's `numa_aware`.
    Interleave,
    /// All helpers are queued on this node. The caller takes chunks only if it runs on that
    /// node or no helper could be queued, so chunks run on the node whenever that is possible.
    /// The job uses at most as many threads as the node has CPUs.
    Node(NodeId),
    /// The closure tells the node of an index (`None`: no preference). The range is cut into
    /// segments of chunks whose first index is on the same node; helpers are queued on those
    /// nodes, take the chunks of their own node first and then help with the others. The
    /// closure is called once per chunk before any chunk runs.
    ByIndex(&'a (dyn Fn(I) -> Option<NodeId> + Sync)),
    /// Like [`Affinity::ByIndex`], but a thread takes only the chunks of the node it works for:
    /// the chunks of node N run on a helper queued on node N, or on the caller if it runs on
    /// node N. Chunks of no node (`None`), of a node without CPUs, or of a node no helper was
    /// queued for (when `max_threads` is below the number of nodes) run on the caller.
    /// Helpers are not cancelled when the caller runs out of chunks.
    ByIndexStrict(&'a (dyn Fn(I) -> Option<NodeId> + Sync)),
}

/// What a finished [`Job`] used.
///
/// # Examples
///
/// ```
/// use kernel::mt_job::Job;
///
/// // One thread cuts 1000 indices into 4 chunks of 250 (four chunks per thread, each at least
/// // `min_chunk`); the caller runs them alone.
/// let report = Job::new(0usize..1000)?.min_chunk(100).run(|_| Ok(()))?;
/// assert_eq!(report.threads(), 1);
/// assert_eq!(report.chunks(), 4);
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    threads: usize,
    chunks: usize,
}

impl Report {
    /// Returns the number of threads that took part, the calling thread included if it worked.
    /// Helpers that were cancelled before they started, because the caller had already run
    /// out of chunks, are not counted.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Returns the number of chunks the range was cut into.
    pub fn chunks(&self) -> usize {
        self.chunks
    }
}

/// A multithreaded job over the half-open range `start..end` of an [`Index`].
///
/// Built with [`Job::new`] and the setters, run with [`Job::run`]. By default there is no
/// alignment, no minimum chunk size, a single thread and no affinity.
///
/// # Invariants
///
/// `self.start <= self.end` and `self.max_threads >= 1`.
pub struct Job<'a, I: Index> {
    start: u64,
    end: u64,
    align: Align,
    min_chunk: u64,
    max_threads: usize,
    affinity: Affinity<'a, I>,
    alloc_flags: Flags,
}

impl<'a, I: Index> Job<'a, I> {
    /// Returns a job over `range`, with one thread.
    ///
    /// # Errors
    ///
    /// Returns [`EINVAL`] if `range.start > range.end`.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::mt_job::Job;
    ///
    /// assert!(Job::new(core::ops::Range { start: 10usize, end: 5 }).is_err());
    /// // An empty range is valid; the chunk function is never called.
    /// let report = Job::new(5usize..5)?.run(|_| Err(EIO))?;
    /// assert_eq!(report.chunks(), 0);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn new(range: Range<I>) -> Result<Self> {
        let (start, end) = (range.start.into_u64(), range.end.into_u64());
        if start > end {
            return Err(EINVAL);
        }
        // INVARIANT: `start <= end` was checked and `max_threads` is 1.
        Ok(Self {
            start,
            end,
            align: Align::ONE,
            min_chunk: 0,
            max_threads: 1,
            affinity: Affinity::None,
            alloc_flags: GFP_KERNEL,
        })
    }

    /// Sets the alignment: every chunk boundary is a multiple of `align`, except the start and
    /// end of the job.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::mt_job::{Align, Job};
    /// use kernel::page::Pfn;
    /// use kernel::sync::{new_spinlock, Arc};
    ///
    /// let bad = Arc::pin_init(new_spinlock!(0usize), GFP_KERNEL)?;
    /// Job::new(Pfn::new(1000)..Pfn::new(100_000))?
    ///     .align(Align::new(512)?)
    ///     .max_threads(4)?
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
    /// use kernel::mt_job::Job;
    ///
    /// // 100 indices with a minimum of 40 cannot make more than 3 chunks.
    /// let report = Job::new(0u64..100)?.min_chunk(40).max_threads(8)?.run(|_| Ok(()))?;
    /// assert!(report.chunks() <= 3);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn min_chunk(mut self, min_chunk: u64) -> Self {
        self.min_chunk = min_chunk;
        self
    }

    /// Sets the maximum number of threads working at once, the calling thread included. A job
    /// never uses more threads than there are online CPUs.
    ///
    /// # Errors
    ///
    /// Returns [`EINVAL`] if `max_threads` is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::mt_job::Job;
    ///
    /// assert!(Job::new(0u64..10)?.max_threads(0).is_err());
    /// # Ok::<(), Error>(())
    /// ```
    pub fn max_threads(mut self, max_threads: usize) -> Result<Self> {
        if max_threads == 0 {
            return Err(EINVAL);
        }
        // INVARIANT: checked just above.
        self.max_threads = max_threads;
        Ok(self)
    }

    /// Sets the node affinity of the helpers.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::mt_job::{Affinity, Job};
    /// use kernel::numa::NodeId;
    ///
    /// // Helpers go to the caller's node; the job uses no more threads than it has CPUs.
    /// let here = NodeId::current();
    /// let chunks = AtomicUsize::new(0);
    /// let report = Job::new(0usize..4096)?
    ///     .max_threads(64)?
    ///     .affinity(Affinity::Node(here))
    ///     .run(|_| {
    ///         chunks.fetch_add(1, Ordering::Relaxed);
    ///         Ok(())
    ///     })?;
    /// assert!(report.threads() <= here.nr_cpus());
    /// assert_eq!(chunks.load(Ordering::Relaxed), report.chunks());
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
    /// # Examples
    ///
    /// ```
    /// use kernel::alloc::flags::{GFP_NOWAIT, __GFP_NOWARN};
    /// use kernel::mt_job::Job;
    ///
    /// let report = Job::new(0usize..64)?
    ///     .max_threads(2)?
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
    /// # Examples
    ///
    /// ```
    /// use core::sync::atomic::{AtomicUsize, Ordering};
    /// use kernel::mt_job::Job;
    ///
    /// let calls = AtomicUsize::new(0);
    /// let res = Job::new(0usize..1000)?.max_threads(1)?.min_chunk(100).run(|chunk| {
    ///     calls.fetch_add(1, Ordering::Relaxed);
    ///     if chunk.contains(&450) { Err(ENOSPC) } else { Ok(()) }
    /// });
    /// assert_eq!(res, Err(ENOSPC));
    /// // With one thread, nothing after the failing chunk ran.
    /// assert!(calls.load(Ordering::Relaxed) < 10);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn run<F>(&self, f: F) -> Result<Report>
    where
        F: Fn(Range<I>) -> Result + Sync,
    {
        let plan = Plan::new(self);
        if plan.chunks == 0 {
            return Ok(Report {
                threads: 0,
                chunks: 0,
            });
        }
        let whole = [Segment::new(0, plan.chunks, None)];
        let per_node = match self.affinity {
            Affinity::ByIndex(node_of) | Affinity::ByIndexStrict(node_of) => {
                plan.segments::<I>(node_of, self.alloc_flags)
            }
            _ => None,
        };
        let segments: &[Segment] = per_node.as_deref().unwrap_or(&whole);

        let me = NodeId::current();
        // With a node affinity the caller only works if it runs on that node (or alone).
        let caller_on_node = match self.affinity {
            Affinity::Node(node) => node == me,
            _ => true,
        };
        let shared = Shared {
            plan,
            segments,
            strict: matches!(self.affinity, Affinity::ByIndexStrict(_)),
            f: &f,
            error: AtomicI32::new(0),
            _index: PhantomData,
        };
        let threads = shared.run(&self.affinity, me, caller_on_node, self.alloc_flags);
        match shared.error.load(Ordering::Relaxed) {
            0 => Ok(Report {
                threads,
                chunks: plan.chunks,
            }),
            errno => Err(Error::from_errno(errno)),
        }
    }
}

/// How a job's range is cut into chunks and how many threads work on it.
///
/// Chunk 0 is `start..first`; chunk `k > 0` is `first + (k - 1) * chunk` plus `chunk` indices,
/// clipped to `end`. `first` is the first multiple of `chunk` above `start`, and `chunk` is a
/// multiple of the alignment, so every inner boundary is aligned.
#[derive(Clone, Copy)]
struct Plan {
    start: u64,
    end: u64,
    first: u64,
    chunk: u64,
    chunks: usize,
    threads: usize,
}

impl Plan {
    fn new<I: Index>(job: &Job<'_, I>) -> Self {
        let (start, end) = (job.start, job.end);
        let size = end - start;
        if size == 0 {
            return Self {
                start,
                end,
                first: end,
                chunk: 1,
                chunks: 0,
                threads: 0,
            };
        }
        let align = job.align.get();
        // As padata: no more threads than units of `max(min_chunk, align)` in the range.
        let unit = job.min_chunk.max(align);
        // Like padata, whose pool of helpers has one per possible CPU, no more threads than CPUs:
        // more would only take turns, and would cost helper allocations.
        // SAFETY: `num_online_cpus()` has no preconditions.
        let cpus = unsafe { bindings::num_online_cpus() }.max(1) as u64;
        let mut threads = (size / unit).max(1).min(job.max_threads as u64).min(cpus);
        if let Affinity::Node(node) = job.affinity {
            // Helpers only run on the node's CPUs: more threads than it has CPUs would only
            // take turns on them.
            threads = threads.min(node.nr_cpus().max(1) as u64);
        }
        if !cfg!(CONFIG_SMP) {
            threads = 1;
        }
        let chunk = (size / threads.saturating_mul(CHUNKS_PER_THREAD))
            .max(job.min_chunk)
            .max(1);
        // `align` is a power of two, so the mask is its largest multiple when rounding overflows.
        let chunk = chunk
            .checked_next_multiple_of(align)
            .unwrap_or(!(align - 1));
        let first = match (start / chunk + 1).checked_mul(chunk) {
            Some(b) if b < end => b,
            _ => end,
        };
        let chunks = if first == end {
            1
        } else {
            1 + (end - first).div_ceil(chunk)
        };
        Self {
            start,
            end,
            first,
            chunk,
            chunks: chunks as usize,
            threads: (threads as usize).min(chunks as usize),
        }
    }

    /// Returns the positions of chunk `k`, which must be below `self.chunks`.
    #[inline]
    fn range(&self, k: usize) -> Range<u64> {
        if k == 0 {
            return self.start..self.first;
        }
        // No overflow: chunk `k` starts below `end`.
        let lo = self.first + (k as u64 - 1) * self.chunk;
        lo..lo.saturating_add(self.chunk).min(self.end)
    }

    /// Cuts the chunks into runs whose first index is on the same node.
    ///
    /// Returns `None` if the segments cannot be allocated; the job then has one segment.
    fn segments<I: Index>(
        &self,
        node_of: &(dyn Fn(I) -> Option<NodeId> + Sync),
        flags: Flags,
    ) -> Option<KVec<Segment>> {
        let mut segs = KVec::<Segment>::new();
        for k in 0..self.chunks {
            let node = node_of(I::from_u64(self.range(k).start));
            match segs.last_mut() {
                Some(last) if last.node == node => last.end += 1,
                _ => segs.push(Segment::new(k, k + 1, node), flags).ok()?,
            }
        }
        Some(segs)
    }
}

/// The chunks `start..end` of a job, preferably run on `node`, handed out by `next`.
struct Segment {
    start: usize,
    end: usize,
    node: Option<NodeId>,
    next: AtomicUsize,
}

impl Segment {
    fn new(start: usize, end: usize, node: Option<NodeId>) -> Self {
        Self {
            start,
            end,
            node,
            next: AtomicUsize::new(0),
        }
    }
}

/// The state the caller and its helpers share while a job runs; it lives on the caller's stack.
///
/// # Invariants
///
/// Every helper work item that points to a `Shared` (and to its [`Done`]) has either called
/// [`Done::finish`] or been cancelled before it started by the time [`Shared::run`] returns:
/// `run` does not return before [`Done::wait`] has seen the count of such helpers reach zero.
/// This is what lets `f` and the segments borrow from the caller's stack without `'static`.
struct Shared<'s, I, F> {
    plan: Plan,
    segments: &'s [Segment],
    /// Threads take only their own node's segments ([`Affinity::ByIndexStrict`]).
    strict: bool,
    f: &'s F,
    /// The errno of the first failed chunk, or 0.
    error: AtomicI32,
    _index: PhantomData<fn(I)>,
}

/// The node the last interleaved helper was queued on, a hint shared by all jobs so that
/// concurrent jobs start on different nodes, as padata's `last_used_nid`.
static LAST_INTERLEAVE_NODE: AtomicI32 = AtomicI32::new(-1);

impl<'s, I: Index, F: Fn(Range<I>) -> Result + Sync> Shared<'s, I, F> {
    /// Takes chunks until none is left or one failed: the segments of `home` first, then the
    /// others, or in a strict job only those no helper works for, and only by the caller
    /// (`caller` is `Some(number of helpers)` for the calling thread).
    fn work(&self, home: NodeId, caller: Option<usize>) {
        for seg in self.segments.iter().filter(|s| s.node == Some(home)) {
            if !self.drain(seg) {
                return;
            }
        }
        for seg in self.segments {
            let take = match (self.strict, caller) {
                (false, _) => true,
                (true, None) => false,
                (true, Some(nr_helpers)) => self.orphan(seg, home, nr_helpers),
            };
            if take && !self.drain(seg) {
                return;
            }
        }
    }

    /// Whether, in a strict job, no helper works for `seg`'s node, so the caller (on node
    /// `home`, with `nr_helpers` helpers queued by [`Shared::helper_node`]) must run it.
    fn orphan(&self, seg: &Segment, home: NodeId, nr_helpers: usize) -> bool {
        let Some(node) = seg.node else {
            return true;
        };
        if node == home {
            return false;
        }
        // Helper `i` went to the `i % n`-th of the `n` nodes with CPUs that own a segment,
        // counting from the node after `home`: find the rank of `node` in that order.
        let mut rank = 0;
        let Some(first) = NodeId::next_with_cpus(Some(home)) else {
            return true;
        };
        let mut n = first;
        loop {
            if self.segments.iter().any(|s| s.node == Some(n)) {
                if n == node {
                    return rank >= nr_helpers;
                }
                rank += 1;
            }
            match NodeId::next_with_cpus(Some(n)) {
                Some(next) if next != first => n = next,
                // `node` has no CPU: nobody was queued there.
                _ => return true,
            }
        }
    }

    /// Runs the chunks of `seg` that nobody took yet; returns `false` once the job failed.
    fn drain(&self, seg: &Segment) -> bool {
        loop {
            if self.error.load(Ordering::Relaxed) != 0 {
                return false;
            }
            // Only the claim is ordered here: chunks do not publish data to each other.
            let k = seg.next.fetch_add(1, Ordering::Relaxed);
            if k >= seg.end - seg.start {
                return true;
            }
            let r = self.plan.range(seg.start + k);
            if let Err(e) = (self.f)(I::from_u64(r.start)..I::from_u64(r.end)) {
                let _ = self.error.compare_exchange(
                    0,
                    e.to_errno(),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                return false;
            }
        }
    }

    /// Picks the node of the next helper's work item; `None` queues it near the calling CPU.
    fn helper_node(&self, affinity: &Affinity<'_, I>, prev: &mut Option<NodeId>) -> Option<NodeId> {
        match affinity {
            Affinity::None => None,
            Affinity::Node(node) => Some(*node),
            Affinity::Interleave => {
                let last = NodeId::new(LAST_INTERLEAVE_NODE.load(Ordering::Relaxed)).ok();
                let next = NodeId::next_with_cpus(last)?;
                LAST_INTERLEAVE_NODE.store(next.as_raw(), Ordering::Relaxed);
                Some(next)
            }
            Affinity::ByIndex(_) | Affinity::ByIndexStrict(_) => {
                // Round-robin over the nodes with CPUs that own a segment, after `prev`.
                let first = NodeId::next_with_cpus(*prev)?;
                let mut node = first;
                loop {
                    if self.segments.iter().any(|s| s.node == Some(node)) {
                        *prev = Some(node);
                        return Some(node);
                    }
                    node = NodeId::next_with_cpus(Some(node))?;
                    if node == first {
                        return None;
                    }
                }
            }
        }
    }

    /// Queues the helpers, works if the caller may, and waits for every helper.
    ///
    /// Once the caller has run out of chunks, helpers that have not started yet are cancelled:
    /// they would find nothing to do, and waiting for them to be scheduled only adds latency.
    ///
    /// Returns the number of threads that took part.
    // `stack_pin_init!` declares its variable `mut` even when it is not mutated.
    #[allow(unused_mut)]
    fn run(
        &self,
        affinity: &Affinity<'_, I>,
        me: NodeId,
        caller_on_node: bool,
        flags: Flags,
    ) -> usize {
        let wanted = self.plan.threads - usize::from(caller_on_node);
        let mut helpers = Helper::alloc(wanted, flags);
        if helpers.is_empty() {
            self.work(me, Some(0));
            return 1;
        }
        let nr_helpers = helpers.len();
        stack_pin_init!(let done = Done::new(nr_helpers));
        let done: Pin<&Done> = done.as_ref();
        let key = crate::static_lock_class!();
        let unbound = system_unbound_wq();
        let mut prev = Some(me);
        let base = helpers.as_mut_ptr();
        for i in 0..nr_helpers {
            // SAFETY: `i < helpers.len()`; the vector is not resized while helpers run.
            let helper = unsafe { base.add(i) };
            let node = self.helper_node(affinity, &mut prev);
            // SAFETY: `helper` points to an element of `helpers`, which outlives the work item
            // (we wait for `done` below before dropping it).
            // INVARIANT: `done` counts this helper until it finishes or is cancelled, and we wait
            // for that count to reach zero before returning.
            unsafe {
                (*helper).shared = (self as *const Self).cast();
                (*helper).done = &*done;
                (*helper).node = node;
            }
            // SAFETY: `helper` is valid; its `work` field is only used by this work item.
            let work = unsafe { Opaque::raw_get(core::ptr::addr_of!((*helper).work)) };
            // SAFETY: `work` is valid for writes and not queued; the name and key are static.
            unsafe {
                bindings::init_work_with_key(
                    work,
                    Some(helper_fn::<I, F>),
                    false,
                    c_str!("mt_job_helper").as_char_ptr(),
                    key.as_ptr(),
                )
            };
            match node {
                // SAFETY: `work` was initialised just above and is not queued; the workqueue is
                // valid and never destroyed.
                Some(node) => unsafe { bindings::queue_work_node(node.as_raw(), node_wq(), work) },
                // SAFETY: as above.
                None => unsafe {
                    bindings::queue_work_on(
                        bindings::wq_misc_consts_WORK_CPU_UNBOUND as _,
                        unbound,
                        work,
                    )
                },
            };
        }
        let mut ran = nr_helpers;
        if caller_on_node {
            self.work(me, Some(nr_helpers));
        }
        // In a strict job an unstarted helper still has its node's chunks to run.
        if caller_on_node && !self.strict {
            for i in 0..nr_helpers {
                // SAFETY: `i < helpers.len()` and the helpers are alive until `done.wait()`.
                let work = unsafe { Opaque::raw_get(core::ptr::addr_of!((*base.add(i)).work)) };
                // SAFETY: `work` was initialised above. `cancel_work` returns true only if it
                // removed the item before its function started, so that helper will never call
                // `Done::finish`; otherwise it leaves a running or finished item alone.
                if unsafe { bindings::cancel_work(work) } {
                    ran -= 1;
                }
            }
            done.cancelled(nr_helpers - ran);
        }
        done.wait();
        // Every helper has called `Done::finish` or was cancelled before it started, so none
        // touches `helpers` any more.
        drop(helpers);
        ran + usize::from(caller_on_node)
    }
}

fn system_unbound_wq() -> *mut bindings::workqueue_struct {
    // SAFETY: `system_unbound_wq` is set up by `workqueue_init_early()`, before any caller can
    // run, and never changes.
    unsafe { bindings::system_unbound_wq }
}

/// The workqueue of helpers queued on a node, created at boot or by the first job needing it.
static NODE_WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(core::ptr::null_mut());

/// Whether a caller is creating [`NODE_WQ`] (or gave up for good after a failure).
static NODE_WQ_CLAIMED: AtomicBool = AtomicBool::new(false);

/// Returns the workqueue for helpers that must run on a given node: unbound, with strict NUMA
/// affinity, so that its workers only run on the CPUs of the node they were queued on.
///
/// `system_unbound_wq` is not strict: the scheduler may wake its workers on any CPU, and in our
/// KUnit runs (4 vCPUs, 2 nodes) a helper queued on one node ran chunks on the other in one run
/// of ten. The first caller creates the workqueue; callers racing with it, and all callers if
/// creating it failed, use `system_unbound_wq` (placement then is a preference, not a promise).
fn node_wq() -> *mut bindings::workqueue_struct {
    let wq = NODE_WQ.load(Ordering::Acquire);
    if !wq.is_null() {
        return wq;
    }
    if NODE_WQ_CLAIMED.swap(true, Ordering::AcqRel) {
        return system_unbound_wq();
    }
    // SAFETY: the format string is a valid C string without conversions.
    let new = unsafe {
        bindings::alloc_workqueue(
            c_str!("mt_job_node").as_char_ptr(),
            bindings::wq_flags_WQ_UNBOUND,
            0,
        )
    };
    if new.is_null() {
        return system_unbound_wq();
    }
    // SAFETY: no preconditions; returns null or attributes we own.
    let attrs = unsafe { bindings::alloc_workqueue_attrs() };
    let ret = if attrs.is_null() {
        ENOMEM.to_errno()
    } else {
        // SAFETY: `attrs` is valid and ours; `new` is an unbound workqueue nobody uses yet.
        unsafe {
            (*attrs).affn_scope = bindings::wq_affn_scope_WQ_AFFN_NUMA;
            (*attrs).affn_strict = true;
            let ret = bindings::apply_workqueue_attrs(new, attrs);
            bindings::free_workqueue_attrs(attrs);
            ret
        }
    };
    if ret != 0 {
        // SAFETY: `new` was allocated above, never published, and nothing was queued on it.
        unsafe { bindings::destroy_workqueue(new) };
        return system_unbound_wq();
    }
    NODE_WQ.store(new, Ordering::Release);
    new
}

/// Creates the workqueue of node-affine helpers now rather than in the first job that needs it.
///
/// Optional: boot code calls it early (`mt_job.c`, an `early_initcall`), so that the first jobs,
/// deferred struct page init on every node at once, neither pay for creating the workqueue and
/// forking its workers nor race to create it.
///
/// # Examples
///
/// ```
/// // Idempotent: later calls find the workqueue made at boot.
/// kernel::mt_job::prepare_node_workqueue();
/// ```
pub fn prepare_node_workqueue() {
    node_wq();
}

/// A helper's work item.
///
/// `work` is the first field of this `repr(C)` struct, so a `work_struct` pointer is a pointer to
/// its `Helper`.
#[repr(C)]
struct Helper {
    work: Opaque<bindings::work_struct>,
    shared: *const (),
    done: *const Done,
    /// The node the work item was queued on, if any.
    node: Option<NodeId>,
}

impl Helper {
    /// Allocates `n` helpers, or fewer (down to none) when memory is short.
    fn alloc(n: usize, flags: Flags) -> KVec<Helper> {
        let mut n = n;
        while n > 0 {
            if let Ok(mut v) = KVec::with_capacity(n, flags) {
                for _ in 0..n {
                    let helper = Helper {
                        work: Opaque::uninit(),
                        shared: core::ptr::null(),
                        done: core::ptr::null(),
                        node: None,
                    };
                    // Within the capacity, so this does not allocate and cannot fail.
                    if v.push(helper, flags).is_err() {
                        break;
                    }
                }
                return v;
            }
            n /= 2;
        }
        KVec::new()
    }
}

/// The work function of a helper: takes chunks, then reports to the caller.
///
/// # Safety
///
/// `work` must be the `work` field of a [`Helper`] whose `shared` points to a live
/// `Shared<'_, I, F>` and whose `done` points to a live [`Done`]; both, and the helper, must stay
/// alive until this function has called [`Done::finish`].
unsafe extern "C" fn helper_fn<I: Index, F: Fn(Range<I>) -> Result + Sync>(
    work: *mut bindings::work_struct,
) {
    let helper = work.cast::<Helper>().cast_const();
    // SAFETY: by the function's safety requirements, `helper` points to a live `Helper` whose
    // `shared` is a `Shared<'_, I, F>` and `done` a `Done`, both alive until `finish` below.
    let (shared, done, node) = unsafe {
        (
            &*(*helper).shared.cast::<Shared<'_, I, F>>(),
            &*(*helper).done,
            (*helper).node,
        )
    };
    // A helper works for the node it was queued on, even if the scheduler placed it elsewhere.
    shared.work(node.unwrap_or_else(NodeId::current), None);
    // This is the last access to the job; the caller may return as soon as `finish` unlocks.
    done.finish();
}

/// Counts the helpers still running; the caller waits for it to reach zero.
#[pin_data]
struct Done {
    #[pin]
    pending: SpinLock<usize>,
    #[pin]
    all_done: CondVar,
}

impl Done {
    fn new(pending: usize) -> impl PinInit<Self> {
        pin_init!(Self {
            pending <- crate::new_spinlock!(pending, "mt_job::Done::pending"),
            all_done <- crate::new_condvar!("mt_job::Done::all_done"),
        })
    }

    /// Called by each helper as its last access to the job.
    fn finish(&self) {
        let mut pending = self.pending.lock();
        *pending -= 1;
        if *pending == 0 {
            self.all_done.notify_all();
        }
        // The guard is dropped here: unlocking is the last access to `self`.
    }

    /// Accounts for `n` helpers cancelled before they started.
    fn cancelled(&self, n: usize) {
        if n > 0 {
            *self.pending.lock() -= n;
        }
    }

    /// Waits until every helper has called [`Done::finish`] or was cancelled.
    fn wait(&self) {
        let mut pending = self.pending.lock();
        while *pending != 0 {
            self.all_done.wait(&mut pending);
        }
    }
}
