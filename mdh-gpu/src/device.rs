//! What every backend's device offers mdh, over the runtimes: what
//! prepared calls keep ([`GpuDevice`]: limits, programs, buffers of partial
//! results) and what mdh launches with ([`RawDevice`]: typed buffers,
//! kernel arguments in order, untyped uploads and timed launches), with the
//! plain types they speak in. The generated wrappers name no runtime's API:
//! they run one generic launch over these traits (the facade's
//! `gpu::calls::launch`). Each runtime implements them in its own module
//! (`opencl/traits.rs`, `cuda/traits.rs`).

use crate::memo::Memo;
use mdh_rt::value::Value;
use mdh_rt::Error;

/// The limits of the device a call runs on, which plans are fitted to, and
/// its CUDA architecture, which config entries are matched by.
#[derive(Clone, Copy, Debug)]
pub struct DeviceLimits {
    pub max_items: usize,
    pub local_bytes: u64,
    /// The compute capability of a CUDA device (`sm_90`: 90; see
    /// [`mdh_rt::gpu_plan::cuda_arch_number`]); `None` on OpenCL.
    pub cuda_arch: Option<u32>,
    /// What the runtime tells of the device's compute units: what the
    /// analytical default plan is derived from (the facade's
    /// `gpu::defaults`).
    pub compute: DeviceCompute,
}

/// What a device's runtime tells of its compute power (`None`: not known):
/// the analytical default plan's and the throughput model's figures (the
/// facade's `gpu::model`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceCompute {
    /// Parallel compute units: OpenCL's `CL_DEVICE_MAX_COMPUTE_UNITS`, CUDA's
    /// multiprocessors.
    pub compute_units: Option<usize>,
    /// The peak clock in Hz.
    pub clock_hz: Option<f64>,
    /// Threads, 32-bit registers and bytes of shared memory one unit holds
    /// at once (CUDA's per-multiprocessor attributes).
    pub unit_threads: Option<usize>,
    pub unit_registers: Option<usize>,
    pub unit_shared: Option<u64>,
    /// An OpenCL device of type CPU (PoCL): its default plan is the CPU's
    /// rule ([`mdh_rt::gpu_plan::GpuPlan::default_for`]: caches serve
    /// better than local memory), not the GPU classes'.
    pub cpu: bool,
}

/// One kernel launch of a call's job (the facade's `gpu::Job`), as 1-D
/// ranges. Its arguments, in this order: the input buffers (when
/// `inputs`), the output buffers, the buffers of partial results (when
/// `partials`), the params.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub kernel: String,
    pub inputs: bool,
    pub partials: bool,
    /// Work-items in all (a multiple of `local`) and per work-group.
    pub global: usize,
    pub local: usize,
    /// Bytes of dynamic shared memory (CUDA; OpenCL kernels declare all
    /// of their local memory).
    pub shared_bytes: u32,
}

impl Launch {
    /// The launch as CUDA grid and block dimensions (blocks along x).
    pub fn grid_block(&self) -> Result<([u32; 3], [u32; 3]), Error> {
        let dim = |n: usize| {
            u32::try_from(n).map_err(|_| {
                Error::Argument(format!(
                    "launching `{}`: {n} blocks or threads exceed CUDA's 32-bit launch dimensions; use smaller sizes or a plan with fewer, larger blocks",
                    self.kernel
                ))
            })
        };
        let blocks = self.global / self.local.max(1);
        Ok(([dim(blocks)?, 1, 1], [dim(self.local)?, 1, 1]))
    }

    /// The arguments of this launch as positions among all of its job's
    /// arguments, numbered inputs, outputs, partial results (one buffer per
    /// output access), params: the one statement of the argument order that
    /// untyped launchers (the facade's `gpu::Loaded`, the CPU execution of
    /// CUDA in tests) follow.
    pub fn arg_order(
        &self,
        inputs: usize,
        outputs: usize,
        partials: usize,
        params: usize,
    ) -> Vec<usize> {
        let mut a = Vec::new();
        if self.inputs {
            a.extend(0..inputs);
        }
        a.extend(inputs..inputs + outputs);
        let bufs = inputs + outputs + partials;
        if self.partials {
            a.extend(inputs + outputs..bufs);
        }
        a.extend(bufs..bufs + params);
        a
    }
}

/// A device of any runtime, as mdh's prepared calls (the facade's
/// `gpu::calls`) keep work for it: its limits, which plans are fitted to,
/// compiled programs and untyped buffers of partial results, all kept in
/// its [`Memo`]. Each runtime implements it in its own module; the tests'
/// devices implement it alone (without [`RawDevice`]) to run prepared
/// calls without a driver.
pub trait GpuDevice: 'static {
    /// A compiled program (module) of a job's source.
    type Program: Send + Sync + 'static;
    /// An untyped device buffer (device memory has no element type).
    type Buffer: Send + 'static;
    /// The limits plans are fitted to.
    fn limits(&self) -> DeviceLimits;
    /// The name config entries and tuned plans are matched against.
    fn device_name(&self) -> &str;
    /// Where the prepared calls of this device are kept.
    fn memo(&self) -> &Memo;
    /// The compiled program of `source` (the runtimes cache it by source).
    fn compile(&self, source: &str) -> Result<Self::Program, Error>;
    /// A buffer of `bytes` bytes (at least one) whose contents the kernels
    /// write before they read them: partial results.
    fn scratch(&self, bytes: usize) -> Result<Self::Buffer, Error>;
    /// The queue this handle issues work on (a CUDA stream), so that a
    /// buffer last used there is taken again there only; 0 for runtimes
    /// whose launches are blocking.
    fn queue_id(&self) -> usize {
        0
    }
    /// Calls `f` with this device as a [`RawDevice`], where it is one (the
    /// runtimes' devices, on which run-time tuning measures); `None` (the
    /// default): it is not (the tests' devices).
    fn with_raw<F: WithRaw>(&self, _f: F) -> Option<F::Output> {
        None
    }
}

/// What [`GpuDevice::with_raw`] calls: a function generic over the raw
/// device.
pub trait WithRaw {
    type Output;
    fn call<D: RawDevice>(self, dev: &D) -> Self::Output;
}

/// A runtime's device driven by mdh without knowing the runtime: typed
/// buffers of the generated wrappers' signatures ([`RawDevice::Buf`]),
/// launches of a kernel whose arguments are added in order
/// ([`RawDevice::kernel`], [`KernelArgs`]), untyped uploads and timed
/// launches (what the tuner and run-time tuning measure candidates with,
/// for any kernel, without generated code).
pub trait RawDevice: GpuDevice {
    /// A device buffer of elements `T`: what the generated `launch` takes.
    type Buf<T>: BufArg<Self>;
    /// A launch of one kernel being set up.
    type Kernel<'a>: KernelArgs<'a, Self>
    where
        Self: 'a;
    /// The version of the device's driver, which the plans of run-time
    /// tuning are kept per.
    fn driver(&self) -> &str;
    /// The device's compute units and clock, as far as the runtime says.
    fn compute(&self) -> DeviceCompute {
        self.limits().compute
    }
    /// A device buffer holding `bytes` (at least one byte: devices refuse
    /// empty buffers).
    fn upload(&self, bytes: &[u8]) -> Result<Self::Buffer, Error>;
    /// Copies the first `out.len()` bytes of `buf` into `out`.
    fn download(&self, buf: &Self::Buffer, out: &mut [u8]) -> Result<(), Error>;
    /// What the compiler reported of the program's `mdh_main`, where the
    /// runtime tells.
    fn resources(&self, _prog: &Self::Program) -> Option<MainResources> {
        None
    }
    /// A launch of kernel `name` of `prog` on this handle (CUDA: on its
    /// stream).
    fn kernel<'a>(&'a self, prog: &'a Self::Program, name: &str)
        -> Result<Self::Kernel<'a>, Error>;
    /// Runs launch `l` with `args` in order and waits for it; returns its
    /// time on the device (events).
    fn launch(
        &self,
        prog: &Self::Program,
        l: &Launch,
        args: &[RawArg<'_, Self::Buffer>],
    ) -> Result<std::time::Duration, Error> {
        let mut k = self.kernel(prog, &l.kernel)?;
        for a in args {
            k = match a {
                RawArg::Buffer { buf, elem } => k.bytes(buf, *elem),
                RawArg::Scalar(v) => k.scalar(*v),
            };
        }
        k.timed(l)
    }
}

/// The arguments of a kernel launch, added in the kernel's parameter
/// order, then the launch. Errors of the arguments are returned by the
/// launch.
pub trait KernelArgs<'a, D: RawDevice + ?Sized>: Sized {
    /// An untyped buffer the kernel reads as `elem`-byte values.
    fn bytes(self, b: &'a D::Buffer, elem: usize) -> Self;
    /// An untyped buffer the kernel writes as `elem`-byte values.
    fn bytes_mut(self, b: &'a mut D::Buffer, elem: usize) -> Self;
    /// A param, as the runtime's scalar (bool as a byte, usize as 64 bits).
    fn scalar(self, v: Value) -> Self;
    /// Issues the launch with the geometry of `l` (CUDA: asynchronously on
    /// the stream; OpenCL: it has finished on return).
    fn issue(self, l: &Launch) -> Result<(), Error>;
    /// Runs the launch, waits for it and returns its time on the device.
    fn timed(self, l: &Launch) -> Result<std::time::Duration, Error>;
}

/// A typed device buffer ([`RawDevice::Buf`]) as an argument of a launch,
/// whatever its element type.
pub trait BufArg<D: RawDevice + ?Sized> {
    /// Its elements.
    fn elements(&self, dev: &D) -> Result<usize, Error>;
    /// Adds it as a buffer the kernel reads.
    fn pass<'a>(&'a self, k: D::Kernel<'a>) -> D::Kernel<'a>;
    /// Adds it as a buffer the kernel writes.
    fn pass_mut<'a>(&'a mut self, k: D::Kernel<'a>) -> D::Kernel<'a>;
}

/// What the compiler reports of a job's `mdh_main` (CUDA: ptxas' `-v`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MainResources {
    /// Registers per thread.
    pub registers: u32,
    /// Bytes spilled to local memory and loaded back, per thread (`None`
    /// where the compiler's report did not say).
    pub spill_bytes: Option<u64>,
    /// Bytes of static shared memory per block.
    pub shared_bytes: u64,
}

/// One argument of an untyped launch.
pub enum RawArg<'a, B> {
    /// A device buffer whose elements the kernel reads as `elem`-byte values.
    Buffer {
        buf: &'a B,
        elem: usize,
    },
    Scalar(Value),
}

/// Calls `$f` with a param as the runtime's scalar type (bool as a byte,
/// usize as 64 bits, `f16` and `bf16` as their bits).
#[cfg(any(feature = "opencl", feature = "cuda"))]
macro_rules! with_scalar {
    ($v:expr, $f:expr) => {{
        use mdh_rt::value::Value;
        match $v {
            Value::F32(x) => $f(x),
            Value::F64(x) => $f(x),
            Value::F16(x) => $f(x.to_bits()),
            Value::Bf16(x) => $f(x.to_bits()),
            Value::I8(x) => $f(x),
            Value::I16(x) => $f(x),
            Value::I32(x) => $f(x),
            Value::I64(x) => $f(x),
            Value::U8(x) => $f(x),
            Value::U16(x) => $f(x),
            Value::U32(x) => $f(x),
            Value::U64(x) => $f(x),
            Value::Usize(x) => $f(x as u64),
            Value::Bool(x) => $f(u8::from(x)),
        }
    }};
}

#[cfg(any(feature = "opencl", feature = "cuda"))]
pub(crate) use with_scalar;

/// The [`GpuDevice`] and [`RawDevice`] methods both runtimes' devices
/// implement alike (their inherent methods have the same names and
/// meanings); `$gpu` and `$raw`: the methods they implement each their own way.
#[cfg(any(feature = "opencl", feature = "cuda"))]
macro_rules! runtime_device {
    ($dev:ty, gpu { $($gpu:tt)* } raw { $($raw:tt)* }) => {
        impl GpuDevice for $dev {
            fn device_name(&self) -> &str {
                self.name()
            }

            fn memo(&self) -> &crate::memo::Memo {
                Self::memo(self)
            }

            fn scratch(&self, bytes: usize) -> Result<Self::Buffer, Error> {
                self.buffer::<u8>(bytes)
            }

            fn with_raw<F: crate::device::WithRaw>(&self, f: F) -> Option<F::Output> {
                Some(f.call(self))
            }

            $($gpu)*
        }

        impl RawDevice for $dev {
            fn driver(&self) -> &str {
                self.driver_version()
            }

            fn upload(&self, bytes: &[u8]) -> Result<Self::Buffer, Error> {
                self.buffer_from(bytes)
            }

            fn download(&self, buf: &Self::Buffer, out: &mut [u8]) -> Result<(), Error> {
                self.read(buf, out)
            }

            $($raw)*
        }
    };
}

#[cfg(any(feature = "opencl", feature = "cuda"))]
pub(crate) use runtime_device;
