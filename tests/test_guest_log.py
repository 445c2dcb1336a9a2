#!/usr/bin/env python3
"""Unit tests of scripts/guest.py's kernel log checks (python3 -m unittest).

make check runs them in its "harness" stage.  The logs below are shaped as
the guest prints them: console, then MTJOB-DMESG and the whole dmesg.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
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


if __name__ == "__main__":
    unittest.main()
