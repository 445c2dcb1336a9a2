/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Rust engine of mtjob_run() (kernel/mtjob_rust.rs, built with
 * CONFIG_RUST), for kernel/mtjob.c and its tests only.  Declared without
 * CONFIG_RUST too: the calls are compiled out with IS_ENABLED() rather than
 * #ifdef.
 */
#ifndef _KERNEL_MTJOB_INTERNAL_H
#define _KERNEL_MTJOB_INTERNAL_H

struct lock_class_key;
struct mtjob;
struct mtjob_report;

int mtjob_rust_run(const struct mtjob *job, int max_threads,
		   struct mtjob_report *report, struct lock_class_key *key,
		   const char *class_name);
int mtjob_rust_init(void);
/* Test hook for kernel/mtjob_test.c, built with CONFIG_MTJOB_KUNIT_TEST. */
unsigned int mtjob_rust_fail_nth_helper(unsigned int nth);

#endif /* _KERNEL_MTJOB_INTERNAL_H */
