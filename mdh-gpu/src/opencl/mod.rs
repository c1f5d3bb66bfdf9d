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
use opencl3::error_codes::{ClError, DLOPEN_FUNCTION_NOT_AVAILABLE, DLOPEN_RUNTIME_LOAD_FAILED};
use std::sync::{Mutex, MutexGuard};

mod device;
mod program;
mod traits;

pub use device::Device;
pub use program::{Launch, Program};

/// A typed device buffer (`opencl3`'s): `len` elements of `T` in the global
/// memory of one device's context. Create it with [`Device::buffer_from`] or
/// [`Device::buffer`]; it is released when dropped.
pub type Buffer<T> = opencl3::memory::Buffer<T>;

use crate::backend;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f`, turning a panic inside `opencl3` (it `expect`s in a few places)
/// into an `Err` that names `what`.
fn guarded<R>(what: &str, f: impl FnOnce() -> Result<R, Error>) -> Result<R, Error> {
    crate::guarded(f, |msg| format!("OpenCL: {what} failed: {msg}"))
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
    // The 16-bit floats as their bits: kernels convert them (no
    // `cl_khr_fp16` needed).
    mdh_rt::value::f16 => "ushort", mdh_rt::value::bf16 => "ushort",
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
