/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Rust engine of mt_job_run() (kernel/mt_job_rust.rs), for
 * kernel/mt_job.c only.  Declared without CONFIG_MT_JOB_RUST too: the calls
 * are compiled out with IS_ENABLED() rather than #ifdef.
 */
#ifndef _KERNEL_MT_JOB_INTERNAL_H
#define _KERNEL_MT_JOB_INTERNAL_H

struct lock_class_key;
struct mt_job;

int mt_job_rust_run(struct mt_job *job, struct lock_class_key *keys,
		    const char *class_name);
int mt_job_rust_init(void);

#endif /* _KERNEL_MT_JOB_INTERNAL_H */
