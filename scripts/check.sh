#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# 'make check': build, lint and test the series; prints the time of each stage
# and ends with one line "check: N passed, N failed", which counts the stages
# plus every KUnit case and boot-test check inside them.
# CHECK_FULL=1 ('make check-full') adds what does not fit CI's hour: the
# kernel without Rust and its boots, every parallel-free case and
# uffd-unit-tests, the padata engine on every hugetlb scenario, the
# MODVERSIONS kernel built and booted with the Rust sample as a module, every
# entry of the configuration matrix (make check builds rust-n only), the
# arm64 stages, and the build of every patch.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
: "${TREE:=$repo/build/linux-7.3}" "${KBUILD:=$repo/build/kbuild-7.3}" "${LLVM:=-19}"
# The overlay and the derived kernels' build directories, as the Makefile
# sets them.
: "${OVERLAY:=$repo}" "${KBUILD_NORUST:=$KBUILD-norust}"
: "${SERIES_OUT:=$repo/build/series-7.3}" "${CHECK_FULL:=0}"
export OVERLAY
export PATH="$HOME/.cargo/bin:$PATH"
logs=$repo/build/logs
mkdir -p "$logs"
passed=0
failed=0
skipped=0
summary=()

# CHECK_STAGES="checkpatch docs" (make check CHECK_STAGES=...): run only
# those stages, for a developer's quick rerun; the others are skipped and
# counted as passed.  Unset in CI.
stage() {	# stage NAME COMMAND...: run, time, count
	local name=$1 t0 rc
	shift
	if [ -n "${CHECK_STAGES:-}" ] && [[ " $CHECK_STAGES " != *" $name "* ]]; then
		summary+=("$(printf '%-12s        skipped' "$name")")
		# The caller counts it next (count 0): not as a pass.
		passed=$((passed - 1))
		skipped=$((skipped + 1))
		return 0
	fi
	t0=$(date +%s)
	echo "=== $name"
	"$@"
	rc=$?
	local dt=$(($(date +%s) - t0))
	if [ $rc = 0 ]; then
		summary+=("$(printf '%-12s %5ss  ok' "$name" "$dt")")
	else
		summary+=("$(printf '%-12s %5ss  FAILED (%s)' "$name" "$dt" "$rc")")
	fi
	return $rc
}

count() {	# count RC: one more pass or fail
	if [ "$1" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
}

finish() {
	echo
	echo "Stages:"
	printf '  %s\n' "${summary[@]}"
	echo "check: $passed passed, $failed failed${CHECK_STAGES:+ ($skipped stages skipped: CHECK_STAGES)}"
	[ $failed = 0 ]
	exit $?
}

stage setup make -s -C "$repo" setup-if-needed || { count 1; finish; }
stage kernel make -s -C "$repo" kernel; rc=$?
count $rc
[ $rc = 0 ] || { tail -n 40 "${BUILD_LOG:-$repo/build/build-7.3.log}"; finish; }

# Warnings (rustc, clippy, clang) from the files the series adds or changes.
# An incremental build only shows the warnings of what it recompiled, so our
# .c and .rs files are touched and rebuilt (CLIPPY=1) into their own log.
ours=$(cd "$repo" && python3 scripts/overlay.py files --repo "$OVERLAY")
clippy_warnings() {
	(cd "$TREE" && touch $(printf '%s\n' $ours | grep -E '[.](c|rs)$'))
	make -s -C "$TREE" O="$KBUILD" LLVM="$LLVM" CLIPPY=1 -j"$(($(nproc) + 1))" \
		> "$logs/clippy.log" 2>&1 || { tail -n 30 "$logs/clippy.log"; return 1; }
	local pat
	# Our doctests are compiled from rust/doctests_kernel_generated.rs.
	pat=$(printf '%s\n' $ours rust/doctests_kernel_generated.rs |
		sed 's/[.]/\\./g; s/$/:/' | paste -sd'|')
	# Rust diagnostics name the file on a "--> path:line" line, C ones
	# start with "path:line:col: warning".
	if grep -E -e "--> (.*/)?($pat)" -e "^(.*/)?($pat)[0-9]+:[0-9]+: warning" \
		"$logs/clippy.log"; then
		echo "warnings from our files above (build/logs/clippy.log)"
		return 1
	fi
	echo "no warnings from our files in the CLIPPY=1 rebuild of them"
}
stage clippy clippy_warnings; count $?

rustfmt_check() {
	make -s -C "$TREE" O="$KBUILD" LLVM="$LLVM" rustfmtcheck &&
		echo "rustfmtcheck: every Rust file of the tree is formatted"
}
stage rustfmt rustfmt_check; count $?

# The guest log checks the boot and free tests rely on (tests/test_guest_log.py).
harness() {
	python3 -m unittest discover -s "$repo/tests" -p 'test_*.py' -v
}
stage harness harness; count $?

# get_maintainer ARGS...: scripts/get_maintainer.pl in the final tree; its
# errors go to build/logs/get_maintainer.log.  An empty answer is asked again
# once: in CI of stop 52 one call printed nothing (a patch "did not reach" a
# maintainer that the same call in the same tree then gave), which a check of
# the MAINTAINERS file must not fail on.
get_maintainer() {
	local out
	out=$(cd "$TREE" && perl scripts/get_maintainer.pl "$@" 2>>"$logs/get_maintainer.log")
	[ -n "$out" ] ||
		out=$(cd "$TREE" && perl scripts/get_maintainer.pl "$@" 2>>"$logs/get_maintainer.log")
	printf '%s\n' "$out"
}
# covered FILE MAINTAINERS: an entry of the file MAINTAINERS other than THE
# REST has a maintainer for FILE (get_maintainer.pl, run in the final tree).
covered() {
	(cd "$TREE" && perl scripts/get_maintainer.pl --no-git --mpath "$2" \
		-f "$1" 2>/dev/null) | grep '(maintainer:' | grep -qv '(maintainer:THE REST)'
}
checkpatch() {
	local patches parts f k commits mfile named rc=0
	# The series as posted: one patch per logical change (series/series.conf),
	# and the cover letter with every patch number and code fact it states
	# resolved against that series (series.py fails on one that does not).
	python3 "$repo/scripts/series.py" --tree "$TREE" --out "$SERIES_OUT" ||
		return 1
	echo "cover letter: $(grep -oE '\{(patch[:+]|fact:)' \
		"$repo/series/cover-letter.txt" | wc -l) patch numbers and facts resolved against the series"
	patches=$(ls "$SERIES_OUT"/*.patch | grep -v /0000-)
	# The three postable series (make series-parts): each cut on its own,
	# its cover letter's patch numbers and facts resolved against it and
	# its changelogs naming only its own patches; checkpatch reads their
	# patches, which together are the series'.
	make -s -C "$repo" series-parts TREE="$TREE" SERIES_OUT="$SERIES_OUT" \
		OVERLAY="$OVERLAY" || return 1
	parts=$(ls "$SERIES_OUT"-scope/*.patch "$SERIES_OUT"-mtjob/*.patch \
		"$SERIES_OUT"-teardown/*.patch | grep -v /0000-)
	[ "$(echo "$parts" | wc -l)" = "$(echo "$patches" | wc -l)" ] ||
		{ echo "the three series have $(echo "$parts" | wc -l) patches, the series $(echo "$patches" | wc -l)"; return 1; }
	# /usr/bin first: checkpatch runs spdxcheck.py with python3, which
	# needs Debian's python3-ply and python3-git.  Nothing is ignored:
	# the one warning allowed is FILE_PATH_CHANGES ("does MAINTAINERS need
	# updating?") on a patch whose new files an existing entry covers
	# (rust/ helpers, the workqueue directory, tests beside the C API),
	# which the loop over each patch's new files below answers.
	# checkpatch on two patches at a time (the machine's two cores), each
	# into OUT/N with its exit code in OUT/N.rc; read back in order.
	cpdir=$(mktemp -d)
	echo "$parts" | awk '{ print NR " " $0 }' | (cd "$TREE" &&
		PATH=/usr/bin:$PATH xargs -P "$(nproc)" -L 1 sh -c \
		'perl scripts/checkpatch.pl --strict --show-types --quiet "$2" > "$0/$1"; echo $? > "$0/$1.rc"' "$cpdir")
	n=0
	for p in $parts; do
		n=$((n + 1))
		# checkpatch exits 1 when it reports something; more is its
		# own failure, which must not read as a clean patch.
		out=$(cat "$cpdir/$n" 2>/dev/null)
		s=$(cat "$cpdir/$n.rc" 2>/dev/null)
		case $s in 0|1) ;; *) s=99 ;; esac
		if [ $s -gt 1 ]; then
			echo "checkpatch could not check ${p##*/} (exit $s)"
			rc=1
			continue
		fi
		if echo "$out" | grep -E '^(ERROR|WARNING|CHECK):' |
			grep -qv '^WARNING:FILE_PATH_CHANGES:'; then
			echo "$out"
			rc=1
		elif [ -n "$out" ]; then
			echo "${p##*/}: adds files under existing MAINTAINERS entries"
		fi
	done
	# A file a patch adds has a maintainer entry (not only THE REST's) in
	# the MAINTAINERS of that patch: what answers its FILE_PATH_CHANGES.
	commits=$(git -C "$TREE" rev-list --reverse base..series)
	rm -rf "$cpdir"
	[ "$(echo "$commits" | wc -l)" = "$(echo "$patches" | wc -l)" ] ||
		{ echo "the series branch and $SERIES_OUT differ in patches"; return 1; }
	mfile=$(mktemp)
	for p in $patches; do
		k=$(basename "$p" | sed 's/-.*//; s/^0*//')
		git -C "$TREE" show "$(echo "$commits" | sed -n "${k}p"):MAINTAINERS" > "$mfile" ||
			{ rc=1; continue; }
		for f in $(awk '/^diff --git /{f=$4} /^new file mode/{sub("^b/","",f); print f}' "$p"); do
			covered "$f" "$mfile" ||
				{ echo "${p##*/} adds $f, which its MAINTAINERS does not cover"; rc=1; }
		done
	done
	rm -f "$mfile"
	# get_maintainer.pl on every patch: a maintainer of an entry other than
	# THE REST; then who the patches below must reach by name.
	for p in $patches; do
		cc=$(get_maintainer --no-git "$p")
		echo "$cc" | grep '(maintainer:' | grep -qv '(maintainer:THE REST)' ||
			{ echo "get_maintainer: ${p##*/} reaches no maintainer:"; echo "$cc"; rc=1; }
	done
	named=0
	while read -r subject want; do
		named=$((named + 1))
		p=$(grep -l "^Subject: \[RFC PATCH [0-9/]*\] $subject" $patches | head -n 1)
		[ -n "$p" ] || { echo "get_maintainer: no patch '$subject'"; rc=1; continue; }
		cc=$(get_maintainer --no-git --no-rolestats "$p")
		for w in ${want//,/ }; do
			echo "$cc" | grep -qF "$w" ||
				{ echo "get_maintainer: ${p##*/} does not reach $w; it gave:"; echo "$cc" | head -n 8; rc=1; }
		done
	done <<-'EOF'
	workqueue:.add.workqueue_unbound_cpumask tj@kernel.org
	sched:.add.queries peterz@infradead.org,mingo@redhat.com
	mm:.memcontrol:.add.mem_cgroup_task_margin hannes@cmpxchg.org,mhocko@kernel.org,akpm@linux-foundation.org,roman.gushchin@linux.dev,shakeel.butt@linux.dev,muchun.song@linux.dev,cgroups@vger.kernel.org,linux-mm@kvack.org
	mm:.free.the.pages.of.large.teardowns will@kernel.org,akpm@linux-foundation.org,linux-arch@vger.kernel.org,linux-mm@kvack.org
	rust:.workqueue:.add.scoped rust-for-linux@vger.kernel.org
	rust:.add.kernel::mtjob maintainers@users.noreply,linux-mm@kvack.org,rust-for-linux@vger.kernel.org
	kernel:.add.mtjob_run maintainers@users.noreply,linux-mm@kvack.org
	mm:.run.deferred_init_memmap rppt@kernel.org,akpm@linux-foundation.org,linux-mm@kvack.org
	mm:.report.deferred.init rppt@kernel.org,linux-mm@kvack.org
	mm:.hugetlb:.allocate.boot-time muchun.song@linux.dev,osalvador@suse.de,linux-mm@kvack.org
	mm:.hugetlb:.report.boot-time muchun.song@linux.dev,osalvador@suse.de,linux-mm@kvack.org
	mm:.hugetlb:.initialise.each.node muchun.song@linux.dev,osalvador@suse.de,linux-mm@kvack.org
	mm:.count.parallel.teardown will@kernel.org,akpm@linux-foundation.org,linux-mm@kvack.org
	mm:.zap.the.address.space akpm@linux-foundation.org,david@kernel.org,linux-mm@kvack.org
	EOF
	[ $rc = 0 ] && echo "checkpatch --strict: all $(echo "$parts" | wc -l) patches of the three series (scope, mtjob, teardown) clean (signed off; FILE_PATH_CHANGES answered); each file a patch adds has a MAINTAINERS entry in that patch; get_maintainer gives every patch a maintainer, and $named patches the maintainers they touch by name"
	return $rc
}
stage checkpatch checkpatch; count $?

# Documentation: kernel-doc of the C files the series adds is clean, and the
# upstream files it patches gain no kernel-doc warning; the kernel crate's
# rustdoc gives no warning in our Rust files; the core-api page parses as
# reStructuredText (docutils; Sphinx's kernel-doc directive left out).
docs() {
	local rc=0 f n0 n1 pat
	: > "$logs/kernel-doc.log"
	for f in $(cd "$repo" && python3 scripts/overlay.py files --repo "$OVERLAY" | grep -E '[.][ch]$'); do
		n1=$(cd "$TREE" && scripts/kernel-doc -none -Wall "$f" 2>&1 | tee -a "$logs/kernel-doc.log" | grep -c .)
		n0=0
		if git -C "$TREE" cat-file -e "base:$f" 2>/dev/null; then
			git -C "$TREE" show "base:$f" > "$logs/kernel-doc.base"
			n0=$(cd "$TREE" && scripts/kernel-doc -none -Wall "$logs/kernel-doc.base" 2>&1 | grep -c .)
		fi
		if [ "$n1" -gt "$n0" ]; then
			echo "kernel-doc: $f: $n1 warnings (upstream: $n0)"
			rc=1
		fi
	done
	[ $rc = 0 ] && echo "kernel-doc -Wall: no new warning in our C files"
	make -s -C "$TREE" O="$KBUILD" LLVM="$LLVM" rustdoc > "$logs/rustdoc.log" 2>&1 ||
		{ tail -n 20 "$logs/rustdoc.log"; return 1; }
	pat=$(cd "$repo" && python3 scripts/overlay.py files --repo "$OVERLAY" | grep '[.]rs$' |
		sed 's/[.]/\\./g; s/$/:/' | paste -sd'|')
	if grep -E -B3 -A8 -e "--> (.*/)?($pat)" "$logs/rustdoc.log" | grep -q -E '^(warning|error)'; then
		grep -E -B3 -A8 -e "--> (.*/)?($pat)" "$logs/rustdoc.log"
		echo "rustdoc: warnings in our files (build/logs/rustdoc.log)"
		rc=1
	else
		echo "rustdoc: no warning in our Rust files"
	fi
	grep -v -e 'kernel-doc::' -e ':export:' "$TREE/Documentation/core-api/mtjob.rst" |
		python3 -c 'import sys, docutils.core
docutils.core.publish_string(sys.stdin.read(), writer_name="null",
	settings_overrides={"report_level": 2, "halt_level": 2})' ||
		{ echo "Documentation/core-api/mtjob.rst does not parse"; rc=1; }
	return $rc
}
stage docs docs; count $?

kunit() {
	(cd "$TREE" && python3 tools/testing/kunit/kunit.py exec \
		--build_dir "$KBUILD" --kunitconfig "$OVERLAY/tests/mtjob.kunitconfig" \
		--qemu_config "$OVERLAY/tests/qemu_configs/x86_64_numa.py" \
		--timeout 600) 2>&1 | tee "$logs/kunit.log" | grep -E \
		'^\[..:..:..\] (# Subtest|Testing complete|.*(FAILED|CRASHED|\[PASSED\] (mtjob|rust_mtjob|rust_workqueue_scope|rust_doctests)))|not ok'
	local rc=${PIPESTATUS[0]}
	grep -q 'Testing complete' "$logs/kunit.log" || rc=1
	# A splat in a helper (lockdep, debugobjects, might_sleep) fails no
	# KUnit case; look for one in the guest's log.
	if grep -E 'WARNING:|BUG:|ODEBUG:|possible (circular|recursive) locking|Call Trace' \
		"$KBUILD/test.log"; then
		echo "kernel warnings during KUnit ($KBUILD/test.log)"
		rc=1
	fi
	return $rc
}
stage kunit kunit; rc=$?
count $rc
# Count the KUnit test cases too: "Ran N tests: passed: P, failed: F".
kline=$(grep -o 'Ran [0-9]* tests:.*' "$logs/kunit.log" | tail -n1)
kp=$(echo "$kline" | grep -o 'passed: [0-9]*' | grep -o '[0-9]*')
kf=$(echo "$kline" | grep -o 'failed: [0-9]*' | grep -o '[0-9]*')
kc=$(echo "$kline" | grep -o 'crashed: [0-9]*' | grep -o '[0-9]*')
passed=$((passed + ${kp:-0}))
failed=$((failed + ${kf:-0} + ${kc:-0}))

# The join of a workqueue scope is visible to lockdep: one KUnit case, booted
# alone because the report it expects ends lockdep for that boot; once with a
# join of two threads (mtjob_test.lockdep_report=1), once with a job of one
# thread, which mtjob_run() runs without the Rust engine (=2).
lockdep_report() {
	local mode want
	for mode in 1 2; do
		(cd "$TREE" && python3 tools/testing/kunit/kunit.py exec \
			--build_dir "$KBUILD" --kunitconfig "$OVERLAY/tests/mtjob.kunitconfig" \
			--qemu_config "$OVERLAY/tests/qemu_configs/x86_64_numa.py" \
			--timeout 300 --kernel_args mtjob_test.lockdep_report=$mode \
			'mtjob.mtjob_test_lockdep_report') > "$logs/lockdep-$mode.log" 2>&1
		cp "$KBUILD/test.log" "$logs/lockdep-kernel-$mode.log"
		grep -q 'Ran 1 tests: passed: 1' "$logs/lockdep-$mode.log" ||
			{ tail -n 20 "$logs/lockdep-$mode.log"; return 1; }
		grep -q 'possible circular locking dependency' "$logs/lockdep-kernel-$mode.log" ||
			{ echo "no lockdep report in $logs/lockdep-kernel-$mode.log"; return 1; }
		# Which join reported: the Rust scope's (1), recorded at the
		# caller's instance of scope_with_key(), whose mangled name has
		# the closure of kernel::mtjob::shared (v0 mangling: 5mtjob6shared);
		# mtjob_run()'s own (2).
		want='scope_with_key.*5mtjob6shared'
		[ $mode = 2 ] && want='at: __mtjob_run'
		grep -q "(lockdep_run){.*$want" "$logs/lockdep-kernel-$mode.log" ||
			{ echo "the report of mode $mode is not at $want"; return 1; }
	done
	echo "lockdep reported a join under a mutex the job's helpers take, of two threads and of one"
}
stage lockdep lockdep_report; count $?

# A thread that oopses with a workqueue scope open is parked with its stack
# kept (kernel/exit.c, task_stack_lent()), and the kernel goes on (issue
# 47).  scope_oops: booted alone with mtjob_test.oops_in_scope=1, a job's
# caller (a thread of the case's own) oopses in its chunk while the helpers
# write to its stack; the KUnit case checks that it was parked, kept its
# stack and that the helpers finished, and the kernel then finishes the
# KUnit run without a panic.  Without the park the dying thread's stack
# would be freed under the helpers (KASAN) or, on x86, rewound.
# scope_oops [KBUILD KUNITCONFIG QEMU_CONFIG NAME]: x86_64's test kernel by
# default; check-full's arm64 stage passes its own (NAME: the logs' prefix).
scope_oops() {
	local kb=${1:-$KBUILD} kc=${2:-$OVERLAY/tests/mtjob.kunitconfig}
	local qc=${3:-$OVERLAY/tests/qemu_configs/x86_64_numa.py} n=${4:-scope-oops}
	(cd "$TREE" && python3 tools/testing/kunit/kunit.py exec \
		--build_dir "$kb" --kunitconfig "$kc" --qemu_config "$qc" \
		--timeout 600 --kernel_args 'mtjob_test.oops_in_scope=1 panic=1' \
		'mtjob.mtjob_test_oops_in_scope') > "$logs/$n.log" 2>&1
	cp "$kb/test.log" "$logs/$n-kernel.log"
	# x86_64 says "BUG: kernel NULL pointer dereference", arm64 "Unable
	# to handle kernel NULL pointer dereference".
	grep -qE '(BUG: kernel|Unable to handle kernel) NULL pointer dereference' \
		"$logs/$n-kernel.log" ||
		{ tail -n 20 "$logs/$n.log"; echo "no oops in the chunk"; return 1; }
	grep -q 'died with its stack lent to work items: parked' "$logs/$n-kernel.log" ||
		{ echo "the caller was not parked ($logs/$n-kernel.log)"; return 1; }
	! grep -q 'Kernel panic' "$logs/$n-kernel.log" ||
		{ echo "a panic in $logs/$n-kernel.log"; return 1; }
	grep -qE '^\s*ok 1 mtjob_test_oops_in_scope|\[PASSED\] mtjob_test_oops_in_scope' \
		"$logs/$n.log" "$logs/$n-kernel.log" ||
		{ tail -n 30 "$logs/$n.log"; echo "the KUnit case did not pass"; return 1; }
	! grep -q 'BUG: KASAN' "$logs/$n-kernel.log" ||
		{ echo "KASAN report in $logs/$n-kernel.log"; return 1; }
	grep -h 'parked: exit_state' "$logs/$n-kernel.log" | head -n 1
	echo "an oops with a scope open parked its thread, the helpers finished on its stack, no panic"
}
stage scope-oops scope_oops; count $?

# The same where users meet it (tests/guest/oops.sh): an oops in a chunk of
# a live munmap()'s parallel zap, of its caller and of a helper, with
# panic_on_oops=0: the caller parked (its mm kept) or waiting for the dead
# helper, another process maps, frees and exits afterwards, the guest powers
# off; with panic_on_oops=1 the caller's oops panics.
oops_park() {	# oops_park [guest.py options]: x86_64's test kernel by default
	local tag=oops${1:+-$(basename "$2")}
	python3 "$repo/scripts/guest.py" oopstest --cpus 2 --nodes 2 --mem 4 \
		--logdir "$logs/$tag" "$@" | tee "$logs/$tag.txt"
	return "${PIPESTATUS[0]}"
}
stage oops-park oops_park; count $?

# The series' kselftest as a reviewer runs it (make vmtests,
# scripts/vmtests.sh): upstream's run_vmtests.sh -t parallel_teardown in a
# virtme-ng guest of the test kernel (two nodes, 2 vCPUs); a test whose
# teardown stayed serial is a skip, and a skip fails the stage.
vmtests() {
	bash "$repo/scripts/vmtests.sh" "$TREE" "$KBUILD" "$repo/build/vmtests" \
		> "$logs/vmtests.txt" 2>&1
	local rc=$?
	tail -n 3 "$logs/vmtests.txt"
	return $rc
}
stage vmtests vmtests; count $?

# The guest suites in CI's 'make check': hugetlbtest boots the Rust engine on
# every scenario and padata on the first two (hugetlbtest --quick),
# freetest runs 16 of its 33 free cases, 44 of its 52 zap cases (exit,
# munmap(), MADV_DONTNEED) and the mm selftests in one guest, without the
# hotplug and isolcpus guests (freetest --quick, see tests/guest/free.sh);
# 'make check-full' runs them whole.
quick=--quick
[ "$CHECK_FULL" = 1 ] && quick=
guest_suite() {	# guest_suite NAME: run 'guest.py NAME' (both engines where it boots each)
	python3 "$repo/scripts/guest.py" "$1" --engines rust,padata $quick |
		tee "$logs/$1.txt"
	return "${PIPESTATUS[0]}"
}
for suite in boottest hugetlbtest freetest; do
	stage "$suite" guest_suite "$suite"; count $?
	# Count the checks inside too: "NAME: N passed, N failed".
	line=$(grep -o "$suite: [0-9]* passed, [0-9]* failed" "$logs/$suite.txt")
	passed=$((passed + $(echo "$line" | awk '{print $2+0}')))
	failed=$((failed + $(echo "$line" | awk '{print $4+0}')))
done

# The engine benchmark (make bench-engine) in small: every point runs on both
# engines and reports sane values; no timing is judged.
enginebench() {
	python3 "$repo/scripts/bench.py" engine --smoke --max-size 4096 |
		tee "$logs/enginebench-smoke.txt"
	return "${PIPESTATUS[0]}"
}
stage enginebench-smoke enginebench; count $?
# The test configuration with a distribution's MODVERSIONS settings keeps
# Rust and the parallel free (Kconfig only here; check-full builds it).
stage kconfig-modversions make -s -C "$repo" kconfig-modversions; count $?
# kernel::mtjob is opt-in: nothing of it with Rust on and no user of it.
stage kconfig-optin make -s -C "$repo" kconfig-optin; count $?
line=$(grep -o "enginebench-smoke: [0-9]* passed, [0-9]* failed" \
	"$logs/enginebench-smoke.txt")
passed=$((passed + $(echo "$line" | awk '{print $2+0}')))
failed=$((failed + $(echo "$line" | awk '{print $4+0}')))

# The configuration matrix (make configs, scripts/configs.py): make check
# builds the entry a bot breaks first (no Rust) with CONFIG_WERROR=y and W=1
# on the series' C files (sparse is check-full's, issue 50's 50 minutes);
# check-full builds every entry (one CPU, one node, Rust without the Rust
# engine, ...), arm64's defconfig included, with sparse, and runs
# coccicheck.
configs() {
	python3 "$repo/scripts/configs.py" "$@" | tee "$logs/configs.txt"
	return "${PIPESTATUS[0]}"
}
if [ "$CHECK_FULL" = 1 ]; then
	stage configs configs --cocci
else
	# rust-n only: core mm without Rust, what distributions build.
	# smp-n (which on x86_64 also compiles the NUMA=n paths) and numa-n
	# are check-full's: CI of stop 51 took 4125 s with rust-n and smp-n
	# (962 s of it), past make check's hour (issue 50 asks for 50 min).
	stage configs configs --only rust-n --no-sparse
fi
count $?

# A kernel without Rust (CONFIG_RUST=n, as distributions build): boot jobs
# stay on padata with more than one thread, initialise the same deferred
# pages per node as the Rust kernel did in boottest, and allocate the hugetlb
# pages hugetlbtest expects.
norust() {
	make -s -C "$repo" kernel-norust || return 1
	python3 "$repo/scripts/guest.py" boottest --engines padata \
		--kbuild "$KBUILD_NORUST" --logdir "$logs/norust" |
		tee "$logs/norust.txt"
	[ "${PIPESTATUS[0]}" = 0 ] || return 1
	# hugetlb: the same fixed per-node expectations as the Rust kernel met
	# in hugetlbtest, on padata with more than one thread.
	python3 "$repo/scripts/guest.py" hugetlbtest --engines padata \
		--kbuild "$KBUILD_NORUST" --logdir "$logs/norust" |
		tee "$logs/norust-hugetlb.txt"
	[ "${PIPESTATUS[0]}" = 0 ] || return 1
	local a b
	a=$(grep -o 'node [0-9]* deferred init: [0-9]* pages' \
		"$logs/boottest-rust.log" | sort)
	b=$(grep -o 'node [0-9]* deferred init: [0-9]* pages' \
		"$logs/norust/boottest-padata.log" | sort)
	if [ -z "$a" ] || [ "$a" != "$b" ]; then
		printf 'deferred pages differ: Rust kernel\n%s\nkernel without Rust\n%s\n' "$a" "$b"
		return 1
	fi
	echo "kernel without Rust: same deferred pages per node as the Rust kernel"
}
modversions_boot() {
	python3 "$repo/scripts/guest.py" boottest --engines rust \
		--kbuild "$KBUILD-modversions" --logdir "$logs/modversions" |
		tee "$logs/boottest-modversions.txt"
	return "${PIPESTATUS[0]}"
}
# Every patch of the series builds (one full build in a second build
# directory, then one incremental build per patch; the last patch is the
# tree the kernel stage built): patches 1-23 of 28 took 81 minutes on
# 2026-11-27, at nice 19 beside a make check for half of it; a patch that
# touches a widely included header (sched, memcontrol, vmstat) costs about
# ten minutes.
# arm64 (issue 37; make check-arm64 runs these stages alone): the test
# configuration cross-built with LLVM (make kernel-arm64), KUnit on the
# 'virt' guest with the NUMA layout of x86_64's, the oops in a scope, and
# the guest suites on two nodes, with their own logs (build/logs/arm64);
# then the same with 64 KiB pages (ARM64_PAGES=64K, suffix -64K).
arm64_kbuild() { echo "$KBUILD-arm64$1"; }
kunit_arm64() {	# kunit_arm64 PAGES SUFFIX
	local kb
	kb=$(arm64_kbuild "$2")
	make -s -C "$repo" setup-arm64 kernel-arm64 ARM64_PAGES="$1" || return 1
	(cd "$TREE" && python3 tools/testing/kunit/kunit.py exec \
		--build_dir "$kb" --kunitconfig "$repo/build/arm64$2.kunitconfig" \
		--qemu_config "$OVERLAY/tests/qemu_configs/arm64_numa.py" \
		--timeout 1800) > "$logs/kunit-arm64$2.log" 2>&1
	local rc=$?
	cp "$kb/test.log" "$logs/kunit-arm64$2-kernel.log" 2>/dev/null
	grep -E 'Testing complete|FAILED|CRASHED' "$logs/kunit-arm64$2.log"
	grep -q 'Testing complete' "$logs/kunit-arm64$2.log" || rc=1
	return $rc
}
# The guest suites on arm64 run in their --quick form in check-full too,
# and of freetest only the parallel zap's cases (--only zap): the quick
# freetest did not finish in its boot's 40 minutes on the aarch64 guest
# (a serial munmap() of 2 GiB took 28 s there, beside a kernel build and
# before pauth-impdef=on, against 1.3 s on x86_64; doc/results.md).
guest_suite_arm64() {	# guest_suite_arm64 NAME SUFFIX [ARGS...]
	local name=$1 sfx=$2 tag=$1
	shift 2
	# freetest --only X: its own output file (freetest-zap, -selftests).
	[ "${1:-}" = --only ] && tag=$name-$2
	python3 "$repo/scripts/guest.py" "$name" --engines rust,padata --quick \
		--kbuild "$(arm64_kbuild "$sfx")" --logdir "$logs/arm64$sfx" --timeout 900 "$@" |
		tee "$logs/arm64$sfx-$tag.txt"
	return "${PIPESTATUS[0]}"
}
arm64_stages() {	# arm64_stages PAGES: 4K, or 64K with fewer suites
	local pages=$1 sfx= rc suite line kp kf
	[ "$pages" = 4K ] || sfx=-$pages
	stage "kunit-arm64$sfx" kunit_arm64 "$pages" "$sfx"; rc=$?
	count $rc
	kp=$(sed -n 's/.*Ran [0-9]* tests: passed: \([0-9]*\).*/\1/p' "$logs/kunit-arm64$sfx.log" | tail -n 1)
	kf=$(sed -n 's/.*Ran [0-9]* tests:.* failed: \([0-9]*\).*/\1/p' "$logs/kunit-arm64$sfx.log" | tail -n 1)
	passed=$((passed + ${kp:-0}))
	failed=$((failed + ${kf:-0}))
	[ $rc = 0 ] || return
	stage "scope-oops-arm64$sfx" scope_oops "$(arm64_kbuild "$sfx")" \
		"$repo/build/arm64$sfx.kunitconfig" \
		"$OVERLAY/tests/qemu_configs/arm64_numa.py" "scope-oops-arm64$sfx"
	count $?
	stage "oops-park-arm64$sfx" oops_park --kbuild "$(arm64_kbuild "$sfx")" \
		--timeout 1800
	count $?
	for suite in boottest hugetlbtest; do
		stage "$suite-arm64$sfx" guest_suite_arm64 "$suite" "$sfx"; count $?
		line=$(grep -o "$suite: [0-9]* passed, [0-9]* failed" "$logs/arm64$sfx-$suite.txt")
		passed=$((passed + $(echo "$line" | awk '{print $2+0}')))
		failed=$((failed + $(echo "$line" | awk '{print $4+0}')))
	done
	# The parallel zap's own cases (with 64 KiB pages a block is 512 MiB):
	# one boot of 863 s on 4K beside a kernel build, so 40 minutes, not
	# the 15 of the other suites' boots.
	stage "freetest-zap-arm64$sfx" guest_suite_arm64 freetest "$sfx" --only zap \
		--timeout 2400
	count $?
	# The upstream mm selftests with the zap at its lowest threshold, in a
	# boot of their own (the quick freetest's boot does not fit).
	stage "freetest-selftests-arm64$sfx" guest_suite_arm64 freetest "$sfx" \
		--only selftests --timeout 2400
	count $?
}
if [ "$CHECK_FULL" = 1 ]; then
	arm64_stages 4K
	arm64_stages 64K
	stage norust norust; count $?
	stage kernel-modversions make -s -C "$repo" kernel-modversions; rc=$?
	count $rc
	# Its boot with the Rust sample loaded as a module (make
	# boottest-modversions, without building again), checks counted.
	if [ $rc = 0 ]; then
		stage boottest-modversions modversions_boot; count $?
		line=$(grep -o "boottest: [0-9]* passed, [0-9]* failed" \
			"$logs/boottest-modversions.txt")
		passed=$((passed + $(echo "$line" | awk '{print $2+0}')))
		failed=$((failed + $(echo "$line" | awk '{print $4+0}')))
	fi
	stage series-build make -s -C "$repo" series-build SKIP_LAST=1; count $?
fi
finish
