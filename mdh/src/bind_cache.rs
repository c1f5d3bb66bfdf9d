//! A kernel's validated calls, remembered by their sizes and buffer lengths.
//! Binding a call (evaluating size expressions, checking lengths, bounds and
//! disjointness of accesses) and choosing its plan take about a microsecond,
//! more than a small kernel's whole run, and give the same answer for the
//! same key: generated `cpu` functions look them up here first.

use std::sync::{Arc, Mutex, PoisonError};

use mdh_rt::desc::Bound;
use mdh_rt::Error;

/// What a call needs that depends only on its sizes and buffer lengths.
#[derive(Debug)]
pub struct Binding {
    pub bound: Bound,
    /// The index of the plan the call runs (see [`crate::machine::choose_plan`]).
    pub plan: usize,
}

/// How many distinct calls a kernel remembers (the most recent ones).
const SLOTS: usize = 4;

type Slots<const N: usize> = [Option<([usize; N], Arc<Binding>)>; SLOTS];

/// The last `SLOTS` (4) bindings of one kernel, keyed by `N` numbers (sizes,
/// then the lengths of the inputs and outputs). Errors are not remembered.
pub struct BindCache<const N: usize> {
    /// The slots and the one the next new binding replaces.
    slots: Mutex<(Slots<N>, usize)>,
}

impl<const N: usize> BindCache<N> {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        BindCache {
            slots: Mutex::new(([const { None }; SLOTS], 0)),
        }
    }

    /// The binding for `key`, made by `bind` on a miss.
    pub fn get(
        &self,
        key: [usize; N],
        bind: impl FnOnce() -> Result<Binding, Error>,
    ) -> Result<Arc<Binding>, Error> {
        // A panic while the lock was held cannot leave a slot half-written
        // (each is replaced whole), so a poisoned lock is still usable.
        let lock = || self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, hit)) = lock().0.iter().flatten().find(|(k, _)| *k == key) {
            return Ok(Arc::clone(hit));
        }
        let made = Arc::new(bind()?);
        let mut slots = lock();
        let next = slots.1;
        slots.0[next] = Some((key, Arc::clone(&made)));
        slots.1 = (next + 1) % SLOTS;
        Ok(made)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(plan: usize) -> Result<Binding, Error> {
        Ok(Binding {
            bound: Bound {
                sizes: vec![plan],
                extents: vec![],
                in_shapes: vec![],
                out_shapes: vec![],
                in_linear: vec![],
                out_linear: vec![],
            },
            plan,
        })
    }

    #[test]
    fn repeated_keys_are_bound_once_and_old_ones_evicted() {
        let cache = BindCache::<2>::new();
        let made = std::cell::Cell::new(0);
        let get = |k: usize| {
            cache
                .get([k, k + 1], || {
                    made.set(made.get() + 1);
                    binding(k)
                })
                .unwrap()
                .plan
        };
        assert_eq!((get(1), get(2), get(1)), (1, 2, 1));
        assert_eq!(made.get(), 2);
        for k in 3..3 + SLOTS {
            get(k);
        }
        assert_eq!(made.get(), 2 + SLOTS);
        get(1); // evicted by the SLOTS newer keys: bound again
        assert_eq!(made.get(), 3 + SLOTS);
    }

    #[test]
    fn errors_are_not_remembered() {
        let cache = BindCache::<1>::new();
        let err = cache.get([7], || Err(Error::Argument("no".into())));
        assert!(err.is_err());
        assert_eq!(cache.get([7], || binding(7)).unwrap().plan, 7);
    }
}
