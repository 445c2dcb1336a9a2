# SPDX-License-Identifier: GPL-2.0
"""When the helpers of a job start, from the kernel's own workqueue
tracepoints (no code in the kernel under test).

A guest booted with PARAMS records workqueue:workqueue_queue_work and
workqueue:workqueue_execute_start from early boot (trace_event=, enabled at
early_initcall time, before deferred init), with the global trace clock:
sched_clock_cpu(), as printk's timestamps, and monotonic across CPUs (the
guests' TSCs are marked unsynchronized, so the raw per-CPU "local" clock
could put an offset between a queueing and a starting CPU into the
latency); tests/guest/init prints the events of job helpers between
MTJOB-TRACE and MTJOB-TRACE-END:

- padata's helpers run padata_mt_helper() (queue_work_node() in
  padata_do_multithreaded(); the caller runs the function itself, untraced);
- the Rust engine's helpers run a scoped work item of kernel::mtjob::shared
  (kallsyms prints the mangled name, which has "mtjob6shared" and
  "WorkItemPointer" in it).

A helper's start latency is the time from its queue_work event to its
execute_start event, matched by work struct (the trace hashes the pointer,
the same way within a boot).  sched:sched_process_fork tells whether the
worker that ran it was forked after it was queued: a helper that found no
idle worker in its pool and waited for the pool's manager to create one
("new worker"). The helper takes its first chunk right after
execute_start, with no sleep or queueing in between. Tracing costs each
work item two events of a few hundred nanoseconds, for every engine alike.
"""

import re
import statistics

PARAMS = ("trace_event=workqueue:workqueue_queue_work,"
          "workqueue:workqueue_execute_start,sched:sched_process_fork "
          "trace_clock=global "
          "mttest.wqtrace")


def params(buf_mb=8):
    """The kernel parameters, with a trace buffer of BUF_MB MiB per CPU."""
    return f"{PARAMS} trace_buf_size={buf_mb}M"

# "<comm>-<pid> [cpu] flags ts: event: work struct[=| ]<hash>[:] function[=| ]<fn>"
EVENT_RE = re.compile(
    r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+(?:\(\s*\S+\)\s+)?\[(?P<cpu>\d+)\]\s+"
    r"\S+\s+(?P<ts>\d+\.\d+): (?P<ev>workqueue_queue_work|"
    r"workqueue_execute_start): work struct[= ](?P<work>[0-9a-f]+):? "
    r"function[= ](?P<fn>\S+)(?: workqueue=(?P<wq>\S+))?")
# "... ts: sched_process_fork: comm=kthreadd pid=2 child_comm=kthreadd
# child_pid=57"
FORK_RE = re.compile(r"\s(?P<ts>\d+\.\d+): sched_process_fork: .*"
                     r"child_pid=(?P<pid>\d+)")
NODE_CPUS_RE = re.compile(r"^node(\d+) cpus (\S*)$", re.M)


def helper_engine(fn):
    """The engine whose helper runs FN, or None."""
    if fn == "padata_mt_helper":
        return "padata"
    if "mtjob6shared" in fn and "WorkItemPointer" in fn:
        return "rust"
    return None


def cpu_nodes(log):
    """{node: set of CPUs} from the guest's "nodeN cpus LIST" lines
    (sysfs cpulist: under numa=fake= a CPU is in every emulated node of its
    physical node)."""
    nodes = {}
    for node, lst in NODE_CPUS_RE.findall(log):
        cpus = set()
        for part in filter(None, lst.split(",")):
            lo, _, hi = part.partition("-")
            cpus.update(range(int(lo), int(hi or lo) + 1))
        nodes[int(node)] = cpus
    return nodes


def parse(log):
    """Helper starts in LOG: a list of dicts with the engine, the queueing
    task (comm), the workqueue, when it was queued (seconds since boot, the
    clock of printk's timestamps), the CPU it started on and the latency in
    microseconds, in the order they started, whether it started on
    the CPU that queued it ("same_cpu"), and "new_worker": whether the
    worker that ran it was forked after it was queued (None when the trace
    has no fork events).  Returns None if the guest printed no trace."""
    if "MTJOB-TRACE\n" not in log:
        return None
    body = log.split("MTJOB-TRACE\n", 1)[1].split("MTJOB-TRACE-END", 1)[0]
    queued, out, forked = {}, [], {}
    forks = "sched_process_fork" in body
    for line in body.splitlines():
        f = FORK_RE.search(line)
        if f:
            forked[int(f["pid"])] = float(f["ts"])
            continue
        m = EVENT_RE.match(line)
        if not m or not helper_engine(m["fn"]):
            continue
        ts = float(m["ts"])
        if m["ev"] == "workqueue_queue_work":
            queued[m["work"]] = (ts, m["comm"], m["wq"], int(m["cpu"]))
            continue
        q = queued.pop(m["work"], None)
        if q is None:
            continue    # queued before the trace buffer's first event
        out.append({"engine": helper_engine(m["fn"]), "queued_by": q[1],
                    "workqueue": q[2], "queued_at": q[0],
                    "cpu": int(m["cpu"]), "same_cpu": int(m["cpu"]) == q[3],
                    "us": (ts - q[0]) * 1e6,
                    "new_worker": (forked.get(int(m["pid"]), -1) > q[0]
                                   if forks else None)})
    return out


def deferred_helpers(log):
    """The helper starts of deferred init: queued by a pgdatinitN thread,
    with "node" N and "on_node" whether the CPU is one of node N's."""
    starts = parse(log)
    if starts is None:
        return None
    nodes = cpu_nodes(log)
    out = []
    for h in starts:
        m = re.fullmatch(r"pgdatinit(\d+)", h["queued_by"])
        if m:
            node = int(m.group(1))
            out.append(dict(h, node=node,
                            on_node=h["cpu"] in nodes.get(node, ())))
    return out


def by_window(starts, edges):
    """Helper starts grouped by when they were queued: group k holds those
    queued after EDGES[k] and up to EDGES[k + 1] (seconds, ascending), so
    that with the timestamps of the lines a benchmark prints after each of
    its points, group k is point k's."""
    groups = [[] for _ in range(max(len(edges) - 1, 0))]
    k = 0
    for h in sorted(starts, key=lambda h: h["queued_at"]):
        while k < len(groups) and h["queued_at"] > edges[k + 1]:
            k += 1
        if k == len(groups):
            break
        if h["queued_at"] > edges[k]:
            groups[k].append(h)
    return groups


def percentile(xs, p):
    """The P-th percentile of XS (nearest rank): with fewer than 100
    samples, p99 is the largest."""
    xs = sorted(xs)
    k = max(0, min(len(xs) - 1, -(-len(xs) * p // 100) - 1))
    return xs[int(k)]


def summary(starts):
    """(n, median, p90, p99, max, share on node, share on a new worker,
    share on the queueing CPU) of START dicts' latencies, or None for no
    helper; a share is None when no start says."""
    us = [h["us"] for h in starts]
    if not us:
        return None

    def share(key):
        xs = [h[key] for h in starts if h.get(key) is not None]
        return sum(xs) / len(xs) if xs else None
    return (len(us), statistics.median(us), percentile(us, 90),
            percentile(us, 99), max(us), share("on_node"),
            share("new_worker"), share("same_cpu"))
