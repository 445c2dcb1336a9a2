// SPDX-License-Identifier: GPL-2.0

//! The pace of a job's threads, for [`Job::stop_helpers_when_slower`]: whether the helpers slow
//! the job down.
//!
//! [`Job::stop_helpers_when_slower`]: super::Job::stop_helpers_when_slower

use crate::{
    sync::atomic::{
        Acquire,
        Atomic,
        Relaxed,
        Release, //
    },
    time::{
        Delta,
        Instant,
        Monotonic, //
    },
};

/// What a job that stops its helpers when slower measured: its probe, and the chunks since.
///
/// The calling thread ran the probe alone, before any helper was queued: `solo_ns` for
/// `solo_len` indices is what the job's indices cost one thread that nothing else slows down.
/// Every chunk since adds its time to `busy_ns` and its indices to `busy_len`. With `n` threads
/// each taking `busy_ns / busy_len` an index, the job runs `n * busy_len / busy_ns` indices a
/// nanosecond, against `solo_len / solo_ns` for the calling thread alone: it is slower than
/// serial once `busy_ns * solo_len > n * solo_ns * busy_len`. The calling thread checks that
/// after each of its chunks and sets `stopped`; helpers then take no new chunk, and the calling
/// thread runs the rest.
///
/// `n` is the calling thread and the helpers that started, whether or not they still have a
/// chunk, and a chunk counts once it ended: both make the job look faster than it is, so the
/// check errs towards keeping the helpers. Only the calling thread decides: if it is the one
/// held up, nobody does until its chunk ends.
///
/// Threads that are each fast alone can be slower together: on a guest whose vCPUs outnumber
/// the host's cores, a vCPU the host deschedules while it holds a spinlock (a zone's lock, a
/// node's LRU lock) keeps the others spinning for a host time slice, and a TLB shootdown waits
/// for every vCPU it targets to run. Nothing the scheduler shows beforehand tells.
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

/// Nanoseconds of `delta`, at least 1: a clock that did not move still took some time.
fn nanos(delta: Delta) -> u64 {
    u64::try_from(delta.as_nanos()).unwrap_or(0).max(1)
}

impl Pace {
    /// A pace whose probe of `len` indices, `len > 0`, took `solo`.
    pub(super) fn new(solo: Delta, len: u64) -> Self {
        debug_assert!(len > 0);
        Self {
            solo_ns: nanos(solo),
            solo_len: len,
            busy_ns: Atomic::new(0),
            busy_len: Atomic::new(0),
            started: Atomic::new(0),
            stopped: Atomic::new(false),
        }
    }

    /// A helper started working on the job, before it takes a chunk.
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
        // Release: whoever reads this sum with `Acquire` also sees, for a helper, that it
        // started (before this in its program order).
        self.busy_len.fetch_add(len, Release);
    }

    /// Called by the calling thread after each of its chunks: stops the helpers if the job runs
    /// slower than the calling thread would alone.
    pub(super) fn check(&self) {
        if self.stopped() {
            return;
        }
        // The time first: a chunk that ends before the indices are read then counts with its
        // indices and without its time, which makes the job look faster, never slower. The
        // indices with `Acquire`: the helper of every chunk they count is in `started`.
        let busy_ns = u128::from(self.busy_ns.load(Relaxed));
        let busy_len = u128::from(self.busy_len.load(Acquire));
        let threads = 1 + self.started.load(Relaxed);
        if threads == 1 {
            return;
        }
        let solo = u128::from(threads) * u128::from(self.solo_ns);
        // Saturating: a product that does not fit only keeps the helpers.
        if busy_ns.saturating_mul(u128::from(self.solo_len)) > solo.saturating_mul(busy_len) {
            self.stopped.store(true, Relaxed);
        }
    }
}
