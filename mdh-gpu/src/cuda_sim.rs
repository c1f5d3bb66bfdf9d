//! CPU execution of CUDA C kernels (the C++ prelude and the system compiler):
//! the tests' stand-in for a GPU.
//!
//! [`run_on_cpu`] takes the CUDA source of a kernel (as a code generator emits
//! it: `extern "C" __global__` kernels that include no headers), writes a C++
//! program made of [`PRELUDE`], the source and a generated `main`, compiles it
//! with the system C++ compiler (`g++ -std=c++20 -O1 -pthread`; the binary is
//! cached by a hash of the program, so each source compiles once per machine),
//! and runs it on the host buffers given as [`SimArg`]s.
//! [`run_launches_on_cpu`] runs a sequence of launches (of kernels of one
//! source, each on some of the arguments) in one program, as a stream of
//! launches runs on a GPU: a generated kernel's main pass, second pass and
//! scans compile once.
//!
//! # Execution model (see `cuda_prelude.hpp` for details)
//!
//! - Blocks are distributed over up to 16 worker threads (`MDH_SIM_THREADS`
//!   overrides the count; `1` makes a run fully deterministic). A worker runs
//!   one block at a time.
//! - The threads of a block are fibers on their worker: each runs until it
//!   reaches a barrier (`__syncthreads`, a shuffle, a vote, `__syncwarp`),
//!   and a barrier opens when every live thread of its block or warp waits at
//!   it. A missing `__syncthreads` therefore gives a wrong result every time,
//!   not a rare race, and a deadlock is reported as an `Err`.
//! - `__shared__` is `static thread_local`: shared by the fibers of the block
//!   on that worker, private to other workers' blocks.
//! - Global atomics are real atomics (blocks run in parallel).
//! - Buffers start 256-byte aligned, as `cudaMalloc`'s do; accesses more than
//!   255 bytes past a buffer's end fault, and writes just before or after it
//!   are detected. Either is an `Err` naming the problem.
//!
//! # Limits
//!
//! At most 1024 threads per block (as on a GPU); dynamic shared memory
//! only as `extern __shared__ [attributes] T name[];` (one declaration per
//! statement; [`SimLaunch::shared`] sizes it); no cooperative groups,
//! textures, surfaces, `__constant__` uploads, inline PTX (sources emulate
//! it under `#ifdef MDH_CUDA_SIM`, which the prelude defines) or
//! `#include`s of CUDA headers;
//! shuffle and vote masks are ignored (every live lane of the warp must take
//! part, as in the usual full-mask code) and shuffled values are at most
//! 8 bytes; `float4` and friends have 4-byte alignment. Each fiber has a
//! 256 KiB stack (`MDH_SIM_STACK_KIB` changes it). A run that takes longer
//! than `MDH_SIM_TIMEOUT_S` seconds (default 600) is killed.
//!
//! Environment: `MDH_SIM_CXX` (else `CXX`, else `g++`) picks the compiler,
//! `MDH_SIM_CXXFLAGS` adds flags (e.g. `-fsanitize=undefined`), and
//! `MDH_SIM_CACHE` the folder of cached binaries (default: a folder in the
//! system temp dir).

use mdh_rt::Error;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The C++20 header that maps CUDA's built-ins onto the CPU (threads of a
/// block as fibers, `__shared__`, barriers, warp shuffles, atomics, math).
pub const PRELUDE: &str = include_str!("cuda_prelude.hpp");

/// One kernel argument for [`run_on_cpu`], in the kernel's parameter order.
#[derive(Debug)]
pub enum SimArg<'a> {
    /// A device buffer (a pointer parameter `elem*`). Its bytes are copied in
    /// before the launch and the kernel's results are copied back into
    /// `data` after it. `elem` is the C element type (`"float"`,
    /// `"unsigned int"`, `"bool"`, ...); `data.len()` must be a multiple of
    /// its size.
    Buf {
        /// The host bytes of the buffer (native endianness).
        data: &'a mut [u8],
        /// The C type of one element.
        elem: &'static str,
    },
    /// A scalar passed by value: its bytes in native endianness and its C type.
    Scalar {
        /// The bytes of the value (`x.to_ne_bytes()`).
        bytes: Vec<u8>,
        /// The C type of the value.
        ty: &'static str,
    },
}

/// A Rust type with the same representation as a C type, usable in
/// [`SimArg::buf`] and [`SimArg::scalar`].
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid value (the
/// kernel's results are copied back byte for byte), the type must have no
/// padding, and [`SimType::C_TYPE`] must be a C type of the same size.
pub unsafe trait SimType: Copy + 'static {
    /// The C spelling of the type.
    const C_TYPE: &'static str;
}

macro_rules! sim_types {
    ($($t:ty => $c:literal),* $(,)?) => {
        // SAFETY: fixed-size integers and IEEE floats: no padding, every bit
        // pattern valid, and the C types have the same size on the targets
        // mdh supports (LP64).
        $(unsafe impl SimType for $t { const C_TYPE: &'static str = $c; })*
    };
}
sim_types! {
    f32 => "float", f64 => "double",
    i8 => "signed char", i16 => "short", i32 => "int", i64 => "long long",
    u8 => "unsigned char", u16 => "unsigned short", u32 => "unsigned int",
    u64 => "unsigned long long", usize => "size_t", isize => "ptrdiff_t",
}

impl<'a> SimArg<'a> {
    /// A buffer argument over a typed host slice (results are written back).
    pub fn buf<T: SimType>(data: &'a mut [T]) -> Self {
        let len = std::mem::size_of_val(data);
        // SAFETY: `SimType` guarantees no padding and that every byte pattern
        // written back is a valid `T`; `u8` has alignment 1 and the slice is
        // borrowed mutably for `'a`.
        let bytes = unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr() as *mut u8, len) };
        SimArg::Buf {
            data: bytes,
            elem: T::C_TYPE,
        }
    }

    /// A scalar argument.
    pub fn scalar<T: SimType>(x: T) -> Self {
        let len = std::mem::size_of::<T>();
        // SAFETY: `SimType` guarantees `T` has no padding, so all its bytes
        // are initialised.
        let bytes =
            unsafe { std::slice::from_raw_parts(&x as *const T as *const u8, len) }.to_vec();
        SimArg::Scalar {
            bytes,
            ty: T::C_TYPE,
        }
    }

    /// A `bool` scalar (C++ `bool`, one byte).
    pub fn bool(x: bool) -> Self {
        SimArg::Scalar {
            bytes: vec![x as u8],
            ty: "bool",
        }
    }
}

use crate::backend;

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

fn is_c_type(s: &str) -> bool {
    !s.trim().is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ' ' || c == ':')
}

/// One launch of [`run_launches_on_cpu`]: a kernel of the source, the
/// arguments it takes (indices into the run's arguments, in the kernel's
/// parameter order), and its geometry.
#[derive(Clone, Debug)]
pub struct SimLaunch<'a> {
    pub kernel: &'a str,
    pub args: Vec<usize>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block (`extern __shared__`).
    pub shared: u32,
}

/// The source with each `extern __shared__ [attributes] T name[];` (dynamic
/// shared memory, which C++ cannot declare so) replaced by the definition
/// `#define name ((T*)mdh_sim::dynamic_shared())` on lines of its own: as
/// on a GPU, every such array starts at the block's dynamic shared memory.
fn dynamic_shared(source: &str) -> Result<String, Error> {
    const KEY: &str = "extern __shared__";
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(at) = rest.find(KEY) {
        out.push_str(&rest[..at]);
        let tail = &rest[at + KEY.len()..];
        let end = tail.find(';').ok_or_else(|| {
            backend("CPU execution of CUDA: an `extern __shared__` declaration has no `;`")
        })?;
        let (name, ty) = dynamic_shared_decl(&tail[..end]).ok_or_else(|| {
            backend(format!(
                "CPU execution of CUDA: cannot read the dynamic shared memory declaration `{KEY}{};`; write it as `extern __shared__ [__align__(N)] T name[];`",
                &tail[..end]
            ))
        })?;
        let _ = write!(
            out,
            "\n#undef {name}\n#define {name} (({ty}*)mdh_sim::dynamic_shared())\n"
        );
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The name and element type of the declarator of `extern __shared__`
/// (after the keyword, before the `;`): attributes dropped, `[]` last.
fn dynamic_shared_decl(decl: &str) -> Option<(String, String)> {
    let decl = decl.trim().strip_suffix("[]")?;
    // Drop `__align__(…)` and `__attribute__((…))` (balanced parentheses).
    let mut kept = String::new();
    let mut s = decl;
    while !s.is_empty() {
        let attr = ["__align__", "__attribute__"]
            .iter()
            .find(|a| s.starts_with(*a))
            .copied();
        match attr {
            Some(a) => {
                let after = s[a.len()..].trim_start();
                let mut depth = 0usize;
                let mut close = None;
                for (i, ch) in after.char_indices() {
                    match ch {
                        '(' => depth += 1,
                        ')' => {
                            depth = depth.checked_sub(1)?;
                            if depth == 0 {
                                close = Some(i);
                                break;
                            }
                        }
                        _ if depth == 0 => return None,
                        _ => {}
                    }
                }
                s = &after[close? + 1..];
                kept.push(' ');
            }
            None => {
                let ch = s.chars().next()?;
                kept.push(ch);
                s = &s[ch.len_utf8()..];
            }
        }
    }
    let kept = kept.trim();
    let split = kept.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
    let (ty, name) = (kept[..split + 1].trim(), kept[split + 1..].trim());
    let ty_ok = is_c_type(&ty.replace('*', " "));
    (is_ident(name) && ty_ok).then(|| (name.to_owned(), ty.to_owned()))
}

/// The command-line arguments of one launch: grid, block, dynamic shared
/// memory.
const ARGS_PER_LAUNCH: usize = 7;

/// The C++ program for `launches` with the given argument kinds: prelude,
/// source, and a `main(dir, then gx gy gz bx by bz shared per launch)` that loads
/// `dir/argN.bin`, runs the launches in order and stores the buffers back.
/// The geometry is read at run time, so one binary serves every geometry.
fn program(source: &str, args: &[SimArg], launches: &[SimLaunch]) -> Result<String, Error> {
    let mut p = String::with_capacity(PRELUDE.len() + source.len() + 2048);
    p.push_str(PRELUDE);
    p.push_str("\n#line 1 \"kernel.cu\"\n");
    p.push_str(&dynamic_shared(source)?);
    p.push_str("\n#line 1 \"mdh_sim_main.cpp\"\n");
    p.push_str("int main(int argc, char** argv) {\n");
    let _ = writeln!(
        p,
        "    if (argc != {}) mdh_sim::fail(\"usage: sim DIR (GX GY GZ BX BY BZ SHARED) x {}\");",
        2 + ARGS_PER_LAUNCH * launches.len(),
        launches.len()
    );
    p.push_str("    const char* dir = argv[1];\n");
    for (i, a) in args.iter().enumerate() {
        match a {
            SimArg::Buf { elem, .. } => {
                if !is_c_type(elem) {
                    return Err(backend(format!(
                        "CPU execution of CUDA: argument {i} has the element type `{elem}`, which is not a C type name"
                    )));
                }
                let _ = writeln!(
                    p,
                    "    mdh_sim::Buffer b{i};\n    {elem}* a{i} = mdh_sim::load_buffer<{elem}>(dir, {i}, b{i});"
                );
            }
            SimArg::Scalar { ty, .. } => {
                if !is_c_type(ty) {
                    return Err(backend(format!(
                        "CPU execution of CUDA: argument {i} has the type `{ty}`, which is not a C type name"
                    )));
                }
                let _ = writeln!(p, "    {ty} a{i} = mdh_sim::load_scalar<{ty}>(dir, {i});");
            }
        }
    }
    for (n, l) in launches.iter().enumerate() {
        let kernel = l.kernel;
        if !is_ident(kernel) {
            return Err(backend(format!(
                "CPU execution of CUDA: `{kernel}` is not a valid kernel name"
            )));
        }
        if let Some(&i) = l.args.iter().find(|&&i| i >= args.len()) {
            return Err(backend(format!(
                "CPU execution of CUDA kernel `{kernel}`: argument index {i}, but there are only {} arguments",
                args.len()
            )));
        }
        let call: Vec<String> = l.args.iter().map(|i| format!("a{i}")).collect();
        let arg = |k: usize| format!("argv[{}]", 2 + ARGS_PER_LAUNCH * n + k);
        let dim = |k: usize| format!("mdh_sim::parse_dim({})", arg(k));
        let _ = writeln!(
            p,
            "    mdh_sim::launch(dim3({}, {}, {}), dim3({}, {}, {}), mdh_sim::parse_bytes({}), [&]() {{ {kernel}({}); }});",
            dim(0),
            dim(1),
            dim(2),
            dim(3),
            dim(4),
            dim(5),
            arg(6),
            call.join(", ")
        );
    }
    for (i, a) in args.iter().enumerate() {
        if let SimArg::Buf { .. } = a {
            let _ = writeln!(p, "    mdh_sim::store_buffer(dir, {i}, b{i});");
        }
    }
    p.push_str("    return 0;\n}\n");
    Ok(p)
}

/// FNV-1a, 64 bits, over several parts (stable across runs and Rust versions).
fn fnv(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.iter().chain(&(part.len() as u64).to_le_bytes()) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn compiler() -> String {
    std::env::var("MDH_SIM_CXX")
        .or_else(|_| std::env::var("CXX"))
        .unwrap_or_else(|_| "g++".to_owned())
}

fn extra_flags() -> Vec<String> {
    std::env::var("MDH_SIM_CXXFLAGS")
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

const FLAGS: &[&str] = &[
    "-std=c++20",
    "-O1",
    "-pthread",
    "-fno-strict-aliasing",
    "-x",
    "c++",
];

/// Whether the C++ compiler that [`run_on_cpu`] needs can be started.
pub fn cpu_sim_available() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        Command::new(compiler())
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    })
}

fn cache_dir() -> PathBuf {
    std::env::var_os("MDH_SIM_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("mdh-cuda-sim-cache"))
}

fn unique() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

type Built = Arc<OnceLock<Result<PathBuf, String>>>;

/// Compiles `program` once per process (and once per machine through the
/// on-disk cache) and returns the binary's path.
fn build(program: &str) -> Result<PathBuf, Error> {
    let cxx = compiler();
    let flags = extra_flags();
    let flag_text = format!("{cxx} {} {}", FLAGS.join(" "), flags.join(" "));
    let hash = fnv(&[program.as_bytes(), flag_text.as_bytes()]);
    static BUILT: OnceLock<Mutex<HashMap<u64, Built>>> = OnceLock::new();
    let cell = {
        let mut map = BUILT
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.entry(hash).or_default().clone()
    };
    cell.get_or_init(|| {
        let dir = cache_dir();
        let bin = dir.join(format!("{hash:016x}.bin"));
        if bin.is_file() {
            return Ok(bin);
        }
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create the cache folder {}: {e}", dir.display()))?;
        let tag = unique();
        let cpp = dir.join(format!("{hash:016x}.cpp"));
        let cpp_tmp = dir.join(format!("{hash:016x}.{tag}.cpp"));
        let bin_tmp = dir.join(format!("{hash:016x}.{tag}.tmp"));
        std::fs::write(&cpp_tmp, program)
            .map_err(|e| format!("cannot write {}: {e}", cpp_tmp.display()))?;
        let out = Command::new(&cxx)
            .args(FLAGS)
            .args(&flags)
            .arg(&cpp_tmp)
            .arg("-o")
            .arg(&bin_tmp)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                let _ = std::fs::remove_file(&cpp_tmp);
                format!("cannot start the C++ compiler `{cxx}` (set MDH_SIM_CXX or CXX, or install g++ 11 or later): {e}")
            })?;
        // Keep the program next to the binary for reading; renames are atomic.
        let _ = std::fs::rename(&cpp_tmp, &cpp);
        if !out.status.success() {
            let _ = std::fs::remove_file(&bin_tmp);
            return Err(format!(
                "`{cxx}` failed to compile the CUDA kernel for the CPU ({}):\n{}",
                cpp.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::fs::rename(&bin_tmp, &bin)
            .map_err(|e| format!("cannot move the binary to {}: {e}", bin.display()))?;
        Ok(bin)
    })
    .clone()
    .map_err(|e| backend(format!("CPU execution of CUDA: {e}")))
}

fn timeout() -> Duration {
    let s = std::env::var("MDH_SIM_TIMEOUT_S")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(600);
    Duration::from_secs(s.max(1))
}

/// Removes the run folder when dropped.
struct RunDir(PathBuf);
impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn describe_failure(status: std::process::ExitStatus, stderr: &str) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let what = match sig {
                11 | 7 => "an out-of-bounds memory access (or a thread's stack overflowed: raise MDH_SIM_STACK_KIB)",
                8 => "an arithmetic fault (integer division by zero)",
                6 => "an abort",
                _ => "a signal",
            };
            return format!("the kernel crashed with signal {sig}: {what}. {stderr}");
        }
    }
    format!("the kernel failed ({status}): {stderr}")
}

/// Runs `kernel` of the CUDA C `source` on the CPU with the grid and block
/// dimensions `grid` and `block` and the arguments `args` (in the kernel's
/// parameter order). Buffers are copied in before and back after the run.
///
/// Errors (as [`Error::Backend`]): invalid launch dimensions, a kernel name
/// or type that is not C, no C++ compiler, a compile error (with the
/// compiler's output), a crash, an out-of-bounds write, a deadlock, or a
/// timeout.
pub fn run_on_cpu(
    source: &str,
    kernel: &str,
    args: &mut [SimArg],
    grid: [u32; 3],
    block: [u32; 3],
) -> Result<(), Error> {
    let launch = SimLaunch {
        kernel,
        args: (0..args.len()).collect(),
        grid,
        block,
        shared: 0,
    };
    run_launches_on_cpu(source, args, &[launch])
}

/// Runs `launches` of kernels of the CUDA C `source` on the CPU, in order,
/// on the arguments `args` (each launch takes those it names): as a stream
/// of launches on a GPU, one after the other on the same buffers. Buffers
/// are copied in before the first launch and back after the last. One
/// program is compiled per source and sequence of kernels and arguments.
///
/// Errors: as [`run_on_cpu`].
pub fn run_launches_on_cpu(
    source: &str,
    args: &mut [SimArg],
    launches: &[SimLaunch],
) -> Result<(), Error> {
    for l in launches {
        crate::cuda::check_launch(l.grid, l.block)?;
    }
    let program = program(source, args, launches)?;
    let bin = build(&program)?;
    let kernel = launches
        .iter()
        .map(|l| l.kernel)
        .collect::<Vec<_>>()
        .join(", ");

    let dir = std::env::temp_dir().join(format!("mdh-cuda-sim-run-{}", unique()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| backend(format!("cannot create {}: {e}", dir.display())))?;
    let dir = RunDir(dir);
    let arg_file = |i: usize| dir.0.join(format!("arg{i}.bin"));
    for (i, a) in args.iter().enumerate() {
        let bytes: &[u8] = match a {
            SimArg::Buf { data, .. } => data,
            SimArg::Scalar { bytes, .. } => bytes,
        };
        std::fs::write(arg_file(i), bytes)
            .map_err(|e| backend(format!("cannot write {}: {e}", arg_file(i).display())))?;
    }
    let out_path = dir.0.join("stdout.txt");
    let err_path = dir.0.join("stderr.txt");
    let file = |p: &Path| {
        std::fs::File::create(p).map_err(|e| backend(format!("cannot create {}: {e}", p.display())))
    };
    let mut child = Command::new(&bin)
        .arg(&dir.0)
        .args(
            launches
                .iter()
                .flat_map(|l| l.grid.iter().chain(&l.block).chain([&l.shared]))
                .map(|d| d.to_string()),
        )
        .stdin(Stdio::null())
        .stdout(file(&out_path)?)
        .stderr(file(&err_path)?)
        .spawn()
        .map_err(|e| backend(format!("cannot start {}: {e}", bin.display())))?;
    let limit = timeout();
    let start = Instant::now();
    let mut nap = Duration::from_micros(200);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(backend(format!(
                    "CPU execution of CUDA kernel `{kernel}` ran longer than {} s and was stopped (MDH_SIM_TIMEOUT_S)",
                    limit.as_secs()
                )));
            }
            Ok(None) => {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(20));
            }
            Err(e) => {
                return Err(backend(format!(
                    "waiting for the CPU execution failed: {e}"
                )))
            }
        }
    };
    if !status.success() {
        let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        let geometry: Vec<String> = launches
            .iter()
            .map(|l| format!("grid {:?}, block {:?}", l.grid, l.block))
            .collect();
        return Err(backend(format!(
            "CPU execution of CUDA kernel `{kernel}` ({}): {}",
            geometry.join("; "),
            describe_failure(status, stderr.trim())
        )));
    }
    for (i, a) in args.iter_mut().enumerate() {
        if let SimArg::Buf { data, .. } = a {
            let back = std::fs::read(arg_file(i))
                .map_err(|e| backend(format!("cannot read {}: {e}", arg_file(i).display())))?;
            if back.len() != data.len() {
                return Err(backend(format!(
                    "CPU execution of CUDA kernel `{kernel}`: argument {i} came back with {} bytes instead of {}",
                    back.len(),
                    data.len()
                )));
            }
            data.copy_from_slice(&back);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_limits() {
        assert!(crate::cuda::check_launch([1, 1, 1], [1024, 1, 1]).is_ok());
        assert!(crate::cuda::check_launch([1, 1, 1], [1025, 1, 1]).is_err());
        assert!(crate::cuda::check_launch([1, 1, 1], [32, 32, 2]).is_err());
        assert!(crate::cuda::check_launch([0, 1, 1], [1, 1, 1]).is_err());
        assert!(crate::cuda::check_launch([1, 70000, 1], [1, 1, 1]).is_err());
    }

    #[test]
    fn names_and_types_are_checked() {
        let args = [SimArg::Scalar {
            bytes: vec![0; 4],
            ty: "int); system(\"x\"",
        }];
        let launch = |kernel, args| SimLaunch {
            kernel,
            args,
            grid: [1; 3],
            block: [1; 3],
            shared: 0,
        };
        assert!(program("", &args, &[launch("k", vec![0])]).is_err());
        assert!(program("", &[], &[launch("k-1", vec![])]).is_err());
        assert!(program("", &[], &[launch("k", vec![1])]).is_err());
        assert!(is_c_type("unsigned long long"));
    }

    #[test]
    fn dynamic_shared_declarations_become_the_blocks_area() {
        let src = "  extern __shared__ __align__(16) unsigned char smem[];\nx;";
        let got = dynamic_shared(src).unwrap();
        assert!(
            got.contains("#define smem ((unsigned char*)mdh_sim::dynamic_shared())\n"),
            "{got}"
        );
        assert!(got.ends_with("\nx;"), "{got}");
        assert_eq!(
            dynamic_shared_decl(" float __attribute__((aligned(32))) s[]"),
            Some(("s".into(), "float".into()))
        );
        assert!(dynamic_shared("extern __shared__ float s[4] x").is_err());
        assert!(dynamic_shared("extern __shared__ float s[4];").is_err());
    }

    /// Dynamic shared memory is shared by the threads of a block, private
    /// to the block, and as large as the launch asks.
    #[test]
    fn dynamic_shared_memory_runs() {
        if !cpu_sim_available() {
            // scripts/test-all.sh installs g++ and sets MDH_REQUIRE_NVRTC,
            // which covers the CPU execution too.
            let why = "no C++ compiler for the CPU execution of CUDA";
            assert!(
                std::env::var_os("MDH_REQUIRE_NVRTC").is_none(),
                "MDH_REQUIRE_NVRTC is set but there is {why}"
            );
            eprintln!("skipped: {why} (set MDH_REQUIRE_NVRTC=1 to make this a failure)");
            return;
        }
        let src = r#"
extern "C" __global__ void k(float* out, int n) {
    extern __shared__ __align__(16) unsigned char smem[];
    float* s = (float*)smem;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = (float)((i + blockIdx.x) % 7);
    __syncthreads();
    float sum = 0;
    for (int i = 0; i < n; i++) sum += s[(i + threadIdx.x) % n];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
"#;
        // 60 KiB: beyond the static limit.
        let n: u32 = 15 * 1024;
        let mut out = vec![0f32; 4 * 32];
        let mut args = [SimArg::buf(&mut out), SimArg::scalar(n as i32)];
        let launch = SimLaunch {
            kernel: "k",
            args: vec![0, 1],
            grid: [4, 1, 1],
            block: [32, 1, 1],
            shared: 4 * n,
        };
        run_launches_on_cpu(src, &mut args, &[launch]).unwrap();
        for (t, &v) in out.iter().enumerate() {
            let b = (t / 32) as u32;
            // Small integers: the sums are exact.
            let want = (0..n).map(|i| (i + b) % 7).sum::<u32>() as f32;
            assert_eq!(v, want, "thread {t}");
        }
        // Four elements too few (the area is rounded up to 16 bytes): the
        // last ones lie past it (a fault).
        let launch = SimLaunch {
            kernel: "k",
            args: vec![0, 1],
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared: 4 * n - 16,
        };
        let mut args = [SimArg::buf(&mut out), SimArg::scalar(n as i32)];
        assert!(run_launches_on_cpu(src, &mut args, &[launch]).is_err());
    }
}
