#!/usr/bin/env python3
"""Unit tests of scripts/slowdown.py's parsing and pairing (python3 -m
unittest; make check's "harness" stage).  The lines are shaped as
tests/guest/free.sh prints them."""
import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
import slowdown  # noqa: E402

POL = ("BENCHPOLICY zap={z} zap_stopped={s} zap_serial=0 zap_busy={b} "
       "zap_refused=0 free=0 free_stopped=0 zap_backoff={k} "
       "free_backoff=0\n")


def run(mode, us, z=0, s=0, b=0, what="munmap", k=0):
    return (f"BENCH {mode} FREE {what} mib=1024 thp=0 us={us}\n"
            + POL.format(z=z, s=s, b=b, k=k))


class Slowdown(unittest.TestCase):
    def test_paired_ratios_and_policy(self):
        log = (run("off", 1000) + run("zap", 500, z=1) +
               run("off", 2000) + run("zap", 3000, z=1, s=1) +
               run("off", 1000) + run("zap", 1000, b=1))
        rows = slowdown.cells("s", slowdown.parse(log))
        self.assertEqual(len(rows), 1)
        r = rows[0]
        self.assertEqual((r["teardown"], r["mib"], r["mode"], r["runs"]),
                         ("munmap", 1024, "zap", 3))
        # Ratios 0.5, 1.5, 1.0: each over its own round's serial run.
        self.assertAlmostEqual(r["median"], 1.0)
        self.assertAlmostEqual(r["p90"], 1.5)
        self.assertEqual((r["parallel"], r["stopped"], r["refused"]),
                         (2, 1, 1))

    def test_backoff_is_a_refusal(self):
        log = (run("off", 1000) + run("zap", 3000, z=1, s=1) +
               run("off", 1000) + run("zap", 1000, k=1))
        r = slowdown.cells("s", slowdown.parse(log))[0]
        self.assertEqual((r["parallel"], r["stopped"], r["refused"],
                          r["backoff"]), (1, 1, 1, 1))

    def test_boot_paths_paired_by_round(self):
        def boot(us, threads, huge_us):
            return {"nodes": {0: {"us": us, "threads": threads}},
                    "huge_report": [("2048", "1024", "1024", str(huge_us),
                                     "rust", str(threads))]}
        boots = {("rust", 0): boot(500, 2, 300),
                 ("serial", 0): boot(1000, 1, 300),
                 ("rust", 1): boot(1500, 1, 600),
                 ("serial", 1): boot(1000, 1, 200),
                 # No serial boot in round 2: left out.
                 ("rust", 2): boot(100, 2, 100)}
        rows = {r["teardown"]: r for r in slowdown.boot_cells("b", boots)}
        self.assertEqual(sorted(rows), ["deferred init", "hugetlb 2M"])
        d = rows["deferred init"]
        self.assertEqual((d["runs"], d["parallel"], d["refused"]), (2, 1, 1))
        self.assertAlmostEqual(d["median"], 1.0)     # 0.5 and 1.5
        self.assertAlmostEqual(rows["hugetlb 2M"]["p90"], 3.0)

    def test_unpaired_run_left_out(self):
        rows = slowdown.cells("s", slowdown.parse(run("zap", 500, z=1)))
        self.assertEqual(rows, [])

    def test_teardowns_paired_apart(self):
        log = (run("off", 1000) + run("off", 4000, what="exit") +
               run("zap", 2000, what="exit", z=1) + run("zap", 500, z=1))
        rows = {r["teardown"]: r for r in
                slowdown.cells("s", slowdown.parse(log))}
        self.assertAlmostEqual(rows["exit"]["median"], 0.5)
        self.assertAlmostEqual(rows["munmap"]["median"], 0.5)

    def test_missing_kernel_named_per_arch(self):
        # An arm64 shape needs the arm64 test kernel, not the x86 one.
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.object(slowdown, "KBUILD", d), \
                mock.patch.object(slowdown, "ARM64_KBUILD", d), \
                mock.patch.object(sys, "argv", [
                    "slowdown.py", "--shapes", "arm64-busy-4vcpu"]):
            with self.assertRaises(SystemExit) as e:
                slowdown.main()
        self.assertIn("make kernel-arm64", str(e.exception))
        self.assertIn("arm64-busy-4vcpu", str(e.exception))

    def test_p90_nearest_rank(self):
        self.assertEqual(slowdown.p90(list(range(1, 11))), 9)
        self.assertEqual(slowdown.p90([3]), 3)


if __name__ == "__main__":
    unittest.main()
