// SPDX-License-Identifier: GPL-2.0

//! The state the calling thread and its helpers share while a job runs, and how they take
//! chunks.

use super::{
    on_node,
    pace::Pace,
    plan::{
        Plan,
        Segment, //
    },
    Affinity,
    Index, //
};
use crate::{
    alloc::{
        flags::GFP_KERNEL,
        Flags,
        NumaNode, //
    },
    bindings,
    prelude::*,
    str::CStr,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        lockdep::LockdepMap,
        LockClassKey,
        SetOnce, //
    },
    time::{
        Instant,
        Monotonic, //
    },
    workqueue::{
        self,
        scope_with_key,
        OwnedQueue,
        QueueFlag,
        UnboundQueue, //
    },
};
use core::{
    marker::PhantomData,
    ops::Range, //
};

/// Which chunks a thread may take.
#[derive(Clone, Copy)]
enum Role<'a> {
    /// A helper: its node's segments first; in a strict job nothing else.
    Helper,
    /// The calling thread while helpers run: its node's segments first; in a strict job then
    /// the segments of nodes no helper was queued for (`helpers`).
    Caller { helpers: &'a NodeSet },
    /// The calling thread after every helper finished or was cancelled: everything left.
    Sweep,
}

/// A set of possible nodes, a bitmap of `MAX_NUMNODES` bits.
struct NodeSet([usize; NODE_WORDS]);

const NODE_WORDS: usize = (bindings::MAX_NUMNODES as usize).div_ceil(usize::BITS as usize);

impl NodeSet {
    fn new() -> Self {
        Self([0; NODE_WORDS])
    }

    /// Adds `node`, which must be possible (so in `0..MAX_NUMNODES`); returns whether it was new.
    fn insert(&mut self, node: NumaNode) -> bool {
        let n = node.as_raw() as usize;
        let (w, b) = (n / usize::BITS as usize, 1 << (n % usize::BITS as usize));
        let new = self.0[w] & b == 0;
        self.0[w] |= b;
        new
    }

    fn contains(&self, node: NumaNode) -> bool {
        let n = node.as_raw() as usize;
        self.0[n / usize::BITS as usize] & (1 << (n % usize::BITS as usize)) != 0
    }
}

/// What a job's threads share; it lives on the calling thread's stack.
///
/// Helpers borrow it from work items spawned on a [`workqueue::Scope`], which returns only after
/// each of them has finished or was cancelled before it started, so no `'static` is needed.
pub(super) struct Shared<'s, I, F> {
    pub(super) plan: Plan,
    pub(super) segments: &'s [Segment],
    /// Threads take only their own node's segments ([`Affinity::ByIndexStrict`]).
    pub(super) strict: bool,
    pub(super) f: &'s F,
    /// The errno of the first failed chunk, or 0.
    pub(super) error: Atomic<i32>,
    /// Chunks with a node that started on a CPU not in that node's `cpumask_of_node()`.
    pub(super) off_node: Atomic<usize>,
    /// The chunks' times, if the helpers are to stop when they slow the job down
    /// ([`Job::stop_helpers_when_slower`](super::Job::stop_helpers_when_slower)).
    pub(super) pace: Option<Pace>,
    pub(super) _index: PhantomData<fn(I)>,
}

/// The node the last interleaved helper was queued on, a hint shared by all jobs so that
/// concurrent jobs start on different nodes, as padata's `last_used_nid`.
static LAST_INTERLEAVE_NODE: Atomic<i32> = Atomic::new(-1);

impl<'s, I: Index, F: Fn(Range<I>) -> Result + Sync> Shared<'s, I, F> {
    /// Takes chunks as `role` allows until none is left or one failed; `home` is the node the
    /// thread works for. Returns the number of chunks it ran.
    fn work(&self, home: Option<NumaNode>, role: Role<'_>) -> usize {
        let mut ran = 0;
        if let (Some(pace), Role::Helper) = (&self.pace, role) {
            pace.helper_started();
        }
        if let Some(home) = home {
            for seg in self.segments.iter().filter(|s| s.node == Some(home)) {
                if !self.drain(seg, &mut ran, role) {
                    return ran;
                }
            }
        }
        for seg in self.segments {
            let take = match (self.strict, role) {
                (false, _) | (true, Role::Sweep) => true,
                (true, Role::Helper) => false,
                // Segments without a node, or whose node got no helper.
                (true, Role::Caller { helpers }) => !seg.node.is_some_and(|n| helpers.contains(n)),
            };
            if take && !self.drain(seg, &mut ran, role) {
                break;
            }
        }
        ran
    }

    /// Runs the chunks of `seg` that nobody took yet, counting them in `ran`; returns `false`
    /// once the job failed, or for a helper once the helpers are stopped.
    fn drain(&self, seg: &Segment, ran: &mut usize, role: Role<'_>) -> bool {
        loop {
            if self.error.load(Relaxed) != 0 {
                return false;
            }
            if matches!(role, Role::Helper) && self.pace.as_ref().is_some_and(Pace::stopped) {
                return false;
            }
            // Only the claim is ordered here: chunks do not publish data to each other, and the
            // join orders everything the helpers did before the calling thread goes on.
            let k = seg.next.fetch_add(1, Relaxed);
            if k >= seg.len() {
                return true;
            }
            if let Some(node) = seg.node {
                if !on_node(node) {
                    self.off_node.add(1, Relaxed);
                }
            }
            let r = self.plan.range(seg.start + k);
            *ran += 1;
            let start = self.pace.as_ref().map(|_| Instant::<Monotonic>::now());
            if let Err(e) = (self.f)(I::from_u64(r.start)..I::from_u64(r.end)) {
                let _ = self.error.cmpxchg(0, e.to_errno(), Relaxed);
                return false;
            }
            if let (Some(pace), Some(start)) = (&self.pace, start) {
                pace.chunk_done(start, r.end - r.start);
                if matches!(role, Role::Caller { .. }) {
                    pace.check();
                }
            }
        }
    }

    /// Returns the nodes of the segments, and whether the job's threads suffice for one helper
    /// on each of them, all of which have CPUs, none is `me`, and no segment is without a node.
    fn segment_nodes(&self, me: NumaNode) -> (NodeSet, bool) {
        let mut nodes = NodeSet::new();
        let mut count = 0;
        let mut coverable = true;
        for seg in self.segments {
            match seg.node {
                Some(n) => {
                    coverable &= n != me && n.has_cpus();
                    count += usize::from(nodes.insert(n));
                }
                None => coverable = false,
            }
        }
        (nodes, coverable && count <= self.plan.threads)
    }

    /// Picks the node of the next helper's work item; `None` queues it on any CPU. `nodes` are
    /// the nodes of the segments.
    fn helper_node(
        affinity: &Affinity<'_, I>,
        nodes: &NodeSet,
        prev: &mut Option<NumaNode>,
    ) -> Option<NumaNode> {
        match affinity {
            Affinity::None => None,
            Affinity::Node(node) => Some(*node),
            Affinity::Interleave => {
                let last = NumaNode::new(LAST_INTERLEAVE_NODE.load(Relaxed)).ok();
                let next = NumaNode::next_with_cpus(last)?;
                LAST_INTERLEAVE_NODE.store(next.as_raw(), Relaxed);
                Some(next)
            }
            Affinity::ByIndex(_) | Affinity::ByIndexStrict(_) => {
                // Round-robin over the nodes with CPUs that own a segment, after `prev`. One lap
                // of the ring, and no more than `MAX_NUMNODES` steps: CPU hotplug may take
                // `first` out of the ring meanwhile, and the walk would never come back to it.
                let first = NumaNode::next_with_cpus(*prev)?;
                let mut node = first;
                for _ in 0..bindings::MAX_NUMNODES {
                    if nodes.contains(node) {
                        *prev = Some(node);
                        return Some(node);
                    }
                    node = NumaNode::next_with_cpus(Some(node))?;
                    if node == first {
                        break;
                    }
                }
                None
            }
        }
    }

    /// Queues the helpers, works alongside them when the calling thread may, waits for them
    /// (or cancels those that did not start), then runs whatever chunk is left.
    ///
    /// Returns the number of threads that took part.
    pub(super) fn run(
        &self,
        affinity: &Affinity<'_, I>,
        flags: Flags,
        name: &'static CStr,
        key: Pin<&'static LockClassKey>,
        map: &'static LockdepMap,
    ) -> usize {
        let me = NumaNode::current();
        let (nodes, helpers_cover_all) = self.segment_nodes(me);
        let mut caller_ran = 0;
        let helpers = scope_with_key(name, key, map, |s| {
            // Whether the calling thread may wait for helpers that have not started: waiting may
            // depend on kworker creation, which allocates with GFP_KERNEL, and is not allowed in
            // reclaim or from a work item (`Scope::may_wait`).
            let may_wait = flags.contains(GFP_KERNEL) && s.may_wait();
            // A node job keeps the calling thread off other nodes' chunks if it can wait for
            // helpers; a node without CPUs gets no helper that could run there anyway. A strict
            // caller whose node has no chunk would take those of a node that got no helper:
            // where the threads suffice for a helper on every node, it leaves its thread to
            // one and only runs what is left after the join.
            let caller_works = match affinity {
                Affinity::Node(node) => on_node(*node) || !node.has_cpus() || !may_wait,
                _ if self.strict => !may_wait || !helpers_cover_all,
                _ => true,
            };
            // Where the calling thread may not take every chunk (strict jobs, node jobs it is
            // off the node of), placement matters more than latency: let queued helpers run.
            let keep_helpers = may_wait && (self.strict || !caller_works);
            let wanted = self.plan.threads - usize::from(caller_works);
            let mut helper_nodes = NodeSet::new();
            let mut prev = Some(me);
            let mut spawned = 0;
            // The join calls a cancelled helper's closure on this thread; the sweep below takes
            // its chunks instead, so that it is counted and placed as the calling thread's.
            let caller = current!().as_ptr().addr();
            for _ in 0..wanted {
                let node = Self::helper_node(affinity, &nodes, &mut prev);
                // A strict helper without a node would take nothing.
                if self.strict && node.is_none() {
                    break;
                }
                // A test failing this helper's allocation.
                if fail_helper::should_fail() {
                    break;
                }
                let res = match node {
                    Some(n) => s.try_spawn_on_node(node_queue(), n, flags, move || {
                        if current!().as_ptr().addr() != caller {
                            self.work(Some(n), Role::Helper);
                        }
                    }),
                    None => s.try_spawn(workqueue::system_dfl(), flags, move || {
                        if current!().as_ptr().addr() != caller {
                            self.work(None, Role::Helper);
                        }
                    }),
                };
                // Out of memory: the job goes on with the helpers it has.
                if res.is_err() {
                    break;
                }
                spawned += 1;
                // Recorded when the helper is queued, so that a CPU or node going offline
                // afterwards cannot make a strict caller skip chunks nobody else will take.
                if let Some(n) = node.filter(|n| n.is_possible()) {
                    helper_nodes.insert(n);
                }
            }
            if caller_works {
                let role = Role::Caller {
                    helpers: &helper_nodes,
                };
                caller_ran = self.work(Some(me), role);
            }
            // Helpers that did not start yet would find little or nothing left, or must not be
            // waited for, or would only find the job failed: cancel them (the join calls their
            // closures here, which return at once), the sweep below does what they would have
            // done.
            let cancelled = if keep_helpers && self.error.load(Relaxed) == 0 {
                0
            } else {
                s.cancel_unstarted()
            };
            spawned - cancelled
        });
        // Every helper finished or was cancelled: take what is left (segments whose helper was
        // cancelled or could not be allocated, chunks of nodes that lost their CPUs).
        let swept = self.work(Some(me), Role::Sweep);
        // After a probe ([`Pace`]) the calling thread has worked whatever it ran since.
        helpers + usize::from(caller_ran + swept > 0 || self.pace.is_some())
    }
}

/// The workqueue of helpers queued on a node, made at boot by [`prepare_node_workqueue`].
static NODE_QUEUE: SetOnce<&'static UnboundQueue> = SetOnce::new();

/// Returns the workqueue for helpers that should run on a given node: unbound with strict NUMA
/// affinity, so that its workers run only on the CPUs of the node they were queued on.
///
/// `system_dfl_wq` is not strict: the scheduler may wake its workers on any CPU, and in our
/// KUnit runs (4 vCPUs on 2 nodes) a helper queued on one node ran chunks on the other
/// in one run of ten. Without the node workqueue, jobs use `system_dfl_wq`, and the first such
/// job warns once.
fn node_queue() -> &'static UnboundQueue {
    if let Some(queue) = NODE_QUEUE.as_ref() {
        return queue;
    }
    crate::pr_warn_once!("mtjob: no node workqueue, node placement of helpers is best effort\n");
    workqueue::system_dfl()
}

/// Whether [`prepare_node_workqueue`] was called.
static NODE_QUEUE_TRIED: Atomic<bool> = Atomic::new(false);

/// Creates the workqueue of node-affine helpers; only the first call does anything.
///
/// `kernel/mtjob.c` calls it from an `early_initcall` on every kernel built with
/// `CONFIG_RUST_MTJOB` (that is, with a user of `kernel::mtjob`), before the first jobs (deferred
/// struct page init on every node at once). It is not created on demand, nor by a later call
/// after the first failed: creating a workqueue takes `wq_pool_mutex` and allocates with
/// `GFP_KERNEL`, which a job's caller may not be able to do.
///
/// # Errors
///
/// Returns [`EBUSY`] on any call but the first, or the error of creating the workqueue (then jobs
/// use `system_dfl_wq` and the first job that needs a node warns once).
pub fn prepare_node_workqueue() -> Result {
    if NODE_QUEUE_TRIED.xchg(true, Relaxed) {
        return Err(EBUSY);
    }
    let queue = OwnedQueue::new(c"mtjob_node", QueueFlag::Unbound.into(), 0)?;
    queue.set_numa_strict()?;
    // Never destroyed: jobs may use it at any time from now on. Only the first call gets here,
    // so nobody populated it before.
    NODE_QUEUE.populate(queue.leak_unbound().map_err(|_| EINVAL)?);
    Ok(())
}

/// A test hook that makes helper allocations of the calling thread's jobs fail.
///
/// Helpers are allocated with the job's flags. `failslab` and `fail_page_alloc` never fail an
/// allocation that may reclaim (`__GFP_DIRECT_RECLAIM`, as in [`GFP_KERNEL`]) unless debugfs says
/// otherwise (`ignore-gfp-wait`), which the boot-time KUnit run of `kernel/mtjob_test.c` cannot
/// set. Built only with `CONFIG_MTJOB_KUNIT_TEST`; it fails a helper as a failed allocation
/// would: the job goes on with the helpers it has.
#[cfg(CONFIG_MTJOB_KUNIT_TEST)]
pub mod fail_helper {
    use crate::{
        bindings,
        sync::atomic::{
            Atomic,
            Relaxed, //
        },
        task::Task,
    };

    /// The thread whose jobs' helpers are counted.
    static TASK: Atomic<*mut bindings::task_struct> = Atomic::new(core::ptr::null_mut());
    /// The helpers still to count before the one that fails; 0 when off.
    static NTH: Atomic<usize> = Atomic::new(0);

    /// Makes the `nth` helper (counting from 1) that jobs of the calling thread spawn from now on
    /// fail as if it could not be allocated; `0` turns the hook off.
    ///
    /// Returns what the previous setting still had to count: `0` if it failed a helper (or was
    /// off).
    pub fn set(nth: usize) -> usize {
        TASK.store(Task::current_raw(), Relaxed);
        NTH.xchg(nth, Relaxed)
    }

    /// Returns whether the helper the calling thread is about to spawn must fail.
    pub(super) fn should_fail() -> bool {
        if TASK.load(Relaxed) != Task::current_raw() {
            return false;
        }
        // Only the thread that set the hook gets here.
        match NTH.load(Relaxed) {
            0 => false,
            n => {
                NTH.store(n - 1, Relaxed);
                n == 1
            }
        }
    }
}

#[cfg(not(CONFIG_MTJOB_KUNIT_TEST))]
mod fail_helper {
    /// Without the KUnit tests, no helper fails on purpose.
    #[inline(always)]
    pub(super) fn should_fail() -> bool {
        false
    }
}
