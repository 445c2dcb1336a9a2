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

HEAD = "MTJOB-BEGIN\nMTJOB-DMESG\n[    0.000000] Linux version 6.12.117\n"
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


class KnownUpstream(unittest.TestCase):
    def setUp(self):
        # The exception is 6.12's; these cases are about it.
        self._base = os.environ.get("BASE")
        os.environ["BASE"] = "6.12"

    def tearDown(self):
        if self._base is None:
            del os.environ["BASE"]
        else:
            os.environ["BASE"] = self._base

    def test_not_known_on_7_3(self):
        os.environ["BASE"] = "7.3"
        r = guest.parse(log(), "rust", 0)
        self.assertEqual(r["known"], [])
        self.assertTrue(any("sched_cpu_dying" in b for b in r["bad"]))

    def test_dl_server_count_is_known(self):
        r = guest.parse(log(), "rust", 0)
        self.assertEqual(r["bad"], [])
        self.assertEqual(len(r["known"]), 1)
        self.assertIn("52d15521eb75", r["known"][0])

    def test_a_queued_task_is_not_known(self):
        r = guest.parse(log("3", ("migration/1", "sh")), "rust", 0)
        self.assertEqual(r["known"], [])
        self.assertTrue(any("sched_cpu_dying" in b for b in r["bad"]))
        # The trace marker counts too when no known warning explains it.
        self.assertTrue(any("turned tracing off" in b for b in r["bad"]))

    def test_another_cpus_stopper_is_not_known(self):
        r = guest.parse(log(tasks=("migration/2",)), "rust", 0)
        self.assertEqual(r["known"], [])
        self.assertNotEqual(r["bad"], [])

    def test_other_warnings_still_count(self):
        other = ("[  300.00] WARNING: CPU: 0 PID: 1 at mm/memory.c:1 f+0x1/0x2\n"
                 + TAIL)
        r = guest.parse(log(tail=other), "rust", 0)
        self.assertEqual(len(r["known"]), 1)
        self.assertEqual(len(r["bad"]), 1)
        self.assertIn("mm/memory.c", r["bad"][0])


class Completeness(unittest.TestCase):
    def test_wrapped_dmesg_is_bad(self):
        r = guest.parse(log(head="MTJOB-BEGIN\nMTJOB-DMESG\n"), "rust", 0)
        self.assertTrue(any("printk buffer" in b for b in r["bad"]))

    def test_clean_log(self):
        r = guest.parse(HEAD + "[    1.0] hello\nMTJOB-END\n", "rust", 0)
        self.assertEqual((r["bad"], r["known"], r["ok"]), ([], [], True))


if __name__ == "__main__":
    unittest.main()
