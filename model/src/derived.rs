//! A cell for derived data kept beside replicated state ([`Derived`]): an index rebuilt from
//! the state whenever it is missing, so it is never serialized, a copy of the state starts
//! without it, and two states compare equal whatever their cells hold.

use std::sync::{Mutex, MutexGuard};

/// Derived data of type `T` (see the module).
#[derive(Default)]
pub struct Derived<T>(Mutex<T>);

impl<T> Derived<T> {
    /// The data, locked (a poisoned lock is taken over: the data is rebuilt from the state
    /// anyway when it is emptied).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl<T: Default> Clone for Derived<T> {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl<T> PartialEq for Derived<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> Eq for Derived<T> {}

impl<T> std::fmt::Debug for Derived<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Derived")
    }
}
