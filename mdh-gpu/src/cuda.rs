//! The CUDA runtime of mdh over [`cudarc`]: devices, buffers, NVRTC
//! compilation with a module cache, and kernel launches (asynchronous on a
//! stream, or timed with CUDA events).
//!
//! cudarc is built with dynamic loading: this crate builds on machines
//! without CUDA, and every entry point first checks that the driver
//! (`libcuda.so`) or NVRTC (`libnvrtc.so.12`) can be loaded, returning an
//! [`Error::Backend`] when it cannot (cudarc itself would panic).
//!
//! NVRTC is looked up by name (the system's library path and
//! `LD_LIBRARY_PATH`), then at `MDH_NVRTC_LIB` (the library file or its
//! folder), then in the `nvidia-cuda-nvrtc-cu12` wheel of a `pip install
//! --user` (`~/.local/lib/python3.*/site-packages/nvidia/cuda_nvrtc/lib`).
//!
//! ```no_run
//! # fn main() -> Result<(), mdh_rt::Error> {
//! use mdh_gpu::cuda::Device;
//! let dev = Device::first()?;
//! let m = dev.module(r#"extern "C" __global__ void twice(float* x, int n) {
//!     int i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < n) x[i] *= 2.0f;
//! }"#)?;
//! let mut x = dev.buffer_from(&[1.0f32, 2.0, 3.0])?;
//! let took = m.kernel("twice")?.arg_slice_mut(&mut x).arg_scalar(3i32).run([1, 1, 1], [32, 1, 1], 0)?;
//! let mut out = [0.0f32; 3];
//! dev.read(&x, &mut out)?;
//! assert_eq!(out, [2.0, 4.0, 6.0]);
//! # let _ = took; Ok(()) }
//! ```

pub use cudarc;
#[cfg(feature = "sim")]
pub(crate) use nvrtc::pip_nvidia_dirs;
pub use nvrtc::{
    nvrtc_available, nvrtc_compile, nvrtc_compile_with_options, nvrtc_version, Compiled,
};
pub use resources::{cubin_resources, nvrtc_resources, CompiledCubin, KernelResources};

mod nvrtc;
mod resources;
mod traits;

use nvrtc::{cubin, Image};

use cudarc::driver::{
    sys::{CUevent_flags, CUfunction_attribute},
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, LaunchArgs,
    LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use mdh_rt::Error;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::backend;

/// Runs `f`, turning a panic inside cudarc (a missing symbol in an old
/// library, for instance) into an `Err` that names `what`.
fn guarded<R>(
    what: impl std::fmt::Display,
    f: impl FnOnce() -> Result<R, Error>,
) -> Result<R, Error> {
    crate::guarded(f, |msg| format!("{what}: the CUDA library failed: {msg}"))
}

fn driver_err(what: &str) -> impl Fn(cudarc::driver::DriverError) -> Error + '_ {
    move |e| backend(format!("CUDA: {what} failed: {e}"))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ------------------------------------------------------------------ libraries

/// Whether the CUDA driver library (`libcuda.so`) can be loaded. A machine
/// can have the driver and still no device: see [`Device::first`].
pub fn driver_available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    // SAFETY: tries to dlopen the driver library by its usual names.
    *OK.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

// ------------------------------------------------------------------ devices

/// A CUDA device: its primary context, the stream work is issued on, and a
/// cache of loaded modules keyed by source (the device fixes the
/// architecture; NVRTC output is cached per process by source and
/// architecture). [`Device::on_stream`] gives a handle that issues work on
/// another stream of the same context and shares the module cache.
pub struct Device {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    ordinal: usize,
    name: String,
    cc: (u32, u32),
    arch: String,
    max_threads: usize,
    shared_bytes: u64,
    shared_optin_bytes: u64,
    sm_count: Option<usize>,
    clock_khz: Option<u32>,
    sm_threads: Option<usize>,
    sm_registers: Option<usize>,
    sm_shared_bytes: Option<u64>,
    driver_version: String,
    modules: Arc<Mutex<HashMap<String, Arc<Module>>>>,
    memo: Arc<crate::memo::Memo>,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("ordinal", &self.ordinal)
            .field("name", &self.name)
            .field("compute_capability", &self.cc)
            .finish_non_exhaustive()
    }
}

impl Device {
    /// The first CUDA device, or an `Err` that says why there is none (no
    /// driver library, no device, or the driver failed to start).
    pub fn first() -> Result<Device, Error> {
        Self::by_index(0)
    }

    /// The CUDA device with ordinal `i`.
    pub fn by_index(i: usize) -> Result<Device, Error> {
        if !driver_available() {
            return Err(backend(
                "no CUDA driver: libcuda.so (the NVIDIA driver library) could not be loaded, \
                 so there is no CUDA device on this machine",
            ));
        }
        guarded("opening a CUDA device", || {
            cudarc::driver::result::init()
                .map_err(|e| backend(format!("no usable CUDA device: cuInit failed: {e}")))?;
            let n = CudaContext::device_count().map_err(driver_err("counting CUDA devices"))?;
            if i >= n.max(0) as usize {
                return Err(backend(format!(
                    "there is no CUDA device {i}: the driver reports {n} device(s)"
                )));
            }
            let ctx = CudaContext::new(i).map_err(driver_err("creating a context"))?;
            let stream = ctx.default_stream();
            let name = ctx.name().map_err(driver_err("reading the device name"))?;
            let (major, minor) = ctx
                .compute_capability()
                .map_err(driver_err("reading the compute capability"))?;
            let cc = (major.max(0) as u32, minor.max(0) as u32);
            let attr = |a, what: &str| {
                ctx.attribute(a)
                    .map(|v| v.max(0) as usize)
                    .map_err(driver_err(what))
            };
            use cudarc::driver::sys::CUdevice_attribute as A;
            let max_threads = attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                "reading the threads per block",
            )?;
            let shared_bytes = attr(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                "reading the shared memory per block",
            )? as u64;
            // Devices before Volta cannot opt in: their limit is the default.
            let shared_optin_bytes = ctx
                .attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
                .map(|v| (v.max(0) as u64).max(shared_bytes))
                .unwrap_or(shared_bytes);
            // Informative only (the tuner's lower bounds): unknown when the
            // driver does not answer.
            let known = |a| ctx.attribute(a).ok().filter(|&v| v > 0);
            let sm_count = known(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map(|v| v as usize);
            let clock_khz = known(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).map(|v| v as u32);
            // What one SM holds at once: the analytical default plan's
            // occupancy (mdh::gpu::defaults).
            let sm_threads =
                known(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR).map(|v| v as usize);
            let sm_registers =
                known(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR).map(|v| v as usize);
            let sm_shared_bytes =
                known(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
                    .map(|v| v as u64);
            let mut driver = 0;
            // SAFETY: cuDriverGetVersion writes one int through the pointer,
            // which points at a live local.
            let driver_version =
                match unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) } {
                    cudarc::driver::sys::CUresult::CUDA_SUCCESS => {
                        format!("CUDA {}.{}", driver / 1000, driver % 1000 / 10)
                    }
                    _ => String::new(),
                };
            Ok(Device {
                ctx,
                stream,
                ordinal: i,
                name,
                cc,
                arch: format!("sm_{}{}", cc.0, cc.1),
                max_threads,
                shared_bytes,
                shared_optin_bytes,
                sm_count,
                clock_khz,
                sm_threads,
                sm_registers,
                sm_shared_bytes,
                driver_version,
                modules: Arc::new(Mutex::new(HashMap::new())),
                memo: Arc::default(),
            })
        })
    }

    /// The number of CUDA devices (0 without a driver).
    pub fn count() -> usize {
        if !driver_available() {
            return 0;
        }
        guarded("counting CUDA devices", || {
            cudarc::driver::result::init().map_err(driver_err("cuInit"))?;
            CudaContext::device_count().map_err(driver_err("counting CUDA devices"))
        })
        .map(|n| n.max(0) as usize)
        .unwrap_or(0)
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The device's name, e.g. `"NVIDIA H100 80GB HBM3"`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The CUDA version of the driver, e.g. `"CUDA 13.0"` (empty if the
    /// driver does not say).
    pub fn driver_version(&self) -> &str {
        &self.driver_version
    }

    /// The compute capability `(major, minor)`, e.g. `(9, 0)`.
    pub fn compute_capability(&self) -> (u32, u32) {
        self.cc
    }

    /// The NVRTC architecture the device's modules are compiled for, e.g. `"sm_90"`.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    /// The most threads one block may have (1024 on current GPUs).
    pub fn max_threads_per_block(&self) -> usize {
        self.max_threads
    }

    /// The shared memory one block may use without opting in to more, in
    /// bytes (48 KiB on current GPUs).
    pub fn shared_mem_per_block(&self) -> u64 {
        self.shared_bytes
    }

    /// The shared memory one block may use when its launch opts in to
    /// more than [`Device::shared_mem_per_block`] (static and dynamic
    /// together; `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`:
    /// 163 KiB on an A100, 227 KiB on an H100).
    pub fn shared_mem_per_block_optin(&self) -> u64 {
        self.shared_optin_bytes
    }

    /// The device's streaming multiprocessors
    /// (`CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`; `None` if the driver does
    /// not say).
    pub fn sm_count(&self) -> Option<usize> {
        self.sm_count
    }

    /// The device's peak clock in kHz (`CU_DEVICE_ATTRIBUTE_CLOCK_RATE`;
    /// `None` if the driver does not say).
    pub fn clock_khz(&self) -> Option<u32> {
        self.clock_khz
    }

    /// Threads one multiprocessor holds at once
    /// (`CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR`; `None` if the
    /// driver does not say).
    pub fn sm_threads(&self) -> Option<usize> {
        self.sm_threads
    }

    /// 32-bit registers of one multiprocessor
    /// (`CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR`).
    pub fn sm_registers(&self) -> Option<usize> {
        self.sm_registers
    }

    /// Shared memory of one multiprocessor in bytes
    /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR`).
    pub fn sm_shared_bytes(&self) -> Option<u64> {
        self.sm_shared_bytes
    }

    /// This device issuing its copies and launches on `stream` (e.g. one
    /// of the caller's, to overlap with other work) instead of the default
    /// stream; the module cache is shared. `stream` must belong to this
    /// device's context.
    pub fn on_stream(&self, stream: Arc<CudaStream>) -> Result<Device, Error> {
        if stream.context().cu_ctx() != self.ctx.cu_ctx() {
            return Err(backend(format!(
                "CUDA: the stream belongs to another context than device {} ({}); create it with \
                 `device.context().new_stream()`",
                self.ordinal, self.name
            )));
        }
        Ok(Device {
            ctx: self.ctx.clone(),
            stream,
            ordinal: self.ordinal,
            name: self.name.clone(),
            cc: self.cc,
            arch: self.arch.clone(),
            max_threads: self.max_threads,
            shared_bytes: self.shared_bytes,
            shared_optin_bytes: self.shared_optin_bytes,
            sm_count: self.sm_count,
            clock_khz: self.clock_khz,
            sm_threads: self.sm_threads,
            sm_registers: self.sm_registers,
            sm_shared_bytes: self.sm_shared_bytes,
            driver_version: self.driver_version.clone(),
            modules: self.modules.clone(),
            memo: self.memo.clone(),
        })
    }

    /// What callers keep for this device (mdh's prepared calls), shared
    /// with the handles of [`Device::on_stream`].
    pub fn memo(&self) -> &crate::memo::Memo {
        &self.memo
    }

    /// The context (for direct cudarc use).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream all of this device's copies and launches are issued on
    /// (the context's default stream).
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A device buffer of no elements. The driver refuses allocations of 0
    /// bytes, so it owns one byte.
    fn empty<T>(&self) -> Result<CudaSlice<T>, Error> {
        guarded("allocating device memory", || {
            let byte = self
                .stream
                .alloc_zeros::<u8>(1)
                .map_err(driver_err("allocating device memory"))?;
            // SAFETY: the pointer is a live allocation of one byte, which is
            // room for 0 elements; the new slice frees it when dropped.
            Ok(unsafe { self.stream.upgrade_device_ptr(byte.leak(), 0) })
        })
    }

    /// A device buffer holding a copy of `data`.
    pub fn buffer_from<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>, Error> {
        if data.is_empty() {
            return self.empty();
        }
        guarded("copying to the device", || {
            self.stream
                .clone_htod(data)
                .map_err(driver_err("copying to the device"))
        })
    }

    /// A zeroed device buffer of `len` elements.
    pub fn buffer<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<CudaSlice<T>, Error> {
        if len == 0 {
            return self.empty();
        }
        guarded("allocating device memory", || {
            self.stream
                .alloc_zeros(len)
                .map_err(driver_err("allocating device memory"))
        })
    }

    /// Copies `buf` into `out` (which must have the same length) and waits
    /// for the copy and all work before it on the stream.
    pub fn read<T: DeviceRepr>(&self, buf: &CudaSlice<T>, out: &mut [T]) -> Result<(), Error> {
        if buf.len() != out.len() {
            return Err(backend(format!(
                "reading a device buffer of {} elements into a host slice of {}",
                buf.len(),
                out.len()
            )));
        }
        if out.is_empty() {
            return self.synchronize();
        }
        guarded("copying from the device", || {
            self.stream
                .memcpy_dtoh(buf, out)
                .map_err(driver_err("copying from the device"))?;
            self.stream
                .synchronize()
                .map_err(driver_err("waiting for the device"))
        })
    }

    /// Waits until all work issued on the device's stream has finished.
    pub fn synchronize(&self) -> Result<(), Error> {
        guarded("waiting for the device", || {
            self.stream
                .synchronize()
                .map_err(driver_err("waiting for the device"))
        })
    }

    /// Compiles `source` with NVRTC for this device's architecture (once per
    /// process per source and architecture) and loads it (once per device).
    /// The `Err` of a failed compilation carries NVRTC's log.
    pub fn module(&self, source: &str) -> Result<Arc<Module>, Error> {
        if let Some(m) = lock(&self.modules).get(source) {
            return Ok(m.clone());
        }
        let image = cubin(source, &self.arch)?;
        let module = guarded("loading a CUDA module", || {
            self.ctx
                .load_module(cudarc::nvrtc::Ptx::from_binary(image.0.clone()))
                .map_err(driver_err("loading the compiled module"))
        })?;
        let m = Arc::new(Module {
            module,
            image,
            stream: self.stream.clone(),
            functions: Mutex::new(HashMap::new()),
        });
        Ok(lock(&self.modules)
            .entry(source.to_owned())
            .or_insert(m)
            .clone())
    }
}

// ------------------------------------------------------------------ modules and launches

/// A loaded CUDA module: the kernels of one source on one device.
pub struct Module {
    module: Arc<CudaModule>,
    image: Image,
    stream: Arc<CudaStream>,
    functions: Mutex<HashMap<String, CudaFunction>>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module").finish_non_exhaustive()
    }
}

impl Module {
    /// The cudarc module (for direct cudarc use).
    pub fn cuda_module(&self) -> &Arc<CudaModule> {
        &self.module
    }

    /// What ptxas reported of each kernel of the module (registers,
    /// spills, shared memory).
    pub fn resources(&self) -> &[KernelResources] {
        &self.image.1
    }

    /// The kernel `name` (an `extern "C" __global__` function of the source).
    pub fn function(&self, name: &str) -> Result<CudaFunction, Error> {
        if let Some(f) = lock(&self.functions).get(name) {
            return Ok(f.clone());
        }
        if name.contains('\0') {
            return Err(backend(format!("`{name}` is not a kernel name")));
        }
        let f = guarded("loading a CUDA kernel", || {
            self.module.load_function(name).map_err(|e| {
                backend(format!(
                    "CUDA: the module has no kernel `{name}` (is it declared extern \"C\" __global__?): {e}"
                ))
            })
        })?;
        lock(&self.functions).insert(name.to_owned(), f.clone());
        Ok(f)
    }

    /// A launch of kernel `name` on the stream of the device that loaded
    /// the module: add its arguments in parameter order, then
    /// [`Kernel::launch`] or [`Kernel::run`].
    pub fn kernel<'a>(&self, name: &str) -> Result<Kernel<'a>, Error> {
        self.kernel_on(&self.stream, name)
    }

    /// A launch of kernel `name` on `stream` (of the module's context).
    pub fn kernel_on<'a>(&self, stream: &Arc<CudaStream>, name: &str) -> Result<Kernel<'a>, Error> {
        Ok(Kernel {
            func: self.function(name)?,
            stream: stream.clone(),
            name: name.to_owned(),
            args: Vec::new(),
        })
    }
}

/// "launching CUDA kernel `NAME`", for messages.
struct Launching<'a>(&'a str);

impl std::fmt::Display for Launching<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "launching CUDA kernel `{}`", self.0)
    }
}

/// One argument of a launch, pushed onto cudarc's launch builder.
trait KernelArg {
    fn push<'s>(&'s mut self, b: &mut LaunchArgs<'s>);
}

struct SliceArg<'a, T>(&'a CudaSlice<T>);
impl<T> KernelArg for SliceArg<'_, T> {
    fn push<'s>(&'s mut self, b: &mut LaunchArgs<'s>) {
        b.arg(self.0);
    }
}

struct SliceMutArg<'a, T>(&'a mut CudaSlice<T>);
impl<T> KernelArg for SliceMutArg<'_, T> {
    fn push<'s>(&'s mut self, b: &mut LaunchArgs<'s>) {
        b.arg(&mut *self.0);
    }
}

struct ScalarArg<T>(T);
impl<T: DeviceRepr> KernelArg for ScalarArg<T> {
    fn push<'s>(&'s mut self, b: &mut LaunchArgs<'s>) {
        b.arg(&self.0);
    }
}

/// A kernel launch being set up: arguments in the kernel's parameter order,
/// then [`Kernel::run`].
///
/// The argument types must match the kernel's parameters (a device buffer of
/// `T` for a `T*`, a scalar of the same C type by value): cudarc cannot check
/// that, and a mismatch gives wrong results or a launch error.
#[must_use = "a kernel launch does nothing until `run`"]
pub struct Kernel<'a> {
    func: CudaFunction,
    stream: Arc<CudaStream>,
    name: String,
    args: Vec<Box<dyn KernelArg + 'a>>,
}

impl<'a> Kernel<'a> {
    /// Adds a device buffer the kernel reads (a `const T*` parameter).
    pub fn arg_slice<T>(mut self, s: &'a CudaSlice<T>) -> Self {
        self.args.push(Box::new(SliceArg(s)));
        self
    }

    /// Adds a device buffer the kernel writes (a `T*` parameter).
    pub fn arg_slice_mut<T>(mut self, s: &'a mut CudaSlice<T>) -> Self {
        self.args.push(Box::new(SliceMutArg(s)));
        self
    }

    /// Adds a scalar passed by value (`f32` for `float`, `i32` for `int`, ...).
    pub fn arg_scalar<T: DeviceRepr + 'a>(mut self, x: T) -> Self {
        self.args.push(Box::new(ScalarArg(x)));
        self
    }

    /// Issues the kernel on its stream, on `grid` blocks of `block` threads
    /// with `shared_bytes` of dynamic shared memory, and returns without
    /// waiting (a read of a buffer, or [`Device::synchronize`], waits).
    pub fn launch(self, grid: [u32; 3], block: [u32; 3], shared_bytes: u32) -> Result<(), Error> {
        self.issue(grid, block, shared_bytes, false).map(drop)
    }

    /// Like [`Kernel::launch`], then waits for the kernel and returns its
    /// duration measured with CUDA events.
    pub fn run(
        self,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
    ) -> Result<Duration, Error> {
        self.issue(grid, block, shared_bytes, true)
            .map(|d| d.unwrap_or_default())
    }

    /// Launches; with `timed`, records events around the kernel, waits for
    /// it and returns its duration.
    fn issue(
        self,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        timed: bool,
    ) -> Result<Option<Duration>, Error> {
        check_launch(grid, block)?;
        let Kernel {
            func,
            stream,
            name,
            mut args,
        } = self;
        // Formatted only on failure: a launch does no string work.
        let what = Launching(&name);
        guarded(&what, || {
            // The default limit of dynamic shared memory is 48 KiB less the
            // kernel's static shared memory: any dynamic size opts in (one
            // driver call; only kernels with dynamic shared memory pay it).
            if shared_bytes > 0 {
                func.set_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared_bytes as i32,
                )
                .map_err(|e| {
                    driver_err(&format!(
                        "allowing {shared_bytes} bytes of dynamic shared memory for `{name}` (the \
                         device's limit per block, static shared memory included, is \
                         CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)"
                    ))(e)
                })?;
            }
            let cfg = LaunchConfig {
                grid_dim: (grid[0], grid[1], grid[2]),
                block_dim: (block[0], block[1], block[2]),
                shared_mem_bytes: shared_bytes,
            };
            let mut b = stream.launch_builder(&func);
            for a in args.iter_mut() {
                a.push(&mut b);
            }
            if timed {
                b.record_kernel_launch(CUevent_flags::CU_EVENT_DEFAULT);
            }
            // SAFETY: the arguments are device buffers of this context
            // (cudarc orders their later use and their release on the
            // stream after this launch) and plain `DeviceRepr` scalars,
            // which the driver copies at launch; matching them to the
            // kernel's parameters is the caller's contract (see `Kernel`).
            let events = unsafe { b.launch(cfg) }.map_err(|e| driver_err(&what.to_string())(e))?;
            if !timed {
                return Ok(None);
            }
            let (start, end) =
                events.ok_or_else(|| backend(format!("{what}: no timing events were recorded")))?;
            let ms = start
                .elapsed_ms(&end)
                .map_err(driver_err(&format!("running CUDA kernel `{name}`")))?;
            stream
                .synchronize()
                .map_err(driver_err(&format!("running CUDA kernel `{name}`")))?;
            Ok(Some(Duration::from_secs_f64(ms.max(0.0) as f64 / 1e3)))
        })
    }
}

/// Checks launch dimensions against CUDA's limits (compute capability 3.0
/// and later): no zero extents, at most 1024 threads per block, block z at
/// most 64, grid x below 2³¹, grid y and z at most 65535.
pub fn check_launch(grid: [u32; 3], block: [u32; 3]) -> Result<(), Error> {
    if grid.contains(&0) || block.contains(&0) {
        return Err(backend(format!(
            "CUDA launch with grid {grid:?} and block {block:?}: every extent must be at least 1"
        )));
    }
    let threads = block.iter().map(|&b| b as u64).product::<u64>();
    if threads > 1024 {
        return Err(backend(format!(
            "CUDA launch with block {block:?}: {threads} threads per block, CUDA allows at most 1024"
        )));
    }
    if block[0] > 1024 || block[1] > 1024 || block[2] > 64 {
        return Err(backend(format!(
            "CUDA launch with block {block:?}: the block extents may be at most [1024, 1024, 64]"
        )));
    }
    if grid[0] > i32::MAX as u32 || grid[1] > 65535 || grid[2] > 65535 {
        return Err(backend(format!(
            "CUDA launch with grid {grid:?}: the grid extents may be at most [2^31 - 1, 65535, 65535]"
        )));
    }
    Ok(())
}
