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
//! ```ignore
//! let universe = mdh::mpi::initialize().ok_or("MPI is already initialized")?;
//! let world = universe.world();
//! matvec::mpi::run(&world, &m, &v, &mut w, matvec::Sizes { I: 512, K: 4096 })?;
//! ```
//!
//! Arguments are checked on every rank and the verdict agreed on before
//! any data moves: a rank with wrong lengths makes the call an `Err` on
//! every rank, never a hang.

mod job;
mod ops;
mod plan;

/// The `mpi` crate (rsmpi) itself, for what this module does not re-export.
pub use mpi as rsmpi;
pub use mpi::environment::Universe;
pub use mpi::topology::{Communicator, SimpleCommunicator};
pub use mpi::traits::CommunicatorCollectives;
pub use plan::Plan;

// What generated `NAME::mpi` modules use.
#[doc(hidden)]
pub use {
    job::Job,
    mdh_rt::nod::configured_nod,
    ops::{Builtin, Combine, Op, OutBuf, Output},
    plan::plan,
};

/// Initializes MPI (once per process) and returns its universe, whose
/// `world()` is the communicator of all ranks; `None` if MPI was already
/// initialized.
pub fn initialize() -> Option<Universe> {
    mpi::initialize()
}

/// How a call's inputs are passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Inputs {
    /// Every rank passes the whole inputs.
    Replicated,
    /// Each rank passes only the part of each input its box reads
    /// ([`Plan::input_part`], halos included), row-major over that part.
    Distributed,
}

/// Where a call's results must be.
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
pub fn bytes_sent() -> u64 {
    job::BYTES_SENT.load(std::sync::atomic::Ordering::Relaxed)
}

/// The slowest rank's `secs` (every rank of `comm` calls it): what a
/// timing of a NOD call reports.
pub fn slowest<C: Communicator>(comm: &C, secs: f64) -> f64 {
    let mut max = 0.0f64;
    comm.all_reduce_into(&secs, &mut max, mpi::collective::SystemOperation::max());
    max
}
