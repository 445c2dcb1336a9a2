#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Boot the project's kernel in a QEMU NUMA guest and report or test.

  guest.py run       boot each engine in turn, --repeat times: deferred init,
                     boot-time hugetlb and teardowns side by side, with
                     spreads and verdicts (scripts/runreport.py)
  guest.py boottest  boot with each engine and check that deferred struct page
                     init went through it with identical results
  guest.py hugetlbtest  boot-time hugetlb scenarios with each engine, checked
                     from sysfs in the guest and compared between engines
  guest.py hugetlbbench  hugetlb boot allocation time per engine, repeated

The guest userspace is an initramfs made with the kernel's own
usr/gen_init_cpio from busybox-static and tests/guest/init.  QEMU runs with
TCG (KVM hangs on the machines this was written on; --accel kvm to try it).
"""

import argparse
import copy
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import benchplot
import freebench
import runreport

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What differs between the guests of each architecture the kernel may be
# built for (guest_arch() reads it from the build's .config).  arm64
# (issue 37): QEMU's 'virt' machine with GICv3, whose device tree carries
# the -numa layout; its user space is cross-compiled with Debian's
# gcc-aarch64-linux-gnu and libc6-dev-arm64-cross, and its busybox is
# busybox-static:arm64 unpacked by 'make setup' (scripts/setup.sh).
ARCHES = {
    "x86_64": {"qemu": "qemu-system-x86_64", "machine": [],
               "kernel": "arch/x86/boot/bzImage", "console": "ttyS0",
               "cc": "gcc", "busybox": "/bin/busybox", "srcarch": "x86",
               "setup": "apt-get install busybox-static"},
    # pauth-impdef=on: '-cpu max' with a cheap pointer-authentication
    # algorithm instead of QARMA5, which TCG emulates in every function's
    # prologue and epilogue (its gain here is not measured on its own).
    "arm64": {"qemu": "qemu-system-aarch64",
              "machine": ["-machine", "virt,gic-version=3"],
              "cpu": "max,pauth-impdef=on",
              "kernel": "arch/arm64/boot/Image", "console": "ttyAMA0",
              "cc": "aarch64-linux-gnu-gcc",
              "busybox": "/usr/local/lib/mt-job/arm64/busybox",
              "srcarch": "arm64",
              "setup": "make setup (busybox-static:arm64, "
                       "gcc-aarch64-linux-gnu, libc6-dev-arm64-cross)"},
}


def guest_arch(kbuild):
    """The architecture KBUILD's .config builds: x86_64 or arm64."""
    return "arm64" if kconfig_of(kbuild, "ARM64") == "y" else "x86_64"

# The pr_debug() line deferred_init_memmap() prints after upstream's "node N
# deferred pages initialised in Mms" (DEFERRED_DEBUG shows it).
DEFERRED_RE = re.compile(
    r"node (\d+) deferred init: (\d+) pages in (\d+) us, engine (\w+), "
    r"(\d+) threads, (\d+) pages grown on demand before")
DEFERRED_DEBUG = "mm_init.dyndbg=+p"
MEMINFO_RE = re.compile(r"^(MemTotal|MemFree):\s+(\d+) kB", re.M)
HUGE_NODE_RE = re.compile(r"^hugetlb node(\d+) hugepages-(\d+)kB (\d+)$", re.M)
HUGE_REPORT_RE = re.compile(
    r"HugeTLB: hstate (\d+)kB: requested (\d+), allocated (\d+):[^,]*, "
    r"(\d+) us, engine (\w+), (\d+) threads")
HUGE_TOUCH_RE = re.compile(r"^hugetlb_touch: (\d+) x (\d+) kB mapped and "
                           r"touched, (\d+) bad$", re.M)
FREECASE_RE = re.compile(
    r"^FREECASE (\S+) rc=(\d+) memfree_before=(\d+) memfree_after=(\d+) "
    r"pf=(-?\d+) pft=(-?\d+) pff=(-?\d+) png=(-?\d+) pnm=(-?\d+) "
    r"pnb=(-?\d+)(?: held=\d+)?$", re.M)
TLB_TRACE = (r" .* tlb_parallel_free: freeable=(\d+) gathered=(\d+) "
             r"batches=(\d+) helpers=(\d+) threads=(-?\d+) held_ns=(\d+) "
             r"free_ns=(\d+) helper_ns=(\d+)$")
TLB_TRACE_RE = re.compile(r"^FREETRACE" + TLB_TRACE, re.M)
TOGGLE_TRACE_RE = re.compile(r"^TOGGLETRACE" + TLB_TRACE, re.M)
# What a gather's batches hold of order-0 pages on x86_64 (4 KiB pages):
# MAX_GATHER_BATCH is (PAGE_SIZE - 16 bytes of header) / 8 = 510 entries, the
# first batch, embedded in the gather, MMU_GATHER_BUNDLE = 8, and
# __tlb_remove_folio_pages_size() moves to the next batch at max - 1 entries
# (a large folio's entry takes two).
BATCH_PAGES = 509
LOCAL_BATCH_PAGES = 7
# The free's job is over the batches after tlb->local (index 0), which
# the caller frees itself: it starts at 1.
JOB_TRACE_RE = re.compile(
    r"^FREETRACE .* mtjob_run: name=mmu_gather caller=(\S+) engine=(\w+) "
    r"start=1 size=(\d+) max_threads=(\d+) threads=(\d+) off_node=(\d+) "
    r"ret=(-?\d+) duration_ns=(\d+)$", re.M)
FREEACCT_RE = re.compile(r"^FREEACCT (\S+) cgroup_us=(-?\d+) self_us=(-?\d+)$",
                         re.M)
FREEDEFAULT_RE = re.compile(r"^FREEDEFAULT parallel_free=(\d+) counters=(\d+)$",
                            re.M)
# live= and live_threads=: munmap()'s and MADV_DONTNEED's parallel zaps
# during the hotplug (free.sh's live_zaps).
FREEHOTPLUG_RE = re.compile(r"^FREEHOTPLUG cycles=(\d+) zaps=(\d+) "
                            r"zap_threads=(\d+) live=(\d+) "
                            r"live_threads=(\d+)(?: zap_busy=(\d+))?$", re.M)
FREEHOTPLUG_AFTER_RE = re.compile(r"^FREEHOTPLUG-AFTER tries=(\d+) "
                                  r"parallel=(\d+)$", re.M)
ZAPCASE_RE = re.compile(
    r"^ZAPCASE (\S+) rc=(\d+) memfree_before=(\d+) memfree_after=(\d+) "
    r"pz=(-?\d+) pzt=(-?\d+) pzs=(-?\d+) pzr=(-?\d+) pzb=(-?\d+) "
    r"pzn=(-?\d+)(?: held=\d+)?$", re.M)
# The gauge nr_parallel_free_held after each case (the end of its line).
CASEHELD_RE = re.compile(r"^(?:FREECASE|ZAPCASE) (\S+) .* held=(\S*)$", re.M)
FREEHELD_RE = re.compile(r"^FREEHELD max=(-?\d+) samples=(\d+) "
                         r"after=(-?\d+)$", re.M)
ZAPMREMAP_RE = re.compile(r"^ZAPMREMAP split_pmd=(-?\d+) mthp64=(-?\d+)$",
                          re.M)
ZAPDEFAULT_RE = re.compile(r"^ZAPDEFAULT parallel_zap=(\d+) counters=(\d+)$",
                           re.M)
ZAPMEMCG_RE = re.compile(r"^ZAPMEMCG (\S+) current_kb=(\d+) swap_kb=(\d+)$",
                         re.M)
# The OOM killer's report (dump_stack() and the task list), expected in the
# memcg OOM case: from its first line to the "Killed process" line.
OOM_REPORT_RE = re.compile(r"invoked oom-killer:.*?Killed process[^\n]*",
                           re.S)
GIGANTIC_RE = re.compile(r"HugeTLB: gigantic pages of node (\d+) initialised "
                         r"on node (\d+)")


def die(msg):
    sys.stderr.write(f"guest: {msg}\n")
    sys.exit(2)


# The upstream mm selftests the freetest guest runs with every exit zapped
# in parallel at the lowest threshold (free.sh's mm_selftests): those whose
# processes map, fork, exit and munmap() in ways the zap must get right
# (process_mrelease(), COW, mlock, guard regions, droppable, sealed and
# hugetlb mappings, device-private memory of the HMM test driver), built
# statically from the kernel tree.  The test kernel enables what they need
# (tests/mtjob.kunitconfig: TEST_HMM for hmm-tests, NET and UNIX for
# map_populate's socketpair()).
MM_SELFTESTS = (
    "cow", "droppable", "guard-regions", "hmm-tests", "hugetlb-madvise",
    "ksm_functional_tests", "madv_populate", "map_fixed_noreplace",
    "map_populate", "merge", "mkdirty", "mlock2-tests", "mrelease_test",
    "mremap_dontunmap", "mremap_test", "mseal_test", "parallel_teardown",
    "process_madv", "soft-dirty",
    "uffd-unit-tests",
)
# Run by the full free tests only (free_params() has free.sh's
# mm_selftests skip them with mttest.free=quick): uffd-unit-tests failed
# its "memory corruption" check on the KASAN kernel in 2 of 3 runs with
# the parallel zap and free off too (doc/results.md, 2026-11-26), a
# failure of the test or of upstream under TCG's timing that 'make check'
# should not depend on.  cow, the upstream test of COW and pinned pages,
# is the longest: 216 s of the quick guest's 1390 s in the clean-clone
# run of stop 55, 306 s beside a kernel build in stop 52.  Stop 56 moved
# it to 'make check-full' for issue 50's 50 minutes.  In 'make check' the
# kselftest parallel_teardown's exit_zap keeps a COW child of a zapped
# range; a COW child beside the parallel free is check-full's
# (fork-cow-1200m).
MM_SELFTESTS_FULL_ONLY = ("uffd-unit-tests", "cow")
# Selftests of a feature some architectures lack: {name: CONFIG symbol}.
# arm64 has no soft-dirty bits (HAVE_ARCH_SOFT_DIRTY) in 7.3.
MM_SELFTESTS_NEED = {"soft-dirty": "MEM_SOFT_DIRTY"}


# Left out with 64 KiB pages: hmm-tests, as the 64K kernel has no HMM test
# driver (its init oopses in plain 7.3.4 with 64 KiB pages); cow, which
# exits 1 in the middle of its swapped-out THP cases (no "not ok", no
# totals) with the parallel free and zap off as well as on, and in plain
# 7.3.4 (2026-11-28, doc/results.md).
MM_SELFTESTS_NOT_64K = {"cow", "hmm-tests"}
# freetest --selftests NAME,...: these instead (chasing one's failure).
MM_SELFTESTS_ONLY = []


def mm_selftests(kbuild):
    """MM_SELFTESTS that KBUILD's kernel can run (MM_SELFTESTS_ONLY if
    set)."""
    if MM_SELFTESTS_ONLY:
        return list(MM_SELFTESTS_ONLY)
    return [t for t in MM_SELFTESTS if (t not in MM_SELFTESTS_NEED
            or kconfig_of(kbuild, MM_SELFTESTS_NEED[t]) == "y")
            and not (t in MM_SELFTESTS_NOT_64K and page_kb(kbuild) == 64)]


def hugetlb_selftest_param(kbuild):
    """With 64 KiB pages the default huge page is the 512 MiB PMD, and
    hugetlb-madvise wants 20 free of them (10 GiB): the guest's default
    is then 2 MiB (32 contiguous PTEs), which free.sh's 32 fit."""
    return "default_hugepagesz=2M" if page_kb(kbuild) == 64 else ""


def free_params(quick):
    """free.sh's kernel parameters for its test run: mttest.free=test, the
    full set, or mttest.free=quick, 'make check''s, which also leaves out
    MM_SELFTESTS_FULL_ONLY (mttest.selftests_skip)."""
    if not quick:
        return "mttest.free=test"
    return ("mttest.free=quick mttest.selftests_skip="
            + ",".join(MM_SELFTESTS_FULL_ONLY))


MMSELFTEST_RE = re.compile(r"^MMSELFTEST (\S+) rc=(\d+) pz=(-?\d+) "
                           r"pzt=(-?\d+) pzm=(-?\d+) pzmt=(-?\d+)$", re.M)


def mm_selftest_checks(check, log, quick=False, kbuild=None):
    """Every one of MM_SELFTESTS passed (exit 0; kselftest's skip, 4, is
    a failure too: each must run) with the parallel zap on at its lowest
    threshold, and some of their exits were zapped in parallel.  QUICK:
    those of MM_SELFTESTS_FULL_ONLY did not run."""
    got = {m[0]: tuple(map(int, m[1:])) for m in MMSELFTEST_RE.findall(log)}
    for name in mm_selftests(kbuild) if kbuild else MM_SELFTESTS:
        if quick and name in MM_SELFTESTS_FULL_ONLY:
            check(name not in got, f"mm selftest {name}: left to the full "
                  "free tests")
            continue
        rc = got.get(name, (None,))[0]
        check(rc == 0, f"mm selftest {name}: passed with the parallel zap "
              f"at its lowest threshold (rc={rc})")
        if rc != 0:
            # free.sh's MMSELFTEST-LOG lines: its failed subtests and the
            # end of its output, here so that CI's output has them.
            for line in re.findall(rf"^MMSELFTEST-LOG {re.escape(name)}: "
                                   r"(.*)$", log, re.M):
                print(f"#   {name}: {line}")
    pz = sum(v[1] for v in got.values())
    pzt = sum(v[2] for v in got.values())
    check(pz >= 1 and pzt >= 2 * pz, f"mm selftests: {pz} exits zapped "
          f"in parallel, with {pzt} threads")
    pzm = sum(v[3] for v in got.values())
    pzmt = sum(v[4] for v in got.values())
    # With 64 KiB pages the lowest threshold is one 512 MiB block: the
    # selftests' munmap()s are smaller.
    if not kbuild or page_kb(kbuild) == 4:
        check(pzm >= 1 and pzmt >= 2 * pzm, f"mm selftests: {pzm} "
              f"munmap()s zapped in parallel, with {pzmt} threads")


def build_mm_selftests(kbuild, outdir):
    """Build MM_SELFTESTS statically for KBUILD's architecture from the tree
    KBUILD was built from, against its UAPI headers (made in OUTDIR/hdr);
    return [(name, path)]."""
    arch = ARCHES[guest_arch(kbuild)]
    tree = os.path.realpath(os.path.join(kbuild, "source"))
    src = os.path.join(tree, "tools", "testing", "selftests", "mm")
    if not os.path.isdir(src):
        die(f"{src} is missing: the mm selftests come from the kernel tree "
            f"{kbuild} was built from")
    outdir = os.path.abspath(outdir)
    hdr, bindir = os.path.join(outdir, "hdr"), os.path.join(outdir, "bin")
    os.makedirs(bindir, exist_ok=True)
    # A build directory of its own: the kernel's would be reconfigured.
    for cmd in (["make", "-s", "-C", tree, f"O={hdr}", "LLVM=-19",
                 f"ARCH={arch['srcarch']}", "headers"],
                ["make", "-s", "-C", src, f"OUTPUT={bindir}",
                 f"KHDR_INCLUDES=-isystem {hdr}/usr/include",
                 f"ARCH={arch['srcarch']}", "LDFLAGS=-static",
                 f"CC={arch['cc']}"]
                + [os.path.join(bindir, t) for t in mm_selftests(kbuild)]):
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode:
            die(f"building the mm selftests failed ({' '.join(cmd[:6])} "
                f"...; needs make, {arch['cc']} and its libc):\n"
                f"{res.stderr[-3000:]}")
    return [(t, os.path.join(bindir, t)) for t in mm_selftests(kbuild)]


# Modules the init loads (insmod, before anything else runs) where the kernel
# was built with them as modules: {CONFIG symbol: the module in the build}.
MODULES = {"SAMPLE_RUST_MTJOB": "samples/rust/rust_mtjob.ko"}


def modules(kbuild):
    """The MODULES KBUILD's .config builds as modules; a stale .ko left from
    another configuration is not loaded."""
    found = []
    for sym, ko in MODULES.items():
        if kconfig_of(kbuild, sym) == "m":
            if not os.path.exists(os.path.join(kbuild, ko)):
                die(f"{kbuild}: CONFIG_{sym}=m but {ko} is not built")
            found.append(ko)
    return found


def make_initramfs(kbuild, out, mm_selftests=False):
    """Write the guest initramfs to OUT with the kernel's gen_init_cpio;
    with MM_SELFTESTS in /bin/mm if MM_SELFTESTS."""
    gen = os.path.join(kbuild, "usr", "gen_init_cpio")
    if not os.access(gen, os.X_OK):
        die(f"{gen} is missing: build the kernel (CONFIG_BLK_DEV_INITRD=y) "
            "first with 'make kernel'")
    arch = ARCHES[guest_arch(kbuild)]
    busybox = arch["busybox"]
    if not os.access(busybox, os.X_OK):
        die(f"{busybox} is missing: {arch['setup']} (or run 'make setup')")
    init = os.path.join(REPO, "tests", "guest", "init")
    sub = "" if guest_arch(kbuild) == "x86_64" else "-" + guest_arch(kbuild)
    progs = build_guest_programs(
        os.path.join(os.path.dirname(out), "guest" + sub), arch["cc"])
    spec = "\n".join([
        "dir /dev 0755 0 0",
        "dir /lib 0755 0 0",
        "dir /lib/modules 0755 0 0",
        "nod /dev/console 0600 0 0 c 5 1",
        "dir /proc 0755 0 0",
        "dir /sys 0755 0 0",
        "dir /tmp 0755 0 0",
        "dir /bin 0755 0 0",
        "dir /sbin 0755 0 0",
        f"file /bin/busybox {busybox} 0755 0 0",
        "slink /bin/sh busybox 0777 0 0",
        f"file /init {init} 0755 0 0",
    ] + [f"file /bin/{name} {path} 0755 0 0" for name, path in progs] + [
        # A kernel with modules (kernel-modversions) built the Rust sample
        # as one: the init loads it.
        f"file /lib/modules/{os.path.basename(ko)} {ko} 0644 0 0"
        for ko in [os.path.join(kbuild, m) for m in modules(kbuild)]] + (
        ["dir /bin/mm 0755 0 0"] + [
            f"file /bin/mm/{name} {path} 0755 0 0" for name, path in
            build_mm_selftests(kbuild, os.path.join(
                os.path.dirname(out), "mm-selftests" + sub))]
        if mm_selftests else []) + [
        f"file /bin/{name} {os.path.join(REPO, 'tests', 'guest', name)} "
        "0755 0 0" for name in sorted(os.listdir(
            os.path.join(REPO, "tests", "guest"))) if name.endswith(".sh")
    ] + [""])
    with tempfile.NamedTemporaryFile("w", suffix=".spec", delete=False) as f:
        f.write(spec)
        spec_path = f.name
    try:
        with open(out, "wb") as o:
            subprocess.run([gen, spec_path], stdout=o, check=True)
    finally:
        os.unlink(spec_path)


def build_guest_programs(outdir, cc="gcc"):
    """Build tests/guest/*.c statically with CC; return [(name, path)]."""
    src_dir = os.path.join(REPO, "tests", "guest")
    os.makedirs(outdir, exist_ok=True)
    progs = []
    for src in sorted(os.listdir(src_dir)):
        if not src.endswith(".c"):
            continue
        name = src[:-2]
        out = os.path.join(outdir, name)
        srcp = os.path.join(src_dir, src)
        if (not os.path.exists(out) or
                os.path.getmtime(out) < os.path.getmtime(srcp)):
            res = subprocess.run([cc, "-static", "-O2", "-Wall", "-Werror",
                                  "-o", out, srcp], capture_output=True,
                                 text=True)
            if res.returncode:
                die(f"building {srcp} failed (needs {cc} and its libc):\n"
                    f"{res.stderr}")
        progs.append((name, out))
    return progs


# The header of the installed QEMU's plugin API (make setup-arm64).
QEMU_PLUGIN_H = "/usr/local/lib/mt-job/qemu-plugin/qemu-plugin.h"


def tlbi_plugin(args):
    """Build tests/qemu_plugins/tlbi.c (QEMU's TCG plugin API) for
    freebench --tlbi; return the .so's path."""
    if guest_arch(args.kbuild) != "arm64":
        die("--tlbi counts arm64's TLBIs: an arm64 kernel (--kbuild) only; "
            "x86_64 counts its shootdowns without it")
    if not os.path.exists(QEMU_PLUGIN_H):
        die(f"{QEMU_PLUGIN_H} is missing: run 'make setup-arm64' (it "
            "fetches the header of Debian's QEMU source)")
    src = os.path.join(REPO, "tests", "qemu_plugins", "tlbi.c")
    out = os.path.join(REPO, "build", "guest", "tlbi.so")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if (not os.path.exists(out) or
            os.path.getmtime(out) < os.path.getmtime(src)):
        res = subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-shared",
                              "-fPIC", "-I", os.path.dirname(QEMU_PLUGIN_H),
                              "-o", out, src], capture_output=True, text=True)
        if res.returncode:
            die(f"building {src} failed:\n{res.stderr}")
    return out


def qemu_cmd(args, kernel, initrd, cmdline):
    if args.cpus % args.nodes:
        die(f"--cpus {args.cpus} is not a multiple of --nodes {args.nodes}")
    # Nodes with memory and no CPU (make stress) come after the others.
    memonly = getattr(args, "memonly", 0)
    if args.mem_gib % (args.nodes + memonly):
        die(f"--mem {args.mem_gib} GiB is not a multiple of the "
            f"{args.nodes + memonly} nodes")
    per_cpu = args.cpus // args.nodes
    per_mem = args.mem_gib // (args.nodes + memonly)
    accel = "kvm" if args.accel == "kvm" else "tcg,thread=multi"
    arch = ARCHES[guest_arch(args.kbuild)]
    cmd = [shutil.which(arch["qemu"]) or arch["qemu"]] + arch["machine"] + [
           "-accel", accel,
           "-cpu", getattr(args, "qemu_cpu", "") or arch.get("cpu", "max"),
           "-m", f"{args.mem_gib}G",
           "-smp", f"{args.cpus},sockets={args.nodes}",
           "-nodefaults", "-nographic", "-no-reboot", "-serial", "stdio",
           "-kernel", kernel, "-initrd", initrd, "-append", cmdline]
    # Extra options of every node's memory backend (bench.py --prealloc).
    mopts = getattr(args, "mem_opts", "")
    for n in range(args.nodes):
        lo, hi = n * per_cpu, (n + 1) * per_cpu - 1
        cmd += ["-object",
                f"memory-backend-ram,id=m{n},size={per_mem}G{mopts}",
                "-numa", f"node,nodeid={n},cpus={lo}-{hi},memdev=m{n}"]
    for n in range(args.nodes, args.nodes + memonly):
        cmd += ["-object",
                f"memory-backend-ram,id=m{n},size={per_mem}G{mopts}",
                "-numa", f"node,nodeid={n},memdev=m{n}"]
    # Node distances (ACPI SLIT), {(a, b): distance}: QEMU wants one of
    # each pair of nodes.
    for (a, b), d in sorted(getattr(args, "dist", {}).items()):
        cmd += ["-numa", f"dist,src={a},dst={b},val={d}"]
    # freebench --tlbi: the plugin's lines go to QEMU's log (-d plugin), on
    # stderr, which boot() then reads in order with the console.
    if getattr(args, "plugin", None):
        cmd += ["-plugin", args.plugin, "-d", "plugin"]
    return cmd


def split_spec(spec):
    """'rust:mtjob.max_threads=1' -> ('rust', 'mtjob.max_threads=1')."""
    engine, _, params = spec.partition(":")
    return engine, params.replace(":", " ")


def boot(args, spec, extra=""):
    """Boot once; return the parsed results and the console log."""
    engine, params = split_spec(spec)
    arch = ARCHES[guest_arch(args.kbuild)]
    kernel = os.path.join(args.kbuild, arch["kernel"])
    if not os.path.exists(kernel):
        die(f"{kernel} is missing: run 'make kernel' (or kernel-arm64) first")
    # The console stays quiet; the guest's init prints the whole dmesg,
    # which log_buf_len keeps from boot on: the default 128 KiB lasted about
    # 180 s of a CPU hotplug run and lost a warning (parse() checks that
    # the dmesg still starts at boot).
    # nokaslr: a randomly placed kernel image changes the memblock
    # reservations, and so the free page counts, by a few pages per boot.
    cmdline = (f"console={arch['console']} panic=-1 kunit.enable=0 "
               "loglevel=1 nokaslr "
               f"log_buf_len={LOG_BUF_LEN} "
               f"{DEFERRED_DEBUG} mtjob.engine={engine} {params} "
               f"{args.append} {extra}").strip()
    cmd = qemu_cmd(args, kernel, args.initrd, cmdline)
    t0 = time.monotonic()
    try:
        # With a plugin, stderr joins stdout so that its lines stay in
        # order with the console's (freebench pairs them with runs).
        res = subprocess.run(cmd, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT if
                             getattr(args, "plugin", None) else
                             subprocess.PIPE, text=True,
                             errors="replace", timeout=args.timeout)
        log = res.stdout + (res.stderr or "")
    except subprocess.TimeoutExpired as e:
        log = (e.stdout or b"").decode(errors="replace") if isinstance(
            e.stdout, bytes) else (e.stdout or "")
        log += f"\nguest: timed out after {args.timeout}s\n"
    wall = time.monotonic() - t0
    return parse(log, spec, wall), log


# The guest's printk buffer (see boot()).
LOG_BUF_LEN = "8M"

BAD_RE = re.compile(r"BUG:|WARNING:|Oops|Bad page state|"
                    r"possible circular locking|Call Trace|soft lockup|"
                    r"blocked for more than|BENCH-FAILED|UBSAN:|"
                    r"TRACE a warning turned tracing off")


def parse(log, spec, wall):
    nodes = {}
    for m in DEFERRED_RE.finditer(log):
        nodes[int(m.group(1))] = {
            "pages": int(m.group(2)), "us": int(m.group(3)),
            "engine": m.group(4), "threads": int(m.group(5)),
            "grown": int(m.group(6))}
    body = log.split("MTJOB-BEGIN", 1)[-1]
    mem = {k: int(v) for k, v in MEMINFO_RE.findall(body)}
    lines = OOM_REPORT_RE.sub("", log).splitlines()
    bad = [line for line in lines if BAD_RE.search(line)]
    dmesg = log.split("MTJOB-DMESG", 1)
    if len(dmesg) == 2 and "Linux version" not in dmesg[1]:
        bad.append("the dmesg no longer starts at boot: the printk buffer "
                   f"(log_buf_len={LOG_BUF_LEN}) wrapped, the log checks "
                   "cannot see it all")
    huge = {}
    for m in HUGE_NODE_RE.finditer(body):
        huge.setdefault(int(m.group(2)), {})[int(m.group(1))] = int(m.group(3))
    return {"engine": split_spec(spec)[0], "spec": spec, "nodes": nodes,
            "mem": mem, "wall": wall, "huge": huge,
            "huge_report": [m.groups() for m in HUGE_REPORT_RE.finditer(log)],
            "touch": [tuple(map(int, m.groups()))
                      for m in HUGE_TOUCH_RE.finditer(body)],
            "gigantic": {int(a): int(b) for a, b in GIGANTIC_RE.findall(log)},
            "log": log,
            "ok": "MTJOB-END" in log, "bad": bad}


def deferred_total(r):
    """Deferred pages per node: by the job plus grown on demand before it."""
    return {k: v["pages"] + v["grown"] for k, v in r["nodes"].items()}


def save_log(args, name, log):
    os.makedirs(args.logdir, exist_ok=True)
    path = os.path.join(args.logdir, name)
    with open(path, "w") as f:
        f.write(log)
    return path


def cmd_run(args):
    """make run: the three call sites per engine, side by side, with
    spreads and verdicts (scripts/runreport.py)."""
    return runreport.run(args, boot, save_log, kconfig)


class Checks:
    """TAP-like checks with a closing 'N passed, N failed' line."""

    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, cond, what):
        print(f"{'ok' if cond else 'not ok'} - {what}", flush=True)
        if cond:
            self.passed += 1
        else:
            self.failed += 1

    def finish(self, name):
        print(f"{name}: {self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def kconfig_of(kbuild, symbol):
    """The value of CONFIG_SYMBOL in KBUILD's .config, or None."""
    try:
        with open(os.path.join(kbuild, ".config")) as f:
            m = re.search(rf"^CONFIG_{symbol}=(.*)$", f.read(), re.M)
    except OSError:
        return None
    return m.group(1) if m else None


def kconfig(args, symbol):
    """The value of CONFIG_SYMBOL in the kernel's .config, or None."""
    return kconfig_of(args.kbuild, symbol)


def cmd_boottest(args):
    check = Checks()

    res = {}
    sample = kconfig(args, "SAMPLE_RUST_MTJOB")
    kasan = kconfig(args, "KASAN") == "y"
    for engine in args.engines:
        r, log = boot(args, engine)
        path = save_log(args, f"boottest-{engine.replace(':', '-')}.log", log)
        res[engine] = r
        check(r["ok"], f"{engine}: guest booted to userspace and powered "
              f"off ({r['wall']:.1f} s; log {path})")
        if sample == "m":
            # The init loads it; with MODVERSIONS its imports' CRCs must
            # match vmlinux's (no "disagrees about version of symbol").
            mod = re.findall(r"module rust_mtjob.*", log)
            check("module rust_mtjob.ko loaded" in mod and
                  "disagrees about version" not in log,
                  f"{engine}: the Rust sample loaded as a module "
                  f"({'; '.join(mod) or 'no module line'})")
        if sample in ("y", "m"):
            # samples/rust/rust_mtjob.rs runs its jobs at boot (or load):
            # they use the Rust engine whatever mtjob.engine says.
            lines = re.findall(r"rust_mtjob: .*", log)
            check("rust_mtjob: all jobs ok" in lines and
                  not any("instead" in x for x in lines),
                  f"{engine}: the Rust sample's jobs ran and were right "
                  f"({'; '.join(lines) or 'no rust_mtjob line'})")
        check(not r["bad"], f"{engine}: no BUG/WARNING/Oops in the log"
              + (f": {r['bad'][0]}" if r["bad"] else ""))
        if kasan:
            # KASAN's early shadow allocations can leave a node with no
            # deferred pages, hence no report (upstream prints none then).
            check(bool(r["nodes"]), f"{engine}: a deferred init report "
                  f"(KASAN: nodes {sorted(r['nodes'])})")
        else:
            check(len(r["nodes"]) == args.nodes,
                  f"{engine}: a deferred init report for each of the "
                  f"{args.nodes} nodes (got {sorted(r['nodes'])})")
        check(bool(r["nodes"]) and all(
            n["engine"] == r["engine"] for n in r["nodes"].values()),
            f"{engine}: every node's deferred init ran on the {engine} "
            "engine")
        check(bool(r["nodes"]) and all(
            n["pages"] > 0 for n in r["nodes"].values()),
            f"{engine}: every node initialised deferred pages")
        # After boot the parameter reads back the engine jobs get now:
        # padata is closed, and setting it is refused.
        want = ("serial" if split_spec(engine)[0] == "serial" or
                kconfig(args, "MTJOB_RUST") != "y" else "rust")
        m = re.search(r"^mtjob engine (\S+)$", log, re.M)
        got = m.group(1) if m else None
        check(got == want, f"{engine}: mtjob.engine reads back {want} "
              f"after boot (got {got})")
        m = re.search(r"^mtjob engine-set-padata (\S+)$", log, re.M)
        got = m.group(1) if m else None
        check(got == "refused", f"{engine}: setting mtjob.engine=padata "
              f"after boot is refused (got {got})")
        if engine == "padata" and args.cpus >= 2 * args.nodes:
            # padata reports the threads it asks for: a node's CPUs, for a
            # node with two sections or more of deferred pages (its job's
            # min_chunk is a section: 128 MiB, 32768 pages, with 4 KiB
            # pages; 512 MiB, 8192 pages, with arm64's 64 KiB pages, where
            # node 0 of this guest defers less than one).
            sect = 32768 if page_kb(args.kbuild) == 4 else 8192
            check(all(n["threads"] > 1 for n in r["nodes"].values()
                      if n["pages"] >= 2 * sect),
                  f"{engine}: deferred init ran with more than one thread "
                  f"per node ({[n['threads'] for n in r['nodes'].values()]})")
    engines = list(res)
    for e in engines[1:]:
        a, b = res[engines[0]], res[e]
        pa, pb = deferred_total(a), deferred_total(b)
        check(pa == pb and bool(pa), f"{engines[0]} vs {e}: identical "
              f"deferred pages per node ({pa} vs {pb})")
        check(a["mem"].get("MemTotal") is not None and
              a["mem"].get("MemTotal") == b["mem"].get("MemTotal"),
              f"{engines[0]} vs {e}: identical MemTotal "
              f"({a['mem'].get('MemTotal')} vs {b['mem'].get('MemTotal')} kB)")
    return check.finish("boottest")


# Boot-time hugetlb scenarios: (name, kernel parameters, page size in kB,
# expected pages per node or None, expected total or None, a warning that
# must appear or None[, a guest of its own: {"nodes": N, "mem": GiB}]).  The
# guest has 4 GiB per node.  The per-hstate report and the node each node's
# gigantic pages were initialised on are pr_debug() lines: every boot of
# hugetlbtest and hugetlbbench enables them with HUGETLB_DEBUG (the test
# kernels have CONFIG_DYNAMIC_DEBUG).  Per-node requests of 2M pages are
# allocated serially, as upstream does: no job, no report.
HUGETLB_DEBUG = "hugetlb.dyndbg=+p"
HUGETLB_SCENARIOS = [
    ("2M x 1024", "hugepages=1024", 2048, {0: 512, 1: 512}, 1024, None),
    ("2M x 1 (fewer pages than nodes)", "hugepages=1", 2048, None, 1, None),
    ("1G x 2", "hugepagesz=1G hugepages=2", 1048576, {0: 1, 1: 1}, 2, None),
    ("1G per node", "hugepagesz=1G hugepages=0:1,1:1", 1048576,
     {0: 1, 1: 1}, 2, None),
    ("2M per node", "hugepages=0:100,1:50", 2048, {0: 100, 1: 50}, 150, None),
    ("2M per node, more than node 0 has", "hugepages=0:3000,1:100", 2048,
     None, None, r"HugeTLB: allocating 3000 of page size 2\.00 MiB failed "
     r"node0\.  Only allocated \d+ hugepages\."),
    # Four 2 GiB nodes: memblock finds no free 1 GiB on nodes 0 and 1 and
    # falls back to the others, which have room for one each (2 pages in
    # all, with either engine); each page must be initialised as a page of
    # the node it is on, on that node.
    ("1G x 4 on four 2 GiB nodes", "hugepagesz=1G hugepages=4", 1048576,
     None, None, None, {"nodes": 4, "mem": 8}),
]
# A node with memory and no CPU (node 2) gets a gigantic page, nearer to
# node 1 than to node 0 ("dist"): the Rust engine initialises it on node 1,
# its nearest node with CPUs ("nearest"); HVO
# (hugetlb_free_vmemmap=on, which initialises shared vmemmap tails before
# the gigantic struct page init job) with 2M and 1G pages, which must say it
# frees vmemmap.  The last field: topology and a line the log must have.
HUGETLB_SCENARIOS += [
    ("1G on a node without CPUs", "hugepagesz=1G hugepages=0:1,2:1", 1048576,
     {0: 1, 1: 0, 2: 1}, 2, None,
     {"nodes": 2, "memonly": 1, "mem": 12,
      "dist": {(0, 1): 20, (0, 2): 30, (1, 2): 15}, "nearest": {2: 1}}),
    ("2M x 512 with HVO", "hugepages=512 hugetlb_free_vmemmap=on", 2048,
     {0: 256, 1: 256}, 512, None,
     {"expect": r"(?m)^hugetlb_optimize_vmemmap 1$",
      "config": "HUGETLB_PAGE_OPTIMIZE_VMEMMAP"}),
    ("1G x 2 with HVO", "hugepagesz=1G hugepages=2 hugetlb_free_vmemmap=on",
     1048576, {0: 1, 1: 1}, 2, None,
     {"expect": r"(?m)^hugetlb_optimize_vmemmap 1$",
      "config": "HUGETLB_PAGE_OPTIMIZE_VMEMMAP"}),
]
# arm64's contiguous sizes with 4 KiB pages (issue 37): 64 KiB (16
# contiguous PTEs), allocated from the buddy allocator by the boot job as 2M
# pages are, and 32 MiB (16 contiguous PMDs), larger than MAX_PAGE_ORDER's 4
# MiB, so gigantic: memblock pages initialised by the gigantic init job.
# "arch": only on that architecture; "config": only if the kernel has it
# (arm64 has no HVO in 7.3).
HUGETLB_SCENARIOS += [
    ("64K x 4096 (contiguous PTEs)", "hugepagesz=64K hugepages=4096", 64,
     {0: 2048, 1: 2048}, 4096, None, {"arch": "arm64"}),
    ("32M x 16 (contiguous PMDs)", "hugepagesz=32M hugepages=16", 32768,
     {0: 8, 1: 8}, 16, None, {"arch": "arm64"}),
]
# arm64 with 64 KiB base pages ("page_kb": every scenario above assumes 4):
# its PMD is 512 MiB, order 13, which is MAX_PAGE_ORDER there, so allocated
# from the buddy allocator by the boot job, and 2 MiB is 32 contiguous PTEs.
# Four 512M pages are not checked per node: the job's minimum chunk is then
# one page, and upstream's hugetlb_pages_alloc_boot_node() starts each
# chunk's round robin at the first node (seen: {0: 3, 1: 1}).
HUGETLB_SCENARIOS += [
    ("512M x 4 (PMD, 64K pages)", "hugepagesz=512M hugepages=4", 524288,
     None, 4, None, {"arch": "arm64", "page_kb": 64}),
    ("2M x 256 (contiguous PTEs, 64K pages)", "hugepagesz=2M hugepages=256",
     2048, {0: 128, 1: 128}, 256, None, {"arch": "arm64", "page_kb": 64}),
]


# An oops inside a scope (issue 47, tests/guest/oops.sh): where each case's
# task must end, and the lines that show it.
OOPS_STATE_RE = re.compile(r"^OOPS-STATE which=(\w+) pid=(\d+) state=(\S+) "
                           r"rss_kb=(\S+) armed=(\d+)", re.M)
OOPS_SURVIVOR_RE = re.compile(r"^OOPS-SURVIVOR what=(\w+) rc=(\d+)", re.M)
OOPS_CASES = {
    # The munmap() caller oopses in its own chunk: parked ("X"), its mm
    # (VmRSS) kept, while the helpers finish on its stack.
    "caller": ("X", "died with its stack lent to work items: parked"),
    # A helper oopses: that kworker dies as any; the caller waits for its
    # item in the join ("D"), holding its mmap_lock.
    "helper": ("D", None),
}


def cmd_oopstest(args):
    """An oops in a chunk of a live munmap()'s parallel zap, of its caller
    and of a helper, with panic_on_oops=0: the task ends as the design says
    and the guest goes on (another process maps, frees and exits, and the
    guest powers off); the caller's again with panic_on_oops=1: a panic."""
    check = Checks()
    kasan = kconfig(args, "KASAN") == "y"
    for which, (state, line) in OOPS_CASES.items():
        r, log = boot(args, "rust", f"mttest.oops={which}")
        path = save_log(args, f"oops-{which}.log", log)
        fired = f"zap_parallel: test: oops in a chunk of the {which}"
        # x86_64 says "BUG: kernel NULL pointer dereference", arm64
        # "Unable to handle kernel NULL pointer dereference"; with generic
        # KASAN on x86_64 the access's shadow check faults first: "general
        # protection fault ... KASAN: null-ptr-deref in range".
        check(fired in log and re.search(r"(BUG: kernel|Unable to handle "
                                         r"kernel) NULL pointer dereference|"
                                         r"KASAN: null-ptr-deref in range",
                                         log) is not None,
              f"{which}: the oops in a chunk of the {which} fired ({path})")
        m = OOPS_STATE_RE.search(log)
        check(bool(m) and m.group(3) == state,
              f"{which}: the munmap() caller's state is {state!r} "
              f"({m.group(0) if m else 'no OOPS-STATE line'})")
        if which == "caller":
            check(bool(m) and m.group(4) not in ("-", "0"),
                  f"{which}: the parked task keeps its mm "
                  f"(VmRSS {m.group(4) if m else '?'} kB)")
        if line:
            check(line in log, f"{which}: the kernel says {line!r}")
        surv = OOPS_SURVIVOR_RE.findall(log)
        check(len(surv) == 2 and all(rc == "0" for _, rc in surv),
              f"{which}: another process mapped, touched, freed and "
              f"exited afterwards ({surv})")
        check(r["ok"] and "OOPS-END" in log and "Kernel panic" not in log,
              f"{which}: no panic, the guest powered off "
              f"({r['wall']:.1f} s)")
        check("BUG: KASAN" not in log, f"{which}: no KASAN report"
              + ("" if kasan else " (this kernel has no KASAN)"))
        for name in ("OOPS-STATUS", "OOPS-STACK", "OOPS-VMSTAT"):
            for x in re.findall(rf"^{name} .*", log, re.M)[:8]:
                print(f"  {x}")
    r, log = boot(args, "rust", "mttest.oops=caller oops=panic")
    path = save_log(args, "oops-panic.log", log)
    # x86_64's oops_end() says "Fatal exception", arm64's die() "Oops:
    # Fatal exception" (the first arm64 run of this stage, stop 52).
    check(re.search(r"Kernel panic - not syncing: (Oops: )?Fatal exception",
                    log) is not None and "OOPS-END" not in log,
          f"oops=panic (panic_on_oops): the caller's oops panics ({path})")
    return check.finish("oopstest")


def page_kb(kbuild):
    """The base page size of KBUILD's kernel, in kB."""
    for kb in (64, 16):
        if kconfig_of(kbuild, f"ARM64_{kb}K_PAGES") == "y":
            return kb
    return 4


def gigantic_kb(kbuild):
    """Huge pages larger than this (kB) are gigantic (above MAX_PAGE_ORDER:
    4 MiB with 4 KiB pages, 512 MiB with arm64's 64 KiB): memblock-allocated,
    initialised by their own job."""
    return 4096 if page_kb(kbuild) == 4 else 524288


# hugetlbtest --quick boots every engine on this many of the first
# scenarios (2M pages over the nodes, and fewer than nodes), the first
# engine on the rest.  Three until stop 56, which left padata's 1G boot
# (24 s) to check-full for issue 50's 50 minutes: the 2M boots keep
# mtjob_run()'s padata engine in make check.
HUGETLB_QUICK_ALL = 2


def cmd_hugetlbtest(args):
    check = Checks()
    for i, (name, params, kb, per_node, total, warn, *topo) in enumerate(
            HUGETLB_SCENARIOS):
        res = {}
        sargs = copy.copy(args)
        topo = topo[0] if topo else {}
        if topo.get("arch", guest_arch(args.kbuild)) != guest_arch(
                args.kbuild) or ("config" in topo and kconfig(
                    args, topo["config"]) != "y") or topo.get(
                        "page_kb", 4) != page_kb(args.kbuild):
            print(f"# {name}: not on this kernel ({guest_arch(args.kbuild)}, "
                  f"{page_kb(args.kbuild)} kB pages"
                  f"{', no CONFIG_' + topo['config'] if 'config' in topo else ''})")
            continue
        sargs.nodes = topo.get("nodes", args.nodes)
        sargs.mem_gib = topo.get("mem", args.mem_gib)
        sargs.memonly = topo.get("memonly", getattr(args, "memonly", 0))
        sargs.dist = topo.get("dist", {})
        # The allocation job is capped at hugepage_alloc_threads=, by
        # default a quarter of the CPUs (one in our guests): give it every
        # CPU, so that both engines run it with helpers.
        threads = f" hugepage_alloc_threads={sargs.cpus}"
        # --quick ('make check'): the first engine (rust) on every
        # scenario, the others on the first HUGETLB_QUICK_ALL only.
        engines = (args.engines if not args.quick or i < HUGETLB_QUICK_ALL
                   else args.engines[:1])
        for engine in engines:
            r, log = boot(sargs, engine, f"{params}{threads} {HUGETLB_DEBUG}")
            tag = re.sub(r"[^A-Za-z0-9]+", "-", f"{engine}-{name}").strip("-")
            path = save_log(args, f"hugetlb-{tag}.log", log)
            res[engine] = r
            what = f"{name} [{params}], {engine}"
            got = r["huge"].get(kb, {})
            check(r["ok"] and not r["bad"],
                  f"{what}: booted to userspace without BUG/WARNING "
                  f"({r['wall']:.1f} s; {path})")
            if per_node is not None:
                check(got == per_node, f"{what}: pages per node from sysfs "
                      f"{got}, expected {per_node}")
            if total is not None:
                check(sum(got.values()) == total, f"{what}: {total} pages in "
                      f"all (sysfs: {sum(got.values())})")
            if "expect" in topo:
                check(re.search(topo["expect"], r["log"]) is not None,
                      f"{what}: the log says /{topo['expect']}/")
            if warn is not None:
                check(re.search(warn, r["log"]) is not None,
                      f"{what}: the shortfall is reported as upstream does")
                check(0 < sum(got.values()) < 3100, f"{what}: a partial "
                      f"allocation ({sum(got.values())} pages) and the boot "
                      "went on")
            n = sum(got.values())
            check((n, kb, 0) in r["touch"], f"{what}: a guest program "
                  f"mapped and touched all {n} pages ({r['touch']})")
            eng = split_spec(engine)[0]
            if kb == 2048 and re.search(r"hugepages=\d+:", params):
                check(not r["huge_report"], f"{what}: a per-node request, "
                      f"allocated serially as upstream does (no job report: "
                      f"{r['huge_report']})")
            else:
                check(any(rep[4] == eng for rep in r["huge_report"]),
                      f"{what}: the allocation went through the {eng} engine "
                      f"({[rep[4] for rep in r['huge_report']]})")
            # padata reports the helpers it asks for: more than one when
            # the job has two chunks or more (upstream's job shapes).
            if eng == "padata" and n >= 2 and r["huge_report"]:
                thr = [int(rep[5]) for rep in r["huge_report"]]
                check(all(t > 1 for t in thr), f"{what}: padata ran the job "
                      f"with more than one thread ({thr})")
            if kb > gigantic_kb(args.kbuild) and eng == "rust":
                # Nodes from sargs.nodes on have memory and no CPU: their
                # pages go to their nearest node with CPUs.
                near = topo.get("nearest", {})
                check(bool(r["gigantic"]) and all(
                    b == near.get(a, a) for a, b in r["gigantic"].items()),
                    f"{what}: each node's gigantic pages were initialised on "
                    f"a CPU of that node, or of its nearest node with CPUs "
                    f"for a node without ({r['gigantic']}, nearest {near})")
                have = {n for n, c in got.items() if c}
                check(set(r["gigantic"]) == have, f"{what}: the pages were "
                      f"initialised as pages of the nodes they are on "
                      f"({sorted(r['gigantic'])} vs sysfs {sorted(have)})")
        engines = list(res)
        for e in engines[1:]:
            a = res[engines[0]]["huge"].get(kb, {})
            b = res[e]["huge"].get(kb, {})
            if warn is None:
                check(a == b and bool(a), f"{name}: {engines[0]} vs {e}: "
                      f"identical pages per node ({a} vs {b})")
                continue
            # How much of a full node is left for huge pages depends on
            # what the rest of the boot allocated there meanwhile (seen:
            # 1945 and 1946): full nodes agree within 1%, others exactly.
            full = [n for n in a if abs(a[n] - b.get(n, -1)) > 0 and
                    re.search(rf"failed node{n}\.", res[e]["log"])]
            same = all(a[n] == b.get(n) for n in a if n not in full)
            close = all(abs(a[n] - b[n]) * 100 <= max(a[n], 1) for n in full)
            check(bool(a) and a.keys() == b.keys() and same and close,
                  f"{name}: {engines[0]} vs {e}: identical pages on the "
                  f"nodes that were not full, within 1% on the full one "
                  f"({a} vs {b})")
    return check.finish("hugetlbtest")


# What hugetlbbench allocates at boot: (label, kernel parameters).
HUGETLB_BENCH = [
    ("2M x 2048 (4 GiB)", "hugepages=2048"),
    ("1G x 4 (4 GiB)", "hugepagesz=1G hugepages=4"),
]


def cmd_hugetlbbench(args):
    """Boot-time hugetlb allocation time per engine, side by side: the job
    may use every vCPU (hugepage_alloc_threads=, by default a quarter of
    the CPUs), engines alternate boot by boot."""
    rows = []
    threads_param = f"hugepage_alloc_threads={args.cpus}"
    for label, params in HUGETLB_BENCH:
        us = {e: [] for e in args.engines}
        threads = {e: set() for e in args.engines}
        for i in range(args.repeat):
            for engine in runreport.engine_order(args.engines, i):
                r, log = boot(args, engine, f"{params} {threads_param} "
                              f"mttest.notouch {HUGETLB_DEBUG}")
                tag = re.sub(r"[^A-Za-z0-9]+", "-", f"{engine}-{label}-{i}")
                save_log(args, f"hugetlbbench-{tag}.log", log)
                if not r["ok"] or not r["huge_report"]:
                    die(f"{engine} with {params} did not boot or report; "
                        f"see {args.logdir}")
                us[engine].append(int(r["huge_report"][-1][3]))
                threads[engine].add(int(r["huge_report"][-1][5]))
        for engine in args.engines:
            rows.append((label, engine, sorted(threads[engine]), us[engine]))
            print(f"{label:18} {engine:26} "
                  f"{statistics.median(us[engine]):>9.0f} us", flush=True)
    print(f"\nHugeTLB boot allocation, {args.nodes} nodes, {args.cpus} vCPUs, "
          f"{args.mem_gib} GiB, {args.repeat} boots each, engines "
          f"alternating, {threads_param} (TCG); for 1G pages "
          "the time is the struct page init job (the pages themselves come "
          "from memblock, serially, earlier):")
    print(f"{'pages':18} {'engine':26} {'threads':>7} {'median us':>10} "
          f"{'min us':>8} {'max us':>8}")
    for label, engine, threads, us in rows:
        print(f"{label:18} {engine:26} {','.join(map(str, threads)):>7} "
              f"{statistics.median(us):>10.0f} {min(us):>8} {max(us):>8}")
    for label, _ in HUGETLB_BENCH:
        us = {e: u for lab, e, _, u in rows if lab == label}
        for e in args.engines[1:]:
            ratio, word = runreport.verdict(us[args.engines[0]], us[e])
            print(f"{label}: {args.engines[0]}/{e} {ratio:.2f}, "
                  + (f"{args.engines[0]} {word}" if word != runreport.NOISE
                     else word))
    print(runreport.RULE)
    return 0


# Parallel freeing cases run by tests/guest/free.sh: name -> what the vmstat
# deltas must show (parallel flushes pf, their threads pft, flushes at the
# threshold freed serially pff, gathers refused growth for good png, rounds
# refused for lack of memory pnm, rounds without helpers for lack of an idle
# CPU pnb).  The
# threshold is 1 GiB, counted in pages by size (a THP is 512), and free.sh
# sets vm.parallel_free=1 after the default-off case.
def _serial_not_grown(pf, pft, pff, png, pnm, pnb):
    return pf == 0 and png >= 1 and pnm == 0


FREE_CASES = {
    "default-off": ("off by default: nothing counted",
                    lambda *c: all(x == 0 for x in c)),
    "munmap-64m": ("below the threshold: serial, nothing counted",
                   lambda *c: all(x == 0 for x in c)),
    "munmap-256m": ("below the threshold: serial, nothing counted",
                    lambda *c: all(x == 0 for x in c)),
    "munmap-512m": ("below the threshold: serial, nothing counted",
                    lambda *c: all(x == 0 for x in c)),
    "munmap-2g-thp-off": ("parallel, helpers joined",
                          lambda pf, pft, *_: pf >= 1 and pft > pf),
    "munmap-2g-thp-on": ("parallel: 1024 THPs count 524288 pages",
                         lambda pf, *_: pf >= 1),
    "exit-2g-thp-off": ("parallel, helpers joined",
                        lambda pf, pft, *_: pf >= 1 and pft > pf),
    "exit-2g-thp-on": ("parallel: 1024 THPs count 524288 pages",
                       lambda pf, *_: pf >= 1),
    "fork-cow-1200m": ("parallel", lambda pf, *_: pf >= 1),
    # 2 GiB gathered, no page to free: neither grown nor parallel.
    "shared-2g": ("MAP_SHARED page cache: references only, serial",
                  lambda pf, pft, pff, *_: pf == 0 and pff == 0),
    "swap-2g": ("parallel", lambda pf, *_: pf >= 1),
    "many-3x1200m": ("parallel", lambda pf, *_: pf >= 1),
    "pressure": ("parallel, or refused growth for memory",
                 lambda pf, pft, pff, png, pnm, pnb: pf >= 1 or pnm >= 1
                 or pnb >= 1),
    "rt": ("SCHED_FIFO: serial, did not grow", _serial_not_grown),
    "sched-idle": ("SCHED_IDLE: serial, did not grow", _serial_not_grown),
    "sched-batch": ("SCHED_BATCH: serial, did not grow", _serial_not_grown),
    "nice-19": ("nice 19: serial, did not grow", _serial_not_grown),
    "taskset-cpu0": ("pinned: serial, did not grow", _serial_not_grown),
    "cgroup-cpu-max": ("cpu.max: serial, did not grow", _serial_not_grown),
    "cgroup-cpu-weight-10": ("cpu.weight 10: serial, did not grow",
                             _serial_not_grown),
    "cgroup-cpu-idle": ("cpu.idle: serial, did not grow", _serial_not_grown),
    # No idle CPU is asked again at each flush, not a refusal for good.
    "busy-cpus": ("no idle CPU: serial, rounds without helpers, none "
                  "refused for good",
                  lambda pf, pft, pff, png, pnm, pnb: pf == 0 and pnb >= 1
                  and png == 0),
    # Their FREEACCT lines are checked too (free_acct_checks()).
    "acct-parallel": ("parallel, helpers joined",
                      lambda pf, pft, *_: pf >= 1 and pft > pf),
    "acct-serial": ("vm.parallel_free=0: nothing counted",
                    lambda *c: all(x == 0 for x in c)),
    # Growth is refused while less than the threshold is left below
    # memory.max, and asked again each round: once the rounds freed
    # serially have made room, the rest of the teardown may go parallel.
    "memcg-tight": ("memory.max 2700M, less than the threshold above the "
                    "workload: rounds refused growth for memory, none for "
                    "good", lambda pf, pft, pff, png, pnm, pnb: pnm >= 1
                    and png == 0),
    "memcg-tight-exit": ("exit() under memory.max 2700M: rounds refused "
                         "growth for memory, none for good",
                         lambda pf, pft, pff, png, pnm, pnb: pnm >= 1
                         and png == 0),
    "memcg-roomy": ("memory.max 3500M, room for the threshold: parallel",
                    lambda pf, pft, pff, png, pnm, pnb: pf >= 1
                    and pnm == 0),
    # A node below its low watermark (NODELOW, node_low_checks()): growth
    # refused for memory at every round, never for good.
    "node-low": ("a node below its low watermark: rounds refused growth "
                 "for memory, none for good, nothing parallel",
                 lambda pf, pft, pff, png, pnm, pnb: pnm >= 1 and png == 0
                 and pnb == 0 and pf == 0),
    "by-node-off": ("parallel", lambda pf, *_: pf >= 1),
    # Killed in munmap() or not, depending on timing: only what holds in
    # both cases is checked (the workload, memory, a clean log).
    "oom-mid-teardown": None,
    # 60 teardowns of 96 MiB, every other one THP-backed, at 9690 pages:
    # about 90 parallel flushes.
    "lowest-threshold": ("parallel path taken >= 50 times",
                         lambda pf, *_: pf >= 50),
    # Out-of-range sysctl values refused: only the exit code counts.
    "sysctl-bounds": None,
    # The static key switched every 0.1 s during teardowns at the lowest
    # threshold: flushes went parallel between switches; memory and
    # nr_parallel_free_held come back (held_checks()).
    "key-toggling": ("parallel between switches", lambda pf, *_: pf >= 1),
}
# The cases free.sh runs only with mttest.free=test (its full_case), not in
# freetest --quick.
FREE_FULL_ONLY = {
    "munmap-64m", "munmap-512m", "munmap-2g-thp-on", "exit-2g-thp-off",
    "swap-2g", "many-3x1200m", "pressure", "sched-idle", "sched-batch",
    "taskset-cpu0", "cgroup-cpu-weight-10", "cgroup-cpu-idle", "by-node-off",
    "memcg-tight-exit", "fork-cow-1200m", "shared-2g", "memcg-roomy",
}
# exit_mmap()'s parallel zap, cases run by tests/guest/free.sh's zap_cases:
# name -> what the vmstat deltas must show (parallel zaps pz, their threads
# pzt, zaps of one thread pzs, refusals: the task pzr, no idle CPU or the cap
# pzb, no memory for the plan pzn).  free.sh sets vm.parallel_zap=1 after
# the first two cases; the threshold is 1 GiB resident for the next two,
# then 256 MiB.
def _zap_refused(pz, pzt, pzs, pzr, pzb, pzn):
    return pz == 0 and pzr >= 1


def _zap_parallel(pz, pzt, *_):
    return pz >= 1 and pzt >= 2 * pz


def _zap_one_job(pz, pzt, *_):
    return pz == 1 and pzt >= 2


def _zap_none(*c):
    return all(x == 0 for x in c)


ZAP_CASES = {
    "zap-default-off": ("off by default: nothing counted", _zap_none),
    "zap-sysctl-bounds": None,
    "zap-exit-512m-default": ("below the default threshold (1 GiB): "
                              "unmap_vmas(), nothing counted", _zap_none),
    "zap-exit-1200m-thp-off": ("zapped by two threads or more",
                               _zap_parallel),
    "zap-exit-128m": ("below the threshold: unmap_vmas(), nothing counted",
                      _zap_none),
    "zap-exit-512m-thp-on": ("zapped by two threads or more",
                             _zap_parallel),
    # Anonymous (THP off and on), shared and private memfds, swap entries,
    # mlocked, hugetlb (on the caller), 8192 one-page VMAs and KSM pages;
    # the data and huge pages are checked by free_test, the memcg by
    # ZAPMEMCG.
    "zap-mixed": ("every kind of mapping: zapped by two threads or more",
                  _zap_parallel),
    # 64 GiB reserved, 1 GiB touched in one corner or spread: the shares
    # are sparse_share_checks()'.
    "zap-sparse-corner": ("zapped by two threads", _zap_parallel),
    "zap-sparse-spread": ("zapped by two threads", _zap_parallel),
    # PMD THPs and 64 KiB folios moved off PMD alignment by mremap():
    # folios PTE-mapped across the chunks' boundaries (ZAPMREMAP).
    "zap-mremap": ("zapped by two threads or more", _zap_parallel),
    # All of it device-private (CONFIG_TEST_HMM's driver): HMMEXIT.
    "zap-hmm": ("device-private entries: zapped by two threads or more",
                _zap_parallel),
    # failslab fails the plan's allocation (ZAPNOMEM): the exit falls back.
    "zap-nomem": ("the plan's allocation failed: unmap_vmas()",
                  lambda pz, pzt, pzs, pzr, pzb, pzn: pz == 0 and pzn == 1),
    "zap-nice-19": ("nice 19: refused", _zap_refused),
    "zap-rt": ("SCHED_FIFO: refused", _zap_refused),
    "zap-cgroup-cpu-max": ("cpu.max: refused", _zap_refused),
    # The exit sleeps before it is checked (switched_out): back on a CPU
    # from a busy loop, its active_mm is the loop's, and it is still its
    # own mm's exit (busy, never refused).
    "zap-busy-cpus": ("switched out, no idle CPU: unmap_vmas()",
                      lambda pz, pzt, pzs, pzr, pzb, pzn: pz == 0
                      and pzb >= 1 and pzr == 0),
    "zap-acct-parallel": ("zapped by two threads or more", _zap_parallel),
    "zap-acct-serial": ("vm.parallel_zap=0: nothing counted", _zap_none),
    "zap-many-3x512m": ("three exits at once, zapped in parallel",
                        lambda pz, *_: pz >= 1),
    "zap-threads": ("the exit of a second thread, the main one gone first: "
                    "zapped by two threads or more", _zap_parallel),
    "zap-exec": ("exec() drops the old mm: refused", _zap_refused),
    # Which of the two comes first is timing: only the workload, memory
    # and a clean log count.
    "zap-mrelease": None,
    # The test hooks (CONFIG_PARALLEL_ZAP_REAPER_TEST) have
    # process_mrelease() reap while the job runs: ZAPMRELEASE and MRELEASE.
    "zap-mrelease-late": ("zapped in parallel beside process_mrelease()",
                          _zap_parallel),
    # Killed in munmap() or not: only the workload, memory and log count.
    "zap-oom": None,
    # 3 fork children of 64 MiB at the lowest threshold (512 pages): each
    # zapped, in parallel unless the other CPU was busy at that moment.
    "zap-lowest-threshold": ("the children's exits zapped in parallel",
                             lambda pz, pzt, pzs, pzr, pzb, pzn: pz >= 1
                             and pz + pzs + pzb >= 3),
    # munmap()'s parallel zap (issue 38): pz and pzt are its own counters,
    # parallel_zap_munmap and _threads (free.sh's zap_munmap_counters).
    "zap-munmap-off": ("vm.parallel_zap_live=0: nothing counted",
                       _zap_none),
    # 1 GiB with a page in each PMD block, 10 munmap()s beside 8 threads:
    # the pages the plan estimates are far below the threshold, so each
    # is counted serial and none zapped in parallel (until 2026-11-29 the
    # threshold counted the blocks' reach and each went parallel in 32
    # chunks); sparse_loop_checks() compares the shootdowns.
    "zap-munmap-sparse-off": ("vm.parallel_zap_live=0: nothing counted",
                              _zap_none),
    # Serial by the plan's estimate; one the gate found without an idle
    # CPU first (8 threads beside it) counts busy instead: CI of stop 56,
    # 9 serial and 1 busy, beside a niced kernel build on the host.
    "zap-munmap-sparse": ("a sparse range: each munmap() counted serial "
                          "(or busy), most by the estimate, none parallel",
                          lambda pz, pzt, pzs, pzr, pzb, *_: pz == 0 and
                          pzs + pzb >= 10 and pzs >= 5),
    "zap-munmap-anon": ("live range, anonymous: zapped by two threads or "
                        "more", _zap_parallel),
    "zap-munmap-thp": ("live range, THP: zapped by two threads or more",
                       _zap_parallel),
    "zap-munmap-cow": ("live range COW-shared with a child: zapped by two "
                       "threads or more", _zap_parallel),
    "zap-munmap-shared": ("live range of a memfd: zapped by two threads or "
                          "more", _zap_parallel),
    "zap-munmap-mlock": ("live range mlocked: zapped by two threads or more",
                         _zap_parallel),
    "zap-munmap-swap": ("half swapped out: zapped by two threads or more",
                        _zap_parallel),
    "zap-munmap-uffd": ("live range, userfaultfd (missing): its UNMAP "
                        "event; zapped by two threads or more",
                        _zap_parallel),
    "zap-munmap-uffd-wp": ("live range of a memfd, userfaultfd-wp: zapped "
                           "by two threads or more", _zap_parallel),
    # The range three VMAs: one job over the three, as for one VMA.
    "zap-munmap-split": ("live range of three VMAs: one job, zapped by two "
                         "threads or more", _zap_one_job),
    "zap-munmap-nice-19": ("nice 19: refused", _zap_refused),
    "zap-munmap-small": ("below the threshold: nothing counted", _zap_none),
    # MADV_DONTNEED's: pz and pzt are parallel_zap_dontneed and _threads.
    "zap-dontneed-anon": ("MADV_DONTNEED, anonymous: zapped by two threads "
                          "or more", _zap_parallel),
    "zap-dontneed-thp": ("MADV_DONTNEED, THP: zapped by two threads or more",
                         _zap_parallel),
    # madvise_dontneed_vmas(): one job over the three; VMA by VMA, each
    # third is below ZAP_LOW (4 KiB and 64 KiB pages) and none would run.
    "zap-dontneed-split": ("MADV_DONTNEED of three VMAs: one job, zapped by "
                           "two threads or more", _zap_one_job),
    # Refused for the range, then zapped VMA by VMA serially (free_test
    # checks the range reads zero).  The refusals also count free_test's
    # munmap() of the mapping and its exit.
    "zap-dontneed-split-nice-19": ("MADV_DONTNEED of three VMAs, nice 19: "
                                   "refused", _zap_refused),
    # Four VMAs, the third refused (sealed, mlocked) or reported to a
    # userfaultfd: free_test checks upstream's result (MADVMID); the two
    # VMAs before it, 256 MiB each, are one job (before 2026-11-29 the
    # walk zapped them one by one: two jobs).
    "zap-dontneed-mid-sealed": ("sealed third VMA: EPERM, the two before "
                                "it one job", _zap_one_job),
    "zap-dontneed-mid-locked": ("mlocked third VMA: EINVAL, the two before "
                                "it one job", _zap_one_job),
    "zap-dontneed-mid-uffd": ("userfaultfd third VMA: its REMOVE event "
                              "after the two before it were zapped as one "
                              "job", lambda pz, pzt, *_: pz >= 1
                              and pzt >= 2),
    # The hole ends the range: the two VMAs before it one job, the one
    # after it (one block) serial; ENOMEM, both sides zero.
    "zap-dontneed-mid-gap": ("a hole for a third VMA: ENOMEM, the two "
                             "before it one job", _zap_one_job),
    "zap-dontneed-cow": ("MADV_DONTNEED, COW-shared: zapped by two threads "
                         "or more", _zap_parallel),
    "zap-dontneed-shared": ("MADV_DONTNEED of a memfd: zapped by two "
                            "threads or more", _zap_parallel),
    "zap-dontneed-locked": ("MADV_DONTNEED_LOCKED, mlocked: zapped by two "
                            "threads or more", _zap_parallel),
    "zap-dontneed-uffd": ("MADV_DONTNEED, userfaultfd (missing): its "
                          "REMOVE event, the handler's fill after; zapped "
                          "by two threads or more", _zap_parallel),
    "zap-dontneed-uffd-wp": ("MADV_DONTNEED of a memfd, userfaultfd-wp: a "
                             "marker in every zapped entry; zapped by two "
                             "threads or more", _zap_parallel),
}
ZAP_FULL_ONLY = {"zap-exit-512m-default", "zap-exit-128m", "zap-rt",
                 "zap-cgroup-cpu-max", "zap-many-3x512m",
                 "zap-munmap-uffd-wp", "zap-munmap-nice-19",
                 "zap-dontneed-uffd"}
# zap-mixed's memory cgroup once its tasks are gone: what is left charged
# (per-CPU charge stock, slab, kernel stacks not yet freed) in kB, against
# about 1.5 GiB if the zap lost pages.
ZAP_MEMCG_MAX_KB = 8 * 1024

# Free memory (MemFree + per-CPU lists, read by free.sh after dropping caches
# and shrinking every slab cache) after a case may be below what it was
# before by this much (kB): page tables and slab still held, vmstat drift.
# The readings have stepped by about 8 MiB in either direction with nothing
# run between them (build/logs/freetest.log of a063bf7: munmap-2g-thp-off
# ends at 8093660 kB, munmap-2g-thp-on starts at 8085564 kB), so one case
# can read two steps apart: 16 MiB was exceeded once in CI (rt: 8101772 ->
# 8085320 kB, the "before" reading 8 MiB above its neighbours).  The steps
# remain with the slab shrink (clean-clone CI of 690738b: readings at 8085xxx
# and 8093xxx kB), so they are not slab.  The cases' workloads are 64 MiB to
# 6 GiB (the scheduling and cgroup cases 256 MiB), so losing any of them
# whole still fails; leaks small enough to hide in one case's tolerance add
# up in the whole-run check (first reading to last, over about 25 cases),
# which has the same tolerance.
FREE_TOLERANCE_KB = 32 * 1024


def free_tolerance_kb(args):
    """FREE_TOLERANCE_KB for the guest ARGS describes, scaled with its vCPUs
    above 4 (ARGS.cpus; per-CPU caches)."""
    return FREE_TOLERANCE_KB * max(args.cpus, 4) // 4


def free_memory_checks(check, what, cases, tolerance):
    """MemFree came back in every case of CASES (FREECASE_RE tuples in the
    order the guest ran them) and over the whole run.  A case is measured
    from the lower of its own reading before and the previous case's: the
    reading a case starts from is the one the case before ended with, and
    one taken high, with that case's memory still coming back (a clean-clone
    CI run of 51467d2 read 8090944 kB after zap-exit-512m-thp-on, 33 MiB
    above the readings around it, and failed zap-mixed for ending at
    8057944), is not held against the next case; a high reading can only
    excuse as much as it was high, and the whole run is checked too."""
    prev = None
    for name, _, before, after, *_ in cases:
        before, after = int(before), int(after)
        ref = before if prev is None else min(before, prev)
        prev = before
        check(after >= ref - tolerance,
              f"{what}{name}: MemFree returned ({before} -> {after} kB, "
              f"measured from {ref}, tolerance {tolerance} kB)")
    if len(cases) > 1:
        first, last = int(cases[0][2]), int(cases[-1][3])
        check(last >= first - tolerance,
              f"{what}all {len(cases)} cases: MemFree returned ({first} -> "
              f"{last} kB, tolerance {tolerance} kB)")


def free_acct_checks(check, log, prefix=""):
    """The helpers' CPU time is charged to the caller's cgroup and to the
    caller itself (sched_account_offload()): in LOG's FREEACCT lines PREFIX
    + parallel and PREFIX + serial, the cgroup's usage grew by the caller's
    own CPU time within 5 ms + 5% in both (before 2026-11-27 the parallel
    one's grew by the helpers' time more: the task's own times left it
    out), and in the parallel one the helpers worked (their traced
    helper_ns) and the caller's time includes theirs: for the zap, at least
    90% of the traced job's CPU time, the caller's and the helpers'."""
    acct = {m[0]: (int(m[1]), int(m[2])) for m in FREEACCT_RE.findall(log)}
    par, ser = prefix + "parallel", prefix + "serial"
    if not {par, ser} <= set(acct):
        check(False, f"{prefix}acct: FREEACCT lines for {par} and {ser} "
              f"(found {sorted(acct)})")
        return
    (pcg, pself), (scg, sself) = acct[par], acct[ser]
    for name, cg, me in ((ser, scg, sself), (par, pcg, pself)):
        check(abs(cg - me) <= 5000 + me // 20,
              f"{prefix}acct-{name[len(prefix):]}: cgroup usage_usec grew "
              f"by the caller's own CPU time ({cg} against {me} us)")
    if prefix == "zap-":
        ev = [e for e in traces_by_case(log).get("zap-acct-parallel", [])
              if e[5] >= 2]
        helper = sum(e[8] for e in ev) // 1000
        job = helper + sum(e[9] for e in ev) // 1000
        check(helper >= 5000 and pself >= 0.9 * job,
              f"{prefix}acct-parallel: the caller's CPU time ({pself} us) "
              f"has the helpers' ({helper} us of the job's {job} us)")
    else:
        helper = sum(int(m[7]) for m in TLB_TRACE_RE.findall(log)) // 1000
        check(helper >= 5000 and pself >= helper,
              f"acct-parallel: the helpers worked ({helper} us) and the "
              f"caller's CPU time ({pself} us) has theirs")


def held_checks(check, log, what=""):
    """nr_parallel_free_held is back at 0 after every FREECASE and ZAPCASE
    of LOG: nothing a grown gather counted stays counted."""
    held = CASEHELD_RE.findall(log)
    bad = [f"{name} {n or 'missing'}" for name, n in held if n != "0"]
    check(bool(held) and not bad,
          f"{what}nr_parallel_free_held back at 0 after each of "
          f"{len(held)} cases" + (f": {', '.join(bad[:3])}" if bad else ""))


def held_sample_checks(check, log):
    """munmap-2g-thp-off's parent saw nr_parallel_free_held rise during
    the child's parallel munmap(): above upstream's gather size (about
    10000 pages), below twice the default threshold (2 x 262144 pages),
    where a gather stops growing."""
    m = FREEHELD_RE.search(log)
    check(m is not None and 10000 < int(m.group(1)) < 2 * 262144
          and int(m.group(3)) == 0,
          "munmap-2g-thp-off: nr_parallel_free_held rose while the 2 GiB "
          "gather grew and fell back to 0 "
          f"({m.group(0) if m else 'no FREEHELD line'})")


# The sparse cases (free_test sparse, one helper): the share of the two
# threads' CPU time in the job each must at least have.  Cut by address
# span, as before 2026-11-27, one chunk of eight held every page of the
# corner case; cut by populated entries, the two shares are near a half.
SPARSE_MIN_SHARE = 0.25


def traces_by_case(log, line="ZAPCASE"):
    """The ZAPTRACE events (ZAPTRACE_RE tuples) recorded in each case of
    LOG: those printed between the case line before it and its own."""
    out, pending = {}, []
    for text in log.splitlines():
        m = freebench.ZAPTRACE_RE.match(text)
        if m:
            # pages is None on a live zap's event (the range instead).
            pending.append(tuple(int(g or 0) for g in m.groups()))
        elif text.startswith(line + " "):
            out[text.split()[1]] = pending
            pending = []
    return out


SPARSELOOP_RE = re.compile(r"^SPARSELOOP rounds=(\d+) us=(\d+) ipis=(\d+)$")
FREEMLOCK_RE = re.compile(r"^FREEMLOCK (\S+) before_kb=(-?\d+) "
                          r"locked_kb=(-?\d+) after_kb=(-?\d+) "
                          r"drained_kb=(-?\d+) moves=(-?\d+) cpus=(\d+) "
                          r"page_kb=(\d+)$", re.M)
# Small folios an munlock batch holds (a struct folio_batch of 31 is
# drained when it fills: mm/mlock.c, include/linux/folio_batch.h).
MLOCK_BATCH = 30


def lines_by_case(log, pattern, line="ZAPCASE"):
    """The matches of PATTERN (a compiled regex, as tuples) printed in each
    case of LOG: between the case line before it and its own."""
    out, pending = {}, []
    for text in log.splitlines():
        m = pattern.match(text)
        if m:
            pending.append(m.groups())
        elif text.startswith(line + " "):
            out[text.split()[1]] = pending
            pending = []
    return out


def sparse_loop_checks(check, log):
    """zap-munmap-sparse against zap-munmap-sparse-off: no more TLB
    shootdown IPIs (x86; 0 and 0 elsewhere) with the live zap on than off,
    within a quarter and 64 for the threads' own.  Before 2026-11-29 each
    of the 10 munmap()s went parallel in ~32 chunks, each flushing its
    range to every CPU of the mm.  The times are printed, not judged."""
    got = lines_by_case(log, SPARSELOOP_RE)
    off, on = got.get("zap-munmap-sparse-off"), got.get("zap-munmap-sparse")
    ok = bool(off) and bool(on)
    if ok:
        ok = int(on[0][2]) <= int(off[0][2]) * 5 // 4 + 64
    check(ok, "zap-munmap-sparse: no more shootdown IPIs than serially "
          f"(off rounds/us/ipis {off and off[0]}, on {on and on[0]})")


def mlock_drain_checks(check, log):
    """zap-munmap-mlock: Mlocked in /proc/meminfo (vmstat folded,
    stat_refresh) up by the range's size after mlock(), back exactly to
    its value before mlock() once every CPU's batches are drained after
    munmap(), and as munmap() returns, undrained, exactly too if no
    chunk's thread moved to another CPU (the test kernel's
    zap_parallel.test_chunk_moves): each chunk drains the CPU it ends on.
    A thread that moved left up to a batch on the CPU before, so then
    within MLOCK_BATCH small folios a move (at most one a CPU); on a
    kernel without the count, one a CPU.  A kernel whose helpers do not
    drain fails whenever none moved.  zap-dontneed-locked's line is
    printed, not judged: its workers refault and mlock pages of the range
    as it is zapped."""
    m = [g for g in FREEMLOCK_RE.findall(log) if g[0] == "munmap"]
    ok = False
    if len(m) == 1:
        before, locked, after, drained, moves, cpus, page_kb = \
            map(int, m[0][1:])
        left = cpus if moves < 0 else min(moves, cpus)
        ok = locked > before and drained == before and \
            before <= after <= before + MLOCK_BATCH * page_kb * left
    d = [g for g in FREEMLOCK_RE.findall(log) if g[0] == "dontneed"]
    check(ok, "zap-munmap-mlock: Mlocked back to its value before mlock() "
          "after munmap(), drained, and undrained exactly if no chunk's "
          "thread moved, else within a munlock batch a move (before, "
          "locked, undrained, drained kB, moves, CPUs, page kB: "
          f"{m[0][1:] if m else 'no FREEMLOCK line'}; MADV_DONTNEED_LOCKED: "
          f"{d[0][1:] if d else 'none'})")


def sparse_share_checks(check, log, pkb=4):
    """zap-sparse-corner and zap-sparse-spread: zapped by the caller and
    its one helper, each with at least SPARSE_MIN_SHARE of their CPU time
    (the tracepoint's caller_cpu_ns and helper_ns).  PKB: the page size in
    kB; the exit is the one of 256 MiB or more."""
    traces = traces_by_case(log)
    for name in ("zap-sparse-corner", "zap-sparse-spread"):
        big = [e for e in traces.get(name, []) if e[0] >= 256 * 1024 // pkb]
        ok = len(big) == 1 and big[0][5] == 2
        shares = ""
        if ok:
            helper, caller = big[0][8], big[0][9]
            total = max(helper + caller, 1)
            ok = min(helper, caller) >= SPARSE_MIN_SHARE * total
            shares = (f"caller {caller / total:.0%}, helper "
                      f"{helper / total:.0%} of {total / 1e6:.0f} ms, "
                      f"{big[0][2]} entries in {big[0][3]} segments")
        check(ok, f"{name}: one exit of 1 GiB in 64 GiB zapped by two "
              f"threads, each with at least {SPARSE_MIN_SHARE:.0%} of the "
              f"work ({shares or big})")


def zap_skips(kbuild):
    """The zap's cases KBUILD's kernel cannot run: {name: why}, passed to
    free.sh as mttest.zap_skip and left out of zap_checks()."""
    skips = {}
    if page_kb(kbuild) == 64:
        skips["zap-hmm"] = ("no HMM test driver with 64 KiB pages (its "
                            "init oopses in plain 7.3.4 there)")
    if page_kb(kbuild) != 4:
        skips["zap-mremap"] = ("its layout is 4 KiB pages': 2 MiB PMD THPs "
                               "and 64 KiB folios moved across 2 MiB blocks")
    return skips


def zap_skip_param(kbuild):
    skips = zap_skips(kbuild)
    return f"mttest.zap_skip={','.join(sorted(skips))}" if skips else ""


def zap_checks(check, log, args):
    """exit_mmap()'s parallel zap: the ZAPCASE lines of LOG against
    ZAP_CASES, their memory, CPU accounting and zap-mixed's memcg; the
    cases of zap_skips() must not have run."""
    skips = zap_skips(args.kbuild)
    missing = sorted(set(re.findall(r"^VMSTAT-MISSING (\S+)$", log, re.M)))
    check(not missing, "every /proc/vmstat counter free.sh read exists "
          f"({', '.join(missing) or 'none missing'})")
    for name, why in sorted(skips.items()):
        check(re.search(rf"^ZAPSKIP {name}$", log, re.M) is not None,
              f"{name}: not run here: {why}")
    pkb = page_kb(args.kbuild)
    m = ZAPDEFAULT_RE.search(log)
    check(m is not None and m.groups() == ("0", "0"),
          "a fresh boot has vm.parallel_zap=0 and every parallel_zap* "
          f"counter at 0 ({m.group(0) if m else 'no ZAPDEFAULT line'})")
    found = ZAPCASE_RE.findall(log)
    got = {m[0]: tuple(map(int, m[1:])) for m in found}
    free_memory_checks(check, "", found, free_tolerance_kb(args))
    free_acct_checks(check, log, "zap-")
    ev = [tuple(int(g or 0) for g in m)
          for m in freebench.ZAPTRACE_RE.findall(log)]
    # The event's pages are exact sums of the mm's counters: a 512 MiB
    # exit has at least its 131072 pages of 4 KiB (8192 of 64 KiB), under
    # 256 populated PMD entries (one of 512 MiB).
    pages = 512 * 1024 // pkb
    entries = max(512 * 1024 // (pkb * pkb * 128), 1)
    check(any(e[0] >= pages and e[1] >= 1 and e[2] >= entries and e[3] >= 2
              and e[5] >= 2 and e[6] > 0 and e[8] > 0 and e[9] > 0
              for e in ev),
          f"zap trace: zap_parallel:exit_mmap_zap_parallel recorded the "
          f"512 MiB exit with threads, job, helper and caller times "
          f"({len(ev)} events: {ev[:2]})")
    sparse_share_checks(check, log, pkb)
    sparse_loop_checks(check, log)
    mlock_drain_checks(check, log)
    m = re.search(r"^ZAPNOMEM failed=(-?\d+)$", log, re.M)
    check(m is not None and m.group(1) == "1",
          "zap-nomem: failslab failed exactly one allocation, the plan's "
          f"({m.group(0) if m else 'no ZAPNOMEM line'})")
    m = re.search(r"^HMMEXIT mib=(\d+) migrated=(\d+)$", log, re.M)
    if "zap-hmm" not in skips:
        check(m is not None
              and int(m.group(2)) == int(m.group(1)) * 1024 // pkb,
              "zap-hmm: the HMM test driver migrated all of the child's "
              "pages to device-private memory before its exit "
              f"({m.group(0) if m else 'no HMMEXIT line'})")
    m = re.search(r"^ZAPMRELEASE after=(\d+) rss_from=(\d+) rss_to=(\d+)$",
                  log, re.M)
    r = re.search(r"^MRELEASE late tries=(\d+) ret=(-?\d+) errno=(\d+)$",
                  log, re.M)
    check(m is not None and int(m.group(1)) >= 1
          and int(m.group(2)) > int(m.group(3)) and r is not None
          and r.group(2) == "0",
          "zap-mrelease-late: the exit's chunks zapped after process_mrelease() "
          "started its reap, the RSS fell during the reap, and it succeeded "
          f"({m.group(0) if m else 'no ZAPMRELEASE line'}; "
          f"{r.group(0) if r else 'no MRELEASE line'})")
    m = ZAPMREMAP_RE.search(log)
    if "zap-mremap" not in skips:
        check(m is not None and int(m.group(1)) >= 1
              and int(m.group(2)) >= 1,
              "zap-mremap: mremap() left PMD THPs and 64 KiB folios "
              "PTE-mapped across PMD blocks "
              f"({m.group(0) if m else 'no ZAPMREMAP line'})")
    m = ZAPMEMCG_RE.search(log)
    check(m is not None and int(m.group(2)) <= ZAP_MEMCG_MAX_KB
          and int(m.group(3)) == 0,
          f"zap-mixed: its memory cgroup is back to at most "
          f"{ZAP_MEMCG_MAX_KB} kB and no swap after the exit "
          f"({m.group(0) if m else 'no ZAPMEMCG line'})")
    cases = {k: v for k, v in ZAP_CASES.items()
             if (not args.quick or k not in ZAP_FULL_ONLY)
             and k not in skips}
    case_checks(check, got, cases, (
        "parallel_zap", "threads", "serial", "refused", "busy", "nomem"))


def case_checks(check, got, cases, counters):
    """Each case of CASES (name -> None or (what, predicate over the
    counters' deltas)) has a result in GOT (name -> rc, MemFree before and
    after, the deltas), its workload succeeded, and its deltas satisfy the
    predicate; COUNTERS names the deltas in the messages."""
    for name, expect in cases.items():
        if name not in got:
            check(False, f"{name}: no result in the log")
            continue
        rc, before, after, *counts = got[name]
        check(rc == 0, f"{name}: the workload succeeded (rc={rc})")
        if expect is None:
            continue
        what, ok = expect
        deltas = ", ".join(f"{c} +{n}" for c, n in zip(counters, counts))
        check(ok(*counts), f"{name}: {what} ({deltas})")


def free_trace_checks(check, log):
    """The tracepoints of acct-parallel's flush: mmu_gather:tlb_parallel_free
    with helpers' time and held-back time, and mtjob:mtjob_run for the same
    job."""
    flushes = [tuple(map(int, m)) for m in TLB_TRACE_RE.findall(log)]
    jobs = JOB_TRACE_RE.findall(log)
    check(any(f[0] >= 262144 and f[4] >= 2 and f[5] > 0 and f[6] > 0
              and f[7] > 0 for f in flushes),
          f"trace: mmu_gather:tlb_parallel_free recorded a flush of the "
          f"threshold with helpers, held-back, free and helper times "
          f"({len(flushes)} events: {flushes[:2]})")
    check(any(j[0] == "tlb_free_parallel" and j[1] == "rust"
              and int(j[4]) >= 2 and int(j[6]) == 0 for j in jobs),
          f"trace: mtjob:mtjob_run recorded the flush's job "
          f"({len(jobs)} events: {jobs[:2]})")


def toggle_trace_checks(check, log):
    """key-toggling's parallel flushes (TOGGLETRACE).  Its teardowns free
    order-0 anonymous pages (free_test maps with MADV_NOHUGEPAGE), one per
    batch entry, so the pages to free a flush counts fit in its batches:
    7 + 509 x (batches - 1).  Pages are not counted while the key is off;
    before 2026-11-24 the count was not reset either, so pages counted
    before the key went off, and freed serially since, were still counted
    at the first flush after it came back on, which could then go parallel
    with fewer pages than the threshold.  Whether such a flush exceeds the
    bound depends on how many uncounted pages it holds: each switch is a
    draw, and the case has hundreds (41 s of switching every 0.1 s in
    make check on 2026-11-27)."""
    flushes = [tuple(map(int, m)) for m in TOGGLE_TRACE_RE.findall(log)]
    check(len(flushes) >= 1,
          f"key-toggling: traced parallel flushes between switches "
          f"({len(flushes)})")
    over = [f for f in flushes if not f[0] <= f[1] or
            f[0] > LOCAL_BATCH_PAGES + BATCH_PAGES * (f[2] - 1)]
    check(flushes and not over,
          "key-toggling: no parallel flush counts more pages to free than "
          f"its batches hold ({LOCAL_BATCH_PAGES} + {BATCH_PAGES} x "
          f"(batches - 1); freeable <= gathered; over: {over[:3]})")


NODELOW_RE = re.compile(r"^NODELOW node=(\d+) huge=(\d+) free=(\d+) "
                        r"low=(\d+)$", re.M)
NODELOW_AFTER_RE = re.compile(r"^NODELOW-AFTER node=(\d+) free=(\d+) "
                              r"low=(\d+)$", re.M)


def node_low_checks(check, log):
    """node-low's premise: its node was below its low watermark (without
    the boost, as the parallel free reads it), held there by huge pages,
    when its teardown started and still when it ended."""
    m = NODELOW_RE.search(log)
    check(m is not None and int(m[2]) > 0 and int(m[3]) < int(m[4]),
          "node-low: the node's free pages below its low watermark, held by "
          f"huge pages ({m.group(0) if m else 'no NODELOW line'})")
    m = NODELOW_AFTER_RE.search(log)
    check(m is not None and int(m[2]) < int(m[3]),
          "node-low: still below it after the teardown "
          f"({m.group(0) if m else 'no NODELOW-AFTER line'})")


CASETIME_RE = re.compile(r"^CASETIME (\S+) total_cs=(\d+) memfree_cs=(\d+)$",
                         re.M)


def case_times(log, slowest=6):
    """One line on where the free tests' time went (free.sh's CASETIME
    lines): the cases' total, their memfree() readings' share, the
    slowest cases.  Information for trimming 'make check', not a check."""
    times = [(n, int(t) / 100, int(m) / 100)
             for n, t, m in CASETIME_RE.findall(log)]
    if not times:
        return "case times: no CASETIME line"
    top = sorted(times, key=lambda x: -x[1])[:slowest]
    return (f"case times: {len(times)} cases and selftests took "
            f"{sum(t for _, t, _ in times):.0f} s, "
            f"{sum(m for _, _, m in times):.0f} s of it reading MemFree; "
            "slowest: " + ", ".join(f"{n} {t:.0f} s" for n, t, _ in top))


FREE_COUNTERS = ("tlb_parallel_free", "threads", "fallback", "nogrow",
                 "nogrow_memory", "nogrow_busy")
# The isolcpus guest's case: CPU 1 of two is isolated from the scheduling
# domains, and so out of the unbound workqueue cpumask: a 2 GiB munmap() on
# CPU 0 finds no CPU for a helper, and is asked again at each flush.
ISOLCPUS_CASE = (
    "isolcpus=domain,1, 2 vCPUs: no helper reserved (none on the "
    "isolated CPU), rounds without helpers, none refused for good",
    lambda pf, pft, pff, png, pnm, pnb: pf == 0 and pff == 0
    and pnb >= 1 and png == 0)


def free_guest(check, args, gargs, mode):
    """Boot GARGS's guest with mttest.free=MODE (free.sh runs that mode's
    case): it powers off with a clean log, nr_parallel_free_held back at 0
    and memory back after each case.  Returns the log and its FREECASE
    lines."""
    r, log = boot(gargs, "rust", f"mttest.free={mode} "
                  f"{zap_skip_param(gargs.kbuild)}")
    path = save_log(args, f"freetest-{mode}.log", log)
    check(r["ok"], f"{mode}: the guest ran its case and powered off "
          f"({r['wall']:.1f} s; log {path})")
    check(not r["bad"], f"{mode}: no BUG/WARNING/lockdep in the log"
          + (f": {r['bad'][0]}" if r["bad"] else ""))
    cases = FREECASE_RE.findall(log)
    held_checks(check, log, f"{mode}: ")
    free_memory_checks(check, "", cases, free_tolerance_kb(gargs))
    return log, cases


def isolcpus_args(args):
    iargs = copy.copy(args)
    iargs.nodes, iargs.cpus, iargs.mem_gib = 1, 2, 4
    iargs.append = f"{args.append} isolcpus=domain,1".strip()
    return iargs


def freetest_only(args, check):
    """freetest --only MODE: one case in a guest of its own, with the checks
    make check gives it (toggling: key-toggling, traced; isolcpus)."""
    args.timeout = max(args.timeout, 1200)
    if args.only == "selftests":
        # The mm selftests alone (arm64's check-full: the quick freetest
        # does not fit one boot there), zapped at the lowest threshold.
        params = free_params(args.quick).replace("mttest.free=quick",
                                                 "mttest.free=selftest")
        params = params.replace("mttest.free=test", "mttest.free=selftest")
        r, log = boot(args, "rust", f"{params} mttest.selftest_reps=1 "
                      f"{hugetlb_selftest_param(args.kbuild)}")
        path = save_log(args, "freetest-selftests.log", log)
        check(r["ok"], f"selftests: the guest ran them and powered off "
              f"({r['wall']:.1f} s; log {path})")
        check(not r["bad"], "selftests: no BUG/WARNING/lockdep in the log"
              + (f": {r['bad'][0]}" if r["bad"] else ""))
        mm_selftest_checks(check, log, args.quick, args.kbuild)
        return check.finish("freetest")
    if args.only == "zap":
        args.quick = True
        log, _ = free_guest(check, args, args, "zap")
        zap_checks(check, log, args)
        return check.finish("freetest")
    if args.only == "toggling":
        log, cases = free_guest(check, args, args, "toggling")
        toggle_trace_checks(check, log)
        expect = {"key-toggling": FREE_CASES["key-toggling"]}
    else:
        log, cases = free_guest(check, args, isolcpus_args(args), "isolcpus")
        expect = {"isolcpus": ISOLCPUS_CASE}
    case_checks(check, {m[0]: tuple(map(int, m[1:])) for m in cases},
                expect, FREE_COUNTERS)
    return check.finish("freetest")


def cmd_freetest(args):
    check = Checks()
    if args.only:
        return freetest_only(args, check)
    # One boot runs every case (25 minutes with --quick under TCG on 2
    # host cores before MemFree was read once between cases, 2026-11-27);
    # the mtjob engine after boot is always the Rust one.
    args.timeout = max(args.timeout, 2400)
    r, log = boot(args, "rust", f"{free_params(args.quick)} "
                  f"{zap_skip_param(args.kbuild)} "
                  f"{hugetlb_selftest_param(args.kbuild)}")
    path = save_log(args, "freetest.log", log)
    check(r["ok"], f"guest ran the free tests and powered off "
          f"({r['wall']:.1f} s; log {path})")
    check(not r["bad"], "no BUG/WARNING/Bad page state/lockdep/soft lockup "
          "in the log" + (f": {r['bad'][0]}" if r["bad"] else ""))
    m = FREEDEFAULT_RE.search(log)
    check(m is not None and m.groups() == ("0", "0"),
          "a fresh boot has vm.parallel_free=0 and every tlb_parallel_free* "
          f"counter at 0 ({m.group(0) if m else 'no FREEDEFAULT line'})")
    print("# " + case_times(log))
    main_cases = FREECASE_RE.findall(log)
    got = {m[0]: tuple(map(int, m[1:])) for m in main_cases}
    zap_checks(check, log, args)
    free_acct_checks(check, log)
    free_trace_checks(check, log)
    held_checks(check, log)
    held_sample_checks(check, log)
    node_low_checks(check, log)
    toggle_trace_checks(check, log)
    mm_selftest_checks(check, log, args.quick, args.kbuild)
    free_memory_checks(check, "", main_cases,
                       free_tolerance_kb(args))
    cases = {k: v for k, v in FREE_CASES.items()
             if not args.quick or k not in FREE_FULL_ONLY}
    # The hotplug and isolcpus guests are check-full's (and make stress
    # runs a longer hotplug part): with them make check took about 66
    # minutes in a clean clone of stop 52 (freetest 1902 s, beside a nice
    # 19 build), past its hour; they took 95 and 61 s of it.
    if args.quick:
        print("# freetest --quick: no hotplug or isolcpus guest "
              "(make check-full, make stress)")
    else:
        # CPU hotplug during teardowns: a guest of 4 nodes x 2 vCPUs of its own.
        hargs = copy.copy(args)
        hargs.nodes, hargs.cpus, hargs.mem_gib = 4, 8, 8
        hot = args.hotplug_seconds // (2 if args.quick else 1)
        r, log = boot(hargs, "rust",
                      f"mttest.free=hotplug mttest.hotplug_seconds={hot}")
        path = save_log(args, "freetest-hotplug.log", log)
        m = FREEHOTPLUG_RE.search(log)
        check(r["ok"] and m is not None and int(m.group(1)) > 0,
              f"hotplug: 4 nodes x 2 vCPUs, CPUs 1-7 offlined and onlined "
              f"{m.group(1) if m else 'no'} times during teardowns, "
              f"{m.group(2) if m else 'no'} exits zapped in parallel "
              f"({r['wall']:.1f} s; log {path})")
        check(not r["bad"], "hotplug: no BUG/WARNING/lockdep in the log"
              + (f": {r['bad'][0]}" if r["bad"] else ""))
        # Once the CPUs are back and the workloads done, the gate must let a
        # live munmap() go parallel again (free.sh's FREEHOTPLUG-AFTER).
        ma = FREEHOTPLUG_AFTER_RE.search(log)
        check(ma is not None and int(ma.group(2)) >= 1,
              "hotplug: after the CPUs came back, a live munmap() was zapped in "
              "parallel again" + (f" (try {ma.group(1)} of 5)" if ma and
                                  int(ma.group(2)) >= 1 else
                                  f" ({ma.group(0) if ma else 'no FREEHOTPLUG-AFTER line'})"))
        # The live ranges' zaps during hotplug: counted, not required (8 vCPUs
        # on the host's cores leave an idle one only now and then); make
        # stress requires one.
        live, lthreads = (int(m.group(4)), int(m.group(5))) if m else (0, 0)
        check(lthreads >= 2 * live, f"hotplug: {live} munmap()s and "
              f"MADV_DONTNEEDs zapped in parallel with {lthreads} threads")
        hot_cases = FREECASE_RE.findall(log)
        held_checks(check, log, "hotplug: ")
        got.update({m[0]: tuple(map(int, m[1:])) for m in hot_cases})
        free_memory_checks(check, "", hot_cases,
                           free_tolerance_kb(hargs))
        # A parallel path ran (the free, the exit zap or the live zap), or the
        # gate refused as busy: with all but CPU 0 down for part of the run,
        # and 8 vCPUs on the host's 2 cores, a gate that finds no idle CPU is
        # right (CI of stop 51: the free refused twice, nothing parallel; a
        # run of stop 52: the free neither, as the zaps took every teardown).
        # What must not happen is nothing at all.  make stress's longer
        # hotplug part requires each path to run in parallel.
        hz = (int(m.group(2)) + int(m.group(4)), int(m.group(6) or 0)) if m \
            else (0, 0)
        cases["hotplug"] = (
            f"during hotplug: a parallel path ran or was refused as busy "
            f"(zaps {hz[0]}, zaps refused as busy {hz[1]})",
            lambda pf, pft, pff, png, pnm, pnb: pf + hz[0] >= 1
            or pnb + hz[1] >= 1)
        # isolcpus: CPU 1 of two isolated (ISOLCPUS_CASE).
        _, iso_cases = free_guest(check, args, isolcpus_args(args), "isolcpus")
        got.update({m[0]: tuple(map(int, m[1:])) for m in iso_cases})
        cases["isolcpus"] = ISOLCPUS_CASE
    case_checks(check, got, cases, FREE_COUNTERS)
    return check.finish("freetest")


def cmd_freebench(args):
    """munmap()/exit()/MADV_DONTNEED time: parallel freeing off, by node,
    interleaved, one helper, and the parallel zap."""
    benchplot.pyplot()          # before the boot, not after it
    extra = f"mttest.free=bench mttest.free_reps={args.repeat}"
    if args.sizes:
        extra += f" mttest.free_sizes={args.sizes}"
    if args.modes:
        extra += f" mttest.free_modes={args.modes}"
    if args.thp:
        extra += f" mttest.free_thp={args.thp}"
    if args.what:
        bad = set(args.what.split(",")) - {"munmap", "exit", "dontneed",
                                           "live", "live-dontneed"}
        if bad:
            die(f"--what: {','.join(sorted(bad))}: not munmap, exit, "
                "dontneed, live or live-dontneed")
        extra += f" mttest.free_what={args.what}"
    if args.phases or args.locks:
        extra += " mttest.free_phases=1"
    if args.locks:
        extra += " mttest.free_locks=1"
    if args.spread:
        extra += " mttest.free_spread=1"
    if args.local:
        extra += " mttest.free_local=1"
    if args.tlbi and not args.log:
        args.plugin = tlbi_plugin(args)
    if args.log:
        # Tables and plots again from a saved log: no boot.
        with open(args.log) as f:
            log = f.read()
        r, path = parse(log, "rust", 0), args.log
    else:
        r, log = boot(args, "rust", extra)
        path = save_log(args, f"freebench-{args.nodes}n{args.cpus}c.log", log)
    if r["bad"]:
        die(f"the benchmark guest logged {r['bad'][0]!r}; see {path}")
    if not r["ok"]:
        print(f"freebench: the guest did not finish (see {path}); the runs "
              "it completed follow", file=sys.stderr)
    return freebench.report(args, log, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("command", choices=("run", "boottest", "hugetlbtest",
                                        "hugetlbbench", "freetest",
                                        "freebench", "oopstest"))
    ap.add_argument("--kbuild", default=os.environ.get(
        "KBUILD", os.path.join(REPO, "build", "kbuild-7.3")))
    ap.add_argument("--mem", dest="mem_gib", type=int, default=8,
                    help="guest memory in GiB, split evenly over the nodes")
    ap.add_argument("--cpus", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--engines", default="rust,padata",
                    help="comma-separated ENGINE[:PARAM[:PARAM]]: rust, "
                    "padata, serial, e.g. rust:mtjob.max_threads=1")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--append", default="", help="extra kernel parameters")
    ap.add_argument("--accel", choices=("tcg", "kvm"), default="tcg")
    ap.add_argument("--timeout", type=int, default=300, help="seconds a boot")
    ap.add_argument("--hotplug-seconds", type=int, default=60,
                    help="freetest: how long CPUs go offline and online "
                    "during teardowns")
    ap.add_argument("--sizes", default="", help="freebench: teardown sizes "
                    "in MiB, comma-separated (default 2048,4096,6144)")
    ap.add_argument("--modes", default="", help="freebench: off, by_node, "
                    "interleave, by_node_1h, zap, comma-separated (default "
                    "all but zap)")
    ap.add_argument("--thp", default="", help="freebench: 0 (THP off), 1 "
                    "(on) or 0,1 (default 0)")
    ap.add_argument("--what", default="", help="freebench: munmap, exit, "
                    "dontneed (madvise(MADV_DONTNEED) of the whole mapping), "
                    "live, live-dontneed (the middle of a mapping, with a "
                    "thread on every CPU using the mm: free_test live), "
                    "comma-separated (default munmap,exit)")
    ap.add_argument("--phases", action="store_true", help="freebench: "
                    "profile every run (ftrace's function profiler; the "
                    "benchmark kernel has it) and print the time of the "
                    "walk, TLB flushes, page frees and page tables")
    ap.add_argument("--locks", action="store_true", help="freebench: "
                    "--phases, and the page frees' locks profiled too "
                    "(a zone's lock, a node's LRU lock, every contended "
                    "spinlock's wait): their time and the contended "
                    "acquisitions; the profiler's hooks on those hot "
                    "functions slow every run, so apart from --phases")
    ap.add_argument("--selftests", default="", help="freetest --only "
                    "selftests: these mm selftests (NAME,...) instead of "
                    "the kernel's set, e.g. one left out there")
    ap.add_argument("--qemu-cpu", default="", help="QEMU's -cpu (default: "
                    "max; on arm64 max,pauth-impdef=on), e.g. max to time "
                    "arm64's guest with QARMA5 pointer authentication")
    ap.add_argument("--tlbi", action="store_true", help="freebench, arm64: "
                    "count the TLBIs of every teardown by kind with QEMU's "
                    "TCG plugin tests/qemu_plugins/tlbi.c (arm64 invalidates "
                    "other CPUs' TLBs by broadcast, not IPIs)")
    ap.add_argument("--log", default="", help="freebench: tables and plots "
                    "from this saved log instead of a boot")
    ap.add_argument("--quick", action="store_true",
                    help="hugetlbtest: engines after the first on the first "
                    "scenarios only; freetest: 16 of the 33 free cases and "
                    "44 of the 52 zap cases, those of the exit, munmap() and "
                    "MADV_DONTNEED (free.sh's full_case ones left out), the mm selftests but MM_SELFTESTS_FULL_ONLY, and "
                    "half the hotplug time ('make check')")
    ap.add_argument("--spread", action="store_true",
                    help="freebench: before an exit, a thread on every CPU "
                    "rewrites part of its memory, so that every CPU has "
                    "used the mm (TLB shootdowns then reach them all)")
    ap.add_argument("--local", action="store_true",
                    help="freebench: memory where the default policy puts "
                    "it, one VMA (FREE_TEST_LOCAL), instead of half bound "
                    "to each of two nodes, two VMAs")
    ap.add_argument("--only", choices=("toggling", "isolcpus", "zap",
                                       "selftests"),
                    help="freetest: only this case, in a guest of its own "
                    "(toggling: key-toggling, traced; zap: the parallel "
                    "zap's cases that --quick runs; selftests: the mm "
                    "selftests with the zap at its lowest threshold)")
    ap.add_argument("--prealloc", action="store_true",
                    help="QEMU allocates and touches all guest memory before "
                    "the guest starts (memory-backend-ram prealloc=on), so "
                    "that the host's page faults are not in the guest's "
                    "timings (the benchmarks)")
    ap.add_argument("--no-teardown", dest="teardown", action="store_false",
                    help="run: no teardowns after the Rust engine's boots")
    ap.add_argument("--no-placement", dest="placement", action="store_false",
                    help="run: no boots of 2 vCPUs per node counting where "
                    "helpers ran")
    ap.add_argument("--prealloc-auto", action="store_true",
                    help="--prealloc when the guest's memory is at most 80%% "
                    "of the host's MemAvailable (make run)")
    ap.add_argument("--logdir", default=os.path.join(REPO, "build", "logs"))
    args = ap.parse_args()
    if args.prealloc_auto:
        args.prealloc = runreport.prealloc_fits(args.mem_gib)
    args.mem_opts = ",prealloc=on" if args.prealloc else ""
    args.engines = [e for e in args.engines.split(",") if e]
    for e in args.engines:
        if split_spec(e)[0] not in ("rust", "padata", "serial"):
            die(f"unknown engine {e!r}: use rust, padata or serial")
    for m in filter(None, args.modes.split(",")):
        if m not in freebench.MODES:
            die(f"unknown --modes entry {m!r}: use "
                f"{', '.join(freebench.MODES)}")
    if not re.fullmatch(r"(\d+(,\d+)*)?", args.sizes):
        die(f"--sizes {args.sizes!r}: MiB, comma-separated")
    if args.repeat < 1 or args.nodes < 1 or args.cpus < 1:
        die("--repeat, --nodes and --cpus must be at least 1")
    os.makedirs(args.logdir, exist_ok=True)
    if args.selftests:
        MM_SELFTESTS_ONLY[:] = args.selftests.split(",")
    arch = guest_arch(args.kbuild)
    args.initrd = os.path.join(
        os.path.dirname(args.logdir),
        "initramfs.cpio" if arch == "x86_64" else f"initramfs-{arch}.cpio")
    make_initramfs(args.kbuild, args.initrd,
                   mm_selftests=args.command == "freetest")
    sys.exit({"run": cmd_run, "boottest": cmd_boottest,
              "hugetlbtest": cmd_hugetlbtest,
              "hugetlbbench": cmd_hugetlbbench, "freetest": cmd_freetest,
              "freebench": cmd_freebench,
              "oopstest": cmd_oopstest}[args.command](args))


if __name__ == "__main__":
    main()
