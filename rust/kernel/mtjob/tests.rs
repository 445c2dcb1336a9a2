// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of [`kernel::mtjob`](crate::mtjob): random jobs checked against a model of what
//! the engine promises, and errors.

use super::{
    Affinity,
    Align, //
};
use crate::{
    alloc::NumaNode,
    prelude::*,
    sync::atomic::{
        Atomic,
        Relaxed, //
    },
};
use core::num::NonZeroUsize;

/// A xorshift64* generator: the same jobs on every run, so that a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`, `n > 0`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What a job promises, broken: counted by the chunk function, checked after the job.
struct Broken {
    unaligned: Atomic<usize>,
    short: Atomic<usize>,
    outside: Atomic<usize>,
}

/// Runs one random job and checks it against the model; returns an error describing the first
/// promise it broke.
fn random_job(rng: &mut Rng, nodes: &[NumaNode]) -> Result {
    let size = match rng.below(8) {
        0 => rng.below(2),
        1..=5 => rng.below(4096),
        _ => rng.below(50_000),
    };
    // A quarter of the jobs end at the very end of the index space.
    let start = if rng.below(4) == 0 {
        u64::MAX - size
    } else {
        rng.below(1 << 40)
    };
    let end = start + size;
    let align = Align::new(1 << rng.below(10))?;
    let min_chunk = if rng.below(3) == 0 { 0 } else { rng.below(600) };
    let max_threads = NonZeroUsize::new(1 + rng.below(8) as usize).ok_or(EINVAL)?;
    // Nodes change every `period` indices; sometimes a node that is not possible.
    let period = 1 + rng.below(3000);
    let node_of = |i: u64| -> Option<NumaNode> {
        let k = (i / period) as usize;
        if k % 7 == 6 {
            return Some(NumaNode::NO_NODE);
        }
        nodes.get(k % nodes.len()).copied()
    };
    let node = nodes[rng.below(nodes.len() as u64) as usize];
    let affinity = match rng.below(5) {
        0 => Affinity::None,
        1 => Affinity::Interleave,
        2 => Affinity::Node(node),
        3 => Affinity::ByIndex(&node_of),
        _ => Affinity::ByIndexStrict(&node_of),
    };
    let is_node_job = matches!(affinity, Affinity::Node(_));

    let mut visited = KVec::with_capacity(size as usize, GFP_KERNEL)?;
    for _ in 0..size {
        visited.push(Atomic::new(0u32), GFP_KERNEL)?;
    }
    let broken = Broken {
        unaligned: Atomic::new(0),
        short: Atomic::new(0),
        outside: Atomic::new(0),
    };
    let chunks = Atomic::new(0usize);
    let job = crate::new_job!(start..end, "mtjob_test_random")?
        .align(align)
        .min_chunk(min_chunk)
        .max_threads(max_threads)
        .affinity(affinity);
    // A quarter of the jobs with a probe, whose rest must keep the same promises.
    let stop_when_slower = rng.below(4) == 0;
    let job = job.stop_helpers_when_slower(stop_when_slower);
    let report = job.run(|r| {
        chunks.add(1, Relaxed);
        if r.start >= r.end || r.start < start || r.end > end {
            broken.outside.add(1, Relaxed);
            return Ok(());
        }
        let inner = |b: u64| b != start && b != end;
        if (inner(r.start) && r.start % align.get() != 0)
            || (inner(r.end) && r.end % align.get() != 0)
        {
            broken.unaligned.add(1, Relaxed);
        }
        if inner(r.start) && inner(r.end) && r.end - r.start < min_chunk {
            broken.short.add(1, Relaxed);
        }
        for i in r {
            visited[(i - start) as usize].add(1, Relaxed);
        }
        Ok(())
    })?;

    let fail = |what: &str| -> Result {
        pr_err!(
            "mtjob_test: {}: {}..{} align {} min_chunk {} max_threads {} stop {}: {:?}\n",
            what,
            start,
            end,
            align.get(),
            min_chunk,
            max_threads.get(),
            stop_when_slower,
            report
        );
        Err(EINVAL)
    };
    if broken.outside.load(Relaxed) != 0 {
        return fail("a chunk outside the range, or empty");
    }
    if broken.unaligned.load(Relaxed) != 0 {
        return fail("an unaligned inner boundary");
    }
    if broken.short.load(Relaxed) != 0 {
        return fail("an inner chunk below min_chunk");
    }
    if visited.iter().any(|v| v.load(Relaxed) != 1) {
        return fail("an index not run exactly once");
    }
    if report.chunks() != chunks.load(Relaxed) {
        return fail("chunks reported are not the chunks run");
    }
    if size > 0 && (report.threads() == 0 || report.threads() > max_threads.get()) {
        return fail("threads outside 1..=max_threads");
    }
    if size == 0 && (report.threads() != 0 || report.chunks() != 0) {
        return fail("an empty job that ran something");
    }
    if is_node_job && report.threads() > node.nr_cpus().max(1) as usize {
        return fail("a node job with more threads than its node has CPUs");
    }
    if report.off_node() > report.chunks() {
        return fail("more chunks off their node than chunks");
    }
    Ok(())
}

#[kunit_tests(rust_mtjob)]
mod cases {
    use super::*;

    /// 2000 random jobs of every affinity, each checked against the model.
    #[test]
    fn random_jobs_keep_every_promise() -> Result {
        let mut nodes = KVec::new();
        let mut node = NumaNode::next_with_cpus(None);
        while let Some(n) = node {
            if nodes.contains(&n) || nodes.len() == 64 {
                break;
            }
            nodes.push(n, GFP_KERNEL)?;
            node = NumaNode::next_with_cpus(Some(n));
        }
        assert!(!nodes.is_empty());
        let mut rng = Rng(0x6d74_5f6a_6f62_2d37);
        for _ in 0..2000 {
            random_job(&mut rng, &nodes)?;
        }
        Ok(())
    }

    /// The first error is returned, and once a chunk failed no new chunk starts: at most one
    /// chunk per thread may start after it (a thread that checked the error just before).
    #[test]
    fn first_error_stops_the_job() -> Result {
        let failed = Atomic::new(false);
        let after = Atomic::new(0usize);
        let eight = NonZeroUsize::new(8).ok_or(EINVAL)?;
        let (res, report) = crate::new_job!(0usize..100_000)?
            .max_threads(eight)
            .run_and_report(|r| {
                if failed.load(Relaxed) {
                    after.add(1, Relaxed);
                }
                if r.start == 0 {
                    failed.store(true, Relaxed);
                    return Err(ENOSPC);
                }
                if r.contains(&50_000) {
                    return Err(EIO);
                }
                Ok(())
            });
        // Chunk 0 may not be the first to fail if it started late, but one of the two errors
        // comes back, and never a later one.
        assert!(res == Err(ENOSPC) || res == Err(EIO));
        assert!(after.load(Relaxed) <= report.threads());
        Ok(())
    }

    /// [`Job::stop_helpers_when_slower`](super::super::Job::stop_helpers_when_slower): the
    /// caller's probe (8 indices) returns at once and every other chunk (about 31 indices)
    /// sleeps 20 ms, so the helpers stop once one has started (the caller's check after its next
    /// chunk sees it), and a stopped helper runs at most the chunk it has and one it took just
    /// before; without the stop it would take about half of the 8. Without the setting nothing
    /// stops. Every index runs once either way.
    #[test]
    fn slow_helpers_stop() -> Result {
        // An address, compared only: a raw pointer is not `Sync`.
        let caller = crate::task::Task::current_raw().addr();
        let two = NonZeroUsize::new(2).ok_or(EINVAL)?;
        for stop in [true, false] {
            let probed = Atomic::new(false);
            let helper_chunks = Atomic::new(0usize);
            let mut visited = KVec::with_capacity(256, GFP_KERNEL)?;
            for _ in 0..256 {
                visited.push(Atomic::new(0u32), GFP_KERNEL)?;
            }
            let report = crate::new_job!(0usize..256)?
                .min_chunk(8)
                .max_threads(two)
                .stop_helpers_when_slower(stop)
                .run(|r| {
                    let on_caller = crate::task::Task::current_raw().addr() == caller;
                    if !on_caller {
                        helper_chunks.add(1, Relaxed);
                    }
                    // The caller's first chunk, the probe with `stop`, returns at once.
                    let probe = on_caller && !probed.xchg(true, Relaxed);
                    if !probe {
                        crate::time::delay::fsleep(crate::time::Delta::from_millis(20));
                    }
                    for i in r {
                        visited[i].add(1, Relaxed);
                    }
                    Ok(())
                })?;
            assert!(visited.iter().all(|v| v.load(Relaxed) == 1));
            let helpers = helper_chunks.load(Relaxed);
            assert_eq!(report.helpers_stopped(), stop && helpers > 0);
            if report.helpers_stopped() {
                assert!(helpers <= 2);
            }
        }
        Ok(())
    }

    /// The rest of a probed job is cut on a grid of its own, from the probe's end, in four
    /// chunks a thread as the job would be: 4096 indices, `min_chunk` 8, two threads.
    #[test]
    fn probed_rest_cut_from_probe_end() -> Result {
        use super::super::plan::Plan;
        if crate::cpumask::Cpumask::online().weight() < 2 {
            return Ok(());
        }
        let two = NonZeroUsize::new(2).ok_or(EINVAL)?;
        let job = crate::new_job!(0usize..4096)?.min_chunk(8).max_threads(two);
        // 4096 / (2 * 4) = 512: chunks 0..512, 512..1024, ...
        let plan = Plan::new(&job);
        assert_eq!((plan.threads, plan.chunks), (2, 8));
        assert_eq!((plan.range(0), plan.range(7)), (0..512, 3584..4096));
        // After the probe 0..8: 4088 / (2 * 4) = 511, from 8 on.
        let rest = Plan::after_probe(&job, 8);
        assert_eq!((rest.threads, rest.chunks), (2, 8));
        assert_eq!((rest.range(0), rest.range(1)), (8..519, 519..1030));
        assert_eq!(rest.range(7), 3585..4096);
        Ok(())
    }

    /// A job of one thread is one chunk, run by the caller.
    #[test]
    fn one_thread_is_one_chunk() -> Result {
        let calls = Atomic::new(0usize);
        let report = crate::new_job!(10u64..1_000_000)?.run(|r| {
            assert_eq!(r, 10..1_000_000);
            calls.add(1, Relaxed);
            Ok(())
        })?;
        assert_eq!(calls.load(Relaxed), 1);
        assert_eq!((report.threads(), report.chunks()), (1, 1));
        Ok(())
    }
}
