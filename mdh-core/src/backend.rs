//! The GPU back ends: what each is called (in configs, as the generated
//! module `NAME::opencl`, as the facade's feature and runtime module
//! `mdh::opencl`), the dialect of its source and the documentation of its
//! module. Everything else of a back end is its runtime's, behind the
//! device traits of `mdh-gpu`: the generated wrappers are the same tokens
//! for all (`codegen::gpu_api`).

use crate::codegen::c_expr::Dialect;

/// A GPU back end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    OpenCl,
    Cuda,
}

impl Backend {
    /// Every GPU back end, in the order of the generated modules.
    pub const ALL: [Backend; 2] = [Backend::OpenCl, Backend::Cuda];

    /// The back end called `name` in configs.
    pub fn named(name: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The name of the back end in configs, of the generated module, and
    /// of the facade's feature and runtime module.
    pub fn name(self) -> &'static str {
        match self {
            Backend::OpenCl => "opencl",
            Backend::Cuda => "cuda",
        }
    }

    /// The C dialect of its kernel source.
    pub fn dialect(self) -> Dialect {
        match self {
            Backend::OpenCl => Dialect::OpenCl,
            Backend::Cuda => Dialect::Cuda,
        }
    }

    /// The documentation of the generated module.
    pub fn doc(self) -> &'static str {
        match self {
            Backend::OpenCl => "The kernel on OpenCL devices (the facade's `opencl` feature): OpenCL C compiled by the device's driver.",
            Backend::Cuda => "The kernel on CUDA devices (the facade's `cuda` feature): CUDA C compiled by NVRTC for the device's architecture.",
        }
    }

    /// What the generated `launch` takes and when its work is done, for
    /// its documentation.
    pub fn launch_doc(self) -> &'static str {
        match self {
            Backend::OpenCl => {
                "The buffers are `mdh::opencl::Buffer`s. It returns when the kernel has finished."
            }
            Backend::Cuda => {
                "The buffers are `mdh::cuda::CudaSlice`s. It issues the kernel asynchronously \
                on the device handle's stream (`Device::on_stream` picks another) and returns; \
                reading a buffer or `Device::synchronize` waits for it."
            }
        }
    }
}
