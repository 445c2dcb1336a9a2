// SPDX-License-Identifier: GPL-2.0
/*
 * The parallel teardown of large ranges: exit() with vm.parallel_zap,
 * munmap() and MADV_DONTNEED with vm.parallel_zap_live, and munmap() with
 * vm.parallel_free alone, each at the lowest threshold the kernel takes.
 *
 * Each test checks what the teardown must leave: the data around the range
 * intact, the range unmapped (a read of it is SIGSEGV) or empty (it reads
 * zeroes), a memfd's data after the munmap() of its shared mapping, the
 * parent's copy of a range an exiting child shared copy-on-write intact,
 * and that /proc/vmstat accounts for the teardown: zapped (or freed) by
 * two threads or more, or left serial for a reason a counter names (one
 * thread, the task may not have helpers, no idle CPU, no memory for the
 * plan, a backoff after helpers that were stopped), printed by name.
 * Whether it went parallel depends on the machine: a teardown that stayed
 * serial is tried again with its checks (TRIES in all, on two CPUs or
 * more), and a test whose teardowns all stayed serial checked the serial
 * fallback only and ends as a skip.  A task at nice 19 must be refused.
 * sysctl_bounds checks that the sysctls take their documented bounds and
 * refuse what is outside.
 *
 * Needs root, for the sysctls, and restores them (and mtjob.backoff_ms,
 * which it sets to 0); skips on a kernel without them.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "vm_util.h"

#define VM_SYSCTL "/proc/sys/vm/"
/*
 * Seconds a test may take: filling and tearing down 256 MiB under an
 * emulator, a sanitizer or an overcommitted host takes more than the
 * harness's default 30.
 */
#define TIMEOUT 300
/*
 * Teardowns a test tries before it gives up on the parallel path: the
 * policy refuses helpers when it sees no idle CPU, which another task's
 * moment of work can cause.
 */
#define TRIES 3
#define MAX_REASONS 5

enum knob {
	PARALLEL_ZAP,
	PARALLEL_ZAP_LIVE,
	PARALLEL_ZAP_THRESHOLD,
	PARALLEL_FREE,
	PARALLEL_FREE_THRESHOLD,
	BACKOFF_MS,
	NR_KNOBS,
};

static const char * const knob_paths[NR_KNOBS] = {
	[PARALLEL_ZAP]			= VM_SYSCTL "parallel_zap",
	[PARALLEL_ZAP_LIVE]		= VM_SYSCTL "parallel_zap_live",
	[PARALLEL_ZAP_THRESHOLD]	= VM_SYSCTL "parallel_zap_threshold",
	[PARALLEL_FREE]			= VM_SYSCTL "parallel_free",
	[PARALLEL_FREE_THRESHOLD]	= VM_SYSCTL "parallel_free_threshold",
	/* How long the zap stays serial after its helpers were stopped. */
	[BACKOFF_MS]			= "/sys/module/mtjob/parameters/backoff_ms",
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

static_assert(ARRAY_SIZE(zap_serial_counters) <= MAX_REASONS &&
	      ARRAY_SIZE(free_serial_counters) <= MAX_REASONS,
	      "struct counts holds every serial counter");

/* What one reading of /proc/vmstat says of a path. */
struct counts {
	long done;	/* teardowns (or rounds) by two threads or more */
	long threads;	/* their threads */
	long serial;	/* the others, by any reason */
	/* By reason: the counters @names, @nr of them. */
	long reason[MAX_REASONS];
	const char * const *names;
	size_t nr;
};

/*
 * Reads the counters @done and @threads and the sum of @serial in one pass
 * of /proc/vmstat, close together; counters the kernel lacks count 0.
 */
static void read_counts(const char *done, const char *threads,
			const char * const *serial, size_t nr, struct counts *c)
{
	char name[64];
	long val;
	size_t i;
	FILE *f;

	memset(c, 0, sizeof(*c));
	c->names = serial;
	c->nr = nr;	/* at most MAX_REASONS: the static_assert above */
	f = fopen("/proc/vmstat", "r");
	if (!f)
		return;
	while (fscanf(f, "%63s %ld", name, &val) == 2) {
		if (!strcmp(name, done))
			c->done = val;
		else if (!strcmp(name, threads))
			c->threads = val;
		for (i = 0; i < c->nr; i++)
			if (!strcmp(name, serial[i])) {
				c->reason[i] = val;
				c->serial += val;
			}
	}
	fclose(f);
}

static void zap_counts(const char *path, struct counts *c)
{
	char done[64], threads[64];

	snprintf(done, sizeof(done), "parallel_zap%s", path);
	snprintf(threads, sizeof(threads), "parallel_zap%s_threads", path);
	read_counts(done, threads, zap_serial_counters,
		    ARRAY_SIZE(zap_serial_counters), c);
}

static void free_counts(struct counts *c)
{
	read_counts("tlb_parallel_free", "tlb_parallel_free_threads",
		    free_serial_counters, ARRAY_SIZE(free_serial_counters), c);
}

/* @after less @before, into @after. */
static void counts_since(struct counts *after, const struct counts *before)
{
	size_t i;

	after->done -= before->done;
	after->threads -= before->threads;
	after->serial -= before->serial;
	for (i = 0; i < after->nr; i++)
		after->reason[i] -= before->reason[i];
}

/* The counters of @d that rose, by name ("name +n, ..."), into @buf. */
static const char *reasons(const struct counts *d, char *buf, size_t len)
{
	size_t i, at = 0;

	buf[0] = 0;
	for (i = 0; i < d->nr && at < len; i++)
		if (d->reason[i])
			at += snprintf(buf + at, len - at, "%s%s +%ld",
				       at ? ", " : "", d->names[i],
				       d->reason[i]);
	return at ? buf : "none";
}

static bool knob_read(enum knob k, unsigned long *val)
{
	if (access(knob_paths[k], R_OK))
		return false;
	return !read_sysfs(knob_paths[k], val);
}

/* Writes @val and reads it back: false if the kernel did not take it. */
static bool knob_write(enum knob k, unsigned long val)
{
	unsigned long got;

	if (write_sysfs(knob_paths[k], val) || !knob_read(k, &got))
		return false;
	return got == val;
}

/* Writes the string @val to @k: 0 if the kernel took it, else its errno. */
static int knob_write_str(enum knob k, const char *val)
{
	int fd = open(knob_paths[k], O_WRONLY);
	int err = 0;

	if (fd < 0)
		return errno;
	if (write(fd, val, strlen(val)) < 0)
		err = errno;
	close(fd);
	return err;
}

/* A word in each page: its index from @base, with @salt. */
static void fill(char *base, size_t size, size_t page, unsigned long salt)
{
	size_t off;

	for (off = 0; off < size; off += page)
		*(unsigned long *)(base + off) = (off / page) ^ salt;
}

/* A private anonymous mapping of @size bytes, fill()ed; or MAP_FAILED. */
static char *map_filled(size_t size, size_t page, unsigned long salt)
{
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		fill(p, size, page, salt);
	return p;
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

/*
 * The signal a child gets for reading @p, or 0 if the read succeeds (the
 * parent's mappings are the child's).
 */
static int touch_signal(const char *p)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		/* No core dump for the fault this expects. */
		struct rlimit rl = { 0, 0 };

		setrlimit(RLIMIT_CORE, &rl);
		_exit(FORCE_READ(*p) == 0x7f ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/* MemAvailable in bytes, or 0. */
static unsigned long mem_available(void)
{
	unsigned long kb = 0;
	char line[128];
	FILE *f;

	f = fopen("/proc/meminfo", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return kb << 10;
}

/*
 * What vm.rst gives as parallel_free_threshold's lowest, in pages: what a
 * gather holds without growing, MAX_GATHER_BATCH_COUNT * MAX_GATHER_BATCH
 * (9690 with 4 KiB pages, 8190 with 64 KiB; a batch is a page of pointers
 * after a 16-byte header, and there are 10000 / MAX_GATHER_BATCH of them,
 * at least one).  For 64-bit kernels; 0 elsewhere (not computed here).
 */
static unsigned long free_threshold_lowest(size_t page)
{
	unsigned long batch, count;

	if (sizeof(void *) != 8)
		return 0;
	batch = (page - 16) / sizeof(void *);
	count = 10000 / batch;
	return (count ? count : 1) * batch;
}

/*
 * A PMD block's pages: what THP reports, or without THP a page of 8-byte
 * entries (the zap's lowest threshold either way, vm.rst).
 */
static unsigned long pmd_pages(size_t page)
{
	unsigned long pmd = read_pmd_pagesize();

	return pmd ? pmd / page : page / 8;
}

FIXTURE(parallel_teardown)
{
	unsigned long saved[NR_KNOBS];
	bool have[NR_KNOBS];
	bool changed[NR_KNOBS];
	size_t page;
	size_t size;	/* bytes of the range a test tears down */
	size_t edge;	/* bytes of the pages around it */
};

/* Writes @val to @k, remembering to restore it. */
static bool set_knob(FIXTURE_DATA(parallel_teardown) * self, enum knob k,
		     unsigned long val)
{
	self->changed[k] = true;
	return knob_write(k, val);
}

/*
 * Writes the first of @from, 2 * @from, 4 * @from, ... below @max that the
 * kernel takes as @k: the lowest it takes, for a @from below it.  Returns
 * that value, or 0.
 */
static unsigned long set_lowest(FIXTURE_DATA(parallel_teardown) * self,
				enum knob k, unsigned long from,
				unsigned long max)
{
	unsigned long v;

	for (v = from; v && v < max; v *= 2)
		if (set_knob(self, k, v))
			return v;
	return 0;
}

static void restore_knobs(FIXTURE_DATA(parallel_teardown) * self)
{
	int k;

	for (k = 0; k < NR_KNOBS; k++)
		if (self->have[k] && self->changed[k])
			knob_write(k, self->saved[k]);
}

/* The parallel free off, so that a zap test sees the zap alone. */
static void free_off(FIXTURE_DATA(parallel_teardown) * self)
{
	if (self->have[PARALLEL_FREE])
		set_knob(self, PARALLEL_FREE, 0);
}

FIXTURE_SETUP(parallel_teardown)
{
	unsigned long zap = 0, fr = 0, most, pmd;
	int k;

	if (geteuid())
		SKIP(return, "needs root, for the vm.parallel_* sysctls");
	for (k = 0; k < NR_KNOBS; k++)
		self->have[k] = knob_read(k, &self->saved[k]);
	if (!self->have[PARALLEL_ZAP] && !self->have[PARALLEL_FREE])
		SKIP(return, "no vm.parallel_zap or vm.parallel_free");

	/*
	 * The lowest thresholds vm.rst gives: one PMD block's pages for the
	 * zap, what a gather holds without growing for the free; if the
	 * kernel does not take one, the first power of two above it that it
	 * takes.  Then a range of at least twice each, 256 MiB at least.
	 */
	self->page = getpagesize();
	pmd = pmd_pages(self->page);
	most = (16UL << 30) / self->page;
	if (self->have[PARALLEL_ZAP_THRESHOLD]) {
		zap = pmd;
		if (!set_knob(self, PARALLEL_ZAP_THRESHOLD, zap))
			zap = set_lowest(self, PARALLEL_ZAP_THRESHOLD, 1, most);
	}
	if (self->have[PARALLEL_FREE_THRESHOLD]) {
		fr = free_threshold_lowest(self->page);
		if (!fr || !set_knob(self, PARALLEL_FREE_THRESHOLD, fr))
			fr = set_lowest(self, PARALLEL_FREE_THRESHOLD, 1024,
					most);
	}
	/*
	 * Each test sees what its own teardown did: no backoff left by an
	 * earlier one (the test restores it).
	 */
	if (self->have[BACKOFF_MS])
		set_knob(self, BACKOFF_MS, 0);
	if ((self->have[PARALLEL_ZAP_THRESHOLD] && !zap) ||
	    (self->have[PARALLEL_FREE_THRESHOLD] && !fr)) {
		restore_knobs(self);
		SKIP(return, "no threshold below 16 GiB taken");
	}
	self->size = 256UL << 20;
	if (self->size < 2 * pmd * self->page)
		self->size = 2 * pmd * self->page;
	if (self->size < 2 * zap * self->page)
		self->size = 2 * zap * self->page;
	if (self->size < 2 * fr * self->page)
		self->size = 2 * fr * self->page;
	self->edge = 16 * self->page;
	if (mem_available() / 2 < self->size) {
		restore_knobs(self);
		SKIP(return, "%zu MiB ranges do not fit", self->size >> 20);
	}
}

/*
 * In the parent: a test that crashed still leaves the sysctls as it found
 * them (self is shared with the test's process).  One that timed out does
 * not: the harness kills its whole process group, this teardown's too.
 */
FIXTURE_TEARDOWN_PARENT(parallel_teardown)
{
	restore_knobs(self);
}

/* Prints what the teardown did and checks that it was counted. */
static void check_counted(struct __test_metadata *_metadata,
			  const char *what, const struct counts *d)
{
	char buf[256];

	ksft_print_msg("%s: %ld parallel (%ld threads), %ld serial (%s)\n",
		       what, d->done, d->threads, d->serial,
		       reasons(d, buf, sizeof(buf)));
	/* One way or the other. */
	EXPECT_GE(d->done + d->serial, 1);
	EXPECT_GE(d->threads, 2 * d->done);
}

/*
 * After a teardown: whether to try it again, as it stayed serial and tries
 * are left.  The counters are system-wide: a serial one counts what other
 * tasks' teardowns did too, and is printed, not asserted.
 */
static bool retry_serial(const struct counts *d, int try)
{
	/* On one CPU no try can be parallel. */
	if (d->done || try + 1 >= TRIES || sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return false;
	ksft_print_msg("try %d of %d stayed serial: again\n", try + 1, TRIES);
	return true;
}

/*
 * At a test's end, its checks done: a teardown that stayed serial in every
 * try (one CPU online, or the policy refused helpers: the counters printed
 * say why) tested only the series' serial fallback, which kselftest
 * reports as a skip.  A test that failed stays failed.
 */
static void skip_if_serial(struct __test_metadata *_metadata,
			   const char *what, const struct counts *d)
{
	char buf[256];

	if (d->done || _metadata->exit_code != KSFT_PASS)
		return;
	SKIP(return, "%s stayed serial in every try (%ld CPUs online; %s)",
	     what, sysconf(_SC_NPROCESSORS_ONLN),
	     reasons(d, buf, sizeof(buf)));
}

/*
 * A child exits with a range it shares, copy-on-write, with its parent, and
 * half of it written (copied) by the child: exit_mmap() zaps it with helpers
 * or counts why not, and the parent's copy keeps its data.
 */
TEST_F_TIMEOUT(parallel_teardown, exit_zap, TIMEOUT)
{
	size_t size = self->size, page = self->page, off;
	struct counts before, d;
	int status, try = 0;
	pid_t pid;
	char *p;

	if (!self->have[PARALLEL_ZAP])
		SKIP(return, "no vm.parallel_zap");
	ASSERT_TRUE(set_knob(self, PARALLEL_ZAP, 1));
	free_off(self);
	p = map_filled(size, page, 0x5a);
	ASSERT_NE(p, MAP_FAILED);

	do {
		zap_counts("", &before);
		pid = fork();
		ASSERT_GE(pid, 0);
		if (!pid) {
			for (off = 0; off < size; off += 2 * page)
				*(unsigned long *)(p + off) = ~0UL;
			for (off = 0; off < size; off += page)
				if (*(unsigned long *)(p + off) !=
				    (off % (2 * page) ?
				     (off / page) ^ 0x5a : ~0UL))
					_exit(3);
			_exit(0);
		}
		ASSERT_EQ(waitpid(pid, &status, 0), pid);
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(WEXITSTATUS(status), 0);
		zap_counts("", &d);
		counts_since(&d, &before);
		check_counted(_metadata, "exit", &d);
	} while (retry_serial(&d, try++));
	EXPECT_TRUE(filled(p, p, size, page, 0x5a));
	munmap(p, size);
	skip_if_serial(_metadata, "exit", &d);
}

/* munmap() of a range: the pages around it keep their data, it is gone. */
TEST_F_TIMEOUT(parallel_teardown, munmap_zap, TIMEOUT)
{
	long rss;
	size_t size = self->size, edge = self->edge;
	struct counts before, d;
	unsigned char vec;
	int try = 0;
	char *p;

	if (!self->have[PARALLEL_ZAP_LIVE])
		SKIP(return, "no vm.parallel_zap_live");
	ASSERT_TRUE(set_knob(self, PARALLEL_ZAP_LIVE, 1));
	free_off(self);
	for (;;) {
		p = map_filled(size + 2 * edge, self->page, 0xa5);
		ASSERT_NE(p, MAP_FAILED);
		zap_counts("_munmap", &before);
		rss = rss_anon();	/* kB, vm_util.c */

		ASSERT_EQ(munmap(p + edge, size), 0);

		rss -= rss_anon();
		zap_counts("_munmap", &d);
		counts_since(&d, &before);
		check_counted(_metadata, "munmap()", &d);
		/* Its pages left the process's RSS (of this test's range). */
		EXPECT_GE(rss << 10, (long)(size - size / 16));
		EXPECT_TRUE(filled(p, p, edge, self->page, 0xa5));
		EXPECT_TRUE(filled(p, p + edge + size, edge, self->page, 0xa5));
		/* mincore() of an unmapped range fails with ENOMEM. */
		EXPECT_EQ(mincore(p + edge, self->page, &vec), -1);
		EXPECT_EQ(errno, ENOMEM);
		EXPECT_EQ(mincore(p + edge + size - self->page, self->page,
				  &vec), -1);
		EXPECT_EQ(touch_signal(p + edge + size / 2), SIGSEGV);
		munmap(p, edge);
		munmap(p + edge + size, edge);
		if (!retry_serial(&d, try++))
			break;
	}
	skip_if_serial(_metadata, "munmap()", &d);
}

/*
 * munmap() at nice 19, whose CPU use the scheduler restricts: no helpers,
 * counted as refused; the range is gone and its neighbours intact.
 */
TEST_F_TIMEOUT(parallel_teardown, munmap_nice19_refused, TIMEOUT)
{
	size_t size = self->size, edge = self->edge;
	int status;
	pid_t pid;

	if (!self->have[PARALLEL_ZAP_LIVE])
		SKIP(return, "no vm.parallel_zap_live");
	ASSERT_TRUE(set_knob(self, PARALLEL_ZAP_LIVE, 1));
	free_off(self);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct counts before, d, rb, rd;
		static const char * const refused[] = {
			"parallel_zap_refused",
		};
		char *p;

		if (setpriority(PRIO_PROCESS, 0, 19))
			_exit(2);
		p = map_filled(size + 2 * edge, self->page, 0x69);
		if (p == MAP_FAILED)
			_exit(2);
		zap_counts("_munmap", &before);
		read_counts("", "", refused, 1, &rb);
		if (munmap(p + edge, size))
			_exit(3);
		zap_counts("_munmap", &d);
		read_counts("", "", refused, 1, &rd);
		counts_since(&d, &before);
		counts_since(&rd, &rb);
		ksft_print_msg("munmap() at nice 19: %ld parallel, %ld refused\n",
			       d.done, rd.serial);
		/* _exit() does not flush, and stdout may be a pipe. */
		fflush(stdout);
		if (!filled(p, p, edge, self->page, 0x69) ||
		    !filled(p, p + edge + size, edge, self->page, 0x69))
			_exit(4);
		/* Not parallel, and refused (at least once: the range). */
		_exit(d.done ? 5 : rd.serial < 1 ? 6 : 0);
	}
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), 0);
}

/*
 * munmap() of a shared mapping of a memfd: the zap drops references only;
 * the memfd keeps every page's data, and the range is gone.
 */
TEST_F_TIMEOUT(parallel_teardown, munmap_shared, TIMEOUT)
{
	size_t size = self->size, page = self->page;
	struct counts before, d;
	int fd, try = 0;
	char *p, *q;

	if (!self->have[PARALLEL_ZAP_LIVE])
		SKIP(return, "no vm.parallel_zap_live");
	ASSERT_TRUE(set_knob(self, PARALLEL_ZAP_LIVE, 1));
	free_off(self);
	fd = memfd_create("parallel_teardown", 0);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(ftruncate(fd, size), 0);
	do {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 0);
		ASSERT_NE(p, MAP_FAILED);
		fill(p, size, page, 0x96);
		zap_counts("_munmap", &before);

		ASSERT_EQ(munmap(p, size), 0);

		zap_counts("_munmap", &d);
		counts_since(&d, &before);
		check_counted(_metadata, "munmap() of a memfd", &d);
		EXPECT_EQ(touch_signal(p), SIGSEGV);
		q = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		ASSERT_NE(q, MAP_FAILED);
		EXPECT_TRUE(filled(q, q, size, page, 0x96));
		munmap(q, size);
	} while (retry_serial(&d, try++));
	close(fd);
	skip_if_serial(_metadata, "munmap() of a memfd", &d);
}

/*
 * MADV_DONTNEED of a range: it reads zeroes and holds no page, the pages
 * around it keep their data.
 */
TEST_F_TIMEOUT(parallel_teardown, dontneed_zap, TIMEOUT)
{
	long rss;
	size_t size = self->size, edge = self->edge, off;
	struct counts before, d;
	int try = 0;
	char *p;

	if (!self->have[PARALLEL_ZAP_LIVE])
		SKIP(return, "no vm.parallel_zap_live");
	ASSERT_TRUE(set_knob(self, PARALLEL_ZAP_LIVE, 1));
	free_off(self);
	p = map_filled(size + 2 * edge, self->page, 0x3c);
	ASSERT_NE(p, MAP_FAILED);
	for (;;) {
		zap_counts("_dontneed", &before);
		rss = rss_anon();	/* kB, vm_util.c */

		ASSERT_EQ(madvise(p + edge, size, MADV_DONTNEED), 0);

		rss -= rss_anon();
		zap_counts("_dontneed", &d);
		counts_since(&d, &before);
		check_counted(_metadata, "MADV_DONTNEED", &d);
		EXPECT_GE(rss << 10, (long)(size - size / 16));
		EXPECT_TRUE(none_resident(p + edge, size, self->page));
		for (off = edge; off < edge + size; off += self->page)
			if (*(unsigned long *)(p + off))
				break;
		EXPECT_EQ(off, edge + size);
		EXPECT_TRUE(filled(p, p, edge, self->page, 0x3c));
		EXPECT_TRUE(filled(p, p + edge + size, edge, self->page, 0x3c));
		if (!retry_serial(&d, try++))
			break;
		fill(p, size + 2 * edge, self->page, 0x3c);
	}
	munmap(p, size + 2 * edge);
	skip_if_serial(_metadata, "MADV_DONTNEED", &d);
}

/*
 * munmap() with the zap off and the parallel free on: the pages are freed
 * by helpers in rounds, or the rounds are counted serial.
 */
TEST_F_TIMEOUT(parallel_teardown, munmap_free, TIMEOUT)
{
	long rss;
	size_t size = self->size, edge = self->edge;
	struct counts before, d;
	int try = 0;
	char *p;

	if (!self->have[PARALLEL_FREE])
		SKIP(return, "no vm.parallel_free");
	ASSERT_TRUE(set_knob(self, PARALLEL_FREE, 1));
	if (self->have[PARALLEL_ZAP_LIVE])
		ASSERT_TRUE(set_knob(self, PARALLEL_ZAP_LIVE, 0));
	for (;;) {
		p = map_filled(size + edge, self->page, 0xc3);
		ASSERT_NE(p, MAP_FAILED);
		free_counts(&before);
		rss = rss_anon();	/* kB, vm_util.c */

		ASSERT_EQ(munmap(p, size), 0);

		rss -= rss_anon();
		free_counts(&d);
		counts_since(&d, &before);
		check_counted(_metadata, "free", &d);
		EXPECT_GE(rss << 10, (long)(size - size / 16));
		EXPECT_TRUE(filled(p, p + size, edge, self->page, 0xc3));
		munmap(p + size, edge);
		if (!retry_serial(&d, try++))
			break;
	}
	skip_if_serial(_metadata, "the free", &d);
}

/*
 * The sysctls refuse what is out of their bounds with EINVAL and keep
 * their value, and take their bounds: the switches 0 and 1 only, the zap's
 * threshold one PMD block's pages and up, the free's what a gather holds
 * without growing up to 8 GiB worth (vm.rst).
 */
TEST_F_TIMEOUT(parallel_teardown, sysctl_bounds, TIMEOUT)
{
	unsigned long pmd = pmd_pages(self->page);
	unsigned long lowest = free_threshold_lowest(self->page);
	unsigned long highest = (8UL << 30) / self->page;
	struct {
		enum knob knob;
		unsigned long val;	/* for a string of digits */
		const char *str;	/* or this */
		int err;		/* 0: taken */
	} cases[] = {
		{ PARALLEL_ZAP, 2, NULL, EINVAL },
		{ PARALLEL_ZAP, 0, "-1", EINVAL },
		{ PARALLEL_ZAP_LIVE, 2, NULL, EINVAL },
		{ PARALLEL_FREE, 2, NULL, EINVAL },
		{ PARALLEL_ZAP_THRESHOLD, 0, NULL, EINVAL },
		{ PARALLEL_ZAP_THRESHOLD, pmd - 1, NULL, EINVAL },
		{ PARALLEL_ZAP_THRESHOLD, pmd, NULL, 0 },
		{ PARALLEL_FREE_THRESHOLD, lowest - 1, NULL, EINVAL },
		{ PARALLEL_FREE_THRESHOLD, lowest, NULL, 0 },
		{ PARALLEL_FREE_THRESHOLD, highest + 1, NULL, EINVAL },
		{ PARALLEL_FREE_THRESHOLD, highest, NULL, 0 },
	};
	unsigned long before, after, want;
	char buf[32];
	size_t i;

	ASSERT_GT(pmd, 1UL);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		enum knob k = cases[i].knob;

		if (!self->have[k] || (k == PARALLEL_FREE_THRESHOLD && !lowest))
			continue;
		ASSERT_TRUE(knob_read(k, &before));
		self->changed[k] = true;
		if (cases[i].str)
			snprintf(buf, sizeof(buf), "%s", cases[i].str);
		else
			snprintf(buf, sizeof(buf), "%lu", cases[i].val);
		EXPECT_EQ(knob_write_str(k, buf), cases[i].err)
			TH_LOG("%s, %s", knob_paths[k], buf);
		ASSERT_TRUE(knob_read(k, &after));
		/* Refused: unchanged; taken: what was written. */
		want = before;
		if (!cases[i].err)
			want = cases[i].val;
		EXPECT_EQ(after, want);
	}
}

TEST_HARNESS_MAIN
