//! Nothing here: the property tests of the low-level plan are
//! `tests/plans.rs`, over the example kernels compiled with the random
//! plans of `configs/`.
