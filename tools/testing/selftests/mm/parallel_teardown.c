// SPDX-License-Identifier: GPL-2.0
/*
 * The parallel teardown of large ranges: exit() with vm.parallel_zap,
 * munmap() and MADV_DONTNEED with vm.parallel_zap_live, and munmap() with
 * vm.parallel_free alone, each at the lowest threshold the kernel takes.
 *
 * Each test checks what the teardown must leave: the data around the range
 * intact, the range unmapped or empty, the exiting child's own data, and
 * that /proc/vmstat accounts for the teardown: zapped (or freed) by two
 * threads or more, or left serial for a reason a counter names (one
 * thread, the task may not have helpers, no idle CPU, no memory for the
 * plan, a backoff after helpers that were stopped).  Whether it went
 * parallel depends on the machine and is printed, not asserted.
 *
 * Needs root, for the sysctls, and restores them; skips on a kernel
 * without them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"

#define VM_SYSCTL "/proc/sys/vm/"

enum knob {
	PARALLEL_ZAP,
	PARALLEL_ZAP_LIVE,
	PARALLEL_ZAP_THRESHOLD,
	PARALLEL_FREE,
	PARALLEL_FREE_THRESHOLD,
	NR_KNOBS,
};

static const char * const knob_names[NR_KNOBS] = {
	[PARALLEL_ZAP]			= "parallel_zap",
	[PARALLEL_ZAP_LIVE]		= "parallel_zap_live",
	[PARALLEL_ZAP_THRESHOLD]	= "parallel_zap_threshold",
	[PARALLEL_FREE]			= "parallel_free",
	[PARALLEL_FREE_THRESHOLD]	= "parallel_free_threshold",
};

/* The counters a zap adds to when it is not parallel. */
static const char * const zap_serial_counters[] = {
	"parallel_zap_serial", "parallel_zap_refused", "parallel_zap_busy",
	"parallel_zap_nomem", "parallel_zap_stopped_backoff",
};

/* The counters the parallel free adds to when a round is not parallel. */
static const char * const free_serial_counters[] = {
	"tlb_parallel_free_fallback", "tlb_parallel_free_nogrow",
	"tlb_parallel_free_nogrow_memory", "tlb_parallel_free_nogrow_busy",
};

/* A /proc/vmstat counter, or -1 if the kernel has none of that name. */
static long counter(const char *name)
{
	size_t len = strlen(name);
	char line[128];
	long val = -1;
	FILE *f;

	f = fopen("/proc/vmstat", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, name, len) && line[len] == ' ') {
			val = atol(line + len + 1);
			break;
		}
	}
	fclose(f);
	return val;
}

/* The sum of @names' counters; those the kernel lacks count 0. */
static long counters_sum(const char * const *names, size_t nr)
{
	long val, sum = 0;
	size_t i;

	for (i = 0; i < nr; i++) {
		val = counter(names[i]);
		sum += val > 0 ? val : 0;
	}
	return sum;
}

/* Zaps not parallel, by any reason. */
static long zap_serial(void)
{
	return counters_sum(zap_serial_counters,
			    ARRAY_SIZE(zap_serial_counters));
}

/* Rounds of the parallel free not parallel, by any reason. */
static long free_serial(void)
{
	return counters_sum(free_serial_counters,
			    ARRAY_SIZE(free_serial_counters));
}

static int knob_path(enum knob k, char *buf, size_t len)
{
	return snprintf(buf, len, VM_SYSCTL "%s", knob_names[k]);
}

static bool knob_read(enum knob k, unsigned long *val)
{
	char path[128];

	knob_path(k, path, sizeof(path));
	if (access(path, R_OK))
		return false;
	return !read_sysfs(path, val);
}

/* Writes @val and reads it back: false if the kernel did not take it. */
static bool knob_write(enum knob k, unsigned long val)
{
	unsigned long got;
	char path[128];

	knob_path(k, path, sizeof(path));
	if (write_sysfs(path, val) || !knob_read(k, &got))
		return false;
	return got == val;
}

/* A word in each page: its index from @base, with @salt. */
static void fill(char *base, size_t size, size_t page, unsigned long salt)
{
	size_t off;

	for (off = 0; off < size; off += page)
		*(unsigned long *)(base + off) = (off / page) ^ salt;
}

/* Whether every page of [@p, @p + @size) still holds what fill() wrote. */
static bool filled(const char *base, const char *p, size_t size,
		   size_t page, unsigned long salt)
{
	size_t off;

	for (off = p - base; off < (size_t)(p - base) + size; off += page)
		if (*(const unsigned long *)(base + off) !=
		    ((off / page) ^ salt))
			return false;
	return true;
}

/* Whether no page of [@p, @p + @size) is resident. */
static bool none_resident(void *p, size_t size, size_t page)
{
	size_t i, nr = size / page;
	unsigned char *vec = malloc(nr);
	bool none = true;

	if (!vec || mincore(p, size, vec)) {
		free(vec);
		return false;
	}
	for (i = 0; i < nr; i++)
		none &= !(vec[i] & 1);
	free(vec);
	return none;
}

FIXTURE(teardown)
{
	unsigned long saved[NR_KNOBS];
	bool have[NR_KNOBS];
	size_t page;
	size_t size;
};

FIXTURE_SETUP(teardown)
{
	unsigned long pmd = read_pmd_pagesize();
	unsigned long batch, lowest;
	int k;

	if (geteuid())
		SKIP(return, "needs root, for the vm.parallel_* sysctls");
	for (k = 0; k < NR_KNOBS; k++)
		self->have[k] = knob_read(k, &self->saved[k]);
	if (!self->have[PARALLEL_ZAP] && !self->have[PARALLEL_FREE])
		SKIP(return, "no vm.parallel_zap or vm.parallel_free");

	self->page = getpagesize();
	if (!pmd)
		pmd = 2UL << 20;
	/* At least two PMD blocks: the zap cuts a range at its entries. */
	self->size = 256UL << 20;
	if (self->size < 2 * pmd)
		self->size = 2 * pmd;

	/*
	 * The lowest thresholds: one PMD block for the zap; for the free, the
	 * pages a gather holds without growing, MAX_GATHER_BATCH_COUNT
	 * batches of MAX_GATHER_BATCH pointers (include/asm-generic/tlb.h: a
	 * page less the batch's 16-byte header; 10000 pointers' worth of
	 * batches, at least one).
	 */
	batch = (self->page - 16) / sizeof(void *);
	lowest = (10000 / batch ? 10000 / batch : 1) * batch;
	if (self->have[PARALLEL_ZAP_THRESHOLD])
		ASSERT_TRUE(knob_write(PARALLEL_ZAP_THRESHOLD, pmd / self->page));
	if (self->have[PARALLEL_FREE_THRESHOLD])
		ASSERT_TRUE(knob_write(PARALLEL_FREE_THRESHOLD, lowest));
}

FIXTURE_TEARDOWN(teardown)
{
	int k;

	for (k = 0; k < NR_KNOBS; k++)
		if (self->have[k])
			knob_write(k, self->saved[k]);
}

/*
 * A child maps, fills and checks a range, then exits: exit_mmap() zaps it
 * with helpers or tells why not.
 */
TEST_F(teardown, exit_zap)
{
	long pz, pzt, other;
	int status;
	pid_t pid;

	if (!self->have[PARALLEL_ZAP])
		SKIP(return, "no vm.parallel_zap");
	ASSERT_TRUE(knob_write(PARALLEL_ZAP, 1));
	pz = counter("parallel_zap");
	pzt = counter("parallel_zap_threads");
	other = zap_serial();

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		char *p = mmap(NULL, self->size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			_exit(2);
		fill(p, self->size, self->page, 0x5a);
		_exit(filled(p, p, self->size, self->page, 0x5a) ? 0 : 3);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);

	pz = counter("parallel_zap") - pz;
	pzt = counter("parallel_zap_threads") - pzt;
	other = zap_serial() - other;
	ksft_print_msg("exit: %ld parallel (%ld threads), %ld serial\n",
		       pz, pzt, other);
	/* The exit was counted, one way or the other. */
	EXPECT_GE(pz + other, 1);
	EXPECT_GE(pzt, 2 * pz);
}

/*
 * munmap() of the middle of three ranges: its neighbours keep their data,
 * and it is gone.
 */
TEST_F(teardown, munmap_zap)
{
	size_t size = self->size;
	long pz, pzt, other;
	unsigned char vec;
	char *p;

	if (!self->have[PARALLEL_ZAP_LIVE])
		SKIP(return, "no vm.parallel_zap_live");
	ASSERT_TRUE(knob_write(PARALLEL_ZAP_LIVE, 1));
	p = mmap(NULL, 3 * size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(p, MAP_FAILED);
	fill(p, 3 * size, self->page, 0xa5);
	pz = counter("parallel_zap_munmap");
	pzt = counter("parallel_zap_munmap_threads");
	other = zap_serial();

	ASSERT_EQ(munmap(p + size, size), 0);

	pz = counter("parallel_zap_munmap") - pz;
	pzt = counter("parallel_zap_munmap_threads") - pzt;
	other = zap_serial() - other;
	ksft_print_msg("munmap(): %ld parallel (%ld threads), %ld serial\n",
		       pz, pzt, other);
	EXPECT_TRUE(filled(p, p, size, self->page, 0xa5));
	EXPECT_TRUE(filled(p, p + 2 * size, size, self->page, 0xa5));
	/* mincore() of an unmapped range fails with ENOMEM. */
	EXPECT_EQ(mincore(p + size, self->page, &vec), -1);
	EXPECT_EQ(errno, ENOMEM);
	EXPECT_GE(pz + other, 1);
	EXPECT_GE(pzt, 2 * pz);
	munmap(p, size);
	munmap(p + 2 * size, size);
}

/*
 * MADV_DONTNEED of the middle half of a range: it reads zeroes and holds no
 * page, the rest keeps its data.
 */
TEST_F(teardown, dontneed_zap)
{
	size_t size = 2 * self->size, q = size / 4;
	long pz, pzt, other;
	size_t off;
	char *p;

	if (!self->have[PARALLEL_ZAP_LIVE])
		SKIP(return, "no vm.parallel_zap_live");
	ASSERT_TRUE(knob_write(PARALLEL_ZAP_LIVE, 1));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(p, MAP_FAILED);
	fill(p, size, self->page, 0x3c);
	pz = counter("parallel_zap_dontneed");
	pzt = counter("parallel_zap_dontneed_threads");
	other = zap_serial();

	ASSERT_EQ(madvise(p + q, 2 * q, MADV_DONTNEED), 0);

	pz = counter("parallel_zap_dontneed") - pz;
	pzt = counter("parallel_zap_dontneed_threads") - pzt;
	other = zap_serial() - other;
	ksft_print_msg("MADV_DONTNEED: %ld parallel (%ld threads), %ld serial\n",
		       pz, pzt, other);
	EXPECT_TRUE(none_resident(p + q, 2 * q, self->page));
	for (off = q; off < 3 * q; off += self->page)
		if (*(unsigned long *)(p + off))
			break;
	EXPECT_EQ(off, 3 * q);
	EXPECT_TRUE(filled(p, p, q, self->page, 0x3c));
	EXPECT_TRUE(filled(p, p + 3 * q, q, self->page, 0x3c));
	EXPECT_GE(pz + other, 1);
	EXPECT_GE(pzt, 2 * pz);
	munmap(p, size);
}

/*
 * munmap() with the zap off and the parallel free on: the pages are freed
 * by helpers in rounds, or the rounds are counted serial.
 */
TEST_F(teardown, munmap_free)
{
	size_t size = self->size;
	long pf, pft, other;
	char *p;

	if (!self->have[PARALLEL_FREE])
		SKIP(return, "no vm.parallel_free");
	ASSERT_TRUE(knob_write(PARALLEL_FREE, 1));
	if (self->have[PARALLEL_ZAP_LIVE])
		ASSERT_TRUE(knob_write(PARALLEL_ZAP_LIVE, 0));
	p = mmap(NULL, 2 * size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(p, MAP_FAILED);
	fill(p, 2 * size, self->page, 0xc3);
	pf = counter("tlb_parallel_free");
	pft = counter("tlb_parallel_free_threads");
	other = free_serial();

	ASSERT_EQ(munmap(p + size, size), 0);

	pf = counter("tlb_parallel_free") - pf;
	pft = counter("tlb_parallel_free_threads") - pft;
	other = free_serial() - other;
	ksft_print_msg("free: %ld parallel (%ld threads), %ld serial\n",
		       pf, pft, other);
	EXPECT_TRUE(filled(p, p, size, self->page, 0xc3));
	EXPECT_GE(pf + other, 1);
	EXPECT_GE(pft, 2 * pf);
	munmap(p, size);
}

TEST_HARNESS_MAIN
