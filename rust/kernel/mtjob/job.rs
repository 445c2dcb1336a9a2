// SPDX-License-Identifier: GPL-2.0

//! A job: its range, its settings and its run.

use super::{
    on_node,
    pace::Pace,
    plan::{
        self,
        Plan,
        Segment, //
    },
    shared::Shared,
    Affinity,
    Align,
    Index, //
};
use crate::{
    alloc::{
        flags::GFP_KERNEL,
        Flags, //
    },
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
    time::{
        Instant,
        Monotonic, //
    },
    workqueue::scope_with_key, //
};
use core::{
    marker::PhantomData,
    num::NonZeroUsize,
    ops::Range, //
};

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
    helpers_stopped: bool,
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
    /// ([`NumaNode::cpumask`](crate::alloc::NumaNode::cpumask)) when the chunk started.
    /// The chunks of a by-index node without CPUs count as its nearest node's.
    pub fn off_node(&self) -> usize {
        self.off_node
    }

    /// Returns whether the helpers stopped taking chunks because they slowed the job down
    /// ([`Job::stop_helpers_when_slower`]); the calling thread then ran what was left.
    pub fn helpers_stopped(&self) -> bool {
        self.helpers_stopped
    }
}

/// A multithreaded job over the half-open range `start..end` of an [`Index`].
///
/// Built with [`new_job!`] (or [`Job::new`]) and the setters, run with [`Job::run`]. By default
/// there is no alignment, no minimum chunk size, a single thread and no affinity.
///
/// [`new_job!`]: super::new_job
///
/// # Invariants
///
/// `self.start <= self.end`.
pub struct Job<'a, I: Index> {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) align: Align,
    pub(super) min_chunk: u64,
    pub(super) max_threads: NonZeroUsize,
    pub(super) affinity: Affinity<'a, I>,
    alloc_flags: Flags,
    stop_when_slower: bool,
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
    /// [`new_job!`]: super::new_job
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
            stop_when_slower: false,
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

    /// With `true`, makes the helpers stop taking chunks once they slow the job down.
    ///
    /// The calling thread first runs a probe alone, before any helper is queued: the first
    /// `min_chunk` indices (at least one), up to the next aligned boundary. That is one more
    /// chunk in [`Report::chunks`]. The rest of the range is then cut from the probe's end. After
    /// each of its chunks, the calling thread compares the time an index took in the chunks so
    /// far with the probe's: once the threads together run fewer indices per second than the
    /// calling thread did alone, helpers take no new chunk and the calling thread runs what is
    /// left. [`Report::helpers_stopped`] says whether that happened. Off by default.
    ///
    /// For jobs whose indices cost about the same, on machines that may be busier than they
    /// look: a guest whose host runs its vCPUs on fewer cores (a vCPU descheduled while it holds
    /// a lock the others spin on), or chunks that contend on a lock. Node and strict jobs
    /// ([`Affinity::Node`], [`Affinity::ByIndexStrict`]), where the calling thread may not take
    /// every chunk, and jobs whose rest after the probe would be one thread's, run without a
    /// probe, as if this were not set. It costs the probe's head start over the helpers and two
    /// clock reads a chunk.
    ///
    /// The comparison is per index: the indices of a job that stops its helpers should cost
    /// about the same, or the probe's be no cheaper than the rest's. A probe that costs more
    /// (one preempted, say) only makes the stop less likely.
    ///
    /// # Examples
    ///
    /// ```
    /// use core::num::NonZeroUsize;
    /// use kernel::mtjob::new_job;
    /// use kernel::sync::atomic::{Atomic, Relaxed};
    ///
    /// let chunks = Atomic::new(0usize);
    /// let report = new_job!(0usize..1024)?
    ///     .min_chunk(16)
    ///     .max_threads(NonZeroUsize::new(2).ok_or(EINVAL)?)
    ///     .stop_helpers_when_slower(true)
    ///     .run(|_| {
    ///         chunks.add(1, Relaxed);
    ///         Ok(())
    ///     })?;
    /// // Whether or not the helpers stopped, every chunk ran once; a stop needs a helper.
    /// assert_eq!(chunks.load(Relaxed), report.chunks());
    /// assert!(!report.helpers_stopped() || report.threads() > 1);
    /// # Ok::<(), Error>(())
    /// ```
    pub fn stop_helpers_when_slower(mut self, stop: bool) -> Self {
        self.stop_when_slower = stop;
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
        if self.stop_when_slower && plan.threads > 1 {
            if let Some(probe_end) = self.probe_end() {
                let rest = Plan::after_probe(self, probe_end);
                // A probe that left the rest to one thread would only make the job serial.
                if rest.threads > 1 {
                    return self.run_probed(probe_end, rest, &f);
                }
            }
        }
        self.run_planned(plan, &f, None)
    }

    /// Where the probe of a job that stops its helpers when slower ends: the first aligned
    /// boundary at least `min_chunk` (and one index) past the start. `None` if that leaves
    /// nothing after it, or if the calling thread may not take every chunk (node and strict
    /// affinities), where there would be nothing to compare the probe with.
    fn probe_end(&self) -> Option<u64> {
        if matches!(
            self.affinity,
            Affinity::Node(_) | Affinity::ByIndexStrict(_)
        ) {
            return None;
        }
        let end = self
            .start
            .checked_add(self.min_chunk.max(1))?
            .checked_next_multiple_of(self.align.get())?;
        (end < self.end).then_some(end)
    }

    /// Runs a job that stops its helpers when slower: first its probe, `start..probe_end`, on
    /// the calling thread alone, timed, then `rest`, whose threads compare their chunks with it
    /// ([`Pace`]). The probe counts as one chunk of the calling thread.
    fn run_probed<F>(&self, probe_end: u64, rest: Plan, f: &F) -> (Result, Report)
    where
        F: Fn(Range<I>) -> Result + Sync,
    {
        let off_node = match self.affinity {
            Affinity::ByIndex(node_of) => {
                plan::chunk_node(node_of, I::from_u64(self.start)).is_some_and(|n| !on_node(n))
            }
            _ => false,
        };
        let probe = Report {
            threads: 1,
            chunks: 1,
            off_node: usize::from(off_node),
            helpers_stopped: false,
        };
        let start = Instant::<Monotonic>::now();
        if let Err(e) = f(I::from_u64(self.start)..I::from_u64(probe_end)) {
            return (Err(e), probe);
        }
        let pace = Pace::new(start.elapsed(), probe_end - self.start);
        let (res, report) = self.run_planned(rest, f, Some(pace));
        let report = Report {
            threads: report.threads,
            chunks: report.chunks + 1,
            off_node: report.off_node + probe.off_node,
            helpers_stopped: report.helpers_stopped,
        };
        (res, report)
    }

    /// Runs the chunks of `plan`; with `pace`, after the calling thread ran the probe.
    fn run_planned<F>(&self, plan: Plan, f: &F, pace: Option<Pace>) -> (Result, Report)
    where
        F: Fn(Range<I>) -> Result + Sync,
    {
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
                return self.run_alone(&plan, f, here);
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
            f,
            error: Atomic::new(0),
            off_node: Atomic::new(0),
            pace,
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
            helpers_stopped: shared.pace.as_ref().is_some_and(Pace::stopped),
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
            helpers_stopped: false,
        };
        (res, report)
    }
}
