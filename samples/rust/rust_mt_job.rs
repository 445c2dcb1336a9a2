// SPDX-License-Identifier: GPL-2.0

//! Rust multithreaded job sample.
//!
//! Runs three jobs of [`kernel::mt_job`] when loaded (at boot when built in) and prints one
//! line for each:
//!
//! 1. fill a table of 65,536 squares, in chunks aligned to 64 entries and at least 1,024
//!    entries long, with up to four threads;
//! 2. sum the table with by-index affinity: the first half of the table belongs to the node
//!    the module is loaded on, the second half to the next node with CPUs;
//! 3. a job in which the chunk holding entry 40,000 fails with `ENOSPC`: the error comes back.
//!
//! The last line is "rust_mt_job: all jobs ok"; any wrong result fails the load with `EINVAL`.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::mt_job::{Affinity, Align, Job};
use kernel::numa::NodeId;
use kernel::prelude::*;

/// Entries of the table.
const ENTRIES: usize = 65536;

module! {
    type: RustMtJob,
    name: "rust_mt_job",
    author: "Rust for Linux Contributors",
    description: "Rust multithreaded job sample",
    license: "GPL",
}

struct RustMtJob;

impl kernel::Module for RustMtJob {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut table = KVec::with_capacity(ENTRIES, GFP_KERNEL)?;
        for _ in 0..ENTRIES {
            table.push(AtomicU64::new(0), GFP_KERNEL)?;
        }

        // Each chunk writes only its own entries; the closure borrows the table.
        let report = Job::new(0..ENTRIES)?
            .align(Align::new(64)?)
            .min_chunk(1024)
            .max_threads(4)?
            .run(|chunk| {
                for i in chunk {
                    table[i].store((i * i) as u64, Ordering::Relaxed);
                }
                Ok(())
            })?;
        pr_info!(
            "filled {} entries: {} chunks, {} threads\n",
            ENTRIES,
            report.chunks(),
            report.threads()
        );

        let here = NodeId::current();
        let there = NodeId::next_with_cpus(Some(here)).unwrap_or(here);
        let node_of = |i: usize| Some(if i < ENTRIES / 2 { here } else { there });
        let sum = AtomicU64::new(0);
        let report = Job::new(0..ENTRIES)?
            .min_chunk(1024)
            .max_threads(4)?
            .affinity(Affinity::ByIndex(&node_of))
            .run(|chunk| {
                let part: u64 = chunk.map(|i| table[i].load(Ordering::Relaxed)).sum();
                sum.fetch_add(part, Ordering::Relaxed);
                Ok(())
            })?;
        // The sum of the squares below n is (n - 1) n (2n - 1) / 6.
        let n = ENTRIES as u64;
        let expected = (n - 1) * n * (2 * n - 1) / 6;
        let got = sum.load(Ordering::Relaxed);
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

        let res = Job::new(0..ENTRIES)?
            .min_chunk(1024)
            .max_threads(4)?
            .run(|chunk| {
                if chunk.contains(&40_000) {
                    Err(ENOSPC)
                } else {
                    Ok(())
                }
            });
        if res != Err(ENOSPC) {
            pr_err!("a failing chunk returned {:?} instead of ENOSPC\n", res);
            return Err(EINVAL);
        }
        pr_info!("a failing chunk stopped its job with ENOSPC\n");

        pr_info!("all jobs ok\n");
        Ok(RustMtJob)
    }
}
