/* SPDX-License-Identifier: GPL-2.0 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM zap_parallel

#if !defined(_TRACE_ZAP_PARALLEL_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_ZAP_PARALLEL_H

#include <linux/tracepoint.h>

/**
 * exit_mmap_zap_parallel - exit_mmap() zapped an mm with mtjob_run()
 * @pages: pages resident or swapped out when it started
 * @vmas: VMAs the helpers may zap
 * @entries: populated PMD entries under them (page tables and PMD leaves),
 *	what the segments share out
 * @segs: segments of address space, the job's indices
 * @helpers: helpers reserved
 * @threads: threads that zapped, the caller included if it ran a chunk
 * @zap_ns: the job, in nanoseconds
 * @tail_ns: the zap of the VMAs kept on the caller, after the job
 * @helper_ns: the helpers' CPU time in chunks, charged to the caller's
 *	cgroups
 * @caller_cpu_ns: the caller's CPU time in chunks; with @helper_ns, how the
 *	work was shared
 */
TRACE_EVENT(exit_mmap_zap_parallel,
	    TP_PROTO(unsigned long pages, unsigned int vmas,
		     unsigned long entries, unsigned long segs, int helpers,
		     int threads, u64 zap_ns, u64 tail_ns, u64 helper_ns,
		     u64 caller_cpu_ns),
	    TP_ARGS(pages, vmas, entries, segs, helpers, threads, zap_ns,
		    tail_ns, helper_ns, caller_cpu_ns),
	    TP_STRUCT__entry(__field(unsigned long, pages)
			     __field(unsigned int, vmas)
			     __field(unsigned long, entries)
			     __field(unsigned long, segs)
			     __field(int, helpers)
			     __field(int, threads)
			     __field(u64, zap_ns)
			     __field(u64, tail_ns)
			     __field(u64, helper_ns)
			     __field(u64, caller_cpu_ns)
	    ),
	    TP_fast_assign(__entry->pages = pages;
			   __entry->vmas = vmas;
			   __entry->entries = entries;
			   __entry->segs = segs;
			   __entry->helpers = helpers;
			   __entry->threads = threads;
			   __entry->zap_ns = zap_ns;
			   __entry->tail_ns = tail_ns;
			   __entry->helper_ns = helper_ns;
			   __entry->caller_cpu_ns = caller_cpu_ns;
	    ),
	    TP_printk("pages=%lu vmas=%u entries=%lu segs=%lu helpers=%d threads=%d zap_ns=%llu tail_ns=%llu helper_ns=%llu caller_cpu_ns=%llu",
		      __entry->pages, __entry->vmas, __entry->entries,
		      __entry->segs, __entry->helpers, __entry->threads,
		      __entry->zap_ns, __entry->tail_ns, __entry->helper_ns,
		      __entry->caller_cpu_ns)
);

/* The parallel zap of a live mm: munmap(), MADV_DONTNEED. */
/**
 * live_zap_parallel - a munmap() or madvise() zapped a range with mtjob_run()
 * @madvise: 0 for munmap() (and mmap(), mremap(), brk()), else the
 *	madvise() behaviour (MADV_DONTNEED, MADV_DONTNEED_LOCKED)
 * @start: the range's first address
 * @end: its end
 * @vmas: VMAs the helpers may zap
 * @entries: populated PMD entries under them, what the segments share out
 * @segs: segments of address space, the job's indices
 * @helpers: helpers reserved
 * @threads: threads that zapped, the caller included if it ran a chunk
 * @zap_ns: the job, in nanoseconds
 * @tail_ns: the zap of the VMAs kept on the caller, after the job
 * @helper_ns: the helpers' CPU time in chunks, charged to the caller
 * @caller_cpu_ns: the caller's CPU time in chunks
 */
TRACE_EVENT(live_zap_parallel,
	    TP_PROTO(int madvise, unsigned long start, unsigned long end,
		     unsigned int vmas, unsigned long entries,
		     unsigned long segs, int helpers, int threads, u64 zap_ns,
		     u64 tail_ns, u64 helper_ns, u64 caller_cpu_ns),
	    TP_ARGS(madvise, start, end, vmas, entries, segs, helpers, threads,
		    zap_ns, tail_ns, helper_ns, caller_cpu_ns),
	    TP_STRUCT__entry(__field(int, madvise)
			     __field(unsigned long, start)
			     __field(unsigned long, end)
			     __field(unsigned int, vmas)
			     __field(unsigned long, entries)
			     __field(unsigned long, segs)
			     __field(int, helpers)
			     __field(int, threads)
			     __field(u64, zap_ns)
			     __field(u64, tail_ns)
			     __field(u64, helper_ns)
			     __field(u64, caller_cpu_ns)
	    ),
	    TP_fast_assign(__entry->madvise = madvise;
			   __entry->start = start;
			   __entry->end = end;
			   __entry->vmas = vmas;
			   __entry->entries = entries;
			   __entry->segs = segs;
			   __entry->helpers = helpers;
			   __entry->threads = threads;
			   __entry->zap_ns = zap_ns;
			   __entry->tail_ns = tail_ns;
			   __entry->helper_ns = helper_ns;
			   __entry->caller_cpu_ns = caller_cpu_ns;
	    ),
	    TP_printk("madvise=%d start=0x%lx end=0x%lx vmas=%u entries=%lu segs=%lu helpers=%d threads=%d zap_ns=%llu tail_ns=%llu helper_ns=%llu caller_cpu_ns=%llu",
		      __entry->madvise, __entry->start, __entry->end,
		      __entry->vmas,
		      __entry->entries, __entry->segs, __entry->helpers,
		      __entry->threads, __entry->zap_ns, __entry->tail_ns,
		      __entry->helper_ns, __entry->caller_cpu_ns)
);

#endif /* _TRACE_ZAP_PARALLEL_H */

/* This part must be outside protection */
#include <trace/define_trace.h>
