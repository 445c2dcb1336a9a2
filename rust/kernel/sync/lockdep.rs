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
    str::CStr,
    sync::LockClassKey,
    types::Opaque, //
};

/// A lockdep map that no lock owns: an instance of a lock class that code acquires to tell
/// lockdep what it waits for.
///
/// It is made for a `static`, one per call site, as C's `STATIC_LOCKDEP_MAP_INIT()` makes one
/// ([`LockdepMap::new_static`]), so that nothing is initialised at run time. Without
/// `CONFIG_LOCKDEP` it is empty and acquiring it does nothing.
///
/// # Invariants
///
/// With `CONFIG_LOCKDEP`, `map` holds a name and a key that live forever and is otherwise zero
/// until lockdep writes its class cache, as C's static maps are.
///
/// # Examples
///
/// ```
/// use kernel::sync::{lockdep::LockdepMap, LockClassKey};
///
/// fn wait_for_it(map: &LockdepMap) {
///     // As `lock_map_acquire(); lock_map_release();`: whatever the caller holds now comes
///     // before the class, for lockdep, which records this function as where.
///     map.acquire_release(wait_for_it as fn(&LockdepMap) as usize);
/// }
///
/// static NAME: &kernel::str::CStr = c"doc_map";
/// // SAFETY: a static, never dropped.
/// static KEY: LockClassKey = unsafe { LockClassKey::new_static() };
/// static MAP: LockdepMap = LockdepMap::new_static(NAME, &KEY);
/// wait_for_it(&MAP);
/// ```
#[repr(transparent)]
pub struct LockdepMap {
    map: Opaque<bindings::lockdep_map>,
}

// SAFETY: Lockdep's functions may be called on one map from any thread, concurrently; they write
// the map only with `WRITE_ONCE()` (its `class_cache`), as for the `dep_map` of every C lock.
unsafe impl Send for LockdepMap {}

// SAFETY: As for `Send`: acquiring one map from several threads at once is what the C maps of
// locks and work items get too.
unsafe impl Sync for LockdepMap {}

impl LockdepMap {
    /// Returns a map of the class `key`, named `name` in lockdep's reports, for a `static`: the
    /// name and the key, the rest zero, as `STATIC_LOCKDEP_MAP_INIT()`.
    ///
    /// Lockdep compares the names of a class by address: every map and work item of `key` should
    /// be given the same `name` pointer, such as the value of a `static`; another pointer for the
    /// same key only makes lockdep warn once ("found a different class"), it is not unsafe.
    pub const fn new_static(name: &'static CStr, key: &'static LockClassKey) -> Self {
        #[cfg(CONFIG_LOCKDEP)]
        {
            // SAFETY: zero is a valid value of every field of `struct lockdep_map` (pointers,
            // integers), and the state C's static initialisers leave the fields they do not name.
            let mut map: bindings::lockdep_map = unsafe { core::mem::zeroed() };
            map.name = crate::str::as_char_ptr_in_const_context(name);
            map.key = key.inner.get();
            // INVARIANT: a static name and key, the rest zero.
            Self {
                map: Opaque::new(map),
            }
        }
        #[cfg(not(CONFIG_LOCKDEP))]
        {
            let _ = (name, key);
            Self {
                map: Opaque::zeroed(),
            }
        }
    }

    /// Uses a C `struct lockdep_map` as a [`LockdepMap`].
    ///
    /// # Safety
    ///
    /// `ptr` points to a map initialised with a name and a key that live forever (such as one of
    /// `STATIC_LOCKDEP_MAP_INIT()`), valid for `'a`, which only lockdep writes.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::lockdep_map) -> &'a Self {
        // SAFETY: `LockdepMap` is a transparent `Opaque<lockdep_map>`, itself transparent; the
        // caller promises what the type invariant asks.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Acquires the map exclusively and releases it, as `lock_map_acquire()` followed by
    /// `lock_map_release()`: lockdep learns that the locks the caller holds come before the
    /// map's class, and checks that for inversions and recursion, as for a lock.
    ///
    /// `ip` is the code address lockdep records as where the map was acquired (printed with
    /// `%pS` in its reports), as C passes `_THIS_IP_`.
    #[inline]
    pub fn acquire_release(&self, ip: usize) {
        // SAFETY: `self.map` is a map with a static name and key (the type invariant) that lives
        // as long as `self`; the helper is `lock_acquire_exclusive()` and `lock_release()`, which
        // are empty without `CONFIG_LOCKDEP`.
        unsafe { bindings::lock_map_acquire_release(self.map.get(), ip) };
    }

    /// As [`LockdepMap::acquire_release`], with bottom halves disabled around it, for a class
    /// that may also be acquired in softirq context (the work items of a `WQ_BH` queue run
    /// there), as `touch_work_lockdep_map()` does for such a queue: acquiring it in process
    /// context with bottom halves enabled would be an inconsistent use to lockdep.
    #[inline]
    pub fn acquire_release_bh(&self, ip: usize) {
        // SAFETY: as in `acquire_release`; the helper also calls `local_bh_disable()` and
        // `local_bh_enable()`, which nest and need nothing from the caller.
        unsafe { bindings::lock_map_acquire_release_bh(self.map.get(), ip) };
    }
}
