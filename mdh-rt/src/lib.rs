//! `mdh-rt`: what mdh's generated kernels and GPU runtimes need at run time,
//! without the compiler (no syn, quote or serde): the run-time [`Error`], the
//! kernel description and its binding to one call's sizes ([`desc`]), GPU
//! plans and the names of the GPU source template ([`gpu_plan`], [`names`]),
//! the NOD layer's parts ([`nod`]), element types ([`types`]), machine
//! descriptions ([`machine`]), and values and host buffers ([`value`]).
//!
//! `mdh-core` (the compiler) re-exports all of it under its old paths.

pub mod desc;
pub mod error;
pub mod gpu_plan;
pub mod machine;
pub mod names;
pub mod nod;
pub mod types;
pub mod value;

pub use error::{Error, PlanError};
pub use types::{DimKind, ScalarType};
pub use value::{Buffer, Value};
