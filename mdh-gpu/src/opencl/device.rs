//! Devices: discovery, buffers and transfers, the program cache.

use mdh_rt::Error;
use opencl3::command_queue::{
    enqueue_fill_buffer, enqueue_read_buffer, CommandQueue, CL_QUEUE_PROFILING_ENABLE,
};
use opencl3::context::Context;
use opencl3::device::{Device as ClDevice, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU};
use opencl3::error_codes::{
    ClError, CL_BUILD_PROGRAM_FAILURE, CL_DEVICE_NOT_FOUND, CL_INVALID_BUFFER_SIZE,
    CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES, CL_PLATFORM_NOT_FOUND_KHR,
};
use opencl3::event::Event;
use opencl3::memory::{ClMem, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_WRITE};
use opencl3::platform::get_platforms;
use opencl3::program::Program as ClProgram;
use opencl3::types::CL_BLOCKING;
use std::any::TypeId;
use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt;
use std::ptr;
use std::sync::{Arc, Mutex};

use super::*;

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
pub(super) struct Shared {
    // Declared (and so dropped) before the context that owns it.
    pub(super) queue: CommandQueue,
    context: Context,
    pub(super) device: ClDevice,
    pub(super) label: String,
}

/// A key of the program cache: (source, build options).
type ProgramKey = (String, String);
/// One cache slot: filled by the first thread that builds the program.
type ProgramSlot = Arc<Mutex<Option<Arc<Program>>>>;

/// An OpenCL device with its own context, an in-order command queue with
/// profiling enabled, and a cache of built programs.
///
/// `Device` is `Send + Sync` (see the module documentation): share
/// one between threads by reference or in an `Arc`.
pub struct Device {
    shared: Arc<Shared>,
    max_work_group_size: usize,
    local_mem_bytes: u64,
    max_alloc_bytes: u64,
    compute_units: Option<usize>,
    max_clock_mhz: Option<u32>,
    cpu: bool,
    driver_version: String,
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
            // A CPU device (PoCL) takes the default plan of CPUs, not the
            // GPUs' analytical one (mdh::gpu::defaults).
            let cpu = device.dev_type().is_ok_and(|t| t & CL_DEVICE_TYPE_CPU != 0);
            // Part of the run-time tuning cache's key only: a platform that
            // does not say shares its entries across its versions.
            let driver_version = device.driver_version().unwrap_or_default();
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
                cpu,
                driver_version,
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

    /// Whether the device is a CPU (`CL_DEVICE_TYPE_CPU`, as PoCL's).
    pub fn is_cpu(&self) -> bool {
        self.cpu
    }

    /// The version of the device's driver (`CL_DRIVER_VERSION`; empty if
    /// the platform does not say).
    pub fn driver_version(&self) -> &str {
        &self.driver_version
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
    pub fn buffer_len<T>(&self, buf: &Buffer<T>) -> Result<usize, Error> {
        let bytes = buf.size().map_err(|e| cl_err("clGetMemObjectInfo", e))?;
        // Buffers of zero-sized elements cannot be made (`byte_len`).
        Ok(bytes / std::mem::size_of::<T>().max(1))
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
