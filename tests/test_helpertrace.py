#!/usr/bin/env python3
"""Unit tests of scripts/helpertrace.py (python3 -m unittest; make check's
"harness" stage).  The trace lines are shaped as 7.3's workqueue
tracepoints print them."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
import helpertrace  # noqa: E402

RUST_FN = ("_RNvXs3_NtNtCs1EKtwoKEMO2_6kernel9workqueue6scopedINtB5_13Scoped"
           "ItemRefNCNCNvMs_NtNtB9_5mtjob6sharedINtB1f_6SharedjNCNvCsZjMXBW2"
           "XZh_10mtjob_rust3runs0_0E3run00EINtB7_15WorkItemPointerKy0_E3run"
           "B1S_")


def q(comm, cpu, ts, work, fn, wq="events_dfl"):
    return (f"    {comm}-15      [{cpu:03d}] .....   {ts}: "
            f"workqueue_queue_work: work struct={work} function={fn} "
            f"workqueue={wq} req_cpu=64 cpu={cpu}")


def s(cpu, ts, work, fn, pid=40):
    return (f"   kworker/u9:1-{pid}      [{cpu:03d}] .....   {ts}: "
            f"workqueue_execute_start: work struct {work}: function {fn}")


def fork(cpu, ts, pid):
    return (f"        kthreadd-2       [{cpu:03d}] .....   {ts}: "
            f"sched_process_fork: comm=kthreadd pid=2 child_comm=kthreadd "
            f"child_pid={pid}")


def log(*lines):
    return ("MTJOB-BEGIN\nnode0 cpus 0-1\nnode1 cpus 2-3\nMTJOB-TRACE\n"
            + "\n".join(lines) + "\nMTJOB-TRACE-END\nMTJOB-DMESG\n")


class Parse(unittest.TestCase):
    def test_no_trace(self):
        self.assertIsNone(helpertrace.parse("MTJOB-BEGIN\nMTJOB-END\n"))

    def test_matches_queue_and_start_by_work(self):
        r = helpertrace.parse(log(
            q("pgdatinit1", 2, "1.000100", "00000000aaaa", "padata_mt_helper"),
            q("pgdatinit1", 2, "1.000200", "00000000bbbb", "padata_mt_helper"),
            s(3, "1.000450", "00000000bbbb", "padata_mt_helper"),
            s(2, "1.000900", "00000000aaaa", "padata_mt_helper")))
        self.assertEqual([(h["cpu"], round(h["us"])) for h in r],
                         [(3, 250), (2, 800)])
        self.assertEqual([h["same_cpu"] for h in r], [False, True])
        self.assertAlmostEqual(helpertrace.summary(r)[7], 0.5)
        self.assertEqual({h["engine"] for h in r}, {"padata"})

    def test_rust_helper_and_others(self):
        r = helpertrace.parse(log(
            q("pgdatinit0", 0, "2.000000", "00000000cccc", RUST_FN,
              "mtjob_node"),
            q("swapper/0", 0, "2.000001", "00000000dddd", "vmstat_update"),
            s(1, "2.000010", "00000000cccc", RUST_FN),
            # A start whose queueing the buffer lost: left out.
            s(1, "2.000020", "00000000eeee", RUST_FN)))
        self.assertEqual(len(r), 1)
        self.assertEqual((r[0]["engine"], r[0]["workqueue"], r[0]["cpu"]),
                         ("rust", "mtjob_node", 1))
        self.assertAlmostEqual(r[0]["us"], 10, places=3)

    def test_new_worker(self):
        r = helpertrace.parse(log(
            fork(0, "0.500000", 41),
            q("pgdatinit0", 0, "1.000000", "00000000aaaa", RUST_FN),
            q("pgdatinit0", 0, "1.000001", "00000000bbbb", RUST_FN),
            s(1, "1.000100", "00000000aaaa", RUST_FN, pid=41),
            fork(1, "1.000200", 42),
            s(1, "1.000900", "00000000bbbb", RUST_FN, pid=42),
            s(0, "1.001000", "00000000cccc", RUST_FN, pid=43)))
        # An idle worker forked before, then one forked for the helper.
        self.assertEqual([h["new_worker"] for h in r], [False, True])
        self.assertAlmostEqual(helpertrace.summary(r)[6], 0.5)
        # Without fork events nothing is said.
        r = helpertrace.parse(log(
            q("pgdatinit0", 0, "1.0", "00000000aaaa", RUST_FN),
            s(1, "1.1", "00000000aaaa", RUST_FN)))
        self.assertIsNone(r[0]["new_worker"])

    def test_deferred_helpers_on_node(self):
        r = helpertrace.deferred_helpers(log(
            q("pgdatinit1", 2, "1.0", "00000000aaaa", RUST_FN),
            s(0, "1.5", "00000000aaaa", RUST_FN),
            q("pgdatinit1", 2, "1.6", "00000000bbbb", RUST_FN),
            s(3, "1.7", "00000000bbbb", RUST_FN),
            q("rust_mtjob", 2, "1.8", "00000000cccc", RUST_FN),
            s(3, "1.9", "00000000cccc", RUST_FN)))
        self.assertEqual([(h["node"], h["on_node"]) for h in r],
                         [(1, False), (1, True)])

    def test_by_window(self):
        starts = [{"queued_at": t, "us": 1.0} for t in
                  (0.5, 1.5, 1.7, 2.0, 2.5, 9.0)]
        groups = helpertrace.by_window(starts, [1.0, 2.0, 3.0])
        self.assertEqual([[h["queued_at"] for h in g] for g in groups],
                         [[1.5, 1.7, 2.0], [2.5]])

    def test_summary(self):
        starts = [{"us": float(u), "on_node": u < 50} for u in range(1, 101)]
        n, med, p90, p99, mx, on, new, _ = helpertrace.summary(starts)
        self.assertEqual((n, med, p90, p99, mx), (100, 50.5, 90, 99, 100))
        self.assertAlmostEqual(on, 0.49)
        self.assertIsNone(new)
        self.assertIsNone(helpertrace.summary([]))
        # Fewer than 100 samples: p99 is the largest.
        self.assertEqual(helpertrace.percentile([3, 1, 2], 99), 3)


if __name__ == "__main__":
    unittest.main()
