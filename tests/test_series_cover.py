#!/usr/bin/env python3
"""Unit tests of scripts/series.py's cover letter references (and of the
range of patches its --build builds).

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
                     "{patch:mtjob_run()} and patch 4", "the patch\n4",
                     "patches {patch:kernel::mtjob}-{patch:mtjob_run()} "
                     "and 3", "{patch:kernel::mtjob}-4"):
            with self.assertRaises(SystemExit, msg=text):
                resolve(text)
        self.assertEqual(resolve("patch {patch:kernel::mtjob} adds 2 types"),
                         "patch 1 adds 2 types")

    def test_changelog(self):
        def changelog(text):
            with contextlib.redirect_stderr(io.StringIO()):
                return series.resolve_cover(text, TITLES, None, None, {},
                                            "changelog")
        self.assertEqual(changelog("before patch\n{patch:mtjob_run()}"),
                         "before patch\n2")
        for text in ("before patch\n2", "{patch+mm/a.c:helpers}",
                     "{fact:helpers}"):
            with self.assertRaises(SystemExit, msg=text):
                changelog(text)

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

    def test_fact_once_with_one_group(self):
        twice = "#define HELPERS\t2\n#define HELPERS\t4\n"
        with self.assertRaises(SystemExit):
            resolve("{fact:helpers}", lambda n: twice)
        with self.assertRaises(SystemExit):
            with contextlib.redirect_stderr(io.StringIO()):
                series.resolve_cover("{fact:x}", TITLES, added, files,
                                     {"x": ("mm/a.c", r"^static int x;$")})

    def test_tooling_files_from_the_repository(self):
        with self.assertRaises(OSError):
            series.read_final("/nonexistent", "mm/mmu_gather_parallel.c")
        self.assertIn("def read_final",
                      series.read_final("/nonexistent", "scripts/series.py"))


class StaleClaims(unittest.TestCase):
    """assign_added() records the claims that took a line; build_series()
    fails on the others (a stale claim once left a call in the patch before
    the one defining its function)."""

    def test_used(self):
        a, b = series.Patch("a"), series.Patch("b")
        b.claims = [("mm/a.c", re.compile(r"^\thold\(tlb, pages\);$"), None,
                     False),
                    ("mm/a.c", re.compile(r"^\thold\(tlb, freeable\);$"),
                     None, False)]
        series.USED.clear()
        self.addCleanup(series.USED.clear)
        owners = series.assign_added([a, b], "mm/a.c", 0,
                                     ["int x;\n", "\thold(tlb, freeable);\n"])
        self.assertEqual(owners, [0, 1])
        self.assertEqual(series.USED,
                         {(1, "mm/a.c", r"^\thold\(tlb, freeable\);$")})


class Stages(unittest.TestCase):
    """How series.py splits one file's changes between patches."""

    def setUp(self):
        series.USED.clear()
        self.addCleanup(series.USED.clear)
        series.OPTIONS.add("braces-do-not-anchor")
        self.addCleanup(series.OPTIONS.discard, "braces-do-not-anchor")

    def test_claim_once(self):
        """claim-once takes the first block that its start matches, a
        claim every one (two functions, each opening with "/**")."""
        lines = ["/**\n", " * a\n", " */\n", "void a(void)\n", "{\n",
                 "}\n", "\n", "/**\n", " * b\n", " */\n", "void b(void)\n",
                 "{\n", "}\n", "\n"]
        for once, want in ((True, [1] * 7 + [0] * 7), (False, [1] * 14)):
            a, b = series.Patch("a"), series.Patch("b")
            b.claims = [("k.c", re.compile(r"^/\*\*$"), re.compile(r"^$"),
                         once)]
            self.assertEqual(series.assign_added([a, b], "k.c", 0, lines),
                             want, f"once={once}")

    def test_brace_run_between_two_blocks(self):
        """A run of braces and blanks of a third patch between blocks of
        two others opens the later block; a claim's own closing lines and
        runs at either end keep their patch."""
        lines = ["x\n", "}\n", "\n", "y\n", "z\n", "}\n"]
        self.assertEqual(
            series.trivial_to_next(lines, [1, 0, 0, 2, 2, 0], 0),
            [1, 2, 2, 2, 2, 0])
        self.assertEqual(
            series.trivial_to_next(lines, [1, 1, 1, 2, 2, 0], 0),
            [1, 1, 1, 2, 2, 0])
        self.assertEqual(
            series.trivial_to_next(lines, [1, 0, 0, 1, 1, 0], 0),
            [1, 0, 0, 1, 1, 0])

    def test_owner_closes_its_own_function(self):
        """The owner opens a function, a claim takes a line inside it, a
        later patch adds a function after: the owner's "}" stays its own
        (it adds more than braces there)."""
        base = b"int g;\n"
        final = (b"int g;\nvoid f(void)\n{\n\tsetup();\n\treport();\n}\n"
                 b"\nvoid h(void)\n{\n\th();\n}\n")
        a, b, c = (series.Patch(t) for t in "abc")
        b.claims = [("f.c", re.compile(r"^\treport"), re.compile(r"^\treport"),
                     False)]
        c.claims = [("f.c", re.compile(r"^void h"), None, False)]
        st = series.stage_contents([a, b, c], "/nonexistent", "f.c", 0,
                                   final, base)
        for k in range(3):
            text = st[k].decode()
            self.assertEqual(text.count("{"), text.count("}"), (k, text))
        self.assertEqual(st[2], final)

    def test_owner_braces_go_with_the_replacement(self):
        """A statement a later patch rewrites as a block, the owner's only
        line there its closing brace: the owner's stage keeps the old
        statement and no stray brace."""
        base = b"void f(void)\n{\n\tif (a)\n\t\told();\n}\n"
        final = (b"void f(void)\n{\n\tif (a) {\n\t\tnew();\n"
                 b"\t\tmore();\n\t}\n}\n")
        a, b = series.Patch("a"), series.Patch("b")
        b.claims = [("g.c", re.compile(r"^\tif \(a\) \{$"),
                     re.compile(r"^\t\tmore"), False)]
        st = series.stage_contents([a, b], "/nonexistent", "g.c", 0,
                                   final, base)
        self.assertEqual(st[0], base)
        self.assertEqual(st[1], final)

    def test_replaced_body_goes_with_its_replacement(self):
        """A function whose body a later patch replaces (b), while the
        file's owner (a) only has brace lines there, keeps its old body
        until that patch: a's stage still compiles."""
        base = b"fn f() {\n    old();\n}\n\nfn g() {}\n"
        final = (b"fn f() {\n    new();\n}\n\nfn h() {\n    h();\n}\n"
                 b"\nfn g() {}\n")
        a, b, c = (series.Patch(t) for t in "abc")
        b.claims = [("r.rs", re.compile(r"^    new\(\);$"),
                     re.compile(r"^    new"), False)]
        c.claims = [("r.rs", re.compile(r"^fn h\(\)"), re.compile(r"^    h"),
                     False)]
        st = series.stage_contents([a, b, c], "/nonexistent", "r.rs", 0,
                                   final, base)
        self.assertEqual(st[0], base)
        self.assertEqual(st[1], b"fn f() {\n    new();\n}\n\nfn g() {}\n")
        self.assertEqual(st[2], final)


class BuildRange(unittest.TestCase):
    """build_end(): which patches --first, --last and --skip-last build."""

    def end(self, *args):
        with contextlib.redirect_stderr(io.StringIO()):
            return series.build_end(*args)

    def test_ranges(self):
        self.assertEqual(self.end(28, 1, None, False), 28)
        self.assertEqual(self.end(28, 1, None, True), 27)
        self.assertEqual(self.end(28, 13, 16, True), 16)
        self.assertEqual(self.end(28, 27, 28, True), 27)

    def test_nothing_to_build(self):
        for args in [(28, 28, None, True), (28, 1, 29, False),
                     (28, 17, 16, False)]:
            with self.assertRaises(SystemExit, msg=args):
                self.end(*args)


class RealCover(unittest.TestCase):
    """series/cover-letter.txt and series.conf's changelogs, without a tree.

    A {patch+FILE:REGEX} resolves to the first patch that lists or claims
    FILE in series.conf and whose overlay version of FILE has a matching
    added line (an approximation: which patch adds the line in the real
    series is the checkpatch stage's run of series.py); a fact is read from
    the overlay's own files.
    """

    def test_resolves(self):
        patches = series.parse_conf(os.path.join(REPO, "series",
                                                 "series.conf"))
        titles = [p.title for p in patches]

        def overlay_added(k, fpath):
            p = patches[k]
            if (fpath not in p.files and
                    not any(c[0] == fpath for c in p.claims)):
                return []
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
        old = series.OVERLAY
        self.addCleanup(setattr, series, "OVERLAY", old)
        series.OVERLAY = REPO
        with open(os.path.join(REPO, "series", "cover-letter.txt")) as f:
            text = f.read()
        out = series.resolve_cover(text, titles, overlay_added, read,
                                   series.read_facts())
        self.assertNotIn("{patch", out)
        self.assertNotIn("{fact:", out)
        numbers = [int(n) for n in re.findall(r"(?i)\bpatch(?:es)? (\d+)",
                                              out)]
        self.assertTrue(numbers)
        self.assertTrue(all(1 <= n <= len(titles) for n in numbers))
        for p in patches:
            body = series.resolve_cover(p.body, titles, None, None, {},
                                        p.title)
            self.assertNotIn("{patch", body)


if __name__ == "__main__":
    unittest.main()
