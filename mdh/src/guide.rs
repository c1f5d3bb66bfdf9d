//! The guide: `docs/guide/` in the repository, one module per chapter.
//!
//! Each chapter's text is its Markdown file, so its Rust examples are doc
//! tests: `cargo test -p mdh --doc` compiles and runs them (the test
//! command's workspace `cargo test` does too). The OpenCL, CUDA and MPI
//! chapters hold their text only where the crate is built with that feature
//! (their examples need it); links between chapters are relative to
//! `docs/guide/`.
#![doc = include_str!("../../docs/guide/README.md")]

#[doc = include_str!("../../docs/guide/01-kernels.md")]
pub mod kernels {}

#[doc = include_str!("../../docs/guide/02-configs.md")]
pub mod configs {}

#[doc = include_str!("../../docs/guide/03-tuning.md")]
pub mod tuning {}

#[doc = include_str!("../../docs/guide/04-cpu.md")]
pub mod cpu {}

#[cfg_attr(feature = "opencl", doc = include_str!("../../docs/guide/05-opencl.md"))]
#[cfg_attr(
    not(feature = "opencl"),
    doc = "# 5. The OpenCL backend\n\nBuilt with the `opencl` feature, this page holds \
           the chapter (`docs/guide/05-opencl.md`), whose examples need it."
)]
pub mod opencl {}

#[cfg_attr(feature = "cuda", doc = include_str!("../../docs/guide/06-cuda.md"))]
#[cfg_attr(
    not(feature = "cuda"),
    doc = "# 6. The CUDA backend\n\nBuilt with the `cuda` feature, this page holds \
           the chapter (`docs/guide/06-cuda.md`), whose examples need it."
)]
pub mod cuda {}

#[cfg_attr(feature = "mpi", doc = include_str!("../../docs/guide/07-mpi.md"))]
#[cfg_attr(
    not(feature = "mpi"),
    doc = "# 7. MPI: beyond one machine\n\nBuilt with the `mpi` feature, this page holds \
           the chapter (`docs/guide/07-mpi.md`), whose examples need it."
)]
pub mod mpi {}

#[doc = include_str!("../../docs/guide/08-performance.md")]
pub mod performance {}

#[doc = include_str!("../../docs/guide/09-troubleshooting.md")]
pub mod troubleshooting {}

#[doc = include_str!("../../docs/guide/10-testing.md")]
pub mod testing {}

#[doc = include_str!("../../docs/guide/11-stages.md")]
pub mod stages {}

/// The README's example is a doc test too (only when collecting doc tests).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct Readme;
