#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make vmtests: the mm selftests of a category as a reviewer runs them.
# Builds the category's programs from the applied tree with upstream's
# selftests Makefile, boots the built kernel with virtme-ng (vng: the
# host's root over 9p, TCG) on a two-node guest, and runs upstream's
# run_vmtests.sh -t CATEGORY in it as root.  Passes when every test of the
# category ran and passed: a program that skipped a test (its kselftest
# totals, as a harness program that skips some of its tests still exits
# 0) or that run_vmtests.sh skipped (exit 4) fails this run, as would a
# kernel without the feature.
#
# Usage: scripts/vmtests.sh TREE KBUILD OUTDIR [CATEGORY [PROGRAM...]]
#   CATEGORY defaults to parallel_teardown, PROGRAMs to the category's name
#   (the run_vmtests.sh category and its programs, as that script lists
#   them).  Only compiled programs of the selftests Makefile are built
#   and staged beside run_vmtests.sh, not the scripts some categories run
#   (hmm's test_hmm.sh, say), and each must print kselftest totals.
#   VMTESTS_CPUS (2: a CPU a node; more go to node 1; 1 leaves node 1
#   without CPUs, and parallel_teardown then skips, so fails) and
#   VMTESTS_MEM (4, GiB: half on each node) size the guest;
#   VMTESTS_APPEND adds kernel parameters; VMTESTS_TIMEOUT (1800 s) bounds
#   the guest.
set -euo pipefail

die() { echo "vmtests: $*" >&2; exit 1; }

[ $# -ge 3 ] || die "usage: $0 TREE KBUILD OUTDIR [CATEGORY [PROGRAM...]]"
tree=$(realpath "$1") || die "no tree $1"
kbuild=$(realpath "$2") || die "no build directory $2"
out=$3
shift 3
category=${1:-parallel_teardown}
[ $# -gt 0 ] && shift
progs=("$@")
[ ${#progs[@]} -gt 0 ] || progs=("$category")
cpus=${VMTESTS_CPUS:-2} mem=${VMTESTS_MEM:-4}

command -v vng > /dev/null ||
	die "vng is missing: make setup installs virtme-ng (pip install virtme-ng)"
# Without udev in the guest, vng's init finds no virtio-serial port for
# the command's output and exit code (it runs the host's udevd).
[ -x /lib/systemd/systemd-udevd ] || [ -x /usr/lib/systemd/systemd-udevd ] ||
	die "udevd is missing, which vng's guest runs: make setup installs udev"
src=$tree/tools/testing/selftests/mm
[ -f "$src/run_vmtests.sh" ] || die "$src/run_vmtests.sh is missing: make apply"
image=$kbuild/arch/x86/boot/bzImage
[ -f "$image" ] || die "$image is missing: make kernel"
for c in VIRTIO_PCI NET_9P_VIRTIO 9P_FS VIRTIO_CONSOLE OVERLAY_FS; do
	grep -q "^CONFIG_$c=y" "$kbuild/.config" ||
		die "$kbuild has no CONFIG_$c=y, which vng needs" \
			"(tests/mtjob.kunitconfig)"
done
grep -q "CATEGORY=\"$category\"" "$src/run_vmtests.sh" ||
	die "run_vmtests.sh has no category $category"

# The programs, against the tree's UAPI headers, in OUTDIR with a copy of
# run_vmtests.sh: the layout 'make -C tools/testing/selftests install'
# gives, for the programs this category runs.
mkdir -p "$out/mm"
out=$(realpath "$out")
make -s -C "$tree" O="$out/hdr" headers ||
	die "make headers failed"
make -s -C "$src" OUTPUT="$out/mm" KHDR_INCLUDES="-isystem $out/hdr/usr/include" \
	"${progs[@]/#/$out/mm/}" || die "building ${progs[*]} failed"
install -m 755 "$src/run_vmtests.sh" "$out/mm/run_vmtests.sh"

# Two nodes (numa_layout.py's first two), no KUnit at boot; MTTCG as in
# every other guest here.  The tests start once udev has settled: its
# boot-time workers on the other CPU would have the policy refuse helpers
# as busy, which a test reports as a skip once its tries are used up.
half=$((mem * 1024 / 2))
numa=()
for ((n = 0; n < cpus; n++)); do
	[ $n -lt 2 ] || break
	last=$(( n == 1 || cpus == 1 ? cpus - 1 : n ))
	numa+=(--numa "${half}M,cpus=$n-$last")
done
[ $cpus -ge 2 ] || numa=(--numa "${half}M,cpus=0" --numa "${half}M")
log=$out/vmtests-$category.log
cmd=$(printf 'udevadm settle; cd %q && ./run_vmtests.sh -t %q; echo VMTESTS rc=$?' \
	"$out/mm" "$category")
start=$(date +%s)
set +e
timeout -k 30 "${VMTESTS_TIMEOUT:-1800}" \
	vng --run "$image" --disable-kvm --force-9p --user root --cpus "$cpus" \
	--memory "$((half * 2))M" "${numa[@]}" \
	--qemu-opts="-accel tcg,thread=multi" \
	--append "kunit.enable=0 ${VMTESTS_APPEND:-}" \
	--exec "$cmd" 2>&1 | tee "$log"
vrc=${PIPESTATUS[0]}
set -e
[ "$vrc" != 124 ] && [ "$vrc" != 137 ] ||
	die "the guest did not finish within ${VMTESTS_TIMEOUT:-1800} s: see $log"
secs=$(( $(date +%s) - start ))
rc=$(sed -n 's/^VMTESTS rc=\([0-9]*\)\r*$/\1/p' "$log" | tail -n1)
summary=$(grep -o 'SUMMARY: PASS=[0-9]* SKIP=[0-9]* FAIL=[0-9]*' "$log" |
	tail -n1 || true)
echo "vmtests: run_vmtests.sh -t $category: ${summary:-no summary}, rc=${rc:-none}, ${secs} s (log $log)"
case $rc in
0) ;;
4) die "run_vmtests.sh -t $category skipped a test (rc=4): see $log" ;;
'') die "the guest did not finish run_vmtests.sh: see $log" ;;
*) die "run_vmtests.sh -t $category failed (rc=$rc): see $log" ;;
esac
# Each program's own kselftest totals: none skipped, none failed.
if grep -E '^# # Totals: pass:[0-9]+ fail:[0-9]+ xfail:[0-9]+ xpass:[0-9]+ skip:[0-9]+' "$log" |
	grep -vE 'fail:0 xfail:0 xpass:0 skip:0' > /dev/null; then
	die "a program of $category failed or skipped a test: see $log"
fi
grep -qE '^# # Totals: pass:[1-9]' "$log" ||
	die "no kselftest totals with a passed test in $log"
