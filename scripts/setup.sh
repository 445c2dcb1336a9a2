#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Install what building, booting and testing need, idempotently, on Debian 12
# as root; print the versions found.  With --check, install nothing and only
# say what is missing (exit 1 if anything is).
#
# The kernel source is Debian's linux-source-7.3 from trixie-backports
# (architecture 'all', so it installs on bookworm); LLVM is bookworm's
# clang-19: 7.3 needs LLVM >= 17.0.1 (scripts/min-tool-version.sh).  The
# trixie-backports source is derived from this machine's own Debian source
# (same archive, same keyring) and pinned so that only linux-source-7.3
# comes from it.  KERNEL_SRC= (a 7.3 tree) replaces the package.
set -euo pipefail

VERSION=7.3
BINDGEN_VERSION=0.73.2
LLVM_SUFFIX=-19
SOURCE_PKG=linux-source-$VERSION
APT_PKGS=(clang$LLVM_SUFFIX lld$LLVM_SUFFIX llvm$LLVM_SUFFIX libclang$LLVM_SUFFIX-dev
	qemu-system-x86 bc flex bison libelf-dev libssl-dev cpio make gcc
	libc6-dev busybox-static python3 python3-ply python3-git git xz-utils
	udev)
# udev: not for this machine but for vng's guests (make vmtests, in make
# check), which boot this machine's root and run its udevd, without which
# vng's init finds no virtio-serial port for the command's output.
# virtme-ng from PyPI (vng: boots the built kernel with this machine's root
# over 9p), at the version make vmtests was written against.
VIRTME_NG_VERSION=1.42
# For the benchmarks' plots, check-full's MODVERSIONS kernel (gendwarfksyms
# needs libdw), check-full's arm64 guests (make check-arm64:
# qemu-system-aarch64) and the configuration matrix (make configs: sparse
# on the series' C files, coccicheck's spatch, ccache across entries) only:
# installed when setup runs as root, never reported missing (make check
# does without them, and its matrix entries say what they did not run).
OPTIONAL_PKGS=(python3-matplotlib libdw-dev qemu-system-arm sparse coccinelle ccache)
check_only=0
[ "${1:-}" = "--check" ] && check_only=1

# --arm64: what the arm64 guests need besides the above (make setup-arm64,
# run by make check-arm64): QEMU's aarch64 system emulator, a cross
# compiler and C library for the guest's static test programs, and a static
# busybox for arm64, unpacked from Debian's busybox-static:arm64 (apt's
# multiarch, so that the package comes from this machine's own archive).
ARM64_PKGS=(qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross curl)
ARM64_BUSYBOX=/usr/local/lib/mt-job/arm64/busybox
# The plugin API header of the installed QEMU, for tests/qemu_plugins/tlbi.c
# (make bench-free-arm64 counts TLBIs with it; nothing else needs it):
# Debian ships no QEMU development package, so it comes from the upstream
# tarball of Debian 12's QEMU source (7.2+dfsg, whatever the Debian
# revision), checked against the SHA-256 pinned here (that of the tarball
# the signed .dsc of 1:7.2+dfsg-7+deb12u18 lists).
QEMU_PLUGIN_H=/usr/local/lib/mt-job/qemu-plugin/qemu-plugin.h
QEMU_ORIG=qemu_7.2+dfsg.orig.tar.xz
QEMU_ORIG_SHA256=91aca71520040edc40b8d437aa3004dae614f58e286cf653ee8996c07af2962f
DEBIAN_MIRROR=${DEBIAN_MIRROR:-https://deb.debian.org/debian}
fetch_qemu_plugin_h() {
	local ver tmp rc
	ver=$(dpkg-query -W -f='${Version}' qemu-system-arm 2>/dev/null) || return 1
	case $ver in
	1:7.2+dfsg-*) ;;
	*) echo "setup: qemu-system-arm $ver is not Debian 12's 7.2: no pinned source for its qemu-plugin.h" >&2
	   return 1 ;;
	esac
	command -v curl >/dev/null || { echo "setup: curl is missing (apt-get install curl)" >&2; return 1; }
	tmp=$(mktemp -d)
	(
		cd "$tmp" &&
		curl -fsS --max-time 600 -o $QEMU_ORIG "$DEBIAN_MIRROR/pool/main/q/qemu/$QEMU_ORIG" &&
		echo "$QEMU_ORIG_SHA256  $QEMU_ORIG" | sha256sum -c --quiet &&
		tar -xJf $QEMU_ORIG --wildcards --strip-components=3 '*/include/qemu/qemu-plugin.h' &&
		install -D -m 644 qemu-plugin.h $QEMU_PLUGIN_H
	)
	rc=$?
	rm -rf "$tmp"
	return $rc
}
if [ "${1:-}" = "--arm64" ]; then
	need=()
	for p in "${ARM64_PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			need+=("$p")
	done
	if [ ${#need[@]} -eq 0 ] && [ -x $ARM64_BUSYBOX ]; then
		echo "setup: arm64 guests: ready ($(qemu-system-aarch64 --version | head -n1))"
		if [ ! -f $QEMU_PLUGIN_H ] && [ "$(id -u)" != 0 ]; then
			echo "setup: $QEMU_PLUGIN_H is missing (make bench-free-arm64 only): run make setup-arm64 as root" >&2
		elif [ ! -f $QEMU_PLUGIN_H ]; then
			fetch_qemu_plugin_h && echo "setup: $QEMU_PLUGIN_H from Debian's QEMU source" ||
				echo "setup: could not fetch qemu-plugin.h from $DEBIAN_MIRROR (set DEBIAN_MIRROR): make bench-free-arm64 counts no TLBIs" >&2
		fi
		exit 0
	fi
	[ "$(id -u)" = 0 ] || {
		echo "setup: not root; as root run: make setup-arm64 (${need[*]} and busybox-static:arm64)" >&2
		exit 1
	}
	if [ ${#need[@]} -gt 0 ]; then
		echo "setup: installing ${need[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	fi
	if [ ! -x $ARM64_BUSYBOX ]; then
		dpkg --print-foreign-architectures | grep -qx arm64 || {
			dpkg --add-architecture arm64
			apt-get update -qq
		}
		tmp=$(mktemp -d)
		chown _apt "$tmp" 2>/dev/null || chmod 755 "$tmp"
		(cd "$tmp" && apt-get download -qq busybox-static:arm64) &&
			dpkg-deb -x "$tmp"/busybox-static_*_arm64.deb "$tmp/root" &&
			install -D -m 755 "$tmp/root/bin/busybox" $ARM64_BUSYBOX
		rc=$?
		rm -rf "$tmp"
		[ $rc = 0 ] || { echo "setup: could not unpack busybox-static:arm64" >&2; exit 1; }
		echo "setup: $ARM64_BUSYBOX from busybox-static:arm64"
	fi
	if [ ! -f $QEMU_PLUGIN_H ]; then
		if fetch_qemu_plugin_h; then
			echo "setup: $QEMU_PLUGIN_H from Debian's QEMU source"
		else
			echo "setup: could not fetch qemu-plugin.h from $DEBIAN_MIRROR (set DEBIAN_MIRROR): make bench-free-arm64 counts no TLBIs" >&2
		fi
	fi
	exit 0
fi

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
# linux-source-7.3 from trixie-backports.  Not with 'apt-get install -t
# trixie-backports': a target release outranks the pin below, and it took
# linux-libc-dev and libdebuginfod-common from trixie-backports too (seen
# here); 'PKG/SUITE' takes only PKG from that suite, its dependencies
# (binutils, xz-utils) from bookworm.
BPO_SOURCES=/etc/apt/sources.list.d/mt-job-trixie-backports.sources
BPO_PIN=/etc/apt/preferences.d/mt-job-trixie-backports
bpo_source() {	# print a deb822 stanza for trixie-backports, or fail
	local f uri key
	# The first stanza of this machine's Debian sources that lists bookworm
	# (one-line sources.list entries are read too).
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && [ "$f" != "$BPO_SOURCES" ] || continue
		read -r uri key < <(awk 'BEGIN { RS = ""; FS = "\n" }
			/Suites:[^\n]*[[:space:]]bookworm([[:space:]]|$)/ && /URIs:/ {
				u = ""; k = ""
				for (i = 1; i <= NF; i++) {
					if ($i ~ /^URIs:/) { u = $i; sub(/^URIs:[[:space:]]*/, "", u); sub(/[[:space:]].*/, "", u) }
					if ($i ~ /^Signed-By:/) { k = $i; sub(/^Signed-By:[[:space:]]*/, "", k) }
				}
				if (u ~ /\/debian\/?$/) { print u, k; exit }
			}' "$f") || true
		[ -n "${uri:-}" ] && break
	done
	if [ -z "${uri:-}" ] && [ -f /etc/apt/sources.list ]; then
		read -r uri < <(awk '$1 == "deb" && $0 ~ / bookworm / {
			for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\// && $i ~ /\/debian\/?$/) { print $i; exit } }' \
			/etc/apt/sources.list) || true
	fi
	[ -n "${uri:-}" ] || return 1
	[ -n "${key:-}" ] || key=/usr/share/keyrings/debian-archive-keyring.gpg
	printf 'Types: deb\nURIs: %s\nSuites: trixie-backports\nComponents: main\nSigned-By: %s\n' "$uri" "$key"
}
if [ -z "${KERNEL_SRC:-}" ] && ! dpkg-query -W -f='${Status}' "$SOURCE_PKG" 2>/dev/null | grep -q "ok installed"; then
	if [ $check_only = 1 ]; then
		missing+=("$SOURCE_PKG from trixie-backports ('make setup' as root)")
	elif [ "$(id -u)" != 0 ]; then
		echo "setup: not root; as root run 'make setup' to install $SOURCE_PKG from trixie-backports" >&2
		exit 1
	else
		stanza=$(bpo_source) ||
			{ echo "setup: no Debian bookworm source in /etc/apt to derive trixie-backports from; install $SOURCE_PKG by hand or set KERNEL_SRC" >&2; exit 1; }
		printf '%s\n' "$stanza" > "$BPO_SOURCES"
		printf 'Package: *\nPin: release n=trixie-backports\nPin-Priority: -1\n\nPackage: %s\nPin: release n=trixie-backports\nPin-Priority: 500\n' \
			"$SOURCE_PKG" > "$BPO_PIN"
		echo "setup: installing $SOURCE_PKG from trixie-backports ($BPO_SOURCES, pinned by $BPO_PIN)"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			"$SOURCE_PKG/trixie-backports" >/dev/null ||
			{ echo "setup: could not install $SOURCE_PKG from trixie-backports" >&2; exit 1; }
	fi
fi
opt_pkgs=()
for p in "${OPTIONAL_PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		opt_pkgs+=("$p")
done
if [ ${#opt_pkgs[@]} -gt 0 ] && [ $check_only = 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "setup: installing ${opt_pkgs[*]} (benchmark plots, MODVERSIONS kernel, arm64 guests, matrix checkers)"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${opt_pkgs[@]}" >/dev/null ||
			echo "setup: ${opt_pkgs[*]} not installed: benchmarks print tables, no plots; no kernel-modversions; make configs without sparse or coccicheck" >&2
	else
		echo "setup: for benchmark plots, kernel-modversions, arm64 guests and the matrix checkers, as root: apt-get install ${opt_pkgs[*]}" >&2
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

if [ "$(vng --version 2>/dev/null | awk '{print $2}')" != "$VIRTME_NG_VERSION" ]; then
	if [ $check_only = 1 ]; then
		missing+=("virtme-ng $VIRTME_NG_VERSION (python3 -m pip install virtme-ng==$VIRTME_NG_VERSION)")
	else
		echo "setup: installing virtme-ng $VIRTME_NG_VERSION (vng, for make vmtests)"
		python3 -m pip install --quiet --disable-pip-version-check \
			--root-user-action=ignore "virtme-ng==$VIRTME_NG_VERSION" ||
			echo "setup: could not install virtme-ng with python3 -m pip: make vmtests (a make check stage) cannot run" >&2
		# pyenv's python3 (CI's) puts vng on PATH through a shim.
		if command -v pyenv >/dev/null; then pyenv rehash; fi
		hash -r
		command -v vng >/dev/null ||
			echo "setup: vng is not on PATH: make vmtests cannot run" >&2
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
	echo "  $(vng --version)"
	if [ -n "${KERNEL_SRC:-}" ]; then
		echo "  kernel source: KERNEL_SRC=$KERNEL_SRC"
	else
		echo "  $SOURCE_PKG $(dpkg-query -W -f='${Version}' "$SOURCE_PKG")"
	fi
	echo "  $(busybox 2>&1 | head -n1)"
fi
