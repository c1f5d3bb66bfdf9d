//! NVRTC: where the library is found, and CUDA C compiled by it to PTX
//! and, once per process per source and architecture, to CUBINs.

use std::collections::HashMap;
use std::ffi::{c_char, CString};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::nvrtc::{result as nvrtc_result, sys as nvrtc_sys};
use mdh_rt::Error;

use super::{guarded, lock, nvrtc_resources, KernelResources};
use crate::backend;

/// The `nvidia` package folders of pip installs (`--user`, then the active
/// virtualenv; newest Python first), where NVIDIA's wheels put their
/// libraries and tools.
pub(crate) fn pip_nvidia_dirs() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(PathBuf::from(home).join(".local/lib"));
    }
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        roots.push(PathBuf::from(venv).join("lib"));
    }
    let mut dirs = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut pys: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("python3"))
            })
            .collect();
        pys.sort();
        dirs.extend(
            pys.into_iter()
                .rev()
                .map(|py| py.join("site-packages/nvidia")),
        );
    }
    dirs
}

/// Where NVRTC may be besides the library path: `MDH_NVRTC_LIB` and the pip
/// wheel of a `--user` install.
fn nvrtc_candidates() -> Vec<PathBuf> {
    const LIB: &str = "libnvrtc.so.12";
    let mut c = Vec::new();
    if let Some(p) = std::env::var_os("MDH_NVRTC_LIB").map(PathBuf::from) {
        c.push(if p.is_dir() { p.join(LIB) } else { p });
    }
    c.extend(
        pip_nvidia_dirs()
            .into_iter()
            .map(|d| d.join("cuda_nvrtc/lib").join(LIB)),
    );
    c
}

/// Whether NVRTC (`libnvrtc.so.12`, e.g. from PyPI's `nvidia-cuda-nvrtc-cu12`)
/// can be loaded. NVRTC needs no GPU.
pub fn nvrtc_available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    static PRELOADED: OnceLock<libloading::Library> = OnceLock::new();
    *OK.get_or_init(|| {
        // SAFETY: tries to dlopen NVRTC by its usual names.
        if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return true;
        }
        // Loading the library from a known path makes the dynamic loader
        // answer cudarc's later dlopen("libnvrtc.so.12") with it (same soname).
        for path in nvrtc_candidates() {
            if !path.is_file() {
                continue;
            }
            // SAFETY: loading NVRTC runs no initialisers with preconditions.
            if let Ok(lib) = unsafe { libloading::Library::new(&path) } {
                let _ = PRELOADED.set(lib);
                // SAFETY: as above.
                return unsafe { cudarc::nvrtc::sys::is_culib_present() };
            }
        }
        false
    })
}

fn no_nvrtc() -> Error {
    backend(
        "NVRTC is not available: libnvrtc.so.12 could not be loaded. Install it with \
         `pip install --user nvidia-cuda-nvrtc-cu12` (or a CUDA toolkit) and put its lib folder \
         on LD_LIBRARY_PATH, or set MDH_NVRTC_LIB to the library",
    )
}

/// The NVRTC version `(major, minor)`, if NVRTC is available.
pub fn nvrtc_version() -> Option<(i32, i32)> {
    if !nvrtc_available() {
        return None;
    }
    guarded("nvrtcVersion", || {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two valid out-pointers.
        unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .map_err(|e| backend(format!("nvrtcVersion failed: {e:?}")))?;
        Ok((major, minor))
    })
    .ok()
}

/// The result of [`nvrtc_compile`].
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The PTX assembly.
    pub ptx: String,
    /// NVRTC's log (warnings); empty when there were none.
    pub log: String,
}

/// What NVRTC gave for a program: its PTX, its CUBIN (asked for a real
/// architecture) and its log.
pub(super) struct RawOutput {
    ptx: Option<String>,
    pub(super) cubin: Option<Vec<u8>>,
    pub(super) log: String,
}

fn c_text(v: Vec<c_char>) -> String {
    let bytes: Vec<u8> = v
        .into_iter()
        .map(|c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).trim().to_owned()
}

pub(super) fn check_arch(arch: &str) -> Result<(), Error> {
    let ok = ["sm_", "compute_"].iter().any(|p| {
        arch.strip_prefix(p).is_some_and(|n| {
            !n.is_empty()
                && n.chars().all(|c| c.is_ascii_alphanumeric())
                && n.starts_with(|c: char| c.is_ascii_digit())
        })
    });
    if ok {
        Ok(())
    } else {
        Err(backend(format!(
            "`{arch}` is not a CUDA architecture: expected a name such as sm_80, sm_90 or compute_80"
        )))
    }
}

/// Compiles `source` with NVRTC and the given options.
pub(super) fn nvrtc_raw(
    source: &str,
    options: &[String],
    want_cubin: bool,
) -> Result<RawOutput, Error> {
    if !nvrtc_available() {
        return Err(no_nvrtc());
    }
    let src = CString::new(source).map_err(|_| backend("the CUDA source contains a NUL byte"))?;
    guarded("NVRTC", || {
        let prog = nvrtc_result::create_program(&src, Some(c"mdh_kernel.cu"))
            .map_err(|e| backend(format!("nvrtcCreateProgram failed: {e:?}")))?;
        // SAFETY: `prog` is a live program until `destroy_program` below.
        let out = unsafe {
            let compiled = nvrtc_result::compile_program(prog, options);
            let log = nvrtc_result::get_program_log(prog)
                .map(c_text)
                .unwrap_or_default();
            match compiled {
                Err(e) => Err(backend(format!(
                    "NVRTC failed to compile the CUDA source ({:?}, options {}):\n{log}",
                    e.0,
                    options.join(" ")
                ))),
                Ok(()) => {
                    let ptx = nvrtc_result::get_ptx(prog).ok().map(c_text);
                    let cubin = if want_cubin { get_cubin(prog) } else { None };
                    Ok(RawOutput { ptx, cubin, log })
                }
            }
        };
        // SAFETY: `prog` was created above and is destroyed once.
        let _ = unsafe { nvrtc_result::destroy_program(prog) };
        out
    })
}

/// The CUBIN of a program compiled for a real architecture (`sm_XY`).
///
/// # Safety
/// `prog` must be a live, compiled NVRTC program.
unsafe fn get_cubin(prog: nvrtc_sys::nvrtcProgram) -> Option<Vec<u8>> {
    let mut size = 0usize;
    // SAFETY: per the caller; `size` is a valid out-pointer.
    unsafe { nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size) }
        .result()
        .ok()?;
    if size == 0 {
        return None;
    }
    let mut buf = vec![0u8; size];
    // SAFETY: `buf` has the size NVRTC reported.
    unsafe { nvrtc_sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut c_char) }
        .result()
        .ok()?;
    Some(buf)
}

/// Compiles CUDA C `source` to PTX with NVRTC for `arch` (`"sm_80"`,
/// `"sm_90"`, `"compute_80"`, ...). Needs NVRTC, not a GPU. The source must
/// include no headers (NVRTC's built-ins cover the device intrinsics).
///
/// Returns the PTX and NVRTC's log (warnings, empty when there were none),
/// or an `Err` with the log when compilation fails.
pub fn nvrtc_compile(source: &str, arch: &str) -> Result<Compiled, Error> {
    nvrtc_compile_with_options(source, arch, &[])
}

/// [`nvrtc_compile`] with extra NVRTC options (`"-lineinfo"`,
/// `"--use_fast_math"`, ...).
pub fn nvrtc_compile_with_options(
    source: &str,
    arch: &str,
    options: &[&str],
) -> Result<Compiled, Error> {
    check_arch(arch)?;
    let mut opts = vec![format!("--gpu-architecture={arch}")];
    opts.extend(options.iter().map(|s| s.to_string()));
    let out = nvrtc_raw(source, &opts, false)?;
    let ptx = match out.ptx {
        Some(p) if !p.is_empty() => p,
        _ => {
            return Err(backend(format!(
                "NVRTC compiled the source for {arch} but returned no PTX"
            )))
        }
    };
    Ok(Compiled { ptx, log: out.log })
}

/// A CUBIN with ptxas' report on its kernels.
pub(super) type Image = Arc<(Vec<u8>, Vec<KernelResources>)>;
type Cubin = Arc<OnceLock<Result<Image, String>>>;

/// The CUBIN of `source` for the real architecture `arch`, compiled once per
/// process, with ptxas' report (`-Xptxas -v`: it costs nothing, and the
/// tuner reports registers and spills of what it measures).
pub(super) fn cubin(source: &str, arch: &str) -> Result<Image, Error> {
    static CACHE: OnceLock<Mutex<HashMap<(String, String), Cubin>>> = OnceLock::new();
    let cell = lock(CACHE.get_or_init(Default::default))
        .entry((source.to_owned(), arch.to_owned()))
        .or_default()
        .clone();
    cell.get_or_init(|| {
        nvrtc_resources(source, arch)
            .map(|c| Arc::new((c.cubin, c.kernels)))
            .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(backend)
}
