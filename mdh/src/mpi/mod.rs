//! Beyond one machine: the MDH paper's node layer (NOD) over MPI (the
//! `mpi` feature).
//!
//! A NOD plan gives each rank of a communicator a box of the index space
//! (`nod`: parts per md_hom dimension, as the COR layer does for threads).
//! Each rank runs the CPU kernel on its box; the parts are re-composed by
//! one MPI collective per combine operator: CC parts are gathered (to every
//! rank, to rank 0, or left where they were computed), PW(⊕) parts are
//! all-reduced with ⊕ (the built-ins as MPI operations, user-defined
//! operators as generated `extern "C"` operations), PS(⊕) parts by an
//! exclusive scan of the parts' totals and a local fix-up.
//!
//! Every kernel `NAME` gains `NAME::mpi::{run, run_with, plan, plan_with}`:
//!
//! ```no_run
//! mdh::mdh! {
//!     pub kernel matvec {
//!         inp(M: f32[I, K], v: f32[K]),
//!         out(w: f32[I]),
//!         out_view(w: |i, k| (i)),
//!         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
//!         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
//!     }
//! }
//! let (m, v, mut w) = (vec![1.0f32; 512 * 4096], vec![2.0f32; 4096], vec![0.0f32; 512]);
//! let universe = mdh::mpi::initialize().ok_or("MPI is already initialized")?;
//! let world = universe.world();
//! matvec::mpi::run(&world, &m, &v, &mut w, matvec::Sizes { I: 512, K: 4096 })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Arguments are checked on every rank and the verdict agreed on before
//! any data moves: a rank with wrong lengths makes the call an `Err` on
//! every rank, never a hang.

mod epilogue;
mod job;
mod ops;
mod plan;

/// The `mpi` crate (rsmpi) itself, for what this module does not re-export.
pub use mpi as rsmpi;
/// MPI, initialized (rsmpi's): [`initialize`] returns it, its `world()`
/// is the communicator of all ranks; MPI ends when it is dropped.
///
/// ```no_run
/// use mdh::mpi::*;
/// mdh::mdh! {
///     pub kernel matvec {
///         inp(M: f32[I, K], v: f32[K]),
///         out(w: f32[I]),
///         out_view(w: |i, k| (i)),
///         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
///         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
///     }
/// }
/// let universe = initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// println!("rank {} of {}", world.rank(), world.size());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use mpi::environment::Universe;
/// A communicator's ranks (rsmpi's trait): what `NAME::mpi::run` takes.
///
/// ```no_run
/// use mdh::mpi::*;
/// mdh::mdh! {
///     pub kernel matvec {
///         inp(M: f32[I, K], v: f32[K]),
///         out(w: f32[I]),
///         out_view(w: |i, k| (i)),
///         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
///         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
///     }
/// }
/// let universe = initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let (rank, ranks) = (world.rank(), world.size());
/// assert!(rank < ranks);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use mpi::topology::Communicator;
/// The communicator of [`Universe::world`] (rsmpi's).
///
/// ```no_run
/// use mdh::mpi::*;
/// mdh::mdh! {
///     pub kernel matvec {
///         inp(M: f32[I, K], v: f32[K]),
///         out(w: f32[I]),
///         out_view(w: |i, k| (i)),
///         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
///         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
///     }
/// }
/// let universe = initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let world: SimpleCommunicator = world;
/// let half = world.split_by_color(mdh::mpi::rsmpi::topology::Color::with_value(world.rank() % 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use mpi::topology::SimpleCommunicator;
/// Collectives on a communicator (rsmpi's trait), e.g. a barrier between
/// timed calls.
///
/// ```no_run
/// use mdh::mpi::*;
/// mdh::mdh! {
///     pub kernel matvec {
///         inp(M: f32[I, K], v: f32[K]),
///         out(w: f32[I]),
///         out_view(w: |i, k| (i)),
///         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
///         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
///     }
/// }
/// let universe = initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// world.barrier();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use mpi::traits::CommunicatorCollectives;
pub use plan::Plan;

// What generated `NAME::mpi` modules use.
#[doc(hidden)]
pub use {
    epilogue::map_part,
    job::Job,
    mdh_rt::nod::configured_nod,
    ops::{Builtin, Combine, Op, OutBuf, Output},
    plan::plan,
};

/// Initializes MPI (once per process) and returns its universe, whose
/// `world()` is the communicator of all ranks; `None` if MPI was already
/// initialized.
///
/// ```no_run
/// use mdh::mpi::*;
/// mdh::mdh! {
///     pub kernel matvec {
///         inp(M: f32[I, K], v: f32[K]),
///         out(w: f32[I]),
///         out_view(w: |i, k| (i)),
///         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
///         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
///     }
/// }
/// let universe = initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let (m, v, mut w) = (vec![1.0f32; 512 * 4096], vec![2.0f32; 4096], vec![0.0f32; 512]);
/// matvec::mpi::run(&world, &m, &v, &mut w, matvec::Sizes { I: 512, K: 4096 })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn initialize() -> Option<Universe> {
    mpi::initialize()
}

/// How a call's inputs are passed.
///
/// ```no_run
/// use mdh::mpi::*;
/// mdh::mdh! {
///     pub kernel matvec {
///         inp(M: f32[I, K], v: f32[K]),
///         out(w: f32[I]),
///         out_view(w: |i, k| (i)),
///         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
///         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
///     }
/// }
/// let universe = initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let sizes = matvec::Sizes { I: 512, K: 4096 };
/// // Each rank passes the rows of M its box reads, and the whole v.
/// let plan = matvec::mpi::plan(&world, sizes)?;
/// let part: usize = plan.input_part(0).iter().map(|(lo, hi)| hi - lo).product();
/// let m_part = vec![1.0f32; part];
/// let (v, mut w) = (vec![2.0f32; 4096], vec![0.0f32; 512]);
/// matvec::mpi::run_with(&world, Some(&plan), Inputs::Distributed, Placement::All, &m_part, &v, &mut w, sizes)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Inputs {
    /// Every rank passes the whole inputs.
    Replicated,
    /// Each rank passes only the part of each input its box reads
    /// ([`Plan::input_part`], halos included), row-major over that part.
    Distributed,
}

/// Where a call's results must be.
///
/// ```no_run
/// use mdh::mpi::*;
/// mdh::mdh! {
///     pub kernel matvec {
///         inp(M: f32[I, K], v: f32[K]),
///         out(w: f32[I]),
///         out_view(w: |i, k| (i)),
///         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
///         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
///     }
/// }
/// let universe = initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let sizes = matvec::Sizes { I: 512, K: 4096 };
/// let (m, v, mut w) = (vec![1.0f32; 512 * 4096], vec![2.0f32; 4096], vec![0.0f32; 512]);
/// // Rank 0 receives all of w; the others at least their own rows.
/// matvec::mpi::run_with(&world, None, Inputs::Replicated, Placement::Root, &m, &v, &mut w, sizes)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Every rank passes whole outputs and receives all results.
    All,
    /// Every rank passes whole outputs; rank 0 receives all results (the
    /// others hold their own part at least).
    Root,
    /// Each rank passes only its part of each output
    /// ([`Plan::output_part`]) and receives the results there; ranks that
    /// split a PW dimension hold copies of the same part.
    Distributed,
}

/// Bytes this process has sent in the collectives of NOD calls so far
/// (each rank's own send buffers; what a cluster's network would carry).
///
/// ```no_run
/// use mdh::mpi::*;
/// mdh::mdh! {
///     pub kernel matvec {
///         inp(M: f32[I, K], v: f32[K]),
///         out(w: f32[I]),
///         out_view(w: |i, k| (i)),
///         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
///         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
///     }
/// }
/// let universe = initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let (m, v, mut w) = (vec![1.0f32; 512 * 4096], vec![2.0f32; 4096], vec![0.0f32; 512]);
/// let before = bytes_sent();
/// matvec::mpi::run(&world, &m, &v, &mut w, matvec::Sizes { I: 512, K: 4096 })?;
/// println!("rank {} sent {} bytes", world.rank(), bytes_sent() - before);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn bytes_sent() -> u64 {
    ops::BYTES_SENT.load(std::sync::atomic::Ordering::Relaxed)
}

/// The slowest rank's `secs` (every rank of `comm` calls it): what a
/// timing of a NOD call reports.
///
/// ```no_run
/// use mdh::mpi::*;
/// mdh::mdh! {
///     pub kernel matvec {
///         inp(M: f32[I, K], v: f32[K]),
///         out(w: f32[I]),
///         out_view(w: |i, k| (i)),
///         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
///         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
///     }
/// }
/// let universe = initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// let (m, v, mut w) = (vec![1.0f32; 512 * 4096], vec![2.0f32; 4096], vec![0.0f32; 512]);
/// let t = std::time::Instant::now();
/// matvec::mpi::run(&world, &m, &v, &mut w, matvec::Sizes { I: 512, K: 4096 })?;
/// let secs = slowest(&world, t.elapsed().as_secs_f64());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn slowest<C: Communicator>(comm: &C, secs: f64) -> f64 {
    let mut max = 0.0f64;
    comm.all_reduce_into(&secs, &mut max, mpi::collective::SystemOperation::max());
    max
}
