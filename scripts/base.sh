#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Create the base tree TREE for kernel VERSION (7.3): Debian's
# linux-source-VERSION (or KERNEL_SRC), as a git repository whose 'base'
# branch is the unmodified source, so that 'git -C TREE diff base' shows
# exactly the project's change.
set -euo pipefail
tree=$1
version=${2:-7.3}
src=${KERNEL_SRC:-}
pkg=linux-source-$version
tarball=/usr/src/$pkg.tar.xz

if git -C "$tree" rev-parse --verify -q base >/dev/null 2>&1; then
	exit 0
fi
rm -rf "$tree" "$tree.tmp"
mkdir -p "$tree.tmp"
if [ -n "$src" ]; then
	[ -f "$src/Makefile" ] && [ -d "$src/mm" ] ||
		{ echo "base: KERNEL_SRC=$src is not a kernel tree" >&2; exit 1; }
	v=$(make -s -C "$src" kernelversion 2>/dev/null || true)
	case "$v" in "$version"|"$version".*) ;;
	*) echo "base: KERNEL_SRC is $v, not $version; patches may not apply" >&2 ;;
	esac
	echo "base: copying $src ($v)"
	tar -C "$src" --exclude=.git -cf - . | tar -C "$tree.tmp" -xf -
	desc="base: $src ($v)"
else
	[ -f "$tarball" ] ||
		{ echo "base: $tarball is missing: 'make setup' installs $pkg, or set KERNEL_SRC" >&2; exit 1; }
	echo "base: unpacking $tarball"
	tar -C "$tree.tmp" --strip-components=1 -xf "$tarball"
	desc="base: Debian $pkg $(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || echo '?')"
fi
cd "$tree.tmp"
git init -q -b base .
# Debian's top-level .gitignore ignores everything: add with -f.
git add -f -A .
git -c user.name=mtjob -c user.email=mtjob@localhost commit -q -m "$desc"
cd - >/dev/null
mv "$tree.tmp" "$tree"
echo "base: $tree ready ($desc)"
