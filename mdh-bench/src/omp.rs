//! The `c-openmp` peers: plain C loop nests with one `omp parallel for`
//! (`c/peers.c`, built by build.rs with `-O3 -march=native -fopenmp`), the
//! baseline an HPC user would write for the stencil and record-linkage
//! cases. Where build.rs could not build them, [`missing`] says why and the
//! cases leave these rows out.

/// Why the c-openmp peers are not in this build, if they are not.
pub fn missing() -> Option<String> {
    if cfg!(c_openmp) {
        return None;
    }
    Some(format!(
        "c-openmp rows left out: this build has no C compiler with OpenMP ({}); install gcc (Debian: `apt-get install gcc`, libgomp comes with it) and rebuild",
        option_env!("MDH_BENCH_NO_OPENMP").unwrap_or("unknown reason")
    ))
}

#[cfg(c_openmp)]
mod ffi {
    extern "C" {
        pub fn mdh_bench_jacobi3d(v: *const f32, w: *mut f32, n: usize);
        #[allow(clippy::too_many_arguments)]
        pub fn mdh_bench_prl(
            nf: *const i32,
            nl: *const i32,
            ny: *const i32,
            ni: usize,
            ef: *const i32,
            el: *const i32,
            ey: *const i32,
            nj: usize,
            best: *mut i64,
        );
    }
}

/// The 7-point stencil of `jacobi3d` over `n`³ points; `None` without the
/// C peers.
pub fn jacobi3d(v: &[f32], w: &mut [f32], n: usize) -> Option<Result<(), String>> {
    let m = n + 2;
    if v.len() != m * m * m || w.len() != n * n * n {
        return Some(Err(format!(
            "c-openmp jacobi3d: buffers of {} and {} elements for n = {n}",
            v.len(),
            w.len()
        )));
    }
    #[cfg(c_openmp)]
    // SAFETY: the lengths were checked above: the C loops read v[0..m³)
    // and write w[0..n³).
    unsafe {
        ffi::mdh_bench_jacobi3d(v.as_ptr(), w.as_mut_ptr(), n);
        Some(Ok(()))
    }
    #[cfg(not(c_openmp))]
    None
}

/// `prl`: per record of `a` (first, last name, year columns), the best
/// match in `b`, encoded as `prl_codec::encode`; `None` without the C peers.
pub fn prl(a: &[Vec<i32>; 3], b: &[Vec<i32>; 3], best: &mut [i64]) -> Option<Result<(), String>> {
    let (ni, nj) = (a[0].len(), b[0].len());
    if a.iter().any(|c| c.len() != ni) || b.iter().any(|c| c.len() != nj) || best.len() != ni {
        return Some(Err(
            "c-openmp prl: columns of unequal lengths, or an output not one per record of the first set".into(),
        ));
    }
    #[cfg(c_openmp)]
    // SAFETY: every column of `a` and `best` has ni elements, every column
    // of `b` nj (checked above); the C loops stay within them.
    unsafe {
        ffi::mdh_bench_prl(
            a[0].as_ptr(),
            a[1].as_ptr(),
            a[2].as_ptr(),
            ni,
            b[0].as_ptr(),
            b[1].as_ptr(),
            b[2].as_ptr(),
            nj,
            best.as_mut_ptr(),
        );
        Some(Ok(()))
    }
    #[cfg(not(c_openmp))]
    None
}
