#!/usr/bin/env python3
"""Unit tests of scripts/stress.py's log checks (python3 -m unittest).

make check runs them in its "harness" stage beside test_guest_log.py.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
import stress  # noqa: E402

SEP = "=" * 66


def report(title, stack_a, stack_b):
    """A KCSAN report shaped as the kernel prints it."""
    return "\n".join([
        f"[  12.3] {SEP}",
        f"[  12.3] BUG: KCSAN: data-race in {title}",
        "[  12.3] ",
        "[  12.3] write to 0xffff888100000000 of 8 bytes by task 90 on cpu 1:",
        *(f"[  12.3]  {f}+0x10/0x20" for f in stack_a),
        "[  12.3] ",
        "[  12.3] read to 0xffff888100000000 of 8 bytes by task 91 on cpu 0:",
        *(f"[  12.3]  {f}+0x10/0x20" for f in stack_b),
        "[  12.3] ",
        "[  12.3] Reported by Kernel Concurrency Sanitizer on:",
        f"[  12.3] {SEP}", ""])


class KcsanReports(unittest.TestCase):
    """A race is ours if our code is a racing function or is on either
    access's stack; the rest is upstream's."""

    def test_classified(self):
        log = (report("zap_pte_range / zap_pte_range",
                      ["zap_pte_range", "unmap_vma_range",
                       "zap_parallel_chunk"],
                      ["zap_pte_range", "unmap_vmas", "exit_mmap"])
               + report("mtjob_claim / mtjob_claim",
                        ["mtjob_claim"], ["mtjob_claim"])
               + report("tick_sched_do_timer / tick_nohz_idle_enter",
                        ["tick_sched_do_timer", "tick_nohz_handler"],
                        ["tick_nohz_idle_enter", "do_idle"]))
        ours, others = stress.kcsan_reports(log)
        self.assertEqual(len(ours), 2)
        self.assertIn("zap_pte_range / zap_pte_range", ours[0])
        self.assertIn("mtjob_claim", ours[1])
        self.assertEqual(len(others), 1)
        self.assertIn("tick_sched_do_timer", others[0])

    def test_long_stacks(self):
        """A report of two 60-frame stacks, ours only at the bottom of the
        second, is found and is ours; a report cut off is ours too."""
        deep = [f"upstream_fn{i}" for i in range(59)]
        log = report("free_pcppages_bulk / free_pcppages_bulk",
                     deep + ["worker_thread"],
                     deep + ["zap_parallel_chunk"])
        ours, others = stress.kcsan_reports(log)
        self.assertEqual((len(ours), len(others)), (1, 0))
        full = report("a / b", ["a"], ["b"])
        cut = full[:full.index("Reported by")]
        ours, others = stress.kcsan_reports(cut)
        self.assertEqual((len(ours), len(others)), (1, 0))

    def test_upstream_names_alike(self):
        """Upstream functions that end like our test callbacks are not
        ours."""
        ours, others = stress.kcsan_reports(report(
            "ida_random_fn / xchk_btree_rec_fn", ["ida_random_fn"],
            ["xchk_btree_rec_fn"]))
        self.assertEqual((len(ours), len(others)), (0, 1))


if __name__ == "__main__":
    unittest.main()
