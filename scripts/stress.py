#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The reliability campaign (make stress): parts that take longer than
'make check' can, each ending with 'stress: PART: N passed, N failed' and
the whole with 'stress: N passed, N failed'.

  random   the randomized KUnit suite (mtjob_random) with many more jobs
           and a new seed, on the main kernel
  kasan    a KASAN (generic) + UBSAN kernel (build/kbuild-7.3-kasan): an
           oops inside a scope (the KUnit case and oopstest; alone with
           --oops-only), KUnit, the boot tests, the free tests (not with
           --quick; those of 'make check' only with --free-quick), and fault
           injection (failslab and fail_page_alloc on GFP_NOWAIT
           allocations during teardowns)
  kcsan    a KCSAN kernel (build/kbuild-7.3-kcsan): KUnit and the free tests
           with the mm selftests (not with --quick; those of 'make check'
           only with --free-quick); a data race report that names our
           code, as a racing function or in either access's stack, fails
  hotplug  CPUs offlined and onlined for --hotplug-seconds while teardowns
           run at the lowest threshold (4 nodes x 2 vCPUs): munmap(),
           exit(), and the munmap() and MADV_DONTNEED of a live mm whose
           threads use the range's neighbours; each parallel path must
           have run
  server   a simulated large server: 8 nodes x 2 vCPUs x 64 GiB with each
           engine (deferred init, hugetlb 2M and 1G per node), the free
           tests on it, a node with memory and no CPU, numa=fake=8

With --zap-only, kasan and kcsan boot only the parallel zap's cases
(freetest --only zap: the exit's, and munmap() and MADV_DONTNEED of a live
mm) and the mm selftests at its lowest threshold, about 30 minutes each.

Logs go to build/logs/stress/.  Sanitizer kernels are built incrementally
in their own directories from tests/mtjob.kunitconfig plus
tests/stress-PART.config.
"""

import argparse
import copy
import os
import random
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import guest  # noqa: E402

REPO = guest.REPO
# The tree, build directory and LLVM suffix as the Makefile exports them.
TREE = os.environ.get("TREE", os.path.join(REPO, "build", "linux-7.3"))
KBUILD = os.environ.get("KBUILD", os.path.join(REPO, "build", "kbuild-7.3"))
LLVM = os.environ.get("LLVM", "-19")
KUNITCONFIG = os.path.join(REPO, "tests", "mtjob.kunitconfig")
QEMU_CONFIG = os.path.join(REPO, "tests", "qemu_configs", "x86_64_numa.py")
PARTS = ("random", "kasan", "kcsan", "hotplug", "server")
# Our code, as KCSAN names it in "BUG: KCSAN: data-race in A / B" and in
# the stack traces that follow.
OURS_RE = re.compile(r"mtjob|tlb_parallel|mmu_gather_parallel|"
                     r"parallel_free|\b(?:random_fn|rec_fn)\b|zap_parallel|"
                     r"unmap_vma_range")
# KASAN guests boot with 4-level paging.  On 7.3 with LA57 (QEMU's -cpu
# max), identify_cpu() clears boot_cpu_data's capabilities before reading
# them again, so pgtable_l5_enabled() (X86_FEATURE_LA57) is briefly false on
# the boot CPU; an interrupt in that window makes generic KASAN take every
# direct-map address (0xff11...) for a wild access, in handle_edge_irq()'s
# spin_lock(&desc->lock) at 0.004 s of boot, before any code of the series
# runs: seen in 2 of 10 boots (doc/results.md, "make stress on 7.3").
KASAN_APPEND = "no5lvl"
# A report, from its title to the line of "=" that closes it, however long
# its stacks (up to 64 frames each, kernel/kcsan/report.c).
KCSAN_RE = re.compile(r"BUG: KCSAN: [^\n]*\n.*?={20,}", re.S)


def run(cmd, log, timeout=None, cwd=None):
    """Run CMD, its output into LOG; return (exit code, output)."""
    with open(log, "w") as f:
        try:
            p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT,
                               cwd=cwd, timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = -1
    with open(log, errors="replace") as f:
        return rc, f.read()


def summary(out, name):
    """'NAME: N passed, N failed' of a guest.py command, as (p, f)."""
    m = re.search(rf"{name}: (\d+) passed, (\d+) failed", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 1)


def build(args, part, check):
    """Configure and build the PART kernel; return its build directory."""
    kbuild = f"{KBUILD}-{part}"
    frag = os.path.join(REPO, "tests", f"stress-{part}.config")
    t0 = time.monotonic()
    rc, out = run([sys.executable, "tools/testing/kunit/kunit.py", "config",
                   "--build_dir", kbuild, "--kunitconfig", KUNITCONFIG,
                   "--kunitconfig", frag, "--qemu_config", QEMU_CONFIG,
                   "--make_options", f"LLVM={LLVM}"],
                  os.path.join(args.logdir, f"{part}-config.log"), cwd=TREE)
    check(rc == 0, f"{part}: configured from tests/mtjob.kunitconfig and "
          f"tests/stress-{part}.config")
    if rc:
        return None
    rc, out = run(["make", "-C", TREE, f"O={kbuild}", f"LLVM={LLVM}",
                   f"-j{os.cpu_count() + 1}"],
                  os.path.join(args.logdir, f"{part}-build.log"))
    check(rc == 0, f"{part}: kernel built in {kbuild} "
          f"({time.monotonic() - t0:.0f} s)")
    return kbuild if rc == 0 else None


def kunit(args, part, kbuild, check, extra=(), glob=None):
    """KUnit on KBUILD; returns the guest's log."""
    cmd = [sys.executable, "tools/testing/kunit/kunit.py", "exec",
           "--build_dir", kbuild, "--kunitconfig", KUNITCONFIG,
           "--qemu_config", QEMU_CONFIG, "--timeout", "3000"]
    for a in extra:
        cmd += ["--kernel_args", a]
    if glob:
        cmd.append(glob)
    t0 = time.monotonic()
    rc, out = run(cmd, os.path.join(args.logdir, f"{part}-kunit.log"),
                  cwd=TREE)
    m = re.search(r"Ran (\d+) tests: passed: (\d+)(.*)", out)
    check(rc == 0 and m is not None, f"{part}: KUnit "
          f"{m.group(0) if m else 'did not complete'} "
          f"({time.monotonic() - t0:.0f} s)")
    try:
        with open(os.path.join(kbuild, "test.log"), errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def guest_cmd(args, part, name, kbuild, check, *extra, tag=""):
    """scripts/guest.py NAME on KBUILD; counts its checks into CHECK.  Its
    output in PART-NAME[-TAG].txt."""
    t0 = time.monotonic()
    rc, out = run([sys.executable, os.path.join(REPO, "scripts", "guest.py"),
                   name, "--kbuild", kbuild, "--engines", "rust,padata",
                   "--logdir", os.path.join(args.logdir, part), *extra],
                  os.path.join(args.logdir,
                               f"{part}-{name}{'-' + tag if tag else ''}.txt"))
    p, f = summary(out, name)
    check.add(p, f)
    check(rc == 0, f"{part}: {name}{' ' + tag if tag else ''}: {p} passed, "
          f"{f} failed ({time.monotonic() - t0:.0f} s)")


def guest_args(args, kbuild, nodes, cpus, mem, memonly=0,
               mm_selftests=False):
    g = copy.copy(args)
    g.kbuild, g.nodes, g.cpus, g.mem_gib, g.memonly = (kbuild, nodes, cpus,
                                                       mem, memonly)
    g.append, g.accel, g.timeout = "", "tcg", 600
    g.initrd = os.path.join(REPO, "build",
                            f"initramfs-{os.path.basename(kbuild)}.cpio")
    guest.make_initramfs(kbuild, g.initrd, mm_selftests=mm_selftests)
    return g


def boot_clean(check, what, g, extra, name):
    """Boot G on the Rust engine with EXTRA; it must finish with a clean
    log.  Returns the log, saved as NAME."""
    r, log = guest.boot(g, "rust", extra)
    path = guest.save_log(g, name, log)
    check(r["ok"] and not r["bad"], f"{what}: guest ran and powered off "
          f"cleanly ({r['wall']:.0f} s; {path})"
          + (f": {r['bad'][0]}" if r["bad"] else ""))
    return log


def free_cases(check, what, g, log, expect_counted=False):
    """Every FREECASE in LOG, from guest G: the workload succeeded, a
    parallel flush had at least two threads, and memory came back in each
    case and over the run (guest.free_memory_checks() with G's tolerance)."""
    cases = guest.FREECASE_RE.findall(log)
    check(bool(cases), f"{what}: {len(cases)} teardown cases ran")
    guest.free_memory_checks(check, f"{what}: ", cases,
                             guest.free_tolerance_kb(g))
    guest.held_checks(check, log, f"{what}: ")
    for name, rc, before, after, pf, pft, *_ in cases:
        rc, pf, pft = int(rc), int(pf), int(pft)
        check(rc == 0 and pft >= 2 * pf, f"{what}: {name}: rc={rc}, "
              f"{pf} parallel flushes with {pft} threads")
        if expect_counted:
            check(pf >= 1, f"{what}: {name}: the parallel path ran ({pf})")
    # exit_mmap()'s parallel zap (free.sh's zap_cases, with the free tests).
    zaps = guest.ZAPCASE_RE.findall(log)
    guest.free_memory_checks(check, f"{what}: ", zaps,
                             guest.free_tolerance_kb(g))
    for name, rc, before, after, pz, pzt, *_ in zaps:
        rc, pz, pzt = int(rc), int(pz), int(pzt)
        check(rc == 0 and pzt >= 2 * pz, f"{what}: {name}: rc={rc}, "
              f"{pz} parallel zaps with {pzt} threads")


def part_random(args, check):
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    print(f"stress: random: seed {seed}, {args.jobs} jobs a case", flush=True)
    log = kunit(args, "random", args.kbuild, check,
                extra=(f"mtjob_random_test.seed={seed}",
                       f"mtjob_random_test.jobs={args.jobs}"),
                glob="mtjob_random*")
    check(f"{args.jobs} jobs, seed {seed}" in log,
          f"random: the run used seed {seed} and {args.jobs} jobs")
    bad = [x for x in log.splitlines() if re.search(r"BUG:|WARNING:", x)]
    check(not bad, "random: no BUG/WARNING" + (f": {bad[0]}" if bad else ""))


def zap_only_kasan(args, check, kbuild):
    """--zap-only on KASAN: the zap's cases (exit, munmap() and
    MADV_DONTNEED of a live mm) and the mm selftests at its lowest
    threshold; guest.py fails on any report (a BUG line)."""
    guest_cmd(args, "kasan", "freetest", kbuild, check, "--only", "zap",
              "--timeout", "5400", "--append", KASAN_APPEND, tag="zap")
    guest_cmd(args, "kasan", "freetest", kbuild, check, "--only",
              "selftests", "--quick", "--timeout", "5400", "--append",
              KASAN_APPEND, tag="selftests")


def zap_only_kcsan(args, check, kbuild):
    """--zap-only on KCSAN: the same two boots; a report naming our code
    fails, the others are listed."""
    for mode, name in ((f"mttest.free=zap {guest.zap_skip_param(kbuild)}",
                        "zap"),
                       (guest.free_params(True).replace(
                           "mttest.free=quick", "mttest.free=selftest")
                        + " mttest.selftest_reps=1 "
                        + guest.hugetlb_selftest_param(kbuild), "selftests")):
        g = guest_args(args, kbuild, 2, 4, 8, mm_selftests=True)
        g.timeout, g.quick = 5400, True
        r, log = guest.boot(g, "rust", mode)
        path = guest.save_log(g, f"kcsan-{name}.log", log)
        ours, others = kcsan_reports(log)
        check(r["ok"], f"kcsan: {name}: ran ({r['wall']:.0f} s; {path})")
        check(not ours, f"kcsan: {name}: no data race in our code "
              f"({len(ours)}{': ' + ours[0] if ours else ''}; "
              f"{len(others)} elsewhere)")
        for x in sorted(set(others)):
            print(f"  kcsan (not ours): {x}")
        if name == "zap":
            # freetest --only zap's checks: every case of ZAP_CASES.
            guest.zap_checks(check, log, g)
        else:
            guest.mm_selftest_checks(check, log, True, kbuild)


def oops_kasan(args, check, kbuild):
    """Issue 47's oops cases on KASAN: a thread that oopses with a scope
    open is parked and its stack kept while work items still write to it,
    so a use of that stack after a free or a rewind would be reported.
    The KUnit case (make check's scope-oops stage) and an oops in a chunk
    of a live munmap()'s parallel zap, of its caller and of a helper
    (oops-park, guest.py oopstest, whose checks include "no KASAN
    report")."""
    # kunit.py's exit code is not the verdict here: the parser sees the
    # oops.  The case's own result line is (as in make check).
    _, out = run([sys.executable, "tools/testing/kunit/kunit.py", "exec",
                  "--build_dir", kbuild, "--kunitconfig", KUNITCONFIG,
                  "--qemu_config", QEMU_CONFIG, "--timeout", "1800",
                  "--kernel_args", KASAN_APPEND, "--kernel_args",
                  "mtjob_test.oops_in_scope=1 panic=1",
                  "mtjob.mtjob_test_oops_in_scope"],
                 os.path.join(args.logdir, "kasan-oops-kunit.log"), cwd=TREE)
    try:
        with open(os.path.join(kbuild, "test.log"), errors="replace") as f:
            log = f.read()
    except OSError:
        log = ""
    check(re.search(r"^\s*ok 1 mtjob_test_oops_in_scope|\[PASSED\] "
                    r"mtjob_test_oops_in_scope", out + log, re.M) is not None,
          "kasan: scope oops: the KUnit case passed")
    # Generic KASAN on x86_64: the shadow check of the NULL access faults
    # first ("general protection fault ... KASAN: null-ptr-deref").
    check(re.search(r"(BUG: kernel|Unable to handle kernel) NULL pointer "
                    r"dereference|KASAN: null-ptr-deref in range", log)
          is not None,
          "kasan: scope oops: the oops in the caller's chunk fired")
    parked = re.search(r".*parked: exit_state.*", log)
    check("died with its stack lent to work items: parked" in log,
          "kasan: scope oops: the caller was parked"
          + (f" ({parked.group(0).strip()})" if parked else ""))
    check("Kernel panic" not in log, "kasan: scope oops: no panic")
    bad = [x for x in log.splitlines() if re.search(r"BUG: KASAN|UBSAN:", x)]
    check(not bad, "kasan: scope oops: no KASAN/UBSAN report"
          + (f": {bad[0]}" if bad else ""))
    guest_cmd(args, "kasan", "oopstest", kbuild, check, "--cpus", "2",
              "--nodes", "2", "--mem", "4", "--timeout", "1800",
              "--append", KASAN_APPEND)


def part_kasan(args, check):
    kbuild = build(args, "kasan", check)
    if not kbuild:
        return
    oops_kasan(args, check, kbuild)
    if args.oops_only:
        return
    if args.zap_only:
        return zap_only_kasan(args, check, kbuild)
    log = kunit(args, "kasan", kbuild, check, extra=(KASAN_APPEND,))
    bad = [x for x in log.splitlines()
           if re.search(r"BUG: KASAN|UBSAN:|WARNING:", x)]
    check(not bad, "kasan: no KASAN/UBSAN report or WARNING in KUnit"
          + (f": {bad[0]}" if bad else ""))
    guest_cmd(args, "kasan", "boottest", kbuild, check,
              "--append", KASAN_APPEND)
    if not args.quick:
        # KASAN under TCG: several times the normal 6 minutes.
        guest_cmd(args, "kasan", "freetest", kbuild, check, "--timeout",
                  "7200", "--append", KASAN_APPEND,
                  *(["--quick"] if args.free_quick else []))
    # Fault injection during teardowns, parallel free at its lowest
    # threshold.
    g = guest_args(args, kbuild, 2, 4, 8)
    g.append = KASAN_APPEND
    g.timeout = 3600
    log = boot_clean(check, "faults", g, "mttest.free=faults", "faults.log")
    free_cases(check, "faults", g, log)
    pff = sum(int(c[6]) for c in guest.FREECASE_RE.findall(log))
    check(pff > 0, f"faults: flushes at the threshold fell back to the "
          f"caller alone when allocations failed ({pff})")
    m = re.search(r"FAULTS fail_page_alloc=(\d+) failslab=(\d+)", log)
    check(m is not None and int(m.group(1)) > 0 and int(m.group(2)) > 0,
          f"faults: failures were injected "
          f"({m.group(0) if m else 'no FAULTS line'})")


def kcsan_reports(log):
    """(ours, others): the first lines of the KCSAN reports in LOG that
    name our code anywhere (the racing functions, "data-race in A / B", or
    a stack of either access: two parallel zappers racing in upstream's
    zap_pte_range() are ours), and of the rest."""
    ours, others = [], []
    for m in KCSAN_RE.finditer(log):
        first = m.group(0).splitlines()[0]
        (ours if OURS_RE.search(m.group(0)) else others).append(first)
    # A title without its closing line (a cut log) is ours: it cannot be
    # told apart.
    cut = log.count("BUG: KCSAN: ") - len(ours) - len(others)
    ours += ["BUG: KCSAN: a report without its end"] * cut
    return ours, others


def part_kcsan(args, check):
    kbuild = build(args, "kcsan", check)
    if not kbuild:
        return
    if args.zap_only:
        return zap_only_kcsan(args, check, kbuild)
    log = kunit(args, "kcsan", kbuild, check)
    ours, others = kcsan_reports(log)
    check(not ours, f"kcsan: no data race in our code during KUnit "
          f"({len(ours)}{': ' + ours[0] if ours else ''}; {len(others)} "
          "elsewhere)")
    for x in sorted(set(others)):
        print(f"  kcsan (not ours): {x}")
    if args.quick:
        return
    g = guest_args(args, kbuild, 2, 4, 8, mm_selftests=True)
    g.timeout = 7200
    r, log = guest.boot(g, "rust", guest.free_params(args.free_quick))
    path = guest.save_log(g, "kcsan-free.log", log)
    ours, others = kcsan_reports(log)
    check(r["ok"], f"kcsan: the free tests ran ({r['wall']:.0f} s; {path})")
    check(not ours, f"kcsan: no data race in our code during the free tests "
          f"({len(ours)}{': ' + ours[0] if ours else ''}; {len(others)} "
          "elsewhere)")
    for x in sorted(set(others)):
        print(f"  kcsan (not ours): {x}")
    free_cases(check, "kcsan", g, log)
    guest.node_low_checks(check, log)
    guest.mm_selftest_checks(check, log, args.free_quick)


def part_hotplug(args, check):
    g = guest_args(args, args.kbuild, 4, 8, 8)
    g.timeout = args.hotplug_seconds + 1200
    if args.hotplug_control or args.hotplug_control_only:
        # The same with the parallel free off: whatever its log shows does
        # not come from the parallel free.
        r, log = guest.boot(g, "rust", "mttest.free=hotplug-serial "
                            f"mttest.hotplug_seconds={args.hotplug_seconds}")
        path = guest.save_log(g, "hotplug-serial.log", log)
        m = guest.FREEHOTPLUG_RE.search(log)
        print(f"stress: hotplug: control run, parallel free off: "
              f"{m.group(1) if m else 0} cycles, "
              f"{'log: ' + r['bad'][0] if r['bad'] else 'clean log'} "
              f"({path})", flush=True)
        check(r["ok"] and m is not None and int(m.group(1)) > 0,
              "hotplug: the control run (parallel free off) ran")
        check(not r["bad"], "hotplug: the control run's log is clean"
              + (f": {r['bad'][0]}" if r["bad"] else ""))
        if args.hotplug_control_only:
            return
    r, log = guest.boot(g, "rust", "mttest.free=hotplug "
                        f"mttest.hotplug_seconds={args.hotplug_seconds}")
    path = guest.save_log(g, "hotplug.log", log)
    m = guest.FREEHOTPLUG_RE.search(log)
    check(r["ok"] and m is not None and int(m.group(1)) > 0,
          f"hotplug: CPUs 1-7 offlined and onlined {m.group(1) if m else 0} "
          f"times in {args.hotplug_seconds} s of teardowns ({path})")
    check(not r["bad"], "hotplug: clean log"
          + (f": {r['bad'][0]}" if r["bad"] else ""))
    live, lthreads = (int(m.group(4)), int(m.group(5))) if m else (0, 0)
    check(live >= 1 and lthreads >= 2 * live, f"hotplug: {live} munmap()s "
          f"and MADV_DONTNEEDs of a live mm zapped in parallel with "
          f"{lthreads} threads meanwhile")
    zaps, threads = (int(m.group(2)), int(m.group(3))) if m else (0, 0)
    check(zaps >= 1 and threads >= 2 * zaps, f"hotplug: {zaps} exits "
          f"zapped in parallel with {threads} threads meanwhile")
    free_cases(check, "hotplug", g, log, expect_counted=True)


def server_boot(args, check, what, g, engines, extra=""):
    """Boot G with each engine; deferred init and its pages per node."""
    res = {}
    for e in engines:
        t0 = time.monotonic()
        r, log = guest.boot(g, e, extra)
        path = guest.save_log(g, f"{what}-{e}.log", log)
        res[e] = r
        want = g.nodes + g.memonly if "numa=fake" not in extra else 8
        check(r["ok"] and not r["bad"], f"{what}: {e}: booted cleanly "
              f"({time.monotonic() - t0:.0f} s; {path})"
              + (f": {r['bad'][0]}" if r["bad"] else ""))
        check(len(r["nodes"]) == want and all(
            n["engine"] == e for n in r["nodes"].values()),
            f"{what}: {e}: deferred init of {want} nodes on {e}: "
            + ", ".join(f"node {k} {v['pages']} pages {v['us']} us "
                        f"{v['threads']} threads"
                        for k, v in sorted(r["nodes"].items())))
    first = engines[0]
    for e in engines[1:]:
        a, b = guest.deferred_total(res[first]), guest.deferred_total(res[e])
        check(a == b and bool(a), f"{what}: {first} vs {e}: identical "
              "deferred pages per node")
    return res


def part_server(args, check):
    engines = ["rust", "padata", "serial"]
    g = guest_args(args, args.kbuild, 8, 16, 64)
    g.timeout = 1800
    per_node_2m = ",".join(f"{n}:64" for n in range(8))
    per_node_1g = ",".join(f"{n}:1" for n in range(8))
    # Allocated and counted, not touched (mttest.notouch): the host has
    # less memory than the guest.
    huge = (f"hugepagesz=1G hugepages={per_node_1g} hugepagesz=2M "
            f"hugepages={per_node_2m} mttest.notouch")
    res = server_boot(args, check, "server-8x2x64", g, engines, huge)
    for e, r in res.items():
        check(r["huge"].get(2048) == {n: 64 for n in range(8)} and
              r["huge"].get(1048576) == {n: 1 for n in range(8)},
              f"server: {e}: 64 2M and one 1G page on each of the 8 nodes "
              f"({r['huge']})")
    # The free tests on the big guest: workloads, memory, thread counts.
    g.timeout = 3600
    log = boot_clean(check, "server: free tests", g, "mttest.free=test",
                     "server-free.log")
    free_cases(check, "server", g, log)
    # A node with memory and no CPU next to two with CPUs.
    g = guest_args(args, args.kbuild, 2, 2, 12, memonly=1)
    g.timeout = 600
    server_boot(args, check, "memory-only-node", g, engines)
    # numa=fake=8 on one real node.
    g = guest_args(args, args.kbuild, 1, 2, 16)
    g.timeout = 600
    server_boot(args, check, "numa-fake-8", g, engines, "numa=fake=8")


class Checks(guest.Checks):
    def add(self, passed, failed):
        self.passed += passed
        self.failed += failed


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("parts", nargs="*", default=list(PARTS),
                    help=f"parts to run (default: all of {', '.join(PARTS)})")
    ap.add_argument("--kbuild", default=KBUILD)
    ap.add_argument("--seed", type=int, default=None,
                    help="random: seed (default: a new one, printed)")
    ap.add_argument("--jobs", type=int, default=100000,
                    help="random: jobs per case")
    ap.add_argument("--hotplug-seconds", type=int, default=600)
    ap.add_argument("--hotplug-control", action="store_true",
                    help="hotplug: first the same run with the parallel "
                    "free off, for telling what its log shows apart")
    ap.add_argument("--hotplug-control-only", action="store_true",
                    help="hotplug: only that control run (to run it next "
                    "to a plain hotplug run, under the same load)")
    ap.add_argument("--quick", action="store_true",
                    help="kasan/kcsan: KUnit, boot tests and fault "
                    "injection only, no free tests (about 25 minutes less)")
    ap.add_argument("--free-quick", action="store_true",
                    help="kasan/kcsan: the free tests as 'make check' runs "
                    "them (freetest --quick: 44 of the 52 parallel zap cases "
                    "and the mm selftests)")
    ap.add_argument("--zap-only", action="store_true",
                    help="kasan/kcsan: only the parallel zap's cases (the "
                    "exit's, and munmap() and MADV_DONTNEED of a live mm) "
                    "and the mm selftests at its lowest threshold, no "
                    "KUnit, boot or free tests (about an hour less)")
    ap.add_argument("--oops-only", action="store_true",
                    help="kasan: only the oops cases (the KUnit scope oops "
                    "and guest.py oopstest), which every kasan run starts "
                    "with")
    ap.add_argument("--logdir", default=os.path.join(REPO, "build", "logs",
                                                     "stress"))
    args = ap.parse_args()
    for p in args.parts:
        if p not in PARTS:
            guest.die(f"unknown part {p!r}: {', '.join(PARTS)}")
    os.makedirs(args.logdir, exist_ok=True)
    total = Checks()
    for p in args.parts:
        t0 = time.monotonic()
        print(f"stress: {p}: started", flush=True)
        check = Checks()
        globals()[f"part_{p}"](args, check)
        print(f"stress: {p}: {check.passed} passed, {check.failed} failed "
              f"({time.monotonic() - t0:.0f} s)", flush=True)
        total.add(check.passed, check.failed)
    print(f"stress: {total.passed} passed, {total.failed} failed")
    sys.exit(1 if total.failed else 0)


if __name__ == "__main__":
    main()
