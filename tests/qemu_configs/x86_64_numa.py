# SPDX-License-Identifier: GPL-2.0
# kunit.py QEMU configuration: x86_64, TCG, 4 vCPUs on 3 NUMA nodes with
# uneven CPUs: node 0 has CPU 0, node 1 CPUs 1-3, node 2 memory and no CPU.
# Distances (ACPI SLIT): node 2 is nearer to node 1 (15) than to node 0 (30),
# so its nearest node with CPUs is not the first one (mtjob_test_cpuless_node).
# One socket per CPU: CPUs of one socket share a cache and must share a node.
# kunit.py passes '-m 1024'; the three memory backends add up to that.
import os

from ..qemu_config import QemuArchParams

# kunit.py runs 'qemu-system-' + qemu_arch: bin/qemu-system-x86_64-tcg drops
# the accelerators kunit.py puts before ours (see that script).
os.environ['PATH'] = (os.path.join(os.path.dirname(os.path.abspath(__file__)), 'bin')
		      + os.pathsep + os.environ.get('PATH', ''))

QEMU_ARCH = QemuArchParams(linux_arch='x86_64',
			   kconfig='''
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y''',
			   qemu_arch='x86_64-tcg',
			   kernel_path='arch/x86/boot/bzImage',
			   kernel_command_line='console=ttyS0',
			   extra_qemu_params=[
				   '-accel', 'tcg,thread=multi', '-cpu', 'max',
				   '-smp', '4,sockets=4',
				   '-object', 'memory-backend-ram,id=m0,size=384M',
				   '-object', 'memory-backend-ram,id=m1,size=384M',
				   '-object', 'memory-backend-ram,id=m2,size=256M',
				   '-numa', 'node,nodeid=0,cpus=0,memdev=m0',
				   '-numa', 'node,nodeid=1,cpus=1-3,memdev=m1',
				   '-numa', 'node,nodeid=2,memdev=m2',
				   '-numa', 'dist,src=0,dst=1,val=20',
				   '-numa', 'dist,src=0,dst=2,val=30',
				   '-numa', 'dist,src=1,dst=2,val=15',
			   ])
