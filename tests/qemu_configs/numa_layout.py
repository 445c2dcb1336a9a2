# SPDX-License-Identifier: GPL-2.0
# The NUMA guest of the project's kunit.py configurations (x86_64_numa.py,
# arm64_numa.py): 4 vCPUs on 3 nodes with uneven CPUs: node 0 has CPU 0,
# node 1 CPUs 1-3, node 2 memory and no CPU.  Distances: node 2 is nearer
# to node 1 (15) than to node 0 (30), so its nearest node with CPUs is not
# the first one (mtjob_test_cpuless_node).  One socket per CPU: CPUs of one
# socket share a cache and must share a node.  kunit.py passes '-m 1024';
# the three memory backends add up to that.
NUMA_PARAMS = [
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
]
