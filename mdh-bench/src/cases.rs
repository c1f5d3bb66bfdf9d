//! The benchmark cases: inputs, the mdh kernel and its peers.

use std::rc::Rc;

use rayon::prelude::*;

use crate::harness::{imp, Case, Impl, Output};
use crate::{blas, cuda, dnnl, kernels, omp, opencl};
use mdh_example_kernels::{ccsdt, dot, jacobi3d, matmul, matmul_bf16, matvec, prl};

mod stages;

/// Tolerance of float results against mdh: sums of up to 2^24 products of
/// values in [0, 1) in f32, in different orders (blocking, vector lanes,
/// threads), differ by far less than 1e-3 relative.
pub const RTOL: f64 = 1e-3;

/// How the benchmark runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Opts {
    /// `--quick`: cases whose `mdh-opencl` run takes seconds on PoCL skip it.
    pub quick: bool,
}

/// A case's name and how to build it (allocating its inputs).
pub type Builder = fn(&Opts) -> Result<Case, String>;

pub const CASES: &[(&str, Builder)] = &[
    ("matmul-1024", |o| matmul_case(o, 1024, 1024, 1024)),
    ("matmul-16x1000x2048", |o| matmul_case(o, 16, 1000, 2048)),
    ("matmul-1x1000x2048", |o| matmul_case(o, 1, 1000, 2048)),
    ("matmul-10x500x64", |o| matmul_case(o, 10, 500, 64)),
    ("matmul-bf16-1024", |_| matmul_bf16_case(1024, 1024, 1024)),
    ("matmul-bf16-16x4096x4096", |_| {
        matmul_bf16_case(16, 4096, 4096)
    }),
    ("matmul-bf16-4x4096x4096", |_| {
        matmul_bf16_case(4, 4096, 4096)
    }),
    ("matvec-4096", |o| matvec_case(o, 4096)),
    ("matvec-8192", |o| matvec_case(o, 8192)),
    ("dot-2^24", |o| dot_case(o, 1 << 24)),
    ("jacobi3d-256", |o| jacobi3d_case(o, 256)),
    ("mcc-resnet50-n1", |o| mcc_case(o, 112, 64)),
    ("ccsdt-abcdef-gdab-efgc", |o| ccsdt_case(o, 16)),
    ("prl-2^15", |o| prl_case(o, 1 << 15)),
    ("matmul-bias-relu-1024", |o| {
        stages::matmul_bias_relu_case(o, 1024, 1024, 1024)
    }),
    ("matmul-bias-relu-16x4096x4096", |o| {
        stages::matmul_bias_relu_case(o, 16, 4096, 4096)
    }),
    ("softmax-4096x4096", |o| stages::softmax_case(o, 4096, 4096)),
    ("layernorm-4096x4096", |o| {
        stages::layernorm_case(o, 4096, 4096)
    }),
    ("attention-1024x64", |o| stages::attention_case(o, 1024, 64)),
];

/// Appends the `mdh-opencl` implementation that `make` builds on the
/// OpenCL device, unless there is none (the reason is printed once) or the
/// case gives a reason `slow` to skip it under `--quick`; returns the
/// case's notes (that skip, printed below the table).
fn push_opencl(
    impls: &mut Vec<Impl>,
    opts: &Opts,
    slow: Option<&str>,
    make: impl FnOnce(&'static mdh::opencl::Device) -> Impl,
) -> Vec<String> {
    let Some(dev) = opencl::device() else {
        return Vec::new();
    };
    match slow {
        Some(why) if opts.quick => vec![format!("mdh-opencl skipped under --quick: {why}")],
        _ => {
            impls.push(make(dev));
            Vec::new()
        }
    }
}

/// Appends the `c-openmp` implementation (see [`omp`]), or, in a build
/// without it, returns the note that says why it is missing.
fn push_omp(impls: &mut Vec<Impl>, make: impl FnOnce() -> Impl) -> Vec<String> {
    match omp::missing() {
        None => {
            impls.push(make());
            Vec::new()
        }
        Some(why) => vec![why],
    }
}

/// The result of a C peer, which exists wherever [`omp::missing`] is `None`.
fn c_peer(ran: Option<Result<(), String>>) -> Result<(), String> {
    ran.unwrap_or_else(|| Err("c-openmp: not in this build".into()))
}

/// xorshift64*: deterministic inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// `n` values uniform in [0, 1).
    fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32)
            .collect()
    }
    fn i32s(&mut self, n: usize, lo: i32, hi: i32) -> Vec<i32> {
        (0..n)
            .map(|_| lo + (self.next() % (hi - lo) as u64) as i32)
            .collect()
    }
}

fn err(e: mdh::Error) -> String {
    format!("mdh: {e}")
}

/// An output of `n` NaNs starting at a 64-byte boundary (a cache line, as
/// oneDNN's own buffers do), so that every implementation writes whole
/// lines alike and mdh's streamed stores apply.
fn nan(n: usize) -> Aligned {
    let buf = vec![f32::NAN; n + 15];
    let start = buf.as_ptr().align_offset(64).min(15);
    Aligned { buf, start, len: n }
}

/// `len` elements of `buf` from `start` (see [`nan`]).
struct Aligned {
    buf: Vec<f32>,
    start: usize,
    len: usize,
}

impl std::ops::Deref for Aligned {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        &self.buf[self.start..self.start + self.len]
    }
}

impl std::ops::DerefMut for Aligned {
    fn deref_mut(&mut self) -> &mut [f32] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

fn out(v: &[f32]) -> Output {
    Output::F32(v.to_vec())
}

/// The implementations so far followed by the CUDA rows that exist here
/// (see [`cuda`]).
fn with_gpu(
    mut impls: Vec<Impl>,
    gpu: impl IntoIterator<Item = Result<Option<Impl>, String>>,
) -> Result<Vec<Impl>, String> {
    for row in gpu {
        impls.extend(row?);
    }
    Ok(impls)
}

// ---------------------------------------------------------------------------

/// A matrix product's compulsory traffic (`bytes`: both inputs read, the
/// result written once, what bounds the skinny shapes), stated where it
/// exceeds the last-level cache: a working set the cache holds is read
/// from it again in each repetition, faster than the streaming roof (1 ×
/// 1000 × 2048, 8 MB, ran at 323 % of it on the 32 MiB L3 of the Zen 4
/// EPYC); there the case is held against the peak alone.
fn from_memory(bytes: usize) -> Option<f64> {
    let l3 = mdh::machine::host().machine.l3.unwrap_or(0);
    (bytes as u64 > l3).then_some(bytes as f64)
}

fn matmul_case(o: &Opts, i: usize, j: usize, k: usize) -> Result<Case, String> {
    let mut rng = Rng(0x1234 + i as u64);
    let a = Rc::new(rng.f32s(i * k));
    let b = Rc::new(rng.f32s(k * j));
    let s = matmul::Sizes { I: i, J: j, K: k };
    let gpu = [
        cuda::mdh_cuda(&[&a[..], &b[..]], &nan(i * j), move |dev, x, c| {
            matmul::cuda::launch(dev, &x[0], &x[1], c, s)
        }),
        cuda::sgemm(cuda::Math::Fp32, &a, &b, i, j, k),
        cuda::sgemm(cuda::Math::Tf32, &a, &b, i, j, k),
    ];
    let mut impls = vec![
        imp(
            "mdh",
            (a.clone(), b.clone(), nan(i * j)),
            move |(a, b, c)| matmul::cpu(a, b, c, s).map_err(err),
            |(_, _, c)| out(c),
        ),
        imp(
            "openblas",
            (a.clone(), b.clone(), nan(i * j)),
            move |(a, b, c)| {
                blas::sgemm(false, i, j, k, a, b, c);
                Ok(())
            },
            |(_, _, c)| out(c),
        ),
        imp(
            "faer",
            (a.clone(), b.clone(), nan(i * j)),
            move |(a, b, c)| {
                let lhs = faer::MatRef::from_row_major_slice(&a[..], i, k);
                let rhs = faer::MatRef::from_row_major_slice(&b[..], k, j);
                let dst = faer::MatMut::from_row_major_slice_mut(&mut c[..], i, j);
                faer::linalg::matmul::matmul(
                    dst,
                    faer::Accum::Replace,
                    lhs,
                    rhs,
                    1.0f32,
                    faer::Par::rayon(0),
                );
                Ok(())
            },
            |(_, _, c)| out(c),
        ),
    ];
    // On PoCL (2-core Xeon) 1024³ takes about 2.6 s per run.
    let slow =
        (i * j * k >= 1 << 30).then_some("about 2.6 s per run on PoCL with the configured plan");
    let notes = push_opencl(&mut impls, o, slow, |dev| {
        imp(
            "mdh-opencl",
            (a.clone(), b.clone(), nan(i * j)),
            move |(a, b, c)| matmul::opencl::run(dev, a, b, c, s).map_err(err),
            |(_, _, c)| out(c),
        )
    });
    Ok(Case {
        what: format!("C[{i}x{j}] = A[{i}x{k}] B[{k}x{j}]"),
        flops: Some(2.0 * (i * j * k) as f64),
        bf16_products: false,
        bytes: from_memory(4 * (i * k + k * j + i * j)),
        rtol: RTOL,
        impls: with_gpu(impls, gpu)?,
        notes,
    })
}

/// Mixed precision: bf16 × bf16 → f32 (`matmul_bf16`, its inputs widened
/// to f32 while packing), against mdh's own f32 kernel on the same values,
/// oneDNN's bf16 matmul (where this CPU has it: AVX-512) and the `gemm`
/// crate's f16 matmul (f16 output). The inputs are multiples of 1/256 in
/// [0, 1): exact in bf16 and f16, so every row multiplies the same values.
fn matmul_bf16_case(i: usize, j: usize, k: usize) -> Result<Case, String> {
    let mut rng = Rng(0xbf16 + i as u64);
    let mut values =
        |n: usize| -> Vec<f32> { (0..n).map(|_| (rng.next() >> 56) as f32 / 256.0).collect() };
    let (a32, b32) = (Rc::new(values(i * k)), Rc::new(values(k * j)));
    let bf16s = |v: &[f32]| -> Rc<Vec<mdh::bf16>> {
        Rc::new(v.iter().map(|&x| mdh::bf16::from_f32(x)).collect())
    };
    let f16s =
        |v: &[f32]| -> Vec<gemm::f16> { v.iter().map(|&x| gemm::f16::from_f32(x)).collect() };
    let (a, b) = (bf16s(&a32), bf16s(&b32));
    let s = matmul_bf16::Sizes { I: i, J: j, K: k };
    let s32 = matmul::Sizes { I: i, J: j, K: k };
    let mut impls = vec![
        imp(
            "mdh",
            (a.clone(), b.clone(), nan(i * j)),
            move |(a, b, c)| matmul_bf16::cpu(a, b, c, s).map_err(err),
            |(_, _, c)| out(c),
        ),
        imp(
            "mdh-f32",
            (a32, b32, nan(i * j)),
            move |(a, b, c)| matmul::cpu(a, b, c, s32).map_err(err),
            |(_, _, c)| out(c),
        ),
        imp(
            "gemm-f16",
            (
                f16s(&to_f32s(&a)),
                f16s(&to_f32s(&b)),
                vec![gemm::f16::NAN; i * j],
            ),
            move |(a, b, c)| {
                // SAFETY: row-major m×k, k×n and m×n buffers of exactly
                // these lengths (column stride 1, row stride the width).
                unsafe {
                    gemm::gemm(
                        i,
                        j,
                        k,
                        c.as_mut_ptr(),
                        1,
                        j as isize,
                        false,
                        a.as_ptr(),
                        1,
                        k as isize,
                        b.as_ptr(),
                        1,
                        j as isize,
                        gemm::f16::ZERO,
                        gemm::f16::ONE,
                        false,
                        false,
                        false,
                        gemm::Parallelism::Rayon(0),
                    );
                }
                Ok(())
            },
            |(_, _, c)| Output::F32(c.iter().map(|x| x.to_f32()).collect()),
        )
        // Its sums are rounded to f16 (11 significant bits) between blocks
        // of k, not only once: at k = 4096 they are 1.4e-3 off f32 sums.
        .rtol(8e-3),
    ];
    let bits = |v: &[mdh::bf16]| -> Vec<u16> { v.iter().map(|x| x.to_bits()).collect() };
    let mut notes = Vec::new();
    let shape = dnnl::MatmulShape { m: i, n: j, k };
    let (src, weights) = (dnnl::Values::Bf16(bits(&a)), dnnl::Values::Bf16(bits(&b)));
    match dnnl::matmul(shape, src, weights, None)? {
        Ok(mm) => impls.push(imp("onednn-bf16", mm, |mm| mm.run(), |mm| out(mm.dst()))),
        Err(why) => notes.push(format!("onednn-bf16 skipped: {why}")),
    }
    Ok(Case {
        what: format!(
            "C[{i}x{j}] f32 = A[{i}x{k}] bf16 · B[{k}x{j}] bf16; oneDNN {}",
            dnnl::version()
        ),
        flops: Some(2.0 * (i * j * k) as f64),
        bf16_products: true,
        bytes: from_memory(2 * (i * k + k * j) + 4 * i * j),
        rtol: RTOL,
        impls,
        notes,
    })
}

/// The f32 values of bf16s (exact).
fn to_f32s(v: &[mdh::bf16]) -> Vec<f32> {
    v.iter().map(|x| x.to_f32()).collect()
}

fn matvec_case(o: &Opts, n: usize) -> Result<Case, String> {
    let mut rng = Rng(0x5678 + n as u64);
    let m = Rc::new(rng.f32s(n * n));
    let v = Rc::new(rng.f32s(n));
    let s = matvec::Sizes { I: n, K: n };
    let gpu = [
        cuda::mdh_cuda(&[&m[..], &v[..]], &nan(n), move |dev, x, w| {
            matvec::cuda::launch(dev, &x[0], &x[1], w, s)
        }),
        cuda::sgemv(&m, &v, n, n),
    ];
    let mut impls = vec![
        imp(
            "mdh",
            (m.clone(), v.clone(), nan(n)),
            move |(m, v, w)| matvec::cpu(m, v, w, s).map_err(err),
            |(_, _, w)| out(w),
        ),
        imp(
            "openblas",
            (m.clone(), v.clone(), nan(n)),
            move |(m, v, w)| {
                blas::sgemv(n, n, m, v, w);
                Ok(())
            },
            |(_, _, w)| out(w),
        ),
    ];
    let notes = push_opencl(&mut impls, o, None, |dev| {
        imp(
            "mdh-opencl",
            (m, v, nan(n)),
            move |(m, v, w)| matvec::opencl::run(dev, m, v, w, s).map_err(err),
            |(_, _, w)| out(w),
        )
    });
    Ok(Case {
        what: format!("w[{n}] = M[{n}x{n}] v[{n}]"),
        flops: Some(2.0 * (n * n) as f64),
        bf16_products: false,
        bytes: Some(4.0 * (n * n + 2 * n) as f64),
        rtol: RTOL,
        impls: with_gpu(impls, gpu)?,
        notes,
    })
}

fn dot_case(o: &Opts, n: usize) -> Result<Case, String> {
    let mut rng = Rng(0x9abc);
    let x = Rc::new(rng.f32s(n));
    let y = Rc::new(rng.f32s(n));
    let s = dot::Sizes { N: n };
    let gpu = [
        cuda::mdh_cuda(&[&x[..], &y[..]], &nan(1), move |dev, v, r| {
            dot::cuda::launch(dev, &v[0], &v[1], r, s)
        }),
        cuda::sdot(&x, &y),
    ];
    let mut impls = vec![
        imp(
            "mdh",
            (x.clone(), y.clone(), nan(1)),
            move |(x, y, r)| dot::cpu(x, y, r, s).map_err(err),
            |(_, _, r)| out(r),
        ),
        imp(
            "openblas",
            (x.clone(), y.clone(), nan(1)),
            |(x, y, r)| {
                r[0] = blas::sdot(x, y);
                Ok(())
            },
            |(_, _, r)| out(r),
        ),
    ];
    let notes = push_opencl(&mut impls, o, None, |dev| {
        imp(
            "mdh-opencl",
            (x, y, nan(1)),
            move |(x, y, r)| dot::opencl::run(dev, x, y, r, s).map_err(err),
            |(_, _, r)| out(r),
        )
    });
    Ok(Case {
        what: format!("r = x[{n}] . y[{n}]"),
        flops: Some(2.0 * n as f64),
        bf16_products: false,
        bytes: Some(8.0 * n as f64),
        rtol: RTOL,
        impls: with_gpu(impls, gpu)?,
        notes,
    })
}

fn jacobi3d_case(o: &Opts, n: usize) -> Result<Case, String> {
    let m = n + 2;
    let mut rng = Rng(0xdef0);
    let v = Rc::new(rng.f32s(m * m * m));
    let s = jacobi3d::Sizes { N: n, M: n, L: n };
    let gpu = [cuda::mdh_cuda(
        &[&v[..]],
        &nan(n * n * n),
        move |dev, x, w| jacobi3d::cuda::launch(dev, &x[0], w, s),
    )];
    let mut impls = vec![
        imp(
            "mdh",
            (v.clone(), nan(n * n * n)),
            move |(v, w)| jacobi3d::cpu(v, w, s).map_err(err),
            |(_, w)| out(w),
        ),
        imp(
            "naive-rayon",
            (v.clone(), nan(n * n * n)),
            move |(v, w)| {
                let v: &[f32] = v;
                w.par_chunks_mut(n * n).enumerate().for_each(|(i, plane)| {
                    for j in 0..n {
                        for k in 0..n {
                            let at = |di: usize, dj: usize, dk: usize| {
                                v[((i + di) * m + j + dj) * m + k + dk]
                            };
                            plane[j * n + k] = 0.4 * at(1, 1, 1)
                                + 0.1
                                    * (at(0, 1, 1)
                                        + at(2, 1, 1)
                                        + at(1, 0, 1)
                                        + at(1, 2, 1)
                                        + at(1, 1, 0)
                                        + at(1, 1, 2));
                        }
                    }
                });
                Ok(())
            },
            |(_, w)| out(w),
        ),
    ];
    let mut notes = push_omp(&mut impls, || {
        imp(
            "c-openmp",
            (v.clone(), nan(n * n * n)),
            move |(v, w)| c_peer(omp::jacobi3d(v, w, n)),
            |(_, w)| out(w),
        )
    });
    notes.extend(push_opencl(&mut impls, o, None, |dev| {
        imp(
            "mdh-opencl",
            (v, nan(n * n * n)),
            move |(v, w)| jacobi3d::opencl::run(dev, v, w, s).map_err(err),
            |(_, w)| out(w),
        )
    }));
    let pts = (n * n * n) as f64;
    Ok(Case {
        what: format!("7-point stencil, {n}^3 points"),
        flops: Some(8.0 * pts),
        bf16_products: false,
        bytes: Some(8.0 * pts),
        rtol: RTOL,
        impls: with_gpu(impls, gpu)?,
        notes,
    })
}

/// ResNet-50's first layer for p = 112, k = 64: 224x224x3 padded by 3 ->
/// 230x230x3 NHWC, 64 filters 7x7x3, stride 2 -> 112x112x64.
fn mcc_case(o: &Opts, p: usize, k: usize) -> Result<Case, String> {
    let (n, c, r) = (1usize, 3usize, 7usize);
    let h = 2 * p + r - 1;
    let mut rng = Rng(0x4242);
    let img = rng.f32s(n * h * h * c);
    let f = rng.f32s(k * r * r * c);
    let s = kernels::mcc::Sizes {
        N: n,
        P: p,
        Q: p,
        K: k,
        R: r,
        S: r,
        C: c,
    };
    let shape = dnnl::ConvShape {
        n,
        c,
        h,
        w: h,
        k,
        r,
        s: r,
        stride: 2,
        p,
        q: p,
    };
    let conv = dnnl::Conv::new(shape, img.clone(), &f)?;
    let layout = if conv.weights_reordered {
        "weights reordered once to oneDNN's layout"
    } else {
        "OHWI weights"
    };
    let gpu = [cuda::mdh_cuda(
        &[&img[..], &f[..]],
        &nan(n * p * p * k),
        move |dev, x, o| kernels::mcc::cuda::launch(dev, &x[0], &x[1], o, s),
    )];
    let mut impls = vec![
        imp(
            "mdh",
            (img.clone(), f.clone(), nan(n * p * p * k)),
            move |(img, f, o)| kernels::mcc::cpu(img, f, o, s).map_err(err),
            |(_, _, o)| out(o),
        ),
        imp("onednn", conv, |conv| conv.run(), |conv| out(conv.dst())),
    ];
    let notes = push_opencl(&mut impls, o, None, |dev| {
        imp(
            "mdh-opencl",
            (img, f, nan(n * p * p * k)),
            move |(img, f, o)| kernels::mcc::opencl::run(dev, img, f, o, s).map_err(err),
            |(_, _, o)| out(o),
        )
    });
    Ok(Case {
        what: format!("NHWC {n}x{h}x{h}x{c} * KRSC {k}x{r}x{r}x{c}, stride 2 -> {n}x{p}x{p}x{k}; oneDNN {}, {layout}", dnnl::version()),
        flops: Some(2.0 * (n * p * p * k * r * r * c) as f64),
        bf16_products: false,
        bytes: None,
        rtol: RTOL,
        impls: with_gpu(impls, gpu)?,
        notes,
    })
}

fn ccsdt_case(o: &Opts, e: usize) -> Result<Case, String> {
    let (na, nb, nc, nd, ne, nf, ng) = (e, e, e, e, e, e, e);
    let mut rng = Rng(0x7777);
    let a = Rc::new(rng.f32s(ng * nd * na * nb));
    let b = Rc::new(rng.f32s(ne * nf * ng * nc));
    let len_c = na * nb * nc * nd * ne * nf;
    let s = ccsdt::Sizes {
        NA: na,
        NB: nb,
        NC: nc,
        ND: nd,
        NE: ne,
        NF: nf,
        NG: ng,
    };
    let gpu = [cuda::mdh_cuda(
        &[&a[..], &b[..]],
        &nan(len_c),
        move |dev, x, c| ccsdt::cuda::launch(dev, &x[0], &x[1], c, s),
    )];
    let mut impls = vec![
        imp(
            "mdh",
            (a.clone(), b.clone(), nan(len_c)),
            move |(a, b, c)| ccsdt::cpu(a, b, c, s).map_err(err),
            |(_, _, c)| out(c),
        ),
        imp(
            "ttgt-openblas",
            (
                a.clone(),
                b.clone(),
                vec![0.0f32; ng * ne * nf * nc],
                vec![0.0f32; nd * na * nb * ne * nf * nc],
                nan(len_c),
            ),
            move |(a, b, bt, ct, c)| {
                // Transpose: B[e,f,g,c] -> Bt[g, (e,f,c)], rows of c copied whole.
                let b: &[f32] = b;
                bt.par_chunks_mut(ne * nf * nc)
                    .enumerate()
                    .for_each(|(g, row)| {
                        for ef in 0..ne * nf {
                            row[ef * nc..][..nc].copy_from_slice(&b[(ef * ng + g) * nc..][..nc]);
                        }
                    });
                // GEMM: Ct[(d,a,b), (e,f,c)] = A[g, (d,a,b)]^T . Bt; A[g,d,a,b]
                // already is a g x (dab) row-major matrix, used transposed.
                blas::sgemm(true, nd * na * nb, ne * nf * nc, ng, a, bt, ct);
                // Transpose: Ct[d,a,b,e,f,c] -> C[a,b,c,d,e,f].
                let ct: &[f32] = ct;
                c.par_chunks_mut(nc * nd * ne * nf)
                    .enumerate()
                    .for_each(|(ab, block)| {
                        let (ia, ib) = (ab / nb, ab % nb);
                        for d in 0..nd {
                            let src =
                                &ct[((d * na + ia) * nb + ib) * ne * nf * nc..][..ne * nf * nc];
                            for ic in 0..nc {
                                let dst = &mut block[(ic * nd + d) * ne * nf..][..ne * nf];
                                for (ef, x) in dst.iter_mut().enumerate() {
                                    *x = src[ef * nc + ic];
                                }
                            }
                        }
                    });
                Ok(())
            },
            |(_, _, _, _, c)| out(c),
        ),
    ];
    let notes = push_opencl(&mut impls, o, None, |dev| {
        imp(
            "mdh-opencl",
            (a, b, nan(len_c)),
            move |(a, b, c)| ccsdt::opencl::run(dev, a, b, c, s).map_err(err),
            |(_, _, c)| out(c),
        )
    });
    Ok(Case {
        what: format!("C[a,b,c,d,e,f] = sum_g A[g,d,a,b] B[e,f,g,c], all extents {e}"),
        flops: Some(2.0 * (len_c * ng) as f64),
        bf16_products: false,
        bytes: None,
        rtol: RTOL,
        impls: with_gpu(impls, gpu)?,
        notes,
    })
}

#[inline(always)]
fn prl_value(nf: i32, nl: i32, ny: i32, ef: i32, el: i32, ey: i32, j: usize) -> i64 {
    let wf = if nf == ef { 8 } else { -2 };
    let wl = if nl == el { 12 } else { -3 };
    let dy = ny.wrapping_sub(ey);
    let wy = if dy == 0 {
        5
    } else if dy == 1 || dy == -1 {
        2
    } else {
        -4
    };
    (wf + wl + wy) as i64 * 4294967296 + (4294967295 - j as i64)
}

fn prl_case(o: &Opts, n: usize) -> Result<Case, String> {
    let mut rng = Rng(0x1313);
    let mut recs = || {
        Rc::new([
            rng.i32s(n, 0, 64),
            rng.i32s(n, 0, 512),
            rng.i32s(n, 1920, 2010),
        ])
    };
    let (a, b) = (recs(), recs());
    let s = prl::Sizes { I: n, J: n };
    let cols: Vec<&[i32]> = a.iter().chain(b.iter()).map(|c| &c[..]).collect();
    let gpu = [cuda::mdh_cuda(
        &cols,
        &vec![i64::MIN; n],
        move |dev, x, best| {
            prl::cuda::launch(dev, &x[0], &x[1], &x[2], &x[3], &x[4], &x[5], best, s)
        },
    )];
    let mut impls = vec![
        imp(
            "mdh",
            (a.clone(), b.clone(), vec![i64::MIN; n]),
            move |(a, b, best)| {
                prl::cpu(&a[0], &a[1], &a[2], &b[0], &b[1], &b[2], best, s).map_err(err)
            },
            |(_, _, best)| Output::I64(best.clone()),
        ),
        imp(
            "naive-rayon",
            (a.clone(), b.clone(), vec![i64::MIN; n]),
            |(a, b, best)| {
                let (a, b) = (&**a, &**b);
                best.par_iter_mut().enumerate().for_each(|(i, best)| {
                    let (nf, nl, ny) = (a[0][i], a[1][i], a[2][i]);
                    let mut m = i64::MIN;
                    #[allow(clippy::needless_range_loop)] // j is part of the value
                    for j in 0..b[0].len() {
                        m = m.max(prl_value(nf, nl, ny, b[0][j], b[1][j], b[2][j], j));
                    }
                    *best = m;
                });
                Ok(())
            },
            |(_, _, best)| Output::I64(best.clone()),
        ),
    ];
    let mut notes = push_omp(&mut impls, || {
        imp(
            "c-openmp",
            (a.clone(), b.clone(), vec![i64::MIN; n]),
            |(a, b, best)| c_peer(omp::prl(a, b, best)),
            |(_, _, best)| Output::I64(best.clone()),
        )
    });
    let slow = (n >= 1 << 14).then_some("about 2.6 s per run on PoCL for 2^15 records");
    notes.extend(push_opencl(&mut impls, o, slow, |dev| {
        imp(
            "mdh-opencl",
            (a, b, vec![i64::MIN; n]),
            move |(a, b, best)| {
                prl::opencl::run(dev, &a[0], &a[1], &a[2], &b[0], &b[1], &b[2], best, s)
                    .map_err(err)
            },
            |(_, _, best)| Output::I64(best.clone()),
        )
    }));
    Ok(Case {
        what: format!("best match of {n} records among {n}"),
        flops: None,
        bf16_products: false,
        bytes: None,
        rtol: 0.0,
        impls: with_gpu(impls, gpu)?,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{measure, Plan};
    use std::time::Duration;

    /// Every case at a small size (odd extents included): all peers agree
    /// with mdh. Exercises the OpenBLAS, oneDNN (convolution, matmul,
    /// softmax, layer normalization) and faer bindings, and
    /// OpenCL and CUDA (with cuBLAS) where there is a device.
    #[test]
    fn small_cases_agree() {
        let builders: &[(&str, Builder)] = &[
            ("matmul 7x5x3", |o| matmul_case(o, 7, 5, 3)),
            ("matmul 1x33x70", |o| matmul_case(o, 1, 33, 70)),
            ("matmul-bf16 7x33x70", |_| matmul_bf16_case(7, 33, 70)),
            ("matvec 37", |o| matvec_case(o, 37)),
            ("dot 1001", |o| dot_case(o, 1001)),
            ("jacobi3d 9", |o| jacobi3d_case(o, 9)),
            ("mcc 5x8", |o| mcc_case(o, 5, 8)),
            ("ccsdt 3", |o| ccsdt_case(o, 3)),
            ("prl 101", |o| prl_case(o, 101)),
            ("matmul-bias-relu 7x33x70", |o| {
                stages::matmul_bias_relu_case(o, 7, 33, 70)
            }),
            ("softmax 7x33", |o| stages::softmax_case(o, 7, 33)),
            ("layernorm 7x33", |o| stages::layernorm_case(o, 7, 33)),
            ("attention 13x8", |o| stages::attention_case(o, 13, 8)),
        ];
        let plan = Plan {
            budget: Duration::ZERO,
            min: 1,
            max: 1,
        };
        for (what, build) in builders {
            let mut case = build(&Opts::default()).unwrap_or_else(|e| panic!("{what}: {e}"));
            let timings =
                measure(&mut case, plan, &|_| {}).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(timings.len() >= 2, "{what}");
            for t in timings {
                assert!(t.mismatch.is_none(), "{what}: {}: {:?}", t.name, t.mismatch);
            }
        }
    }
}
