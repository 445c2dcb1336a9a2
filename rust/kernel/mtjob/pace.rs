// SPDX-License-Identifier: GPL-2.0

//! The pace of a job's threads, for [`Job::fall_back_when_slower`]: whether the helpers slow the
//! job down.
//!
//! [`Job::fall_back_when_slower`]: super::Job::fall_back_when_slower

use crate::{
    sync::atomic::{
        Atomic,
        Relaxed, //
    },
    time::{
        Instant,
        Monotonic, //
    },
};

/// What the threads of a job measured of their chunks.
///
/// The calling thread times its first chunk (`solo`): the helpers were queued just before it
/// and take a while to start, so it is the closest the job has to the time a chunk takes
/// without them; if they did start, it is slower, which only makes the fall-back rarer. Every
/// other chunk adds its time to `busy` and counts in `done`. With `n` threads, each taking
/// `busy / done` for a chunk on average, the job runs `n * done / busy` chunks per unit of
/// time, against `1 / solo` for the calling thread alone: it is slower than serial once
/// `busy > n * done * solo`. The calling thread checks that after each of its chunks and sets
/// `stopped`; helpers then take no new chunk, and the calling thread runs the rest.
///
/// Why threads that each ran at full speed can be slower together: on a guest whose vCPUs
/// outnumber the host's cores, a vCPU the host deschedules while it holds a spinlock (a zone's
/// lock, a node's LRU lock) keeps the others spinning for a host time slice, and a TLB
/// shootdown waits for every vCPU it targets to run. On 4 vCPUs over 2 host cores the parallel
/// zap of a live 1 GiB `munmap()` took 8x the serial time (issue 49 of this series' tracker);
/// nothing the scheduler shows beforehand predicts it.
pub(super) struct Pace {
    /// Nanoseconds of the calling thread's first chunk; 0 until it ended.
    solo: Atomic<u64>,
    /// Nanoseconds of every other chunk, summed.
    busy: Atomic<u64>,
    /// How many chunks `busy` sums.
    done: Atomic<u64>,
    /// Helpers that started.
    started: Atomic<u64>,
    /// Set once: helpers take no new chunk.
    stopped: Atomic<bool>,
}

/// Chunks measured per thread before the calling thread may decide. A job has only four chunks
/// per thread ([`Plan`](super::plan::Plan)): waiting for more would leave little to save.
const SAMPLES_PER_THREAD: u64 = 1;

impl Pace {
    pub(super) fn new() -> Self {
        Self {
            solo: Atomic::new(0),
            busy: Atomic::new(0),
            done: Atomic::new(0),
            started: Atomic::new(0),
            stopped: Atomic::new(false),
        }
    }

    /// A helper started working on the job.
    pub(super) fn helper_started(&self) {
        self.started.add(1, Relaxed);
    }

    /// Whether helpers must take no new chunk.
    pub(super) fn stopped(&self) -> bool {
        self.stopped.load(Relaxed)
    }

    /// Records a chunk that started at `start`; `first_of_caller` if it is the calling thread's
    /// first.
    pub(super) fn chunk_done(&self, start: Instant<Monotonic>, first_of_caller: bool) {
        // At least 1: `solo` is 0 until set, and a clock that did not move says little.
        let ns = u64::try_from(start.elapsed().as_nanos())
            .unwrap_or(0)
            .max(1);
        if first_of_caller {
            self.solo.store(ns, Relaxed);
        } else {
            self.busy.add(ns, Relaxed);
            self.done.add(1, Relaxed);
        }
    }

    /// Called by the calling thread after each of its chunks: stops the helpers if the job runs
    /// slower than the calling thread would alone. Returns whether they are stopped.
    ///
    /// The counters are read without ordering between them: a chunk counted in `done` but not
    /// yet in `busy` makes the job look faster, never slower, and the next check sees both.
    pub(super) fn check(&self) -> bool {
        if self.stopped() {
            return true;
        }
        let solo = self.solo.load(Relaxed);
        let threads = 1 + self.started.load(Relaxed);
        let (busy, done) = (self.busy.load(Relaxed), self.done.load(Relaxed));
        if solo == 0 || threads == 1 || done < SAMPLES_PER_THREAD * threads {
            return false;
        }
        // Saturating: a product that does not fit is far beyond `busy` anyway.
        if busy > threads.saturating_mul(done).saturating_mul(solo) {
            self.stopped.store(true, Relaxed);
            return true;
        }
        false
    }
}
