# SPDX-License-Identifier: GPL-2.0
# kunit.py QEMU configuration: x86_64, 4 vCPUs on 2 NUMA nodes, TCG.
# kunit.py passes '-m 1024'; the two memory backends add up to that.
from ..qemu_config import QemuArchParams

QEMU_ARCH = QemuArchParams(linux_arch='x86_64',
			   kconfig='''
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y''',
			   qemu_arch='x86_64',
			   kernel_path='arch/x86/boot/bzImage',
			   kernel_command_line='console=ttyS0',
			   extra_qemu_params=[
				   '-accel', 'tcg,thread=multi', '-cpu', 'max',
				   '-smp', '4,sockets=2',
				   '-object', 'memory-backend-ram,id=m0,size=512M',
				   '-object', 'memory-backend-ram,id=m1,size=512M',
				   '-numa', 'node,nodeid=0,cpus=0-1,memdev=m0',
				   '-numa', 'node,nodeid=1,cpus=2-3,memdev=m1',
			   ])
