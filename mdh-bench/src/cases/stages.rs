//! The cases of kernels of stages: each fused kernel beside the same chain
//! run stage by stage (`mdh-unfused`) and its outside peers.

use std::rc::Rc;

use rayon::prelude::*;

use super::{err, nan, out, push_opencl, with_gpu, Opts, Rng, RTOL};
use crate::dnnl::{self, MatmulShape, Prepared, Values};
use crate::harness::{imp, Case, Impl};
use crate::{blas, cuda};
use mdh_example_kernels::{attention, layernorm, matmul, matmul_bias_relu, softmax};

/// `c = max(c + bias, 0)`, row by row (`bias` along the rows): the pass a
/// library's plain product needs after it.
fn bias_relu(c: &mut [f32], bias: &[f32]) {
    let n = bias.len().max(1);
    c.par_chunks_mut(n).for_each(|row| {
        for (x, b) in row.iter_mut().zip(bias) {
            *x = (*x + b).max(0.0);
        }
    });
}

/// A dense layer `y = max(A · B + bias, 0)` with `A[i×k]`, `B[k×j]`.
pub(super) fn matmul_bias_relu_case(
    o: &Opts,
    i: usize,
    j: usize,
    k: usize,
) -> Result<Case, String> {
    // Small integers stored as floats: every sum is exact in any order, so
    // the peers agree exactly even where the bias cancels the product (a
    // float sum's rounding would dominate the results near zero). The bias
    // is centred on the products' mean (12.25 k), so that ReLU clips about
    // half the points.
    let mut rng = Rng(0x4242 + i as u64);
    let mut ints = |n: usize, lo: i32, hi: i32| -> Vec<f32> {
        rng.i32s(n, lo, hi).into_iter().map(|x| x as f32).collect()
    };
    let a = Rc::new(ints(i * k, 0, 8));
    let b = Rc::new(ints(k * j, 0, 8));
    let centre = 12.25 * k as f32;
    let bias: Rc<Vec<f32>> = Rc::new(ints(j, -64, 64).into_iter().map(|x| x - centre).collect());
    let s = matmul_bias_relu::Sizes { I: i, J: j, K: k };
    let shape = MatmulShape { m: i, n: j, k };
    let (src, weights) = (Values::F32(a.to_vec()), Values::F32(b.to_vec()));
    let onednn = dnnl::matmul(shape, src, weights, Some(bias.to_vec()))?;
    let state = || (a.clone(), b.clone(), bias.clone(), nan(i * j));
    let mut impls = vec![
        imp(
            "mdh",
            state(),
            move |(a, b, bias, y)| matmul_bias_relu::cpu(a, b, bias, y, s).map_err(err),
            |(_, _, _, y)| out(y),
        ),
        imp(
            "mdh-unfused",
            state(),
            move |(a, b, bias, y)| matmul_bias_relu::cpu_unfused(a, b, bias, y, s).map_err(err),
            |(_, _, _, y)| out(y),
        ),
        // Plain matmul, timed alone: the bias and ReLU apply to its result
        // when it is read, outside the timed runs (the time a fused
        // epilogue should add nothing to).
        imp(
            "mdh-matmul",
            state(),
            move |(a, b, _, c)| {
                matmul::cpu(a, b, c, matmul::Sizes { I: i, J: j, K: k }).map_err(err)
            },
            |(_, _, bias, c)| {
                let mut y = c.to_vec();
                bias_relu(&mut y, bias);
                out(&y)
            },
        ),
        imp(
            "openblas+pass",
            state(),
            move |(a, b, bias, y)| {
                blas::sgemm(false, i, j, k, a, b, y);
                bias_relu(y, bias);
                Ok(())
            },
            |(_, _, _, y)| out(y),
        ),
    ];
    let mut notes = push_onednn(&mut impls, "onednn-postops", onednn);
    // The GPUs run the product with its epilogue fused (`run` on OpenCL,
    // the fused stage's `launch` on device buffers on CUDA).
    let slow = (i * j * k >= 1 << 30).then_some("seconds per run on PoCL");
    notes.extend(push_opencl(&mut impls, o, slow, |dev| {
        imp(
            "mdh-opencl",
            state(),
            move |(a, b, bias, y)| {
                matmul_bias_relu::opencl::run(dev, a, b, bias, y, s).map_err(err)
            },
            |(_, _, _, y)| out(y),
        )
    }));
    use matmul_bias_relu::fused::matmul_bias_relu_product as fused;
    let (fs, es) = (
        fused::Sizes { I: i, J: j, K: k },
        matmul_bias_relu::stages::matmul_bias_relu_epilogue::Sizes { I: i, J: j },
    );
    let gpu = [
        cuda::mdh_cuda(
            &[&a[..], &b[..], &bias[..]],
            &nan(i * j),
            move |dev, x, y| fused::cuda::launch(dev, &x[0], &x[1], y, fs, &x[2], es),
        ),
        cuda::lt_bias_relu(&a, &b, &bias, [i, j, k]),
    ];
    Ok(Case {
        what: format!("y[{i}x{j}] = max(A[{i}x{k}] B[{k}x{j}] + bias[{j}], 0)"),
        flops: Some(2.0 * (i * j * k) as f64),
        bf16_products: false,
        bytes: None,
        rtol: RTOL,
        impls: with_gpu(impls, gpu)?,
        notes,
    })
}

/// Appends the oneDNN row `name`, or returns the note that says why oneDNN
/// has none here.
fn push_onednn(
    impls: &mut Vec<Impl>,
    name: &'static str,
    made: Result<Prepared, String>,
) -> Vec<String> {
    match made {
        Ok(p) => {
            impls.push(imp(name, p, |p| p.run(), |p| out(p.dst())));
            Vec::new()
        }
        Err(why) => vec![format!("{name} skipped: {why}")],
    }
}

/// `n` values uniform in [-4, 4): rows whose maximum and mean matter.
fn centred(rng: &mut Rng, n: usize) -> Vec<f32> {
    rng.f32s(n).into_iter().map(|x| 8.0 * x - 4.0).collect()
}

/// The compulsory traffic of a row-wise normalization of `rows × cols`
/// floats: the input read once, the output written once (what a fused
/// kernel moves; stage by stage, the input is read once per stage).
fn row_traffic(rows: usize, cols: usize) -> f64 {
    8.0 * (rows * cols) as f64
}

/// The softmax of each row of `x[rows×cols]`.
pub(super) fn softmax_case(_: &Opts, rows: usize, cols: usize) -> Result<Case, String> {
    let mut rng = Rng(0x50f7 + rows as u64);
    let x = Rc::new(centred(&mut rng, rows * cols));
    let s = softmax::Sizes { I: rows, J: cols };
    let onednn = dnnl::softmax(rows, cols, x.to_vec())?;
    let mut impls = vec![
        imp(
            "mdh",
            (x.clone(), nan(rows * cols)),
            move |(x, y)| softmax::cpu(x, y, s).map_err(err),
            |(_, y)| out(y),
        ),
        imp(
            "mdh-unfused",
            (x.clone(), nan(rows * cols)),
            move |(x, y)| softmax::cpu_unfused(x, y, s).map_err(err),
            |(_, y)| out(y),
        ),
        imp(
            "rayon-2pass",
            (x, nan(rows * cols)),
            move |(x, y)| {
                rows_of(x, y, cols, softmax_row);
                Ok(())
            },
            |(_, y)| out(y),
        ),
    ];
    let notes = push_onednn(&mut impls, "onednn", onednn);
    Ok(Case {
        what: format!(
            "y[{rows}x{cols}] = softmax of each row of x; oneDNN {}",
            dnnl::version()
        ),
        flops: None,
        bf16_products: false,
        bytes: Some(row_traffic(rows, cols)),
        rtol: RTOL,
        impls,
        notes,
    })
}

/// `row(x_row, y_row)` for every row of `x` and `y` (`cols` wide), the
/// rows in parallel.
fn rows_of(x: &[f32], y: &mut [f32], cols: usize, row: impl Fn(&[f32], &mut [f32]) + Sync) {
    let cols = cols.max(1);
    y.par_chunks_mut(cols)
        .zip(x.par_chunks(cols))
        .for_each(|(y, x)| row(x, y));
}

/// Softmax of one row in two passes over `x`: its maximum, then the
/// exponentials (into `y`) and their sum; `y` is scaled while in cache.
fn softmax_row(x: &[f32], y: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for (y, &x) in y.iter_mut().zip(x) {
        *y = (x - max).exp();
        sum += *y;
    }
    let inv = 1.0 / sum;
    y.iter_mut().for_each(|y| *y *= inv);
}

/// Layer normalization of each row of `x[rows×cols]` with a scale and
/// shift per column.
pub(super) fn layernorm_case(_: &Opts, rows: usize, cols: usize) -> Result<Case, String> {
    let eps = 1e-5f32;
    let mut rng = Rng(0x1a7e + rows as u64);
    let x = Rc::new(centred(&mut rng, rows * cols));
    let (gamma, beta) = (Rc::new(rng.f32s(cols)), Rc::new(rng.f32s(cols)));
    let s = layernorm::Sizes { I: rows, J: cols };
    let onednn = dnnl::layer_norm(rows, cols, x.to_vec(), gamma.to_vec(), beta.to_vec(), eps)?;
    let state = || (x.clone(), gamma.clone(), beta.clone(), nan(rows * cols));
    let mut impls = vec![
        imp(
            "mdh",
            state(),
            move |(x, g, b, y)| layernorm::cpu(x, g, b, y, eps, s).map_err(err),
            |(_, _, _, y)| out(y),
        ),
        imp(
            "mdh-unfused",
            state(),
            move |(x, g, b, y)| layernorm::cpu_unfused(x, g, b, y, eps, s).map_err(err),
            |(_, _, _, y)| out(y),
        ),
        imp(
            "rayon-2pass",
            state(),
            move |(x, g, b, y)| {
                let (g, b): (&[f32], &[f32]) = (g, b);
                rows_of(x, y, cols, |x, y| layernorm_row(x, y, g, b, eps));
                Ok(())
            },
            |(_, _, _, y)| out(y),
        ),
    ];
    let notes = push_onednn(&mut impls, "onednn", onednn);
    Ok(Case {
        what: format!(
            "y[{rows}x{cols}] = (x - mean) / sqrt(var + 1e-5) * gamma + beta per row; oneDNN {}",
            dnnl::version()
        ),
        flops: None,
        bf16_products: false,
        bytes: Some(row_traffic(rows, cols)),
        rtol: RTOL,
        impls,
        notes,
    })
}

/// Layer normalization of one row in two passes over `x`: its mean, then
/// its variance (of `x - mean`); the output from the row in cache.
fn layernorm_row(x: &[f32], y: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = x.len() as f32;
    let mean = x.iter().sum::<f32>() / n;
    let var = x.iter().map(|&x| (x - mean) * (x - mean)).sum::<f32>() / n;
    let inv = 1.0 / (var + eps).sqrt();
    for (((y, &x), &g), &b) in y.iter_mut().zip(x).zip(gamma).zip(beta) {
        *y = (x - mean) * inv * g + b;
    }
}

/// One attention head, `O = softmax(Q·Kᵀ / √d) · V` with `Q[seq×d]`,
/// `K[seq×d]`, `V[seq×d]`.
pub(super) fn attention_case(_: &Opts, seq: usize, d: usize) -> Result<Case, String> {
    let mut rng = Rng(0xa77e + seq as u64);
    // Centred queries and keys (scores of both signs); values in [0, 1),
    // so that every output is a sum of terms of one sign.
    let q = Rc::new(centred(&mut rng, seq * d));
    let k = Rc::new(centred(&mut rng, seq * d));
    let v = Rc::new(rng.f32s(seq * d));
    let scale = 1.0 / (d as f32).sqrt();
    let s = attention::Sizes {
        I: seq,
        J: seq,
        D: d,
        E: d,
    };
    let state = || (q.clone(), k.clone(), v.clone(), nan(seq * d));
    let impls = vec![
        imp(
            "mdh",
            state(),
            move |(q, k, v, o)| attention::cpu(q, k, v, o, scale, s).map_err(err),
            |(_, _, _, o)| out(o),
        ),
        imp(
            "mdh-unfused",
            state(),
            move |(q, k, v, o)| attention::cpu_unfused(q, k, v, o, scale, s).map_err(err),
            |(_, _, _, o)| out(o),
        ),
        imp(
            "rayon-rows",
            state(),
            move |(q, k, v, o)| {
                let (k, v): (&[f32], &[f32]) = (k, v);
                rows_of(q, o, d, |q, o| attention_row(q, k, v, o, scale));
                Ok(())
            },
            |(_, _, _, o)| out(o),
        ),
    ];
    // Compulsory: Q, K and V read once, O written once.
    let bytes = 16.0 * (seq * d) as f64;
    Ok(Case {
        what: format!(
            "O[{seq}x{d}] = softmax(Q[{seq}x{d}] K[{seq}x{d}]^T / sqrt({d})) V[{seq}x{d}]"
        ),
        // The two products; the exponentials are not counted.
        flops: Some(4.0 * (seq * seq * d) as f64),
        bf16_products: false,
        bytes: Some(bytes),
        rtol: RTOL,
        impls,
        notes: Vec::new(),
    })
}

/// One query row `q` of attention into `o`: its scores against every row
/// of `k`, their softmax, then the sum of the rows of `v` weighted by it.
fn attention_row(q: &[f32], k: &[f32], v: &[f32], o: &mut [f32], scale: f32) {
    let d = q.len().max(1);
    let mut p: Vec<f32> = k.chunks(d).map(|k| dot(q, k) * scale).collect();
    let max = p.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for p in &mut p {
        *p = (*p - max).exp();
        sum += *p;
    }
    o.fill(0.0);
    for (&p, v) in p.iter().zip(v.chunks(o.len().max(1))) {
        for (o, &v) in o.iter_mut().zip(v) {
            *o += p * v;
        }
    }
    let inv = 1.0 / sum;
    o.iter_mut().for_each(|o| *o *= inv);
}

/// `a · b` in 8 partial sums, which the compiler keeps in one vector
/// register (a single running sum would serialize every addition).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = (a8.remainder().iter())
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (a, b) in a8.zip(b8) {
        for ((acc, a), b) in acc.iter_mut().zip(a).zip(b) {
            *acc += a * b;
        }
    }
    acc.iter().sum::<f32>() + tail
}
