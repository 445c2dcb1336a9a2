// SPDX-License-Identifier: GPL-2.0

//! Lockdep maps of code that is not a lock.
//!
//! C code that waits for something running under a lock class of its own tells lockdep so with a
//! `struct lockdep_map` and `lock_map_acquire()`/`lock_map_release()`: `__flush_work()` acquires
//! and releases the map of the work item it waits for, which the worker holds while the item
//! runs, so that a caller holding a lock the item takes gets a report. [`LockdepMap`] is that map
//! for Rust.
//!
//! C header: [`include/linux/lockdep.h`](srctree/include/linux/lockdep.h)

use crate::{
    bindings,
    prelude::*,
    str::CStr,
    sync::LockClassKey,
    types::Opaque, //
};

/// A lockdep map that no lock owns: an instance of a lock class that code acquires to tell
/// lockdep what it waits for.
///
/// Without `CONFIG_LOCKDEP` it is empty and acquiring it does nothing.
///
/// # Invariants
///
/// With `CONFIG_LOCKDEP`, `map` was initialised by `lockdep_init_map_type()` with a name and a
/// key that live forever, and it does not move (the type is `!Unpin` and only made in place).
///
/// # Examples
///
/// ```
/// use kernel::static_lock_class;
/// use kernel::sync::lockdep::LockdepMap;
/// use pin_init::stack_pin_init;
///
/// fn wait_for_it(map: &LockdepMap) {
///     // As `lock_map_acquire(); lock_map_release();`: whatever the caller holds now comes
///     // before the class, for lockdep, which records this function as where.
///     map.acquire_release(wait_for_it as fn(&LockdepMap) as usize);
/// }
///
/// stack_pin_init!(let map = LockdepMap::new(c"doc_map", static_lock_class!()));
/// wait_for_it(&map);
/// ```
#[pin_data]
pub struct LockdepMap {
    #[pin]
    map: Opaque<bindings::lockdep_map>,
}

// SAFETY: Lockdep's functions may be called on one map from any thread, concurrently; they write
// the map only with `WRITE_ONCE()` (its `class_cache`), as for the `dep_map` of every C lock.
unsafe impl Send for LockdepMap {}

// SAFETY: As for `Send`: acquiring one map from several threads at once is what the C maps of
// locks and work items get too.
unsafe impl Sync for LockdepMap {}

impl LockdepMap {
    /// Returns an initialiser of a map of the class `key`, named `name` in lockdep's reports.
    ///
    /// Lockdep compares the names of a class by address: every map of `key` should be given the
    /// same `name` pointer, such as the value of a `static`; another pointer for the same key only
    /// makes lockdep warn once ("found a different class"), it is not unsafe.
    pub fn new(name: &'static CStr, key: Pin<&'static LockClassKey>) -> impl PinInit<Self> {
        pin_init!(Self {
            // INVARIANT: `lockdep_init_map_type()` initialises the map with a static name and key.
            map <- Opaque::ffi_init(|slot: *mut bindings::lockdep_map| {
                #[cfg(CONFIG_LOCKDEP)]
                // SAFETY: `slot` is valid for writes and does not move from here; the name and
                // the key are static. Subclass 0, and the wait types and the lock type that
                // `lockdep_init_map()` gives.
                unsafe {
                    bindings::lockdep_init_map_type(
                        slot,
                        name.as_char_ptr(),
                        key.as_ptr(),
                        0,
                        bindings::lockdep_wait_type_LD_WAIT_INV as u8,
                        bindings::lockdep_wait_type_LD_WAIT_INV as u8,
                        bindings::lockdep_lock_type_LD_LOCK_NORMAL as u8,
                    )
                };
                #[cfg(not(CONFIG_LOCKDEP))]
                let _ = (slot, name, key);
            }),
        })
    }

    /// Acquires the map exclusively and releases it, as `lock_map_acquire()` followed by
    /// `lock_map_release()`: lockdep learns that the locks the caller holds come before the
    /// map's class, and checks that for inversions and recursion, as for a lock.
    ///
    /// `ip` is the code address lockdep records as where the map was acquired (printed with
    /// `%pS` in its reports), as C passes `_THIS_IP_`.
    #[inline]
    pub fn acquire_release(&self, ip: usize) {
        #[cfg(CONFIG_LOCKDEP)]
        {
            let map = self.map.get();
            // SAFETY: `map` was initialised and does not move, by the type invariants. Subclass
            // 0, no trylock, an exclusive acquire that lockdep checks, no nest lock.
            unsafe { bindings::lock_acquire(map, 0, 0, 0, 1, core::ptr::null_mut(), ip) };
            // SAFETY: acquired just above.
            unsafe { bindings::lock_release(map, ip) };
        }
        #[cfg(not(CONFIG_LOCKDEP))]
        let _ = ip;
    }
}
