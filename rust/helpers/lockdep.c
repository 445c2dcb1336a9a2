// SPDX-License-Identifier: GPL-2.0

#include <linux/lockdep.h>

void rust_helper_lockdep_init_map(struct lockdep_map *map, const char *name,
				  struct lock_class_key *key, int subclass)
{
	lockdep_init_map(map, name, key, subclass);
}

void rust_helper_lock_map_acquire(struct lockdep_map *map)
{
	lock_map_acquire(map);
}

void rust_helper_lock_map_release(struct lockdep_map *map)
{
	lock_map_release(map);
}
