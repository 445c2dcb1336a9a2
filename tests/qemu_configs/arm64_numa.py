# SPDX-License-Identifier: GPL-2.0
# kunit.py QEMU configuration: arm64 'virt' with GICv3, TCG, the NUMA guest
# of numa_layout.py, which QEMU describes in the device tree (numa-node-id
# on the memory and cpu nodes, a distance-map): arm64 reads it without
# ACPI.  kunit.py's '-accel kvm -accel hvf -accel tcg' fall through to TCG
# on an x86_64 host (no KVM for aarch64 there), so no wrapper is needed as
# for x86_64.
import os
import sys

from ..qemu_config import QemuArchParams

# kunit.py loads this file as a module of its own qemu_configs package:
# numa_layout is found by path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from numa_layout import NUMA_PARAMS  # noqa: E402

QEMU_ARCH = QemuArchParams(linux_arch='arm64',
			   kconfig='''
CONFIG_SERIAL_AMBA_PL011=y
CONFIG_SERIAL_AMBA_PL011_CONSOLE=y''',
			   qemu_arch='aarch64',
			   kernel_path='arch/arm64/boot/Image.gz',
			   kernel_command_line='console=ttyAMA0',
			   # pauth-impdef=on: a cheap pointer-authentication algorithm
			   # instead of QARMA5, which TCG emulates slowly.
			   extra_qemu_params=['-machine', 'virt,gic-version=3',
					      '-cpu', 'max,pauth-impdef=on']
			   + NUMA_PARAMS)
