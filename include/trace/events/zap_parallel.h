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
 * @blocks: PMD_SIZE blocks of address space they touch, the job's indices
 * @helpers: helpers reserved
 * @threads: threads that zapped, the caller included if it ran a chunk
 * @zap_ns: the job, in nanoseconds
 * @caller_ns: the zap of the VMAs kept on the caller, after the job
 * @helper_ns: the helpers' CPU time, charged to the caller's cgroups
 */
TRACE_EVENT(exit_mmap_zap_parallel,
	    TP_PROTO(unsigned long pages, unsigned int vmas, unsigned long blocks,
		     int helpers, int threads, u64 zap_ns, u64 caller_ns,
		     u64 helper_ns),
	    TP_ARGS(pages, vmas, blocks, helpers, threads, zap_ns, caller_ns,
		    helper_ns),
	    TP_STRUCT__entry(__field(unsigned long, pages)
			     __field(unsigned int, vmas)
			     __field(unsigned long, blocks)
			     __field(int, helpers)
			     __field(int, threads)
			     __field(u64, zap_ns)
			     __field(u64, caller_ns)
			     __field(u64, helper_ns)
	    ),
	    TP_fast_assign(__entry->pages = pages;
			   __entry->vmas = vmas;
			   __entry->blocks = blocks;
			   __entry->helpers = helpers;
			   __entry->threads = threads;
			   __entry->zap_ns = zap_ns;
			   __entry->caller_ns = caller_ns;
			   __entry->helper_ns = helper_ns;
	    ),
	    TP_printk("pages=%lu vmas=%u blocks=%lu helpers=%d threads=%d zap_ns=%llu caller_ns=%llu helper_ns=%llu",
		      __entry->pages, __entry->vmas, __entry->blocks,
		      __entry->helpers, __entry->threads, __entry->zap_ns,
		      __entry->caller_ns, __entry->helper_ns)
);

#endif /* _TRACE_ZAP_PARALLEL_H */

/* This part must be outside protection */
#include <trace/define_trace.h>
