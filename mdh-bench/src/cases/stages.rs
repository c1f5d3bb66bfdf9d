//! The cases of kernels of stages: each fused kernel beside the same chain
//! run stage by stage (`mdh-unfused`) and its outside peers.

use std::rc::Rc;

use rayon::prelude::*;

use super::{err, nan, out, Opts, Rng, RTOL};
use crate::blas;
use crate::dnnl::{Matmul, MatmulShape, Values};
use crate::harness::{imp, Case};
use mdh_example_kernels::{matmul, matmul_bias_relu};

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
    _: &Opts,
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
    let onednn = Matmul::new(shape, src, weights, Some(bias.to_vec()))?;
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
    let mut notes = Vec::new();
    match onednn {
        Ok(mm) => impls.push(imp("onednn-postops", mm, |m| m.run(), |m| out(m.dst()))),
        Err(why) => notes.push(format!("onednn-postops skipped: {why}")),
    }
    Ok(Case {
        what: format!("y[{i}x{j}] = max(A[{i}x{k}] B[{k}x{j}] + bias[{j}], 0)"),
        flops: Some(2.0 * (i * j * k) as f64),
        bytes: None,
        rtol: RTOL,
        impls,
        notes,
    })
}
