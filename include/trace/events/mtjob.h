/* SPDX-License-Identifier: GPL-2.0 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM mtjob

#if !defined(_TRACE_MTJOB_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_MTJOB_H

#include <linux/mtjob.h>
#include <linux/tracepoint.h>

/**
 * mtjob_run - a job of mtjob_run() has run
 * @job: the job
 * @report: how it ran
 * @caller: the function that called mtjob_run()
 * @ret: what mtjob_run() returns
 * @duration_ns: from the checks to the return, in nanoseconds
 *
 * Not for jobs refused with -EINVAL: those did not run.
 */
TRACE_EVENT(mtjob_run,
	    TP_PROTO(const struct mtjob *job, const struct mtjob_report *report,
		     const char *caller, int ret, u64 duration_ns),
	    TP_ARGS(job, report, caller, ret, duration_ns),
	    TP_STRUCT__entry(__string(name, job->name ?: "")
			     __string(caller, caller)
			     __string(engine, mtjob_engine_name(report->engine))
			     __field(unsigned long, start)
			     __field(unsigned long, size)
			     __field(int, max_threads)
			     __field(int, nr_threads)
			     __field(unsigned long, nr_off_node)
			     __field(int, ret)
			     __field(u64, duration_ns)
	    ),
	    TP_fast_assign(__assign_str(name);
			   __assign_str(caller);
			   __assign_str(engine);
			   __entry->start = job->start;
			   __entry->size = job->size;
			   __entry->max_threads = job->max_threads;
			   __entry->nr_threads = report->nr_threads;
			   __entry->nr_off_node = report->nr_off_node;
			   __entry->ret = ret;
			   __entry->duration_ns = duration_ns;
	    ),
	    TP_printk("name=%s caller=%s engine=%s start=%lu size=%lu max_threads=%d threads=%d off_node=%lu ret=%d duration_ns=%llu",
		      __get_str(name), __get_str(caller), __get_str(engine),
		      __entry->start, __entry->size, __entry->max_threads,
		      __entry->nr_threads, __entry->nr_off_node, __entry->ret,
		      __entry->duration_ns)
);

#endif /* _TRACE_MTJOB_H */

/* This part must be outside protection */
#include <trace/define_trace.h>
