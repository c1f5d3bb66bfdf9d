//! The low-level GPU plan: see [`mdh_rt::gpu_plan`] (the runtime needs it too).

pub use mdh_rt::gpu_plan::*;
