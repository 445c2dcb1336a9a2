// SPDX-License-Identifier: GPL-2.0
/*
 * Boot-time benchmark of mtjob_run() against padata_do_multithreaded()
 * (CONFIG_MTJOB_BENCH).  Booted with "mtjob_bench.run=1", a late initcall
 * (init memory, hence padata's multithreaded code, is still there) runs the
 * same jobs on both engines, alternating, and prints one line per point:
 *
 *   mtjob_bench: fn=F aff=A cap=C size=N reps=R
 *	rust_ns=MED/MIN/MAX padata_ns=MED/MIN/MAX rust/padata=X.XXX
 *	rust_threads=T padata_threads=P
 *
 * F is "noop" (a chunk function that returns at once: the engines' own cost)
 * or "write" (64 bytes written per index into its own slot of a buffer on
 * the index's node, mapped with huge pages where it can be: the shape of
 * struct page init in a vmemmap).  A is "none" (mtjob
 * MTJOB_AFFINITY_NONE against padata without numa_aware) or "node"
 * (MTJOB_AFFINITY_BY_INDEX, the range cut evenly over the nodes with
 * memory, against padata's numa_aware).  C is the thread cap, caller
 * included: 1, 2 and the online CPUs.  Times are per job, in ns
 * (ktime_get_ns()), over R repetitions per engine; T is the fewest-most
 * threads the Rust engine reported (helpers that started, and the caller),
 * P the threads padata was asked for (it does not say how many started).
 *
 * Both engines get the same job: align 1, min_chunk 1, start 0; the Rust
 * engine through mtjob_run(), as callers reach it, padata directly.  A
 * boot-time "mtjob.max_threads=" cap would apply to the Rust engine only:
 * do not boot the benchmark with it.  Run it on a kernel without lockdep and
 * debug objects (make bench-engine builds one): both cost the engines
 * unequally.
 */

#define pr_fmt(fmt) "mtjob_bench: " fmt

#include <linux/bits.h>
#include <linux/init.h>
#include <linux/ktime.h>
#include <linux/limits.h>
#include <linux/math.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/mtjob.h>
#include <linux/nodemask.h>
#include <linux/padata.h>
#include <linux/pgtable.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

/* Bytes written per index by the "write" chunk function. */
#define BENCH_SLOT_SHIFT	6
/* The largest job: 2^28 indices, 16 GiB of slots. */
#define BENCH_MAX_SIZE		BIT(28)

static bool bench_run __initdata;
module_param_named(run, bench_run, bool, 0);
MODULE_PARM_DESC(run, "Run the benchmark at boot (default: no)");

static unsigned long bench_max_size __initdata = 1UL << 24;
module_param_named(max_size, bench_max_size, ulong, 0);
MODULE_PARM_DESC(max_size, "Largest job in indices (default 16M, at most 256M; 64 bytes of buffer each)");

static unsigned int bench_reps __initdata;
module_param_named(reps, bench_reps, uint, 0);
MODULE_PARM_DESC(reps, "Repetitions per engine and point (default: 100 for small jobs, down to 9 from 1M indices)");

struct bench {
	unsigned long size;
	int nr_nodes;
	int nid[MAX_NUMNODES];
	u8 *buf[MAX_NUMNODES];	/* a slot per index of the node's share */
};

/* The node slot of @index: the range [0, size) is cut evenly over nodes. */
static int __init bench_slot(const struct bench *b, unsigned long index)
{
	return min_t(unsigned long, index / max(b->size / b->nr_nodes, 1UL),
		     b->nr_nodes - 1);
}

static unsigned long __init bench_slot_start(const struct bench *b, int slot)
{
	return slot * max(b->size / b->nr_nodes, 1UL);
}

static unsigned long __init bench_slot_end(const struct bench *b, int slot)
{
	return slot == b->nr_nodes - 1 ? b->size : bench_slot_start(b, slot + 1);
}

static int __init bench_noop(unsigned long start, unsigned long end, void *arg)
{
	return 0;
}

static int __init bench_write(unsigned long start, unsigned long end,
			      void *arg)
{
	const struct bench *b = arg;
	unsigned long i = start;

	while (i < end) {
		int slot = bench_slot(b, i);
		unsigned long first = bench_slot_start(b, slot);
		unsigned long stop = min(end, bench_slot_end(b, slot));
		u8 *buf = b->buf[slot];

		for (; i < stop; i++)
			memset(buf + ((i - first) << BENCH_SLOT_SHIFT), i,
			       1 << BENCH_SLOT_SHIFT);
	}
	return 0;
}

static int __init bench_node_of(unsigned long index, void *arg)
{
	const struct bench *b = arg;

	return b->nid[bench_slot(b, index)];
}

/* padata's thread function returns nothing. */
static void __init bench_padata_noop(unsigned long start, unsigned long end,
				     void *arg)
{
	bench_noop(start, end, arg);
}

static void __init bench_padata_write(unsigned long start, unsigned long end,
				      void *arg)
{
	bench_write(start, end, arg);
}

struct bench_point {
	bool write;
	bool node;
	int cap;
	unsigned int reps;
	u64 *rust_ns;
	u64 *padata_ns;
	int rust_min_threads;
	int rust_max_threads;
};

static int __init bench_one_rust(struct bench *b, struct bench_point *p,
				 u64 *ns)
{
	struct mtjob job = {
		.thread_fn	= p->write ? bench_write : bench_noop,
		.fn_arg		= b,
		.start		= 0,
		.size		= b->size,
		.align		= 1,
		.min_chunk	= 1,
		.max_threads	= p->cap,
		.affinity	= p->node ? MTJOB_AFFINITY_BY_INDEX :
					    MTJOB_AFFINITY_NONE,
		.node_of	= bench_node_of,
		.gfp		= GFP_KERNEL,
		.name		= "mtjob_bench",
	};
	struct mtjob_report report;
	u64 t0 = ktime_get_ns();
	int ret = mtjob_run_report(&job, &report);

	*ns = ktime_get_ns() - t0;
	if (ret)
		return ret;
	if (report.engine != MTJOB_ENGINE_RUST) {
		pr_err("mtjob_run() used the %s engine: boot with mtjob.engine=rust\n",
		       mtjob_engine_name(report.engine));
		return -EINVAL;
	}
	p->rust_min_threads = min(p->rust_min_threads, report.nr_threads);
	p->rust_max_threads = max(p->rust_max_threads, report.nr_threads);
	return 0;
}

static void __init bench_one_padata(struct bench *b, struct bench_point *p,
				    u64 *ns)
{
	struct padata_mt_job job = {
		.thread_fn	= p->write ? bench_padata_write :
					     bench_padata_noop,
		.fn_arg		= b,
		.start		= 0,
		.size		= b->size,
		.align		= 1,
		.min_chunk	= 1,
		.max_threads	= p->cap,
		.numa_aware	= p->node,
	};
	u64 t0 = ktime_get_ns();

	padata_do_multithreaded(&job);
	*ns = ktime_get_ns() - t0;
}

static int __init bench_cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Sorts @ns and prints "median/min/max" into @out. */
static void __init bench_stats(u64 *ns, unsigned int n, char *out, size_t len)
{
	sort(ns, n, sizeof(*ns), bench_cmp_u64, NULL);
	snprintf(out, len, "%llu/%llu/%llu", ns[n / 2], ns[0], ns[n - 1]);
}

static int __init bench_point(struct bench *b, struct bench_point *p)
{
	char rs[64], ps[64];
	u64 rmed, pmed;
	unsigned int r;
	int ret;

	/* One unmeasured run of each warms caches and starts kworkers. */
	ret = bench_one_rust(b, p, &p->rust_ns[0]);
	if (ret)
		return ret;
	bench_one_padata(b, p, &p->padata_ns[0]);
	p->rust_min_threads = INT_MAX;
	p->rust_max_threads = 0;
	/* Alternate which engine goes first, so that drift hits both. */
	for (r = 0; r < p->reps; r++) {
		if (r & 1)
			bench_one_padata(b, p, &p->padata_ns[r]);
		ret = bench_one_rust(b, p, &p->rust_ns[r]);
		if (ret)
			return ret;
		if (!(r & 1))
			bench_one_padata(b, p, &p->padata_ns[r]);
		cond_resched();
	}
	bench_stats(p->rust_ns, p->reps, rs, sizeof(rs));
	bench_stats(p->padata_ns, p->reps, ps, sizeof(ps));
	rmed = p->rust_ns[p->reps / 2];
	pmed = max(p->padata_ns[p->reps / 2], 1ULL);
	pr_info("fn=%s aff=%s cap=%d size=%lu reps=%u rust_ns=%s padata_ns=%s rust/padata=%llu.%03llu rust_threads=%d-%d padata_threads=%lu\n",
		p->write ? "write" : "noop", p->node ? "node" : "none", p->cap,
		b->size, p->reps, rs, ps, div64_u64(rmed, pmed),
		div64_u64(rmed * 1000, pmed) % 1000, p->rust_min_threads,
		p->rust_max_threads, min_t(unsigned long, b->size, p->cap));
	return 0;
}

static unsigned int __init bench_reps_for(unsigned long size)
{
	if (bench_reps)
		return bench_reps;
	return clamp_t(unsigned long, (4UL << 20) / size, 9, 100);
}

static int __init bench_all(struct bench *b)
{
	int caps[3] = { 1, 2, num_online_cpus() };
	struct bench_point p = { };
	unsigned int max_reps = max(bench_reps, 100U);
	int ret = 0, c, w, n;

	p.rust_ns = kcalloc(max_reps, sizeof(u64), GFP_KERNEL);
	p.padata_ns = kcalloc(max_reps, sizeof(u64), GFP_KERNEL);
	if (!p.rust_ns || !p.padata_ns) {
		ret = -ENOMEM;
		goto out;
	}
	for (b->size = 1; b->size <= bench_max_size; b->size <<= 4) {
		/* Sizes go up 16 times; the parameter is at most 2^28. */
		for (w = 0; w < 2; w++) {
			for (n = 0; n < 2; n++) {
				for (c = 0; c < ARRAY_SIZE(caps); c++) {
					/* "All CPUs" may be 1 or 2. */
					if (c && caps[c] <= caps[c - 1])
						continue;
					p.write = w;
					p.node = n;
					p.cap = caps[c];
					p.reps = bench_reps_for(b->size);
					ret = bench_point(b, &p);
					if (ret)
						goto out;
				}
			}
		}
	}
out:
	kfree(p.rust_ns);
	kfree(p.padata_ns);
	return ret;
}

/* Memory of @nid, with huge mappings where possible, as the vmemmap has. */
static void * __init bench_buffer(unsigned long bytes, int nid)
{
	return __vmalloc_node_range(bytes, 1, VMALLOC_START, VMALLOC_END,
				    GFP_KERNEL, PAGE_KERNEL, VM_ALLOW_HUGE_VMAP,
				    nid, __builtin_return_address(0));
}

static int __init mtjob_bench_init(void)
{
	unsigned long bytes;
	struct bench *b;
	int nid, ret = 0;

	if (!bench_run)
		return 0;
	if (!bench_max_size || bench_max_size > BENCH_MAX_SIZE) {
		pr_err("max_size=%lu: 1 to %lu indices\n", bench_max_size,
		       BENCH_MAX_SIZE);
		return -EINVAL;
	}
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	b->nr_nodes = num_node_state(N_MEMORY);
	/* The last node's share is the largest: at most nodes - 1 more. */
	bytes = (bench_max_size / b->nr_nodes + b->nr_nodes) << BENCH_SLOT_SHIFT;
	b->nr_nodes = 0;
	for_each_node_state(nid, N_MEMORY) {
		b->buf[b->nr_nodes] = bench_buffer(bytes, nid);
		if (!b->buf[b->nr_nodes]) {
			pr_err("no %lu bytes for node %d\n", bytes, nid);
			ret = -ENOMEM;
			goto out;
		}
		/* The pages are there; warm the caches and TLB once. */
		memset(b->buf[b->nr_nodes], 0, bytes);
		b->nid[b->nr_nodes++] = nid;
	}
	pr_info("%d online CPUs, %d nodes with memory, sizes 1 to %lu\n",
		num_online_cpus(), b->nr_nodes, bench_max_size);
	ret = bench_all(b);
	pr_info("done (%d)\n", ret);
out:
	for (nid = 0; nid < b->nr_nodes; nid++)
		vfree(b->buf[nid]);
	kfree(b);
	return ret;
}
late_initcall(mtjob_bench_init);
