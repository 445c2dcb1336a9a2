#!/usr/bin/env python3
"""Unit tests of scripts/guest.py's kernel log checks (python3 -m unittest).

make check runs them in its "harness" stage.  The logs below are shaped as
the guest prints them: console, then MTJOB-DMESG and the whole dmesg.
"""
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
import freebench  # noqa: E402
import guest  # noqa: E402

HEAD = "MTJOB-BEGIN\nMTJOB-DMESG\n[    0.000000] Linux version 7.3.4\n"
DYING = """[  206.61] ------------[ cut here ]------------
[  206.61] Dying CPU not properly vacated!
[  206.61] WARNING: CPU: 1 PID: 23 at kernel/sched/core.c:8365 sched_cpu_dying+0x11a/0x130
[  206.61] Call Trace:
[  206.61]  <TASK>
[  206.61] ---[ end trace 0000000000000000 ]---
[  206.61] CPU1 enqueued tasks (%s total):
%s[  207.02] smpboot: CPU 1 is now offline
"""
TAIL = "TRACE a warning turned tracing off; each CPU's last events:\nMTJOB-END\n"


def log(total="2", tasks=("migration/1",), head=HEAD, tail=TAIL):
    listed = "".join(f"[  206.61] \tpid: 23, name: {t}\n" for t in tasks)
    return head + DYING % (total, listed) + tail


class Warnings(unittest.TestCase):
    # 6.12's harness excused this warning (dl_server counting, fixed by
    # 52d15521eb75 in 6.17); on 7.3 every warning counts.
    def test_dying_cpu_warning_counts(self):
        r = guest.parse(log(), "rust", 0)
        self.assertTrue(any("sched_cpu_dying" in b for b in r["bad"]))
        # The trace marker counts too.
        self.assertTrue(any("turned tracing off" in b for b in r["bad"]))

    def test_other_warnings_count(self):
        other = ("[  300.00] WARNING: CPU: 0 PID: 1 at mm/memory.c:1 f+0x1/0x2\n"
                 "MTJOB-END\n")
        r = guest.parse(HEAD + other, "rust", 0)
        self.assertEqual(len(r["bad"]), 1)
        self.assertIn("mm/memory.c", r["bad"][0])


class Completeness(unittest.TestCase):
    def test_wrapped_dmesg_is_bad(self):
        r = guest.parse(log(head="MTJOB-BEGIN\nMTJOB-DMESG\n"), "rust", 0)
        self.assertTrue(any("printk buffer" in b for b in r["bad"]))

    def test_clean_log(self):
        r = guest.parse(HEAD + "[    1.0] hello\nMTJOB-END\n", "rust", 0)
        self.assertEqual((r["bad"], r["ok"]), ([], True))


class FreeCases(unittest.TestCase):
    """free.sh and guest.py name the same cases, and agree on which of them
    freetest --quick leaves out."""

    def setUp(self):
        import re
        with open(os.path.join(os.path.dirname(__file__), "guest",
                               "free.sh")) as f:
            text = f.read()
        body = text[text.index("test|quick)"):]
        body = body[:body.index(";;")]
        self.run_case = set(re.findall(r"^\trun_case (\S+)", body, re.M))
        self.full = set(re.findall(r"^\tfull_case (\S+)", body, re.M))

    def test_full_only_cases_agree(self):
        self.assertEqual(self.full, guest.FREE_FULL_ONLY)

    def test_every_case_has_an_expectation(self):
        self.assertEqual(self.run_case | self.full, set(guest.FREE_CASES))
        self.assertFalse(self.run_case & self.full)


class Held(unittest.TestCase):
    """nr_parallel_free_held: each case's line ends with the gauge, which
    must be back at 0, and the sampled munmap must have seen it rise."""

    CASE = ("FREECASE munmap-2g-thp-off rc=0 memfree_before=100 "
            "memfree_after=100 pf=1 pft=2 pff=0 png=0 pnm=0 pnb=0 held=%s\n")
    ZAP = ("ZAPCASE zap-rt rc=0 memfree_before=100 memfree_after=100 pz=0 "
           "pzt=0 pzs=0 pzr=1 pzb=0 pzn=0 held=%s\n")

    def run_checks(self, fn, log):
        checks = guest.Checks()
        with open(os.devnull, "w") as devnull:
            old, sys.stdout = sys.stdout, devnull
            try:
                fn(checks, log)
            finally:
                sys.stdout = old
        return checks.failed

    def test_case_lines_still_parse(self):
        m = guest.FREECASE_RE.search(self.CASE % "0")
        self.assertEqual(m.groups()[4:], ("1", "2", "0", "0", "0", "0"))
        self.assertIsNotNone(guest.ZAPCASE_RE.search(self.ZAP % "0"))

    def test_zero_passes(self):
        log = self.CASE % "0" + self.ZAP % "0"
        self.assertEqual(self.run_checks(guest.held_checks, log), 0)

    def test_left_counted_fails(self):
        for log in (self.CASE % "512", self.ZAP % "7", self.CASE % ""):
            self.assertEqual(self.run_checks(guest.held_checks, log), 1, log)

    def test_sample(self):
        ok = "FREEHELD max=262000 samples=900 after=0\n"
        never = "FREEHELD max=0 samples=900 after=0\n"
        stuck = "FREEHELD max=262000 samples=900 after=510\n"
        self.assertEqual(self.run_checks(guest.held_sample_checks, ok), 0)
        for log in (never, stuck, ""):
            self.assertEqual(
                self.run_checks(guest.held_sample_checks, log), 1, log)

    def test_mm_selftests(self):
        ok = "".join(f"MMSELFTEST {t} rc=0 pz=1 pzt=2 pzm=1 pzmt=2\n"
                     for t in guest.MM_SELFTESTS)
        self.assertEqual(self.run_checks(guest.mm_selftest_checks, ok), 0)
        skipped = ok.replace("MMSELFTEST cow rc=0", "MMSELFTEST cow rc=4")
        missing = ok.replace("MMSELFTEST cow rc=0", "MMSELFTEST other rc=0")
        never = ok.replace("pz=1 pzt=2", "pz=0 pzt=0")
        no_munmap = ok.replace("pzm=1 pzmt=2", "pzm=0 pzmt=0")
        for log in (skipped, missing):
            self.assertEqual(
                self.run_checks(guest.mm_selftest_checks, log), 1, log)
        self.assertEqual(self.run_checks(guest.mm_selftest_checks, never), 1)
        self.assertEqual(
            self.run_checks(guest.mm_selftest_checks, no_munmap), 1)

    def test_mm_selftest_failure_log_printed(self):
        log = "".join(f"MMSELFTEST {t} rc=0 pz=1 pzt=2 pzm=1 pzmt=2\n"
                      for t in guest.MM_SELFTESTS)
        log = log.replace("MMSELFTEST cow rc=0", "MMSELFTEST cow rc=1")
        log += "MMSELFTEST-LOG cow: not ok 7 cow.anon.x\n"
        out = io.StringIO()
        old, sys.stdout = sys.stdout, out
        try:
            guest.mm_selftest_checks(lambda ok, msg: None, log)
        finally:
            sys.stdout = old
        self.assertIn("#   cow: not ok 7 cow.anon.x", out.getvalue())


class ToggleTrace(unittest.TestCase):
    """key-toggling's traced flushes: counts within what the batches hold."""

    LINE = ("TOGGLETRACE  free_test-91 [001] ..... 12.5: tlb_parallel_free: "
            "freeable=%d gathered=%d batches=%d helpers=1 threads=2 "
            "held_ns=5 free_ns=6 helper_ns=7\n")

    def failed(self, log):
        return Held.run_checks(self, guest.toggle_trace_checks, log)

    def test_full_batches_pass(self):
        # The largest flush seen: 21 full batches.
        log = self.LINE % (10187, 10187, 21) + self.LINE % (9872, 9900, 37)
        self.assertEqual(self.failed(log), 0)

    def test_carried_count_fails(self):
        # One page more than 21 batches hold; a count above gathered.
        for log in (self.LINE % (10188, 10188, 21),
                    self.LINE % (9700, 9690, 37),
                    self.LINE.replace("TOGGLETRACE", "FREETRACE") % (
                        10000, 10000, 21)):
            self.assertGreaterEqual(self.failed(log), 1, log)


class ZapCases(unittest.TestCase):
    """free.sh's zap_cases and guest.py's ZAP_CASES name the same cases and
    agree on which of them freetest --quick leaves out."""

    def setUp(self):
        import re
        with open(os.path.join(os.path.dirname(__file__), "guest",
                               "free.sh")) as f:
            text = f.read()
        body = ""
        for fn in ("zap_cases() {", "zap_munmap_cases() {"):
            part = text[text.index(fn):]
            body += part[:part.index("\n}\n")]
        self.run = set(re.findall(r"^\trun_zap(?:_munmap|_dontneed)? (\S+)",
                                  body, re.M))
        self.full = set(re.findall(
            r"^\t(?:full_case_zap|full run_zap(?:_munmap|_dontneed)?) (\S+)",
            body, re.M))

    def test_full_only_cases_agree(self):
        self.assertEqual(self.full, guest.ZAP_FULL_ONLY)

    def test_every_case_has_an_expectation(self):
        self.assertEqual(self.run | self.full, set(guest.ZAP_CASES))
        self.assertFalse(self.run & self.full)

    def test_checks_fail_on_a_serial_zap(self):
        """A 2 GiB exit that ran on one thread fails its case."""
        line = ("ZAPCASE zap-exit-1200m-thp-off rc=0 memfree_before=100 "
                "memfree_after=100 pz=0 pzt=0 pzs=1 pzr=0 pzb=0 pzn=0")
        m = guest.ZAPCASE_RE.search(line)
        counts = tuple(map(int, m.groups()[4:]))
        _, ok = guest.ZAP_CASES["zap-exit-1200m-thp-off"]
        self.assertFalse(ok(*counts))
        self.assertTrue(ok(1, 2, 0, 0, 0, 0))


class FreeMemory(unittest.TestCase):
    """free_memory_checks(): a high reading before a case is not held
    against it; a case that keeps memory fails."""

    @staticmethod
    def cases(*readings):
        return [(f"c{i}", "0", str(b), str(a))
                for i, (b, a) in enumerate(readings)]

    def failed(self, cases):
        checks = guest.Checks()
        with open(os.devnull, "w") as devnull:
            old, sys.stdout = sys.stdout, devnull
            try:
                guest.free_memory_checks(checks, "", cases, 32768)
            finally:
                sys.stdout = old
        return checks.failed

    def test_high_reading_before_a_case(self):
        # CI of 51467d2: zap-exit-512m-thp-on then zap-mixed.
        self.assertEqual(self.failed(self.cases(
            (8057888, 8065584), (8065584, 8090944), (8090944, 8057944),
            (8057944, 8069064))), 0)

    def test_kept_memory_fails(self):
        self.assertEqual(self.failed(self.cases(
            (8057888, 8057900), (8057900, 8000000))), 2)
        # A high reading excuses no more than it was high.
        self.assertEqual(self.failed(self.cases(
            (8057888, 8090944), (8090944, 8020000))), 2)


class SparseShares(unittest.TestCase):
    """The sparse cases' traced exits: each of the two threads has at least
    SPARSE_MIN_SHARE of the job's CPU time."""

    TRACE = ("ZAPTRACE free_test-93 [000] ..... 50.1: exit_mmap_zap_parallel: "
             "pages=262200 vmas=2 entries=%d segs=%d helpers=1 threads=%d "
             "zap_ns=900000000 tail_ns=10 helper_ns=%d caller_cpu_ns=%d\n")
    CASE = ("ZAPCASE %s rc=0 memfree_before=1 memfree_after=1 pz=1 pzt=2 "
            "pzs=0 pzr=0 pzb=0 pzn=0 held=0\n")

    def log(self, corner, spread):
        return (self.TRACE % corner + self.CASE % "zap-sparse-corner"
                + self.TRACE % spread + self.CASE % "zap-sparse-spread")

    def failed(self, log):
        return Held.run_checks(self, guest.sparse_share_checks, log)

    def test_traces_go_to_their_case(self):
        traces = guest.traces_by_case(self.log((512, 32, 2, 4, 6),
                                               (32768, 512, 2, 5, 5)))
        self.assertEqual([e[2] for e in traces["zap-sparse-corner"]], [512])
        self.assertEqual([e[3] for e in traces["zap-sparse-spread"]], [512])

    def test_even_shares_pass(self):
        log = self.log((512, 32, 2, 400, 600), (32768, 512, 2, 500, 480))
        self.assertEqual(self.failed(log), 0)

    def test_one_thread_with_the_work_fails(self):
        # Cut by address span: one chunk of eight held the corner.
        log = self.log((16384, 8, 2, 30, 970), (32768, 512, 2, 500, 480))
        self.assertEqual(self.failed(log), 1)
        # One thread only, or no trace at all.
        log = self.log((512, 32, 1, 0, 1000), (32768, 512, 2, 500, 480))
        self.assertEqual(self.failed(log), 1)
        self.assertEqual(self.failed(self.CASE % "zap-sparse-corner"), 2)


class SparseLoop(unittest.TestCase):
    """zap-munmap-sparse: no more shootdown IPIs with the live zap on than
    off (a quarter and 64 of slack)."""

    CASE = ("ZAPCASE %s rc=0 memfree_before=1 memfree_after=1 pz=0 pzt=0 "
            "pzs=0 pzr=0 pzb=0 pzn=0 held=0\n")

    def log(self, off, on):
        return ("SPARSELOOP rounds=10 us=900 ipis=%d\n" % off
                + self.CASE % "zap-munmap-sparse-off"
                + "SPARSELOOP rounds=10 us=950 ipis=%d\n" % on
                + self.CASE % "zap-munmap-sparse")

    def failed(self, log):
        return Held.run_checks(self, guest.sparse_loop_checks, log)

    def test_as_many_passes(self):
        self.assertEqual(self.failed(self.log(400, 430)), 0)
        self.assertEqual(self.failed(self.log(0, 0)), 0)

    def test_a_flush_per_chunk_fails(self):
        # 10 munmap()s of ~32 chunks, each IPIing 7 CPUs.
        self.assertEqual(self.failed(self.log(400, 2640)), 1)

    def test_a_missing_case_fails(self):
        self.assertEqual(self.failed(self.CASE % "zap-munmap-sparse"), 1)


class MlockDrain(unittest.TestCase):
    """Mlocked back to its value before mlock() after munmap(): exactly
    once drained, and undrained exactly if no chunk's thread moved, else
    within a munlock batch a move."""

    def line(self, what, before, locked, after, drained, moves=0, cpus=4):
        return (f"FREEMLOCK {what} before_kb={before} locked_kb={locked} "
                f"after_kb={after} drained_kb={drained} moves={moves} "
                f"cpus={cpus} page_kb=4\n")

    def failed(self, log):
        return Held.run_checks(self, guest.mlock_drain_checks, log)

    def test_back_exactly_passes(self):
        log = (self.line("munmap", 0, 524288, 0, 0)
               + self.line("dontneed", 12, 524300, 300, 300))
        self.assertEqual(self.failed(log), 0)

    def test_left_with_no_move_fails(self):
        # What helpers that never drain leave (stop 53's old kernel).
        self.assertEqual(self.failed(self.line("munmap", 0, 524288, 264, 0)),
                         1)
        self.assertEqual(self.failed(self.line("munmap", 0, 524288, 4, 0)),
                         1)

    def test_a_moved_threads_batch_passes(self):
        # 29 pages of 4 KiB left on the CPU a thread moved from.
        self.assertEqual(
            self.failed(self.line("munmap", 0, 524288, 116, 0, moves=1)), 0)

    def test_more_than_a_batch_a_move_fails(self):
        self.assertEqual(
            self.failed(self.line("munmap", 0, 524288, 124, 0, moves=1)), 1)
        # Moves beyond the CPUs leave no more than a batch a CPU.
        self.assertEqual(
            self.failed(self.line("munmap", 0, 524288, 484, 0, moves=9)), 1)

    def test_without_the_count_a_batch_a_cpu(self):
        self.assertEqual(
            self.failed(self.line("munmap", 0, 524288, 480, 0, moves=-1)), 0)
        self.assertEqual(
            self.failed(self.line("munmap", 0, 524288, 484, 0, moves=-1)), 1)

    def test_left_after_a_drain_fails(self):
        # Still counted once every CPU drained: leaked, not batched.
        self.assertEqual(
            self.failed(self.line("munmap", 0, 524288, 32, 4, moves=1)), 1)

    def test_nothing_locked_or_missing_fails(self):
        self.assertEqual(self.failed(self.line("munmap", 0, 0, 0, 0)), 1)
        self.assertEqual(self.failed(self.line("dontneed", 0, 9, 0, 0)), 1)
        self.assertEqual(self.failed(self.line("munmap", 8, 524288, 4, 8)),
                         1)


class FreeBench(unittest.TestCase):
    """freebench keys runs by teardown, THP and size, pairs each zap run
    with the tracepoint event after it, sums each run's profile over the
    CPUs and splits it into phases."""

    LOG = """BENCH off FREE exit mib=4096 thp=0 us=2000000
PROFILE cpu=0 unmap_vmas                    1    1800000.500 us     1800000.500 us     0.000 us
PROFILE cpu=0 flush_tlb_mm_range          108    2000.000 us     18.518 us      1.000 us
PROFILE cpu=0 free_pages_and_swap_cache  2056    800000.000 us     389.105 us     2.000 us
PROFILE cpu=1 free_pgtables                 1    3000.000 us     3000.000 us     0.000 us
PROFILE cpu=1 tlb_finish_mmu                1    500.000 us     500.000 us     0.000 us
BENCH zap FREE exit mib=4096 thp=1 us=1000000
ZAPTRACE free_test-90 [001] ..... 12.3: exit_mmap_zap_parallel: pages=1048576 vmas=3 entries=2048 segs=128 helpers=1 threads=2 zap_ns=800000000 tail_ns=1000 helper_ns=700000000 caller_cpu_ns=750000000
PROFILE cpu=0 unmap_vma_range               4    100.000 us     25.000 us      1.000 us
PROFILE cpu=1 unmap_vma_range               2    300.000 us     150.000 us      1.000 us
PROFILE cpu=1 unmap_vmas                    1    1.000 us     1.000 us      0.000 us
PROFILE cpu=1 tlb_finish_mmu                3    6.000 us     2.000 us      0.000 us
BENCH zap FREE exit mib=4096 thp=0 us=1100000
"""

    def test_tlb_counts(self):
        log = ("BENCH off FREE exit mib=1024 thp=0 us=900000\n"
               "FREETLB ipis=6\n"
               "BENCHTLB switch=40 remote=30 local=2 local_mm=100 sent=3 "
               "wrong=0\n"
               "BENCH zap FREE exit mib=1024 thp=0 us=500000\n"
               "FREETLB ipis=7\n"
               "ZAPTRACE free_test-90 [001] ..... 12.3: exit_mmap_zap_parallel"
               ": pages=262144 vmas=3 entries=512 segs=32 helpers=1 threads=2"
               " zap_ns=1 tail_ns=1 helper_ns=1 caller_cpu_ns=1\n"
               "BENCHTLB switch=20 remote=7 local=1 local_mm=90 sent=4 "
               "wrong=0\n"
               # A failed run counts nothing.
               "BENCH-FAILED zap exit 1024\n"
               "BENCHTLB switch=1 remote=1 local=1 local_mm=1 sent=1 "
               "wrong=0\n")
        counts = freebench.tlbs(log)
        self.assertEqual(counts[("exit", 1024, "off")], [
            {"ipis": 6, "switch": 40, "remote": 30, "local": 2,
             "local_mm": 100, "sent": 3}])
        self.assertEqual(counts[("exit", 1024, "zap")][0]["ipis"], 7)
        self.assertEqual(len(counts), 2)

    def test_runs_and_phases(self):
        times, zaps, profiles = freebench.runs(self.LOG)
        self.assertEqual(times[("exit", 4096)], {"off": [2000000],
                                                 "zap": [1100000]})
        self.assertEqual(times[("exit THP", 4096)], {"zap": [1000000]})
        self.assertEqual(zaps, {("exit THP", 4096): [
            (1000000, 800000000, 1000, 700000000)]})
        # The last zap run has no PROFILE lines: no profile of it.
        self.assertEqual(sorted(profiles), [("exit", 4096, "off"),
                                            ("exit THP", 4096, "zap")])
        (off,) = profiles[("exit", 4096, "off")]
        self.assertEqual(off["calls"], 2167)
        # The walk is what the four top functions took beyond the flushes,
        # the frees and free_pgtables() inside them.
        self.assertEqual(freebench.phases(off), {
            "walk": 1800000.5 + 500 - 2000 - 800000, "TLB flush": 2000.0,
            "free": 800000.0, "page tables": 3000.0})
        (zap,) = profiles[("exit THP", 4096, "zap")]
        self.assertEqual(freebench.phases(zap), {
            "walk": 407.0, "TLB flush": 0.0, "free": 0.0,
            "page tables": 0.0})

    def test_dontneed_events_summed(self):
        """A dontneed run's events (one per VMA) add up; the munmap() of
        the emptied range after it is not the run's."""
        ev = ("ZAPTRACE t-1 [000] ..... 1.0: live_zap_parallel: madvise=%s "
              "start=0x1000 end=0x2000 vmas=1 entries=9 segs=4 helpers=1 "
              "threads=2 zap_ns=%d tail_ns=0 helper_ns=%d "
              "caller_cpu_ns=1\n")
        log = ("BENCH zap FREE dontneed mib=2048 thp=0 us=300000\n"
               + ev % (4, 100, 40) + ev % (4, 200, 60) + ev % (0, 999, 999))
        _, zaps, _ = freebench.runs(log)
        self.assertEqual(zaps, {("dontneed", 2048): [(300000, 300, 0, 100)]})

    def test_report_without_runs(self):
        """report() runs at all (a local once shadowed runs()) and fails
        on a log without BENCH lines."""
        import types
        args = types.SimpleNamespace(nodes=2, cpus=2, mem_gib=8, repeat=9,
                                     tlbi=True, phases=False)
        self.assertEqual(freebench.report(args, "", "empty.log"), 1)

    def test_munmap_zap_trace(self):
        """munmap()'s tracepoint (the range for the pages) counts as a
        zap run's, as the exit's does."""
        log = ("BENCH zap FREE munmap mib=2048 thp=0 us=400000\n"
               "FREETLB ipis=9\n"
               "ZAPTRACE free_test-95 [000] ..... 20.1: live_zap_parallel: "
               "madvise=0 start=0x7f0000000000 end=0x7f0080000000 vmas=1 entries=1024 "
               "segs=64 helpers=1 threads=2 zap_ns=300000000 tail_ns=2000 "
               "helper_ns=290000000 caller_cpu_ns=295000000\n")
        _, zaps, _ = freebench.runs(log)
        self.assertEqual(zaps, {("munmap", 2048): [
            (400000, 300000000, 2000, 290000000)]})
        broken = log.replace("start=0x7f0000000000 ", "")
        self.assertEqual(freebench.runs(broken)[1], {})


class CaseTimes(unittest.TestCase):
    def test_totals_and_slowest(self):
        log = ("CASETIME a total_cs=1000 memfree_cs=600\n"
               "FREECASE a rc=0\n"
               "CASETIME mm-cow total_cs=25050 memfree_cs=0\n"
               "CASETIME b total_cs=300 memfree_cs=200\n")
        self.assertEqual(guest.case_times(log, slowest=2),
                         "case times: 3 cases and selftests took 264 s, "
                         "8 s of it reading MemFree; slowest: mm-cow 250 s, "
                         "a 10 s")
        self.assertEqual(guest.case_times("FREECASE a rc=0\n"),
                         "case times: no CASETIME line")


class HotplugLine(unittest.TestCase):
    """free.sh's FREEHOTPLUG line, with the live ranges' zaps."""

    def test_fields(self):
        m = guest.FREEHOTPLUG_RE.search(
            "x\nFREEHOTPLUG cycles=12 zaps=3 zap_threads=9 live=4 "
            "live_threads=10\ny\n")
        self.assertEqual(m.groups(), ("12", "3", "9", "4", "10", None))

    def test_zap_busy(self):
        # The zaps the gate refused as busy meanwhile (stop 52).
        m = guest.FREEHOTPLUG_RE.search(
            "FREEHOTPLUG cycles=12 zaps=0 zap_threads=0 live=0 "
            "live_threads=0 zap_busy=5\n")
        self.assertEqual(m.group(6), "5")

    def test_after_line(self):
        # The live munmap() after the CPUs came back: its try and count.
        m = guest.FREEHOTPLUG_AFTER_RE.search(
            "x\nFREEHOTPLUG-AFTER tries=2 parallel=1\ny\n")
        self.assertEqual(m.groups(), ("2", "1"))
        self.assertIsNone(guest.FREEHOTPLUG_AFTER_RE.search(
            "FREEHOTPLUG-AFTER tries=5\n"))

    def test_old_line_is_not_read(self):
        # A log from before the live ranges: no silent zero.
        self.assertIsNone(guest.FREEHOTPLUG_RE.search(
            "FREEHOTPLUG cycles=12 zaps=3 zap_threads=9\n"))


if __name__ == "__main__":
    unittest.main()

