//! The OpenBLAS functions the benchmark calls, declared by hand from Debian's
//! `/usr/include/x86_64-linux-gnu/cblas.h` (OpenBLAS 0.3.21, `blasint` = C
//! `int`: the Debian build does not define `OPENBLAS_USE64BITINT`).

use std::os::raw::c_int;

pub const ROW_MAJOR: c_int = 101; // CblasRowMajor
pub const NO_TRANS: c_int = 111; // CblasNoTrans
pub const TRANS: c_int = 112; // CblasTrans

extern "C" {
    fn cblas_sgemm(
        order: c_int,
        trans_a: c_int,
        trans_b: c_int,
        m: c_int,
        n: c_int,
        k: c_int,
        alpha: f32,
        a: *const f32,
        lda: c_int,
        b: *const f32,
        ldb: c_int,
        beta: f32,
        c: *mut f32,
        ldc: c_int,
    );
    fn cblas_sgemv(
        order: c_int,
        trans: c_int,
        m: c_int,
        n: c_int,
        alpha: f32,
        a: *const f32,
        lda: c_int,
        x: *const f32,
        incx: c_int,
        beta: f32,
        y: *mut f32,
        incy: c_int,
    );
    fn cblas_sdot(n: c_int, x: *const f32, incx: c_int, y: *const f32, incy: c_int) -> f32;
    fn openblas_get_num_threads() -> c_int;
    fn openblas_get_corename() -> *const std::os::raw::c_char;
}

fn int(x: usize) -> c_int {
    c_int::try_from(x).expect("size fits a BLAS int")
}

/// `C = op(A) · B` for row-major `op(A)`: `M×K`, `B`: `K×N`, `C`: `M×N`;
/// `a_trans` says that `A` is stored as `K×M` (row-major) and used transposed.
pub fn sgemm(a_trans: bool, m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    let (ta, lda) = if a_trans { (TRANS, m) } else { (NO_TRANS, k) };
    // SAFETY: the asserts above keep every access of sgemm (with these
    // leading dimensions) inside the three slices; `c` is exclusively borrowed.
    unsafe {
        cblas_sgemm(
            ROW_MAJOR,
            ta,
            NO_TRANS,
            int(m),
            int(n),
            int(k),
            1.0,
            a.as_ptr(),
            int(lda.max(1)),
            b.as_ptr(),
            int(n.max(1)),
            0.0,
            c.as_mut_ptr(),
            int(n.max(1)),
        )
    }
}

/// `y = A · x` for a row-major `m×n` matrix `A`.
pub fn sgemv(m: usize, n: usize, a: &[f32], x: &[f32], y: &mut [f32]) {
    assert!(a.len() >= m * n && x.len() >= n && y.len() >= m);
    // SAFETY: bounds asserted above; `y` is exclusively borrowed.
    unsafe {
        cblas_sgemv(
            ROW_MAJOR,
            NO_TRANS,
            int(m),
            int(n),
            1.0,
            a.as_ptr(),
            int(n.max(1)),
            x.as_ptr(),
            1,
            0.0,
            y.as_mut_ptr(),
            1,
        )
    }
}

/// `Σ x[i] · y[i]`.
pub fn sdot(x: &[f32], y: &[f32]) -> f32 {
    assert_eq!(x.len(), y.len());
    // SAFETY: both slices hold `x.len()` elements, read with stride 1.
    unsafe { cblas_sdot(int(x.len()), x.as_ptr(), 1, y.as_ptr(), 1) }
}

/// The number of threads OpenBLAS uses.
pub fn threads() -> usize {
    // SAFETY: a plain query without arguments.
    unsafe { openblas_get_num_threads() as usize }
}

/// The name of the kernel set OpenBLAS chose for this CPU (`DYNAMIC_ARCH`).
pub fn corename() -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(openblas_get_corename()) }
        .to_string_lossy()
        .into_owned()
}

/// The kernel set OpenBLAS should use when its run-time detection falls back
/// to a generic one on a CPU it does not know, from the features the CPU has.
///
/// Debian's OpenBLAS 0.3.21 (`DYNAMIC_ARCH`) does not know the model number
/// of the development machine's Xeon (family 6, model 207) and falls back to
/// `Prescott` (SSE3 kernels): its sgemm then runs at about 30 GFLOP/s on
/// 1024³ instead of 170-345 GFLOP/s with `SkylakeX`, whether rayon's workers
/// are running or not. The fix is `OPENBLAS_CORETYPE`, which OpenBLAS reads
/// when it is loaded, before `main`: see [`fix_core`].
fn better_core() -> Option<&'static str> {
    let generic = matches!(
        corename().as_str(),
        "Prescott" | "Core2" | "Nehalem" | "Unknown"
    );
    #[cfg(target_arch = "x86_64")]
    if generic {
        if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl") {
            return Some("SkylakeX");
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Some("Haswell");
        }
    }
    let _ = generic;
    None
}

/// Re-executes the benchmark with `OPENBLAS_CORETYPE` set when OpenBLAS
/// picked a generic kernel set for a CPU with AVX2 or AVX-512 (see
/// [`better_core`]) and the user did not choose one. Returns only when no
/// re-execution is needed (or it failed: then the note says so).
pub fn fix_core() -> Option<String> {
    if std::env::var_os("OPENBLAS_CORETYPE").is_some() {
        return None;
    }
    let core = better_core()?;
    let exe = std::env::current_exe().ok()?;
    let note = format!(
        "OpenBLAS detected this CPU as {}; re-running with OPENBLAS_CORETYPE={core}",
        corename()
    );
    eprintln!("{note}");
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let e = std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env("OPENBLAS_CORETYPE", core)
            .exec();
        Some(format!("{note} failed: {e}"))
    }
    #[cfg(not(unix))]
    Some(note)
}
