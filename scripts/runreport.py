# SPDX-License-Identifier: GPL-2.0
"""'make run' (scripts/guest.py run): the mission's three call sites side by
side, per engine, from boots of the benchmark kernel, with spreads and
verdicts.

Every boot asks for 2M and 1G huge pages on the command line, with
hugepage_alloc_threads= every vCPU, and reports deferred struct page init
per node and the boot-time hugetlb jobs (pr_debug lines of mm/mm_init.c and
mm/hugetlb.c).  The boots of the plain Rust engine then run the teardowns
(tests/guest/teardown.sh): the munmap() of 2 GiB with the parallel free off
and on, and the exit of a process of 2 GiB with the parallel zap off and on,
each with the /proc/vmstat counters that show which path ran.  Engines
alternate boot by boot (each round starts with the next engine).

With --placement (the default of 'make run'), PLACEMENT_BOOTS boots per
engine of a guest of the same nodes with two vCPUs each (oversubscribed on
a 2-core host: counted, not timed) record where deferred init's helpers
started (the workqueue tracepoints, scripts/helpertrace.py), how many of
its chunks the Rust engine ran off their node (the mtjob_run tracepoint)
and on which node each node's gigantic pages were initialised.

The verdict of a comparison is stated by RULE; equal pages per node across
every boot and engine, clean boots and the teardowns' outcomes are checks
whose failure makes the run fail (rc 1).  A teardown's path is read from its
vmstat counters (path_taken()): a parallel-mode run the policy declined
(no idle CPU, a refused task) is reported and timed apart, never a failure,
and the parallel/serial verdict is over the runs that took the parallel
path; only what the kernel must not do fails the run: a parallel path
counted with its sysctl off, a parallel-mode run that counted neither the
path nor a refusal, or free_test finding its data wrong (rc).
"""

import copy
import os
import re
import statistics

import benchplot
import helpertrace

# A median ratio within this fraction of 1 is never a difference: TCG's
# run-to-run jitter (bench.py's TIE).
TIE = 0.05
RULE = ("verdict rule: A/B is the ratio of median times (below 1: A "
        "faster); it is \"faster\" or \"slower\" only when every run of one "
        f"took less time than every run of the other AND the medians differ "
        f"by {TIE:.0%} or more; otherwise \"within the noise of this "
        "machine\".")
NOISE = "within the noise of this machine"

# What every boot allocates: 2M pages, 1G pages (one per node of a
# 2-node 8 GiB guest), their kernel parameters built by hugetlb_params().
HUGE_2M = 1024
HUGE_1G_PER_NODE = 1
KB_2M, KB_1G = 2048, 1048576
TEARDOWN_MIB = 2048

TEARDOWN_RE = re.compile(
    r"^TEARDOWN what=(munmap|exit) mode=(serial|parallel) mib=(\d+) "
    r"us=(-?\d+) rc=(\d+)((?: \w+=-?\d+)*)\s*$", re.M)
TEARDOWN_SETUP_RE = re.compile(r"^TEARDOWN-SETUP (.*)$", re.M)
# The counter of each teardown's parallel path and of its threads.
PATH_COUNTERS = {"munmap": ("tlb_parallel_free", "tlb_parallel_free_threads"),
                 "exit": ("parallel_zap", "parallel_zap_threads")}
PATH_NAMES = {"munmap": "parallel free", "exit": "parallel zap"}


# A host load average (1 minute) from this on before the first boot means
# other work shares the cores the guest's vCPUs run on.
BUSY_LOAD = 0.5


def host_load():
    """The host's 1-minute load average, or None."""
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def verdict(a, b, tie=TIE):
    """(median(A) / median(B), word) for times A and B (lower is better);
    the word by RULE: "faster" (A is), "slower" or NOISE."""
    ratio = statistics.median(a) / statistics.median(b)
    if max(a) < min(b) and ratio <= 1 - tie:
        return ratio, "faster"
    if min(a) > max(b) and ratio >= 1 + tie:
        return ratio, "slower"
    return ratio, NOISE


def hugetlb_params(nodes, cpus):
    """The kernel parameters of every boot's huge pages: 2M pages over the
    nodes and one 1G page per node, allocated with every vCPU."""
    return (f"hugepagesz=1G hugepages={HUGE_1G_PER_NODE * nodes} "
            f"hugepagesz=2M hugepages={HUGE_2M} "
            f"hugepage_alloc_threads={cpus}")


def boot_params(nodes, cpus):
    """Every boot's kernel parameters: the huge pages, their pr_debug()
    report, and no use of them by the init (only the boot is measured)."""
    return f"{hugetlb_params(nodes, cpus)} mttest.notouch hugetlb.dyndbg=+p"


def prealloc_fits(mem_gib):
    """Whether QEMU should preallocate a guest of MEM_GIB GiB: at most 80%
    of the host's MemAvailable (bench.py's rule)."""
    try:
        with open("/proc/meminfo") as f:
            m = re.search(r"^MemAvailable:\s+(\d+) kB", f.read(), re.M)
    except OSError:
        return False
    return bool(m) and mem_gib <= 0.8 * int(m.group(1)) / 2**20


def hugetlb_jobs(r):
    """{kB: {"us", "threads", "engine", "requested", "allocated"}} of the
    boot-time jobs of guest.parse()'s result R (the last report of each
    size)."""
    out = {}
    for kb, req, alloc, us, engine, threads in r["huge_report"]:
        out[int(kb)] = {"us": int(us), "threads": int(threads),
                        "engine": engine, "requested": int(req),
                        "allocated": int(alloc)}
    return out


def teardowns(log):
    """The TEARDOWN lines of LOG: [{"what", "mode", "mib", "us", "rc",
    counter: delta, ...}]."""
    out = []
    for m in TEARDOWN_RE.finditer(log):
        what, mode, mib, us, rc, rest = m.groups()
        t = {"what": what, "mode": mode, "mib": int(mib), "us": int(us),
             "rc": int(rc)}
        for kv in rest.split():
            k, _, v = kv.partition("=")
            t[k] = int(v)
        out.append(t)
    return out


def path_ran(t):
    """Whether teardown T took the path its mode names, from its counters:
    a serial run counted no parallel flush or zap; a parallel one counted
    at least one, with more threads than flushes or zaps (helpers)."""
    n, threads = PATH_COUNTERS[t["what"]]
    if t["mode"] == "serial":
        return t.get(n, 0) == 0
    return t.get(n, 0) >= 1 and t.get(threads, 0) > t.get(n, 0)


# The counters of a parallel-mode run that the policy declined, with the
# word the report gives each: the exit's gate (mm/zap_parallel.c) and the
# parallel free's rounds without helpers (mm/mmu_gather_parallel.c).
DECLINE_COUNTERS = {
    "munmap": (("busy", "tlb_parallel_free_nogrow_busy"),
               ("nomem", "tlb_parallel_free_nogrow_memory"),
               ("nogrow", "tlb_parallel_free_nogrow"),
               ("fallback", "tlb_parallel_free_fallback")),
    "exit": (("busy", "parallel_zap_busy"),
             ("refused", "parallel_zap_refused"),
             ("one-thread", "parallel_zap_serial"),
             ("nomem", "parallel_zap_nomem"),
             ("backoff", "parallel_zap_stopped_backoff")),
}


def path_taken(t):
    """What teardown T did, from its counters: "serial" (no parallel flush
    or zap counted), "parallel" (path_ran() of a parallel-mode run),
    "declined: <why>" (a parallel-mode run the policy sent down the serial
    path, and counted why), or "wrong: <what>", the one outcome that is the
    kernel's fault: a parallel path counted with the sysctl off, or a
    parallel-mode run that neither ran in parallel nor counted a refusal."""
    n, threads = PATH_COUNTERS[t["what"]]
    if t["mode"] == "serial":
        if t.get(n, 0) or t.get(threads, 0):
            return f"wrong: {n}={t.get(n, 0)} with the sysctl off"
        return "serial"
    if path_ran(t):
        return "parallel"
    why = [k for k, c in DECLINE_COUNTERS[t["what"]] if t.get(c, 0) > 0]
    if why:
        return "declined: " + ",".join(why)
    return (f"wrong: {n}={t.get(n, 0)} {threads}={t.get(threads, 0)} "
            "and no refusal counted")


def equal_pages(by_engine, key):
    """Whether KEY(boot) (pages per node) is one value over every boot of
    every engine: (True, value) or (False, {engine: [values]})."""
    vals = {e: [key(r) for r in runs] for e, runs in by_engine.items()}
    flat = {repr(v) for vs in vals.values() for v in vs}
    if len(flat) == 1:
        return True, next(iter(vals.values()))[0]
    return False, vals


def deferred_pages(r):
    """Deferred pages per node of boot R: by the job plus grown on demand."""
    return {n: v["pages"] + v["grown"] for n, v in sorted(r["nodes"].items())}


def huge_pages(r, kb):
    """Huge pages of size KB per node of boot R (sysfs)."""
    return dict(sorted(r["huge"].get(kb, {}).items()))


def deferred_us(r):
    """A boot's deferred init time: its slowest node's (nodes run at once)."""
    return max(n["us"] for n in r["nodes"].values())


def engine_order(engines, i):
    """Round I's order: the engines rotated by I, so that each starts a
    round in turn and none always follows the same one."""
    k = i % len(engines)
    return engines[k:] + engines[:k]


def _path_order(path):
    """The table's order of path_taken() values: serial, parallel, then
    the declined and wrong ones by name."""
    return ({"serial": 0, "parallel": 1}.get(path, 2), path)


def _fmt_pages(d):
    return " ".join(f"{n}:{p}" for n, p in sorted(d.items())) or "-"


def _spread(xs, scale=1.0, fmt="{:.1f}"):
    xs = [x / scale for x in xs]
    return (fmt.format(statistics.median(xs)) + " ("
            + fmt.format(min(xs)) + "-" + fmt.format(max(xs)) + ")")


class Report:
    """The checks and verdicts of a run, printed as they are made."""

    def __init__(self, out=print):
        self.out = out
        self.failed = []
        self.verdicts = []      # (part, "A/B", ratio, word, a, b)

    def check(self, cond, what):
        self.out(f"{'ok' if cond else 'FAILED'} - {what}")
        if not cond:
            self.failed.append(what)

    def compare(self, part, a_name, b_name, a, b, unit_scale, unit):
        ratio, word = verdict(a, b)
        self.verdicts.append((part, f"{a_name}/{b_name}", ratio, word, a, b))
        self.out(f"  {part:28} {a_name + '/' + b_name:21} {ratio:5.2f}  "
                 f"{a_name} {_spread(a, unit_scale)} vs {b_name} "
                 f"{_spread(b, unit_scale)} {unit}: "
                 + (f"{a_name} {word}" if word != NOISE else word))


def report(args, res, tds, placement=None, out=print):
    """Print the report of RES ({spec: [guest.parse() results]}) and TDS
    ([teardowns()] of the Rust boots); write CSVs and the PNG; return 0, or
    1 if a check failed."""
    rep = Report(out)
    specs = list(res)
    w = max(8, *(len(s) for s in specs))
    out("")
    out(f"make run: {args.nodes} nodes x {args.cpus // args.nodes} vCPU(s) "
        f"({args.cpus} vCPUs on {os.cpu_count()} host CPUs), "
        f"{args.mem_gib} GiB "
        + ("preallocated by QEMU" if args.mem_opts else
           "NOT preallocated (host page faults in the timings)")
        + f", kernel {args.kbuild}"
        + (f" WITH {', '.join(args.debug)}" if args.debug else
           " (no lockdep or debug objects)")
        + f", {args.accel.upper()}; {args.repeat} boot(s) per engine, "
        "engines alternating boot by boot; times us unless said")
    load = getattr(args, "host_load", None)
    if load is not None:
        out(f"host load average before the first boot: {load:.2f}"
            + (" (something else was running: timings are noisier than on "
               "an idle machine)" if load >= BUSY_LOAD else " (idle)"))

    # 1. Deferred init.
    out("\n1. Deferred struct page init, per node: pages, threads, median "
        "(min-max) us")
    out(f"{'engine':{w}} {'node':>4} {'pages':>9} {'threads':>7}  time us")
    for spec, runs in res.items():
        for node in sorted(runs[0]["nodes"]):
            us = [r["nodes"][node]["us"] for r in runs if node in r["nodes"]]
            thr = sorted({r["nodes"][node]["threads"] for r in runs
                          if node in r["nodes"]})
            out(f"{spec:{w}} {node:>4} "
                f"{deferred_pages(runs[0]).get(node, 0):>9} "
                f"{','.join(map(str, thr)):>7}  {_spread(us, 1, '{:.0f}')}")
    one = all(n["threads"] == 1 for runs in res.values() for r in runs
              for n in r["nodes"].values())
    if one:
        out("  one vCPU per node: every engine runs each node's job as one "
            "call on the node's own thread (no helper), so deferred init "
            "compares the same code: its verdict is this machine's noise "
            "floor, as 'make bench-deferred''s 2x2x16 guest")

    # 2. Hugetlb.
    out(f"\n2. Boot-time hugetlb [{hugetlb_params(args.nodes, args.cpus)}]: "
        "pages per node (sysfs), threads of the job, median (min-max) us; "
        "for 1G pages the job is their struct page init (memblock "
        "allocated them earlier, serially); threads: the Rust engine counts "
        "those that ran chunks, padata the helpers it asked for")
    out(f"{'size':4} {'engine':{w}} {'pages per node':>16} {'threads':>7}  "
        "time us")
    for kb, size in ((KB_2M, "2M"), (KB_1G, "1G")):
        for spec, runs in res.items():
            jobs = [hugetlb_jobs(r).get(kb) for r in runs]
            us = [j["us"] for j in jobs if j]
            thr = sorted({j["threads"] for j in jobs if j})
            pages = _fmt_pages(huge_pages(runs[0], kb))
            out(f"{size:4} {spec:{w}} {pages:>16} "
                f"{','.join(map(str, thr)) or '-':>7}  "
                + (_spread(us, 1, '{:.0f}') if us else "no job report"))

    # 3. Teardowns.
    tdw = [t for ts in tds for t in ts]
    if tdw:
        setup = TEARDOWN_SETUP_RE.search(args.teardown_setup or "")
        out(f"\n3. Teardown of {tdw[0]['mib']} MiB (THP off, half on each "
            "node) after boot, on the Rust engine, one pair of each per "
            f"Rust boot ({len(tds)} boot(s)), order alternating; median "
            "(min-max) ms; vmstat deltas summed over the runs"
            + (f"; {setup.group(1)}" if setup else ""))
        out(f"{'teardown':8} {'mode':8} {'path taken':22} {'runs':>4}  "
            f"{'time ms':22} counters")
        for what in ("munmap", "exit"):
            n, thr = PATH_COUNTERS[what]
            names = (n, thr) + tuple(c for _, c in DECLINE_COUNTERS[what])
            for mode in ("serial", "parallel"):
                rs = [t for t in tdw if t["what"] == what
                      and t["mode"] == mode and t["us"] >= 0]
                for path in sorted({path_taken(t) for t in rs},
                                   key=_path_order):
                    ps = [t for t in rs if path_taken(t) == path]
                    cnt = " ".join(
                        f"{c}={sum(t.get(c, 0) for t in ps)}" for c in names
                        if any(t.get(c, 0) for t in ps))
                    label = (PATH_NAMES[what] if path == "parallel" else
                             path.replace("declined: ", "serial, "))
                    out(f"{what:8} {mode:8} {label:22} {len(ps):>4}  "
                        f"{_spread([t['us'] for t in ps], 1000):22} "
                        f"{cnt or '-'}")
        out("  mode: the sysctl the run set; path taken: what its vmstat "
            "counters say ran; \"serial, busy\" and the like are runs the "
            "policy declined (no idle CPU, a refused task, one thread, no "
            "memory) and zapped or freed serially: a decision, not a "
            "failure, timed apart")

    # 4. Placement.
    if placement:
        print_placement(placement, out)

    # Verdicts.
    out("\nVerdicts, A/B median ratio, then median (min-max) of each:")
    ref = specs[0]
    for spec in specs[1:]:
        rep.compare("deferred init (slowest node)", ref, spec,
                    [deferred_us(r) for r in res[ref]],
                    [deferred_us(r) for r in res[spec]], 1000, "ms")
    for kb, size in ((KB_2M, "2M"), (KB_1G, "1G")):
        for spec in specs[1:]:
            a = [hugetlb_jobs(r)[kb]["us"] for r in res[ref]
                 if kb in hugetlb_jobs(r)]
            b = [hugetlb_jobs(r)[kb]["us"] for r in res[spec]
                 if kb in hugetlb_jobs(r)]
            if a and b:
                rep.compare(f"hugetlb {size}", ref, spec, a, b, 1000, "ms")
    for what in ("munmap", "exit"):
        par = [t["us"] for t in tdw if t["what"] == what
               and t["mode"] == "parallel" and t["us"] >= 0
               and path_taken(t) == "parallel"]
        ser = [t["us"] for t in tdw if t["what"] == what
               and t["mode"] == "serial" and t["us"] >= 0
               and path_taken(t) == "serial"]
        if par and ser:
            rep.compare(f"{what} {tdw[0]['mib'] // 1024} GiB",
                        PATH_NAMES[what].replace(" ", "-"), "serial", par,
                        ser, 1000, "ms")
        elif ser and any(t["what"] == what for t in tdw):
            out(f"  {what}: no run took the {PATH_NAMES[what]} path, no "
                "verdict (see the table above for why)")
    out(RULE)

    # Checks.
    out("\nChecks:")
    for spec, runs in res.items():
        bad = [(i, r["bad"][0]) for i, r in enumerate(runs) if r["bad"]]
        first = f": {bad[0]}" if bad else ""
        rep.check(not bad, f"{spec}: {len(runs)} boots clean (no BUG, "
                  f"WARNING, lockdep report){first}")
    ok, val = equal_pages(res, deferred_pages)
    rep.check(ok and bool(val), "deferred pages per node equal in every boot "
              f"of every engine ({_fmt_pages(val) if ok else val})")
    for kb, size, want in ((KB_2M, "2M", HUGE_2M),
                           (KB_1G, "1G", HUGE_1G_PER_NODE * args.nodes)):
        ok, val = equal_pages(res, lambda r: huge_pages(r, kb))
        rep.check(ok and sum(val.values()) == want,
                  f"{size} pages per node equal in every boot of every engine"
                  f", {want} in all ({_fmt_pages(val) if ok else val})")
    if tdw:
        for t in tdw:
            if t["rc"] or t["us"] < 0:
                rep.check(False, f"teardown {t['what']} {t['mode']}: "
                          f"free_test failed (rc={t['rc']})")
        for what in ("munmap", "exit"):
            for mode in ("serial", "parallel"):
                rs = [t for t in tdw
                      if t["what"] == what and t["mode"] == mode]
                paths = [path_taken(t) for t in rs]
                wrong = [p for p in paths if p.startswith("wrong")]
                took = paths.count(mode)
                said = (f"{what} {mode}: {took} of {len(rs)} runs took the "
                        f"{PATH_NAMES[what] if mode == 'parallel' else 'serial'}"
                        " path")
                declined = [p for p in paths if p.startswith("declined")]
                if declined:
                    said += (f", {len(declined)} declined by the policy ("
                             + "; ".join(sorted(set(declined))) + ")")
                rep.check(bool(rs) and not wrong,
                          said + (f"; wrong: {wrong[0]}" if wrong else ""))
    csv, png = write_outputs(args, res, tdw, rep)
    out(f"\nCSV {csv}; plot {png}; logs {args.logdir}/run-*.log")
    if rep.failed:
        out(f"run: {len(rep.failed)} check(s) FAILED")
        return 1
    return 0


# The mtjob_run tracepoint's line (include/trace/events/mtjob.h): the Rust
# engine counts the chunks of a node-affine job that ran off their node;
# padata does not say (its off_node is always 0).
MTJOB_RUN_RE = re.compile(r"mtjob_run: name=(\w+) caller=\S+ engine=(\w+) "
                          r".* threads=(\d+) off_node=(\d+) ")
GIGANTIC_RE = re.compile(r"HugeTLB: gigantic pages of node (\d+) "
                         r"initialised on node (\d+)")
PLACEMENT_BOOTS = 2


def placement_params():
    """The kernel parameters of a placement boot: helpertrace's workqueue
    events and the mtjob_run tracepoint, from boot (one trace_event= list:
    the kernel keeps the last), the whole trace printed."""
    return (helpertrace.params().replace("trace_event=",
                                         "trace_event=mtjob:mtjob_run,")
            + " mttest.wqtrace=all")


def placement_counts(log):
    """Where a placement boot's work ran: {"helpers": (off node, all) of
    deferred init's helper starts, or None without a trace; "chunks":
    {job name: (off node, engine)} from the mtjob_run events of deferred
    init and the 1G struct page init; "gigantic": (nodes whose 1G pages
    were initialised off the node, nodes)}."""
    hs = helpertrace.deferred_helpers(log)
    gig = {int(a): int(b) for a, b in GIGANTIC_RE.findall(log)}
    chunks = {}
    for name, engine, _, off in MTJOB_RUN_RE.findall(log):
        if name in ("deferred_init_memmap",
                    "hugetlb_bootmem_struct_page_init"):
            n, _ = chunks.get(name, (0, engine))
            chunks[name] = (n + int(off), engine)
    return {"helpers": None if hs is None else
            (sum(not h["on_node"] for h in hs), len(hs)),
            "chunks": chunks,
            "gigantic": (sum(a != b for a, b in gig.items()), len(gig))}


def sum_counts(counts):
    """placement_counts() of several boots, summed."""
    out = {"helpers": None, "chunks": {}, "gigantic": (0, 0)}
    for c in counts:
        if c["helpers"] is not None:
            h = out["helpers"] or (0, 0)
            out["helpers"] = (h[0] + c["helpers"][0], h[1] + c["helpers"][1])
        for name, (n, engine) in c["chunks"].items():
            out["chunks"][name] = (out["chunks"].get(name, (0, engine))[0]
                                   + n, engine)
        g = c["gigantic"]
        out["gigantic"] = (out["gigantic"][0] + g[0],
                           out["gigantic"][1] + g[1])
    return out


def print_placement(placement, out=print):
    """PLACEMENT: (nodes, cpus, boots, {spec: sum_counts()})."""
    nodes, cpus, boots, by_spec = placement
    out(f"\n4. Placement, {boots} boot(s) per engine of {nodes} nodes x "
        f"{cpus // nodes} vCPUs ({cpus} vCPUs on {os.cpu_count()} host CPUs:"
        " oversubscribed, so counted here, never timed; on a real server "
        "work off its memory's node crosses the interconnect): deferred "
        "init's helpers that started on a CPU off their node (workqueue "
        "tracepoints), deferred-init chunks run off their node (mtjob_run "
        "tracepoint: the Rust engine counts them, padata does not say), "
        "nodes whose 1G pages' struct pages were initialised by a CPU of "
        "another node (each node's pages are one chunk); 2M pages have no "
        "home node (a chunk allocates round-robin over the nodes)")
    for spec, c in by_spec.items():
        h, g = c["helpers"], c["gigantic"]
        d = c["chunks"].get("deferred_init_memmap")
        out(f"  {spec:10} deferred-init helpers off node: "
            + (f"{h[0]} of {h[1]}" if h else "no trace")
            + "; deferred-init chunks off node: "
            + ("not counted by padata" if d and d[1] != "rust" else
               f"{d[0]}" if d else "no event")
            + f"; 1G page init off node: {g[0]} of {g[1]} (nodes x boots)")


def write_outputs(args, res, tdw, rep):
    """The CSV of every boot and teardown and the PNG of the verdicts."""
    rows = []
    for spec, runs in res.items():
        for i, r in enumerate(runs):
            for node, n in sorted(r["nodes"].items()):
                rows.append((spec, i, "deferred", f"node{node}", n["threads"],
                             n["us"], ""))
            for kb, j in sorted(hugetlb_jobs(r).items()):
                rows.append((spec, i, f"hugetlb-{kb}kB", "job", j["threads"],
                             j["us"], ""))
    for i, t in enumerate(tdw):
        rows.append(("rust", i, f"{t['what']}-{t['mode']}", "teardown",
                     t.get(PATH_COUNTERS[t["what"]][1], 0), t["us"],
                     path_taken(t)))
    csv = benchplot.write_csv("run", ("engine", "boot", "what", "part",
                                      "threads", "us", "path"), rows)
    return csv, plot(args, rep)


def plot(args, rep):
    """One panel per comparison: each side's runs (ms) as points over a
    median bar, titled with the ratio and the verdict."""
    plt = benchplot.pyplot()
    n = len(rep.verdicts)
    cols = min(n, 4) or 1
    rows = -(-n // cols) or 1
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.4 * rows),
                             squeeze=False)
    for ax in axes.flat[n:]:
        ax.axis("off")
    for ax, (part, names, ratio, word, a, b) in zip(axes.flat, rep.verdicts):
        an, bn = names.split("/")
        for x, xs in ((0, a), (1, b)):
            ms = [v / 1000 for v in xs]
            ax.bar(x, statistics.median(ms), color="C0" if x == 0 else "C1",
                   alpha=0.5, width=0.6)
            ax.plot([x] * len(ms), ms, "k.", markersize=5)
        ax.set_xticks([0, 1], [an, bn], fontsize=8)
        ax.set_ylabel("ms", fontsize=8)
        ax.set_title(f"{part}\n{ratio:.2f} "
                     + (f"{an} {word}" if word != NOISE else "noise"),
                     fontsize=8)
    fig.suptitle(f"make run: {args.nodes} nodes x {args.cpus // args.nodes} "
                 f"vCPUs, {args.repeat} boots per engine (bars: median, "
                 "dots: runs)", fontsize=9)
    return benchplot.save(fig, "run")


def run(args, boot, save_log, kconfig):
    """Boot every engine ARGS.repeat times, alternating, and report; BOOT,
    SAVE_LOG and KCONFIG are guest.py's.  Returns the exit code."""
    benchplot.pyplot()              # before the boots, not after them
    args.host_load = host_load()
    args.debug = [o for o in ("PROVE_LOCKING", "DEBUG_OBJECTS", "KASAN",
                              "KCSAN") if kconfig(args, o) == "y"]
    extra = boot_params(args.nodes, args.cpus)
    td_spec = "rust" if "rust" in args.engines else None
    res, tds, failed = {s: [] for s in args.engines}, [], []
    args.teardown_setup = ""
    for i in range(args.repeat):
        for spec in engine_order(args.engines, i):
            more = ""
            if spec == td_spec and args.teardown:
                first = ("serial", "parallel")[len(tds) % 2]
                more = (f" mttest.teardown={TEARDOWN_MIB} "
                        f"mttest.teardown_first={first}")
            r, log = boot(args, spec, extra + more)
            name = f"run-{spec.replace(':', '-')}-{i}.log"
            path = save_log(args, name, log)
            if not r["ok"] or not r["nodes"]:
                failed.append(path)
                print(f"run: {spec} boot {i + 1} did not finish or report "
                      f"deferred init; see {path}", flush=True)
                continue
            res[spec].append(r)
            if more:
                tds.append(teardowns(log))
                m = TEARDOWN_SETUP_RE.search(log)
                args.teardown_setup = m.group(0) if m else ""
            print(f"run: round {i + 1} of {args.repeat}, {spec}: deferred "
                  f"{deferred_us(r) / 1000:.1f} ms, boot {r['wall']:.1f} s"
                  + (f", {len(tds[-1])} teardowns" if more else ""),
                  flush=True)
    placement = None
    if args.placement:
        pargs = _copy(args, cpus=args.nodes * 2)
        by_spec = {}
        for i in range(PLACEMENT_BOOTS):
            for spec in [s for s in engine_order(args.engines, i)
                         if split_engine(s) in ("rust", "padata")]:
                r, log = boot(pargs, spec, boot_params(pargs.nodes,
                                                       pargs.cpus)
                              + " " + placement_params())
                path = save_log(args, f"run-placement-"
                                f"{spec.replace(':', '-')}-{i}.log", log)
                if not r["ok"]:
                    failed.append(path)
                    continue
                by_spec.setdefault(spec, []).append(placement_counts(log))
                print(f"run: placement boot {i + 1} of {PLACEMENT_BOOTS}, "
                      f"{spec}, {pargs.cpus} vCPUs: boot {r['wall']:.1f} s",
                      flush=True)
        placement = (pargs.nodes, pargs.cpus, PLACEMENT_BOOTS,
                     {s: sum_counts(c) for s, c in by_spec.items()})
    res = {s: rs for s, rs in res.items() if rs}
    if not res:
        print(f"run: no boot finished; see {failed}")
        return 1
    rc = report(args, res, tds, placement)
    if failed:
        print(f"run: {len(failed)} boot(s) FAILED and are left out: {failed}")
        rc = 1
    return rc


def split_engine(spec):
    """The engine of SPEC ('rust:mtjob.max_threads=1' -> 'rust')."""
    return spec.partition(":")[0]


def _copy(args, **kw):
    a = copy.copy(args)
    for k, v in kw.items():
        setattr(a, k, v)
    return a
