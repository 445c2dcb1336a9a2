// SPDX-License-Identifier: GPL-2.0
/*
 * Map N huge pages of SIZE kB (MAP_HUGETLB), write a pattern into every
 * page and read it back: shows that boot-time huge pages are usable.
 * Usage: hugetlb_touch SIZE_KB N; prints "hugetlb_touch: ..." and exits 0
 * on success.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif

int main(int argc, char **argv)
{
	unsigned long kb, n, i, size, bad = 0;
	int shift = 0;
	char *p;

	if (argc != 3) {
		fprintf(stderr, "usage: %s SIZE_KB N\n", argv[0]);
		return 2;
	}
	kb = strtoul(argv[1], NULL, 0);
	n = strtoul(argv[2], NULL, 0);
	size = kb * 1024;
	while ((1UL << shift) < size)
		shift++;
	p = mmap(NULL, n * size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE |
		 (shift << MAP_HUGE_SHIFT), -1, 0);
	if (p == MAP_FAILED) {
		printf("hugetlb_touch: mmap of %lu x %lu kB failed: %s\n", n, kb,
		       strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++) {
		p[i * size] = (char)i;
		p[i * size + size - 1] = (char)~i;
	}
	for (i = 0; i < n; i++)
		bad += p[i * size] != (char)i || p[i * size + size - 1] != (char)~i;
	printf("hugetlb_touch: %lu x %lu kB mapped and touched, %lu bad\n", n,
	       kb, bad);
	return bad ? 1 : 0;
}
