// SPDX-License-Identifier: GPL-2.0

//! The state the calling thread and its helpers share while a job runs, and how they take
//! chunks.

use super::{
    plan::{Plan, Segment},
    Affinity, Index,
};
use crate::{
    alloc::{flags::GFP_KERNEL, Flags},
    bindings, c_str,
    error::Result,
    numa::NodeId,
    static_scope_class,
    str::CStr,
    workqueue::{self, scope_with_class, Queue, ScopeClass},
};
use core::{
    marker::PhantomData,
    ops::Range,
    sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicUsize, Ordering},
};

/// Which chunks a thread may take.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A helper: its node's segments first; in a strict job nothing else.
    Helper,
    /// The calling thread while helpers run: its node's segments first; in a strict job then
    /// the segments no helper was queued for.
    Caller,
    /// The calling thread after every helper finished or was cancelled: everything left.
    Sweep,
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
    pub(super) error: AtomicI32,
    /// Chunks with a node that started on a CPU not in that node's `cpumask_of_node()`.
    pub(super) off_node: AtomicUsize,
    pub(super) _index: PhantomData<fn(I)>,
}

/// The node the last interleaved helper was queued on, a hint shared by all jobs so that
/// concurrent jobs start on different nodes, as padata's `last_used_nid`.
static LAST_INTERLEAVE_NODE: AtomicI32 = AtomicI32::new(-1);

impl<'s, I: Index, F: Fn(Range<I>) -> Result + Sync> Shared<'s, I, F> {
    /// Takes chunks as `role` allows until none is left or one failed; `home` is the node the
    /// thread works for. Returns the number of chunks it ran.
    fn work(&self, home: Option<NodeId>, role: Role) -> usize {
        let mut ran = 0;
        if let Some(home) = home {
            for seg in self.segments.iter().filter(|s| s.node == Some(home)) {
                if !self.drain(seg, &mut ran) {
                    return ran;
                }
            }
        }
        for seg in self.segments {
            let take = match (self.strict, role) {
                (false, _) | (true, Role::Sweep) => true,
                (true, Role::Helper) => false,
                // Segments without a node, or whose node got no helper.
                (true, Role::Caller) => !seg.helper.load(Ordering::Relaxed),
            };
            if take && !self.drain(seg, &mut ran) {
                break;
            }
        }
        ran
    }

    /// Runs the chunks of `seg` that nobody took yet, counting them in `ran`; returns `false`
    /// once the job failed.
    fn drain(&self, seg: &Segment, ran: &mut usize) -> bool {
        loop {
            if self.error.load(Ordering::Relaxed) != 0 {
                return false;
            }
            // Only the claim is ordered here: chunks do not publish data to each other, and the
            // join orders everything the helpers did before the calling thread goes on.
            let k = seg.next.fetch_add(1, Ordering::Relaxed);
            if k >= seg.len() {
                return true;
            }
            if let Some(node) = seg.node {
                if !node.has_current_cpu() {
                    self.off_node.fetch_add(1, Ordering::Relaxed);
                }
            }
            let r = self.plan.range(seg.start + k);
            *ran += 1;
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

    /// Returns whether, in a strict job, no chunk is on node `me` and the job's threads suffice
    /// for one helper on every node of its chunks, all of which have CPUs.
    fn helpers_cover_all(&self, me: NodeId) -> bool {
        let mut nodes = 0;
        for (i, seg) in self.segments.iter().enumerate() {
            match seg.node {
                Some(n) if n != me && n.has_cpus() => {
                    // Counted at its first segment only.
                    if !self.segments[..i].iter().any(|s| s.node == seg.node) {
                        nodes += 1;
                    }
                }
                _ => return false,
            }
        }
        nodes <= self.plan.threads
    }

    /// Picks the node of the next helper's work item; `None` queues it on any CPU.
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
                // Round-robin over the nodes with CPUs that own a segment, after `prev`. One lap
                // of the ring, and no more than `MAX_NUMNODES` steps: CPU hotplug may take
                // `first` out of the ring meanwhile, and the walk would never come back to it.
                let first = NodeId::next_with_cpus(*prev)?;
                let mut node = first;
                for _ in 0..bindings::MAX_NUMNODES {
                    if self.segments.iter().any(|s| s.node == Some(node)) {
                        *prev = Some(node);
                        return Some(node);
                    }
                    node = NodeId::next_with_cpus(Some(node))?;
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
        class: Option<(&'static CStr, &'static ScopeClass)>,
    ) -> usize {
        let me = NodeId::current();
        let (name, class) = scope_class(class);
        let mut caller_ran = 0;
        let helpers = scope_with_class(name, class, |s| {
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
                Affinity::Node(node) => node.has_current_cpu() || !node.has_cpus() || !may_wait,
                _ if self.strict => !may_wait || !self.helpers_cover_all(me),
                _ => true,
            };
            // Where the calling thread may not take every chunk (strict jobs, node jobs it is
            // off the node of), placement matters more than latency: let queued helpers run.
            let keep_helpers = may_wait && (self.strict || !caller_works);
            let wanted = self.plan.threads - usize::from(caller_works);
            let mut prev = Some(me);
            let mut spawned = 0;
            for _ in 0..wanted {
                let node = self.helper_node(affinity, &mut prev);
                // A strict helper without a node would take nothing.
                if self.strict && node.is_none() {
                    break;
                }
                // A test failing this helper's allocation.
                if fail_helper::should_fail() {
                    break;
                }
                let res = match node {
                    Some(n) => s.spawn_on_node(node_queue(), n, flags, move || {
                        self.work(Some(n), Role::Helper);
                    }),
                    None => s.spawn(workqueue::system_unbound(), flags, move || {
                        self.work(None, Role::Helper);
                    }),
                };
                // Out of memory: the job goes on with the helpers it has.
                if res.is_err() {
                    break;
                }
                spawned += 1;
                // Recorded when the helper is queued, so that a CPU or node going offline
                // afterwards cannot make a strict caller skip chunks nobody else will take.
                if let Some(n) = node {
                    for seg in self.segments.iter().filter(|seg| seg.node == Some(n)) {
                        seg.helper.store(true, Ordering::Relaxed);
                    }
                }
            }
            if caller_works {
                caller_ran = self.work(Some(me), Role::Caller);
            }
            // Helpers that did not start yet would find little or nothing left, or must not be
            // waited for: cancel them, the sweep below does what they would have done.
            let cancelled = if keep_helpers {
                0
            } else {
                s.cancel_unstarted()
            };
            spawned - cancelled
        });
        // Every helper finished or was cancelled: take what is left (segments whose helper was
        // cancelled or could not be allocated, chunks of nodes that lost their CPUs).
        let swept = self.work(Some(me), Role::Sweep);
        helpers + usize::from(caller_ran + swept > 0)
    }
}

/// Returns the lock class of a job's scope: the job's own, or the one shared by all jobs that
/// did not name theirs.
pub(super) fn scope_class(
    class: Option<(&'static CStr, &'static ScopeClass)>,
) -> (&'static CStr, &'static ScopeClass) {
    // A static: one address for the name wherever this is inlined (see `scope_with_class`).
    static NAME: &CStr = c_str!("mt_job");
    class.unwrap_or((NAME, static_scope_class!()))
}

/// The workqueue of helpers queued on a node, made at boot by [`prepare_node_workqueue`].
static NODE_QUEUE: AtomicPtr<Queue> = AtomicPtr::new(core::ptr::null_mut());

/// Whether a job found [`NODE_QUEUE`] missing and said so.
static NODE_QUEUE_WARNED: AtomicBool = AtomicBool::new(false);

/// Returns the workqueue for helpers that should run on a given node: unbound with strict NUMA
/// affinity, so that its workers run only on the CPUs of the node they were queued on.
///
/// `system_unbound_wq` is not strict: the scheduler may wake its workers on any CPU, and in our
/// KUnit runs (then 4 vCPUs on 2 nodes) a helper queued on one node ran chunks on the other in
/// one run of ten. Without the node workqueue, jobs use `system_unbound_wq`, and the first such job
/// warns once.
fn node_queue() -> &'static Queue {
    let queue = NODE_QUEUE.load(Ordering::Acquire);
    if !queue.is_null() {
        // SAFETY: `NODE_QUEUE` is only set to a leaked, never destroyed queue.
        return unsafe { &*queue };
    }
    if !NODE_QUEUE_WARNED.swap(true, Ordering::Relaxed) {
        crate::pr_warn!("mt_job: no node workqueue, node placement of helpers is best effort\n");
    }
    workqueue::system_unbound()
}

/// Whether [`prepare_node_workqueue`] was called.
static NODE_QUEUE_TRIED: AtomicBool = AtomicBool::new(false);

/// Creates the workqueue of node-affine helpers; only the first call does anything.
///
/// `kernel/mt_job.c` calls it from an `early_initcall` on every kernel built with
/// `CONFIG_RUST`, before the first jobs (deferred struct page init on every node at once). It is
/// not created on demand, nor by a later call after the first failed: creating a workqueue takes
/// `wq_pool_mutex` and allocates with `GFP_KERNEL`, which a job's caller may not be able to do.
///
/// # Errors
///
/// Returns [`EBUSY`] on any call but the first, or the error of creating the workqueue (then jobs
/// use `system_unbound_wq` and the first job that needs a node warns once).
///
/// [`EBUSY`]: crate::error::code::EBUSY
pub fn prepare_node_workqueue() -> Result {
    if NODE_QUEUE_TRIED.swap(true, Ordering::AcqRel) {
        return Err(crate::error::code::EBUSY);
    }
    let queue = workqueue::OwnedQueue::new_unbound_numa_strict(crate::c_str!("mt_job_node"))?;
    // Never destroyed: jobs may use it at any time from now on.
    let queue: *const Queue = queue.leak();
    // Only the first call gets here: nobody else stores it.
    NODE_QUEUE.store(queue.cast_mut(), Ordering::Release);
    Ok(())
}

/// A test hook that makes helper allocations of the calling thread's jobs fail.
///
/// Helpers are allocated with the job's flags. `failslab` and `fail_page_alloc` never fail an
/// allocation that may reclaim (`__GFP_DIRECT_RECLAIM`, as in [`GFP_KERNEL`]) unless debugfs says
/// otherwise (`ignore-gfp-wait`), which the boot-time KUnit run of `kernel/mt_job_test.c` cannot
/// set. Built only with `CONFIG_MT_JOB_KUNIT_TEST`; it fails a helper as a failed allocation
/// would: the job goes on with the helpers it has.
#[cfg(CONFIG_MT_JOB_KUNIT_TEST)]
pub mod fail_helper {
    use crate::task::Task;
    use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

    /// The thread whose jobs' helpers are counted.
    static TASK: AtomicPtr<Task> = AtomicPtr::new(core::ptr::null_mut());
    /// The helpers still to count before the one that fails; 0 when off.
    static NTH: AtomicUsize = AtomicUsize::new(0);

    /// Makes the `nth` helper (counting from 1) that jobs of the calling thread spawn from now on
    /// fail as if it could not be allocated; `0` turns the hook off.
    ///
    /// Returns what the previous setting still had to count: `0` if it failed a helper (or was
    /// off).
    pub fn set(nth: usize) -> usize {
        let me: *const Task = crate::current!();
        TASK.store(me.cast_mut(), Ordering::Relaxed);
        NTH.swap(nth, Ordering::Relaxed)
    }

    /// Returns whether the helper the calling thread is about to spawn must fail.
    pub(super) fn should_fail() -> bool {
        let me: *const Task = crate::current!();
        if TASK.load(Ordering::Relaxed) != me.cast_mut() {
            return false;
        }
        // Only the thread that set the hook gets here.
        match NTH.load(Ordering::Relaxed) {
            0 => false,
            n => {
                NTH.store(n - 1, Ordering::Relaxed);
                n == 1
            }
        }
    }
}

#[cfg(not(CONFIG_MT_JOB_KUNIT_TEST))]
mod fail_helper {
    /// Without the KUnit tests, no helper fails on purpose.
    #[inline(always)]
    pub(super) fn should_fail() -> bool {
        false
    }
}
