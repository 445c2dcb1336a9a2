# SPDX-License-Identifier: GPL-2.0
# The project's driver: see README.md.  'make run' and 'make check' are the
# two commands; the others are their steps.

REPO      := $(abspath .)
BUILD     := $(REPO)/build
# The kernel the series applies to: Linux 7.3 (Debian's linux-source-7.3).
# The tree and build directories carry the version, so that the next rebase
# starts beside them.  The last commit on the 6.12 base is tagged last-6.12
# (a2e0722).
VERSION   := 7.3
OVERLAY   := $(REPO)
TREE      := $(BUILD)/linux-$(VERSION)
KBUILD    := $(BUILD)/kbuild-$(VERSION)
LLVM      ?= -19
export VERSION OVERLAY TREE KBUILD LLVM
# The derived kernels' build directories (kernel-norust, kernel-bench).
KBUILD_NORUST := $(KBUILD)-norust
KBUILD_BENCH  := $(KBUILD)-bench
SERIES_OUT    := $(BUILD)/series-$(VERSION)
SERIES_KBUILD := $(BUILD)/series-kbuild-$(VERSION)
BUILD_LOG     := $(BUILD)/build-$(VERSION).log
export KBUILD_NORUST KBUILD_BENCH SERIES_OUT SERIES_KBUILD BUILD_LOG
JOBS      ?= $(shell echo $$(( $$(nproc) + 1 )))
KUNITCONFIG := $(OVERLAY)/tests/mtjob.kunitconfig
QEMU_CONFIG := $(OVERLAY)/tests/qemu_configs/x86_64_numa.py
export PATH := $(HOME)/.cargo/bin:$(PATH)
export KERNEL_SRC

# The guests' options (make run, the benchmarks).
MEM     ?= 8
CPUS    ?= 4
NODES   ?= 2
REPEAT  ?= 3
APPEND  ?=
# 'make run' and 'make bench-hugetlb' time what they boot: no more vCPUs than
# the host has cores (min(4, nproc), a multiple of NODES, at least NODES),
# unless CPUS= is given; make run boots each engine 5 times unless REPEAT=
# is given, and ENGINES (ENGINE[:PARAM], comma-separated) rust, padata and
# serial.
given = $(filter command line environment,$(origin $(1)))
FAIR_CPUS = $(if $(call given,CPUS),$(CPUS),$(shell n=$$(nproc); \
	c=$$(( n < 4 ? n : 4 )); c=$$(( c / $(NODES) * $(NODES) )); \
	echo $$(( c < $(NODES) ? $(NODES) : c ))))
RUN_REPEAT = $(if $(call given,REPEAT),$(REPEAT),5)
ENGINES ?= rust,padata,serial

# The benchmarks' plots need matplotlib (Debian's python3-matplotlib, which
# a pyenv or venv python3 earlier in PATH does not see): the first python3
# that can import it.
PYTHON_PLOT ?= $(shell for p in python3 /usr/bin/python3; do \
	$$p -c 'import matplotlib' 2>/dev/null && { echo $$p; exit; }; done; \
	echo python3)

KMAKE = $(MAKE) -C $(TREE) O=$(KBUILD) LLVM=$(LLVM)

.PHONY: all setup setup-if-needed base apply sync diff config kernel kernel-norust \
	setup-arm64 kernel-arm64 check-arm64 configs bench-free-arm64 \
	boottest-norust kernel-bench run vmtests check check-full \
	kconfig-modversions kconfig-optin kernel-modversions boottest-modversions \
	rustfmt rust-analyzer series series-scope series-mtjob series-teardown \
	series-parts series-kunit series-build bench-hugetlb bench-free bench-engine \
	bench-deferred bench-slowdown bench-slowdown-arm64 stress clean \
	distclean help

all: help

help:
	@echo "make run     build, boot the 2-node guest with each engine: deferred init, hugetlb, teardown, verdicts"
	@echo "make check   build, lint (clippy, rustfmt, checkpatch), KUnit, boot tests (CI)"
	@echo "make vmtests run_vmtests.sh -t parallel_teardown (the series' kselftest) in a virtme-ng guest of the test kernel"
	@echo "make check-full  check, plus the kernel without Rust, the MODVERSIONS kernel, every free test, every patch built"
	@echo "make check-arm64  the arm64 guest: KUnit, the oops in a scope, boot, hugetlb and free tests (part of check-full)"
	@echo "make configs  the configuration matrix: WERROR builds, W=1, sparse, coccicheck (part of check-full)"
	@echo "make setup   install the toolchain and packages (Debian 12, root)"
	@echo "make apply   write the overlay into $(TREE)"
	@echo "make sync    bring edits made in $(TREE) back into the overlay"
	@echo "make kernel  apply, configure and build (incremental)"
	@echo "make rust-analyzer  rust-project.json at the repository's root, for the editor (after make kernel)"
	@echo "make bench-hugetlb  hugetlb boot allocation time: rust, padata, 1 thread"
	@echo "make bench-free     munmap/exit time of 2/4/6 GiB: serial, parallel free (by node, interleaved), parallel zap"
	@echo "make bench-free-arm64  TLBIs per munmap/exit on arm64 by kind (QEMU plugin), serial, parallel free, parallel zap"
	@echo "make bench-engine   mtjob_run() vs padata_do_multithreaded(), same jobs, one boot"
	@echo "make bench-deferred deferred init per engine on 5 guest shapes, 15 boots each"
	@echo "make bench-slowdown parallel / serial time of each path: teardowns on 4 guest shapes (quiet, oversubscribed, busy host, one node), boot-time paths on 3: table and heatmap"
	@echo "make bench-slowdown-arm64  the oversubscribed (collapse) row of bench-slowdown on arm64"
	@echo "make stress  sanitizers, random jobs, fault injection, hotplug, 8-node server (hours)"
	@echo "make series  cut the overlay into the RFC patches (build/series-7.3/)"
	@echo "make series-parts  the series as three postable series (scope, mtjob, teardown), each with its cover letter"
	@echo "make series-scope, series-mtjob, series-teardown  one of the three"
	@echo "make series-kunit PART=scope|mtjob  KUnit on the tree at the end of that part (builds it)"
	@echo "make series-build  build every patch of the series in turn (CONFIG_WERROR=y, W=1 on its C files)"

setup:
	@bash scripts/setup.sh

setup-arm64:
	@bash scripts/setup.sh --arm64

setup-if-needed:
	@bash scripts/setup.sh --check >/dev/null 2>&1 || bash scripts/setup.sh

base: setup-if-needed
	@bash scripts/base.sh $(TREE) $(VERSION)

apply: base
	@python3 scripts/overlay.py apply --repo $(OVERLAY) --tree $(TREE)

sync:
	@python3 scripts/overlay.py sync --repo $(OVERLAY) --tree $(TREE)

diff:
	@python3 scripts/overlay.py diff --repo $(OVERLAY) --tree $(TREE)

# Configure through kunit.py so that 'make check' and 'make run' share one
# build; reconfigure only when the kunitconfig changed.
$(KBUILD)/.config: $(KUNITCONFIG) $(QEMU_CONFIG)
	@$(MAKE) -s apply
	cd $(TREE) && python3 tools/testing/kunit/kunit.py config \
		--build_dir $(KBUILD) --kunitconfig $(KUNITCONFIG) \
		--qemu_config $(QEMU_CONFIG) --make_options LLVM=$(LLVM)

config: apply $(KBUILD)/.config

kernel: config
	@echo "kernel: building in $(KBUILD) (CLIPPY=1, log in $(BUILD_LOG))"
	@$(KMAKE) CLIPPY=1 -j$(JOBS) > $(BUILD_LOG) 2>&1 || \
		{ tail -n 40 $(BUILD_LOG); echo "kernel: build failed, see $(BUILD_LOG)"; exit 1; }
	@echo "kernel: $(KBUILD)/arch/x86/boot/bzImage"

# $(call derived-kernel,DIR,SCRIPTS_CONFIG_ARGS,NAME): build $(KBUILD)'s
# configuration changed by scripts/config ARGS in DIR, incrementally;
# reconfigure only when the result changed.  Log in DIR.log.
define derived-kernel
	@mkdir -p $(1)
	@cp $(KBUILD)/.config $(1)/.config.new
	@$(TREE)/scripts/config --file $(1)/.config.new $(2)
	@cmp -s $(1)/.config.new $(1)/.config.src || \
		{ cp $(1)/.config.new $(1)/.config.src; \
		  cp $(1)/.config.new $(1)/.config; \
		  $(MAKE) -s -C $(TREE) O=$(1) LLVM=$(LLVM) olddefconfig; }
	@echo "kernel-$(3): building in $(1) (log in $(1).log)"
	@$(MAKE) -C $(TREE) O=$(1) LLVM=$(LLVM) -j$(JOBS) \
		> $(1).log 2>&1 || \
		{ tail -n 40 $(1).log; echo "kernel-$(3): build failed"; exit 1; }
endef

# The same configuration without Rust (CONFIG_RUST=n, hence no
# CONFIG_MTJOB_RUST): what distribution kernels build.  Its own build
# directory; incremental like the other.
kernel-norust: config
	$(call derived-kernel,$(KBUILD_NORUST),-d RUST,norust)
	@! grep -q '^CONFIG_RUST=y' $(KBUILD_NORUST)/.config
	@echo "kernel-norust: $(KBUILD_NORUST)/arch/x86/boot/bzImage"

# The benchmarks' kernel: the same configuration without lockdep, debug
# objects and the other lock and sleep checks that 'make check' wants, which
# cost both engines, unequally (padata takes a spinlock per chunk, the Rust
# engine acquires a lockdep map per job).  Its own build directory.  It
# adds ftrace's function profiler, as distribution kernels have it, for the
# per-phase split of 'make bench-free PHASES=1' (a patched-out call at each
# function's entry when the profiler is off).  The test kernel's test-only
# hooks and what only its tests need (the HMM driver and its memory hotplug,
# the network stack of map_populate) are off too, so that the benchmarks
# measure the configuration their published numbers came from.
BENCH_TEST_OFF := PARALLEL_ZAP_REAPER_TEST TEST_HMM DEVICE_PRIVATE ZONE_DEVICE \
	MEMORY_HOTREMOVE MEMORY_HOTPLUG UNIX NET
BENCH_DEBUG_OFF := $(BENCH_TEST_OFF) PROVE_LOCKING DEBUG_LOCK_ALLOC DEBUG_SPINLOCK DEBUG_MUTEXES \
	DEBUG_WW_MUTEX_SLOWPATH DEBUG_RWSEMS DEBUG_RT_MUTEXES DEBUG_ATOMIC_SLEEP \
	DEBUG_OBJECTS DEBUG_OBJECTS_WORK DEBUG_MEMORY_INIT
BENCH_ON := FUNCTION_TRACER FUNCTION_GRAPH_TRACER FUNCTION_PROFILER
kernel-bench: config
	$(call derived-kernel,$(KBUILD_BENCH),$(foreach o,$(BENCH_DEBUG_OFF),-d $(o)) $(foreach o,$(BENCH_ON),-e $(o)),bench)
	@! grep -qE '^CONFIG_(PROVE_LOCKING|DEBUG_OBJECTS|DEBUG_ATOMIC_SLEEP)=y' $(KBUILD_BENCH)/.config
	@grep -q '^CONFIG_FUNCTION_PROFILER=y' $(KBUILD_BENCH)/.config
	@echo "kernel-bench: $(KBUILD_BENCH)/arch/x86/boot/bzImage"

# What distributions build: modules with MODVERSIONS, which Rust accepts on
# 7.3 only with GENDWARFKSYMS (so with DWARF debug info).  The test kernel's
# configuration with those added must keep Rust, the Rust engine and the
# parallel free: kconfig-modversions checks that (seconds, in make check);
# kernel-modversions builds it, with the Rust sample as a module, and
# boottest-modversions boots it and loads the module (make check-full;
# gendwarfksyms needs libdw).
KBUILD_MODV := $(KBUILD)-modversions
MODV_ON := MODULES MODVERSIONS DEBUG_INFO_DWARF5 GENDWARFKSYMS RUST \
	MTJOB_RUST MMU_GATHER_PARALLEL_FREE
kconfig-modversions: config
	@mkdir -p $(KBUILD_MODV)
	@cp $(KBUILD)/.config $(KBUILD_MODV)/.config.new
	@$(TREE)/scripts/config --file $(KBUILD_MODV)/.config.new \
		-d DEBUG_INFO_NONE -d DEBUG_INFO_REDUCED -d DEBUG_INFO_SPLIT \
		$(foreach o,$(MODV_ON),-e $(o)) -m SAMPLE_RUST_MTJOB
	@cp $(KBUILD_MODV)/.config.new $(KBUILD_MODV)/.config
	@$(MAKE) -s -C $(TREE) O=$(KBUILD_MODV) LLVM=$(LLVM) olddefconfig
	@missing=; for o in $(MODV_ON); do \
		grep -q "^CONFIG_$$o=y" $(KBUILD_MODV)/.config || missing="$$missing $$o"; \
	done; \
	grep -q "^CONFIG_SAMPLE_RUST_MTJOB=m" $(KBUILD_MODV)/.config || \
		missing="$$missing SAMPLE_RUST_MTJOB(=m)"; \
	if [ -n "$$missing" ]; then \
		echo "kconfig-modversions: with MODVERSIONS these are off:$$missing"; exit 1; \
	fi; \
	echo "kconfig-modversions: MODVERSIONS, GENDWARFKSYMS, RUST, MTJOB_RUST and MMU_GATHER_PARALLEL_FREE all on, the Rust sample a module ($(KBUILD_MODV)/.config)"

# kernel::mtjob is opt-in (issue 47): scripts/kconfig-optin.sh says what it
# checks.  Kconfig and Makefiles only: seconds, in make check.
KBUILD_OPTIN := $(KBUILD)-optin
kconfig-optin: config
	@bash scripts/kconfig-optin.sh $(TREE) $(KBUILD) $(KBUILD_OPTIN) $(LLVM)

kernel-modversions: kconfig-modversions
	@test -e /usr/include/elfutils/libdw.h || \
		{ echo "kernel-modversions: gendwarfksyms needs libdw (Debian: libdw-dev)"; exit 1; }
	@echo "kernel-modversions: building in $(KBUILD_MODV) (log in $(KBUILD_MODV).log)"
	@$(MAKE) -C $(TREE) O=$(KBUILD_MODV) LLVM=$(LLVM) -j$(JOBS) \
		> $(KBUILD_MODV).log 2>&1 || \
		{ tail -n 40 $(KBUILD_MODV).log; echo "kernel-modversions: build failed"; exit 1; }
	@echo "kernel-modversions: $(KBUILD_MODV)/arch/x86/boot/bzImage"

# Boot the MODVERSIONS kernel: the init loads the Rust sample's module, whose
# versioned imports of kernel::mtjob (CRCs from gendwarfksyms) must match.
boottest-modversions: kernel-modversions
	python3 scripts/guest.py boottest --kbuild $(KBUILD_MODV) --engines rust \
		--logdir build/logs/modversions

# Boot the kernel without Rust: deferred init and hugetlb on padata.
boottest-norust: kernel-norust
	python3 scripts/guest.py boottest --kbuild $(KBUILD_NORUST) --engines padata

# The benchmark kernel (one build on a fresh machine), the fair guest
# (FAIR_CPUS, memory preallocated when it fits), engines alternating; the
# report, CSV and PNG in scripts/runreport.py.  TEARDOWN=0 and PLACEMENT=0
# leave out the teardowns and the oversubscribed boots counting placement.
TEARDOWN  ?= 1
PLACEMENT ?= 1
run: kernel-bench
	@start=$$(date +%s); \
	$(PYTHON_PLOT) scripts/guest.py run --kbuild $(KBUILD_BENCH) \
		--mem $(MEM) --cpus $(FAIR_CPUS) --nodes $(NODES) \
		--repeat $(RUN_REPEAT) --engines $(ENGINES) --append "$(APPEND)" \
		--prealloc-auto $(if $(filter 0,$(TEARDOWN)),--no-teardown) \
		$(if $(filter 0,$(PLACEMENT)),--no-placement); \
	rc=$$?; echo "run: $$(( $$(date +%s) - start )) s after the kernel build"; \
	exit $$rc

# The series' kselftest category as a reviewer runs it: upstream's
# run_vmtests.sh -t CATEGORY in a virtme-ng guest of the test kernel (TCG,
# two nodes); scripts/vmtests.sh.  CATEGORY= and PROGRAMS= (the category's
# programs) run another category of tools/testing/selftests/mm.
CATEGORY ?= parallel_teardown
PROGRAMS ?=
vmtests: kernel
	@bash scripts/vmtests.sh $(TREE) $(KBUILD) $(BUILD)/vmtests $(CATEGORY) $(PROGRAMS)

check:
	@bash scripts/check.sh

# 'make check' plus what does not fit CI's hour: the kernel without Rust
# and its boots, the whole parallel-free test set, both engines on every
# hugetlb scenario, and the per-patch build of the series.
check-full:
	@CHECK_FULL=1 bash scripts/check.sh

# arm64 (issue 37): the test configuration cross-built with the same LLVM
# (ARCH=arm64 LLVM=-19, Rust included; no GCC cross toolchain), booted in
# qemu-system-aarch64 ('virt', GICv3, TCG) on the NUMA layout of the x86_64
# guest (tests/qemu_configs/arm64_numa.py).  Its kunitconfig is the x86_64
# one without the x86-only lines, plus tests/arm64.kunitconfig.
# What tests/mtjob.kunitconfig has that arm64 cannot: x86's own options and
# 8250 console, HVO (arm64 does not select
# ARCH_WANT_HUGETLB_PAGE_OPTIMIZE_VMEMMAP in 7.3) and soft-dirty bits (no
# HAVE_ARCH_SOFT_DIRTY).
NOT_ARM64 := X86_[A-Z0-9_]* SERIAL_8250[A-Z0-9_]* HUGETLB_PAGE_OPTIMIZE_VMEMMAP MEM_SOFT_DIRTY
space := $(subst ,, )
# ARM64_PAGES=64K: the same with 64 KiB pages (a PMD of 512 MiB), in a
# build directory of its own (check-full builds and boots both).
ARM64_PAGES       ?= 4K
ARM64_SUFFIX      := $(if $(filter 4K,$(ARM64_PAGES)),,-$(ARM64_PAGES))
KBUILD_ARM64      := $(KBUILD)-arm64$(ARM64_SUFFIX)
KUNITCONFIG_ARM64 := $(BUILD)/arm64$(ARM64_SUFFIX).kunitconfig
QEMU_CONFIG_ARM64 := $(OVERLAY)/tests/qemu_configs/arm64_numa.py
export KBUILD_ARM64 KUNITCONFIG_ARM64 QEMU_CONFIG_ARM64

$(KUNITCONFIG_ARM64): $(KUNITCONFIG) $(OVERLAY)/tests/arm64.kunitconfig FORCE
	@mkdir -p $(BUILD)
	@grep -v -E '^CONFIG_($(subst $(space),|,$(strip $(NOT_ARM64))))=' $(KUNITCONFIG) > $@.tmp
	@sed 's/^CONFIG_ARM64_4K_PAGES=y$$/CONFIG_ARM64_$(ARM64_PAGES)_PAGES=y/' \
		$(OVERLAY)/tests/arm64.kunitconfig >> $@.tmp
	@# 64K: the HMM test driver oopses at boot in sparse_add_section()
	@# (memremap_pages() of its device-private chunk; doc/results.md).
	@$(if $(ARM64_SUFFIX),sed -i '/^CONFIG_TEST_HMM=y$$/d' $@.tmp)
	@cmp -s $@.tmp $@ && rm $@.tmp || mv $@.tmp $@

kernel-arm64: apply $(KUNITCONFIG_ARM64)
	@echo "kernel-arm64: building in $(KBUILD_ARM64) (log in $(KBUILD_ARM64).log)"
	@cd $(TREE) && python3 tools/testing/kunit/kunit.py build \
		--build_dir $(KBUILD_ARM64) --kunitconfig $(KUNITCONFIG_ARM64) \
		--qemu_config $(QEMU_CONFIG_ARM64) --make_options LLVM=$(LLVM) \
		--jobs $(JOBS) > $(KBUILD_ARM64).log 2>&1 || \
		{ tail -n 40 $(KBUILD_ARM64).log; echo "kernel-arm64: build failed"; exit 1; }
	@echo "kernel-arm64: $(KBUILD_ARM64)/arch/arm64/boot/Image.gz"

# The configuration matrix the kernel's bots build (issue 37,
# scripts/configs.py): every entry, or CONFIGS=name,... (configs.py --list),
# built whole with CONFIG_WERROR=y, the series' C files again with W=1 and
# sparse; coccicheck on them once.  Build directories in build/configs/.
configs: apply
	@python3 scripts/configs.py $(if $(CONFIGS),--only $(CONFIGS),--cocci)

# TLB maintenance per teardown on arm64 (issue 37): arm64 invalidates other
# CPUs' TLBs with broadcast TLBIs, not IPIs, so they are counted, by kind,
# with QEMU's TCG plugin tests/qemu_plugins/tlbi.c (freebench --tlbi), in
# the arm64 test kernel (lockdep and debug on: its times are not the bench
# kernel's; the counts are what this is for).  Smaller sizes than
# bench-free's: TCG runs an aarch64 guest many times slower.
ARM64_SIZES ?= 512,1024
ARM64_MODES ?= off,by_node,zap
bench-free-arm64: setup-arm64 kernel-arm64
	$(PYTHON_PLOT) scripts/guest.py freebench --kbuild $(KBUILD_ARM64) --tlbi \
		--mem $(MEM) --cpus $(CPUS) --nodes $(NODES) --repeat $(REPEAT) \
		--timeout $(FREE_TIMEOUT) --sizes "$(ARM64_SIZES)" \
		--modes "$(ARM64_MODES)" --thp "$(THP)" --what "$(WHAT)" \
		$(if $(filter 1,$(SPREAD)),--spread)

# check-full's arm64 stages alone: KUnit, the oops in a scope, boottest,
# hugetlbtest and freetest on the arm64 guest (scripts/check.sh).
check-arm64:
	@CHECK_FULL=1 CHECK_STAGES="kunit-arm64 scope-oops-arm64 oops-park-arm64 boottest-arm64 hugetlbtest-arm64 freetest-zap-arm64 freetest-selftests-arm64 kunit-arm64-64K scope-oops-arm64-64K oops-park-arm64-64K boottest-arm64-64K hugetlbtest-arm64-64K freetest-zap-arm64-64K freetest-selftests-arm64-64K" \
		bash scripts/check.sh

# Boot-time hugetlb allocation time, 2M and 1G, per engine, REPEAT boots,
# engines alternating, the job allowed every vCPU (hugepage_alloc_threads=).
BENCH_ENGINES ?= rust,padata,rust:mtjob.max_threads=1
bench-hugetlb: kernel-bench
	$(PYTHON_PLOT) scripts/guest.py hugetlbbench --kbuild $(KBUILD_BENCH) \
		--mem $(MEM) --cpus $(FAIR_CPUS) --nodes $(NODES) --repeat $(REPEAT) \
		--engines $(BENCH_ENGINES) --prealloc

# SIZES (MiB), MODES (off, by_node, interleave, by_node_1h, zap), THP (0, 1
# or 0,1) and WHAT (munmap, exit, dontneed, live, live-dontneed) narrow it;
# e.g. exits with the parallel zap against serial and the parallel free on
# 2 vCPUs, 9 runs:
#   make bench-free CPUS=2 REPEAT=9 MODES=off,by_node,zap THP=0,1 WHAT=exit
# Mode zap is the exit's zap for exits, the live zap (vm.parallel_zap_live)
# for the others: dontneed is madvise(MADV_DONTNEED) of the whole mapping,
# live and live-dontneed the middle of a mapping with a thread on every CPU
# using the mm (the IPIs of a multithreaded process: CPUS=4).
# One boot runs every row: 9 runs of exits of 2, 4 and 6 GiB, THP off and
# on, in three modes took 50 minutes here (TCG, 2 cores; 2026-11-26).
# Each run prints its TLB flush events by reason (tlb:tlb_flush) and
# shootdown IPIs beside the times; SPREAD=1 has a thread on every vCPU touch
# the exit's memory first, so that every CPU has used the mm; LOCAL=1 puts
# the memory where the default policy does, one VMA, instead of half bound
# to each node (two VMAs: one job, helpers on both nodes).
# PHASES=1 profiles every run and prints the time of the walk, the TLB
# flushes, the page frees and the page tables (scripts/freebench.py);
# LOCKS=1 does too, with the page frees' locks profiled as well (a zone's
# lock held, a node's LRU lock taken, every contended spinlock's wait and
# the contended acquisitions): the hooks on those hot functions slow every
# run (4 GiB serial: 970 against 881 ms), so its times are not PHASES=1's.
FREE_TIMEOUT ?= 7800
PHASES ?= 0
SPREAD ?= 0
LOCAL ?= 0
LOCKS ?= 0
bench-free: kernel-bench
	$(PYTHON_PLOT) scripts/guest.py freebench --kbuild $(KBUILD_BENCH) \
		--mem $(MEM) --cpus $(CPUS) --nodes $(NODES) --repeat $(REPEAT) \
		--timeout $(FREE_TIMEOUT) --sizes "$(SIZES)" --modes "$(MODES)" \
		--thp "$(THP)" --what "$(WHAT)" --prealloc \
		$(if $(filter 1,$(PHASES)),--phases) \
		$(if $(filter 1,$(LOCKS)),--locks) \
		$(if $(filter 1,$(SPREAD)),--spread) \
		$(if $(filter 1,$(LOCAL)),--local)

# The engines side by side (CONFIG_MTJOB_BENCH; one boot; CSV and plots in
# build/bench/).  Defaults: 2 nodes, 2 vCPUs in all, which the 2-core host
# can run without oversubscription.
BENCH_CPUS ?= 2
bench-engine: kernel-bench
	$(PYTHON_PLOT) scripts/bench.py engine --kbuild $(KBUILD_BENCH) \
		--cpus $(BENCH_CPUS) --nodes $(NODES) --mem $(MEM) --append "$(APPEND)"

# Deferred init per engine on guests of several shapes (NODESxVCPUSxGIB,
# +PARAM for a guest's own kernel parameters), BOOTS boots each, engines
# alternating.  The defaults are issue 20's topologies: 1 and 2 nodes on
# the host's 2 cores, NUMA emulation, and two oversubscribed guests (4
# nodes x 2 vCPUs each; the 8-node server of 'make stress', 64 GiB, which
# QEMU cannot preallocate on a 24 GiB host).  About 90 minutes; GUESTS=
# and BOOTS= to shorten.
BOOTS  ?= 15
GUESTS ?= 1x2x16,2x2x16,1x2x16+numa=fake=8,4x8x16,8x16x64
DEFERRED_ENGINES ?= rust,padata,serial
bench-deferred: kernel-bench
	$(PYTHON_PLOT) scripts/bench.py deferred --kbuild $(KBUILD_BENCH) \
		--repeat $(BOOTS) --guests $(GUESTS) \
		--engines $(DEFERRED_ENGINES) --append "$(APPEND)"

# The slowdown matrix of issue 49 (scripts/slowdown.py): each parallel path
# over serial, paired runs, median and p90, with what the policy did: the
# teardowns on four guest shapes (one boot each; about 40 minutes with the
# default 5 rounds, 2026-11-29: quiet 14, busy 6, loaded host 9), deferred
# init and boot-time hugetlb on three (rust and serial boots alternating).
# SLOWDOWN_SHAPES=name,... for fewer.
SLOWDOWN_REPEAT ?= 5
SLOWDOWN_SHAPES ?= quiet-2vcpu,busy-4vcpu,host-loaded-2vcpu,one-node-2vcpu,boot-quiet-2vcpu,boot-4vcpu,boot-host-loaded-2vcpu
bench-slowdown: kernel-bench
	$(PYTHON_PLOT) scripts/slowdown.py --repeat $(SLOWDOWN_REPEAT) \
		--shapes $(SLOWDOWN_SHAPES)

# The collapse row on arm64 (the arm64 test kernel; see scripts/slowdown.py).
# 'scripts/slowdown.py --log-only --shapes $(SLOWDOWN_SHAPES),arm64-busy-4vcpu'
# then prints both runs as one table and heatmap.
bench-slowdown-arm64: setup-arm64 kernel-arm64
	$(PYTHON_PLOT) scripts/slowdown.py --repeat $(SLOWDOWN_REPEAT) \
		--shapes arm64-busy-4vcpu

# The reliability campaign (scripts/stress.py): sanitizer kernels in their
# own build directories, randomized jobs, fault injection, CPU hotplug and a
# simulated 8-node server.  PARTS= selects parts (default all).
PARTS ?=
stress: kernel
	python3 scripts/stress.py $(PARTS)

series: apply
	@python3 scripts/series.py --tree $(TREE) --out $(SERIES_OUT)

# The series as three postable series (issue 50), each with its own cover
# letter and numbered from 1, each based on the one before (format-patch's
# base-commit and prerequisite-patch-id lines, as b4 writes them):
#   $(SERIES_OUT)-scope     scoped work items, for Rust-for-Linux and
#                           workqueue (series/cover-letter-scope.txt)
#   $(SERIES_OUT)-mtjob     kernel::mtjob, mtjob_run() and its two boot-time
#                           users (series/cover-letter-mtjob.txt)
#   $(SERIES_OUT)-teardown  the parallel free and zap, their kselftest and
#                           the DO-NOT-MERGE test hooks
#                           (series/cover-letter-teardown.txt)
# 'make series-build LAST=N' with N a part's last patch builds the parts
# up to it alone; 'make series-kunit PART=scope|mtjob' runs KUnit on them.
SCOPE_LAST    := add scoped work items
MTJOB_FIRST   := rust: page: add Pfn
MTJOB_LAST    := initialise each node's gigantic pages
TEARDOWN_FIRST := workqueue: add workqueue_unbound_cpumask()
series-scope: apply
	@python3 scripts/series.py --tree $(TREE) --out $(SERIES_OUT)-scope \
		--upto '$(SCOPE_LAST)' --cover $(OVERLAY)/series/cover-letter-scope.txt
series-mtjob: apply
	@python3 scripts/series.py --tree $(TREE) --out $(SERIES_OUT)-mtjob \
		--from '$(MTJOB_FIRST)' --upto "$(MTJOB_LAST)" \
		--cover $(OVERLAY)/series/cover-letter-mtjob.txt
series-teardown: apply
	@python3 scripts/series.py --tree $(TREE) --out $(SERIES_OUT)-teardown \
		--from '$(TEARDOWN_FIRST)' --cover $(OVERLAY)/series/cover-letter-teardown.txt
series-parts: apply
	@python3 scripts/series.py --tree $(TREE) \
		--part $(SERIES_OUT)-scope '' '$(SCOPE_LAST)' $(OVERLAY)/series/cover-letter-scope.txt \
		--part $(SERIES_OUT)-mtjob '$(MTJOB_FIRST)' "$(MTJOB_LAST)" $(OVERLAY)/series/cover-letter-mtjob.txt \
		--part $(SERIES_OUT)-teardown '$(TEARDOWN_FIRST)' '' $(OVERLAY)/series/cover-letter-teardown.txt

# KUnit on the tree at the end of the scope or the mtjob part alone, as a
# reviewer who applied only that much would run it: its last patch built
# in $(SERIES_KBUILD) (make series-build FIRST=N LAST=N), then kunit.py
# exec from that patch's tree.  The suites and doctests of the later parts
# are not there, so what runs is what the part brings.
PART ?= scope
PART_LAST = $(if $(filter scope,$(PART)),$(SCOPE_LAST),$(if $(filter mtjob,$(PART)),$(MTJOB_LAST),$(error PART=scope or PART=mtjob)))
PART_N = $(shell grep '^\[patch\]' $(OVERLAY)/series/series.conf | grep -nF -- "$(PART_LAST)" | cut -d: -f1)
series-kunit:
	@$(MAKE) -s series-build FIRST=$(PART_N) LAST=$(PART_N)
	@echo "series-kunit: KUnit on patch $(PART_N) ($(PART) part), log in $(BUILD)/logs/series-kunit-$(PART).log"
	@mkdir -p $(BUILD)/logs
	@# series-build links vmlinux; the guest boots the bzImage around it.
	@$(MAKE) -s -C $(TREE)-series-tree O=$(SERIES_KBUILD) LLVM=$(LLVM) -j$(JOBS) bzImage
	@cd $(TREE)-series-tree && python3 tools/testing/kunit/kunit.py exec \
		--build_dir $(SERIES_KBUILD) --kunitconfig $(OVERLAY)/tests/mtjob.kunitconfig \
		--qemu_config $(OVERLAY)/tests/qemu_configs/x86_64_numa.py --timeout 1800 \
		> $(BUILD)/logs/series-kunit-$(PART).log 2>&1; rc=$$?; \
		grep -E 'Testing complete|^\[[0-9:]+\] (Ran|Elapsed)' $(BUILD)/logs/series-kunit-$(PART).log; exit $$rc

# SKIP_LAST=1 (make check, right after 'make kernel'): the last patch is the
# overlay that $(KBUILD) holds, built with the same .config.  FIRST=N and
# LAST=N build only patches N.. and ..N (the build directory then holds the
# last one built).
series-build: config
	@python3 scripts/series.py --tree $(TREE) --out $(SERIES_OUT) \
		--build $(SERIES_KBUILD) --config $(KBUILD)/.config \
		$(if $(filter 1,$(SKIP_LAST)),--skip-last) \
		$(if $(FIRST),--first $(FIRST)) $(if $(LAST),--last $(LAST))

rustfmt: apply
	@python3 scripts/overlay.py files --repo $(OVERLAY) | grep '[.]rs$$' | sed 's|^|$(TREE)/|' | \
		xargs rustfmt --edition 2021 --config-path $(TREE)/.rustfmt.toml
	@$(MAKE) -s sync

# rust-project.json for rust-analyzer: the kernel's own target on $(TREE) and
# $(KBUILD) (which must be configured and built: make kernel), then a copy at
# the repository's root in which the crate roots that the overlay holds whole
# (samples/rust/rust_mtjob.rs, and kernel/mtjob_rust.rs, which the kernel's
# script does not list) are the overlay's files.  rust-analyzer finds a
# crate's modules beside its root file: the kernel crate's (rust/kernel/...)
# hang off lib.rs, which the overlay holds as a patch, so they resolve in
# $(TREE) only; edit them there, then make sync.  It does not apply the
# overlay, which would overwrite edits made in $(TREE).
rust-analyzer:
	@test -e $(KBUILD)/include/generated/rustc_cfg || \
		{ echo "rust-analyzer: $(KBUILD) is not configured; run make kernel first"; exit 1; }
	@$(KMAKE) -s rust-analyzer
	@python3 scripts/overlay.py rust-project --repo $(OVERLAY) --tree $(TREE) --kbuild $(KBUILD)

clean:
	rm -rf $(KBUILD) $(SERIES_KBUILD) $(SERIES_OUT) $(BUILD)/logs \
		$(BUILD)/*.log $(BUILD)/initramfs.cpio

distclean:
	rm -rf $(BUILD)

FORCE:
