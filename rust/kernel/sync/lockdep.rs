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
/// use kernel::{c_str, static_lock_class};
/// use kernel::sync::lockdep::LockdepMap;
/// use pin_init::stack_pin_init;
///
/// stack_pin_init!(let map = LockdepMap::new(c_str!("doc_map"), static_lock_class!()));
/// // As `lock_map_acquire(); lock_map_release();`: whatever the caller holds now comes before
/// // the class, for lockdep.
/// map.acquire_release(0);
/// ```
#[pin_data]
pub struct LockdepMap {
    #[pin]
    map: Opaque<bindings::lockdep_map>,
}

// SAFETY: Lockdep keeps its own state about a map under its own lock; a map may be acquired and
// released from any thread.
unsafe impl Send for LockdepMap {}

// SAFETY: As for `Send`: acquiring a map through a shared reference from several threads at once
// is what lockdep maps are for.
unsafe impl Sync for LockdepMap {}

impl LockdepMap {
    /// Returns an initialiser of a map of the class `key`, named `name` in lockdep's reports.
    ///
    /// Lockdep compares the names of a class by address: every map of `key` must be given the
    /// same `name` pointer, such as the value of a `static`.
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
