# SPDX-License-Identifier: GPL-2.0
# kunit.py QEMU configuration: x86_64, TCG, the NUMA guest of
# numa_layout.py (ACPI SRAT and SLIT).
import os
import sys

from ..qemu_config import QemuArchParams

# kunit.py loads this file as a module of its own qemu_configs package:
# numa_layout is found by path.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _here)
from numa_layout import NUMA_PARAMS  # noqa: E402

# kunit.py runs 'qemu-system-' + qemu_arch: bin/qemu-system-x86_64-tcg drops
# the accelerators kunit.py puts before ours (see that script).
os.environ['PATH'] = os.path.join(_here, 'bin') + os.pathsep + os.environ.get('PATH', '')

QEMU_ARCH = QemuArchParams(linux_arch='x86_64',
			   kconfig='''
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y''',
			   qemu_arch='x86_64-tcg',
			   kernel_path='arch/x86/boot/bzImage',
			   kernel_command_line='console=ttyS0',
			   extra_qemu_params=['-accel', 'tcg,thread=multi', '-cpu', 'max']
			   + NUMA_PARAMS)
