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
        Delta,
        Instant,
        Monotonic, //
    },
};

/// What a job that falls back measured: its probe, and the chunks since.
///
/// The calling thread ran the probe alone, before any helper was queued: `solo_ns` for
/// `solo_len` indices is what the job's indices cost one thread that nothing slows down. Every
/// chunk since adds its time to `busy_ns` and its indices to `busy_len`. With `n` threads each
/// taking `busy_ns / busy_len` an index, the job runs `n * busy_len / busy_ns` indices a
/// nanosecond, against `solo_len / solo_ns` for the calling thread alone: it is slower than
/// serial once `busy_ns * solo_len > n * solo_ns * busy_len`. The calling thread checks that
/// after each of its chunks and sets `stopped`; helpers then take no new chunk, and the calling
/// thread runs the rest.
///
/// Why threads that are each fast alone can be slower together: on a guest whose vCPUs
/// outnumber the host's cores, a vCPU the host deschedules while it holds a spinlock (a zone's
/// lock, a node's LRU lock) keeps the others spinning for a host time slice, and a TLB
/// shootdown waits for every vCPU it targets to run. With 4 vCPUs on 2 host cores, the parallel
/// zap of a live 1 GiB `munmap()` took 0.95 s against 0.32 s serially, its four threads busy
/// all along; nothing the scheduler shows beforehand tells.
///
/// # Invariants
///
/// `solo_ns > 0` and `solo_len > 0`.
pub(super) struct Pace {
    solo_ns: u64,
    solo_len: u64,
    /// Nanoseconds of the chunks since the probe, summed.
    busy_ns: Atomic<u64>,
    /// Indices of those chunks, summed.
    busy_len: Atomic<u64>,
    /// Helpers that started.
    started: Atomic<u64>,
    /// Set once: helpers take no new chunk.
    stopped: Atomic<bool>,
}

/// Nanoseconds of `delta`, at least 1: a clock that did not move says little, and the checks
/// divide by nothing but compare products, where 0 would always win.
fn nanos(delta: Delta) -> u64 {
    u64::try_from(delta.as_nanos()).unwrap_or(0).max(1)
}

impl Pace {
    /// A pace whose probe of `len` indices took `solo`.
    pub(super) fn new(solo: Delta, len: u64) -> Self {
        // INVARIANT: `nanos()` is at least 1, and so is `len.max(1)`.
        Self {
            solo_ns: nanos(solo),
            solo_len: len.max(1),
            busy_ns: Atomic::new(0),
            busy_len: Atomic::new(0),
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

    /// Records a chunk of `len` indices that started at `start`.
    pub(super) fn chunk_done(&self, start: Instant<Monotonic>, len: u64) {
        self.busy_ns.add(nanos(start.elapsed()), Relaxed);
        self.busy_len.add(len, Relaxed);
    }

    /// Called by the calling thread after each of its chunks: stops the helpers if the job runs
    /// slower than the calling thread would alone. Returns whether they are stopped.
    ///
    /// The sums are read without ordering between them: a chunk counted in one but not yet in
    /// the other makes the job look faster or slower by one chunk, and only the calling thread
    /// decides, on sums that include at least its own chunk.
    pub(super) fn check(&self) -> bool {
        if self.stopped() {
            return true;
        }
        let threads = 1 + self.started.load(Relaxed);
        if threads == 1 {
            return false;
        }
        let busy_ns = u128::from(self.busy_ns.load(Relaxed));
        let busy_len = u128::from(self.busy_len.load(Relaxed));
        let solo = u128::from(threads) * u128::from(self.solo_ns);
        if busy_ns.saturating_mul(u128::from(self.solo_len)) > solo.saturating_mul(busy_len) {
            self.stopped.store(true, Relaxed);
            return true;
        }
        false
    }
}
