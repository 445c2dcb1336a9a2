#!/usr/bin/env python3
"""Unit tests of what scripts/guest.py and scripts/configs.py decide per
architecture and configuration (python3 -m unittest; make check's
"harness" stage): which guest a build boots, which mm selftests it can run,
which warnings of the configuration matrix are the series', which TLBI
counts of arm64's freebench --tlbi belong to which run.
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scripts"))
import configs  # noqa: E402
import freebench  # noqa: E402
import guest  # noqa: E402


def kbuild_with(config):
    d = tempfile.mkdtemp()
    with open(os.path.join(d, ".config"), "w") as f:
        f.write(config)
    return d


class GuestArch(unittest.TestCase):
    def test_arm64_build_boots_aarch64(self):
        kb = kbuild_with("CONFIG_ARM64=y\nCONFIG_MEM_SOFT_DIRTY is not set\n")
        self.assertEqual(guest.guest_arch(kb), "arm64")
        self.assertEqual(guest.ARCHES["arm64"]["qemu"], "qemu-system-aarch64")
        self.assertNotIn("soft-dirty", guest.mm_selftests(kb))
        self.assertIn("cow", guest.mm_selftests(kb))

    def test_x86_build_keeps_soft_dirty(self):
        kb = kbuild_with("CONFIG_X86_64=y\nCONFIG_MEM_SOFT_DIRTY=y\n"
                         "CONFIG_TEST_HMM=y\n")
        self.assertEqual(guest.guest_arch(kb), "x86_64")
        self.assertEqual(guest.mm_selftests(kb), list(guest.MM_SELFTESTS))
        self.assertEqual(guest.zap_skips(kb), {})

    def test_64k_build_skips_hmm_and_mremap(self):
        kb = kbuild_with("CONFIG_ARM64=y\nCONFIG_ARM64_64K_PAGES=y\n")
        self.assertEqual(guest.page_kb(kb), 64)
        self.assertNotIn("hmm-tests", guest.mm_selftests(kb))
        self.assertNotIn("cow", guest.mm_selftests(kb))
        self.assertEqual(set(guest.zap_skips(kb)), {"zap-hmm", "zap-mremap"})
        self.assertEqual(guest.zap_skip_param(kb),
                         "mttest.zap_skip=zap-hmm,zap-mremap")


class MatrixWarnings(unittest.TestCase):
    def test_compiler_warning_is_read(self):
        text = ("mm/zap_parallel.c:120:5: warning: no previous prototype "
                "for function 'f' [-Wmissing-prototypes]\n")
        m = configs.WARNING_RE.search(text)
        self.assertEqual((m[1], m[2], m[3]), ("mm/zap_parallel.c", "120",
                                              "warning"))

    def test_cocci_report_becomes_a_warning(self):
        text = ("/t/mm/zap_parallel.c:88:8-10: WARNING: Unsigned "
                "expression compared with zero: n < 0\n")
        out = configs.cocci_findings(text)
        m = configs.WARNING_RE.search(out)
        self.assertIsNotNone(m)
        self.assertEqual(m[2], "88")
        self.assertIn("coccicheck", m[4])

    def test_entries_are_unique_and_known_arches(self):
        names = [e[0] for e in configs.ENTRIES]
        self.assertEqual(len(names), len(set(names)))
        self.assertTrue(all(e[1] in ("x86_64", "arm64")
                            for e in configs.ENTRIES))
        for _, _, opts, _ in configs.ENTRIES:
            self.assertTrue(all(f in ("-e", "-d") for f in opts[::2]))


class TlbiCounts(unittest.TestCase):
    LOG = ("TLBICOUNT mm=1 va=2 range=0 all=0 local=3 other=0\n"
           "FREE exit mib=256 thp=0 us=10\n"
           "BENCH off FREE exit mib=256 thp=0 us=503000\n"
           "TLBICOUNT mm=0 va=42 range=25 all=0 local=0 other=0\n"
           "BENCH-FAILED off munmap 256\n"
           "BENCH off FREE munmap mib=256 thp=0 us=1\n"
           "[   12.3] console TLBICOUNT mm=0 va=2 range=8 all=1 local=0 "
           "other=0\n"
           "BENCH by_node FREE munmap mib=256 thp=1 us=510000\n")

    def test_a_count_goes_to_the_next_run(self):
        got = freebench.tlbis(self.LOG)
        self.assertEqual(got[("exit", 256, "off")],
                         [{"mm": 1, "va": 2, "range": 0, "all": 0,
                           "local": 3, "other": 0, "bcast": 3}])
        # A line QEMU's log wrote into the middle of the console's.
        self.assertEqual(got[("munmap THP", 256, "by_node")][0]["bcast"], 11)

    def test_a_failed_run_drops_its_count(self):
        self.assertNotIn(("munmap", 256, "off"), freebench.tlbis(self.LOG))

    def test_tlbi_needs_an_arm64_kernel(self):
        kb = kbuild_with("CONFIG_X86_64=y\n")
        with self.assertRaises(SystemExit):
            guest.tlbi_plugin(type("A", (), {"kbuild": kb})())


if __name__ == "__main__":
    unittest.main()
