//! Running parts of a kernel's index space in parallel, with the calling
//! thread taking parts too.
//!
//! Handing all parts to rayon (`par_iter`, `scope`) makes a caller that is
//! not a pool thread block until a worker has run them and woken it through
//! the OS: several microseconds, more than a small kernel's whole work. Here
//! the caller and the pool's workers take parts from one counter, and the
//! caller waits only for parts a worker has actually taken; a worker that
//! starts late finds none left and leaves. A kernel split into a few parts
//! so never runs slower than on the calling thread alone.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// The state one call shares with the helper jobs it spawned.
struct Shared {
    /// The next part to take (may run past the count).
    next: AtomicUsize,
    /// Parts finished (or panicked).
    done: AtomicUsize,
    /// The first panic of a part, raised again on the calling thread.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

/// The part function of a call, without its lifetime, so that a `'static`
/// rayon job can hold it.
#[derive(Clone, Copy)]
struct Task(*const (dyn Fn(usize) + Sync));

// SAFETY: the pointee is `Sync`, so calling it from another thread is sound;
// when it may be called at all is `take`'s contract.
unsafe impl Send for Task {}

/// Calls `f` on every item, in parallel, the calling thread included; returns
/// when all calls have returned. A panic in `f` is raised again here.
pub(crate) fn each<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    parts(items.len(), &|i| f(&items[i]));
}

/// `f` of every item, computed as by [`each`], in the items' order.
pub(crate) fn map<T: Sync, R: Send + Sync>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let slots: Vec<OnceLock<R>> = (0..items.len()).map(|_| OnceLock::new()).collect();
    parts(items.len(), &|i| {
        let _ = slots[i].set(f(&items[i]));
    });
    slots
        .into_iter()
        .map(|s| s.into_inner().expect("`parts` ran every part"))
        .collect()
}

/// Calls `part(i)` for every `i < n`, as [`each`] describes.
fn parts(n: usize, part: &(dyn Fn(usize) + Sync + '_)) {
    if n <= 1 {
        (0..n).for_each(part);
        return;
    }
    let shared = Arc::new(Shared {
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        panic: Mutex::new(None),
    });
    // SAFETY (lifetime erasure): `part` and what it borrows outlive this
    // function's return. Helper jobs may outlive it, but they
    // call through `task` only for an index below `n` they took from
    // `shared.next`, and this function returns only after all `n` such calls
    // have finished (`shared.done == n`); a job that takes an index ≥ `n`
    // never touches the pointer.
    let task = Task(unsafe {
        std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const (dyn Fn(usize) + Sync)>(
            part,
        )
    });
    for _ in 1..rayon::current_num_threads().min(n) {
        let shared = Arc::clone(&shared);
        rayon::spawn(move || take(&shared, n, task));
    }
    take(&shared, n, task);
    // The remaining parts run on workers: wait for them, spinning briefly
    // (they are short when they matter), then yielding the core.
    let mut spins = 0u32;
    while shared.done.load(Ordering::Acquire) < n {
        if spins < 1 << 12 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    let panic = shared
        .panic
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(p) = panic {
        resume_unwind(p);
    }
}

/// Takes parts and runs them until none is left.
fn take(shared: &Shared, n: usize, task: Task) {
    loop {
        let i = shared.next.fetch_add(1, Ordering::Relaxed);
        if i >= n {
            return;
        }
        // SAFETY: `i < n`, so the call of `parts` that made `task` is still
        // waiting for this part (see there): the pointee is alive.
        let part = unsafe { &*task.0 };
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| part(i))) {
            let mut first = shared.panic.lock().unwrap_or_else(PoisonError::into_inner);
            first.get_or_insert(p);
        }
        shared.done.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_runs_once() {
        for n in [0, 1, 2, 3, 17, 1000] {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            let items: Vec<usize> = (0..n).collect();
            each(&items, |&i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(
                hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                "n = {n}"
            );
        }
    }

    #[test]
    fn map_keeps_the_items_order() {
        let items: Vec<u64> = (0..100).collect();
        assert_eq!(
            map(&items, |&x| x * x),
            items.iter().map(|x| x * x).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_panic_in_a_part_reaches_the_caller_after_all_parts() {
        let ran = AtomicUsize::new(0);
        let items: Vec<usize> = (0..64).collect();
        let caught = catch_unwind(AssertUnwindSafe(|| {
            each(&items, |&i| {
                ran.fetch_add(1, Ordering::Relaxed);
                assert!(i != 5, "part 5 fails");
            })
        }));
        assert!(caught.is_err());
        assert_eq!(ran.load(Ordering::Relaxed), 64);
    }

    #[test]
    fn nested_calls_inside_pool_threads_finish() {
        let total = AtomicUsize::new(0);
        let outer: Vec<usize> = (0..8).collect();
        let inner: Vec<usize> = (0..8).collect();
        use rayon::prelude::*;
        outer.par_iter().for_each(|_| {
            each(&inner, |&i| {
                total.fetch_add(i, Ordering::Relaxed);
            })
        });
        assert_eq!(total.load(Ordering::Relaxed), 8 * 28);
    }
}
