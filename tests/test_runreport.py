#!/usr/bin/env python3
"""Unit tests of scripts/runreport.py, 'make run''s report: the verdict
rule, the parsing of the guest's lines, and the checks that fail the run
(python3 -m unittest; make check runs them in its "harness" stage)."""
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
import guest  # noqa: E402
import runreport  # noqa: E402


class Verdict(unittest.TestCase):
    def test_faster_when_disjoint_and_apart(self):
        ratio, word = runreport.verdict([80, 82, 85], [100, 101, 104])
        self.assertAlmostEqual(ratio, 82 / 101)
        self.assertEqual(word, "faster")

    def test_slower_when_disjoint_and_apart(self):
        self.assertEqual(runreport.verdict([120, 130], [100, 101])[1],
                         "slower")

    def test_overlapping_ranges_are_noise_however_far_the_medians(self):
        # Medians 2x apart, but one run of A is slower than one of B.
        ratio, word = runreport.verdict([50, 50, 50, 50, 200],
                                        [100, 100, 100, 100, 40])
        self.assertEqual(ratio, 0.5)
        self.assertEqual(word, runreport.NOISE)

    def test_disjoint_but_close_medians_are_noise(self):
        # Every run of A below every run of B, medians 3% apart.
        self.assertEqual(runreport.verdict([97, 97.5, 98], [100, 100.5])[1],
                         runreport.NOISE)

    def test_tie_boundary(self):
        # Exactly TIE apart and disjoint: a difference.
        self.assertEqual(runreport.verdict([95], [100])[1], "faster")
        self.assertEqual(runreport.verdict([96], [100])[1], runreport.NOISE)

    def test_rule_states_the_threshold(self):
        self.assertIn("5%", runreport.RULE)
        self.assertIn(runreport.NOISE, runreport.RULE)


TD_LOG = """\
TEARDOWN-SETUP engine=rust free_threshold=262144 zap_threshold=262144 \
free_max_helpers=4 zap_max_helpers=4
TEARDOWN what=munmap mode=serial mib=2048 us=812345 rc=0 tlb_parallel_free=0 \
tlb_parallel_free_threads=0 parallel_zap=0 parallel_zap_threads=0
TEARDOWN what=munmap mode=parallel mib=2048 us=612345 rc=0 \
tlb_parallel_free=3 tlb_parallel_free_threads=6 parallel_zap=0
TEARDOWN what=exit mode=serial mib=2048 us=900000 rc=0 parallel_zap=0 \
parallel_zap_threads=0
TEARDOWN what=exit mode=parallel mib=2048 us=-1 rc=1 parallel_zap=1 \
parallel_zap_threads=2
TEARDOWN-END
"""


class Teardowns(unittest.TestCase):
    def test_parse(self):
        ts = runreport.teardowns(TD_LOG)
        self.assertEqual([(t["what"], t["mode"]) for t in ts],
                         [("munmap", "serial"), ("munmap", "parallel"),
                          ("exit", "serial"), ("exit", "parallel")])
        self.assertEqual(ts[1]["us"], 612345)
        self.assertEqual(ts[1]["tlb_parallel_free_threads"], 6)
        self.assertEqual(ts[3]["rc"], 1)
        self.assertEqual(ts[3]["us"], -1)

    def test_path_ran(self):
        ts = runreport.teardowns(TD_LOG)
        self.assertTrue(all(runreport.path_ran(t) for t in ts))

    def test_path_not_ran(self):
        serial_but_parallel = {"what": "munmap", "mode": "serial",
                               "tlb_parallel_free": 1,
                               "tlb_parallel_free_threads": 2}
        parallel_but_refused = {"what": "exit", "mode": "parallel",
                                "parallel_zap": 0, "parallel_zap_busy": 1}
        parallel_one_thread = {"what": "exit", "mode": "parallel",
                               "parallel_zap": 1, "parallel_zap_threads": 1}
        for t in (serial_but_parallel, parallel_but_refused,
                  parallel_one_thread):
            self.assertFalse(runreport.path_ran(t), t)

    def test_path_taken(self):
        t = runreport.path_taken
        self.assertEqual(t({"what": "exit", "mode": "serial"}), "serial")
        self.assertEqual(t({"what": "exit", "mode": "parallel",
                            "parallel_zap": 1, "parallel_zap_threads": 2}),
                         "parallel")
        self.assertEqual(t({"what": "exit", "mode": "parallel",
                            "parallel_zap_busy": 1}), "declined: busy")
        self.assertEqual(t({"what": "exit", "mode": "parallel",
                            "parallel_zap_serial": 1,
                            "parallel_zap_threads": 0}),
                         "declined: one-thread")
        self.assertEqual(t({"what": "munmap", "mode": "parallel",
                            "tlb_parallel_free_nogrow_busy": 3}),
                         "declined: busy")
        # The kernel's faults: parallel with the sysctl off, and a
        # parallel-mode run that says neither what ran nor why not.
        self.assertTrue(t({"what": "munmap", "mode": "serial",
                           "tlb_parallel_free": 1}).startswith("wrong"))
        self.assertTrue(t({"what": "exit", "mode": "parallel",
                           "parallel_zap": 0}).startswith("wrong"))

    def test_order_rotates(self):
        e = ["rust", "padata", "serial"]
        self.assertEqual(runreport.engine_order(e, 0), e)
        self.assertEqual(runreport.engine_order(e, 1),
                         ["padata", "serial", "rust"])
        self.assertEqual(runreport.engine_order(e, 3), e)


def boot_log(engine, pages=(1000, 2000), us=(30000, 31000), threads=1,
             huge2m=(512, 512), huge1g=(1, 1), job_us=(5000, 20000)):
    """A guest log as the run's boots print it."""
    lines = ["MTJOB-BEGIN", "MemTotal: 8000000 kB", "MemFree: 3000000 kB"]
    for n, c in enumerate(huge2m):
        lines.append(f"hugetlb node{n} hugepages-2048kB {c}")
    for n, c in enumerate(huge1g):
        lines.append(f"hugetlb node{n} hugepages-1048576kB {c}")
    lines += ["MTJOB-DMESG", "[    0.000000] Linux version 7.3.4"]
    for n, (p, u) in enumerate(zip(pages, us)):
        lines.append(f"[    0.5] node {n} deferred init: {p} pages in {u} us,"
                     f" engine {engine}, {threads} threads, 0 pages grown on "
                     "demand before")
    lines.append(f"[    0.9] HugeTLB: hstate 1048576kB: requested 2, "
                 f"allocated 2: 2 nodes, {job_us[1]} us, engine {engine}, "
                 "2 threads")
    lines.append(f"[    1.0] HugeTLB: hstate 2048kB: requested 1024, "
                 f"allocated 1024: 2 nodes, {job_us[0]} us, engine {engine}, "
                 "2 threads")
    lines.append("MTJOB-END")
    return "\n".join(lines) + "\n"


def args():
    return types.SimpleNamespace(nodes=2, cpus=2, mem_gib=8, mem_opts="",
                                 kbuild="kb", debug=[], accel="tcg",
                                 repeat=2, teardown_setup="", logdir="logs")


class Report(unittest.TestCase):
    def setUp(self):
        self.saved = runreport.write_outputs
        runreport.write_outputs = lambda *a: ("x.csv", "x.png")
        self.lines = []

    def tearDown(self):
        runreport.write_outputs = self.saved

    def run_report(self, res, tds=()):
        return runreport.report(args(), res, list(tds),
                                out=self.lines.append)

    def test_hugetlb_jobs_parsed(self):
        r = guest.parse(boot_log("rust"), "rust", 1.0)
        jobs = runreport.hugetlb_jobs(r)
        self.assertEqual(jobs[2048]["us"], 5000)
        self.assertEqual(jobs[1048576]["us"], 20000)
        self.assertEqual(jobs[2048]["threads"], 2)
        self.assertEqual(runreport.huge_pages(r, 2048), {0: 512, 1: 512})
        self.assertEqual(runreport.deferred_us(r), 31000)

    def test_equal_pages_pass(self):
        res = {e: [guest.parse(boot_log(e), e, 1.0) for _ in range(2)]
               for e in ("rust", "padata")}
        self.assertEqual(self.run_report(res), 0, "\n".join(self.lines))
        text = "\n".join(self.lines)
        self.assertIn("deferred init (slowest node)", text)
        self.assertIn(runreport.RULE, text)
        self.assertIn("one vCPU per node", text)

    def test_busy_host_said(self):
        res = {"rust": [guest.parse(boot_log("rust"), "rust", 1.0)]}
        a = args()
        a.host_load = 2.4
        runreport.report(a, res, [], out=self.lines.append)
        self.assertTrue(any("load average before the first boot: 2.40 "
                            "(something else" in x for x in self.lines))

    def test_unequal_deferred_pages_fail(self):
        res = {"rust": [guest.parse(boot_log("rust"), "rust", 1.0)],
               "padata": [guest.parse(boot_log("padata", pages=(1000, 2001)),
                                      "padata", 1.0)]}
        self.assertEqual(self.run_report(res), 1)
        self.assertTrue(any(x.startswith("FAILED - deferred pages")
                            for x in self.lines))

    def test_unequal_huge_pages_fail(self):
        res = {"rust": [guest.parse(boot_log("rust"), "rust", 1.0)],
               "padata": [guest.parse(boot_log("padata", huge2m=(513, 511)),
                                      "padata", 1.0)]}
        self.assertEqual(self.run_report(res), 1)
        self.assertTrue(any(x.startswith("FAILED - 2M pages")
                            for x in self.lines))

    def test_teardown_path_checked(self):
        res = {"rust": [guest.parse(boot_log("rust"), "rust", 1.0)]}
        td = runreport.teardowns(TD_LOG)
        # The failed parallel exit (rc=1) fails the run.
        self.assertEqual(self.run_report(res, [td]), 1)
        self.assertTrue(any("free_test failed" in x for x in self.lines))

    def exit_runs(self, *paths):
        """TEARDOWN lines of exits: S a serial run, P a parallel one, B a
        parallel-mode run refused as busy, W a serial-mode run that counted
        a parallel zap, N a parallel-mode run that counted nothing; after
        one serial and one parallel munmap()."""
        counters = {"S": ("serial", 900000, "parallel_zap=0"),
                    "P": ("parallel", 450000,
                          "parallel_zap=1 parallel_zap_threads=2"),
                    "B": ("parallel", 910000,
                          "parallel_zap=0 parallel_zap_busy=1"),
                    "W": ("serial", 450000,
                          "parallel_zap=1 parallel_zap_threads=2"),
                    "N": ("parallel", 900000, "parallel_zap=0")}
        lines = ["TEARDOWN what=munmap mode=serial mib=2048 us=800000 rc=0 "
                 "tlb_parallel_free=0",
                 "TEARDOWN what=munmap mode=parallel mib=2048 us=600000 rc=0 "
                 "tlb_parallel_free=3 tlb_parallel_free_threads=6"]
        for p in paths:
            mode, us, cnt = counters[p]
            lines.append(f"TEARDOWN what=exit mode={mode} mib=2048 us={us} "
                         f"rc=0 {cnt}")
        return runreport.teardowns("\n".join(lines) + "\n")

    def test_refusal_reported_not_failed(self):
        res = {"rust": [guest.parse(boot_log("rust"), "rust", 1.0)]}
        td = self.exit_runs("S", "P", "S", "B", "S", "P", "S", "B", "S", "P")
        self.assertEqual(self.run_report(res, [td]), 0, "\n".join(self.lines))
        text = "\n".join(self.lines)
        self.assertRegex(text, r"exit\s+parallel\s+parallel zap\s+3 ")
        self.assertRegex(text, r"exit\s+parallel\s+serial, busy\s+2 ")
        self.assertIn("ok - exit parallel: 3 of 5 runs took the parallel zap "
                      "path, 2 declined by the policy (declined: busy)", text)
        # The verdict is over the three parallel runs only: 450 ms each.
        self.assertRegex(text, r"exit 2 GiB\s+parallel-zap/serial\s+0\.50 ")

    def test_all_declined_gives_no_verdict(self):
        res = {"rust": [guest.parse(boot_log("rust"), "rust", 1.0)]}
        td = self.exit_runs("S", "B", "S", "B")
        self.assertEqual(self.run_report(res, [td]), 0)
        text = "\n".join(self.lines)
        self.assertNotIn("parallel-zap/serial", text)
        self.assertIn("exit: no run took the parallel zap path", text)

    def test_parallel_with_sysctl_off_fails(self):
        res = {"rust": [guest.parse(boot_log("rust"), "rust", 1.0)]}
        self.assertEqual(self.run_report(res, [self.exit_runs("W", "P")]), 1)
        self.assertTrue(any(x.startswith("FAILED - exit serial") and
                            "with the sysctl off" in x for x in self.lines))

    def test_nothing_counted_fails(self):
        res = {"rust": [guest.parse(boot_log("rust"), "rust", 1.0)]}
        self.assertEqual(self.run_report(res, [self.exit_runs("S", "N")]), 1)
        self.assertTrue(any(x.startswith("FAILED - exit parallel") and
                            "no refusal counted" in x for x in self.lines))

    def test_verdicts_worded(self):
        fast = [guest.parse(boot_log("rust", us=(10000, 10000),
                                     job_us=(1000, 20000)), "rust", 1.0)
                for _ in range(3)]
        slow = [guest.parse(boot_log("padata", us=(30000, 30000),
                                     job_us=(1000, 20000)), "padata", 1.0)
                for _ in range(3)]
        self.assertEqual(self.run_report({"rust": fast, "padata": slow}), 0)
        text = "\n".join(self.lines)
        self.assertRegex(text, r"deferred init .*rust/padata\s+0\.33 .*"
                         r"rust faster")
        self.assertRegex(text, r"hugetlb 2M .* 1\.00 .*" + runreport.NOISE)


PLACEMENT_LOG = """\
[    0.8] HugeTLB: gigantic pages of node 0 initialised on node 0
[    0.8] HugeTLB: gigantic pages of node 1 initialised on node 0
 pgdatinit0-39 [000] ..... 0.88: mtjob_run: name=deferred_init_memmap \
caller=deferred_init_memmap engine=%(e)s start=1 size=2 max_threads=2 \
threads=2 off_node=3 ret=0 duration_ns=1
 pgdatinit1-40 [002] ..... 0.89: mtjob_run: name=deferred_init_memmap \
caller=deferred_init_memmap engine=%(e)s start=1 size=2 max_threads=2 \
threads=2 off_node=1 ret=0 duration_ns=1
 init-1 [000] ..... 0.98: mtjob_run: name=hugetlb_pages_alloc_boot \
caller=hugetlb_pages_alloc_boot engine=%(e)s start=0 size=1024 \
max_threads=4 threads=4 off_node=7 ret=0 duration_ns=1
"""


class Placement(unittest.TestCase):
    def test_counts(self):
        c = runreport.placement_counts(PLACEMENT_LOG % {"e": "rust"})
        self.assertIsNone(c["helpers"])     # no MTJOB-TRACE section
        self.assertEqual(c["gigantic"], (1, 2))
        # The 2M job has no home node: its count is not taken.
        self.assertEqual(c["chunks"], {"deferred_init_memmap": (4, "rust")})

    def test_sum_and_padata_not_counted(self):
        c = runreport.placement_counts(PLACEMENT_LOG % {"e": "padata"})
        t = runreport.sum_counts([c, c])
        self.assertEqual(t["gigantic"], (2, 4))
        lines = []
        runreport.print_placement((2, 4, 2, {"padata": t}), lines.append)
        self.assertIn("chunks off node: not counted by padata", lines[-1])
        self.assertIn("1G page init off node: 2 of 4", lines[-1])

    def test_one_trace_event_list(self):
        p = runreport.placement_params()
        self.assertEqual(p.count("trace_event="), 1)
        self.assertIn("mtjob:mtjob_run", p)
        self.assertIn("workqueue:workqueue_execute_start", p)


if __name__ == "__main__":
    unittest.main()
