// SPDX-License-Identifier: GPL-2.0

#include <linux/nodemask.h>
#include <linux/topology.h>

#ifndef CONFIG_NUMA
__rust_helper int rust_helper_numa_nearest_node(int node, unsigned int state)
{
	return numa_nearest_node(node, state);
}
#endif

__rust_helper int rust_helper_numa_node_id(void)
{
	return numa_node_id();
}

__rust_helper bool rust_helper_node_state(int node, enum node_states state)
{
	return node_state(node, state);
}

__rust_helper unsigned int rust_helper___next_node_in(int node,
						      const nodemask_t *srcp)
{
	return __next_node_in(node, srcp);
}

__rust_helper const struct cpumask *rust_helper_cpumask_of_node(int node)
{
	return cpumask_of_node(node);
}
