/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Rust engine of mt_job_run() (kernel/mt_job_rust.rs, built with
 * CONFIG_RUST), for kernel/mt_job.c and its tests only.  Declared without
 * CONFIG_RUST too: the calls are compiled out with IS_ENABLED() rather than
 * #ifdef.
 */
#ifndef _KERNEL_MT_JOB_INTERNAL_H
#define _KERNEL_MT_JOB_INTERNAL_H

struct lock_class_key;
struct mt_job;
struct mt_job_report;

int mt_job_rust_run(const struct mt_job *job, int max_threads,
		    struct mt_job_report *report, struct lock_class_key *key,
		    const char *class_name);
int mt_job_rust_init(void);
/* Test hook for kernel/mt_job_test.c, built with CONFIG_MT_JOB_KUNIT_TEST. */
unsigned int mt_job_rust_fail_nth_helper(unsigned int nth);

#endif /* _KERNEL_MT_JOB_INTERNAL_H */
