//! Random `mdh!` kernels, drawn at build time from a seed (`MDH_RANDOM_SEED`,
//! see `build.rs`), and every kernel that once failed
//! (`regressions/NAME.rs`). `examples/tests/random_kernels.rs` runs each
//! on every back end against the reference interpreter.

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
