#!/usr/bin/env python3
"""Unit tests of scripts/series.py's cover letter references.

make check runs them in its "harness" stage; its "checkpatch" stage
resolves the cover letter against the series itself (series.py fails when a
reference does not resolve).
"""
import contextlib
import io
import os
import re
import sys
import unittest

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(REPO, "scripts"))
import series  # noqa: E402

TITLES = ["rust: add kernel::mtjob", "kernel: add mtjob_run()",
          "mm: free the pages of large teardowns in parallel",
          "mm: count parallel teardown frees in /proc/vmstat"]
ADDED = {(2, "mm/a.c"): ["int helpers;"],
         (3, "include/linux/vm_event_item.h"): ["\t\tTLB_PARALLEL_FREE,"]}


def added(k, fpath):
    return ADDED.get((k, fpath), [])


def files(name):
    return {"mm/a.c": "#define HELPERS\t2\nstatic int x;\n"}[name]


FACTS = {"helpers": ("mm/a.c", r"^#define HELPERS\t(\d+)$"),
         "lines": ("mm/a.c", r"count:^\S")}


def resolve(text, read=files):
    """series.resolve_cover() on TEXT; series.die()'s message is kept out of
    the test's output (it goes with the SystemExit the failing cases
    expect)."""
    with contextlib.redirect_stderr(io.StringIO()):
        return series.resolve_cover(text, TITLES, added, read, FACTS)


class ResolveCover(unittest.TestCase):
    def test_numbers_and_facts(self):
        self.assertEqual(
            resolve("patch {patch:kernel::mtjob}, patches "
                    "{patch:mtjob_run()}-{patch+include/linux/vm_event_item.h:"
                    "TLB_PARALLEL_FREE,}: {fact:helpers} per node, "
                    "{fact:lines} lines"),
            "patch 1, patches 2-4: 2 per node, 2 lines")

    def test_first_patch_that_adds(self):
        self.assertEqual(resolve("{patch+mm/a.c:helpers}"), "3")

    def test_number_by_hand(self):
        for text in ("as patch 3 does", "Patches 1-3 and 10",
                     "{patch:mtjob_run()} and patch 4"):
            with self.assertRaises(SystemExit, msg=text):
                resolve(text)

    def test_title_not_one(self):
        for text in ("{patch:mm:}", "{patch:no such title}"):
            with self.assertRaises(SystemExit, msg=text):
                resolve(text)

    def test_nothing_adds(self):
        with self.assertRaises(SystemExit):
            resolve("{patch+mm/a.c:^no such line}")

    def test_fact_gone(self):
        with self.assertRaises(SystemExit):
            resolve("{fact:helpers}", lambda n: "#define HELPERS 2\n")
        with self.assertRaises(SystemExit):
            resolve("{fact:unknown}")


class RealCover(unittest.TestCase):
    """series/cover-letter.txt against series.conf and the overlay's files.

    Without a kernel tree: a {patch+FILE:REGEX} only has to match a line the
    overlay adds to FILE (which patch adds it is the checkpatch stage's
    run), a fact is read from the overlay's own files.
    """

    def test_resolves(self):
        titles = [p.title for p in series.parse_conf(
            os.path.join(REPO, "series", "series.conf"))]

        def overlay_added(k, fpath):
            path = os.path.join(REPO, fpath)
            if os.path.exists(path):
                with open(path) as f:
                    return f.read().split("\n")
            with open(path + ".patch") as f:
                return [ln[1:] for ln in f.read().split("\n")
                        if ln.startswith("+") and not ln.startswith("+++")]

        def read(fpath):
            with open(os.path.join(REPO, fpath)) as f:
                return f.read()
        series.OVERLAY = REPO
        with open(os.path.join(REPO, "series", "cover-letter.txt")) as f:
            text = f.read()
        out = series.resolve_cover(text, titles, overlay_added, read,
                                   series.read_facts())
        self.assertNotIn("{patch", out)
        self.assertNotIn("{fact:", out)
        self.assertTrue(re.search(r"patches \d+-\d+", out))


if __name__ == "__main__":
    unittest.main()
