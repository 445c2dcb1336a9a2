// SPDX-License-Identifier: GPL-2.0

#include <linux/cpumask.h>
#include <linux/nodemask.h>
#include <linux/topology.h>

int rust_helper_numa_node_id(void)
{
	return numa_node_id();
}

bool rust_helper_node_state(int node, enum node_states state)
{
	return node_state(node, state);
}

unsigned int rust_helper___next_node_in(int node, const nodemask_t *srcp)
{
	return __next_node_in(node, srcp);
}

unsigned int rust_helper_nr_online_cpus_node(int node)
{
	return cpumask_weight_and(cpumask_of_node(node), cpu_online_mask);
}

bool rust_helper_node_has_current_cpu(int node)
{
	return cpumask_test_cpu(raw_smp_processor_id(), cpumask_of_node(node));
}

unsigned int rust_helper_num_online_cpus(void)
{
	return num_online_cpus();
}
