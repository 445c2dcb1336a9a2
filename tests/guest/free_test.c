// SPDX-License-Identifier: GPL-2.0
/*
 * Guest workloads for parallel freeing in the mmu_gather path: map anonymous
 * memory, touch every page, tear it down with munmap() or exit(), and print
 * what the host harness (scripts/guest.py freetest, freebench) parses:
 *
 *   FREE <what> mib=<MiB> thp=<0|1> us=<teardown time in µs>
 *
 * munmap and exit follow it with "FREETLB ipis=<N>": the TLB shootdown IPIs
 * of the teardown (the growth of /proc/interrupts' TLB row, x86; 0 where
 * there is none), and write "mtbench teardown" and "mtbench done" to the trace marker
 * around it, so that the harness can count the tlb:tlb_flush events in
 * between; on arm64 they also execute HINT #0x7e and HINT #0x7f there (NOPs
 * to the CPU), the marks at which tests/qemu_plugins/tlbi.c counts the
 * TLBIs of the teardown.  With FREE_TEST_SPREAD in the environment, the exit's child
 * rewrites its memory from a thread on every online CPU before it exits,
 * so that every CPU has used its mm (the case of a multithreaded server);
 * with FREE_TEST_FAIL_EXIT, it sets its make-it-fail (fault injection's
 * task filter) just before it exits.
 *
 * Memory is placed half on node 0 and half on node 1 (mbind(MPOL_BIND)
 * before touching, as in the 2017 fake-NUMA experiment) when the guest has
 * two nodes, so that grouping the batches by node can matter; with
 * FREE_TEST_LOCAL in the environment, where the default policy puts it.
 *
 * Usage:
 *   free_test munmap MIB THP            map, touch, time munmap()
 *   free_test exit MIB THP              a child maps and touches; time its exit
 *                                       (from its last instruction, with the
 *                                       parent asleep in waitpid())
 *   free_test fork MIB                  COW-share with a child that rewrites
 *                                       half; both exit, parent checks data
 *   free_test shared MIB                map a memfd MAP_SHARED, touch, time
 *                                       munmap(): page cache, only references
 *                                       dropped
 *   free_test swap MIB                  MADV_PAGEOUT half to swap, read back a
 *                                       quarter (swap cache), munmap()
 *   free_test many NPROC MIB            NPROC children exit at the same time
 *   free_test loop ITERS MIB            ITERS x (munmap, fork + exit) of MIB
 *   free_test hog MIB SECONDS           allocate, touch and free MIB in a loop
 *   free_test acct LABEL MIB            map and touch MIB, munmap(); print
 *                                       the growth of its cgroup's cpu.stat
 *                                       usage_usec and of its own CPU time:
 *                                       FREEACCT LABEL cgroup_us=N self_us=N
 *   free_test acct-exit LABEL MIB       a child maps and touches MIB, then
 *                                       exits; print the growth of the
 *                                       cgroup's usage_usec over its exit
 *                                       and the CPU time the parent and the
 *                                       child spent in it (FREEACCT line)
 *   free_test sparse corner|spread MIB  a child reserves 64 GiB of anonymous
 *                                       memory (MAP_NORESERVE, THP off) and
 *                                       touches MIB of it, all in its last
 *                                       MIB (corner) or a few pages of
 *                                       every PMD block (spread); then exits
 *   free_test mremap MIB                a child maps MIB of PMD-mapped THPs
 *                                       and MIB of small large folios (the
 *                                       mTHP sizes the harness enabled),
 *                                       moves both with mremap() to
 *                                       addresses 1 MiB + 64 KiB and 32 KiB
 *                                       off a PMD boundary, so that their
 *                                       folios are PTE-mapped across PMD
 *                                       blocks, checks the data, and exits
 *   free_test zapmix MIB                a child maps MIB in kinds that exit
 *                                       unmaps differently: anonymous (THP
 *                                       off and on), a shared memfd it
 *                                       writes, a private memfd mapping it
 *                                       partly rewrites (COW), pages swapped
 *                                       out, an mlocked range, a hugetlb
 *                                       mapping, KSM-merged pages if the
 *                                       kernel has KSM, 8192 one-page VMAs
 *                                       (mprotect() splits) in 16 PMD
 *                                       blocks; after its exit the parent
 *                                       checks both memfds' data and that
 *                                       the huge pages are free again
 *   free_test mrelease MIB              a child maps and touches MIB; the
 *                                       parent kills it and reaps its mm
 *                                       with process_mrelease() while it
 *                                       exits
 *   free_test mrelease-late MIB         the same, process_mrelease() reaping
 *                                       while the exit is zapped in parallel
 *                                       (the test kernel's hooks, see
 *                                       do_mrelease_late()); the parent's
 *                                       data, COW-shared, rewritten beside
 *                                       it, is checked
 *   free_test hmm-exit MIB              a child maps and touches MIB, has the
 *                                       HMM test driver migrate it all to
 *                                       device-private memory, and exits
 *   free_test execbig MIB               a child maps and touches MIB, then
 *                                       execs sh: the old mm is dropped by
 *                                       exec, not by an exit
 *   free_test threads MIB               a child's second thread maps and
 *                                       touches MIB; the main thread
 *                                       leaves first (pthread_exit()), so
 *                                       the second thread's exit drops
 *                                       the mm
 *   free_test held MIB                  a child maps, touches and unmaps
 *                                       MIB; meanwhile the parent reads
 *                                       /proc/vmstat's nr_parallel_free_held
 *                                       every 200 µs (sleeping in between,
 *                                       so that a CPU is idle for a helper):
 *                                       FREEHELD max=PAGES samples=N
 *                                       after=PAGES (the gauge's largest
 *                                       value seen, and its value once the
 *                                       child is gone)
 *   free_test oom MIB                   map and touch MIB; a child (with
 *                                       oom_score_adj -1000) touches MIB / 4,
 *                                       then MIB / 2 more while the parent
 *                                       unmaps: in a memcg whose memory.max
 *                                       is below 1.75 MIB the OOM killer
 *                                       picks the parent, often inside
 *                                       munmap(); the child creates
 *                                       /tmp/oom-child-ok once it has all
 *                                       its memory
 *   free_test dontneed MIB THP          the same with madvise(MADV_DONTNEED)
 *   free_test live KIND MIB THP [dontneed]
 *                                       munmap() of MIB from the middle of a
 *                                       live mapping (KIND anon, shared: a
 *                                       memfd, cow: COW-shared with a child,
 *                                       mlock: the range mlocked, split:
 *                                       anon, the range three VMAs), its ends
 *                                       off PMD boundaries, while threads
 *                                       on half the CPUs read and write the
 *                                       pages beside both ends and fault
 *                                       and unmap memory of their own; then
 *                                       checks every neighbouring page, that
 *                                       the range faults (SIGSEGV), and the
 *                                       memfd's or the child's copy of it;
 *                                       the threads sleep three times as
 *                                       long as each round took, so that
 *                                       CPUs are idle for helpers, unless
 *                                       FREE_TEST_BUSY is in the
 *                                       environment (then a thread on every
 *                                       CPU, never asleep; with
 *                                       FREE_TEST_EVERY_CPU one on every CPU,
 *                                       asleep as said).  With dontneed,
 *                                       madvise(MADV_DONTNEED) instead
 *                                       (MADV_DONTNEED_LOCKED for mlock):
 *                                       then the range reads zero (the
 *                                       memfd's data for shared).  KIND
 *                                       uffd: anonymous, registered with a
 *                                       userfaultfd (missing mode): the
 *                                       UNMAP or REMOVE event of the
 *                                       range, and what reads the range
 *                                       after MADV_DONTNEED is the
 *                                       handler's fill; uffd-wp: a memfd,
 *                                       write-protected: writes after
 *                                       MADV_DONTNEED raise write-protect
 *                                       faults (the zap's markers); both
 *                                       exit 4 where the kernel has no
 *                                       such userfaultfd
 *
 * A command may follow scheduling prefixes (busybox-static has no chrt):
 *   rt      SCHED_FIFO, priority 10     idle    SCHED_IDLE
 *   batch   SCHED_BATCH                 nice19  nice value 19
 *
 * Exits 1 with a message on stderr when a syscall fails or data is wrong.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <setjmp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/userfaultfd.h>

#define MPOL_BIND_MODE	2
#ifndef SYS_pidfd_open
#define SYS_pidfd_open	434
#endif
#ifndef SYS_process_mrelease
#define SYS_process_mrelease	448
#endif
#ifndef SYS_mseal
#define SYS_mseal	462
#endif
/* The kernel's base page size (4 KiB, or 64 KiB on an arm64 64K kernel). */
static size_t page_size = 4096;
#define PAGE		page_size

static void die(const char *what)
{
	fprintf(stderr, "free_test: %s: %s\n", what, strerror(errno));
	exit(1);
}

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

/* FREE_TEST_LOCAL set: no binding, the default (local) policy places it. */
static int two_nodes(void)
{
	return !getenv("FREE_TEST_LOCAL") &&
	       access("/sys/devices/system/node/node1", F_OK) == 0;
}

/* Maps @bytes, half bound to each node, THP on or off, every page written. */
static char *map_touch(size_t bytes, int thp)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t half = bytes / 2 & ~(2UL * 1024 * 1024 - 1);

	if (p == MAP_FAILED)
		die("mmap");
	if (madvise(p, bytes, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		die("madvise");
	if (two_nodes() && half) {
		unsigned long n0 = 1, n1 = 2;

		if (syscall(SYS_mbind, p, half, MPOL_BIND_MODE, &n0, 64, 0) ||
		    syscall(SYS_mbind, p + half, bytes - half, MPOL_BIND_MODE,
			    &n1, 64, 0))
			die("mbind");
	}
	/* One madvise() instead of a page fault per page. */
	if (madvise(p, bytes, MADV_POPULATE_WRITE))
		die("madvise(MADV_POPULATE_WRITE)");
	for (size_t off = 0; off < bytes; off += PAGE)
		*(uint64_t *)(p + off) = off;
	return p;
}

static size_t mib(const char *s)
{
	return strtoul(s, NULL, 0) << 20;
}

/* TLB shootdown IPIs received so far, all CPUs (x86's "TLB:" row). */
static long tlb_ipis(void)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096], *p, *end;
	long sum = 0, n;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		p = line + strspn(line, " ");
		if (strncmp(p, "TLB:", 4))
			continue;
		for (p += 4; (n = strtol(p, &end, 10)), end != p; p = end)
			sum += n;
		break;
	}
	fclose(f);
	return sum;
}

/* A line in the trace buffer, for the harness to count events from. */
static void trace_mark(const char *what)
{
	int fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY);

	if (fd < 0)
		return;
	if (write(fd, what, strlen(what)) < 0)
		perror("trace_marker");
	close(fd);
}

/*
 * A teardown's start (@end 0) or end (1): the trace mark, and on arm64 the
 * unallocated hint that QEMU's tlbi plugin counts TLBIs between.
 */
static void teardown_mark(int end)
{
	/* The marks' own syscalls stay out of the window they bound. */
#ifdef __aarch64__
	if (end)
		asm volatile("hint #0x7f" ::: "memory");
#endif
	trace_mark(end ? "mtbench done" : "mtbench teardown");
#ifdef __aarch64__
	if (!end)
		asm volatile("hint #0x7e" ::: "memory");
#endif
}

static void report(const char *what, size_t bytes, int thp, long us)
{
	printf("FREE %s mib=%zu thp=%d us=%ld\n", what, bytes >> 20, thp, us);
	fflush(stdout);
}

/* usage_usec of the calling process's cgroup (cgroup v2), in µs. */
static long cgroup_usage_us(void)
{
	char path[512], line[256];
	long us = -1;
	FILE *f;

	f = fopen("/proc/self/cgroup", "r");
	if (!f || !fgets(line, sizeof(line), f) || strncmp(line, "0::", 3))
		die("/proc/self/cgroup: no cgroup v2 line");
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	snprintf(path, sizeof(path), "/sys/fs/cgroup%s/cpu.stat", line + 3);
	f = fopen(path, "r");
	if (!f)
		die(path);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "usage_usec %ld", &us) == 1)
			break;
	fclose(f);
	if (us < 0)
		die("cpu.stat: no usage_usec");
	return us;
}

static long cputime_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static void do_acct(const char *label, size_t bytes)
{
	char *p = map_touch(bytes, 0);
	long cg0, self0, cg1, self1;

	cg0 = cgroup_usage_us();
	self0 = cputime_us();
	if (munmap(p, bytes))
		die("munmap");
	self1 = cputime_us();
	cg1 = cgroup_usage_us();
	printf("FREEACCT %s cgroup_us=%ld self_us=%ld\n", label, cg1 - cg0,
	       self1 - self0);
	fflush(stdout);
}

/* Reads the whole of @fd into @buf, or dies. */
static void read_all(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n <= 0)
			die("read");
		got += n;
	}
}

static long rusage_us(const struct rusage *ru)
{
	return (ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000L +
	       ru->ru_utime.tv_usec + ru->ru_stime.tv_usec;
}

/* Makes the pipes @ready (child to parent) and @go (parent to child), forks. */
static pid_t fork_piped(int ready[2], int go[2])
{
	pid_t pid;

	if (pipe(ready) || pipe(go))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	return pid;
}

/*
 * The growth of the cgroup's usage_usec over a child's exit, against the CPU
 * time spent meanwhile by the parent and by the child (from its own clock
 * before the exit and wait4()'s rusage after it).
 */
static void do_acct_exit(const char *label, size_t bytes)
{
	int ready[2], go[2], status;
	long cg0, self0, cg1, self1, child0;
	struct rusage ru;
	pid_t pid;
	char c;

	pid = fork_piped(ready, go);
	if (!pid) {
		long t;

		map_touch(bytes, 0);
		t = cputime_us();
		if (write(ready[1], &t, sizeof(t)) != sizeof(t) ||
		    read(go[0], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	read_all(ready[0], &child0, sizeof(child0));
	cg0 = cgroup_usage_us();
	self0 = cputime_us();
	if (write(go[1], "x", 1) != 1)
		die("write");
	if (wait4(pid, &status, 0, &ru) != pid)
		die("wait4");
	self1 = cputime_us();
	cg1 = cgroup_usage_us();
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		exit(1);
	printf("FREEACCT %s cgroup_us=%ld self_us=%ld\n", label, cg1 - cg0,
	       self1 - self0 + rusage_us(&ru) - child0);
	fflush(stdout);
}

/* The value of @key in /proc/vmstat, or -1 if it has none. */
static long vmstat_value(const char *key)
{
	size_t len = strlen(key);
	char line[256];
	long v = -1;
	FILE *f;

	f = fopen("/proc/vmstat", "r");
	if (!f)
		die("/proc/vmstat");
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, len) && line[len] == ' ') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* nr_parallel_free_held while a child unmaps @bytes (see the top). */
static void do_held(size_t bytes)
{
	const char *key = "nr_parallel_free_held";
	int ready[2], go[2], status, samples = 0;
	long max = 0, v;
	pid_t pid;
	char c;

	if (vmstat_value(key) < 0) {
		fprintf(stderr, "free_test: /proc/vmstat has no %s\n", key);
		exit(1);
	}
	pid = fork_piped(ready, go);
	if (!pid) {
		char *p = map_touch(bytes, 0);

		if (write(ready[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(1);
		_exit(munmap(p, bytes) ? 1 : 0);
	}
	if (read(ready[0], &c, 1) != 1)
		die("read");
	if (write(go[1], "x", 1) != 1)
		die("write");
	while ((v = waitpid(pid, &status, WNOHANG)) == 0) {
		v = vmstat_value(key);
		if (v > max)
			max = v;
		samples++;
		usleep(200);
	}
	if (v != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		exit(1);
	printf("FREEHELD max=%ld samples=%d after=%ld\n", max, samples,
	       vmstat_value(key));
	fflush(stdout);
}

/* A memfd of @bytes whose every 8-byte word at a page start is @salt ^ off. */
static int memfd_filled(const char *name, size_t bytes, uint64_t salt)
{
	int fd = memfd_create(name, 0);
	char *p;

	if (fd < 0)
		die("memfd_create");
	if (ftruncate(fd, bytes))
		die("ftruncate");
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	for (size_t off = 0; off < bytes; off += PAGE)
		*(uint64_t *)(p + off) = salt ^ off;
	if (munmap(p, bytes))
		die("munmap");
	return fd;
}

/* Dies unless the page starts of @fd hold @salt ^ offset. */
static void memfd_check(const char *what, int fd, size_t bytes, uint64_t salt)
{
	char *p = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		die("mmap");
	for (size_t off = 0; off < bytes; off += PAGE) {
		if (*(uint64_t *)(p + off) != (salt ^ off)) {
			fprintf(stderr, "free_test: zapmix: %s page at %zu "
				"is wrong after the child's exit\n", what, off);
			exit(1);
		}
	}
	munmap(p, bytes);
}

/*
 * Drains every CPU's folio batches, the mlock batches included: an
 * mbind(MPOL_MF_MOVE), even of one page to the default policy, calls
 * lru_cache_disable(), which waits for a drain on each CPU that needs one.
 * So that Mlocked counts what is mlocked, not what the batches hold back.
 */
static void drain_all_cpus(void)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || syscall(SYS_mbind, p, PAGE, 0, NULL, 0, 2))
		die("mbind(MPOL_MF_MOVE)");
	munmap(p, PAGE);
}

/*
 * Mlocked in kB, the CPUs' vmstat differentials folded in first
 * (/proc/sys/vm/stat_refresh; /proc/meminfo reads the global counter, which
 * lags by up to a threshold a CPU, about a munlock batch's worth).  The
 * fold drains no folio batch.
 */
static long meminfo_kb(const char *key);
static long mlocked_kb(void)
{
	int fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);

	if (fd < 0 || write(fd, "1", 1) != 1)
		die("/proc/sys/vm/stat_refresh");
	close(fd);
	return meminfo_kb("Mlocked");
}

static long meminfo_kb(const char *key)
{
	char line[256];
	size_t n = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		die("/proc/meminfo");
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			v = atol(line + n + 1);
	fclose(f);
	return v;
}

/*
 * The migrations of threads while in a chunk of a parallel zap, every job's
 * since boot (the test kernel's zap_parallel.test_chunk_moves), or -1 on a
 * kernel without it.
 */
static long zap_chunk_moves(void)
{
	FILE *f = fopen("/sys/module/zap_parallel/parameters/test_chunk_moves",
			"r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

#define ZAP_SHARED_SALT		0x5a5a5a5a00000000ULL
#define ZAP_PRIVATE_SALT	0x3c3c3c3c00000000ULL
#define ZAP_REWRITE_SALT	0x1111111100000000ULL
#define ZAP_KSM_BYTES		(16UL << 20)
#define ZAP_MLOCK_BYTES		(16UL << 20)
/*
 * One-page VMAs: every other page of 32 MiB made read-only (8192 VMAs with
 * 4 KiB pages, 512 with 64 KiB).
 */
#define ZAP_SPLIT_BYTES		(32UL << 20)

/* The child of do_zapmix(): maps everything, then exits. */
static void zapmix_child(size_t bytes, int shfd, int pvfd, size_t part,
			 long huge)
{
	char *sh, *pv, *sw, *ml, *ks;

	/* Anonymous: half of it without THP, a quarter with. */
	map_touch(bytes / 2, 0);
	map_touch(bytes / 4, 1);
	/* The shared memfd, rewritten: dirty page cache. */
	sh = mmap(NULL, part, PROT_READ | PROT_WRITE, MAP_SHARED, shfd, 0);
	/* The private one, every other page rewritten: COW copies. */
	pv = mmap(NULL, part, PROT_READ | PROT_WRITE, MAP_PRIVATE, pvfd, 0);
	if (sh == MAP_FAILED || pv == MAP_FAILED)
		die("mmap");
	for (size_t off = 0; off < part; off += PAGE) {
		*(uint64_t *)(sh + off) = ZAP_REWRITE_SALT ^ off;
		if (off & PAGE)
			*(uint64_t *)(pv + off) = off;
		else if (*(volatile uint64_t *)(pv + off) !=
			 (ZAP_PRIVATE_SALT ^ off))
			die("private memfd");
	}
	/* Half swapped out, if there is swap: swap entries to zap. */
	sw = map_touch(part, 0);
	madvise(sw, part / 2, MADV_PAGEOUT);
	ml = map_touch(ZAP_MLOCK_BYTES, 0);
	if (mlock(ml, ZAP_MLOCK_BYTES))
		die("mlock");
	if (huge) {
		char *h = mmap(NULL, huge, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
			       -1, 0);

		if (h == MAP_FAILED)
			die("mmap(MAP_HUGETLB)");
		memset(h, 1, huge);
	}
	/*
	 * Every other page read-only: 4096 one-page VMAs between 4096 others
	 * (256 and 256 with 64 KiB pages), 512 to a PMD block of 4 KiB pages,
	 * so that each block holds many VMAs.
	 */
	ks = map_touch(ZAP_SPLIT_BYTES, 0);
	for (size_t off = 0; off < 8192 * PAGE && off < ZAP_SPLIT_BYTES;
	     off += 2 * PAGE)
		if (mprotect(ks + off, PAGE, PROT_READ))
			die("mprotect");
	/* Identical pages for KSM to merge (EINVAL without CONFIG_KSM). */
	ks = mmap(NULL, ZAP_KSM_BYTES, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ks == MAP_FAILED)
		die("mmap");
	memset(ks, 7, ZAP_KSM_BYTES);
	if (!madvise(ks, ZAP_KSM_BYTES, MADV_MERGEABLE)) {
		FILE *f = fopen("/sys/kernel/mm/ksm/run", "w");

		if (f) {
			fputs("1\n", f);
			fclose(f);
			/* A few scans of ksmd, not waited for exactly. */
			usleep(500000);
		}
	}
}

/*
 * Huge pages: free.sh reserves some (vm.nr_hugepages) for the child's
 * hugetlb mapping, all free again after its exit.
 */
static void do_zapmix(size_t bytes)
{
	size_t part = bytes / 8;
	long huge_kb = meminfo_kb("Hugepagesize");
	long huge = meminfo_kb("HugePages_Free") > 0 ? huge_kb * 1024 : 0;
	int shfd = memfd_filled("zap_shared", part, ZAP_SHARED_SALT);
	int pvfd = memfd_filled("zap_private", part, ZAP_PRIVATE_SALT);
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		zapmix_child(bytes, shfd, pvfd, part, huge);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("child");
	/* The child's writes to the shared memfd stay, not to the private. */
	memfd_check("shared memfd", shfd, part, ZAP_REWRITE_SALT);
	memfd_check("private memfd", pvfd, part, ZAP_PRIVATE_SALT);
	if (meminfo_kb("HugePages_Free") != meminfo_kb("HugePages_Total")) {
		fprintf(stderr, "free_test: zapmix: huge pages not all free "
			"after the child's exit\n");
		exit(1);
	}
	printf("FREE zapmix mib=%zu thp=2 us=0 hugetlb_kb=%ld\n",
	       bytes >> 20, huge / 1024);
	close(shfd);
	close(pvfd);
}

/* A pidfd of @pid, which is then sent SIGKILL. */
static int pidfd_kill(pid_t pid)
{
	int pidfd = syscall(SYS_pidfd_open, pid, 0);

	if (pidfd < 0)
		die("pidfd_open");
	if (kill(pid, SIGKILL))
		die("kill");
	return pidfd;
}

/* A child killed and reaped by process_mrelease() while its exit zaps. */
static void do_mrelease(size_t bytes)
{
	int ready[2], status, pidfd;
	pid_t pid;
	char c;

	if (pipe(ready))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		map_touch(bytes, 0);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	if (read(ready[0], &c, 1) != 1)
		die("read");
	pidfd = pidfd_kill(pid);
	/* EINVAL or ESRCH once the exit is past the point of reaping. */
	if (syscall(SYS_process_mrelease, pidfd, 0) && errno != EINVAL &&
	    errno != ESRCH)
		die("process_mrelease");
	if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) ||
	    WTERMSIG(status) != SIGKILL)
		die("child");
	close(pidfd);
	report("mrelease", bytes, 0, 0);
}

/* The mrelease-late child's second thread: mprotect() of @p, on and on. */
struct holdout {
	char *p;
	size_t bytes;
	int fd;
};

static void *holdout_fn(void *arg)
{
	struct holdout *h = arg;

	if (write(h->fd, "m", 1) != 1)
		_exit(1);
	for (;;)
		if (mprotect(h->p, h->bytes, PROT_READ) ||
		    mprotect(h->p, h->bytes, PROT_READ | PROT_WRITE))
			_exit(1);
	return NULL;
}

/*
 * The parent's own thread beside it: checks its pages, only reading them
 * while @shared is set (the child, which maps them too since fork(), is not
 * gone yet), then rewriting them too.
 */
struct bystander {
	char *p;
	size_t bytes;
	uint64_t gen;
	volatile int stop;
	volatile int shared;
	int bad;
	size_t bad_off;
	uint64_t bad_got;
};

/* Records the first word of @b found wrong. */
static void bystander_bad(struct bystander *b, size_t off, uint64_t got)
{
	if (!b->bad) {
		b->bad = 1;
		b->bad_off = off;
		b->bad_got = got;
	}
}

static void *bystander_fn(void *arg)
{
	struct bystander *b = arg;

	while (!b->stop && !b->bad) {
		/* Once per pass: a pass rewrites all of the pages or none. */
		int shared = b->shared;

		for (size_t off = 0; off < b->bytes; off += PAGE) {
			uint64_t *w = (uint64_t *)(b->p + off);

			if (*w != (off ^ b->gen))
				bystander_bad(b, off, *w);
			if (!shared)
				*w = off ^ (b->gen + 1);
		}
		if (!shared)
			b->gen++;
		usleep(2000);
	}
	return NULL;
}

/*
 * process_mrelease() reaping while the exit is zapped in parallel, with the
 * test kernel's hooks (CONFIG_PARALLEL_ZAP_REAPER_TEST, set by free.sh):
 * process_mrelease() sleeps between finding the mm and reaping it, and the
 * exit's zap's chunks (all but the first) wait for the reaper to start.
 * For the lookup to come before the last exit_mm(), the child's second
 * thread keeps mprotect()ing 256 MiB of small pages (mmap_write_lock()), so
 * that the SIGKILL most likely finds it inside, and the main thread's
 * exit_mm() waits for it.  The parent's 64 MiB, COW-shared with the child
 * since fork(), is only read by a parent thread until the child is gone,
 * so that it stays shared through the teardown, then rewritten; it is
 * checked throughout.  Up to 3 tries when the lookup
 * still came too late (ESRCH).  Prints
 *   MRELEASE late tries=N ret=<process_mrelease()'s return> errno=E
 */
static void do_mrelease_late(size_t bytes)
{
	size_t side = 64UL << 20, hold = 256UL << 20;
	struct bystander b = {
		.p = map_touch(side, 0), .bytes = side, .shared = 1,
	};
	int ready[2], status, pidfd, tries, ret = -1, err = 0;
	pthread_t by;
	pid_t pid;
	char c;

	if (pipe(ready))
		die("pipe");
	if (pthread_create(&by, NULL, bystander_fn, &b))
		die("pthread_create");
	for (tries = 1; tries <= 3; tries++) {
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid) {
			struct holdout h = { .bytes = hold, .fd = ready[1] };
			pthread_t t;

			map_touch(bytes, 0);
			h.p = map_touch(hold, 0);
			if (pthread_create(&t, NULL, holdout_fn, &h))
				_exit(1);
			for (;;)
				pause();
		}
		if (read(ready[0], &c, 1) != 1)
			die("read");
		pidfd = pidfd_kill(pid);
		ret = getenv("FREE_TEST_NO_MRELEASE") ? 0 :
		      syscall(SYS_process_mrelease, pidfd, 0);
		err = ret ? errno : 0;
		if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status) ||
		    WTERMSIG(status) != SIGKILL)
			die("child");
		close(pidfd);
		if (!ret || err != ESRCH)
			break;
	}
	/* The child is gone: rewrite the pages for a while, then stop. */
	b.shared = 0;
	usleep(20000);
	b.stop = 1;
	if (pthread_join(by, NULL))
		die("pthread_join");
	for (size_t off = 0; off < side && !b.bad; off += PAGE)
		if (*(uint64_t *)(b.p + off) != (off ^ b.gen))
			bystander_bad(&b, off, *(uint64_t *)(b.p + off));
	if (b.bad) {
		fprintf(stderr, "free_test: mrelease-late: the parent's data "
			"changed under it: at %zu, pass %llu, %#llx (%#llx "
			"expected)\n", b.bad_off, (unsigned long long)b.gen,
			(unsigned long long)b.bad_got,
			(unsigned long long)(b.bad_off ^ b.gen));
		exit(1);
	}
	printf("MRELEASE late tries=%d ret=%d errno=%d\n", tries, ret, err);
	report("mrelease-late", bytes, 0, 0);
}

/* lib/test_hmm_uapi.h's command and ioctl, for a device-private exit. */
struct hmm_dmirror_cmd {
	uint64_t addr;
	uint64_t ptr;
	uint64_t npages;
	uint64_t cpages;
	uint64_t faults;
};

#define HMM_DMIRROR_MIGRATE_TO_DEV	_IOWR('H', 0x02, struct hmm_dmirror_cmd)

/*
 * A child maps and touches MIB (THP off), has the HMM test driver
 * (/dev/hmm_dmirror0, CONFIG_TEST_HMM) migrate all of it to device-private
 * memory, unmaps the buffer the driver copied the data into, and exits with
 * only those entries in its page tables (the driver evicts them only when
 * its file is released, after exit_mm()).  Prints
 *   HMMEXIT mib=MIB migrated=<pages the driver moved>
 * from the child, before it exits.
 */
static void do_hmm_exit(size_t bytes)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (!pid) {
		char *p = map_touch(bytes, 0);
		char *mirror = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct hmm_dmirror_cmd cmd = {
			.addr = (uintptr_t)p,
			.ptr = (uintptr_t)mirror,
			.npages = bytes / PAGE,
		};
		int fd = open("/dev/hmm_dmirror0", O_RDWR);

		if (fd < 0)
			die("open /dev/hmm_dmirror0");
		if (mirror == MAP_FAILED)
			die("mmap");
		while (ioctl(fd, HMM_DMIRROR_MIGRATE_TO_DEV, &cmd))
			if (errno != EINTR)
				die("HMM_DMIRROR_MIGRATE_TO_DEV");
		/* The mirror's copy of what was migrated is the data. */
		for (size_t off = 0; off < bytes; off += PAGE)
			if (*(uint64_t *)(mirror + off) != off) {
				fprintf(stderr, "free_test: hmm-exit: the "
					"device's copy differs at %zu\n", off);
				_exit(1);
			}
		printf("HMMEXIT mib=%zu migrated=%llu\n", bytes >> 20,
		       (unsigned long long)cmd.cpages);
		fflush(stdout);
		/* Only the device-private entries are left to zap. */
		if (munmap(mirror, bytes))
			die("munmap");
		/* The fd stays open: exit_mm() runs before exit_files(). */
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("child");
	report("hmm-exit", bytes, 0, 0);
}

static void do_execbig(size_t bytes)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (!pid) {
		map_touch(bytes, 0);
		execl("/bin/sh", "sh", "-c", "exit 0", (char *)NULL);
		_exit(1);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("child");
	report("execbig", bytes, 0, 0);
}

static size_t thread_bytes;
static int thread_ready[2];

static void *toucher(void *arg)
{
	map_touch(thread_bytes, 0);
	if (write(thread_ready[1], "x", 1) != 1)
		_exit(1);
	/* Let the main thread leave first; exit() then drops the mm here. */
	usleep(200000);
	exit(0);
	return arg;
}

static void do_threads(size_t bytes)
{
	int status;
	pid_t pid;
	char c;

	thread_bytes = bytes;
	if (pipe(thread_ready))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		pthread_t t;

		if (pthread_create(&t, NULL, toucher, NULL))
			_exit(1);
		if (read(thread_ready[0], &c, 1) != 1)
			_exit(1);
		pthread_exit(NULL);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("child");
	report("threads", bytes, 0, 0);
}

static void do_shared(size_t bytes)
{
	int fd = memfd_create("free_test", 0);
	size_t i;
	char *p;
	long t0;

	if (fd < 0)
		die("memfd_create");
	if (ftruncate(fd, bytes))
		die("ftruncate");
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	for (i = 0; i < bytes; i += PAGE)
		p[i] = 1;
	t0 = now_us();
	if (munmap(p, bytes))
		die("munmap");
	report("shared", bytes, 0, now_us() - t0);
	close(fd);
}

/* report() with the IPIs since @ipis0, and the trace's closing mark. */
static void report_tlb(const char *what, size_t bytes, int thp, long us,
		       long ipis0)
{
	long ipis = tlb_ipis() - ipis0;

	teardown_mark(1);
	report(what, bytes, thp, us);
	printf("FREETLB ipis=%ld\n", ipis);
	fflush(stdout);
}

/*
 * munmap(), or with @dontneed madvise(MADV_DONTNEED) with the mapping left
 * in place (then unmapped, untimed), of @bytes mapped and touched.
 */
static void do_munmap(size_t bytes, int thp, int dontneed)
{
	char *p = map_touch(bytes, thp);
	long t0, ipis0;
	int ret;

	teardown_mark(0);
	ipis0 = tlb_ipis();
	t0 = now_us();
	ret = dontneed ? madvise(p, bytes, MADV_DONTNEED) : munmap(p, bytes);
	if (ret)
		die(dontneed ? "madvise(MADV_DONTNEED)" : "munmap");
	report_tlb(dontneed ? "dontneed" : "munmap", bytes, thp,
		   now_us() - t0, ipis0);
	if (!dontneed)
		return;
	if (*(volatile uint64_t *)(p + bytes / 2))
		die("MADV_DONTNEED left data");
	munmap(p, bytes);
}

static char *spread_mem;
static size_t spread_part;

/* One online CPU's part of the memory, rewritten from that CPU. */
static void *spread_writer(void *arg)
{
	long cpu = (long)arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return NULL;
	for (size_t off = 0; off < spread_part; off += PAGE)
		spread_mem[cpu * spread_part + off] ^= 1;
	return NULL;
}

/* Every online CPU uses the mm: one thread on each rewrites a part. */
static void spread_touch(char *p, size_t bytes)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), i;
	pthread_t t[256];

	if (cpus < 1 || cpus > 256)
		return;
	spread_mem = p;
	spread_part = bytes / cpus & ~(PAGE - 1);
	for (i = 0; i < cpus; i++)
		if (pthread_create(&t[i], NULL, spread_writer, (void *)i))
			die("pthread_create");
	for (i = 0; i < cpus; i++)
		pthread_join(t[i], NULL);
}

/*
 * With FREE_TEST_RUNNABLE in the environment (teardown.sh, issue 46): the
 * other tasks that are running or runnable (state R in /proc/PID/stat) just
 * before the exit, as "comm[pid]@cpu ..." in @out (@len bytes): what an
 * idle-CPU check at the exit's start would find on the other CPUs.
 */
static void runnable_others(char *out, size_t len)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t n = 0;

	out[0] = 0;
	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[64], buf[512], comm[64], *p;
		int pid = atoi(e->d_name), cpu = -1, fd, i;
		ssize_t r;

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r <= 0)
			continue;
		buf[r] = 0;
		p = strrchr(buf, ')');
		if (!p || p[1] != ' ' || p[2] != 'R')
			continue;
		/* Field 39 is the CPU it last ran on; p + 2 is field 3. */
		for (i = 3, p += 2; *p && i < 39; p++)
			if (*p == ' ')
				i++;
		cpu = atoi(p);
		*strrchr(buf, ')') = 0;
		snprintf(comm, sizeof(comm), "%s", strchr(buf, '(') + 1);
		n += snprintf(out + n, n < len ? len - n : 0, "%s[%d]@%d ",
			      comm, pid, cpu);
		if (n >= len)
			break;
	}
	closedir(d);
}

/*
 * The child maps and touches, tells the parent, sleeps 100 ms so that the
 * parent is asleep in waitpid() (as a shell waits for a large process that
 * exits), then stamps the time in a page it shares with the parent and
 * exits: the time is from that stamp to waitpid()'s return.  A parent still
 * running when the exit starts would take the CPU an idle-CPU check looks
 * for (the 9-run benchmark of 2026-11-26 found the parallel zap refused in
 * 50 of 54 exits that way).
 */
static void do_exit(size_t bytes, int thp)
{
	volatile long *t0;
	int fds[2], status;
	pid_t pid;
	char c;

	t0 = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		  -1, 0);
	if (t0 == MAP_FAILED)
		die("mmap");
	if (pipe(fds))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		char *p = map_touch(bytes, thp);

		if (getenv("FREE_TEST_SPREAD"))
			spread_touch(p, bytes);
		if (write(fds[1], "x", 1) != 1)
			_exit(1);
		usleep(100000);
		/* Fault injection's task filter (free.sh zap_nomem). */
		if (getenv("FREE_TEST_FAIL_EXIT")) {
			int fd = open("/proc/self/make-it-fail", O_WRONLY);

			if (fd < 0 || write(fd, "1", 1) != 1)
				_exit(4);
			close(fd);
		}
		if (getenv("FREE_TEST_RUNNABLE"))
			runnable_others((char *)&t0[2], PAGE - 2 * sizeof(*t0));
		teardown_mark(0);
		t0[1] = tlb_ipis();
		*t0 = now_us();
		_exit(0);
	}
	if (read(fds[0], &c, 1) != 1)
		die("read");
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		exit(1);
	report_tlb("exit", bytes, thp, now_us() - *t0, t0[1]);
	if (getenv("FREE_TEST_RUNNABLE"))
		printf("FREERUNNABLE %s\n", (char *)&t0[2]);
	munmap((void *)t0, PAGE);
	close(fds[0]);
	close(fds[1]);
}

/* Waits for the child @pid of the @what workload; exits 1 if it failed. */
static void wait_child(pid_t pid, const char *what)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "free_test: %s: child status %d\n", what,
			status);
		exit(1);
	}
}

/*
 * A sparse address space (a JVM or Go heap reservation): 64 GiB reserved,
 * @bytes touched in its last @bytes (@how "corner") or spread over every
 * PMD block (2 MiB with 4 KiB pages, 512 MiB with 64 KiB: a page table of
 * 8-byte entries), the same number of pages in each ("spread").  The exit
 * is the parent's to wait for; the zap's tracepoint says how it was shared.
 */
static void do_sparse(const char *how, size_t bytes)
{
	size_t size = 64UL << 30, block = PAGE * (PAGE / 8);
	int spread = !strcmp(how, "spread");
	pid_t pid;

	if (!spread && strcmp(how, "corner")) {
		fprintf(stderr, "free_test: sparse corner|spread MIB\n");
		exit(2);
	}
	if (!bytes || bytes > size / 4 ||
	    (spread && bytes / (size / block) < PAGE)) {
		fprintf(stderr, "free_test: sparse: MIB out of range\n");
		exit(2);
	}
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			       -1, 0);
		size_t per = bytes / (size / block), off, o;

		if (p == MAP_FAILED)
			die("mmap");
		if (madvise(p, size, MADV_NOHUGEPAGE))
			die("madvise");
		if (!spread) {
			for (off = size - bytes; off < size; off += PAGE)
				p[off] = 1;
		} else {
			for (off = 0; off < size; off += block)
				for (o = 0; o < per; o += PAGE)
					p[off + o] = 1;
		}
		_exit(0);
	}
	wait_child(pid, "sparse");
}

/* @bytes at a new place, @off past a 2 MiB boundary; the old one freed. */
static char *move_off(char *p, size_t bytes, size_t off)
{
	size_t block = 2UL << 20;
	char *dst = mmap(NULL, bytes + 2 * block, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *to;

	if (dst == MAP_FAILED)
		die("mmap");
	to = (char *)(((uintptr_t)dst + block - 1) & ~(block - 1)) + off;
	if (mremap(p, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, to) != to)
		die("mremap");
	return to;
}

/*
 * Large folios PTE-mapped across PMD blocks, where the parallel zap's chunk
 * boundaries are: two threads zap parts of one folio.
 */
static void do_mremap(size_t bytes)
{
	size_t block = 2UL << 20, off;
	pid_t pid;

	if (!bytes || bytes % block) {
		fprintf(stderr, "free_test: mremap: MIB a multiple of 2\n");
		exit(2);
	}
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		char *raw = mmap(NULL, bytes + block, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *thp, *small;

		if (raw == MAP_FAILED)
			die("mmap");
		thp = (char *)(((uintptr_t)raw + block - 1) & ~(block - 1));
		if (madvise(thp, bytes, MADV_HUGEPAGE))
			die("madvise");
		for (off = 0; off < bytes; off += PAGE)
			*(uint64_t *)(thp + off) = off;
		small = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (small == MAP_FAILED)
			die("mmap");
		for (off = 0; off < bytes; off += PAGE)
			*(uint64_t *)(small + off) = ~off;
		thp = move_off(thp, bytes, (1UL << 20) + (64UL << 10));
		small = move_off(small, bytes, 32UL << 10);
		for (off = 0; off < bytes; off += PAGE)
			if (*(uint64_t *)(thp + off) != off ||
			    *(uint64_t *)(small + off) != ~off)
				_exit(3);
		_exit(0);
	}
	wait_child(pid, "mremap");
}

static void do_fork(size_t bytes)
{
	char *p = map_touch(bytes, 0);
	int status;
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (!pid) {
		/* Break COW on every other page, then exit. */
		for (size_t off = 0; off < bytes; off += 2 * PAGE)
			*(uint64_t *)(p + off) = ~off;
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("child");
	for (size_t off = 0; off < bytes; off += PAGE) {
		if (*(uint64_t *)(p + off) != off) {
			fprintf(stderr, "free_test: fork: parent page at %zu "
				"changed after the child exited\n", off);
			exit(1);
		}
	}
	if (munmap(p, bytes))
		die("munmap");
	report("fork", bytes, 0, 0);
}

static void do_swap(size_t bytes)
{
	char *p = map_touch(bytes, 0);
	long t0;

	if (madvise(p, bytes / 2, MADV_PAGEOUT))
		die("madvise(MADV_PAGEOUT)");
	/* Fault a quarter back in: those pages are in the swap cache. */
	for (size_t off = 0; off < bytes / 4; off += PAGE) {
		if (*(uint64_t *)(p + off) != off) {
			fprintf(stderr, "free_test: swap: page at %zu lost\n",
				off);
			exit(1);
		}
	}
	t0 = now_us();
	if (munmap(p, bytes))
		die("munmap");
	report("swap", bytes, 0, now_us() - t0);
}

/*
 * do_live(): the mapping is [map, map + len), the range unmapped
 * [map + lo, map + lo + bytes); every page of the mapping has at offset 0
 * its offset in the mapping XOR LIVE_SALT, and the threads write their own
 * counter at offset 8 of the pages within LIVE_WINDOW pages of either end.
 */
#define LIVE_SALT	0x5a5a000000000000ULL
#define LIVE_WINDOW	64
static char *live_map;
static size_t live_lo, live_bytes;
static long live_threads;
static int live_busy;
static int live_dontneed;
static volatile int live_stop;
static volatile int live_bad;
static sigjmp_buf live_jmp;

static void live_segv(int sig)
{
	siglongjmp(live_jmp, 1);
}

/* Does reading @p fault? */
static int live_faults(volatile char *p)
{
	struct sigaction sa = { .sa_handler = live_segv }, old;
	int faulted = 0;

	sigaction(SIGSEGV, &sa, &old);
	if (sigsetjmp(live_jmp, 1))
		faulted = 1;
	else
		(void)*p;
	sigaction(SIGSEGV, &old, NULL);
	return faulted;
}

static int live_page_ok(size_t off)
{
	return *(volatile uint64_t *)(live_map + off) == (off ^ LIVE_SALT);
}

/* Thread @arg of N: its pages of the windows beside both ends. */
static void *live_worker(void *arg)
{
	long t = (long)arg, n = live_threads;
	size_t ends[2] = { live_lo - LIVE_WINDOW * PAGE, live_lo + live_bytes };
	uint64_t iter = 0;

	while (!live_stop) {
		long t0 = now_us(), dt;

		/*
		 * MADV_DONTNEED leaves the range mapped: refault the pages
		 * just inside both of its ends while it is zapped (offset 8;
		 * offset 0 reads zero or the file's data after, either way).
		 */
		for (long i = t; live_dontneed && i < LIVE_WINDOW; i += n) {
			*(volatile uint64_t *)(live_map + live_lo + i * PAGE + 8) =
				iter;
			*(volatile uint64_t *)(live_map + live_lo + live_bytes -
					       (i + 1) * PAGE + 8) = iter;
		}
		for (int e = 0; e < 2; e++) {
			for (long i = t; i < LIVE_WINDOW; i += n) {
				size_t off = ends[e] + i * PAGE;
				volatile uint64_t *w;

				w = (uint64_t *)(live_map + off + 8);
				*w = iter;
				if (*w != iter || !live_page_ok(off))
					live_bad = 1;
			}
		}
		/* Faults and an unmap of its own, beside the range's. */
		char *q = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (q == MAP_FAILED) {
			live_bad = 1;
			break;
		}
		for (size_t off = 0; off < 64 * PAGE; off += PAGE)
			q[off] = 1;
		munmap(q, 64 * PAGE);
		iter++;
		/*
		 * Idle CPUs for helpers, unless asked to keep every CPU busy:
		 * asleep three times as long as a round took, at least 500 µs.
		 */
		dt = now_us() - t0;
		if (!live_busy)
			usleep(dt * 3 > 500 ? dt * 3 : 500);
	}
	return NULL;
}

/*
 * The uffd kinds: the range registered with a userfaultfd, whose events a
 * thread of its own reads.  uffd: anonymous, missing mode, with the
 * REMOVE and UNMAP events: a missing fault in the range is filled with a
 * page whose first word is off ^ UFFD_SALT, so that what reads that after
 * the zap was zapped (not the old off ^ LIVE_SALT).  uffd-wp: a memfd, the
 * range write-protected: MADV_DONTNEED must leave a uffd-wp marker in
 * every zapped entry (zap_install_uffd_wp_if_needed()), so a write there
 * after it must raise a write-protect fault.
 */
#define UFFD_SALT	0xa5a5000000000000ULL
#define UFFD_PENDING	1024
static int uffd = -1;
static volatile int uffd_stop;
static volatile long uffd_faults, uffd_wp_faults;
static volatile unsigned long uffd_ev_start, uffd_ev_end;
static volatile int uffd_ev, uffd_nev;

/*
 * Resolve the fault at @addr: fill the missing page, or (@addr | 1) make
 * the page writable; 0 if it must be tried again later.
 */
static int uffd_resolve(char *page, unsigned long addr)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = addr & ~1UL, .len = PAGE },
	};
	struct uffdio_copy c = {
		.dst = addr, .src = (uintptr_t)page, .len = PAGE,
	};

	if (addr & 1) {
		if (!ioctl(uffd, UFFDIO_WRITEPROTECT, &wp))
			return 1;
	} else {
		memset(page, 0, PAGE);
		*(uint64_t *)page = (addr - (uintptr_t)live_map) ^ UFFD_SALT;
		if (!ioctl(uffd, UFFDIO_COPY, &c))
			return 1;
		/* Filled by an earlier fault's copy: wake this one's thread. */
		if (errno == EEXIST) {
			struct uffdio_range r = { .start = addr, .len = PAGE };

			if (ioctl(uffd, UFFDIO_WAKE, &r))
				die("UFFDIO_WAKE");
			return 1;
		}
	}
	/*
	 * -EAGAIN while the REMOVE or UNMAP event is pending (mmap_changing):
	 * read it first, or the faulting thread waits forever.  Anything else
	 * leaves a thread waiting: fail now, not at the guest's timeout.
	 */
	if (errno != EAGAIN)
		die(addr & 1 ? "UFFDIO_WRITEPROTECT" : "UFFDIO_COPY");
	return 0;
}

static void *uffd_handler(void *arg)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	unsigned long pending[UFFD_PENDING];
	int npending = 0;
	char *page = aligned_alloc(PAGE, PAGE);

	if (!page)
		die("aligned_alloc");
	while (!uffd_stop || npending) {
		struct uffd_msg msg;
		int i, j;

		for (i = j = 0; i < npending; i++)
			if (!uffd_resolve(page, pending[i]))
				pending[j++] = pending[i];
		npending = j;
		if (poll(&pfd, 1, 10) <= 0)
			continue;
		if (read(uffd, &msg, sizeof(msg)) != sizeof(msg)) {
			if (errno != EAGAIN)
				die("read(userfaultfd)");
			continue;
		}
		switch (msg.event) {
		case UFFD_EVENT_PAGEFAULT: {
			unsigned long a = msg.arg.pagefault.address & ~(PAGE - 1);

			if (msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) {
				uffd_wp_faults++;
				a |= 1;
			} else {
				uffd_faults++;
			}
			if (!uffd_resolve(page, a)) {
				if (npending == UFFD_PENDING) {
					fprintf(stderr, "free_test: live: more "
						"than %d faults to retry\n",
						UFFD_PENDING);
					exit(1);
				}
				pending[npending++] = a;
			}
			break;
		}
		case UFFD_EVENT_REMOVE:
		case UFFD_EVENT_UNMAP:
			uffd_ev_start = msg.arg.remove.start;
			uffd_ev_end = msg.arg.remove.end;
			uffd_ev = msg.event;
			uffd_nev++;
			break;
		default:
			fprintf(stderr, "free_test: live: uffd event %d\n",
				msg.event);
			exit(1);
		}
	}
	free(page);
	return NULL;
}

/*
 * Register the range with a userfaultfd: missing mode (@wp 0) or
 * write-protect mode, the range write-protected (@wp 1).
 */
static pthread_t uffd_start(int wp)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_EVENT_REMOVE | UFFD_FEATURE_EVENT_UNMAP |
			    (wp ? UFFD_FEATURE_WP_HUGETLBFS_SHMEM : 0),
	};
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)live_map + live_lo,
			   .len = live_bytes },
		.mode = wp ? UFFDIO_REGISTER_MODE_WP :
			     UFFDIO_REGISTER_MODE_MISSING,
	};
	pthread_t th;

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		die("userfaultfd");
	if (ioctl(uffd, UFFDIO_API, &api))
		die("UFFDIO_API");
	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	if (wp) {
		struct uffdio_writeprotect p = {
			.range = reg.range, .mode = UFFDIO_WRITEPROTECT_MODE_WP,
		};

		if (ioctl(uffd, UFFDIO_WRITEPROTECT, &p))
			die("UFFDIO_WRITEPROTECT");
	}
	if (pthread_create(&th, NULL, uffd_handler, NULL))
		die("pthread_create");
	return th;
}

/* The REMOVE (MADV_DONTNEED) or UNMAP (munmap()) event of the range. */
static void uffd_event_check(int dontneed)
{
	unsigned long start = (uintptr_t)live_map + live_lo;
	int want = dontneed ? UFFD_EVENT_REMOVE : UFFD_EVENT_UNMAP;

	if (uffd_nev != 1 || uffd_ev != want || uffd_ev_start != start ||
	    uffd_ev_end != start + live_bytes) {
		fprintf(stderr, "free_test: live: %d uffd events, the last "
			"%d [%lx, %lx), not %d [%lx, %lx)\n", uffd_nev,
			uffd_ev, uffd_ev_start, uffd_ev_end, want, start,
			start + live_bytes);
		exit(1);
	}
}

/*
 * uffd-wp after MADV_DONTNEED: a write to pages of the range that no
 * worker touched (beyond both windows) raises one write-protect fault
 * each: the zap left its marker in every entry.
 */
static void uffd_wp_check(void)
{
	size_t lo = live_lo + LIVE_WINDOW * PAGE;
	size_t hi = live_lo + live_bytes - LIVE_WINDOW * PAGE, off;
	long before = uffd_wp_faults, n = 0;

	for (off = lo; off < hi; off += 7 * PAGE, n++)
		*(volatile uint64_t *)(live_map + off + 16) = 1;
	if (uffd_wp_faults - before != n) {
		fprintf(stderr, "free_test: live: %ld writes after "
			"MADV_DONTNEED raised %ld write-protect faults\n", n,
			uffd_wp_faults - before);
		exit(1);
	}
}

/*
 * After MADV_DONTNEED, before anything reads the range: no page of it
 * present or swapped (/proc/self/pagemap bits 63 and 62), or with @wp a
 * uffd-wp marker in every entry (bit 57 set, 63 clear; a marker is
 * reported as swapped).  The PMD blocks of the workers' windows are left
 * out: their refaults may map a THP over the whole block.
 */
static void live_pagemap_check(int wp)
{
	size_t pmd = PAGE * (PAGE / 8), n, i, pages = 0;
	uintptr_t base = (uintptr_t)live_map, a;
	uintptr_t lo = (base + live_lo + LIVE_WINDOW * PAGE + pmd - 1) &
		       ~(pmd - 1);
	uintptr_t hi = (base + live_lo + live_bytes - LIVE_WINDOW * PAGE) &
		       ~(pmd - 1);
	uint64_t buf[512];
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0)
		die("open(/proc/self/pagemap)");
	for (a = lo; a < hi; a += n * PAGE) {
		n = (hi - a) / PAGE < 512 ? (hi - a) / PAGE : 512;
		if (pread(fd, buf, n * 8, a / PAGE * 8) != (ssize_t)(n * 8))
			die("pread(/proc/self/pagemap)");
		for (i = 0; i < n; i++, pages++) {
			uint64_t e = buf[i];

			if (wp ? (e >> 63) || !((e >> 57) & 1) : e >> 62) {
				fprintf(stderr, "free_test: live: page at %zu "
					"after MADV_DONTNEED: pagemap %llx\n",
					(size_t)(a + i * PAGE - base),
					(unsigned long long)e);
				exit(1);
			}
		}
	}
	close(fd);
	printf("FREEPAGEMAP pages=%zu\n", pages);
}

/* The VMAs (lines of /proc/self/maps) that meet [@lo, @hi). */
static int maps_in(uintptr_t lo, uintptr_t hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long a, b;
	char line[512];
	int nr = 0;

	if (!f)
		die("/proc/self/maps");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a < hi && b > lo)
			nr++;
	fclose(f);
	return nr;
}

static void do_live(const char *kind, size_t bytes, int thp, int dontneed)
{
	size_t pmd = PAGE * (PAGE / 8), edge = pmd + 3 * PAGE, len, off;
	long n = sysconf(_SC_NPROCESSORS_ONLN), i, t0, us, ipis0;
	int shared = !strcmp(kind, "shared") || !strcmp(kind, "uffd-wp");
	int uffd_kind = !strcmp(kind, "uffd") || !strcmp(kind, "uffd-wp");
	int fd = -1, ready[2], go[2];
	pthread_t th[64], uffd_th = 0;
	pid_t child = 0;
	long mlocked0 = -1, mlocked1 = -1, mlocked2 = -1, mlocked3 = -1;
	long moves0 = zap_chunk_moves(), moves;
	char *raw;

	if (!shared && !uffd_kind && strcmp(kind, "anon") &&
	    strcmp(kind, "cow") && strcmp(kind, "mlock") &&
	    strcmp(kind, "split")) {
		fprintf(stderr, "free_test: live: no kind %s\n", kind);
		exit(2);
	}
	live_busy = !!getenv("FREE_TEST_BUSY");
	/*
	 * A thread on every other CPU when asked to keep them busy; else on
	 * half of them, so that an idle CPU is there for the zap's helpers
	 * when it asks (one instant), under TCG's oversubscribed vCPUs too.
	 */
	n = live_busy || getenv("FREE_TEST_EVERY_CPU") ? n : n / 2;
	n = n < 2 ? 2 : n > 64 ? 64 : n;
	live_threads = n;
	live_dontneed = dontneed;
	len = edge + bytes + edge;
	/* The mapping on a PMD boundary, so that the range's ends are not. */
	raw = mmap(NULL, len + pmd, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		die("mmap");
	live_map = (char *)(((uintptr_t)raw + pmd - 1) & ~(pmd - 1));
	if (shared) {
		fd = memfd_create("free_test_live", 0);
		if (fd < 0 || ftruncate(fd, len))
			die("memfd");
		if (mmap(live_map, len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
			die("mmap(memfd)");
	} else {
		if (mmap(live_map, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		    MAP_FAILED)
			die("mmap");
		if (madvise(live_map, len, thp ? MADV_HUGEPAGE :
						 MADV_NOHUGEPAGE))
			die("madvise");
	}
	live_lo = edge;
	live_bytes = bytes;
	if (madvise(live_map, len, MADV_POPULATE_WRITE))
		die("madvise(MADV_POPULATE_WRITE)");
	for (off = 0; off < len; off += PAGE)
		*(uint64_t *)(live_map + off) = off ^ LIVE_SALT;
	if (!strcmp(kind, "mlock")) {
		drain_all_cpus();
		mlocked0 = mlocked_kb();
		if (mlock(live_map + live_lo, bytes))
			die("mlock");
		drain_all_cpus();
		mlocked1 = mlocked_kb();
	}
	/*
	 * Three VMAs in the range: its middle third MADV_RANDOM, which changes
	 * nothing for anonymous memory but vm_flags.
	 */
	if (!strcmp(kind, "split")) {
		int nr;

		if (madvise(live_map + live_lo + bytes / 3 / PAGE * PAGE,
			    bytes / 3 / PAGE * PAGE, MADV_RANDOM))
			die("madvise(MADV_RANDOM)");
		nr = maps_in((uintptr_t)live_map + live_lo,
			     (uintptr_t)live_map + live_lo + bytes);
		if (nr != 3) {
			fprintf(stderr, "free_test: live: the range is %d "
				"VMAs, not 3\n", nr);
			exit(1);
		}
	}
	if (uffd_kind)
		uffd_th = uffd_start(shared);
	if (!strcmp(kind, "cow")) {
		child = fork_piped(ready, go);
		if (!child) {
			char c = 'r';

			/* Gone with the parent, whatever happens to it. */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(go[1]);
			close(ready[0]);
			/* Until the parent has unmapped, then check. */
			if (write(ready[1], &c, 1) != 1)
				_exit(1);
			read_all(go[0], &c, 1);
			for (off = 0; off < len; off += PAGE) {
				if (!live_page_ok(off)) {
					fprintf(stderr, "free_test: live: "
						"child page at %zu wrong\n",
						off);
					_exit(1);
				}
			}
			_exit(0);
		}
		close(go[0]);
		close(ready[1]);
		read_all(ready[0], &(char){0}, 1);
	}
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, live_worker, (void *)i))
			die("pthread_create");
	usleep(50000);
	teardown_mark(0);
	ipis0 = tlb_ipis();
	t0 = now_us();
	if (!dontneed) {
		if (munmap(live_map + live_lo, bytes))
			die("munmap");
	} else if (madvise(live_map + live_lo, bytes,
			   strcmp(kind, "mlock") ? MADV_DONTNEED :
			   MADV_DONTNEED_LOCKED)) {
		die("madvise(MADV_DONTNEED)");
	}
	us = now_us() - t0;
	moves = moves0 < 0 ? -1 : zap_chunk_moves() - moves0;
	/* Before anything faults the range back (it stays VM_LOCKED). */
	if (!strcmp(kind, "mlock"))
		mlocked2 = mlocked_kb();
	report_tlb(dontneed ? "live-dontneed" : "live", bytes, thp, us, ipis0);
	/*
	 * Mlocked as the call returned, undrained, against before mlock() and
	 * after it, both drained; then drained too, which must be exact.  Each
	 * chunk's thread drains its CPU's munlock batch when it ends; one that
	 * moved to another CPU during its chunk (moves, the test kernel's
	 * count) left up to a batch of small folios on the one before, which
	 * the harness allows: with no move it wants the undrained reading
	 * exact too.  After MADV_DONTNEED_LOCKED the workers have refaulted,
	 * and mlocked again, pages of their windows inside the range: printed
	 * only.
	 */
	if (mlocked0 >= 0) {
		drain_all_cpus();
		mlocked3 = mlocked_kb();
		printf("FREEMLOCK %s before_kb=%ld locked_kb=%ld after_kb=%ld "
		       "drained_kb=%ld moves=%ld cpus=%ld page_kb=%zu\n",
		       dontneed ? "dontneed" : "munmap", mlocked0, mlocked1,
		       mlocked2, mlocked3, moves,
		       sysconf(_SC_NPROCESSORS_ONLN), PAGE / 1024);
	}
	usleep(50000);
	live_stop = 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (live_bad) {
		fprintf(stderr, "free_test: live: a neighbouring page changed "
			"while the range was unmapped\n");
		exit(1);
	}
	if (dontneed)
		live_pagemap_check(!strcmp(kind, "uffd-wp"));
	for (off = 0; off < len; off += PAGE) {
		if (off >= live_lo && off < live_lo + bytes)
			continue;
		if (!live_page_ok(off)) {
			fprintf(stderr, "free_test: live: page at %zu wrong\n",
				off);
			exit(1);
		}
	}
	/*
	 * Zero again (anonymous), or the file's data (shared), every page;
	 * uffd's fill (every eighth page: each read is a round trip to its
	 * thread).
	 */
	for (off = live_lo; dontneed && off < live_lo + bytes;
	     off += uffd_kind && !shared ? 8 * PAGE : PAGE) {
		uint64_t v = *(volatile uint64_t *)(live_map + off);

		if (v != (shared ? off ^ LIVE_SALT :
			  uffd_kind ? off ^ UFFD_SALT : 0)) {
			fprintf(stderr, "free_test: live: page at %zu reads "
				"%llx after MADV_DONTNEED\n", off,
				(unsigned long long)v);
			exit(1);
		}
	}
	for (off = live_lo; !dontneed && off < live_lo + bytes;
	     off += bytes / 4) {
		if (!live_faults(live_map + off)) {
			fprintf(stderr, "free_test: live: %zu still mapped\n",
				off);
			exit(1);
		}
	}
	/*
	 * Every page of the range's first and last blocks, whose page tables
	 * it shares with the neighbours and which outlive the munmap().
	 */
	for (off = 0; !dontneed && off < pmd && off < bytes; off += PAGE) {
		if (!live_faults(live_map + live_lo + off) ||
		    !live_faults(live_map + live_lo + bytes - PAGE - off)) {
			fprintf(stderr, "free_test: live: a page %zu from an end "
				"of the range still mapped\n", off);
			exit(1);
		}
	}
	if (uffd_kind) {
		if (shared && dontneed)
			uffd_wp_check();
		uffd_stop = 1;
		pthread_join(uffd_th, NULL);
		uffd_event_check(dontneed);
		printf("FREEUFFD missing=%ld wp=%ld events=%d\n", uffd_faults,
		       uffd_wp_faults, uffd_nev);
		close(uffd);
	}
	if (shared) {
		for (off = live_lo; off < live_lo + bytes; off += PAGE) {
			uint64_t v;

			if (pread(fd, &v, sizeof(v), off) != sizeof(v) ||
			    v != (off ^ LIVE_SALT)) {
				fprintf(stderr, "free_test: live: memfd page "
					"at %zu wrong\n", off);
				exit(1);
			}
		}
		close(fd);
	}
	if (child) {
		if (write(go[1], "g", 1) != 1)
			die("write");
		wait_child(child, "live");
	}
	munmap(raw, len + pmd);
}

static void do_many(int nproc, size_t bytes)
{
	int ready[2], go[2], status, failed = 0;
	long t0;
	char c;

	if (pipe(ready) || pipe(go))
		die("pipe");
	for (int i = 0; i < nproc; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork");
		if (!pid) {
			/* Only the parent's copy may hold the write end of go. */
			close(go[1]);
			map_touch(bytes, 0);
			/* The parent closing go is the signal: read sees EOF. */
			if (write(ready[1], "x", 1) != 1 ||
			    read(go[0], &c, 1) != 0)
				_exit(1);
			_exit(0);
		}
	}
	for (int i = 0; i < nproc; i++)
		if (read(ready[0], &c, 1) != 1)
			die("read");
	t0 = now_us();
	/* Closing the pipe releases every child at once. */
	close(go[1]);
	for (int i = 0; i < nproc; i++) {
		if (wait(&status) < 0)
			die("wait");
		failed |= !WIFEXITED(status) || WEXITSTATUS(status);
	}
	if (failed)
		exit(1);
	report("many", bytes * nproc, 0, now_us() - t0);
}

static void do_loop(long iters, size_t bytes)
{
	long t0 = now_us();

	for (long i = 0; i < iters; i++) {
		char *p = map_touch(bytes, i & 1);
		int status;
		pid_t pid;

		if (munmap(p, bytes))
			die("munmap");
		if (i % 8)
			continue;
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid) {
			map_touch(bytes, 0);
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			die("child");
	}
	report("loop", bytes, 0, now_us() - t0);
}

static void do_hog(size_t bytes, long seconds)
{
	long end = now_us() + seconds * 1000000L;

	while (now_us() < end) {
		char *p = map_touch(bytes, 0);

		if (munmap(p, bytes))
			die("munmap");
	}
}

/*
 * The victim maps and touches, then unmaps while its child allocates until
 * the memcg is out of memory.  The child is exempt from the OOM killer, so
 * the victim is chosen, usually inside munmap().
 */
static void do_oom(size_t bytes)
{
	int go[2], ready[2];
	pid_t pid;
	char *p;
	char c;

	if (pipe(go) || pipe(ready))
		die("pipe");
	/* Fork first: the child must not share the mapping it competes with. */
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		FILE *f = fopen("/proc/self/oom_score_adj", "w");

		if (!f || fprintf(f, "-1000\n") < 0 || fclose(f))
			_exit(2);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		/* A quarter first, then the rest while the parent unmaps. */
		map_touch(bytes / 4, 0);
		if (write(ready[1], "x", 1) != 1)
			_exit(2);
		map_touch(bytes / 2, 0);
		/* The parent may be dead: tell the harness through a file. */
		f = fopen("/tmp/oom-child-ok", "w");
		_exit(!f || fclose(f) ? 2 : 0);
	}
	p = map_touch(bytes, 0);
	if (write(go[1], "x", 1) != 1 || read(ready[0], &c, 1) != 1)
		die("pipe");
	if (munmap(p, bytes))
		die("munmap");
	report("oom", bytes, 0, 0);
	exit(0);
}

/* Applies the scheduling prefixes of the command line; returns their count. */
static int sched_prefixes(int argc, char **argv)
{
	struct sched_param sp = { .sched_priority = 10 };
	int n = 0;

	for (; n + 2 < argc; n++) {
		const char *a = argv[n + 1];

		if (!strcmp(a, "rt")) {
			if (sched_setscheduler(0, SCHED_FIFO, &sp))
				die("sched_setscheduler(SCHED_FIFO)");
		} else if (!strcmp(a, "idle") || !strcmp(a, "batch")) {
			sp.sched_priority = 0;
			if (sched_setscheduler(0, a[0] == 'i' ? SCHED_IDLE :
					       SCHED_BATCH, &sp))
				die("sched_setscheduler");
		} else if (!strcmp(a, "nice19")) {
			errno = 0;
			if (nice(19) == -1 && errno)
				die("nice");
		} else {
			break;
		}
	}
	return n;
}

/* Is the page at @p present or swapped (/proc/self/pagemap bits 63, 62)? */
static int page_in(const void *p)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e;

	if (fd < 0 || pread(fd, &e, 8, (uintptr_t)p / PAGE * 8) != 8)
		die("pread(/proc/self/pagemap)");
	close(fd);
	return (e >> 62) != 0;
}

#define MID_SALT	0x7e7e000000000000ULL
static char *mid_map;
static size_t mid_a, mid_x;
static int mid_uffd = -1;
static volatile int mid_a_in, mid_b_in, mid_events;
static volatile unsigned long mid_ev_start, mid_ev_end;

/*
 * The userfaultfd of madv-mid uffd: when the REMOVE event of X is queued,
 * madvise() waits for it to be read; before reading it, records whether A's
 * first and last pages and B's first are still in (upstream: A zapped,
 * B not yet).
 */
static void *mid_uffd_fn(void *arg)
{
	struct pollfd pfd = { .fd = mid_uffd, .events = POLLIN };
	struct uffd_msg msg;

	(void)arg;
	/* A REMOVE never read would hold madvise() forever: alarm() below. */
	if (poll(&pfd, 1, 30000) != 1)
		return NULL;
	mid_a_in = page_in(mid_map) + page_in(mid_map + mid_a - PAGE);
	mid_b_in = page_in(mid_map + mid_a + mid_x);
	if (read(mid_uffd, &msg, sizeof(msg)) == sizeof(msg) &&
	    msg.event == UFFD_EVENT_REMOVE) {
		mid_ev_start = msg.arg.remove.start;
		mid_ev_end = msg.arg.remove.end;
		mid_events++;
	}
	return NULL;
}

/* Does every page of [@off, @off + @len) of mid_map read @zero or its data? */
static int mid_reads(size_t off, size_t len, int zero)
{
	size_t o;

	for (o = off; o < off + len; o += PAGE)
		if (*(volatile uint64_t *)(mid_map + o) !=
		    (zero ? 0 : o ^ MID_SALT))
			return 0;
	return 1;
}

/*
 * madv-mid KIND MIB: MADV_DONTNEED of one range over four VMAs, A1 A2 X B:
 * A1 and A2 MIB together (A2 MADV_RANDOM, a VMA of its own), X and B one
 * PMD block each, X being KIND: "sealed" (read-only anonymous, mseal()ed,
 * so a discard is refused: EPERM), "locked" (mlock()ed, which MADV_DONTNEED
 * refuses: EINVAL), "uffd" (registered with a userfaultfd asking for
 * REMOVE events) or "gap" (unmapped: three VMAs and a hole).  Checks
 * upstream's result, which madvise_walk_vmas() makes by zapping each VMA in
 * turn, stopping at the first error and going on past a hole: for sealed
 * and locked, the error, A zero and X and B their data; for uffd, success,
 * one REMOVE event of exactly X, A already zapped and B not yet when it
 * came, and nothing of the range left in after; for gap, ENOMEM with A and
 * B zero.  Prints
 * "MADVMID <kind> ret=<r> errno=<e> a_zero=<0|1> x_kept=<0|1> b_kept=<0|1>"
 * and, for uffd, "MADVMID-UFFD events=<n> a_in=<pages> b_in=<pages>".
 */
static void do_madv_mid(const char *kind, size_t bytes)
{
	size_t pmd = PAGE * (PAGE / 8), len, off;
	int sealed = !strcmp(kind, "sealed"), locked = !strcmp(kind, "locked");
	int uffd_kind = !strcmp(kind, "uffd"), gap = !strcmp(kind, "gap");
	int ret, err, a_zero, x_kept, b_kept;
	pthread_t th;
	char *raw;

	if (!sealed && !locked && !uffd_kind && !gap) {
		fprintf(stderr, "free_test: madv-mid sealed|locked|uffd|gap "
			"MIB\n");
		exit(2);
	}
	mid_a = bytes / pmd * pmd;
	mid_x = pmd;
	len = mid_a + 2 * pmd;
	raw = mmap(NULL, len + pmd, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		die("mmap");
	mid_map = (char *)(((uintptr_t)raw + pmd - 1) & ~(pmd - 1));
	if (madvise(mid_map, len, MADV_NOHUGEPAGE) ||
	    madvise(mid_map, len, MADV_POPULATE_WRITE))
		die("madvise");
	for (off = 0; off < len; off += PAGE)
		*(uint64_t *)(mid_map + off) = off ^ MID_SALT;
	if (madvise(mid_map + mid_a / 2, mid_a - mid_a / 2, MADV_RANDOM))
		die("madvise(MADV_RANDOM)");
	if (sealed) {
		if (mprotect(mid_map + mid_a, pmd, PROT_READ))
			die("mprotect");
		if (syscall(SYS_mseal, mid_map + mid_a, pmd, 0))
			die("mseal");
	} else if (locked) {
		if (mlock(mid_map + mid_a, pmd))
			die("mlock");
	} else if (gap) {
		if (munmap(mid_map + mid_a, pmd))
			die("munmap");
	} else {
		struct uffdio_api api = {
			.api = UFFD_API, .features = UFFD_FEATURE_EVENT_REMOVE,
		};
		struct uffdio_register reg = {
			.range = { .start = (uintptr_t)mid_map + mid_a,
				   .len = pmd },
			.mode = UFFDIO_REGISTER_MODE_MISSING,
		};

		mid_uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
		if (mid_uffd < 0 || ioctl(mid_uffd, UFFDIO_API, &api) ||
		    ioctl(mid_uffd, UFFDIO_REGISTER, &reg))
			die("userfaultfd");
		if (pthread_create(&th, NULL, mid_uffd_fn, NULL))
			die("pthread_create");
		/* Dies (SIGALRM) rather than hang in madvise(). */
		alarm(120);
	}
	if (maps_in((uintptr_t)mid_map, (uintptr_t)mid_map + len) !=
	    (gap ? 3 : 4)) {
		fprintf(stderr, "free_test: madv-mid: the range is not %d "
			"VMAs\n", gap ? 3 : 4);
		exit(1);
	}
	ret = madvise(mid_map, len, MADV_DONTNEED);
	err = ret ? errno : 0;
	a_zero = mid_reads(0, mid_a, 1);
	if (uffd_kind) {
		pthread_join(th, NULL);
		/* X is not read: it would fault to the handler, now gone. */
		x_kept = page_in(mid_map + mid_a) ||
			 page_in(mid_map + mid_a + pmd - PAGE);
		b_kept = !mid_reads(mid_a + pmd, pmd, 1);
		printf("MADVMID-UFFD events=%d a_in=%d b_in=%d start_ok=%d "
		       "end_ok=%d\n", mid_events, mid_a_in, mid_b_in,
		       mid_ev_start == (uintptr_t)mid_map + mid_a,
		       mid_ev_end == (uintptr_t)mid_map + mid_a + pmd);
	} else if (gap) {
		x_kept = 0;
		b_kept = !mid_reads(mid_a + pmd, pmd, 1);
	} else {
		x_kept = mid_reads(mid_a, pmd, 0);
		b_kept = mid_reads(mid_a + pmd, pmd, 0);
	}
	printf("MADVMID %s ret=%d errno=%d a_zero=%d x_kept=%d b_kept=%d\n",
	       kind, ret, err, a_zero, x_kept, b_kept);
	if (uffd_kind ? ret || !a_zero || x_kept || b_kept || mid_events != 1 ||
			mid_a_in || !mid_b_in ||
			mid_ev_start != (uintptr_t)mid_map + mid_a ||
			mid_ev_end != (uintptr_t)mid_map + mid_a + pmd :
	    gap ? ret != -1 || err != ENOMEM || !a_zero || b_kept :
		      ret != -1 || err != (sealed ? EPERM : EINVAL) ||
			!a_zero || !x_kept || !b_kept) {
		fprintf(stderr, "free_test: madv-mid %s: not upstream's "
			"result\n", kind);
		exit(1);
	}
}

static volatile int sloop_stop;
static char *sloop_own;

/*
 * A thread of sparse-loop: writes its own page every 200 µs until told to
 * stop, so that the mm runs on every CPU in turn and the CPUs stay idle
 * enough for the zap to ask for helpers (spinning threads would have it
 * refused as busy before it planned anything).
 */
static void *sloop_fn(void *arg)
{
	long i = (long)arg;

	while (!sloop_stop) {
		sloop_own[i * PAGE]++;
		usleep(200);
	}
	return NULL;
}

/*
 * sparse-loop MIB ROUNDS: ROUNDS times, maps MIB, writes one page at a
 * varying offset in every PMD block and munmap()s it, while 8 threads (at
 * least one a CPU) write pages of their own now and then, so that every
 * CPU's TLB may hold the mm's entries.  A range that reaches far and holds little: the
 * parallel zap must leave it serial.  Prints "SPARSELOOP rounds=<n> us=<the
 * munmap()s' time> ipis=<their TLB shootdown IPIs, x86>".
 */
static void do_sparse_loop(size_t bytes, long rounds)
{
	size_t pmd = PAGE * (PAGE / 8), off;
	long n = sysconf(_SC_NPROCESSORS_ONLN), i, r, us = 0, ipis = 0, t0, i0;
	pthread_t th[64];
	char *p;

	n = n < 8 ? 8 : n > 64 ? 64 : n;
	sloop_own = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sloop_own == MAP_FAILED)
		die("mmap");
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, sloop_fn, (void *)i))
			die("pthread_create");
	for (r = 0; r < rounds; r++) {
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED || madvise(p, bytes, MADV_NOHUGEPAGE))
			die("mmap");
		for (off = 0; off + pmd <= bytes; off += pmd)
			p[off + (off / pmd * 7 % (PAGE / 8)) * PAGE] = 1;
		i0 = tlb_ipis();
		t0 = now_us();
		if (munmap(p, bytes))
			die("munmap");
		us += now_us() - t0;
		ipis += tlb_ipis() - i0;
	}
	sloop_stop = 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("SPARSELOOP rounds=%ld us=%ld ipis=%ld\n", rounds, us, ipis);
}

int main(int argc, char **argv)
{
	int n;

	page_size = sysconf(_SC_PAGESIZE);
	n = sched_prefixes(argc, argv);

	argc -= n;
	argv += n;
	if (argc == 4 && !strcmp(argv[1], "munmap"))
		do_munmap(mib(argv[2]), atoi(argv[3]), 0);
	else if (argc == 4 && !strcmp(argv[1], "exit"))
		do_exit(mib(argv[2]), atoi(argv[3]));
	else if (argc == 3 && !strcmp(argv[1], "fork"))
		do_fork(mib(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "shared"))
		do_shared(mib(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "swap"))
		do_swap(mib(argv[2]));
	else if (argc == 5 && !strcmp(argv[1], "live"))
		do_live(argv[2], mib(argv[3]), atoi(argv[4]), 0);
	else if (argc == 6 && !strcmp(argv[1], "live") &&
		 !strcmp(argv[5], "dontneed"))
		do_live(argv[2], mib(argv[3]), atoi(argv[4]), 1);
	else if (argc == 4 && !strcmp(argv[1], "dontneed"))
		do_munmap(mib(argv[2]), atoi(argv[3]), 1);
	else if (argc == 4 && !strcmp(argv[1], "many"))
		do_many(atoi(argv[2]), mib(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "loop"))
		do_loop(atol(argv[2]), mib(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "hog"))
		do_hog(mib(argv[2]), atol(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "acct"))
		do_acct(argv[2], mib(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "acct-exit"))
		do_acct_exit(argv[2], mib(argv[3]));
	else if (argc == 3 && !strcmp(argv[1], "mremap"))
		do_mremap(mib(argv[2]));
	else if (argc == 4 && !strcmp(argv[1], "sparse"))
		do_sparse(argv[2], mib(argv[3]));
	else if (argc == 3 && !strcmp(argv[1], "zapmix"))
		do_zapmix(mib(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "mrelease"))
		do_mrelease(mib(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "hmm-exit"))
		do_hmm_exit(mib(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "mrelease-late"))
		do_mrelease_late(mib(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "execbig"))
		do_execbig(mib(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "threads"))
		do_threads(mib(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "held"))
		do_held(mib(argv[2]));
	else if (argc == 3 && !strcmp(argv[1], "oom"))
		do_oom(mib(argv[2]));
	else if (argc == 4 && !strcmp(argv[1], "madv-mid"))
		do_madv_mid(argv[2], mib(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "sparse-loop"))
		do_sparse_loop(mib(argv[2]), atol(argv[3]));
	else {
		fprintf(stderr, "usage: see the top of tests/guest/free_test.c\n");
		return 2;
	}
	return 0;
}
