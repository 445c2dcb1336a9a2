// SPDX-License-Identifier: GPL-2.0

//! How a job is cut into chunks, threads and per-node segments.

use super::{
    Affinity,
    Index,
    Job, //
};
use crate::{
    alloc::{
        Flags,
        KVec,
        NumaNode, //
    },
    cpumask::Cpumask,
    sync::atomic::Atomic,
};
use core::ops::Range;

/// Chunks per thread the range is cut into, so that threads finishing early can balance the
/// load. The value is padata's `load_balance_factor` (commit 004ed42638f4, "padata: add basic
/// support for multithreaded jobs").
const CHUNKS_PER_THREAD: u64 = 4;

/// How a job's range is cut into chunks and how many threads work on it.
///
/// Chunk 0 is `start..first`; chunk `k > 0` is `first + (k - 1) * chunk` plus `chunk` indices,
/// clipped to `end`. With two threads or more, `first` is the first multiple of `chunk` above
/// `start`, or `end`, and `chunk` is a multiple of the alignment, so every inner boundary is
/// aligned. The rest of a job after its probe ([`Job::stop_helpers_when_slower`]) starts on an
/// aligned boundary of its own ([`Plan::after_probe`]): there `first` is `start + chunk`, or
/// `end`, so that its first chunk is not cut short at an inner boundary. A job of one thread is
/// one chunk, the whole range: `first` is `end`.
#[derive(Clone, Copy)]
pub(super) struct Plan {
    start: u64,
    end: u64,
    first: u64,
    chunk: u64,
    /// The number of chunks.
    pub(super) chunks: usize,
    /// The number of threads, the caller included: at least 1 unless there is no chunk.
    pub(super) threads: usize,
}

impl Plan {
    pub(super) fn new<I: Index>(job: &Job<'_, I>) -> Self {
        Self::cut(job, job.start, false)
    }

    /// The plan of `job` after its probe, from `probe_end` (aligned, in the job's range) on.
    pub(super) fn after_probe<I: Index>(job: &Job<'_, I>, probe_end: u64) -> Self {
        Self::cut(job, probe_end, true)
    }

    /// Cuts `start..job.end`; with `grid_at_start`, chunk boundaries count from `start`.
    fn cut<I: Index>(job: &Job<'_, I>, start: u64, grid_at_start: bool) -> Self {
        let end = job.end;
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
        let mut threads = (size / unit).max(1).min(job.max_threads.get() as u64);
        if !cfg!(CONFIG_SMP) {
            threads = 1;
        }
        // The CPU counts only bound a job of several threads: a job of one thread reads none.
        if threads > 1 {
            // Like padata, whose pool of helpers has one per possible CPU, no more threads than
            // CPUs: more would only take turns, and would cost helper allocations.
            threads = threads.min(u64::from(Cpumask::online().weight().max(1)));
            if let Affinity::Node(node) = job.affinity {
                // Helpers only run on the node's CPUs: more threads than it has CPUs would only
                // take turns on them.
                threads = threads.min(u64::from(node.nr_cpus().max(1)));
            }
        }
        if threads == 1 {
            // Nobody to balance the load with: one chunk, as padata calls a job of one thread.
            return Self {
                start,
                end,
                first: end,
                chunk: size,
                chunks: 1,
                threads: 1,
            };
        }
        let chunk = (size / threads.saturating_mul(CHUNKS_PER_THREAD))
            .max(job.min_chunk)
            .max(1);
        // `align` is a power of two, so the mask is its largest multiple when rounding overflows.
        let chunk = chunk
            .checked_next_multiple_of(align)
            .unwrap_or(!(align - 1));
        let next = if grid_at_start {
            start.checked_add(chunk)
        } else {
            (start / chunk + 1).checked_mul(chunk)
        };
        let first = match next {
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
    pub(super) fn range(&self, k: usize) -> Range<u64> {
        if k == 0 {
            return self.start..self.first;
        }
        // No overflow: chunk `k` starts below `end`.
        let lo = self.first + (k as u64 - 1) * self.chunk;
        lo..lo.saturating_add(self.chunk).min(self.end)
    }

    /// Cuts the chunks into runs whose first index is on the same node ([`chunk_node`]).
    ///
    /// Returns `None` if the segments cannot be allocated; the job then has one segment.
    pub(super) fn segments<I: Index>(
        &self,
        node_of: &(dyn Fn(I) -> Option<NumaNode> + Sync),
        flags: Flags,
    ) -> Option<KVec<Segment>> {
        let mut segs = KVec::<Segment>::new();
        for k in 0..self.chunks {
            let node = chunk_node(node_of, I::from_u64(self.range(k).start));
            match segs.last_mut() {
                Some(last) if last.node == node => last.end += 1,
                _ => segs.push(Segment::new(k, k + 1, node), flags).ok()?,
            }
        }
        Some(segs)
    }
}

/// The node that the chunk starting at `index` is placed on, for placement and for
/// [`Report::off_node`]: the node `node_of` names if it is possible, none otherwise.
///
/// A node without CPUs counts as its nearest node with CPUs, so that a helper there takes its
/// chunks. That node is chosen when the job is planned: if it loses its CPUs before its helper
/// is queued, the caller runs the chunks.
///
/// [`Report::off_node`]: super::Report::off_node
pub(super) fn chunk_node<I: Index>(
    node_of: &(dyn Fn(I) -> Option<NumaNode> + Sync),
    index: I,
) -> Option<NumaNode> {
    node_of(index).and_then(NumaNode::nearest_with_cpus)
}

/// The chunks `start..end` of a job whose first index is on `node`, handed out by `next`.
pub(super) struct Segment {
    pub(super) start: usize,
    pub(super) end: usize,
    /// The node the segment's chunks are placed on ([`chunk_node`]), if any.
    pub(super) node: Option<NumaNode>,
    /// The position of the next chunk to hand out, relative to `start`; may run past the end.
    pub(super) next: Atomic<usize>,
}

impl Segment {
    pub(super) fn new(start: usize, end: usize, node: Option<NumaNode>) -> Self {
        Self {
            start,
            end,
            node,
            next: Atomic::new(0),
        }
    }

    /// The number of chunks of the segment.
    pub(super) fn len(&self) -> usize {
        self.end - self.start
    }
}
