/* SPDX-License-Identifier: GPL-2.0 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM mmu_gather

#if !defined(_TRACE_MMU_GATHER_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_MMU_GATHER_H

#include <linux/tracepoint.h>

/**
 * tlb_parallel_free - a gather's pages were freed with mtjob_run()
 * @freeable: pages to free, counted by size (the threshold's units)
 * @gathered: pages gathered, counted by size
 * @batches: the gather's batches, the job's indices
 * @helpers: helpers the gather had reserved
 * @threads: threads that freed, the caller included if it freed a batch
 * @held_ns: from the round's first batch beyond upstream's size to the end
 *	of the free, in nanoseconds (0 if the gather did not grow, or the
 *	tracepoint was off when it started to)
 * @free_ns: the free itself, in nanoseconds
 * @helper_ns: the helpers' CPU time, charged to the caller's cgroups
 */
TRACE_EVENT(tlb_parallel_free,
	    TP_PROTO(unsigned long freeable, unsigned long gathered,
		     unsigned int batches, unsigned int helpers, int threads,
		     u64 held_ns, u64 free_ns, u64 helper_ns),
	    TP_ARGS(freeable, gathered, batches, helpers, threads, held_ns,
		    free_ns, helper_ns),
	    TP_STRUCT__entry(__field(unsigned long, freeable)
			     __field(unsigned long, gathered)
			     __field(unsigned int, batches)
			     __field(unsigned int, helpers)
			     __field(int, threads)
			     __field(u64, held_ns)
			     __field(u64, free_ns)
			     __field(u64, helper_ns)
	    ),
	    TP_fast_assign(__entry->freeable = freeable;
			   __entry->gathered = gathered;
			   __entry->batches = batches;
			   __entry->helpers = helpers;
			   __entry->threads = threads;
			   __entry->held_ns = held_ns;
			   __entry->free_ns = free_ns;
			   __entry->helper_ns = helper_ns;
	    ),
	    TP_printk("freeable=%lu gathered=%lu batches=%u helpers=%u threads=%d held_ns=%llu free_ns=%llu helper_ns=%llu",
		      __entry->freeable, __entry->gathered, __entry->batches,
		      __entry->helpers, __entry->threads, __entry->held_ns,
		      __entry->free_ns, __entry->helper_ns)
);

#endif /* _TRACE_MMU_GATHER_H */

/* This part must be outside protection */
#include <trace/define_trace.h>
