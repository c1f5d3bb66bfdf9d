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
//!
//! A worker that rayon has put to sleep takes tens of microseconds to wake
//! (28 µs here for a 250 µs job posted 100 µs after the last one), and rayon
//! puts its idle workers to sleep within that time. So a helper, having run
//! its parts, stays *parked* for [`PARK`]: it spins, watching for the next
//! call, and takes that call's parts at once (as OpenMP's and OpenBLAS's
//! workers do between parallel regions). A parked helper leaves the pool's
//! other work waiting at most one spin: it runs rayon jobs that arrive and
//! then stops parking.
//!
//! A part that calls again (a tile of rows fused across stages runs each
//! stage's kernel: `crate::row_tiles`) runs that call's parts itself, in
//! order, as OpenMP runs a nested parallel region by default: the other
//! threads hold tiles of their own, and a part handed to one of them would
//! take its rows out of this core's cache.

use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long a helper stays parked after its last part (see the module
/// documentation): a kernel called again within this time finds it awake.
const PARK: Duration = Duration::from_micros(500);

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

/// A call whose parts helpers may take: its shared state, part count and
/// part function.
#[derive(Clone)]
struct Call {
    shared: Arc<Shared>,
    n: usize,
    task: Task,
}

impl Call {
    /// Takes parts and runs them until none is left.
    fn take(&self) {
        let (shared, n) = (&self.shared, self.n);
        loop {
            let i = shared.next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                return;
            }
            // SAFETY: `i < n`, so the call of `parts` that made `task` is
            // still waiting for this part (see there): the pointee is alive.
            let part = unsafe { &*self.task.0 };
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| run_part(part, i))) {
                let mut first = shared.panic.lock().unwrap_or_else(PoisonError::into_inner);
                first.get_or_insert(p);
            }
            shared.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// The latest call, for parked helpers; `POSTS` counts the calls posted, so
/// that a parked helper notices a new one with one atomic load.
static POSTED: Mutex<Option<Call>> = Mutex::new(None);
static POSTS: AtomicUsize = AtomicUsize::new(0);
/// Helpers parked now (each one will take the parts of a call posted while
/// it is counted: see `park`).
static PARKED: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread is parked (a rayon job it runs while parked must
    /// not park again inside).
    static PARKING: Cell<bool> = const { Cell::new(false) };
    /// Whether this thread is running a part (see the module documentation).
    static IN_PART: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread runs inside a part of a parallel call: a
/// call it makes runs on this thread alone.
pub(crate) fn in_part() -> bool {
    IN_PART.with(Cell::get)
}

/// Runs part `i` of `part` with [`IN_PART`] set (and restored, also when it
/// unwinds, so that a caught panic leaves the flag as it found it).
fn run_part(part: &(dyn Fn(usize) + Sync + '_), i: usize) {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_PART.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(IN_PART.with(|p| p.replace(true)));
    part(i);
}

/// Posts `call` for parked helpers; returns its number.
fn post(call: Call) -> usize {
    let mut slot = POSTED.lock().unwrap_or_else(PoisonError::into_inner);
    *slot = Some(call);
    // SeqCst with `park`'s decrement of PARKED: see there.
    POSTS.fetch_add(1, Ordering::SeqCst) + 1
}

/// Clears the slot if it still holds call number `number` (so that a
/// finished call's state is dropped and not looked at again).
fn unpost(number: usize) {
    let mut slot = POSTED.lock().unwrap_or_else(PoisonError::into_inner);
    if POSTS.load(Ordering::SeqCst) == number {
        *slot = None;
    }
}

/// The latest call and its number.
fn posted() -> (usize, Option<Call>) {
    let slot = POSTED.lock().unwrap_or_else(PoisonError::into_inner);
    (POSTS.load(Ordering::SeqCst), slot.clone())
}

/// A helper job: takes the parts of call number `number`, then parks.
fn help(call: Call, number: usize) {
    call.take();
    drop(call);
    // One core per helper: at most one parked helper fewer than threads
    // (the caller is the other).
    let room = PARKED.load(Ordering::SeqCst) + 1 < rayon::current_num_threads();
    if room && !PARKING.with(Cell::get) {
        PARKING.with(|p| p.set(true));
        park(number);
        PARKING.with(|p| p.set(false));
    }
}

/// Spins for [`PARK`] after the last call it served (`seen`), taking the
/// parts of every call posted meanwhile; stops early when it has run
/// another rayon job.
fn park(mut seen: usize) {
    PARKED.fetch_add(1, Ordering::SeqCst);
    let mut since = Instant::now();
    let mut spins = 0u32;
    loop {
        if POSTS.load(Ordering::SeqCst) != seen {
            let (number, call) = posted();
            seen = number;
            if let Some(call) = call {
                call.take();
            }
            since = Instant::now();
            continue;
        }
        spins = spins.wrapping_add(1);
        // The clock and rayon's queues every 64 spins (each spin hint is
        // some tens of nanoseconds).
        if spins.is_multiple_of(64) {
            let other_work = matches!(rayon::yield_now(), Some(rayon::Yield::Executed));
            if other_work || since.elapsed() >= PARK {
                break;
            }
        }
        std::hint::spin_loop();
    }
    // A caller that read PARKED before this decrement counted this helper
    // and spawned one fewer; it posted its call before that read, so (all
    // SeqCst) the load below sees it: take its parts.
    PARKED.fetch_sub(1, Ordering::SeqCst);
    if POSTS.load(Ordering::SeqCst) != seen {
        if let (_, Some(call)) = posted() {
            call.take();
        }
    }
}

/// Calls `f` on every item, in parallel, the calling thread included; returns
/// when all calls have returned. A panic in `f` is raised again here.
pub(crate) fn each<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    parts(items.len(), &|i| f(&items[i]));
}

/// Calls `f(i)` for every `i < n`, as [`each`] does.
pub(crate) fn each_index(n: usize, f: impl Fn(usize) + Sync) {
    parts(n, &f);
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
    if n <= 1 || in_part() {
        (0..n).for_each(part);
        return;
    }
    // SAFETY: (lifetime erasure) `part` and what it borrows outlive this
    // function's return. Helper jobs and parked helpers (through the posted
    // call) may outlive it, but they
    // call through `task` only for an index below `n` they took from
    // `shared.next`, and this function returns only after all `n` such calls
    // have finished (`shared.done == n`); a job that takes an index ≥ `n`
    // never touches the pointer.
    let task = Task(unsafe {
        std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const (dyn Fn(usize) + Sync)>(
            part,
        )
    });
    let call = Call {
        shared: Arc::new(Shared {
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
        }),
        n,
        task,
    };
    let number = post(call.clone());
    // Parked helpers take parts at once; rayon jobs make up the rest.
    let helpers = rayon::current_num_threads().min(n) - 1;
    let parked = PARKED.load(Ordering::SeqCst);
    for _ in parked.min(helpers)..helpers {
        let call = call.clone();
        rayon::spawn(move || help(call, number));
    }
    call.take();
    // The remaining parts run on workers: wait for them, spinning briefly
    // (they are short when they matter), then yielding the core.
    let mut spins = 0u32;
    while call.shared.done.load(Ordering::Acquire) < n {
        if spins < 1 << 12 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    unpost(number);
    let panic = call
        .shared
        .panic
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(p) = panic {
        resume_unwind(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `each` over `n` items calls `f` once per item.
    fn each_runs_every_item_once(n: usize) -> bool {
        let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        let items: Vec<usize> = (0..n).collect();
        each(&items, |&i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        });
        hits.iter().all(|h| h.load(Ordering::Relaxed) == 1)
    }

    #[test]
    fn every_item_runs_once() {
        for n in [0, 1, 2, 3, 17, 1000] {
            assert!(each_runs_every_item_once(n), "n = {n}");
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
    fn parked_helpers_serve_calls_from_many_threads() {
        // Calls from several threads, with pauses shorter and longer than
        // PARK between them, so that parked helpers take parts of whichever
        // call is posted (or leave); every call must still run each of its
        // parts exactly once.
        std::thread::scope(|scope| {
            for t in 0..4u64 {
                scope.spawn(move || {
                    for c in 0..100u64 {
                        let n = 1 + ((t * 31 + c * 7) % 13) as usize;
                        assert!(each_runs_every_item_once(n), "thread {t}, call {c}");
                        let pause = (c % 4) * PARK.as_micros() as u64 / 2;
                        std::thread::sleep(Duration::from_micros(pause));
                    }
                });
            }
        });
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
