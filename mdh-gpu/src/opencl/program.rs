//! Programs and their kernels, and launches: arguments checked against
//! the kernel's declaration, timed runs.

use mdh_rt::Error;
use opencl3::error_codes::{
    CL_INVALID_ARG_SIZE, CL_INVALID_KERNEL_NAME, CL_INVALID_WORK_GROUP_SIZE, CL_OUT_OF_RESOURCES,
};
use opencl3::kernel::{
    Kernel, CL_KERNEL_ARG_ADDRESS_CONSTANT, CL_KERNEL_ARG_ADDRESS_GLOBAL,
    CL_KERNEL_ARG_ADDRESS_LOCAL, CL_KERNEL_ARG_ADDRESS_PRIVATE,
};
use opencl3::memory::ClMem;
use opencl3::program::Program as ClProgram;
use opencl3::types::cl_uint;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::ptr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::device::Shared;
use super::*;

/// How a kernel declares one argument (`clGetKernelArgInfo`).
#[derive(Clone, Debug)]
struct ArgInfo {
    address: cl_uint,
    type_name: String,
}

/// The idle kernel objects of one kernel name, and what its arguments are.
#[derive(Default)]
pub(super) struct KernelPool {
    idle: Vec<Kernel>,
    /// `None` until queried; `Some(None)` when the driver cannot tell.
    args: Option<Option<Arc<Vec<ArgInfo>>>>,
    num_args: cl_uint,
}

/// A built OpenCL program; kernel objects are created on demand and reused
/// (each [`Launch`] owns one exclusively while it lives).
pub struct Program {
    pub(super) program: ClProgram,
    pub(super) shared: Arc<Shared>,
    pub(super) build_log: String,
    pub(super) kernels: Mutex<HashMap<String, KernelPool>>,
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
