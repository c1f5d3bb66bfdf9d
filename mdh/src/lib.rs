//! # mdh: Multi-Dimensional Homomorphisms in Rust
//!
//! Write a data-parallel computation once, as the MDH paper's
//! `out_view ∘ md_hom(f, (⊗1, …, ⊗D)) ∘ inp_view`, inside [`mdh!`]; get a
//! parallel CPU kernel (and, with the `opencl` / `cuda` features, GPU
//! kernels) for any input size.
//!
//! ```
//! use mdh::mdh;
//!
//! mdh! {
//!     /// Matrix-vector multiplication: w = M · v
//!     pub kernel matvec {
//!         inp(M: f32[I, K], v: f32[K]),
//!         out(w: f32[I]),
//!         out_view(w: |i, k| (i)),
//!         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
//!         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
//!     }
//! }
//!
//! let (m, v) = (vec![1.0f32; 512 * 4096], vec![2.0f32; 4096]);
//! let mut w = vec![0.0f32; 512];
//! matvec::cpu(&m, &v, &mut w, matvec::Sizes { I: 512, K: 4096 })?;
//! assert!(w.iter().all(|&x| x == 8192.0));
//! # Ok::<(), mdh::Error>(())
//! ```
//!
//! Each kernel becomes a module with `Sizes`, `cpu(inputs…, outputs…,
//! params…, Sizes) -> Result<(), Error>`, and `SPEC`, the kernel's source,
//! which [`reference`](mod@reference) evaluates with the reference interpreter (the
//! `reference` feature).
//!
//! The runtime depends on `mdh-rt` only; the compiler (`mdh-core`) runs in the
//! macro, and enters a user's binary only with the `reference` feature.

pub use mdh_macros::mdh;
pub use mdh_rt::Error;

mod bind_cache;
pub mod cpu;
mod debug_build;
pub mod gpu;
pub mod machine;
mod parallel;
pub mod search;
pub mod simd;
mod stream;

#[cfg(feature = "mpi")]
pub mod mpi;

/// OpenCL devices and buffers (the `opencl` feature): what generated
/// `NAME::opencl::{run, launch}` take.
#[cfg(feature = "opencl")]
pub mod opencl {
    pub use mdh_gpu::opencl::{Buffer, Device, Launch, Program};
}

/// CUDA devices (the `cuda` feature): what generated `NAME::cuda::{run,
/// launch}` take, and NVRTC.
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use mdh_gpu::cuda::cudarc;
    pub use mdh_gpu::cuda::cudarc::driver::{CudaSlice, CudaStream};
    pub use mdh_gpu::cuda::{
        nvrtc_available, nvrtc_compile, nvrtc_resources, Compiled, Device, Kernel, KernelResources,
        Module,
    };
}

/// Keeps its input when the facade's `cuda` feature is on (see
/// [`__if_opencl!`]).
#[cfg(feature = "cuda")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_cuda {
    ($($t:tt)*) => { $($t)* };
}

#[cfg(not(feature = "cuda"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_cuda {
    ($($t:tt)*) => {};
}

/// Keeps its input when the facade's `opencl` feature is on (features in
/// generated code would be evaluated in the user's crate, not here).
#[cfg(feature = "opencl")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_opencl {
    ($($t:tt)*) => { $($t)* };
}

#[cfg(not(feature = "opencl"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_opencl {
    ($($t:tt)*) => {};
}

/// Keeps its input when the facade's `mpi` feature is on (see
/// [`__if_opencl!`]).
#[cfg(feature = "mpi")]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_mpi {
    ($($t:tt)*) => { $($t)* };
}

#[cfg(not(feature = "mpi"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __if_mpi {
    ($($t:tt)*) => {};
}

/// The reference interpreter (the `reference` feature): evaluates a kernel's
/// high-level definition directly. It is slow and obviously correct; tests
/// compare generated kernels with it. Its values and buffers (what generated
/// `NAME::opencl::run` / `NAME::cuda::run` take) are here without the feature.
pub mod reference {
    pub use mdh_rt::value::{Buffer, Value};

    #[cfg(feature = "reference")]
    pub use mdh_core::interp::run;

    /// Parses and checks a kernel's source (a generated module's `SPEC`).
    #[cfg(feature = "reference")]
    pub fn kernel(spec: &str) -> Result<mdh_core::Checked, crate::Error> {
        mdh_core::compile_str(spec)
    }

    /// The `KernelInfo` the generated wrappers hold as constants, for a
    /// kernel known at run time (leaked: the tuner and tests make a few).
    #[cfg(feature = "reference")]
    pub fn kernel_info(
        k: &mdh_core::Checked,
        dialect: mdh_core::codegen::c_expr::Dialect,
    ) -> &'static crate::gpu::KernelInfo {
        let t = mdh_core::codegen::gpu_api::KernelTables::of(k);
        Box::leak(Box::new(crate::gpu::KernelInfo {
            template: Box::leak(mdh_core::codegen::gpu::template(k, dialect).into_boxed_str()),
            in_bytes: Box::leak(t.in_bytes.into_boxed_slice()),
            acc_bytes: Box::leak(t.acc_bytes.into_boxed_slice()),
            identity: Box::leak(t.identity.into_boxed_slice()),
            in_types: Box::leak(t.in_types.into_boxed_slice()),
            out_types: Box::leak(t.out_types.into_boxed_slice()),
            param_types: Box::leak(t.param_types.into_boxed_slice()),
        }))
    }
}

/// What generated code refers to. Not a public API.
#[doc(hidden)]
pub mod __rt {
    pub use crate::bind_cache::{BindCache, Binding};
    pub use crate::cpu::{
        cpu_name, execute, isa, CorLayer, FloatMinMax, IndexBox, IntDiv, Isa, Region, SyncPtr,
    };
    pub use crate::debug_build::note_debug_build;
    pub use crate::gpu;
    pub use crate::machine::{choose_plan, Machine, PlanEntry};
    #[cfg(feature = "mpi")]
    pub use crate::mpi;
    pub use crate::simd::{mul_add, tile_origin, vector_step, V};
    pub use crate::stream::{
        pays as stream_pays, starts_lines, Results as StreamedResults, StreamWriter,
    };
    pub use mdh_rt::desc::{AccessDesc, AffineDesc, ArgSizes, Bound, BufDesc, KernelDesc, SizeOp};
    pub use mdh_rt::gpu_plan::{GpuPlan, Mma};
    pub use mdh_rt::{DimKind, ScalarType};
    pub use std::borrow::Cow;
    pub use std::sync::OnceLock;
}
