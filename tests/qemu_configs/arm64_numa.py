# SPDX-License-Identifier: GPL-2.0
# kunit.py QEMU configuration: arm64 'virt' with GICv3, TCG, 4 vCPUs on
# 3 NUMA nodes, the layout of x86_64_numa.py: node 0 has CPU 0, node 1
# CPUs 1-3, node 2 memory and no CPU, nearer to node 1 (15) than to node 0
# (30).  QEMU describes the nodes in the device tree (numa-node-id on the
# memory and cpu nodes, a distance-map), which arm64 reads without ACPI.
# kunit.py passes '-m 1024'; the three memory backends add up to that, and
# its '-accel kvm -accel hvf -accel tcg' fall through to TCG on an x86_64
# host (no KVM for aarch64 there), so no wrapper is needed as for x86_64.
from ..qemu_config import QemuArchParams

QEMU_ARCH = QemuArchParams(linux_arch='arm64',
			   kconfig='''
CONFIG_SERIAL_AMBA_PL011=y
CONFIG_SERIAL_AMBA_PL011_CONSOLE=y''',
			   qemu_arch='aarch64',
			   kernel_path='arch/arm64/boot/Image.gz',
			   kernel_command_line='console=ttyAMA0',
			   extra_qemu_params=[
				   '-machine', 'virt,gic-version=3', '-cpu', 'max',
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
