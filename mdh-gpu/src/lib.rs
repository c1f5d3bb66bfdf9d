//! GPU runtimes of mdh: OpenCL devices, buffers, program cache and timed
//! launches (feature `opencl`), and the CUDA runtime with NVRTC and the CPU
//! execution of CUDA C for tests (feature `cuda`). Both load their system
//! libraries at run time, so the crate builds everywhere and a missing driver
//! is an `Err`.

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "cuda")]
pub mod cuda_sim;
pub mod memo;
/// The OpenCL runtime (opencl3, loaded at run time): devices, buffers,
/// program cache, timed launches.
#[cfg(feature = "opencl")]
pub mod opencl;
#[cfg(feature = "cuda")]
pub mod sass;
