// SPDX-License-Identifier: GPL-2.0

#include <linux/bottom_half.h>
#include <linux/lockdep.h>

__rust_helper void rust_helper_lock_map_acquire_release(struct lockdep_map *map,
							unsigned long ip)
{
	lock_acquire_exclusive(map, 0, 0, NULL, ip);
	lock_release(map, ip);
}

__rust_helper void
rust_helper_lock_map_acquire_release_bh(struct lockdep_map *map,
					unsigned long ip)
{
	local_bh_disable();
	lock_acquire_exclusive(map, 0, 0, NULL, ip);
	lock_release(map, ip);
	local_bh_enable();
}
