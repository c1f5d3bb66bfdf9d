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

/// What `NAME::opencl::tune` / `NAME::cuda::tune` (run-time tuning) found
/// and kept.
///
/// ```no_run
/// # #[cfg(feature = "opencl")] {
/// mdh::mdh! {
///     pub kernel dot {
///         inp(x: f32[N], y: f32[N]),
///         out(s: f32[]),
///         out_view(s: |i| ()),
///         md_hom[N](|a, b| a * b, (PW(+))),
///         inp_view(x: |i| (i), y: |i| (i)),
///     }
/// }
/// let dev = mdh::opencl::Device::first()?;
/// let sizes = dot::Sizes { N: 1 << 20 };
/// let report = dot::opencl::tune(&dev, sizes, std::time::Duration::from_secs(10))?;
/// println!("{:.3} ms → {:.3} ms ({}), kept in {}",
///     report.before_s * 1e3, report.best_s * 1e3, report.why, report.file.display());
/// # }
/// # Ok::<(), mdh::Error>(())
/// ```
pub use gpu::TuneReport;
/// Expands a kernel into a module `NAME` with `Sizes`, `cpu`, `SPEC` and,
/// with the features, `opencl`, `cuda` and `mpi` (the syntax: the guide's
/// chapter on kernels).
///
/// ```
/// mdh::mdh! {
///     /// Jacobi 1D: a three-point stencil.
///     pub kernel jacobi1d {
///         inp(x: f32[N + 2]),
///         out(y: f32[N]),
///         out_view(y: |i| (i)),
///         md_hom[N](|a, b, c| (a + b + c) / 3.0, (CC)),
///         inp_view(x: [|i| (i), |i| (i + 1), |i| (i + 2)]),
///     }
/// }
/// let x = [3.0f32, 6.0, 9.0, 12.0];
/// let mut y = [0.0f32; 2];
/// jacobi1d::cpu(&x, &mut y, jacobi1d::Sizes { N: 2 })?;
/// assert_eq!(y, [6.0, 9.0]);
/// # Ok::<(), mdh::Error>(())
/// ```
pub use mdh_macros::mdh;
/// How a kernel runs on a GPU: the plan of a config entry (`configs/NAME.yaml`),
/// of the analytical default, or one given to `NAME::opencl::run_with`.
///
/// ```
/// // matvec (dimensions i, k; inputs M, v): 16 rows per work-group, 64
/// // work-items along k each summing a strided part of its rows, v's
/// // tiles in local memory, loaded as vectors of 4.
/// let plan = mdh::GpuPlan {
///     groups: vec![0, 1],
///     items: vec![16, 64],
///     tile: vec![16, 1024],
///     local: vec![false, true],
///     blocked: false,
///     vector: vec![4, 4],
///     transpose: vec![false, false],
///     pad: vec![0, 0],
///     stages: 1,
///     mma: mdh::Mma::Off,
///     warps: vec![],
/// };
/// assert_eq!(plan.items.iter().product::<usize>(), 1024);
/// ```
pub use mdh_rt::gpu_plan::GpuPlan;
/// Tensor cores in a [`GpuPlan`] (CUDA, sm_80 and later): `Off`, TF32,
/// 3×TF32 (FP32 accuracy from three TF32 products), or `Bf16` / `F16`
/// (m16n8k16 on two 16-bit inputs of that type: exact products).
///
/// ```
/// assert_eq!(mdh::Mma::default(), mdh::Mma::Off);
/// assert_eq!(mdh::Mma::ALL.len(), 5);
/// ```
pub use mdh_rt::gpu_plan::Mma;
/// The 16-bit float element types, the `half` crate's `f16` and `bf16`, for
/// buffers and params declared so: a kernel computes on them in f32 and
/// rounds each operation's result to the type.
///
/// ```
/// mdh::mdh! {
///     pub kernel halve {
///         inp(x: bf16[N]),
///         out(y: bf16[N]),
///         out_view(y: |i| (i)),
///         md_hom[N](|a| a * 0.5, (CC)),
///         inp_view(x: |i| (i)),
///     }
/// }
/// let x = [1.0f32, 3.0].map(mdh::bf16::from_f32);
/// let mut y = [mdh::bf16::ZERO; 2];
/// halve::cpu(&x, &mut y, halve::Sizes { N: 2 })?;
/// assert_eq!(y, [0.5f32, 1.5].map(mdh::bf16::from_f32));
/// # Ok::<(), mdh::Error>(())
/// ```
pub use mdh_rt::value::{bf16, f16};
/// A kernel's run-time failure: every generated function returns
/// `Result<(), mdh::Error>` and never panics on bad arguments.
///
/// ```
/// mdh::mdh! {
///     pub kernel scale {
///         inp(x: f32[N]),
///         out(y: f32[N]),
///         out_view(y: |i| (i)),
///         md_hom[N](|a| 2.0 * a, (CC)),
///         inp_view(x: |i| (i)),
///     }
/// }
/// let mut y = vec![0.0f32; 3];
/// // `x` is shorter than N says.
/// let e = scale::cpu(&[1.0, 2.0], &mut y, scale::Sizes { N: 3 }).unwrap_err();
/// assert!(matches!(e, mdh::Error::BufferLength { .. }), "{e}");
/// ```
pub use mdh_rt::Error;

// The runtime's parts below are public for the workspace's tuner, benches
// and tests, not for users: hidden from the docs, no stability promise.
mod bind_cache;
#[doc(hidden)]
pub mod cpu;
mod debug_build;
#[doc(hidden)]
pub mod gpu;
#[cfg(any(doc, doctest))]
pub mod guide;
mod kept;
#[doc(hidden)]
pub mod machine;
mod parallel;
mod row_tiles;
mod scalar;
#[doc(hidden)]
pub mod search;
#[doc(hidden)]
pub mod simd;
mod stream;
mod widen;

#[cfg(feature = "mpi")]
pub mod mpi;

/// OpenCL devices and buffers (the `opencl` feature): what generated
/// `NAME::opencl::{run, launch}` take.
#[cfg(feature = "opencl")]
pub mod opencl {
    /// A buffer in an OpenCL device's memory: what `NAME::opencl::launch`
    /// takes, so that data stays on the device between calls.
    ///
    /// ```no_run
    /// mdh::mdh! {
    ///     pub kernel dot {
    ///         inp(x: f32[N], y: f32[N]),
    ///         out(s: f32[]),
    ///         out_view(s: |i| ()),
    ///         md_hom[N](|a, b| a * b, (PW(+))),
    ///         inp_view(x: |i| (i), y: |i| (i)),
    ///     }
    /// }
    /// let dev = mdh::opencl::Device::first()?;
    /// let x: mdh::opencl::Buffer<f32> = dev.buffer_from(&vec![1.0f32; 1000])?;
    /// let mut s = dev.buffer::<f32>(1)?;
    /// dot::opencl::launch(&dev, &x, &x, &mut s, dot::Sizes { N: 1000 })?;
    /// let mut host = [0.0f32];
    /// dev.read(&s, &mut host)?;
    /// # Ok::<(), mdh::Error>(())
    /// ```
    pub use mdh_gpu::opencl::Buffer;
    /// An OpenCL device: what `NAME::opencl::run` runs on. Without an
    /// OpenCL library or device, [`Device::first`] is an `Err`.
    ///
    /// ```no_run
    /// mdh::mdh! {
    ///     pub kernel dot {
    ///         inp(x: f32[N], y: f32[N]),
    ///         out(s: f32[]),
    ///         out_view(s: |i| ()),
    ///         md_hom[N](|a, b| a * b, (PW(+))),
    ///         inp_view(x: |i| (i), y: |i| (i)),
    ///     }
    /// }
    /// let dev = mdh::opencl::Device::first()?;
    /// let (x, y) = (vec![1.0f32; 1000], vec![2.0f32; 1000]);
    /// let mut s = [0.0f32];
    /// dot::opencl::run(&dev, &x, &y, &mut s, dot::Sizes { N: 1000 })?;
    /// assert_eq!(s[0], 2000.0);
    /// # Ok::<(), mdh::Error>(())
    /// ```
    pub use mdh_gpu::opencl::Device;
    #[doc(hidden)]
    pub use mdh_gpu::opencl::{Launch, Program};
}

/// CUDA devices (the `cuda` feature): what generated `NAME::cuda::{run,
/// launch}` take, and NVRTC.
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use mdh_gpu::cuda::cudarc;
    /// A buffer in a CUDA device's memory (cudarc's): what
    /// `NAME::cuda::launch` takes, so that data stays on the device.
    ///
    /// ```no_run
    /// mdh::mdh! {
    ///     pub kernel dot {
    ///         inp(x: f32[N], y: f32[N]),
    ///         out(s: f32[]),
    ///         out_view(s: |i| ()),
    ///         md_hom[N](|a, b| a * b, (PW(+))),
    ///         inp_view(x: |i| (i), y: |i| (i)),
    ///     }
    /// }
    /// let dev = mdh::cuda::Device::first()?;
    /// let x: mdh::cuda::CudaSlice<f32> = dev.buffer_from(&vec![1.0f32; 1000])?;
    /// let mut s = dev.buffer::<f32>(1)?;
    /// dot::cuda::launch(&dev, &x, &x, &mut s, dot::Sizes { N: 1000 })?;
    /// let mut host = [0.0f32];
    /// dev.read(&s, &mut host)?;
    /// # Ok::<(), mdh::Error>(())
    /// ```
    pub use mdh_gpu::cuda::cudarc::driver::CudaSlice;
    /// A CUDA stream (cudarc's): [`Device::on_stream`] gives a handle
    /// whose calls run on it, so that calls on several streams overlap.
    ///
    /// ```no_run
    /// let dev = mdh::cuda::Device::first()?;
    /// let stream: std::sync::Arc<mdh::cuda::CudaStream> =
    ///     dev.context().new_stream().map_err(|e| mdh::Error::Backend(e.to_string()))?;
    /// let on_it = dev.on_stream(stream)?;
    /// # Ok::<(), mdh::Error>(())
    /// ```
    pub use mdh_gpu::cuda::cudarc::driver::CudaStream;
    /// A CUDA device: what `NAME::cuda::run` runs on. Without a driver or
    /// NVRTC, [`Device::first`] is an `Err`.
    ///
    /// ```no_run
    /// mdh::mdh! {
    ///     pub kernel dot {
    ///         inp(x: f32[N], y: f32[N]),
    ///         out(s: f32[]),
    ///         out_view(s: |i| ()),
    ///         md_hom[N](|a, b| a * b, (PW(+))),
    ///         inp_view(x: |i| (i), y: |i| (i)),
    ///     }
    /// }
    /// let dev = mdh::cuda::Device::first()?;
    /// let (x, y) = (vec![1.0f32; 1000], vec![2.0f32; 1000]);
    /// let mut s = [0.0f32];
    /// dot::cuda::run(&dev, &x, &y, &mut s, dot::Sizes { N: 1000 })?;
    /// assert_eq!(s[0], 2000.0);
    /// # Ok::<(), mdh::Error>(())
    /// ```
    pub use mdh_gpu::cuda::Device;
    // NVRTC and the modules' resources: for the tests and the tuner.
    #[doc(hidden)]
    pub use mdh_gpu::cuda::{
        nvrtc_available, nvrtc_compile, nvrtc_resources, Compiled, Kernel, KernelResources, Module,
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
    /// A host buffer of any element type: what the interpreter and the
    /// generated `run_dyn` functions take.
    ///
    /// ```
    /// use mdh::reference::Buffer;
    /// let b: Buffer = vec![1.0f32, 2.0].into();
    /// assert_eq!(b.len(), 2);
    /// ```
    pub use mdh_rt::value::Buffer;
    /// A scalar of any type: a kernel's param for the interpreter.
    ///
    /// ```
    /// use mdh::reference::Value;
    /// let alpha = Value::F32(0.5);
    /// assert_eq!(alpha, Value::F32(0.5));
    /// ```
    pub use mdh_rt::value::Value;

    /// Runs a kernel (see [`kernel`]) on host buffers: `sizes` in the
    /// order of the kernel's `Sizes`, inputs, outputs and params in
    /// declaration order.
    ///
    /// ```
    /// mdh::mdh! {
    ///     pub kernel dot {
    ///         inp(x: f32[N], y: f32[N]),
    ///         out(s: f32[]),
    ///         out_view(s: |i| ()),
    ///         md_hom[N](|a, b| a * b, (PW(+))),
    ///         inp_view(x: |i| (i), y: |i| (i)),
    ///     }
    /// }
    /// use mdh::reference::Buffer;
    /// let k = mdh::reference::kernel(dot::SPEC)?;
    /// let inputs: [Buffer; 2] = [vec![1.0f32, 2.0].into(), vec![3.0f32, 4.0].into()];
    /// let mut outputs: [Buffer; 1] = [vec![0.0f32].into()];
    /// mdh::reference::run(&k, &[2], &inputs, &mut outputs, &[])?;
    /// assert_eq!(outputs[0], Buffer::from(vec![11.0f32]));
    /// # Ok::<(), mdh::Error>(())
    /// ```
    #[cfg(feature = "reference")]
    pub use mdh_core::interp::run;

    /// Parses and checks a kernel's source (a generated module's `SPEC`):
    /// what [`run`] takes.
    ///
    /// ```
    /// let k = mdh::reference::kernel(
    ///     "kernel copy { inp(x: f32[N]), out(y: f32[N]), out_view(y: |i| (i)), \
    ///      md_hom[N](|a| a, (CC)), inp_view(x: |i| (i)) }",
    /// )?;
    /// assert_eq!(k.size_params.len(), 1);
    /// # Ok::<(), mdh::Error>(())
    /// ```
    #[cfg(feature = "reference")]
    pub fn kernel(spec: &str) -> Result<mdh_core::Checked, crate::Error> {
        mdh_core::compile_str(spec)
    }

    /// Parses and checks a kernel of one md_hom or of stages (a generated
    /// module's `SPEC`): what [`run_program`] takes.
    ///
    /// ```
    /// use mdh::reference::Buffer;
    /// let k = mdh::reference::program(
    ///     "kernel center { inp(x: f32[N]), out(y: f32[N]), tmp(s: f32[]), \
    ///      stage sum { out_view(s: |i| ()), md_hom[N](|a| a, (PW(+))), inp_view(x: |i| (i)) }, \
    ///      stage sub { out_view(y: |i| (i)), md_hom[N](|a, m| a - m, (CC)), \
    ///                  inp_view(x: |i| (i), s: |i| ()) } }",
    /// )?;
    /// let mut y: [Buffer; 1] = [vec![0.0f32; 2].into()];
    /// mdh::reference::run_program(&k, &[2], &[vec![1.0f32, 2.0].into()], &mut y, &[])?;
    /// assert_eq!(y[0], Buffer::from(vec![-2.0f32, -1.0]));
    /// # Ok::<(), mdh::Error>(())
    /// ```
    #[cfg(feature = "reference")]
    pub fn program(spec: &str) -> Result<mdh_core::Program<mdh_core::Checked>, crate::Error> {
        mdh_core::compile_program_str(spec)
    }

    /// Runs a kernel of one md_hom or of stages (see [`program`]): the
    /// stages in order, each as [`run`] does, on intermediates allocated
    /// for the call.
    ///
    /// ```
    /// use mdh::reference::Buffer;
    /// // The first stage sums x into the intermediate `s`, the second
    /// // writes the maximum of each x and that sum.
    /// let k = mdh::reference::program(
    ///     "kernel clip { inp(x: f32[N]), out(y: f32[N]), tmp(s: f32[]), \
    ///      stage sum { out_view(s: |i| ()), md_hom[N](|a| a, (PW(+))), inp_view(x: |i| (i)) }, \
    ///      stage top { out_view(y: |i| (i)), md_hom[N](|a, m| a.max(m), (CC)), \
    ///                  inp_view(x: |i| (i), s: |i| ()) } }",
    /// )?;
    /// let mut y: [Buffer; 1] = [vec![0.0f32; 3].into()];
    /// mdh::reference::run_program(&k, &[3], &[vec![1.0f32, 9.0, -4.0].into()], &mut y, &[])?;
    /// assert_eq!(y[0], Buffer::from(vec![6.0f32, 9.0, 6.0]));
    /// # Ok::<(), mdh::Error>(())
    /// ```
    #[cfg(feature = "reference")]
    pub use mdh_core::interp::run_program;

    /// The `KernelInfo` the generated wrappers hold as constants, for a
    /// kernel known at run time (leaked: the tuner and tests make a few).
    #[cfg(feature = "reference")]
    #[doc(hidden)]
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
    pub use crate::cpu::{cpu_name, execute, isa, CorLayer, IndexBox, Isa, Region, SyncPtr};
    pub use crate::debug_build::note_debug_build;
    pub use crate::gpu;
    pub use crate::kept::Kept;
    pub use crate::machine::{choose_plan, Machine, PlanEntry, RowsWithin};
    #[cfg(feature = "mpi")]
    pub use crate::mpi;
    pub use crate::row_tiles::{for_each_tile, row_tile};
    pub use crate::scalar::{FloatMinMax, IntDiv};
    pub use crate::simd::{mul_add, tile_origin, vector_step, V};
    pub use crate::simd::{widen_bf16, widen_f16};
    pub use crate::stream::{
        pays as stream_pays, starts_lines, within_call as stream_within_call,
        Results as StreamedResults, StreamWriter,
    };
    pub use crate::widen::{bf16_pairs, pack_pairs, Bf16Pairs};
    pub use mdh_rt::desc::{AccessDesc, AffineDesc, ArgSizes, Bound, BufDesc, KernelDesc, SizeOp};
    pub use mdh_rt::gpu_plan::{GpuPlan, Mma};
    pub use mdh_rt::value::Value;
    pub use mdh_rt::value::{bf16, f16};
    pub use mdh_rt::{DimKind, ScalarType};
    pub use std::borrow::Cow;
    pub use std::sync::OnceLock;
}
