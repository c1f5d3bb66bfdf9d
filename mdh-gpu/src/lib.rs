//! GPU runtimes of mdh. The OpenCL and CUDA back ends are not built yet: the
//! `opencl` and `cuda` features exist so that code can name them, and this
//! crate offers nothing that pretends to run a kernel.

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "cuda")]
pub mod cuda_sim;
/// The OpenCL runtime (opencl3, loaded at run time): devices, buffers,
/// program cache, timed launches.
#[cfg(feature = "opencl")]
pub mod opencl;
