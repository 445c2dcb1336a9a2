# SPDX-License-Identifier: GPL-2.0
"""The tables, CSV and plot of 'guest.py freebench' (make bench-free), from
the log of its guest (tests/guest/free.sh, mode bench).

Each run prints a BENCH line (teardown time as free_test measured it, us);
in mode zap the parallel zap's tracepoint follows it as a ZAPTRACE line;
with --phases, ftrace's function profiler figures of every CPU follow it as
PROFILE lines (one per profiled function and CPU: its calls and their time,
with that of whatever they called, without time asleep).
"""

import re
import statistics

import benchplot

MODES = ("off", "by_node", "interleave", "by_node_1h", "zap")
BENCH_RE = re.compile(r"^BENCH (\S+) FREE (\S+) mib=(\d+) thp=(\d) us=(\d+)$",
                      re.M)
# Groups: pages (None for a munmap()), vmas, entries, segs, helpers,
# threads, zap_ns, tail_ns, helper_ns, caller_cpu_ns
# (include/trace/events/zap_parallel.h: exit_mmap_zap_parallel, or
# live_zap_parallel with the range where the exit has its pages).
ZAPTRACE_RE = re.compile(
    r"^ZAPTRACE .* (?:exit_mmap_zap_parallel: pages=(\d+)|"
    r"live_zap_parallel: madvise=\d+ start=0x[0-9a-f]+ end=0x[0-9a-f]+) "
    r"vmas=(\d+) "
    r"entries=(\d+) segs=(\d+) helpers=(-?\d+) threads=(-?\d+) "
    r"zap_ns=(\d+) tail_ns=(\d+) helper_ns=(\d+) caller_cpu_ns=(\d+)$",
    re.M)
LIVE_MADVISE_RE = re.compile(r" live_zap_parallel: madvise=(\d+) ")
PROFILE_RE = re.compile(r"^PROFILE cpu=(\d+) (\w+) +(\d+) +([\d.]+) us")
# free.sh's profiler setup: the functions and the two options.
PHASES_RE = re.compile(r"^PHASES (.*) graph-time=(\d) sleep-time=(\d)$",
                       re.M)

# The phases of a teardown, from the profiled functions' times, each
# including the time of whatever it calls (graph-time stays on: on 7.3
# writing options/graph-time does not reach the profiler, as
# set_tracer_flag() tests it against TRACE_GRAPH_GRAPH_TIME, a function
# graph tracer bit, instead of TRACE_ITER(GRAPH_TIME)):
#   TLB flush    flush_tlb_mm_range(), every flush of a gather;
#   free         free_pages_and_swap_cache(), every batch of gathered pages
#                freed;
#   page tables  free_pgtables(), the caller's unlinking and gathering of
#                the page tables, with the flushes it makes when its batch
#                of tables fills (tlb_table_flush(), a few an exit: they
#                are in TLB flush too, and so left out of walk twice); the
#                tables themselves are freed later, by RCU callbacks that
#                no phase counts;
#   walk         the rest of unmap_vmas() and, for the parallel zap's
#                chunks, unmap_vma_range() and the tlb_finish_mmu() of every
#                gather: the page table walk, rmap, swap entries, gathering
#                and the gathers' bookkeeping; for MADV_DONTNEED,
#                zap_vma_range_batched() (serial) and zap_vma_range_chunk()
#                (the chunks) in place of unmap_vmas() and
#                unmap_vma_range().
# That needs every flush and free to run inside one of those four
# functions, as in modes off and zap; the parallel free's helpers free
# outside them, so its modes get no phases.  The profile covers the whole
# free_test command, so the shell's fork and exec of it (a few hundred
# pages) are in it too.
TOP = ("unmap_vmas", "unmap_vma_range", "zap_vma_range_batched",
       "zap_vma_range_chunk", "tlb_finish_mmu", "free_pgtables")
PHASES = ("walk", "TLB flush", "free", "page tables")
PHASE_MODES = ("off", "zap")


def phases(fns):
    """The phases of one run from {function: us summed over CPUs}."""
    flush = fns.get("flush_tlb_mm_range", 0.0)
    free = fns.get("free_pages_and_swap_cache", 0.0)
    tables = fns.get("free_pgtables", 0.0)
    top = sum(fns.get(f, 0.0) for f in TOP)
    return {"walk": top - flush - free - tables, "TLB flush": flush,
            "free": free, "page tables": tables}


def label(what, thp):
    """A row's teardown label: munmap, exit or dontneed, with " THP" if THP
    was on."""
    return what + (" THP" if thp == "1" else "")


def runs(log):
    """LOG's runs: (times, zaps, profiles).

    times:    {(label, MiB): {mode: [us, ...]}}
    zaps:     {(label, MiB): [(exit us, zap ns, caller ns, helper ns), ...]}
              for the zap-mode runs with a tracepoint event;
    profiles: {(label, MiB, mode): [{function: us summed over CPUs,
              "calls": profiled calls, "n FUNCTION": its calls}, ...]}
              for the runs with PROFILE lines."""
    times, zaps, profiles = {}, {}, {}
    key = mode = last_zap = prof = None
    for line in log.splitlines():
        m = BENCH_RE.match(line)
        if not m and line.startswith("BENCH-FAILED"):
            # A failed run: what follows is nobody's.
            key = mode = last_zap = prof = None
            continue
        if m:
            mode, what, mib, thp, us = m.groups()
            key = (label(what, thp), int(mib))
            times.setdefault(key, {}).setdefault(mode, []).append(int(us))
            last_zap = (key, int(us), False) if mode == "zap" else None
            prof = None
            continue
        m = ZAPTRACE_RE.match(line)
        if m and last_zap:
            # The row's own kind of event: a dontneed run of the two VMAs
            # map_touch() binds to a node each has one, and had one per
            # VMA before madvise_dontneed_vmas() (logs up to stop 38), and
            # may end with a munmap() of the emptied range (madvise=0),
            # which is not its own.
            adv = LIVE_MADVISE_RE.search(line)
            kind = ("exit" if not adv else
                    "munmap" if adv.group(1) == "0" else "dontneed")
            row = last_zap[0][0].split()[0]
            if {"live": "munmap", "live-dontneed": "dontneed"}.get(
                    row, row) == kind:
                zap_ns, caller_ns, helper_ns = map(int, m.groups()[6:9])
                rows = zaps.setdefault(last_zap[0], [])
                if last_zap[2]:
                    us, z, c, h = rows[-1]
                    rows[-1] = (us, z + zap_ns, c + caller_ns, h + helper_ns)
                else:
                    rows.append((last_zap[1], zap_ns, caller_ns, helper_ns))
                last_zap = (last_zap[0], last_zap[1], True)
            continue
        m = PROFILE_RE.match(line)
        if m and key:
            if prof is None:
                prof = {"calls": 0}
                profiles.setdefault(key + (mode,), []).append(prof)
            fn, us = m.group(2), float(m.group(4))
            prof["calls"] += int(m.group(3))
            prof[fn] = prof.get(fn, 0.0) + us
            prof["n " + fn] = prof.get("n " + fn, 0) + int(m.group(3))
    return times, zaps, profiles


FREETLB_RE = re.compile(r"^FREETLB ipis=(-?\d+)$")
BENCHTLB_RE = re.compile(r"^BENCHTLB switch=(\d+) remote=(\d+) local=(\d+) "
                         r"local_mm=(\d+) sent=(\d+) wrong=(\d+)$")
TLB_FIELDS = ("ipis", "switch", "remote", "local", "local_mm", "sent")


def tlbs(log):
    """The TLB counts of LOG's runs: {(label, MiB, mode): [{field: N}]},
    TLB_FIELDS from the FREETLB (IPIs received, /proc/interrupts) and
    BENCHTLB (tlb:tlb_flush events by reason) lines after a BENCH line."""
    out, key, cur = {}, None, None
    for line in log.splitlines():
        m = BENCH_RE.match(line)
        if m:
            mode, what, mib, thp, _ = m.groups()
            key, cur = (label(what, thp), int(mib), mode), {}
            continue
        m = BENCHTLB_RE.match(line)
        if m and cur is not None:
            cur.update(zip(TLB_FIELDS[1:], map(int, m.groups()[:5])))
            if len(cur) == len(TLB_FIELDS):
                out.setdefault(key, []).append(cur)
            key = cur = None
            continue
        if line.startswith("BENCH-FAILED"):
            # A failed run: what follows is nobody's.
            key = cur = None
            continue
        m = FREETLB_RE.match(line)
        if m and cur is not None:
            cur["ipis"] = int(m.group(1))
    return out


def print_tlbs(counts):
    """Median TLB flush events and IPIs a teardown, per mode."""
    print("\nTLB per teardown, median (max) over the runs: IPIs received "
          "(/proc/interrupts TLB), tlb:tlb_flush events by reason between "
          "the teardown's start and end (switch: on task switch; remote: "
          "flushes IPIs asked for; local; local_mm: of the whole mm; sent: "
          "IPI sends):")
    print(f"{'teardown':18}{'mode':>8}" + "".join(f"{f:>12}" for f in
                                                   TLB_FIELDS))
    for (what, mib, mode), rows in sorted(counts.items()):
        cells = [f"{statistics.median(r[f] for r in rows):.0f} "
                 f"({max(r[f] for r in rows)})" for f in TLB_FIELDS]
        print(f"{_gib((what, mib)):18}{mode:>8}" +
              "".join(f"{c:>12}" for c in cells))


# tests/qemu_plugins/tlbi.c's line at a teardown's end (arm64, --tlbi): it
# comes before the BENCH line of its run.
TLBI_RE = re.compile(r"TLBICOUNT mm=(\d+) va=(\d+) range=(\d+) all=(\d+) "
                     r"local=(\d+) other=(\d+)$")
TLBI_FIELDS = ("mm", "va", "range", "all", "local", "other")


def tlbis(log):
    """The TLBI counts of LOG's runs: {(label, MiB, mode): [{field: N}]},
    TLBI_FIELDS plus "bcast" (the broadcast ones: mm, va, range, all)."""
    out, pending = {}, None
    for line in log.splitlines():
        m = TLBI_RE.search(line)
        if m:
            pending = dict(zip(TLBI_FIELDS, map(int, m.groups())))
            pending["bcast"] = sum(pending[f] for f in TLBI_FIELDS[:4])
            continue
        m = BENCH_RE.match(line)
        if m and pending is not None:
            mode, what, mib, thp, _ = m.groups()
            out.setdefault((label(what, thp), int(mib), mode),
                           []).append(pending)
        if m or line.startswith("BENCH-FAILED"):
            pending = None
    return out


def print_tlbis(counts):
    """Median TLBIs a teardown, per mode (arm64)."""
    fields = ("bcast",) + TLBI_FIELDS
    print("\nTLBI instructions per teardown (arm64, QEMU plugin "
          "tests/qemu_plugins/tlbi.c, every vCPU between the teardown's "
          "start and end), median (max) over the runs: bcast = broadcast "
          "(inner or outer shareable) ones, of which mm = ASIDE1IS "
          "(flush_tlb_mm()), va = by page, range = FEAT_TLBIRANGE, all = "
          "VMALLE1IS; local = this CPU's only:")
    print(f"{'teardown':18}{'mode':>11}" + "".join(f"{f:>12}"
                                                   for f in fields))
    for (what, mib, mode), rows in sorted(counts.items()):
        cells = [f"{statistics.median(r[f] for r in rows):.0f} "
                 f"({max(r[f] for r in rows)})" for f in fields]
        print(f"{_gib((what, mib)):18}{mode:>11}" +
              "".join(f"{c:>12}" for c in cells))


def _gib(key):
    return f"{key[0]} {key[1] / 1024:g} GiB"


def print_times(times, modes):
    """The teardown times, median (min-max) ms, and off/mode ratios."""
    print(f"{'teardown':18}" + "".join(f"{m:>22}" for m in modes) +
          "".join(f"{'off/' + m:>14}" for m in modes[1:]))
    for key, by_mode in sorted(times.items()):
        cells, med = [], {}
        for m in modes:
            us = by_mode.get(m, [])
            if not us:
                cells.append(f"{'-':>22}")
                continue
            med[m] = statistics.median(us)
            cells.append(f"{med[m] / 1000:>9.0f} ({min(us) / 1000:.0f}-"
                         f"{max(us) / 1000:.0f})".rjust(22))
        ratio = [f"{med['off'] / med[m]:.2f}x" if m in med and "off" in med
                 else "-" for m in modes[1:]]
        print(f"{_gib(key):18}" + "".join(cells)
              + "".join(f"{x:>14}" for x in ratio))


def print_zaps(zaps):
    """What of a zapped exit is still serial: the exit as the parent sees
    it, the job (the parallel part), the VMAs kept on the caller, and the
    rest (page tables, VMA teardown, the exit itself)."""
    print("\nParallel zap, per phase, median ms (runs with a "
          "tracepoint event):")
    print(f"{'teardown':18}{'exit':>10}{'zap job':>10}{'caller':>10}"
          f"{'rest':>10}{'rest %':>8}{'helper cpu':>12}")
    for key, rows in sorted(zaps.items()):
        ex = statistics.median(r[0] for r in rows) / 1000
        zap = statistics.median(r[1] for r in rows) / 1e6
        cal = statistics.median(r[2] for r in rows) / 1e6
        hel = statistics.median(r[3] for r in rows) / 1e6
        rest = ex - zap - cal
        print(f"{_gib(key):18}{ex:>10.0f}{zap:>10.0f}{cal:>10.1f}"
              f"{rest:>10.0f}{100 * rest / ex if ex else 0:>7.0f}%"
              f"{hel:>12.0f}")


def print_profiles(times, profiles):
    """CPU time per phase, summed over the CPUs, median ms over the runs
    (modes off and zap); beside it the median teardown time (wall)."""
    print("\nPer phase, CPU time summed over the CPUs (function profiler, "
          "modes off and zap), median ms; calls: profiled calls a run (each "
          "costs the profiler its entry and exit hooks):")
    print(f"{'teardown':18}{'mode':>6}{'wall':>8}" +
          "".join(f"{p:>13}" for p in PHASES) + f"{'sum':>8}{'calls':>8}")
    for key in sorted(times):
        for m in PHASE_MODES:
            rows = profiles.get(key + (m,))
            if not rows:
                continue
            wall = statistics.median(times[key][m]) / 1000
            ph = [phases(r) for r in rows]
            med = [statistics.median(x[p] for x in ph) / 1000
                   for p in PHASES]
            calls = statistics.median(r["calls"] for r in rows)
            print(f"{_gib(key):18}{m:>6}{wall:>8.0f}" +
                  "".join(f"{x:>13.1f}" for x in med) + f"{sum(med):>8.0f}"
                  f"{calls:>8.0f}")


# The locks of the page frees (free.sh's PROFILE_LOCKS, freebench --locks),
# CPU ms summed over the CPUs: a zone's lock held and waited for
# (free_pcppages_bulk(), free_one_page()), a node's LRU lock taken, the wait
# included but not the hold, which is folios_put_refs()'s
# (folio_lruvec_lock_irqsave()), and every contended spinlock's wait
# (queued_spin_lock_slowpath(): its calls are the contended acquisitions;
# its time is inside the two others' too).
LOCKS = (("zone lock", ("free_pcppages_bulk", "free_one_page")),
         ("LRU lock take", ("folio_lruvec_lock_irqsave",)),
         ("spin wait", ("queued_spin_lock_slowpath",)))


def print_locks(times, profiles):
    """The page frees' locks per run, median over the runs (modes off and
    zap): CPU ms of each and the contended acquisitions; nothing if the
    profiles have none of the lock functions (logs from before them)."""
    if not any("queued_spin_lock_slowpath" in r or "free_pcppages_bulk" in r
               for rows in profiles.values() for r in rows):
        return
    print("\nLocks of the page frees, CPU time summed over the CPUs "
          "(function profiler), median ms a run; zone lock = "
          "free_pcppages_bulk() + free_one_page() (hold and wait), LRU lock "
          "take = folio_lruvec_lock_irqsave() (wait, not hold), spin wait = "
          "queued_spin_lock_slowpath() (every contended spinlock, inside "
          "the two others too); contended = its calls:")
    print(f"{'teardown':18}{'mode':>6}" +
          "".join(f"{name:>15}" for name, _ in LOCKS) + f"{'contended':>11}")
    for key in sorted(times):
        for m in PHASE_MODES:
            rows = profiles.get(key + (m,))
            if not rows:
                continue
            med = [statistics.median(sum(r.get(f, 0.0) for f in fns)
                                     for r in rows) / 1000
                   for _, fns in LOCKS]
            cont = statistics.median(r.get("n queued_spin_lock_slowpath", 0)
                                     for r in rows)
            print(f"{_gib(key):18}{m:>6}" +
                  "".join(f"{x:>15.1f}" for x in med) + f"{cont:>11.0f}")


def report(args, log, path):
    """Print the tables, write the CSVs and the plot; 0, or 1 if the log
    has no runs."""
    times, zaps, profiles = runs(log)
    if not times:
        print(f"freebench: no BENCH lines in {path}")
        return 1
    modes = [m for m in MODES if m in
             {m for v in times.values() for m in v}]
    print(f"Teardown time, {args.nodes} nodes, {args.cpus} vCPUs, "
          f"{args.mem_gib} GiB, TCG, {args.repeat} runs each, interleaved; "
          "median (min-max) ms; off = serial (vm.parallel_free=0, "
          "vm.parallel_zap=0), by_node = vm.parallel_free=1 (default "
          "by node), interleave = vm.parallel_free_by_node=0, by_node_1h = "
          "vm.parallel_free_max_helpers=1 (caller + 1 helper), zap = "
          "the parallel zap with vm.parallel_free=0 (vm.parallel_zap=1 for "
          "exits, vm.parallel_zap_live=1 for munmap and dontneed):")
    print_times(times, modes)
    if zaps:
        print_zaps(zaps)
    counts = tlbs(log)
    if counts:
        print_tlbs(counts)
    tlbi = tlbis(log)
    if getattr(args, "tlbi", False):
        paired = sum(len(rows) for rows in tlbi.values())
        n_runs = len(BENCH_RE.findall(log))
        if paired != n_runs:
            print(f"freebench: --tlbi, but {paired} of the {n_runs} runs have "
                  f"a TLBICOUNT line in {path}")
            return 1
    if tlbi:
        print_tlbis(tlbi)
    name = f"free-{args.nodes}n{args.cpus}c"
    csvs = [benchplot.write_csv(
        name, ("teardown", "mib", "mode", "run", "us"),
        [(what, mib, mode, i, us) for (what, mib), by_mode in
         sorted(times.items()) for mode, rs in by_mode.items()
         for i, us in enumerate(rs)])]
    if getattr(args, "phases", False) and not profiles:
        print(f"freebench: --phases, but no PROFILE lines in {path}")
        return 1
    if profiles:
        setup = PHASES_RE.search(log)
        if not setup or setup.group(2, 3) != ("1", "0"):
            print("freebench: the profile left out nested calls or counted "
                  "time asleep (graph-time, sleep-time: "
                  f"{setup.group(2, 3) if setup else 'no PHASES line'}); "
                  "its phases do not add up")
            return 1
        # The phases add TOP's functions up: none may run inside another,
        # as a serial unmap_vmas() would if unmap_vma_range() were not
        # inlined into it.
        missing = [f for f in TOP if f not in setup.group(1).split()]
        if missing:
            print(f"freebench: the profile lacks {', '.join(missing)} (a log "
                  "from before they were profiled): the walk of a "
                  "teardown through them is left out of its phases")
        nested = [k for k, rs in profiles.items() if k[2] == "off" and any(
            r.get("n unmap_vmas") and r.get("n unmap_vma_range") for r in rs)]
        if nested:
            print("freebench: unmap_vma_range() ran inside unmap_vmas() "
                  f"({nested[0][0]}): the serial walk would count twice")
            return 1
        print_profiles(times, profiles)
        print_locks(times, profiles)
        fns = sorted({f for rs in profiles.values() for r in rs
                      for f in r if not f.startswith("n ")} - {"calls"})
        csvs.append(benchplot.write_csv(
            name + "-profile", ("teardown", "mib", "mode", "run", "calls")
            + tuple(fns) + tuple("calls_" + f for f in fns),
            [k + (i, r["calls"]) + tuple(r.get(f, 0.0) for f in fns)
             + tuple(r.get("n " + f, 0) for f in fns)
             for k, rs in sorted(profiles.items())
             for i, r in enumerate(rs)]))
    png = plot(args, times, modes, name)
    print(f"\nCSV {', '.join(csvs)}; plot {png}; log {path}")
    return 0


def plot(args, times, modes, name):
    """Teardown time against size, one panel per teardown, one line per
    mode (median, min-max bars); the PNG's path."""
    plt = benchplot.pyplot()
    kinds = sorted({w for w, _ in times})
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.5 * len(kinds), 4.5),
                             sharey=True, squeeze=False)
    for ax, what in zip(axes[0], kinds):
        sizes = sorted(mib for w, mib in times if w == what)
        for m in modes:
            pts = [(mib / 1024, [u / 1000 for u in times[what, mib][m]])
                   for mib in sizes if m in times[what, mib]]
            if not pts:
                continue
            xs = [x for x, _ in pts]
            meds = [statistics.median(us) for _, us in pts]
            ax.errorbar(xs, meds, yerr=[[md - min(us) for md, (_, us) in
                                         zip(meds, pts)],
                                        [max(us) - md for md, (_, us) in
                                         zip(meds, pts)]],
                        marker="o", capsize=3, label=m)
        ax.set_xlabel("GiB")
        ax.set_title(f"{what}, {args.nodes} nodes, {args.cpus} vCPUs")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("teardown, ms (median, min-max)")
    return benchplot.save(fig, name)
