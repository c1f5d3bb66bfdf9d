//! The OpenCL runtime of mdh over [`opencl3`]: devices, typed buffers, a
//! program cache keyed by source and build options, and timed kernel
//! launches.
//!
//! `opencl3` is built with its `dynamic` feature: the OpenCL library
//! (`libOpenCL.so.1`, the ICD loader) is opened with `dlopen` at the first
//! call, not linked. This crate therefore builds on machines without OpenCL,
//! and every entry point returns an [`Error::Backend`] when the library, a
//! platform (an ICD such as PoCL) or a device is missing; nothing panics.
//! The environment variable `OPENCL_DYLIB_PATH` (`;`-separated paths) makes
//! `opencl3` try other library files first.
//!
//! ```no_run
//! # fn main() -> Result<(), mdh_rt::Error> {
//! use mdh_gpu::opencl::Device;
//! let dev = Device::first()?;
//! let prog = dev.program(
//!     "__kernel void twice(__global float* x, int n) {
//!          int i = get_global_id(0);
//!          if (i < n) x[i] *= 2.0f;
//!      }",
//!     "",
//! )?;
//! let x = dev.buffer_from(&[1.0f32, 2.0, 3.0])?;
//! let took = prog.kernel("twice")?.arg_buffer(&x).arg_scalar(3i32).run(&[32], &[32])?;
//! let mut out = [0.0f32; 3];
//! dev.read(&x, &mut out)?;
//! assert_eq!(out, [2.0, 4.0, 6.0]);
//! # let _ = took; Ok(()) }
//! ```
//!
//! # Threads
//!
//! [`Device`] and [`Program`] are `Send + Sync`: kernels of one device may be
//! launched from several threads at once. The OpenCL specification makes
//! every API call thread-safe except `clSetKernelArg` (and the launch that
//! reads the arguments it set) on one `cl_kernel`; `opencl3` marks its
//! context, queue, program and event types `Send + Sync` accordingly, and its
//! `Kernel` only `Send`. A [`Launch`] therefore owns its `cl_kernel`
//! exclusively: it takes one from a per-program pool (creating one when the
//! pool is empty) and gives it back when it is done, so two threads never set
//! arguments of the same kernel object. The program cache is behind a
//! `Mutex`. All transfers and launches are blocking, so no Rust borrow ever
//! overlaps a device command that uses the same memory.
//!
//! # Notes for generated code
//!
//! - OpenCL forbids `bool`, `size_t` and pointer-sized integers as kernel
//!   arguments: declare `uchar` in the kernel for a `bool` (pass a Rust
//!   `bool` or `u8`, both one byte, 0 or 1) and `ulong`/`uint` for sizes.
//! - `bool` buffers are `uchar` buffers on the device; [`Device::read`]
//!   into a `bool` slice maps every non-zero byte to `true`.
//! - Buffer arguments are checked against the kernel's declaration (the
//!   address space, and the element size of a scalar pointer), scalar
//!   arguments by OpenCL against the declared size: a mismatch is an `Err`
//!   from [`Launch::run`] that names the argument.
//!
//! [`Error::Backend`]: mdh_rt::Error::Backend
//! [`Device`]: crate::opencl::Device
//! [`Device::read`]: crate::opencl::Device::read
//! [`Program`]: crate::opencl::Program
//! [`Launch`]: crate::opencl::Launch
//! [`Launch::run`]: crate::opencl::Launch::run

#![warn(missing_docs)]

pub use opencl3;

use mdh_rt::Error;
use opencl3::command_queue::{
    enqueue_fill_buffer, enqueue_read_buffer, CommandQueue, CL_QUEUE_PROFILING_ENABLE,
};
use opencl3::context::Context;
use opencl3::device::{Device as ClDevice, CL_DEVICE_TYPE_ALL};
use opencl3::error_codes::{
    ClError, CL_BUILD_PROGRAM_FAILURE, CL_DEVICE_NOT_FOUND, CL_INVALID_ARG_SIZE,
    CL_INVALID_BUFFER_SIZE, CL_INVALID_KERNEL_NAME, CL_INVALID_WORK_GROUP_SIZE,
    CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES, CL_PLATFORM_NOT_FOUND_KHR,
    DLOPEN_FUNCTION_NOT_AVAILABLE, DLOPEN_RUNTIME_LOAD_FAILED,
};
use opencl3::event::Event;
use opencl3::kernel::{
    Kernel, CL_KERNEL_ARG_ADDRESS_CONSTANT, CL_KERNEL_ARG_ADDRESS_GLOBAL,
    CL_KERNEL_ARG_ADDRESS_LOCAL, CL_KERNEL_ARG_ADDRESS_PRIVATE,
};
use opencl3::memory::{ClMem, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_WRITE};
use opencl3::platform::get_platforms;
use opencl3::program::Program as ClProgram;
use opencl3::types::{cl_uint, CL_BLOCKING};
use std::any::TypeId;
use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// A typed device buffer (`opencl3`'s): `len` elements of `T` in the global
/// memory of one device's context. Create it with [`Device::buffer_from`] or
/// [`Device::buffer`]; it is released when dropped.
pub type Buffer<T> = opencl3::memory::Buffer<T>;

fn backend(msg: impl Into<String>) -> Error {
    Error::Backend(msg.into())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f`, turning a panic inside `opencl3` (it `expect`s in a few places)
/// into an `Err` that names `what`.
fn guarded<R>(what: &str, f: impl FnOnce() -> Result<R, Error>) -> Result<R, Error> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(backend(format!("OpenCL: {what} failed: {msg}")))
    })
}

/// The error for a failed OpenCL call `what`, with special sentences for a
/// missing library.
fn cl_err(what: &str, e: ClError) -> Error {
    match e.0 {
        DLOPEN_RUNTIME_LOAD_FAILED => no_library(),
        DLOPEN_FUNCTION_NOT_AVAILABLE => backend(format!(
            "OpenCL: {what} failed: the OpenCL library does not provide this function \
             (an OpenCL 1.2 ICD loader or newer is needed)"
        )),
        _ => backend(format!("OpenCL: {what} failed: {e} ({})", e.0)),
    }
}

fn no_library() -> Error {
    backend(
        "the OpenCL library (libOpenCL.so.1) could not be loaded: install an OpenCL ICD loader \
         and driver, e.g. `apt-get install ocl-icd-libopencl1 pocl-opencl-icd`, or set \
         OPENCL_DYLIB_PATH to the library file",
    )
}

fn no_platform() -> Error {
    backend(
        "no OpenCL platform found: install an OpenCL driver, e.g. `apt-get install \
         pocl-opencl-icd` (the ICD loader looks in /etc/OpenCL/vendors, or in OCL_ICD_VENDORS)",
    )
}

// ------------------------------------------------------------------ elements

/// An element type that can live in a device buffer and be passed as a
/// scalar kernel argument: the numeric types of mdh and `bool` (one byte, a
/// `uchar` in OpenCL C).
///
/// # Safety
///
/// Implementors must be plain data without padding whose every bit pattern
/// is a valid value (`bool` is the one exception, handled by
/// [`Device::read`]), and [`Element::CL_TYPE`] must name an OpenCL C type of
/// the same size.
pub unsafe trait Element: Copy + Send + Sync + 'static {
    /// The OpenCL C type of this element (`float` for `f32`, `uchar` for `bool`).
    const CL_TYPE: &'static str;
}

macro_rules! elements {
    ($($t:ty => $cl:literal),* $(,)?) => {$(
        // SAFETY: a primitive without padding, every bit pattern valid
        // (except bool: see `Device::read`); the OpenCL type has its size.
        unsafe impl Element for $t {
            const CL_TYPE: &'static str = $cl;
        }
    )*};
}

elements!(
    f32 => "float", f64 => "double",
    i8 => "char", i16 => "short", i32 => "int", i64 => "long",
    u8 => "uchar", u16 => "ushort", u32 => "uint", u64 => "ulong",
    bool => "uchar",
);

/// The size of an OpenCL C scalar type as `clGetKernelArgInfo` names it
/// (without qualifiers), if it is one.
fn cl_scalar_size(name: &str) -> Option<usize> {
    Some(match name {
        "char" | "uchar" | "bool" => 1,
        "short" | "ushort" | "half" => 2,
        "int" | "uint" | "float" => 4,
        "long" | "ulong" | "double" => 8,
        _ => return None,
    })
}

/// `len` elements of `T` in bytes, or an `Err` for an overflow or a
/// zero-sized `T`.
fn byte_len<T>(len: usize) -> Result<usize, Error> {
    let size = std::mem::size_of::<T>();
    if size == 0 {
        return Err(backend(
            "OpenCL buffers of a zero-sized element type are not supported",
        ));
    }
    len.checked_mul(size).ok_or_else(|| {
        backend(format!(
            "an OpenCL buffer of {len} elements of {size} bytes overflows usize"
        ))
    })
}

// ------------------------------------------------------------------ devices

/// One device found by [`discover`].
struct Found {
    label: String,
    device: ClDevice,
}

/// Every device of every platform, in platform order.
fn discover() -> Result<Vec<Found>, Error> {
    guarded("device discovery", || {
        let platforms = match get_platforms() {
            Ok(p) => p,
            Err(ClError(CL_PLATFORM_NOT_FOUND_KHR)) => Vec::new(),
            Err(e) => return Err(cl_err("clGetPlatformIDs", e)),
        };
        if platforms.is_empty() {
            return Err(no_platform());
        }
        let mut found = Vec::new();
        for p in &platforms {
            let pname = p.name().unwrap_or_default();
            let pname = pname.trim_end_matches('\0').trim();
            let ids = match p.get_devices(CL_DEVICE_TYPE_ALL) {
                Ok(ids) => ids,
                Err(ClError(CL_DEVICE_NOT_FOUND)) => Vec::new(),
                Err(e) => return Err(cl_err("clGetDeviceIDs", e)),
            };
            for id in ids {
                let device = ClDevice::new(id);
                let dname = device.name().unwrap_or_default();
                let dname = dname.trim_end_matches('\0').trim();
                found.push(Found {
                    label: format!("{pname}: {dname}"),
                    device,
                });
            }
        }
        if found.is_empty() {
            let names: Vec<String> = platforms
                .iter()
                .map(|p| {
                    p.name()
                        .unwrap_or_default()
                        .trim_end_matches('\0')
                        .to_owned()
                })
                .collect();
            return Err(backend(format!(
                "no OpenCL device found: the platforms {names:?} have no device; install an \
                 OpenCL driver for your hardware, or `apt-get install pocl-opencl-icd` for the CPU"
            )));
        }
        Ok(found)
    })
}

/// What a [`Device`] and its [`Program`]s share: the OpenCL objects.
struct Shared {
    // Declared (and so dropped) before the context that owns it.
    queue: CommandQueue,
    context: Context,
    device: ClDevice,
    label: String,
}

/// A key of the program cache: (source, build options).
type ProgramKey = (String, String);
/// One cache slot: filled by the first thread that builds the program.
type ProgramSlot = Arc<Mutex<Option<Arc<Program>>>>;

/// An OpenCL device with its own context, an in-order command queue with
/// profiling enabled, and a cache of built programs.
///
/// `Device` is `Send + Sync` (see the [module documentation](self)): share
/// one between threads by reference or in an `Arc`.
pub struct Device {
    shared: Arc<Shared>,
    max_work_group_size: usize,
    local_mem_bytes: u64,
    max_alloc_bytes: u64,
    compute_units: Option<usize>,
    max_clock_mhz: Option<u32>,
    programs: Mutex<HashMap<ProgramKey, ProgramSlot>>,
    memo: crate::memo::Memo,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.shared.label)
            .field("max_work_group_size", &self.max_work_group_size)
            .field("local_mem_bytes", &self.local_mem_bytes)
            .finish_non_exhaustive()
    }
}

impl Device {
    /// The first device of the first platform that has one.
    ///
    /// An `Err` when the OpenCL library, a platform (an ICD such as PoCL) or
    /// a device is missing, with a sentence that says what to install.
    pub fn first() -> Result<Device, Error> {
        let mut found = discover()?;
        Self::open(found.swap_remove(0))
    }

    /// The `i`-th device in the order of [`Device::list`].
    pub fn by_index(i: usize) -> Result<Device, Error> {
        let mut found = discover()?;
        if i >= found.len() {
            let names: Vec<&str> = found.iter().map(|f| f.label.as_str()).collect();
            return Err(backend(format!(
                "no OpenCL device #{i}: there are {} ({names:?})",
                found.len()
            )));
        }
        Self::open(found.swap_remove(i))
    }

    /// The first device whose name (`"platform: device"`, as in
    /// [`Device::list`]) contains `part`, ignoring case.
    pub fn by_name(part: &str) -> Result<Device, Error> {
        let found = discover()?;
        let needle = part.to_lowercase();
        let names: Vec<String> = found.iter().map(|f| f.label.clone()).collect();
        match found
            .into_iter()
            .find(|f| f.label.to_lowercase().contains(&needle))
        {
            Some(f) => Self::open(f),
            None => Err(backend(format!(
                "no OpenCL device name contains {part:?}; the devices are {names:?}"
            ))),
        }
    }

    /// The names of all devices, `"platform: device"`, in platform order.
    pub fn list() -> Result<Vec<String>, Error> {
        Ok(discover()?.into_iter().map(|f| f.label).collect())
    }

    fn open(found: Found) -> Result<Device, Error> {
        guarded("opening the device", || {
            let Found { label, device } = found;
            let context = Context::from_device(&device)
                .map_err(|e| cl_err(&format!("creating a context on `{label}`"), e))?;
            // SAFETY: the device is the context's device.
            let queue =
                unsafe { CommandQueue::create(&context, device.id(), CL_QUEUE_PROFILING_ENABLE) }
                    .map_err(|e| cl_err(&format!("creating a command queue on `{label}`"), e))?;
            let info = |what: &str, e| cl_err(&format!("querying {what} of `{label}`"), e);
            let max_work_group_size = device
                .max_work_group_size()
                .map_err(|e| info("the maximum work-group size", e))?;
            let local_mem_bytes = device
                .local_mem_size()
                .map_err(|e| info("the local memory size", e))?;
            let max_alloc_bytes = device
                .max_mem_alloc_size()
                .map_err(|e| info("the maximum allocation size", e))?;
            // Informative only (the tuner's lower bounds): unknown when the
            // platform does not answer.
            let compute_units = device
                .max_compute_units()
                .ok()
                .filter(|&n| n > 0)
                .map(|n| n as usize);
            let max_clock_mhz = device.max_clock_frequency().ok().filter(|&f| f > 0);
            Ok(Device {
                shared: Arc::new(Shared {
                    queue,
                    context,
                    device,
                    label,
                }),
                max_work_group_size,
                local_mem_bytes,
                max_alloc_bytes,
                compute_units,
                max_clock_mhz,
                programs: Mutex::new(HashMap::new()),
                memo: Default::default(),
            })
        })
    }

    /// The device's name, `"platform: device"` as in [`Device::list`].
    pub fn name(&self) -> &str {
        &self.shared.label
    }

    /// The most work-items one work-group may have on this device
    /// (`CL_DEVICE_MAX_WORK_GROUP_SIZE`; a kernel may allow fewer, see
    /// [`Program::work_group_size`]).
    pub fn max_work_group_size(&self) -> usize {
        self.max_work_group_size
    }

    /// The local memory of one work-group in bytes (`CL_DEVICE_LOCAL_MEM_SIZE`).
    pub fn local_mem_bytes(&self) -> u64 {
        self.local_mem_bytes
    }

    /// The largest single buffer in bytes (`CL_DEVICE_MAX_MEM_ALLOC_SIZE`).
    pub fn max_alloc_bytes(&self) -> u64 {
        self.max_alloc_bytes
    }

    /// The device's parallel compute units (`CL_DEVICE_MAX_COMPUTE_UNITS`:
    /// a GPU's SMs or CUs, a CPU's cores; `None` if the platform does not
    /// say).
    pub fn compute_units(&self) -> Option<usize> {
        self.compute_units
    }

    /// The device's maximum clock in MHz (`CL_DEVICE_MAX_CLOCK_FREQUENCY`;
    /// `None` if the platform does not say).
    pub fn max_clock_mhz(&self) -> Option<u32> {
        self.max_clock_mhz
    }

    /// The device's OpenCL context.
    pub fn context(&self) -> &Context {
        &self.shared.context
    }

    /// The device's in-order command queue (profiling enabled).
    pub fn queue(&self) -> &CommandQueue {
        &self.shared.queue
    }

    fn alloc_err(&self, bytes: usize, e: ClError) -> Error {
        match e.0 {
            CL_INVALID_BUFFER_SIZE | CL_MEM_OBJECT_ALLOCATION_FAILURE | CL_OUT_OF_RESOURCES => {
                backend(format!(
                    "OpenCL: cannot allocate a buffer of {bytes} bytes on `{}` ({e}); its largest \
                     buffer is {} bytes",
                    self.name(),
                    self.max_alloc_bytes
                ))
            }
            _ => cl_err("clCreateBuffer", e),
        }
    }

    /// A device buffer holding a copy of `data` (blocking). Zero-length data
    /// allocates one (zero) element, since OpenCL forbids empty buffers.
    pub fn buffer_from<T: Element>(&self, data: &[T]) -> Result<Buffer<T>, Error> {
        if data.is_empty() {
            return self.buffer(0);
        }
        let bytes = byte_len::<T>(data.len())?;
        // SAFETY: with CL_MEM_COPY_HOST_PTR, OpenCL copies `bytes` bytes from
        // `data` during the call and never writes through the pointer.
        unsafe {
            Buffer::<T>::create(
                self.context(),
                CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                data.len(),
                data.as_ptr() as *mut c_void,
            )
        }
        .map_err(|e| self.alloc_err(bytes, e))
    }

    /// A zero-filled device buffer of `len` elements (blocking); `len` 0
    /// allocates one element, since OpenCL forbids empty buffers.
    pub fn buffer<T: Element>(&self, len: usize) -> Result<Buffer<T>, Error> {
        let len = len.max(1);
        let bytes = byte_len::<T>(len)?;
        // SAFETY: no host pointer; the size was checked for overflow.
        let buf =
            unsafe { Buffer::<T>::create(self.context(), CL_MEM_READ_WRITE, len, ptr::null_mut()) }
                .map_err(|e| self.alloc_err(bytes, e))?;
        let zero = 0u8;
        // SAFETY: a one-byte pattern that lives through the blocking wait
        // below, over the whole buffer (`bytes` is its size).
        let event = unsafe {
            enqueue_fill_buffer(
                self.queue().get(),
                buf.get(),
                ptr::addr_of!(zero).cast(),
                1,
                0,
                bytes,
                0,
                ptr::null(),
            )
        }
        .map_err(|e| cl_err("clEnqueueFillBuffer", ClError(e)))?;
        Event::new(event)
            .wait()
            .map_err(|e| cl_err("zero-filling a buffer", e))?;
        Ok(buf)
    }

    /// The number of `T` elements of `buf` (at least 1: see [`Device::buffer`]).
    pub fn buffer_len<T: Element>(&self, buf: &Buffer<T>) -> Result<usize, Error> {
        let bytes = buf.size().map_err(|e| cl_err("clGetMemObjectInfo", e))?;
        Ok(bytes / std::mem::size_of::<T>())
    }

    fn check_len<T: Element>(&self, buf: &Buffer<T>, n: usize, what: &str) -> Result<(), Error> {
        let len = self.buffer_len(buf)?;
        if n > len {
            return Err(backend(format!(
                "OpenCL: cannot {what} {n} elements: the buffer has {len}"
            )));
        }
        Ok(())
    }

    /// Copies the first `out.len()` elements of `buf` into `out` (blocking);
    /// `out` may be shorter than the buffer, not longer.
    pub fn read<T: Element>(&self, buf: &Buffer<T>, out: &mut [T]) -> Result<(), Error> {
        self.check_len(buf, out.len(), "read")?;
        if out.is_empty() {
            return Ok(());
        }
        if TypeId::of::<T>() == TypeId::of::<bool>() {
            // The device may hold any byte in a `uchar`: read bytes, then
            // map them to valid bools.
            let mut bytes = vec![0u8; out.len()];
            // SAFETY: a blocking read of `bytes.len()` bytes (within the
            // buffer: bool and u8 have one size) into `bytes`.
            let event = unsafe {
                enqueue_read_buffer(
                    self.queue().get(),
                    buf.get(),
                    CL_BLOCKING,
                    0,
                    bytes.len(),
                    bytes.as_mut_ptr().cast(),
                    0,
                    ptr::null(),
                )
            }
            .map_err(|e| cl_err("clEnqueueReadBuffer", ClError(e)))?;
            drop(Event::new(event));
            // SAFETY: T is bool (checked above), so the slices have one type.
            let out = unsafe { &mut *(out as *mut [T] as *mut [bool]) };
            for (o, b) in out.iter_mut().zip(bytes) {
                *o = b != 0;
            }
            return Ok(());
        }
        // SAFETY: a blocking read of `size_of_val(out)` bytes (within the
        // buffer, checked above) into `out`, whose every bit pattern is
        // valid (`Element`).
        unsafe {
            self.queue()
                .enqueue_read_buffer(buf, CL_BLOCKING, 0, out, &[])
        }
        .map_err(|e| cl_err("clEnqueueReadBuffer", e))?;
        Ok(())
    }

    /// Copies `data` into the first `data.len()` elements of `buf`
    /// (blocking); `data` may be shorter than the buffer, not longer.
    pub fn write<T: Element>(&self, buf: &mut Buffer<T>, data: &[T]) -> Result<(), Error> {
        self.check_len(buf, data.len(), "write")?;
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: a blocking write of `size_of_val(data)` bytes (within the
        // buffer, checked above) from `data`.
        unsafe {
            self.queue()
                .enqueue_write_buffer(buf, CL_BLOCKING, 0, data, &[])
        }
        .map_err(|e| cl_err("clEnqueueWriteBuffer", e))?;
        Ok(())
    }

    /// The program built from `source` with the build `options` (e.g.
    /// `"-cl-fast-relaxed-math"`, `"-Werror"`). It is built once per
    /// (source, options) for this `Device` and cached (thread-safe: other
    /// threads asking for the same program wait for the first build). A
    /// build failure is an `Err` that contains the compiler's build log.
    pub fn program(&self, source: &str, options: &str) -> Result<Arc<Program>, Error> {
        let slot = {
            let mut cache = lock(&self.programs);
            cache
                .entry((source.to_owned(), options.to_owned()))
                .or_default()
                .clone()
        };
        let mut slot = lock(&slot);
        if let Some(p) = &*slot {
            return Ok(p.clone());
        }
        let p = Arc::new(self.build(source, options)?);
        *slot = Some(p.clone());
        Ok(p)
    }

    /// Empties the program cache (programs still in use stay alive through
    /// their `Arc`s), e.g. in a tuner that builds many variants once each.
    pub fn clear_program_cache(&self) {
        lock(&self.programs).clear();
    }

    /// What callers keep for this device (mdh's prepared calls: jobs,
    /// programs and buffers of partial results), dropped with it.
    pub fn memo(&self) -> &crate::memo::Memo {
        &self.memo
    }

    fn build(&self, source: &str, options: &str) -> Result<Program, Error> {
        if source.trim().is_empty() {
            return Err(backend("OpenCL: the program source is empty"));
        }
        if options.contains('\0') {
            return Err(backend("OpenCL: the build options contain a NUL character"));
        }
        guarded("building a program", || {
            let device = self.shared.device.id();
            let mut program = ClProgram::create_from_source(self.context(), source)
                .map_err(|e| cl_err("clCreateProgramWithSource", e))?;
            // `-cl-kernel-arg-info` lets `Launch` check argument kinds.
            let full = format!("{options} -cl-kernel-arg-info");
            let built = program.build(&[device], &full);
            let log = program
                .get_build_log(device)
                .unwrap_or_default()
                .trim_end_matches('\0')
                .trim()
                .to_owned();
            match built {
                Ok(()) => Ok(Program {
                    program,
                    shared: self.shared.clone(),
                    build_log: log,
                    kernels: Mutex::new(HashMap::new()),
                }),
                Err(e) if e.0 == CL_BUILD_PROGRAM_FAILURE => Err(backend(format!(
                    "OpenCL: the program does not compile on `{}` (options {options:?}); build \
                     log:\n{log}",
                    self.name()
                ))),
                Err(e) => Err(backend(format!(
                    "OpenCL: clBuildProgram failed on `{}` (options {options:?}): {e} ({}){}",
                    self.name(),
                    e.0,
                    if log.is_empty() {
                        String::new()
                    } else {
                        format!("; build log:\n{log}")
                    }
                ))),
            }
        })
    }
}

// ------------------------------------------------------------------ programs

/// How a kernel declares one argument (`clGetKernelArgInfo`).
#[derive(Clone, Debug)]
struct ArgInfo {
    address: cl_uint,
    type_name: String,
}

/// The idle kernel objects of one kernel name, and what its arguments are.
#[derive(Default)]
struct KernelPool {
    idle: Vec<Kernel>,
    /// `None` until queried; `Some(None)` when the driver cannot tell.
    args: Option<Option<Arc<Vec<ArgInfo>>>>,
    num_args: cl_uint,
}

/// A built OpenCL program; kernel objects are created on demand and reused
/// (each [`Launch`] owns one exclusively while it lives).
pub struct Program {
    program: ClProgram,
    shared: Arc<Shared>,
    build_log: String,
    kernels: Mutex<HashMap<String, KernelPool>>,
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Program")
            .field("device", &self.shared.label)
            .field("build_log", &self.build_log)
            .finish_non_exhaustive()
    }
}

impl Program {
    /// The compiler's log of the successful build (warnings); empty when it
    /// printed nothing.
    pub fn build_log(&self) -> &str {
        &self.build_log
    }

    /// The underlying `opencl3` program.
    pub fn raw(&self) -> &ClProgram {
        &self.program
    }

    /// The most work-items per work-group that kernel `name` allows on its
    /// device (`CL_KERNEL_WORK_GROUP_SIZE`, at most
    /// [`Device::max_work_group_size`]).
    pub fn work_group_size(&self, name: &str) -> Result<usize, Error> {
        let launch = self.kernel(name)?;
        let k = launch
            .kernel
            .as_ref()
            .expect("a live launch owns its kernel");
        k.get_work_group_size(self.shared.device.id())
            .map_err(|e| cl_err("clGetKernelWorkGroupInfo", e))
    }

    /// A launch of kernel `name`: set its arguments in declaration order
    /// with the `arg_*` methods, then [`Launch::run`] it.
    pub fn kernel(&self, name: &str) -> Result<Launch<'_>, Error> {
        if name.contains('\0') {
            return Err(backend("OpenCL: a kernel name contains a NUL character"));
        }
        let (kernel, num_args, args) = {
            let mut pools = lock(&self.kernels);
            match pools.get_mut(name) {
                Some(pool) if !pool.idle.is_empty() => {
                    let k = pool.idle.pop().expect("not empty");
                    (k, pool.num_args, pool.args.clone().flatten())
                }
                _ => {
                    let k = Kernel::create(&self.program, name).map_err(|e| {
                        if e.0 == CL_INVALID_KERNEL_NAME {
                            backend(format!(
                                "OpenCL: the program has no kernel `{name}` (it has: {})",
                                self.program.kernel_names()
                            ))
                        } else {
                            cl_err(&format!("clCreateKernel(`{name}`)"), e)
                        }
                    })?;
                    let pool = pools.entry(name.to_owned()).or_default();
                    if pool.args.is_none() {
                        pool.num_args = k.num_args().map_err(|e| cl_err("clGetKernelInfo", e))?;
                        pool.args = Some(arg_infos(&k, pool.num_args).map(Arc::new));
                    }
                    (k, pool.num_args, pool.args.clone().flatten())
                }
            }
        };
        Ok(Launch {
            program: self,
            name: name.to_owned(),
            kernel: Some(kernel),
            num_args,
            args,
            next: 0,
            error: None,
            _borrows: PhantomData,
        })
    }
}

/// The declarations of a kernel's arguments, if the driver can tell.
fn arg_infos(k: &Kernel, n: cl_uint) -> Option<Vec<ArgInfo>> {
    (0..n)
        .map(|i| {
            Some(ArgInfo {
                address: k.get_arg_address_qualifier(i).ok()?,
                type_name: k
                    .get_arg_type_name(i)
                    .ok()?
                    .trim_end_matches('\0')
                    .trim()
                    .to_owned(),
            })
        })
        .collect()
}

// ------------------------------------------------------------------ launches

/// What kind of argument a `Launch::arg_*` call sets.
#[derive(Clone, Copy)]
enum ArgKind {
    Buffer(usize),
    Scalar,
    Local,
}

/// One launch of a kernel: a builder that sets the arguments in order, then
/// [`Launch::run`]s. It owns its `cl_kernel` (no other thread sets its
/// arguments) and borrows the buffers passed to it until it is run or
/// dropped. Errors of the `arg_*` calls are kept and returned by `run`.
pub struct Launch<'a> {
    program: &'a Program,
    name: String,
    kernel: Option<Kernel>,
    num_args: cl_uint,
    args: Option<Arc<Vec<ArgInfo>>>,
    next: cl_uint,
    error: Option<Error>,
    _borrows: PhantomData<&'a ()>,
}

impl fmt::Debug for Launch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Launch")
            .field("kernel", &self.name)
            .field("args_set", &self.next)
            .field("num_args", &self.num_args)
            .finish_non_exhaustive()
    }
}

impl Drop for Launch<'_> {
    fn drop(&mut self) {
        if let Some(k) = self.kernel.take() {
            let mut pools = lock(&self.program.kernels);
            if let Some(pool) = pools.get_mut(&self.name) {
                pool.idle.push(k);
            }
        }
    }
}

impl<'a> Launch<'a> {
    /// Checks the next argument against the kernel's declaration, returning
    /// its index.
    fn next_arg(&mut self, kind: ArgKind) -> Result<cl_uint, Error> {
        let i = self.next;
        if i >= self.num_args {
            return Err(backend(format!(
                "OpenCL kernel `{}` takes {} arguments, but more were passed",
                self.name, self.num_args
            )));
        }
        if let Some(info) = self.args.as_ref().and_then(|a| a.get(i as usize)) {
            let what = match info.address {
                CL_KERNEL_ARG_ADDRESS_GLOBAL | CL_KERNEL_ARG_ADDRESS_CONSTANT => "a buffer",
                CL_KERNEL_ARG_ADDRESS_LOCAL => "local memory",
                CL_KERNEL_ARG_ADDRESS_PRIVATE => "a scalar",
                _ => "",
            };
            let ok = match kind {
                ArgKind::Buffer(size) => {
                    let declared = info.type_name.strip_suffix('*').and_then(cl_scalar_size);
                    what == "a buffer" && declared.unwrap_or(size) == size
                }
                ArgKind::Scalar => what == "a scalar",
                ArgKind::Local => what == "local memory",
            };
            if !ok && !what.is_empty() {
                let passed = match kind {
                    ArgKind::Buffer(size) => format!("a buffer of {size}-byte elements"),
                    ArgKind::Scalar => "a scalar".to_owned(),
                    ArgKind::Local => "local memory".to_owned(),
                };
                return Err(backend(format!(
                    "OpenCL kernel `{}`: argument #{i} is declared `{}` ({what}), but {passed} \
                     was passed",
                    self.name, info.type_name
                )));
            }
        }
        self.next += 1;
        Ok(i)
    }

    /// Sets the next argument with `set`, keeping the first error.
    fn set(
        mut self,
        kind: ArgKind,
        set: impl FnOnce(&Kernel, cl_uint) -> opencl3::Result<()>,
    ) -> Self {
        if self.error.is_some() {
            return self;
        }
        match self.next_arg(kind) {
            Err(e) => self.error = Some(e),
            Ok(i) => {
                let k = self.kernel.as_ref().expect("a live launch owns its kernel");
                if let Err(e) = set(k, i) {
                    let msg = if e.0 == CL_INVALID_ARG_SIZE {
                        let decl = self
                            .args
                            .as_ref()
                            .and_then(|a| a.get(i as usize))
                            .map(|a| format!(" (declared `{}`)", a.type_name))
                            .unwrap_or_default();
                        format!(
                            "OpenCL kernel `{}`: argument #{i}{decl} has a different size than \
                             the value passed",
                            self.name
                        )
                    } else {
                        format!(
                            "OpenCL kernel `{}`: setting argument #{i} failed: {e}",
                            self.name
                        )
                    };
                    self.error = Some(backend(msg));
                }
            }
        }
        self
    }

    /// Passes a device buffer (a `__global` or `__constant` pointer). The
    /// buffer stays borrowed until the launch has run.
    pub fn arg_buffer<T>(self, b: &'a Buffer<T>) -> Self {
        self.arg_buffer_as(b, std::mem::size_of::<T>())
    }

    /// Passes a device buffer whose elements the kernel reads as
    /// `elem_bytes`-byte values, whatever `T` is (a tuner that keeps every
    /// buffer as bytes: a `cl_mem` has no element type).
    pub fn arg_buffer_as<T>(self, b: &'a Buffer<T>, elem_bytes: usize) -> Self {
        let mem = b.get();
        // SAFETY: OpenCL copies the `cl_mem` handle; the buffer outlives the
        // launch (borrowed for 'a), and the argument was checked to be a
        // pointer to global or constant memory where the driver can tell.
        self.set(ArgKind::Buffer(elem_bytes), move |k, i| unsafe {
            k.set_arg(i, &mem)
        })
    }

    /// Passes a scalar by value (`f32`, `f64`, `i8`..`i64`, `u8`..`u64`, or
    /// `bool` for a `uchar` parameter). OpenCL checks its size against the
    /// declaration.
    pub fn arg_scalar<T: Element>(self, x: T) -> Self {
        // SAFETY: OpenCL copies `size_of::<T>()` bytes of plain data.
        self.set(ArgKind::Scalar, move |k, i| unsafe { k.set_arg(i, &x) })
    }

    /// Passes `bytes` of `__local` memory (shared by the work-group).
    pub fn arg_local(self, bytes: usize) -> Self {
        if bytes == 0 && self.error.is_none() {
            let mut me = self;
            me.error = Some(backend(format!(
                "OpenCL kernel `{}`: argument #{} asks for 0 bytes of local memory",
                me.name, me.next
            )));
            return me;
        }
        // SAFETY: a local-memory argument carries no host data.
        self.set(ArgKind::Local, move |k, i| unsafe {
            k.set_arg_local_buffer(i, bytes)
        })
    }

    /// Enqueues the kernel over the NDRange `global` in work-groups of
    /// `local` work-items and waits for it; returns its run time from the
    /// profiling events. `global` and `local` have the same length, 1 to 3
    /// (`local` may also be empty: the driver chooses), and every `global`
    /// entry is a multiple of the `local` one. A `global` with a 0 entry
    /// runs nothing and returns a zero duration.
    pub fn run(mut self, global: &[usize], local: &[usize]) -> Result<Duration, Error> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let name = self.name.clone();
        if self.next != self.num_args {
            return Err(backend(format!(
                "OpenCL kernel `{name}` takes {} arguments, but {} were passed",
                self.num_args, self.next
            )));
        }
        let dims = global.len();
        if !(1..=3).contains(&dims) || !(local.is_empty() || local.len() == dims) {
            return Err(backend(format!(
                "OpenCL kernel `{name}`: global size {global:?} and local size {local:?} must \
                 have the same number of dimensions, 1 to 3"
            )));
        }
        if local.contains(&0) || global.iter().zip(local).any(|(g, l)| g % l != 0) {
            return Err(backend(format!(
                "OpenCL kernel `{name}`: global size {global:?} is not a multiple of local size \
                 {local:?} (or a local size is 0)"
            )));
        }
        if global.contains(&0) {
            return Ok(Duration::ZERO);
        }
        let dev = &self.program.shared;
        let group: usize = local.iter().product();
        let k = self.kernel.as_ref().expect("a live launch owns its kernel");
        // SAFETY: all arguments are set (checked above), to values of the
        // declared sizes that outlive this blocking call; the size arrays
        // have `dims` entries.
        let event = unsafe {
            dev.queue.enqueue_nd_range_kernel(
                k.get(),
                dims as cl_uint,
                ptr::null(),
                global.as_ptr(),
                if local.is_empty() {
                    ptr::null()
                } else {
                    local.as_ptr()
                },
                &[],
            )
        }
        .map_err(|e| {
            if e.0 == CL_INVALID_WORK_GROUP_SIZE || e.0 == CL_OUT_OF_RESOURCES {
                let limit = k.get_work_group_size(dev.device.id()).unwrap_or(0);
                backend(format!(
                    "OpenCL kernel `{name}`: cannot launch work-groups of {local:?} = {group} \
                     work-items on `{}` ({e}); this kernel allows at most {limit}",
                    dev.label
                ))
            } else {
                cl_err(&format!("launching kernel `{name}`"), e)
            }
        })?;
        event
            .wait()
            .map_err(|e| cl_err(&format!("running kernel `{name}`"), e))?;
        let start = event
            .profiling_command_start()
            .map_err(|e| cl_err("reading the kernel's start time", e))?;
        let end = event
            .profiling_command_end()
            .map_err(|e| cl_err("reading the kernel's end time", e))?;
        Ok(Duration::from_nanos(end.saturating_sub(start)))
    }
}
