#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Boot the project's kernel in a QEMU NUMA guest and report or test.

  guest.py run       boot once per engine (and repetition), print a report
  guest.py boottest  boot with each engine and check that deferred struct page
                     init went through it with identical results

The guest userspace is an initramfs made with the kernel's own
usr/gen_init_cpio from busybox-static and tests/guest/init.  QEMU runs with
TCG (KVM hangs on the machines this was written on; --accel kvm to try it).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUSYBOX = "/bin/busybox"

DEFERRED_RE = re.compile(
    r"node (\d+) deferred pages initialised: (\d+) pages in (\d+) us, "
    r"engine (\w+), (\d+) threads \((\d+) more grown on demand\)")
MEMINFO_RE = re.compile(r"^(MemTotal|MemFree):\s+(\d+) kB", re.M)


def die(msg):
    sys.stderr.write(f"guest: {msg}\n")
    sys.exit(2)


def make_initramfs(kbuild, out):
    """Write the guest initramfs to OUT with the kernel's gen_init_cpio."""
    gen = os.path.join(kbuild, "usr", "gen_init_cpio")
    if not os.access(gen, os.X_OK):
        die(f"{gen} is missing: build the kernel (CONFIG_BLK_DEV_INITRD=y) "
            "first with 'make kernel'")
    if not os.access(BUSYBOX, os.X_OK):
        die(f"{BUSYBOX} is missing: apt-get install busybox-static "
            "(or run 'make setup')")
    init = os.path.join(REPO, "tests", "guest", "init")
    spec = "\n".join([
        "dir /dev 0755 0 0",
        "nod /dev/console 0600 0 0 c 5 1",
        "dir /proc 0755 0 0",
        "dir /sys 0755 0 0",
        "dir /tmp 0755 0 0",
        "dir /bin 0755 0 0",
        "dir /sbin 0755 0 0",
        f"file /bin/busybox {BUSYBOX} 0755 0 0",
        "slink /bin/sh busybox 0777 0 0",
        f"file /init {init} 0755 0 0",
        "",
    ])
    with tempfile.NamedTemporaryFile("w", suffix=".spec", delete=False) as f:
        f.write(spec)
        spec_path = f.name
    try:
        with open(out, "wb") as o:
            subprocess.run([gen, spec_path], stdout=o, check=True)
    finally:
        os.unlink(spec_path)


def qemu_cmd(args, kernel, initrd, cmdline):
    if args.cpus % args.nodes:
        die(f"--cpus {args.cpus} is not a multiple of --nodes {args.nodes}")
    if args.mem_gib % args.nodes:
        die(f"--mem {args.mem_gib} GiB is not a multiple of --nodes {args.nodes}")
    per_cpu = args.cpus // args.nodes
    per_mem = args.mem_gib // args.nodes
    accel = "kvm" if args.accel == "kvm" else "tcg,thread=multi"
    cmd = [shutil.which("qemu-system-x86_64") or "qemu-system-x86_64",
           "-accel", accel, "-cpu", "max", "-m", f"{args.mem_gib}G",
           "-smp", f"{args.cpus},sockets={args.nodes}",
           "-nodefaults", "-nographic", "-no-reboot", "-serial", "stdio",
           "-kernel", kernel, "-initrd", initrd, "-append", cmdline]
    for n in range(args.nodes):
        lo, hi = n * per_cpu, (n + 1) * per_cpu - 1
        cmd += ["-object", f"memory-backend-ram,id=m{n},size={per_mem}G",
                "-numa", f"node,nodeid={n},cpus={lo}-{hi},memdev=m{n}"]
    return cmd


def split_spec(spec):
    """'rust:mt_job.max_threads=1' -> ('rust', 'mt_job.max_threads=1')."""
    engine, _, params = spec.partition(":")
    return engine, params.replace(":", " ")


def boot(args, spec, extra=""):
    """Boot once; return the parsed results and the console log."""
    engine, params = split_spec(spec)
    kernel = os.path.join(args.kbuild, "arch", "x86", "boot", "bzImage")
    if not os.path.exists(kernel):
        die(f"{kernel} is missing: run 'make kernel' first")
    # The console stays quiet; the guest's init prints the whole dmesg.
    # nokaslr: a randomly placed kernel image changes the memblock
    # reservations, and so the free page counts, by a few pages per boot.
    cmdline = ("console=ttyS0 panic=-1 kunit.enable=0 loglevel=1 nokaslr "
               f"mt_job.engine={engine} {params} {args.append} {extra}").strip()
    cmd = qemu_cmd(args, kernel, args.initrd, cmdline)
    t0 = time.monotonic()
    try:
        res = subprocess.run(cmd, capture_output=True, text=True,
                             errors="replace", timeout=args.timeout)
        log = res.stdout + res.stderr
    except subprocess.TimeoutExpired as e:
        log = (e.stdout or b"").decode(errors="replace") if isinstance(
            e.stdout, bytes) else (e.stdout or "")
        log += f"\nguest: timed out after {args.timeout}s\n"
    wall = time.monotonic() - t0
    return parse(log, spec, wall), log


def parse(log, spec, wall):
    nodes = {}
    for m in DEFERRED_RE.finditer(log):
        nodes[int(m.group(1))] = {
            "pages": int(m.group(2)), "us": int(m.group(3)),
            "engine": m.group(4), "threads": int(m.group(5)),
            "grown": int(m.group(6))}
    body = log.split("MTJOB-BEGIN", 1)[-1]
    mem = {k: int(v) for k, v in MEMINFO_RE.findall(body)}
    bad = [line for line in log.splitlines()
           if re.search(r"BUG:|WARNING:|Oops|Bad page state|"
                        r"possible circular locking|Call Trace", line)]
    return {"engine": split_spec(spec)[0], "spec": spec, "nodes": nodes,
            "mem": mem, "wall": wall,
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
    results = {}
    for engine in args.engines:
        for i in range(args.repeat):
            r, log = boot(args, engine)
            save_log(args, f"run-{engine.replace(':', '-')}-{i}.log", log)
            if not r["ok"]:
                die(f"the {engine} guest did not finish; see "
                    f"{args.logdir}/run-{engine.replace(':', '-')}-{i}.log")
            results.setdefault(engine, []).append(r)

    print(f"\nDeferred struct page init, {args.nodes} nodes, {args.cpus} "
          f"vCPUs, {args.mem_gib} GiB, {args.repeat} boot(s) per engine "
          "(TCG):")
    w = max(8, *(len(e) for e in results))
    print(f"{'engine':{w}} {'node':>4} {'pages':>9} {'grown':>6} {'threads':>7} "
          f"{'median us':>10} {'min us':>8} {'max us':>8}")
    for engine, runs in results.items():
        for node in sorted(runs[0]["nodes"]):
            us = [r["nodes"][node]["us"] for r in runs if node in r["nodes"]]
            n = runs[0]["nodes"][node]
            print(f"{engine:{w}} {node:>4} {n['pages']:>9} "
                  f"{n['grown']:>6} {n['threads']:>7} {statistics.median(us):>10.0f} "
                  f"{min(us):>8} {max(us):>8}")
    print()
    for engine, runs in results.items():
        m = runs[0]["mem"]
        print(f"{engine:{w}} MemTotal {m.get('MemTotal', '?')} kB, MemFree "
              f"{m.get('MemFree', '?')} kB, boot {runs[0]['wall']:.1f} s "
              "(wall, QEMU start to power-off)")
    engines = list(results)
    if len(engines) > 1:
        base = results[engines[0]][0]
        for e in engines[1:]:
            other = results[e][0]
            same_total = base["mem"].get("MemTotal") == other["mem"].get(
                "MemTotal")
            free_diff = abs(base["mem"].get("MemFree", 0) -
                            other["mem"].get("MemFree", 0))
            same_pages = deferred_total(base) == deferred_total(other)
            print(f"{engines[0]} vs {e}: MemTotal "
                  f"{'identical' if same_total else 'DIFFERS'}, MemFree "
                  f"differs by {free_diff} kB, deferred pages per node "
                  f"{'identical' if same_pages else 'DIFFER'}")
    return 0


def cmd_boottest(args):
    passed = failed = 0

    def check(cond, what):
        nonlocal passed, failed
        print(f"{'ok' if cond else 'not ok'} - {what}")
        if cond:
            passed += 1
        else:
            failed += 1

    res = {}
    for engine in args.engines:
        r, log = boot(args, engine)
        path = save_log(args, f"boottest-{engine.replace(':', '-')}.log", log)
        res[engine] = r
        check(r["ok"], f"{engine}: guest booted to userspace and powered "
              f"off ({r['wall']:.1f} s; log {path})")
        check(not r["bad"], f"{engine}: no BUG/WARNING/Oops in the log"
              + (f": {r['bad'][0]}" if r["bad"] else ""))
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
    print(f"boottest: {passed} passed, {failed} failed")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("command", choices=("run", "boottest"))
    ap.add_argument("--kbuild", default=os.path.join(REPO, "build", "kbuild"))
    ap.add_argument("--mem", dest="mem_gib", type=int, default=8,
                    help="guest memory in GiB, split evenly over the nodes")
    ap.add_argument("--cpus", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--engines", default="rust,padata",
                    help="comma-separated ENGINE[:PARAM[:PARAM]]: rust, "
                    "padata, serial, e.g. rust:mt_job.max_threads=1")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--append", default="", help="extra kernel parameters")
    ap.add_argument("--accel", choices=("tcg", "kvm"), default="tcg")
    ap.add_argument("--timeout", type=int, default=300, help="seconds a boot")
    ap.add_argument("--logdir", default=os.path.join(REPO, "build", "logs"))
    args = ap.parse_args()
    args.engines = [e for e in args.engines.split(",") if e]
    for e in args.engines:
        if split_spec(e)[0] not in ("rust", "padata", "serial"):
            die(f"unknown engine {e!r}: use rust, padata or serial")
    if args.repeat < 1 or args.nodes < 1 or args.cpus < 1:
        die("--repeat, --nodes and --cpus must be at least 1")
    os.makedirs(args.logdir, exist_ok=True)
    args.initrd = os.path.join(os.path.dirname(args.logdir), "initramfs.cpio")
    make_initramfs(args.kbuild, args.initrd)
    sys.exit({"run": cmd_run, "boottest": cmd_boottest}[args.command](args))


if __name__ == "__main__":
    main()
