//! The run-time error: see [`mdh_rt::error`] (generated code returns it).

pub use mdh_rt::error::*;
