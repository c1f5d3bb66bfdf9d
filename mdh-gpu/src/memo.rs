//! What callers keep per device: values of any type, found by a hash of
//! their key and an equality test on it. mdh's generated wrappers keep
//! their prepared calls here (the job, the compiled program and the buffers
//! of partial results per sizes and plan), so that they live and die with
//! the device whose objects they hold.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Slot = Arc<dyn Any + Send + Sync>;

/// A thread-safe map from key hashes to values of any type (see the
/// module documentation). Lookups lock one mutex briefly; building a value
/// happens outside of it, so a slow build (a compilation) never blocks
/// other threads' lookups.
#[derive(Default)]
pub struct Memo {
    map: Mutex<HashMap<u64, Vec<Slot>>>,
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo").field("len", &self.len()).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Memo {
    /// The value of type `T` under `hash` for which `is` holds.
    pub fn find<T: Any + Send + Sync>(&self, hash: u64, is: impl Fn(&T) -> bool) -> Option<Arc<T>> {
        let map = lock(&self.map);
        map.get(&hash)?
            .iter()
            .find(|s| s.downcast_ref::<T>().is_some_and(&is))
            .and_then(|s| s.clone().downcast::<T>().ok())
    }

    /// Keeps `value` under `hash`, unless another thread has meanwhile kept
    /// one for which `is` holds: returns the value kept.
    pub fn insert<T: Any + Send + Sync>(
        &self,
        hash: u64,
        value: Arc<T>,
        is: impl Fn(&T) -> bool,
    ) -> Arc<T> {
        let mut map = lock(&self.map);
        let slots = map.entry(hash).or_default();
        if let Some(kept) = slots
            .iter()
            .find(|s| s.downcast_ref::<T>().is_some_and(&is))
            .and_then(|s| s.clone().downcast::<T>().ok())
        {
            return kept;
        }
        slots.push(value.clone());
        value
    }

    /// Drops every value of type `T` for which `is` holds, under any hash
    /// (their users keep them alive through their `Arc`s): the next lookups
    /// build them again. It reads every value: for rare events (a plan
    /// tuned), not per call.
    pub fn remove_all<T: Any + Send + Sync>(&self, is: impl Fn(&T) -> bool) {
        for slots in lock(&self.map).values_mut() {
            slots.retain(|s| !s.downcast_ref::<T>().is_some_and(&is));
        }
    }

    /// The number of values kept.
    pub fn len(&self) -> usize {
        lock(&self.map).values().map(Vec::len).sum()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every value (those still in use stay alive through their
    /// `Arc`s).
    pub fn clear(&self) {
        lock(&self.map).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_by_hash_type_and_key() {
        let m = Memo::default();
        let a = m.insert(7, Arc::new((1u32, "a")), |v: &(u32, &str)| v.0 == 1);
        // The same hash, another key: a second value.
        m.insert(7, Arc::new((2u32, "b")), |v: &(u32, &str)| v.0 == 2);
        // Same key again: the first value stays.
        let again = m.insert(7, Arc::new((1u32, "c")), |v: &(u32, &str)| v.0 == 1);
        assert!(Arc::ptr_eq(&a, &again));
        assert_eq!(m.len(), 2);
        assert_eq!(m.find(7, |v: &(u32, &str)| v.0 == 2).unwrap().1, "b");
        assert!(m.find(8, |v: &(u32, &str)| v.0 == 1).is_none());
        // Another type under the same hash is not found as this one.
        assert!(m.find(7, |_: &u64| true).is_none());
        m.insert(9, Arc::new((2u32, "d")), |v: &(u32, &str)| v.0 == 2);
        m.remove_all(|v: &(u32, &str)| v.0 == 2);
        assert!(m.find(7, |v: &(u32, &str)| v.0 == 2).is_none());
        assert!(m.find(9, |v: &(u32, &str)| v.0 == 2).is_none());
        assert_eq!(m.len(), 1);
        m.clear();
        assert!(m.is_empty());
    }
}
