// SPDX-License-Identifier: GPL-2.0

//! Rust multithreaded job sample.
//!
//! Runs three jobs of [`kernel::mtjob`] when loaded (at boot when built in) and prints one
//! line for each:
//!
//! 1. fill a table of 65,536 squares, in chunks aligned to 64 entries and at least 1,024
//!    entries long, with up to four threads;
//! 2. sum the table with by-index affinity: the first half of the table belongs to the node of
//!    the CPU the module's init runs on, the second half to the next node with CPUs;
//! 3. a job in which the chunk holding entry 40,000 fails with `ENOSPC`: the error comes back,
//!    and [`Job::run_and_report`] still reports what the job used.
//!
//! [`Job::run_and_report`]: kernel::mtjob::Job::run_and_report
//!
//! The last line is "rust_mtjob: all jobs ok"; any wrong result fails the load with `EINVAL`.

use core::num::NonZeroUsize;
use kernel::{
    alloc::NumaNode,
    mtjob::{
        new_job,
        Affinity,
        Align, //
    },
    prelude::*,
    sync::atomic::{
        Atomic,
        Relaxed, //
    },
};

/// Entries of the table.
const ENTRIES: usize = 65536;

module! {
    type: RustMtjob,
    name: "rust_mtjob",
    authors: ["Rust for Linux Contributors"],
    description: "Rust multithreaded job sample",
    license: "GPL",
}

struct RustMtjob;

impl kernel::Module for RustMtjob {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // 512 KiB: kvmalloc, so that loading the module does not need an order-7 page.
        let mut table = KVVec::with_capacity(ENTRIES, GFP_KERNEL)?;
        for _ in 0..ENTRIES {
            table.push(Atomic::new(0u64), GFP_KERNEL)?;
        }
        let four = NonZeroUsize::new(4).ok_or(EINVAL)?;

        // Each chunk writes only its own entries; the closure borrows the table. `new_job!`
        // gives the job's helpers and join a lock class of this call site.
        let report = new_job!(0..ENTRIES, "rust_mtjob_fill")?
            .align(Align::new(64)?)
            .min_chunk(1024)
            .max_threads(four)
            .run(|chunk| {
                for i in chunk {
                    let v = i as u64;
                    table[i].store(v * v, Relaxed);
                }
                Ok(())
            })?;
        pr_info!(
            "filled {} entries: {} chunks, {} threads\n",
            ENTRIES,
            report.chunks(),
            report.threads()
        );

        let here = NumaNode::current();
        let there = NumaNode::next_with_cpus(Some(here)).unwrap_or(here);
        let node_of = |i: usize| Some(if i < ENTRIES / 2 { here } else { there });
        let sum = Atomic::new(0u64);
        let report = new_job!(0..ENTRIES, "rust_mtjob_sum")?
            .min_chunk(1024)
            .max_threads(four)
            .affinity(Affinity::ByIndex(&node_of))
            .run(|chunk| {
                // Relaxed is enough: the job's join orders the fill's stores before these loads
                // and these adds before the load of the sum below.
                let part: u64 = chunk.map(|i| table[i].load(Relaxed)).sum();
                sum.add(part, Relaxed);
                Ok(())
            })?;
        // The sum of the squares below n is (n - 1) n (2n - 1) / 6.
        let n = ENTRIES as u64;
        let expected = (n - 1) * n * (2 * n - 1) / 6;
        let got = sum.load(Relaxed);
        pr_info!(
            "summed them on nodes {} and {}: {} chunks, {} threads, {} off their node\n",
            here.as_raw(),
            there.as_raw(),
            report.chunks(),
            report.threads(),
            report.off_node()
        );
        if got != expected {
            pr_err!("sum {} instead of {}\n", got, expected);
            return Err(EINVAL);
        }

        let (res, report) = new_job!(0..ENTRIES, "rust_mtjob_fail")?
            .min_chunk(1024)
            .max_threads(four)
            .run_and_report(|chunk| {
                if chunk.contains(&40_000) {
                    Err(ENOSPC)
                } else {
                    Ok(())
                }
            });
        match res {
            Err(e) if e == ENOSPC => pr_info!(
                "a failing chunk stopped its job with ENOSPC ({} chunks, {} threads)\n",
                report.chunks(),
                report.threads()
            ),
            other => {
                pr_err!("a failing chunk returned {:?} instead of ENOSPC\n", other);
                return Err(EINVAL);
            }
        }

        pr_info!("all jobs ok\n");
        Ok(RustMtjob)
    }
}
