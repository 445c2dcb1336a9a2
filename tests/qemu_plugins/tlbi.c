// SPDX-License-Identifier: GPL-2.0
/*
 * tlbi.c - a QEMU TCG plugin that counts the TLB maintenance an arm64 guest
 * executes between two marks, for make bench-free-arm64 (scripts/guest.py
 * freebench --tlbi).
 *
 * arm64 invalidates other CPUs' TLBs with broadcast TLBI instructions, not
 * with IPIs, so /proc/interrupts and x86's tlb:tlb_flush event see nothing
 * of it, and two vCPUs under TCG cannot time what a broadcast costs on a
 * machine of 100 CPUs.  So it is counted: every TLBI the guest executes, on
 * any vCPU, by kind (the SYS encoding with CRn = 8, or 9 for the nXS forms
 * of FEAT_XS; Arm ARM C5.5):
 *
 *   mm     TLBI ASIDE1IS/OS: one ASID on every CPU (flush_tlb_mm())
 *   va     TLBI VAE1IS, VALE1IS, VAAE1IS, VAALE1IS (and OS): one page, or
 *          one stride of a range, on every CPU (__flush_tlb_range() without
 *          FEAT_TLBIRANGE, or a range too small for a range operation)
 *   range  TLBI RVAE1IS and the other range operations (FEAT_TLBIRANGE,
 *          which -cpu max has): up to 2^(5*scale+1) * 32 pages a go
 *   all    TLBI VMALLE1IS/OS (flush_tlb_all())
 *   local  the non-shareable ones (this CPU's TLB only)
 *
 * The guest marks a teardown's start and end with two HINT instructions
 * that the architecture leaves unallocated and so executes as NOPs:
 * HINT #0x7e (start) and HINT #0x7f (end), from tests/guest/free_test.c.
 * At the end mark the plugin writes one line to QEMU's log (stderr unless
 * -D is given):
 *
 *   TLBICOUNT mm=<n> va=<n> range=<n> all=<n> local=<n> other=<n>
 *
 * the TLBIs of every vCPU between the two marks (an end mark without a
 * start mark before it counts from boot: free_test sets both).
 *
 * Build: cc -shared -fPIC -I<dir of Debian's QEMU qemu-plugin.h> tlbi.c
 * (make setup-arm64 fetches the header of the installed QEMU's source).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

enum kind { K_MM, K_VA, K_RANGE, K_ALL, K_LOCAL, K_OTHER, K_START, K_END,
	    NR_KINDS };

static const char *const names[] = { "mm", "va", "range", "all", "local",
				     "other" };

#define MAX_VCPUS 256
#define HINT_START 0xd5032fdfu	/* HINT #0x7e */
#define HINT_END 0xd5032fffu	/* HINT #0x7f */

/*
 * Each vCPU thread adds to its own row only; the end mark sums the rows.
 * An aligned 64-bit load or store does not tear on the hosts QEMU runs on.
 */
static uint64_t counts[MAX_VCPUS][K_START];
/* Written at the start mark on one vCPU, read at the end mark on another. */
static uint64_t at_start[K_START];
static int nr_vcpus;

static uint64_t total(int k)
{
	uint64_t sum = 0;
	int cpu;

	for (cpu = 0; cpu < nr_vcpus; cpu++)
		sum += __atomic_load_n(&counts[cpu][k], __ATOMIC_RELAXED);
	return sum;
}

static void on_exec(unsigned int vcpu, void *udata)
{
	int k = (int)(uintptr_t)udata;
	char line[256];
	int n, i;

	if (k == K_START) {
		for (i = 0; i < K_START; i++)
			__atomic_store_n(&at_start[i], total(i),
					 __ATOMIC_RELEASE);
		return;
	}
	if (k == K_END) {
		n = snprintf(line, sizeof(line), "TLBICOUNT");
		for (i = 0; i < K_START; i++)
			n += snprintf(line + n, sizeof(line) - n, " %s=%" PRIu64,
				      names[i], total(i) -
				      __atomic_load_n(&at_start[i],
						      __ATOMIC_ACQUIRE));
		snprintf(line + n, sizeof(line) - n, "\n");
		qemu_plugin_outs(line);
		return;
	}
	if (vcpu < MAX_VCPUS)
		__atomic_store_n(&counts[vcpu][k], counts[vcpu][k] + 1,
				 __ATOMIC_RELAXED);
}

/* The kind of a TLBI at EL1 (op1 = 0) from its CRm and op2; -1 if @insn
 * is not a TLBI. */
static int tlbi_kind(uint32_t insn)
{
	unsigned int op1 = (insn >> 16) & 7, crn = (insn >> 12) & 15;
	unsigned int crm = (insn >> 8) & 15, op2 = (insn >> 5) & 7;

	if ((insn & 0xfff80000u) != 0xd5080000u || (crn != 8 && crn != 9))
		return -1;
	if (op1 != 0)
		return K_OTHER;
	switch (crm) {
	case 1:		/* outer shareable */
	case 3:		/* inner shareable */
		if (op2 == 0)
			return K_ALL;
		if (op2 == 2)
			return K_MM;
		return K_VA;
	case 2:		/* range, inner shareable */
	case 5:		/* range, outer shareable */
		return K_RANGE;
	case 6:		/* range, this CPU */
	case 7:		/* this CPU */
		return K_LOCAL;
	default:
		return K_OTHER;
	}
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *b;
		uint32_t word;
		int k;

		if (qemu_plugin_insn_size(insn) != sizeof(word))
			continue;
		/* A64 instructions are little-endian, whatever the host. */
		b = qemu_plugin_insn_data(insn);
		word = b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
		if (word == HINT_START)
			k = K_START;
		else if (word == HINT_END)
			k = K_END;
		else
			k = tlbi_kind(word);
		if (k < 0)
			continue;
		qemu_plugin_register_vcpu_insn_exec_cb(insn, on_exec,
						       QEMU_PLUGIN_CB_NO_REGS,
						       (void *)(uintptr_t)k);
	}
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	if (strcmp(info->target_name, "aarch64") || !info->system_emulation) {
		fprintf(stderr, "tlbi: aarch64 system emulation only, not %s\n",
			info->target_name);
		return -1;
	}
	nr_vcpus = info->system.max_vcpus;
	if (nr_vcpus > MAX_VCPUS) {
		fprintf(stderr, "tlbi: %d vCPUs, at most %d\n", nr_vcpus,
			MAX_VCPUS);
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	return 0;
}
