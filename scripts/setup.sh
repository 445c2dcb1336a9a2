#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install what building, booting and testing need, idempotently, on Debian 12
# as root; print the versions found.  With --check, install nothing and only
# say what is missing (exit 1 if anything is).
set -euo pipefail

BINDGEN_VERSION=0.73.2
LLVM_SUFFIX=-16
APT_PKGS=(linux-source-6.12 clang-16 lld-16 llvm-16 libclang-16-dev
	qemu-system-x86 bc flex bison libelf-dev libssl-dev cpio make gcc
	libc6-dev busybox-static python3 python3-ply python3-git git xz-utils)
# For the benchmarks' plots only: installed when setup runs as root, never
# reported missing (make check does not plot).
OPTIONAL_PKGS=(python3-matplotlib)
check_only=0
[ "${1:-}" = "--check" ] && check_only=1

export PATH="$HOME/.cargo/bin:$PATH"
missing=()

need_pkgs=()
for p in "${APT_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
	if [ $check_only = 1 ]; then
		missing+=("Debian packages: ${need_pkgs[*]} (apt-get install ${need_pkgs[*]})")
	elif [ "$(id -u)" != 0 ]; then
		echo "setup: not root; as root run: apt-get update && apt-get install -y ${need_pkgs[*]}" >&2
		exit 1
	else
		echo "setup: installing ${need_pkgs[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
	fi
fi
opt_pkgs=()
for p in "${OPTIONAL_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		opt_pkgs+=("$p")
done
if [ ${#opt_pkgs[@]} -gt 0 ] && [ $check_only = 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "setup: installing ${opt_pkgs[*]} (benchmark plots)"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${opt_pkgs[@]}" >/dev/null ||
			echo "setup: ${opt_pkgs[*]} not installed: benchmarks print tables, no plots" >&2
	else
		echo "setup: for benchmark plots, as root: apt-get install ${opt_pkgs[*]}" >&2
	fi
fi

if ! command -v rustc >/dev/null || ! command -v cargo >/dev/null; then
	echo "setup: rustc/cargo not found: install Rust with rustup (https://rustup.rs)" >&2
	exit 1
fi
sysroot=$(rustc --print sysroot)
if [ ! -d "$sysroot/lib/rustlib/src/rust/library" ]; then
	if [ $check_only = 1 ]; then
		missing+=("rust-src for $(rustc --version) (rustup component add rust-src)")
	else
		echo "setup: adding rust-src"
		rustup component add rust-src
	fi
fi
for c in rustfmt clippy; do
	if ! rustup component list --installed 2>/dev/null | grep -q "^$c"; then
		if [ $check_only = 1 ]; then
			missing+=("$c (rustup component add $c)")
		else
			rustup component add "$c"
		fi
	fi
done
if [ "$(bindgen --version 2>/dev/null | awk '{print $2}')" != "$BINDGEN_VERSION" ]; then
	if [ $check_only = 1 ]; then
		missing+=("bindgen-cli $BINDGEN_VERSION (cargo install --locked bindgen-cli --version $BINDGEN_VERSION)")
	else
		echo "setup: installing bindgen-cli $BINDGEN_VERSION (about 2 minutes)"
		cargo install --locked --quiet bindgen-cli --version "$BINDGEN_VERSION"
	fi
fi

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: missing:" >&2
	printf '  - %s\n' "${missing[@]}" >&2
	exit 1
fi

if [ $check_only = 0 ]; then
	echo "setup: versions found:"
	echo "  $(rustc --version)"
	echo "  $(bindgen --version)"
	echo "  $(clang$LLVM_SUFFIX --version | head -n1)"
	echo "  $(qemu-system-x86_64 --version | head -n1)"
	echo "  linux-source $(dpkg-query -W -f='${Version}' linux-source-6.12)"
	echo "  $(busybox 2>&1 | head -n1)"
fi
