#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Benchmarks of the mtjob engines, side by side, in QEMU guests.

  bench.py engine    one boot with mtjob_bench.run=1 (CONFIG_MTJOB_BENCH):
                     the same jobs on the Rust engine and on padata,
                     alternating; per point median/min/max and the ratio
  bench.py deferred  deferred struct page init per engine on guests of
                     several shapes, REPEAT boots each; medians, spread,
                     the speedup of 2 vCPUs over 1, rust/padata, and when
                     each helper started (scripts/helpertrace.py)

Each writes its table as CSV and PNG plots under build/bench/ and prints it.
Guests, initramfs and logs are those of scripts/guest.py.
"""

import argparse
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchplot  # noqa: E402
import guest  # noqa: E402
import helpertrace  # noqa: E402

ENGINE_RE = re.compile(
    r"mtjob_bench: fn=(\w+) aff=(\w+) cap=(\d+) size=(\d+) reps=(\d+) "
    r"rust_ns=(\d+)/(\d+)/(\d+) padata_ns=(\d+)/(\d+)/(\d+) "
    r"rust/padata=[\d.]+ rust_threads=(\d+)-(\d+) padata_threads=(\d+)")
ENGINE_HEAD_RE = re.compile(r"mtjob_bench: (\d+) online CPUs, (\d+) nodes")
ENGINE_DONE_RE = re.compile(r"mtjob_bench: done \((-?\d+)\)")
# The printk timestamp of the head line and of each point's line.
ENGINE_TS_RE = re.compile(r"^\[\s*(\d+\.\d+)\] mtjob_bench: (?:fn=|\d+ online)",
                          re.M)
ENGINE_FIELDS = ("fn", "aff", "cap", "size", "reps", "rust_med_ns",
                 "rust_min_ns", "rust_max_ns", "padata_med_ns",
                 "padata_min_ns", "padata_max_ns", "rust_min_threads",
                 "rust_max_threads", "padata_threads")
# A median within this fraction of the other engine's is a tie: TCG's
# run-to-run jitter (the same code differs by more between boots).
TIE = 0.05


def shape(args):
    return f"{args.nodes}n{args.cpus}c{args.mem_gib}g"


def expected_points(max_size, cpus):
    """The points the kernel's benchmark runs (kernel/mtjob_bench.c)."""
    caps = [1, 2] + ([cpus] if cpus > 2 else [])
    sizes, s = [], 1
    while s <= max_size:
        sizes.append(s)
        s <<= 4
    return {(f, a, c, s) for f in ("noop", "write") for a in ("none", "node")
            for c in caps for s in sizes}


def mem_available_gib():
    """The host's MemAvailable in GiB, or 0 if /proc/meminfo does not say."""
    try:
        with open("/proc/meminfo") as f:
            m = re.search(r"^MemAvailable:\s+(\d+) kB", f.read(), re.M)
    except OSError:
        return 0
    return int(m.group(1)) / 2**20 if m else 0


def set_prealloc(args):
    """Sets the memory backends' options for a guest of args.mem_gib GiB
    (--prealloc) and says which."""
    on = args.prealloc == "on" or (
        args.prealloc == "auto" and args.mem_gib <= 0.8 * mem_available_gib())
    args.mem_opts = ",prealloc=on" if on else ""
    print(f"bench: {args.mem_gib} GiB guest, memory "
          + ("preallocated by QEMU" if on else
             "allocated on the guest's first touch (no prealloc: timings "
             "include host page faults)"), file=sys.stderr)
    return on


def cmd_engine(args):
    if guest.kconfig(args, "MTJOB_BENCH") != "y":
        guest.die("the kernel has no CONFIG_MTJOB_BENCH=y: add it to "
                  "tests/mtjob.kunitconfig (it is there by default) and "
                  "run 'make kernel'")
    if "mtjob.max_threads" in args.append:
        guest.die("mtjob.max_threads= would cap the Rust engine only: the "
                  "benchmark sets each job's cap itself")
    args.timeout = max(args.timeout, 3600)
    extra = (f"mtjob_bench.run=1 mtjob_bench.max_size={args.max_size}"
             + (f" mtjob_bench.reps={args.reps}" if args.reps else "")
             + (f" {helpertrace.params(32)}"
                if args.helper_trace and not args.smoke else ""))
    set_prealloc(args)
    r, log = guest.boot(args, "rust", extra)
    name = f"engine-{shape(args)}" + ("-smoke" if args.smoke else "")
    path = guest.save_log(args, f"bench-{name}.log", log)
    rows = [tuple(x if i < 2 else int(x) for i, x in enumerate(m))
            for m in ENGINE_RE.findall(log)]
    head = ENGINE_HEAD_RE.search(log)
    done = ENGINE_DONE_RE.search(log)
    if args.smoke:
        return engine_smoke(args, r, rows, head, done, path)
    if not rows or not done or done.group(1) != "0":
        what = done.group(0) if done else "no done line"
        guest.die(f"the benchmark did not finish ({what}); see {path}")
    csv = benchplot.write_csv(name, ENGINE_FIELDS, rows)
    debug = [o for o in ("PROVE_LOCKING", "DEBUG_OBJECTS", "KASAN", "KCSAN")
             if guest.kconfig(args, o) == "y"]
    print(f"mtjob_run() (Rust engine) against padata_do_multithreaded(), "
          f"one boot, {args.nodes} nodes, {args.cpus} vCPUs, "
          f"{args.accel.upper()} on {os.cpu_count()} host CPUs, kernel "
          f"{args.kbuild}" + (f" WITH {', '.join(debug)}" if debug else
                              " without lockdep/debug objects")
          + "; align 1, min_chunk 1; times per job in us, median (min-max) "
          "over the repetitions; rust/padata below 1 means Rust is faster; "
          "threads: Rust fewest-most that worked, padata asked for:")
    print(f"{'fn':5} {'aff':4} {'cap':>3} {'size':>8} {'reps':>4} "
          f"{'rust us':>22} {'padata us':>22} {'rust/padata':>11} "
          f"{'threads r/p':>11}")
    worse, better = [], 0
    for (fn, aff, cap, size, reps, rm, rlo, rhi, pm, plo, phi, rt0, rt1,
         pt) in rows:
        ratio = rm / max(pm, 1)
        if ratio > 1 + TIE:
            worse.append((fn, aff, cap, size, ratio))
        better += ratio < 1 - TIE
        rust = f"{rm / 1e3:.1f} ({rlo / 1e3:.1f}-{rhi / 1e3:.1f})"
        padata = f"{pm / 1e3:.1f} ({plo / 1e3:.1f}-{phi / 1e3:.1f})"
        print(f"{fn:5} {aff:4} {cap:>3} {size:>8} {reps:>4} {rust:>22} "
              f"{padata:>22} {ratio:>11.2f} {f'{rt0}-{rt1}/{pt}':>11}")
    alone = [r for r in rows if r[3] == 1 or r[2] == 1]
    print(f"\njobs the caller runs alone (size 1 or cap 1): {len(alone)} "
          f"points, Rust engine threads {sorted({r[12] for r in alone})} "
          "(1: no helper queued)")
    print(f"of {len(rows)} points, Rust is faster at {better}, slower at "
          f"{len(worse)} and within {TIE:.0%} (a tie) at "
          f"{len(rows) - better - len(worse)}" + "".join(
              f"\n  slower: {fn} {aff} cap {cap} size {size}: {ratio:.2f}"
              for fn, aff, cap, size, ratio in worse))
    plot_engine(name, rows, args)
    if args.helper_trace:
        engine_helper_starts(name, rows, log)
    print(f"\nCSV {csv}; plots {benchplot.OUTDIR}/{name}-*.png; log {path}")
    return 0


def engine_helper_starts(name, rows, log):
    """Per point, when the helpers of each engine started after queue_work
    (helpertrace.py): a point's helpers are those queued between the
    benchmark's line before it and its own line (printk and the global
    trace clock both read sched_clock_cpu())."""
    starts = helpertrace.parse(log)
    if starts is None:
        print("\nno helper trace in the log (needs CONFIG_EVENT_TRACING)")
        return
    edges = [float(t) for t in ENGINE_TS_RE.findall(log)]
    groups = helpertrace.by_window(starts, edges)
    if len(groups) != len(rows):
        print(f"\nhelper starts: {len(edges)} timestamps for {len(rows)} "
              "points; not attributed")
        return
    print("\nHelper start (queue_work -> workqueue_execute_start, us) per "
          "point with helpers: count, median, p99 of each engine:")
    print(f"{'fn':5} {'aff':4} {'cap':>3} {'size':>8} {'rust n':>7} "
          f"{'median':>7} {'p99':>7} {'padata n':>8} {'median':>7} "
          f"{'p99':>7}")
    out, every = [], {"rust": [], "padata": []}
    for row, g in zip(rows, groups):
        st = {}
        for e in every:
            hs = [h for h in g if h["engine"] == e]
            every[e] += hs
            st[e] = helpertrace.summary(hs)
        if not st["rust"] and not st["padata"]:
            continue
        cells = []
        for e in every:
            v = st[e]
            cells.append(f"{v[0]:>7} {v[1]:>7.1f} {v[3]:>7.1f}" if v else
                         f"{0:>7} {'-':>7} {'-':>7}")
            out.append((*row[:4], e, *(v[:5] if v else (0, 0, 0, 0, 0))))
        print(f"{row[0]:5} {row[1]:4} {row[2]:>3} {row[3]:>8} "
              f"{cells[0]} {cells[1]:>24}")
    for e, hs in every.items():
        v = helpertrace.summary(hs)
        if v:
            print(f"{e}: {v[0]} helpers, start median {v[1]:.1f} us, p90 "
                  f"{v[2]:.1f}, p99 {v[3]:.1f}, max {v[4]:.1f}"
                  + ("" if v[6] is None else
                     f", {v[6]:.0%} on a worker forked for it")
                  + f", {v[7]:.0%} on the queueing CPU")
    benchplot.write_csv(f"{name}-helpers", ("fn", "aff", "cap", "size",
                        "engine", "helpers", "median_us", "p90_us",
                        "p99_us", "max_us"), out)


def engine_smoke(args, r, rows, head, done, path):
    """make check: the benchmark runs every point and reports sane values."""
    check = guest.Checks()
    check(r["ok"] and not r["bad"], f"the benchmark guest booted and ran "
          f"cleanly ({r['wall']:.1f} s; log {path})"
          + (f": {r['bad'][0]}" if r["bad"] else ""))
    check(done is not None and done.group(1) == "0",
          f"the benchmark finished: {done.group(0) if done else 'no line'}")
    cpus = int(head.group(1)) if head else args.cpus
    want = expected_points(args.max_size, cpus)
    got = {row[:4] for row in rows}
    check(got == want, f"one line per point: {len(got)} of {len(want)}"
          + (f", missing {sorted(want - got)[:4]}" if want - got else ""))
    check(all(row[4] == args.reps for row in rows),
          f"{args.reps} repetitions per point")
    check(all(0 < row[6] <= row[5] <= row[7] and
              0 < row[9] <= row[8] <= row[10] for row in rows),
          "min <= median <= max, all above 0 ns")
    check(all(1 <= row[11] <= row[12] <= row[2] for row in rows),
          "the Rust engine used between 1 and cap threads")
    check(all(row[12] == 1 for row in rows if row[3] == 1 or row[2] == 1),
          "jobs of one index or capped at 1 ran on the caller alone")
    return check.finish("enginebench-smoke")


def plot_engine(name, rows, args):
    plt = benchplot.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, fn in zip(axes, ("noop", "write")):
        for aff in ("none", "node"):
            for cap in sorted({r[2] for r in rows}):
                pts = sorted((r[3], r[5] / max(r[8], 1)) for r in rows
                             if r[0] == fn and r[1] == aff and r[2] == cap)
                if pts:
                    ax.plot(*zip(*pts), marker="o",
                            linestyle="-" if aff == "none" else "--",
                            label=f"{aff}, cap {cap}")
        ax.axhline(1, color="grey", linewidth=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("job size (indices)")
        ax.set_title(f"chunk function: {fn}")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("median time, rust / padata")
    fig.suptitle(f"mtjob_run() vs padata, {args.nodes} nodes, {args.cpus} "
                 "vCPUs (TCG)")
    benchplot.save(fig, f"{name}-ratio")

    big = max(r[3] for r in rows)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, aff in zip(axes, ("none", "node")):
        for eng, col in (("rust", 5), ("padata", 8)):
            pts = sorted((r[2], r[col] / 1e3) for r in rows
                         if r[0] == "write" and r[1] == aff and r[3] == big)
            if pts:
                ax.plot(*zip(*pts), marker="o", label=eng)
        ax.set_xlabel("thread cap (caller included)")
        ax.set_ylabel("median us per job")
        ax.set_title(f"write 64 B/index, {big} indices, affinity {aff}")
        ax.legend()
    benchplot.save(fig, f"{name}-threads")


# Guest shapes of 'deferred': nodes x vCPUs x GiB.  The first three fit the
# 2-core host (vCPUs <= 2); the last is the oversubscribed guest of 'make run'.
DEFERRED_GUESTS = "1x2x16,2x2x16,1x2x16+numa=fake=8,4x8x16,8x16x64"


def label(g):
    """A guest's name: NODESxVCPUSxGIB, then its own kernel parameters."""
    return "x".join(map(str, g[:3])) + (f"+{g[3]}" if g[3] else "")


def cmd_deferred(args):
    guests = []
    for g in args.guests.split(","):
        m = re.fullmatch(r"(\d+)x(\d+)x(\d+)(?:\+(\S+))?", g)
        if not m:
            guest.die(f"--guests entry {g!r}: NODESxVCPUSxGIB[+PARAM[+...]],"
                      " e.g. 1x2x16 or 1x2x16+numa=fake=8")
        guests.append((*map(int, m.groups()[:3]),
                       (m.group(4) or "").replace("+", " ")))
    rows, res, failed, hrows, prealloc = [], {}, [], [], {}
    header = ("guest", "engine", "boot", "node", "pages", "threads", "ran_on",
              "us")
    hheader = ("guest", "engine", "boot", "node", "helper_engine", "cpu",
               "on_node", "workqueue", "start_us", "new_worker", "same_cpu")
    trace = helpertrace.params() if args.helper_trace else ""
    for g in guests:
        nodes, cpus, mem, own = g
        args.nodes, args.cpus, args.mem_gib = nodes, cpus, mem
        extra = f"{trace} {own}".strip()
        prealloc[g] = set_prealloc(args)
        # Engines alternate boot by boot, so that drift hits all of them.
        for i in range(args.repeat):
            for spec in args.engines:
                r, log = guest.boot(args, spec, extra)
                tag = (f"{label(g).replace(' ', '+')}-"
                       f"{spec.replace(':', '-')}-{i}")
                path = guest.save_log(args, f"bench-deferred-{tag}.log", log)
                if not r["ok"] or not r["nodes"]:
                    # Counted and left out; the other boots go on.
                    failed.append(path)
                    print(f"bench: {spec} on {label(g)} did not "
                          f"boot or report deferred init; see {path}",
                          file=sys.stderr)
                    continue
                r["helpers"] = helpertrace.deferred_helpers(log)
                if args.helper_trace and r["helpers"] is None:
                    print(f"bench: no helper trace in {path} (needs "
                          "CONFIG_EVENT_TRACING)", file=sys.stderr)
                for h in r["helpers"] or []:
                    hrows.append((label(g), spec, i, h["node"],
                                  h["engine"], h["cpu"], int(h["on_node"]),
                                  h["workqueue"], round(h["us"], 1),
                                  "" if h["new_worker"] is None
                                  else int(h["new_worker"]),
                                  int(h["same_cpu"])))
                res.setdefault(g, {}).setdefault(
                    spec, []).append(r)
                for node, n in sorted(r["nodes"].items()):
                    rows.append((label(g), spec, i, node,
                                 n["pages"], n["threads"], n["engine"],
                                 n["us"]))
            # Written as boots finish: an interrupted run keeps its data.
            csv = benchplot.write_csv("deferred", header, rows)
            if args.helper_trace:
                benchplot.write_csv("deferred-helpers", hheader, hrows)
            print(f"{label(g)}: boot {i + 1} of {args.repeat} "
                  "done", file=sys.stderr, flush=True)
    if not res:
        guest.die("no boot reported deferred init")
    print(f"Deferred struct page init, {args.repeat} boots per engine and "
          f"guest ({args.accel.upper()} on {os.cpu_count()} host CPUs, kernel "
          f"{args.kbuild}), engines alternating; the time of a boot is its "
          "slowest node's (nodes run at once); us:")
    print("guest memory preallocated by QEMU: " + ", ".join(
        f"{label(g)} {'yes' if on else 'no'}"
        for g, on in prealloc.items()))
    print(f"{'guest (nodes x vCPUs x GiB)':28} {'engine':26} {'threads':>7} "
          f"{'median':>8} {'p90':>8} {'min':>8} {'max':>8}   "
          "per node medians")
    med = {}
    for g, by_spec in res.items():
        for spec, runs in by_spec.items():
            us = [max(n["us"] for n in r["nodes"].values()) for r in runs]
            med[g, spec] = statistics.median(us)
            thr = sorted({n["threads"] for r in runs
                          for n in r["nodes"].values()})
            per = " ".join(
                f"{node}:"
                f"{statistics.median(r['nodes'][node]['us'] for r in runs):.0f}"
                for node in sorted(runs[0]["nodes"]))
            print(f"{label(g):28} {spec:26} "
                  f"{','.join(map(str, thr)):>7} {med[g, spec]:>8.0f} "
                  f"{helpertrace.percentile(us, 90):>8} "
                  f"{min(us):>8} {max(us):>8}   {per}")
            pages = {tuple(sorted((k, v['pages'] + v['grown'])
                                  for k, v in r['nodes'].items()))
                     for r in runs}
            if len(pages) != 1:
                print(f"  note: pages per node differ between boots: {pages}")
    print()
    # With one vCPU per node every engine runs the same code (a job of one
    # thread is one call): their spread there is the noise floor.
    noise = []
    for g in res:
        same = g[1] == g[0]
        if same and len(res[g]) > 1:
            ms = [med[g, e] for e in res[g]]
            noise.append(max(ms) / min(ms) - 1)
        if "rust" in res[g] and "padata" in res[g]:
            print(f"{label(g)}: rust/padata "
                  f"{med[g, 'rust'] / med[g, 'padata']:.2f}"
                  + ("  (one vCPU per node: every engine runs the same "
                     "one-call code)" if same else ""))
    if noise:
        print(f"noise floor: where every engine runs the same code, medians "
              f"differ by up to {max(noise):.0%}")
    one = {g for g in res if g[0] == 1 and not g[3]}
    for n, c, m, _ in sorted(one):
        if c == 1 and (1, 2, m, "") in one:
            for spec in args.engines:
                if (((1, 1, m, ""), spec) in med
                        and ((1, 2, m, ""), spec) in med):
                    print(f"1 node x {m} GiB, {spec}: 2 vCPUs "
                          f"{med[(1, 1, m, ''), spec] / med[(1, 2, m, ''), spec]:.2f}x "
                          "faster than 1")
    if args.helper_trace:
        print_helper_starts(res, args)
    if failed:
        print(f"{len(failed)} boots failed and are left out: {failed}")
    plot_deferred(res, med, args)
    print(f"\nCSV {csv}; plots {benchplot.OUTDIR}/deferred-*.png; logs "
          f"{args.logdir}/bench-deferred-*.log")
    return 0


def helper_stats(res, args):
    """{(guest, spec): helpertrace.summary()} of deferred init's helpers
    over every boot."""
    out = {}
    for g, by_spec in res.items():
        for spec in args.engines:
            runs = by_spec.get(spec, [])
            st = helpertrace.summary([h for r in runs
                                      for h in r.get("helpers") or []])
            if st:
                out[g, spec] = st
    return out


def print_helper_starts(res, args):
    """The helper start table: from queue_work() to the helper's start
    (workqueue_execute_start), deferred init's helpers of every boot."""
    st = helper_stats(res, args)
    print("\nHelper start of deferred init (queue_work -> "
          "workqueue_execute_start, us, every helper of every boot; on "
          "node: started on a CPU of its node; new worker: on a kworker "
          "forked after it was queued; same CPU: on the CPU that queued "
          "it):")
    print(f"{'guest':10} {'engine':26} {'helpers':>7} {'median':>8} "
          f"{'p90':>8} {'p99':>8} {'max':>8} {'on node':>8} "
          f"{'new worker':>10} {'same CPU':>8}")
    for (g, spec), (n, m, p90, p99, mx, on, new, same) in st.items():
        print(f"{label(g):10} {spec:26} {n:>7} {m:>8.0f} "
              f"{p90:>8.0f} {p99:>8.0f} {mx:>8.0f} "
              f"{'-' if on is None else f'{on:.0%}':>8} "
              f"{'-' if new is None else f'{new:.0%}':>10} "
              f"{same:>8.0%}")
    for g in res:
        a, b = st.get((g, "rust")), st.get((g, "padata"))
        if a and b:
            print(f"{label(g)}: helper start rust/padata "
                  f"median {a[1] / b[1]:.2f}, p99 {a[3] / b[3]:.2f}")
    plot_helper_starts(st, args)


def plot_helper_starts(st, args):
    plt = benchplot.pyplot()
    fig, ax = plt.subplots(figsize=(10, 4.5))
    gs = sorted({g for g, _ in st})
    # Only the engines that queue helpers (not serial).
    specs = [e for e in args.engines if any(k[1] == e for k in st)]
    width = 0.8 / max(len(specs), 1)
    for k, spec in enumerate(specs):
        pts = [(j + k * width, st[g, spec]) for j, g in enumerate(gs)
               if (g, spec) in st]
        if not pts:
            continue
        xs = [x for x, _ in pts]
        ax.bar(xs, [v[1] for _, v in pts], width, label=f"{spec} median")
        ax.scatter(xs, [v[3] for _, v in pts], marker="_", s=200,
                   color="black", zorder=3)
    ax.scatter([], [], marker="_", color="black", label="p99")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(gs))])
    ax.set_xticklabels([f"{n} node(s), {c} vCPU(s), {m} GiB"
                        + (f"\n{x}" if x else "") for n, c, m, x in gs],
                       fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("helper start after queue_work, us")
    ax.legend(fontsize=8)
    benchplot.save(fig, "deferred-helper-start")


def plot_deferred(res, med, args):
    plt = benchplot.pyplot()
    fig, ax = plt.subplots(figsize=(10, 4.5))
    gs = list(res)
    width = 0.8 / max(len(args.engines), 1)
    for k, spec in enumerate(args.engines):
        xs, ys, lo, hi = [], [], [], []
        for j, g in enumerate(gs):
            runs = res[g].get(spec)
            if not runs:
                continue
            us = [max(n["us"] for n in r["nodes"].values()) / 1e3
                  for r in runs]
            m = statistics.median(us)
            xs.append(j + k * width)
            ys.append(m)
            lo.append(m - min(us))
            hi.append(max(us) - m)
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=spec)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(gs))])
    ax.set_xticklabels([f"{n} node(s), {c} vCPU(s), {m} GiB"
                        + (f"\n{x}" if x else "") for n, c, m, x in gs],
                       fontsize=8)
    ax.set_ylabel("deferred init, ms (median, min-max)")
    ax.legend(fontsize=8)
    benchplot.save(fig, "deferred-guests")

    one = sorted(g for g in res if g[0] == 1 and not g[3])
    if len({g[1] for g in one}) > 1:
        fig, ax = plt.subplots(figsize=(6, 4.5))
        for spec in args.engines:
            pts = [(g[1], med[g, spec] / 1e3) for g in one
                   if (g, spec) in med]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=spec)
        ax.set_xlabel("vCPUs (1 node)")
        ax.set_ylabel("deferred init, median ms")
        ax.set_xticks(sorted({c for _, c, _ in one}))
        ax.legend(fontsize=8)
        benchplot.save(fig, "deferred-threads")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("command", choices=("engine", "deferred"))
    ap.add_argument("--kbuild", default=os.environ.get(
        "KBUILD", os.path.join(guest.REPO, "build", "kbuild-7.3")))
    ap.add_argument("--mem", dest="mem_gib", type=int, default=8,
                    help="engine: guest memory in GiB")
    ap.add_argument("--cpus", type=int, default=2, help="engine: vCPUs")
    ap.add_argument("--nodes", type=int, default=2, help="engine: nodes")
    ap.add_argument("--max-size", type=int, default=1 << 24,
                    help="engine: largest job, indices (sizes go up by 16x "
                    "from 1)")
    ap.add_argument("--reps", type=int, default=0, help="engine: repetitions "
                    "per point (default: the kernel's, 100 down to 9)")
    ap.add_argument("--smoke", action="store_true", help="engine: check "
                    "that every point runs (make check), no table")
    ap.add_argument("--guests", default=DEFERRED_GUESTS,
                    help="deferred: NODESxVCPUSxGIB[+PARAM[+...]],... "
                    "(a guest's own kernel parameters after +; default "
                    f"{DEFERRED_GUESTS})")
    ap.add_argument("--engines",
                    default="rust,padata,serial,rust:mtjob.max_threads=1",
                    help="deferred: engine specs as for scripts/guest.py")
    ap.add_argument("--repeat", type=int, default=9,
                    help="deferred: boots per engine and guest")
    ap.add_argument("--helper-trace", action=argparse.BooleanOptionalAction,
                    default=True, help="engine and deferred: record when "
                    "each helper starts (workqueue tracepoints from boot; "
                    "--no-helper-trace: off)")
    ap.add_argument("--prealloc", choices=("auto", "on", "off"),
                    default="auto",
                    help="QEMU allocates and touches all guest memory "
                    "before the guest starts (memory-backend-ram "
                    "prealloc=on), so that the host's page faults on the "
                    "guest's first touches are not in its timings (without "
                    "it, deferred init times were bimodal boot to boot); "
                    "auto (default): on for a guest whose memory fits in "
                    "80%% of the host's MemAvailable")
    ap.add_argument("--append", default="", help="extra kernel parameters")
    ap.add_argument("--accel", choices=("tcg", "kvm"), default="tcg")
    ap.add_argument("--timeout", type=int, default=300, help="seconds a boot")
    ap.add_argument("--logdir", default=os.path.join(guest.REPO, "build",
                                                     "logs"))
    args = ap.parse_args()

    args.engines = [e for e in args.engines.split(",") if e]
    for e in args.engines:
        if guest.split_spec(e)[0] not in ("rust", "padata", "serial"):
            guest.die(f"unknown engine {e!r}: use rust, padata or serial")
    if args.repeat < 1 or args.max_size < 1 or args.reps < 0:
        guest.die("--repeat and --max-size must be at least 1, --reps 0 "
                  "or more")
    if args.smoke and not args.reps:
        args.reps = 3
    os.makedirs(args.logdir, exist_ok=True)
    if not args.smoke:
        benchplot.pyplot()      # before the boots, not after them
    args.initrd = os.path.join(os.path.dirname(args.logdir), "initramfs.cpio")
    guest.make_initramfs(args.kbuild, args.initrd)
    sys.exit({"engine": cmd_engine, "deferred": cmd_deferred}[args.command](
        args))


if __name__ == "__main__":
    main()
