#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# make kconfig-optin: kernel::mtjob is opt-in (CONFIG_RUST_MTJOB, issue 47).
# The test configuration with Rust kept and every user of kernel::mtjob off
# must have RUST_MTJOB off, and then nothing that uses kernel::mtjob may be
# built: every object kbuild makes from a .rs file naming kernel::mtjob (or
# crate::mtjob outside rust/kernel/mtjob/) must hang off a symbol that is off
# there.  Kconfig and Makefiles only: seconds.  The build of such a kernel is
# the mtjob-rust-n entry of make configs (check-full).
# Usage: kconfig-optin.sh TREE KBUILD OUT LLVM
set -euo pipefail
tree=$1 kbuild=$2 out=$3 llvm=$4
users="MTJOB_RUST SAMPLE_RUST_MTJOB RUST_MTJOB_KUNIT_TEST"
mkdir -p "$out"
cp "$kbuild/.config" "$out/.config"
args=(-d KUNIT_ALL_TESTS)
for u in $users; do args+=(-d "$u"); done
"$tree/scripts/config" --file "$out/.config" "${args[@]}"
make -s -C "$tree" O="$out" LLVM="$llvm" olddefconfig
on() { grep -q "^CONFIG_$1=[ym]" "$out/.config"; }
on RUST || { echo "kconfig-optin: RUST is off ($out/.config)"; exit 1; }
for s in RUST_MTJOB $users; do
	if on "$s"; then
		echo "kconfig-optin: with no user of kernel::mtjob, $s is still on ($out/.config)"
		exit 1
	fi
done
# The objects of .rs files that use kernel::mtjob, and the symbol each hangs
# off in its directory's Makefile ("obj-$(CONFIG_X) += name.o").
n=0
while read -r f; do
	d=${f%/*} o=$(basename "$f" .rs).o
	sym=$(sed -n "s/^obj-\$(CONFIG_\([A-Z0-9_]*\))[[:space:]]*+=.*[[:space:]]$o\([[:space:]].*\)\{0,1\}$/\1/p" \
		"$tree/$d/Makefile" | head -n 1)
	if [ -z "$sym" ]; then
		echo "kconfig-optin: $f uses kernel::mtjob, but $d/Makefile builds no $o under a CONFIG_ symbol"
		exit 1
	fi
	if on "$sym"; then
		echo "kconfig-optin: $f uses kernel::mtjob and is built with $sym, which is on without RUST_MTJOB"
		exit 1
	fi
	on_test=no
	grep -q "^CONFIG_$sym=[ym]" "$kbuild/.config" && on_test=yes
	echo "kconfig-optin: $f ($o, CONFIG_$sym: off here, on in the test kernel: $on_test)"
	n=$((n + 1))
done < <(cd "$tree" && grep -rlE '\b(kernel|crate)::mtjob\b' --include='*.rs' \
	kernel mm samples drivers lib 2>/dev/null | sort)
[ "$n" -gt 0 ] || { echo "kconfig-optin: found no user of kernel::mtjob to check"; exit 1; }
# The way back: the Rust engine of mtjob_run() selects it.
"$tree/scripts/config" --file "$out/.config" -e MTJOB_RUST
make -s -C "$tree" O="$out" LLVM="$llvm" olddefconfig
on RUST_MTJOB || { echo "kconfig-optin: MTJOB_RUST does not select RUST_MTJOB"; exit 1; }
echo "kconfig-optin: with Rust on and no user of kernel::mtjob, RUST_MTJOB is off and none of the $n objects using it is built; MTJOB_RUST selects it ($out/.config)"
