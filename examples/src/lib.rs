//! Helpers of the example binaries (`src/bin/`, one kernel each, from
//! `kernels/src/`) and of the tests of every example kernel
//! (`mdh-example-kernels`): see [`check`].

pub mod check;
