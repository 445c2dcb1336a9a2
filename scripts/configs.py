#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Build the series in the configurations the kernel's bots build (make
configs): each entry of ENTRIES is a base configuration (x86_64's
tinyconfig plus tests/configs/x86_64.config, or arm64's defconfig plus
tests/configs/arm64.config) changed by one or two options, built whole
(vmlinux) with CONFIG_WERROR=y (clang and rustc warnings are errors), then
the series' C files that the entry compiles rebuilt with W=1 and sparse
(C=1, through scripts/sparse-7.3: Debian 12's sparse with the two things
7.3's headers need of a newer one).  A W=1 or sparse warning counts when it is in a file the series adds
or at a line it adds to an upstream file; the others are upstream 7.3's,
listed in the entry's log, not counted.  --cocci runs coccicheck
(MODE=report) on the series' C files once, through kbuild's
CHECK=scripts/coccicheck, in the first entry built: its semantic patches
read the source, which the configurations do not change.

Each entry keeps its build directory (build/configs/NAME), so that a second
run is incremental; ccache is used when it is installed.

  configs.py [--only NAME,...] [--list] [--cocci] [--no-sparse]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREE = os.environ.get("TREE", os.path.join(REPO, "build", "linux-7.3"))
OUT = os.path.join(REPO, "build", "configs")
LLVM = os.environ.get("LLVM", "-19")
# Debian 12's sparse, made to read 7.3's headers (see the script).
SPARSE = os.path.join(REPO, "scripts", "sparse-7.3")

# (name, arch, scripts/config arguments over the base, why).  The issue's
# matrix (issue 37): each option on its own, against a base that has every
# feature the series touches on.
ENTRIES = [
    ("base", "x86_64", [], "every feature the series touches"),
    ("rust-n", "x86_64", ["-d", "RUST"],
     "what distributions build: mtjob_run() on padata, no parallel free"),
    ("mtjob-rust-n", "x86_64", ["-d", "MTJOB_RUST"],
     "Rust without the engine"),
    ("numa-n", "x86_64", ["-d", "NUMA"], "one node"),
    ("smp-n", "x86_64", ["-d", "SMP"], "one CPU: no MTJOB_RUST"),
    ("memcg-n", "x86_64", ["-d", "MEMCG"], "helpers' memcg charging"),
    ("cgroups-n", "x86_64", ["-d", "CGROUPS"], "no CPU accounting moves"),
    ("thp-n", "x86_64", ["-d", "TRANSPARENT_HUGEPAGE"], "no PMD folios"),
    ("hugetlbfs-n", "x86_64", ["-d", "HUGETLBFS"], "no boot-time hugetlb"),
    ("deferred-n", "x86_64", ["-d", "DEFERRED_STRUCT_PAGE_INIT"],
     "no deferred init (and no padata user)"),
    ("preempt-rt", "x86_64", ["-d", "PREEMPT_NONE", "-d", "PREEMPT",
                              "-e", "PREEMPT_RT"], "sleeping spinlocks"),
    # PREEMPT_NONE (and PREEMPT_VOLUNTARY) cannot be had on x86_64 or
    # arm64 in 7.3: they depend on ARCH_NO_PREEMPT (and on
    # !ARCH_HAS_PREEMPT_LAZY), kernel/Kconfig.preempt.  The nearest model
    # is the lazy one, without PREEMPT_DYNAMIC.
    ("preempt-lazy", "x86_64", ["-d", "PREEMPT", "-e", "PREEMPT_LAZY",
                                "-d", "PREEMPT_DYNAMIC"],
     "lazy preemption, the nearest to PREEMPT_NONE 7.3 has here"),
    ("prove-locking-n", "x86_64", ["-d", "PROVE_LOCKING"],
     "no lockdep maps (the join's map is empty)"),
    ("parallel-free-n", "x86_64", ["-d", "MMU_GATHER_PARALLEL_FREE",
                                   "-e", "EXIT_MMAP_PARALLEL_ZAP"],
     "the zap without the parallel free"),
    ("parallel-zap-live-n", "x86_64", ["-d", "PARALLEL_ZAP_LIVE",
                                       "-e", "EXIT_MMAP_PARALLEL_ZAP"],
     "the exit's zap without the live zap (munmap(), MADV_DONTNEED)"),
    ("arm64-defconfig", "arm64", [], "arm64's defconfig with the series"),
]

WARNING_RE = re.compile(r"^(\S+?\.[ch]):(\d+):(?:\d+:)? (warning|error): (.*)$",
                        re.M)


def die(msg):
    sys.stderr.write(f"configs: {msg}\n")
    sys.exit(2)


def series_c_files():
    out = subprocess.run([sys.executable, os.path.join(REPO, "scripts",
                                                       "overlay.py"),
                          "files", "--repo", REPO],
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.split() if f.endswith(".c")]


def added_lines(path):
    """Line numbers of PATH (in TREE) that the series adds; None for a file
    the series adds (every line is its own)."""
    if subprocess.run(["git", "-C", TREE, "cat-file", "-e", f"base:{path}"],
                      capture_output=True).returncode:
        return None
    out = subprocess.run(["git", "-C", TREE, "diff", "-U0", "base", "--",
                          path], capture_output=True, text=True).stdout
    lines = set()
    for m in re.finditer(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", out, re.M):
        start, n = int(m.group(1)), int(m.group(2) or 1)
        lines.update(range(start, start + n))
    return lines


def make_cmd(kbuild, arch):
    cmd = ["make", "-C", TREE, f"O={kbuild}", f"LLVM={LLVM}",
           f"-j{os.cpu_count() + 1}"]
    if arch != "x86_64":
        cmd.append(f"ARCH={arch}")
    if shutil.which("ccache"):
        cmd.append(f"CC=ccache clang{LLVM}")
    return cmd


def configure(name, arch, opts, log):
    """Write build/configs/NAME/.config; return the options that did not
    take (a dependency the entry did not satisfy)."""
    kbuild = os.path.join(OUT, name)
    os.makedirs(kbuild, exist_ok=True)
    frag = os.path.join(REPO, "tests", "configs", f"{arch}.config")
    base = "tinyconfig" if arch == "x86_64" else "defconfig"
    make = make_cmd(kbuild, arch)
    # The base, the fragment, then the entry's change, then olddefconfig.
    for cmd in (make + [base],
                [os.path.join(TREE, "scripts", "kconfig", "merge_config.sh"),
                 "-m", "-O", kbuild, os.path.join(kbuild, ".config"), frag],
                [os.path.join(TREE, "scripts", "config"), "--file",
                 os.path.join(kbuild, ".config")] + opts if opts else None,
                make + ["olddefconfig"]):
        if cmd is None:
            continue
        res = subprocess.run(cmd, capture_output=True, text=True,
                             cwd=TREE, env=dict(os.environ, ARCH=arch if
                                                arch != "x86_64" else "x86"))
        log.write(res.stdout + res.stderr)
        if res.returncode:
            die(f"{name}: {' '.join(cmd[:3])} ... failed (see {log.name})")
    with open(os.path.join(kbuild, ".config")) as f:
        config = f.read()
    # The entry's own change must have taken; the base entries (no change)
    # must have every option of the fragment, or the whole matrix would
    # build less than it says.
    want = {}
    if not opts:
        with open(frag) as f:
            for ln in f:
                m = re.match(r"^CONFIG_(\w+)=y$", ln.strip())
                if m:
                    want[m.group(1)] = True
    for flag, sym in zip(opts[::2], opts[1::2]):
        want[sym] = flag == "-e"
    missed = []
    for sym, on in want.items():
        is_on = re.search(rf"^CONFIG_{sym}=y$", config, re.M) is not None
        if on != is_on:
            missed.append(f"CONFIG_{sym}={'y' if on else 'n'}")
    return missed, config


def build(name, arch, objs_wanted, sparse, cocci, log):
    """Build vmlinux, then rebuild the series' objects with W=1 (and C=1);
    return (ok, new warnings, upstream warnings, seconds)."""
    kbuild = os.path.join(OUT, name)
    make = make_cmd(kbuild, arch)
    t0 = time.monotonic()
    res = subprocess.run(make + ["vmlinux"], capture_output=True, text=True)
    log.write(res.stdout + res.stderr)
    if res.returncode:
        tail = (res.stdout + res.stderr)[-4000:]
        return False, [f"the build failed (CONFIG_WERROR=y):\n{tail}"], [], \
            time.monotonic() - t0
    objs = sorted({o for o in (object_of(kbuild, f) for f in objs_wanted)
                   if o})
    text = ""
    if objs:
        # Touch to force the rebuild: C=1 checks only what it compiles.
        touch(objs_wanted)
        extra = ["W=1", "KCFLAGS=-Wno-error"] + \
            (["C=1", f"CHECK={SPARSE}"] if sparse else [])
        res = subprocess.run(make + extra + objs, capture_output=True,
                             text=True)
        log.write(res.stdout + res.stderr)
        text += res.stdout + res.stderr
        if cocci:
            touch(objs_wanted)
            # An absolute CHECK: scripts/checker-valid.sh looks it up from
            # the build directory.
            check = os.path.join(TREE, "scripts", "coccicheck")
            res = subprocess.run(make + ["C=1", f"CHECK={check}",
                                         "MODE=report"] + objs,
                                 capture_output=True, text=True)
            log.write(res.stdout + res.stderr)
            text += cocci_findings(res.stdout + res.stderr)
    new, upstream, added = [], [], {}
    for m in WARNING_RE.finditer(text):
        path = os.path.relpath(os.path.realpath(os.path.join(kbuild, m[1])),
                               os.path.realpath(TREE))
        if path.startswith(".."):
            path = os.path.relpath(os.path.realpath(os.path.join(TREE, m[1])),
                                   os.path.realpath(TREE))
        if path not in added:
            added[path] = added_lines(path)
        lines = added[path]
        entry = f"{path}:{m[2]}: {m[3]}: {m[4]}"
        if lines is None or int(m[2]) in lines:
            new.append(entry)
        else:
            upstream.append(entry)
    return True, sorted(set(new)), sorted(set(upstream)), \
        time.monotonic() - t0


def object_of(kbuild, path):
    """The object KBUILD builds PATH into: its own, or that of the file in
    its directory that #includes it (kernel/sched/build_*.c,
    rust/helpers/helpers.c); None if the entry builds neither."""
    if os.path.exists(os.path.join(kbuild, path[:-2] + ".o")):
        return path[:-2] + ".o"
    d, base = os.path.split(path)
    for f in sorted(os.listdir(os.path.join(TREE, d))):
        if not f.endswith(".c") or f == base:
            continue
        obj = os.path.join(d, f[:-2] + ".o")
        if not os.path.exists(os.path.join(kbuild, obj)):
            continue
        with open(os.path.join(TREE, d, f), errors="replace") as src:
            if re.search(rf'^#include "{re.escape(base)}"', src.read(), re.M):
                return obj
    return None


def touch(paths):
    for f in paths:
        os.utime(os.path.join(TREE, f))


def sparse_usable():
    """Whether kbuild would run sparse (C=1) through scripts/sparse-7.3:
    7.3's scripts/checker-valid.sh rejects a sparse that cannot read
    __typeof_unqual__, and kbuild then turns C=1 off."""
    if not shutil.which("sparse"):
        return False, "sparse is not installed (apt-get install sparse)"
    res = subprocess.run(["sh", os.path.join(TREE, "scripts",
                                             "checker-valid.sh"), SPARSE],
                         capture_output=True, text=True)
    if res.stdout.strip() != "1":
        ver = subprocess.run(["sparse", "--version"], capture_output=True,
                             text=True).stdout.strip()
        return False, (f"sparse {ver} fails scripts/checker-valid.sh even "
                       "through scripts/sparse-7.3")
    return True, ""


def cocci_findings(text):
    """coccicheck's report lines ('FILE:LINE:COL-COL: MESSAGE') as
    warnings WARNING_RE reads."""
    out = []
    for m in re.finditer(r"^(\S+?\.[ch]):(\d+):\d+-\d+: (.*)$", text, re.M):
        out.append(f"{m[1]}:{m[2]}: warning: coccicheck: {m[3]}")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", default="",
                    help="comma-separated entry names (default: all)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--cocci", action="store_true",
                    help="coccicheck the series' C files in the first entry")
    ap.add_argument("--no-sparse", dest="sparse", action="store_false")
    args = ap.parse_args()
    if args.list:
        for name, arch, opts, why in ENTRIES:
            print(f"{name:18} {arch:7} {' '.join(opts) or '(base)':55} {why}")
        return 0
    names = [n for n in args.only.split(",") if n]
    known = {e[0] for e in ENTRIES}
    for n in names:
        if n not in known:
            die(f"no entry {n!r}: see --list")
    if not os.path.isdir(TREE):
        die(f"{TREE} is missing: run 'make apply' first")
    if args.sparse:
        args.sparse, why = sparse_usable()
        if not args.sparse:
            print(f"# sparse: not run: {why}")
    if args.cocci and not shutil.which("spatch"):
        die("spatch is missing: apt-get install coccinelle")
    files = series_c_files()
    os.makedirs(OUT, exist_ok=True)
    failed = 0
    cocci = args.cocci
    for name, arch, opts, why in ENTRIES:
        if names and name not in names:
            continue
        logpath = os.path.join(OUT, f"{name}.log")
        with open(logpath, "w") as log:
            t0 = time.monotonic()
            missed, _ = configure(name, arch, opts, log)
            if missed:
                print(f"not ok - {name}: the configuration did not take "
                      f"{', '.join(missed)} ({why}; log {logpath})")
                failed += 1
                continue
            ok, new, upstream, secs = build(name, arch, files, args.sparse,
                                            cocci, log)
            log.write("\nupstream's own warnings in the series' files "
                      f"(not counted):\n" + "\n".join(upstream) + "\n")
        cocci = False
        secs = time.monotonic() - t0
        what = "W=1" + (", sparse" if args.sparse else "")
        if ok and not new:
            print(f"ok - {name}: builds with CONFIG_WERROR=y, no new {what} "
                  f"warning in the series' files ({len(upstream)} upstream; "
                  f"{secs:.0f} s; {why})")
        else:
            failed += 1
            print(f"not ok - {name}: {why} ({secs:.0f} s; log {logpath})")
            for w in new:
                print(f"  {w}")
        sys.stdout.flush()
    print(f"configs: {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
