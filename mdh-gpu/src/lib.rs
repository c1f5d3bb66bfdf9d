//! GPU runtimes of mdh: OpenCL devices, buffers, program cache and timed
//! launches (feature `opencl`), and the CUDA runtime with NVRTC (feature
//! `cuda`). Both load their system libraries at run time, so the crate
//! builds everywhere and a missing driver is an `Err`. The tests' tooling,
//! the CPU execution of CUDA C and the SASS reader, is the feature `sim`.

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "sim")]
pub mod cuda_sim;
pub mod device;
pub mod memo;
/// The OpenCL runtime (opencl3, loaded at run time): devices, buffers,
/// program cache, timed launches.
#[cfg(feature = "opencl")]
pub mod opencl;
#[cfg(feature = "sim")]
pub mod sass;

#[cfg(any(feature = "opencl", feature = "cuda"))]
use mdh_rt::Error;

/// A runtime library's failure.
#[cfg(any(feature = "opencl", feature = "cuda"))]
fn backend(msg: impl Into<String>) -> Error {
    Error::Backend(msg.into())
}

/// Runs `f`, turning a panic inside a runtime's bindings (a missing symbol
/// in an old library, an `expect` in the bindings) into an `Err` with the
/// sentence `describe` makes of the panic's message.
#[cfg(any(feature = "opencl", feature = "cuda"))]
fn guarded<R>(
    f: impl FnOnce() -> Result<R, Error>,
    describe: impl FnOnce(&str) -> String,
) -> Result<R, Error> {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(backend(describe(&msg)))
    })
}
