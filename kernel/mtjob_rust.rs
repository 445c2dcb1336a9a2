// SPDX-License-Identifier: GPL-2.0

//! The Rust engine behind `mtjob_run()`: turns a checked C `struct mtjob` into a
//! [`kernel::mtjob::Job`] over `usize` indices and runs it.
//!
//! C header: [`include/linux/mtjob.h`](srctree/include/linux/mtjob.h), which also declares the
//! entry points for `kernel/mtjob.c`; `#[export]` checks them against those prototypes.

use core::num::NonZeroUsize;
use kernel::{
    alloc::{
        flags::{
            GFP_KERNEL,
            GFP_NOWAIT, //
        },
        NumaNode, //
    },
    bindings,
    error::to_result,
    mtjob::{
        Affinity,
        Align,
        Job, //
    },
    prelude::*,
    str::CStr,
    sync::{
        lockdep::LockdepMap,
        LockClassKey, //
    },
};

/// The C job's callbacks and their argument, shared by every thread of the job.
struct Callbacks {
    thread_fn: unsafe extern "C" fn(c_ulong, c_ulong, *mut c_void) -> c_int,
    node_of: Option<unsafe extern "C" fn(c_ulong, *mut c_void) -> c_int>,
    arg: *mut c_void,
}

// SAFETY: the C API documents (`mtjob.h`) that `thread_fn` is called from several threads at
// once with the same `fn_arg`; synchronising what `fn_arg` points to is the caller's job, as it
// is with padata. `node_of` is only called by the thread that called `mtjob_rust_run()`.
unsafe impl Sync for Callbacks {}

impl Callbacks {
    /// Runs one chunk; a positive return is success, as in every engine (`mtjob.h`).
    fn chunk(&self, start: c_ulong, end: c_ulong) -> Result {
        // SAFETY: `thread_fn` is a valid function by the contract of `mtjob_rust_run`.
        to_result(unsafe { (self.thread_fn)(start, end, self.arg) })
    }

    /// The node of `index`: `None` for a negative or out-of-range id (`NUMA_NO_NODE`); a node
    /// that is not possible is passed on, which [`Affinity::ByIndex`] treats as no node.
    fn node(&self, index: c_ulong) -> Option<NumaNode> {
        // SAFETY: `node_of` is a valid function by the contract of `mtjob_rust_run`.
        let node = unsafe { (self.node_of?)(index, self.arg) };
        NumaNode::new(node).ok()
    }
}

fn run(
    job: &bindings::mtjob,
    max_threads: c_int,
    report: &mut bindings::mtjob_report,
    name: &'static CStr,
    key: Pin<&'static LockClassKey>,
    map: &'static LockdepMap,
) -> Result {
    let cb = Callbacks {
        thread_fn: job.thread_fn.ok_or(EINVAL)?,
        node_of: job.node_of,
        arg: job.fn_arg,
    };
    let end = job.start.checked_add(job.size).ok_or(EINVAL)?;
    let node_of = |index: c_ulong| cb.node(index);
    let by_index = matches!(
        job.affinity,
        bindings::mtjob_affinity_MTJOB_AFFINITY_BY_INDEX
            | bindings::mtjob_affinity_MTJOB_AFFINITY_BY_INDEX_STRICT
    );
    if by_index && cb.node_of.is_none() {
        return Err(EINVAL);
    }
    let affinity = match job.affinity {
        bindings::mtjob_affinity_MTJOB_AFFINITY_NONE => Affinity::None,
        bindings::mtjob_affinity_MTJOB_AFFINITY_INTERLEAVE => Affinity::Interleave,
        bindings::mtjob_affinity_MTJOB_AFFINITY_NODE => Affinity::Node(
            NumaNode::new(job.node)
                .ok()
                .filter(|n| n.is_possible())
                .ok_or(EINVAL)?,
        ),
        bindings::mtjob_affinity_MTJOB_AFFINITY_BY_INDEX => Affinity::ByIndex(&node_of),
        bindings::mtjob_affinity_MTJOB_AFFINITY_BY_INDEX_STRICT => {
            Affinity::ByIndexStrict(&node_of)
        }
        _ => return Err(EINVAL),
    };
    let max_threads = usize::try_from(max_threads)
        .ok()
        .and_then(NonZeroUsize::new)
        .ok_or(EINVAL)?;
    let flags = match job.gfp {
        bindings::GFP_KERNEL => GFP_KERNEL,
        bindings::GFP_NOWAIT => GFP_NOWAIT,
        _ => return Err(EINVAL),
    };
    let mtjob = Job::new(job.start..end, name, key, map)?
        .align(Align::new(job.align as u64)?)
        .min_chunk(job.min_chunk as u64)
        .max_threads(max_threads)
        .affinity(affinity)
        .alloc_flags(flags)
        .stop_helpers_when_slower(job.stop_when_slower);
    let (res, ran) = mtjob.run_and_report(|chunk| cb.chunk(chunk.start, chunk.end));
    // Also when a chunk failed: callers report how many threads worked.
    report.nr_threads = c_int::try_from(ran.threads()).unwrap_or(c_int::MAX);
    report.nr_off_node = c_ulong::try_from(ran.off_node()).unwrap_or(c_ulong::MAX);
    report.helpers_stopped = ran.helpers_stopped();
    res
}

/// Prepares `kernel::mtjob` at boot, with or without `CONFIG_MTJOB_RUST`; called once from an
/// `early_initcall` in `kernel/mtjob.c`.
///
/// Returns 0 or the error of creating the node workqueue (jobs then queue node-affine helpers on
/// `system_dfl_wq`).
///
/// # Safety
///
/// Always safe to call; `unsafe` because `#[export]` requires it, as for
/// `drm_panic_qr_max_data_size()`.
#[export]
pub unsafe extern "C" fn mtjob_rust_init() -> c_int {
    match kernel::mtjob::prepare_node_workqueue() {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Test hook of `kernel/mtjob_test.c`: makes the `nth` helper (from 1) that the calling
/// thread's jobs spawn fail as a failed allocation would; 0 turns it off.
///
/// Returns what the previous setting still had to count: 0 if it failed a helper or was off.
///
/// # Safety
///
/// Always safe to call; `unsafe` because `#[export]` requires it.
#[cfg(CONFIG_MTJOB_KUNIT_TEST)]
#[export]
pub unsafe extern "C" fn mtjob_rust_fail_nth_helper(
    nth: kernel::ffi::c_uint,
) -> kernel::ffi::c_uint {
    let left = kernel::mtjob::fail_helper::set(nth as usize);
    kernel::ffi::c_uint::try_from(left).unwrap_or(kernel::ffi::c_uint::MAX)
}

/// Runs `job` on the Rust engine with at most `max_threads` threads (the job's, capped by
/// `mtjob.max_threads=`) and says how in `report`; see `mtjob_run()` for the rules.
///
/// Returns 0, the first error a chunk returned, or `-EINVAL` for a job `mtjob_run()` would
/// have refused.
///
/// # Safety
///
/// `job` must point to a valid `struct mtjob` that nobody changes during the call, whose
/// `thread_fn` (and `node_of`, if set) may be called concurrently with `fn_arg` until this
/// function returns. `report` must point to a valid `struct mtjob_report` that nobody else
/// accesses during the call. `map` must point to the static lockdep map of the call site's join
/// (`mtjob_run()`), of the class `key`, the static lock class key of the call site, and named
/// `class_name`, a static C string (only read with `CONFIG_LOCKDEP`).
#[export]
pub unsafe extern "C" fn mtjob_rust_run(
    job: *const bindings::mtjob,
    max_threads: c_int,
    report: *mut bindings::mtjob_report,
    map: *mut bindings::lockdep_map,
    key: *mut bindings::lock_class_key,
    class_name: *const c_char,
) -> c_int {
    // SAFETY: by the safety requirements `job` is valid and not changed during the call.
    let job = unsafe { &*job };
    // SAFETY: by the safety requirements `report` is valid and exclusively ours for the call.
    let report = unsafe { &mut *report };
    report.engine = bindings::mtjob_engine_MTJOB_ENGINE_RUST;
    // SAFETY: by the safety requirements `key` points to a static key, never moved nor freed,
    // which `LockClassKey` wraps transparently.
    let key = unsafe { Pin::static_ref(&*key.cast::<LockClassKey>()) };
    // SAFETY: by the safety requirements `map` points to a static map of a static name and key,
    // which nothing else writes but lockdep.
    let map = unsafe { LockdepMap::from_raw(map) };
    // The name is only read by lockdep (`lockdep_init_map*()` for the scope and its work items):
    // without it, no `strlen()` per job.
    let name = if cfg!(CONFIG_LOCKDEP) {
        // SAFETY: by the safety requirements `class_name` points to a static C string.
        unsafe { CStr::from_char_ptr(class_name) }
    } else {
        c"mtjob"
    };
    match run(job, max_threads, report, name, key, map) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
