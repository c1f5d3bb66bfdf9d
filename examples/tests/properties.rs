//! Property tests: every example kernel against the reference interpreter on
//! random sizes (including 0, 1 and primes) and random inputs, plus wrong
//! slice lengths and overflowing sizes, which must be an `Err`, never a panic.
//!
//! Outputs start as a sentinel (NaN, or an unlikely integer) on both sides,
//! so an element the kernel forgets to write shows up as a mismatch. Float
//! tolerances are those of `mdh_examples::check` (documented there).

use mdh::Error;
use mdh_example_kernels::*;
use mdh_examples::check::{self, len, sum_rtol, Buffer, Rng, Value, RTOL};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// Sizes up to `max`: mostly 1 and primes, sometimes any value.
fn size(max: usize) -> BoxedStrategy<usize> {
    let special: Vec<usize> = [1, 2, 3, 5, 7, 13, 31, 97]
        .into_iter()
        .filter(|&s| s <= max)
        .collect();
    prop_oneof![3 => proptest::sample::select(special), 2 => 1..=max].boxed()
}

/// Like [`size`], but 0 one time in ten.
fn size0(max: usize) -> BoxedStrategy<usize> {
    prop_oneof![1 => Just(0usize), 9 => size(max)].boxed()
}

/// Cases per property (the whole file runs in a few seconds in a debug build).
const CASES: u32 = 96;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        max_shrink_iters: 256,
        ..ProptestConfig::default()
    }
}

fn nan(n: usize) -> Vec<f32> {
    vec![f32::NAN; n]
}

/// Runs the interpreter and compares (see `check::verify`).
#[allow(clippy::too_many_arguments)]
fn verify(
    spec: &str,
    sizes: &[usize],
    inputs: Vec<Buffer>,
    params: &[Value],
    init: Vec<Buffer>,
    result: Result<(), Error>,
    got: Vec<Buffer>,
    rtol: impl Into<check::Tol>,
) -> Result<(), TestCaseError> {
    check::verify(spec, sizes, &inputs, params, init, result, &got, rtol)
        .map_err(TestCaseError::fail)
}

// ---------------------------------------------------------------------------
// Linear algebra

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn dot_matches(n in size0(100_000), seed: u64) {
        let mut g = Rng::new(seed);
        let s = dot::Sizes { N: n };
        check::f32_case(dot::SPEC, &s.values(), vec![g.f32s(n), g.f32s(n)], 1, sum_rtol(n),
            |i, o| dot::cpu(&i[0], &i[1], o, s)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn matvec_matches(i in size0(97), k in size0(300), seed: u64) {
        let mut g = Rng::new(seed);
        let s = matvec::Sizes { I: i, K: k };
        check::f32_case(matvec::SPEC, &s.values(), vec![g.f32s(i * k), g.f32s(k)], i, sum_rtol(k),
            |x, o| matvec::cpu(&x[0], &x[1], o, s)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn matmul_matches(i in size0(97), j in size0(97), k in size0(31), seed: u64) {
        prop_assume!(i * j * k <= 60_000);
        let mut g = Rng::new(seed);
        let s = matmul::Sizes { I: i, J: j, K: k };
        check::f32_case(matmul::SPEC, &s.values(), vec![g.f32s(i * k), g.f32s(k * j)], i * j, sum_rtol(k),
            |x, o| matmul::cpu(&x[0], &x[1], o, s)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn matmul_t_matches(i in size0(97), j in size0(31), k in size0(97), seed: u64) {
        prop_assume!(i * j * k <= 60_000);
        let mut g = Rng::new(seed);
        let s = matmul_t::Sizes { I: i, J: j, K: k };
        check::f32_case(matmul_t::SPEC, &s.values(), vec![g.f32s(k * i), g.f32s(j * k)], j * i, sum_rtol(k),
            |x, o| matmul_t::cpu(&x[0], &x[1], o, s)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn bmatmul_matches(b in size0(7), i in size(13), j in size(31), k in size0(31), seed: u64) {
        prop_assume!(b * i * j * k <= 60_000);
        let mut g = Rng::new(seed);
        let s = bmatmul::Sizes { NB: b, I: i, J: j, K: k };
        check::f32_case(bmatmul::SPEC, &s.values(), vec![g.f32s(b * i * k), g.f32s(b * k * j)], b * i * j,
            sum_rtol(k), |x, o| bmatmul::cpu(&x[0], &x[1], o, s)).map_err(TestCaseError::fail)?;
    }
}

// ---------------------------------------------------------------------------
// Convolutions and contractions

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn conv2d_matches(p in size0(40), q in size0(40), r in size0(7), s in size0(7), seed: u64) {
        prop_assume!(p * q * r * s <= 60_000);
        let mut g = Rng::new(seed);
        let sz = conv2d::Sizes { P: p, Q: q, R: r, S: s };
        // P + R - 1 is negative for P = R = 0: then the kernel must fail.
        let il = len(&[p as i128 + r as i128 - 1, q as i128 + s as i128 - 1]);
        check::f32_case(conv2d::SPEC, &sz.values(), vec![g.f32s(il), g.f32s(r * s)], p * q, sum_rtol(r * s),
            |x, o| conv2d::cpu(&x[0], &x[1], o, sz)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mcc_matches(
        n in size0(3), p in size0(7), q in size(7), k in size(7),
        r in size(5), s in size(5), c in size0(3), seed: u64,
    ) {
        prop_assume!(n * p * q * k * r * s * c <= 60_000);
        let mut g = Rng::new(seed);
        let sz = mcc::Sizes { N: n, P: p, Q: q, K: k, R: r, S: s, C: c };
        let il = len(&[n as i128, 2 * p as i128 + r as i128 - 2, 2 * q as i128 + s as i128 - 2, c as i128]);
        check::f32_case(mcc::SPEC, &sz.values(), vec![g.f32s(il), g.f32s(k * r * s * c)], n * p * q * k,
            sum_rtol(r * s * c), |x, o| mcc::cpu(&x[0], &x[1], o, sz)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mcc_capsule_matches(
        n in size(2), p in size(5), q in size(5), k in size0(3), mi in size(3), mj in size(3),
        r in size(3), s in size(3), c in size(3), mk in size0(3), seed: u64,
    ) {
        prop_assume!(n * p * q * k * mi * mj * r * s * c * mk <= 60_000);
        let mut g = Rng::new(seed);
        let sz = mcc_capsule::Sizes { N: n, P: p, Q: q, K: k, MI: mi, MJ: mj, R: r, S: s, C: c, MK: mk };
        let il = n * (p + r - 1) * (q + s - 1) * c * mi * mk;
        check::f32_case(mcc_capsule::SPEC, &sz.values(), vec![g.f32s(il), g.f32s(k * r * s * c * mk * mj)],
            n * p * q * k * mi * mj, sum_rtol(r * s * c * mk), |x, o| mcc_capsule::cpu(&x[0], &x[1], o, sz)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn ccsdt_matches(
        a in size(5), b in size(3), c in size(5), d in size0(3), e in size(5), f in size(3),
        gg in size0(13), seed: u64,
    ) {
        prop_assume!(a * b * c * d * e * f * gg <= 60_000);
        let mut g = Rng::new(seed);
        let sz = ccsdt::Sizes { NA: a, NB: b, NC: c, ND: d, NE: e, NF: f, NG: gg };
        check::f32_case(ccsdt::SPEC, &sz.values(), vec![g.f32s(gg * d * a * b), g.f32s(e * f * gg * c)],
            a * b * c * d * e * f, sum_rtol(gg), |x, o| ccsdt::cpu(&x[0], &x[1], o, sz)).map_err(TestCaseError::fail)?;
    }
}

// ---------------------------------------------------------------------------
// Stencils

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn jacobi1d_matches(n in size0(100_000), c0 in -2.0f32..2.0, c1 in -2.0f32..2.0, seed: u64) {
        let mut g = Rng::new(seed);
        let s = jacobi1d::Sizes { N: n };
        let v = g.f32s(n + 2);
        let (r, w) = check::guarded(n, f32::NAN, |w| jacobi1d::cpu(&v, w, c0, c1, s)).map_err(TestCaseError::fail)?;
        verify(jacobi1d::SPEC, &s.values(), vec![v.into()], &[Value::F32(c0), Value::F32(c1)],
            vec![nan(n).into()], r, vec![w.into()], RTOL)?;
    }

    #[test]
    fn jacobi2d_matches(n in size0(97), m in size0(97), seed: u64) {
        let mut g = Rng::new(seed);
        let s = jacobi2d::Sizes { N: n, M: m };
        check::f32_case(jacobi2d::SPEC, &s.values(), vec![g.f32s((n + 2) * (m + 2))], n * m, RTOL,
            |x, o| jacobi2d::cpu(&x[0], o, s)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn jacobi3d_matches(n in size0(31), m in size(31), l in size0(31), seed: u64) {
        prop_assume!(n * m * l <= 30_000);
        let mut g = Rng::new(seed);
        let s = jacobi3d::Sizes { N: n, M: m, L: l };
        check::f32_case(jacobi3d::SPEC, &s.values(), vec![g.f32s((n + 2) * (m + 2) * (l + 2))], n * m * l, RTOL,
            |x, o| jacobi3d::cpu(&x[0], o, s)).map_err(TestCaseError::fail)?;
    }
}

// ---------------------------------------------------------------------------
// Data mining

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn prl_matches(i in size0(97), j in size0(200), seed: u64) {
        prop_assume!(i * j <= 20_000);
        let mut g = Rng::new(seed);
        let s = prl::Sizes { I: i, J: j };
        // Few distinct values, so that matches, near years and ties are common.
        let f: Vec<Vec<i32>> = vec![
            g.i32s(i, 0, 4), g.i32s(i, 0, 4), g.i32s(i, 0, 5),
            g.i32s(j, 0, 4), g.i32s(j, 0, 4), g.i32s(j, 0, 5),
        ];
        let sentinel = vec![0x5A5A_5A5Ai64; i];
        let (r, best) = check::guarded(i, 0x5A5A_5A5Ai64, |b| prl::cpu(&f[0], &f[1], &f[2], &f[3], &f[4], &f[5], b, s))
            .map_err(TestCaseError::fail)?;
        // J = 0: an empty reduction with a user-defined operator is an error.
        prop_assert_eq!(r.is_err(), i > 0 && j == 0);
        if r.is_ok() {
            for (ii, &b) in best.iter().enumerate() {
                let want = (0..j)
                    .map(|jj| prl_codec::encode(
                        prl_codec::weight(f[0][ii], f[1][ii], f[2][ii], f[3][jj], f[4][jj], f[5][jj]), jj))
                    .max()
                    .unwrap();
                prop_assert_eq!(b, want, "record {}", ii);
            }
        }
        let ins = f.into_iter().map(Buffer::from).collect();
        verify(prl::SPEC, &s.values(), ins, &[], vec![sentinel.into()], r, vec![best.into()], 0.0)?;
    }

    #[test]
    fn histo_matches(e in size0(1000), b in size0(97), seed: u64) {
        let mut g = Rng::new(seed);
        let s = histo::Sizes { E: e, B: b };
        let elems = g.u32s(e, b as u32 + 3);
        let bins: Vec<u32> = (0..b as u32).rev().collect();
        let (r, hist) = check::guarded(b, 0xDEAD_BEEFu32, |h| histo::cpu(&elems, &bins, h, s)).map_err(TestCaseError::fail)?;
        verify(histo::SPEC, &s.values(), vec![elems.into(), bins.into()], &[],
            vec![vec![0xDEAD_BEEFu32; b].into()], r, vec![hist.into()], 0.0)?;
    }

    #[test]
    fn genhisto_matches(e in size0(1000), b in size0(97), seed: u64) {
        let mut g = Rng::new(seed);
        let s = genhisto::Sizes { E: e, B: b };
        let (vals, keys) = (g.f32s(e), g.i32s(e, -2, b as i32 + 2));
        let bins: Vec<i32> = (0..b as i32).collect();
        let (r, hist) = check::guarded(b, f32::NAN, |h| genhisto::cpu(&vals, &keys, &bins, h, s)).map_err(TestCaseError::fail)?;
        // E = 0: an empty reduction with a user-defined operator is an error.
        prop_assert_eq!(r.is_err(), e == 0 && b > 0);
        verify(genhisto::SPEC, &s.values(), vec![vals.into(), keys.into(), bins.into()], &[],
            vec![nan(b).into()], r, vec![hist.into()], sum_rtol(e))?;
    }
}

mdh::mdh! {
    /// Matrix multiplication under a name without a config: the analytical
    /// default plan (6 rows × 4 vectors, B packed in kc × 64 panels) at any
    /// size. Its edge tiles run as smaller tiles (one vector wide where the
    /// columns are cut, two rows at a time where only the rows are), and B
    /// is read in place where a panel would be read fewer than 8 times
    /// (under 43 rows) and packed otherwise: both show up over these sizes.
    kernel default_matmul {
        inp(A: f32[I, K], B: f32[K, J]),
        out(C: f32[I, J]),
        out_view(C: |i, j, k| (i, j)),
        md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
        inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
    }
}

mdh::mdh! {
    /// ccsdt under a name without a config: the default plan's tensor
    /// contraction tile (one vector along f × 4 rows of d × 4 columns of e,
    /// results streamed where the output outgrows the caches; `ccsdt`
    /// itself runs its sized `*` entry at every size).
    kernel default_ccsdt {
        inp(A: f32[NG, ND, NA, NB], B: f32[NE, NF, NG, NC]),
        out(C: f32[NA, NB, NC, ND, NE, NF]),
        out_view(C: |a, b, c, d, e, f, g| (a, b, c, d, e, f)),
        md_hom[NA, NB, NC, ND, NE, NF, NG](|x, y| x * y, (CC, CC, CC, CC, CC, CC, PW(+))),
        inp_view(A: |a, b, c, d, e, f, g| (g, d, a, b), B: |a, b, c, d, e, f, g| (e, f, g, c)),
    }
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn default_ccsdt_matches(
        a in size(3), b in size(3), c in size(3), d in size0(9), e in size(9), f in size(40),
        gg in size0(13), seed: u64,
    ) {
        prop_assume!(a * b * c * d * e * f * gg <= 200_000);
        let mut g = Rng::new(seed);
        let sz = default_ccsdt::Sizes { NA: a, NB: b, NC: c, ND: d, NE: e, NF: f, NG: gg };
        check::f32_case(default_ccsdt::SPEC, &sz.values(), vec![g.f32s(gg * d * a * b), g.f32s(e * f * gg * c)],
            a * b * c * d * e * f, sum_rtol(gg), |x, o| default_ccsdt::cpu(&x[0], &x[1], o, sz)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn default_matmul_matches(i in size0(130), j in size0(200), k in size0(40), seed: u64) {
        prop_assume!(i * j * k <= 200_000);
        let mut g = Rng::new(seed);
        let s = default_matmul::Sizes { I: i, J: j, K: k };
        check::f32_case(default_matmul::SPEC, &s.values(), vec![g.f32s(i * k), g.f32s(k * j)], i * j, sum_rtol(k),
            |x, o| default_matmul::cpu(&x[0], &x[1], o, s)).map_err(TestCaseError::fail)?;
    }
}

mdh::mdh! {
    /// The value of largest magnitude per row, ties to the larger value: a
    /// user-defined operator that computes no built-in one, so the CPU code
    /// combines with the closure itself (accumulators without an identity;
    /// prl's and genhisto's closures run as `max` and `+`).
    kernel absmax {
        inp(x: i32[I, J]),
        out(m: i32[I]),
        out_view(m: |i, j| (i)),
        md_hom[I, J](|a| a, (CC, PW(|a, b| {
            if a.abs() > b.abs() || (a.abs() == b.abs() && a > b) { a } else { b }
        }))),
        inp_view(x: |i, j| (i, j)),
    }
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn user_defined_combine_matches(i in size0(200), j in size0(3000), seed: u64) {
        let mut g = Rng::new(seed);
        let s = absmax::Sizes { I: i, J: j };
        let x = g.i32s(i * j, -1000, 1000);
        let (r, m) = check::guarded(i, i32::MIN + 1, |m| absmax::cpu(&x, m, s)).map_err(TestCaseError::fail)?;
        // J = 0: an empty reduction with a user-defined operator is an error.
        prop_assert_eq!(r.is_err(), j == 0 && i > 0);
        verify(absmax::SPEC, &s.values(), vec![x.into()], &[],
            vec![vec![i32::MIN + 1; i].into()], r, vec![m.into()], 0.0)?;
    }
}

// ---------------------------------------------------------------------------
// Kernels of stages (their intermediates allocated per call)

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn softmax_matches(i in size0(40), j in size0(300), seed: u64) {
        let mut g = Rng::new(seed);
        let s = softmax::Sizes { I: i, J: j };
        // Inputs in [-4, 4): the row maximum matters to exp.
        check::f32_case(softmax::SPEC, &s.values(), vec![g.f32s_in(i * j, -4.0, 4.0)], i * j,
            sum_rtol(j), |x, o| softmax::cpu(&x[0], o, s)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn matmul_bias_relu_matches(i in size0(61), j in size0(61), k in size0(31), seed: u64) {
        prop_assume!(i * j * k <= 60_000);
        let mut g = Rng::new(seed);
        let s = matmul_bias_relu::Sizes { I: i, K: k, J: j };
        // Centered inputs, so that ReLU clamps about half of the results.
        let (a, b, bias) = (g.f32s_in(i * k, -1.0, 1.0), g.f32s_in(k * j, -1.0, 1.0), g.f32s_in(j, -1.0, 1.0));
        // `cpu` fuses the bias and ReLU into the product's stores;
        // `cpu_unfused` runs the two stages one after the other.
        let x = vec![a, b, bias];
        check::f32_case(matmul_bias_relu::SPEC, &s.values(), x.clone(), i * j, sum_rtol(k),
            |x, o| matmul_bias_relu::cpu(&x[0], &x[1], &x[2], o, s)).map_err(TestCaseError::fail)?;
        check::f32_case(matmul_bias_relu::SPEC, &s.values(), x, i * j, sum_rtol(k),
            |x, o| matmul_bias_relu::cpu_unfused(&x[0], &x[1], &x[2], o, s)).map_err(TestCaseError::fail)?;
    }

    /// Row statistics, then each row normalized with per-column scale and
    /// shift and a param (`eps`), through `cpu` (which may fuse the stages
    /// along the rows) and `cpu_unfused`.
    #[test]
    fn layernorm_matches(i in size0(40), j in size0(300), eps in 1e-5f32..1e-1, unfused: bool, seed: u64) {
        let mut g = Rng::new(seed);
        let s = layernorm::Sizes { I: i, J: j };
        // Inputs in [-4, 4): the mean matters; centred scale and shift.
        let x = vec![g.f32s_in(i * j, -4.0, 4.0), g.f32s_in(j, -1.0, 1.0), g.f32s_in(j, -1.0, 1.0)];
        let run = if unfused { layernorm::cpu_unfused } else { layernorm::cpu };
        check::f32_case_with(layernorm::SPEC, &s.values(), x, &[Value::F32(eps)], i * j, sum_rtol(j),
            |x, y| run(&x[0], &x[1], &x[2], y, eps, s)).map_err(TestCaseError::fail)?;
    }

    /// One attention head: two products around a row softmax, the scale a
    /// param.
    #[test]
    fn attention_matches(i in size0(40), j in size0(97), d in size0(31), e in size0(31), unfused: bool,
                         seed: u64) {
        prop_assume!(i * j * (d + e) <= 60_000);
        let mut g = Rng::new(seed);
        let s = attention::Sizes { I: i, J: j, D: d, E: e };
        let scale = 1.0 / (d.max(1) as f32).sqrt();
        // Centred queries and keys (scores of both signs), values in
        // [0, 1): the output sums `j` terms of one sign.
        let x = vec![g.f32s_in(i * d, -1.0, 1.0), g.f32s_in(j * d, -1.0, 1.0), g.f32s(j * e)];
        let run = if unfused { attention::cpu_unfused } else { attention::cpu };
        check::f32_case_with(attention::SPEC, &s.values(), x, &[Value::F32(scale)], i * e, sum_rtol(j.max(d)),
            |x, o| run(&x[0], &x[1], &x[2], o, scale, s)).map_err(TestCaseError::fail)?;
    }

    /// An epilogue with a param and a second input over the product's
    /// points, fused (`cpu`) and not (`cpu_unfused`).
    #[test]
    fn dense_residual_matches(i in size0(61), j in size0(61), k in size0(31), alpha in -2.0f32..2.0,
                              unfused: bool, seed: u64) {
        prop_assume!(i * j * k <= 60_000);
        let mut g = Rng::new(seed);
        let s = dense_residual::Sizes { I: i, K: k, J: j };
        // Inputs in [0, 1) and a residual of the products' sign: no
        // cancellation beyond a sum of one sign.
        let (a, b, r) = (g.f32s(i * k), g.f32s(k * j), g.f32s_in(i * j, 0.0, alpha * k as f32 / 4.0));
        let run = if unfused { dense_residual::cpu_unfused } else { dense_residual::cpu };
        let (res, y) = check::guarded(i * j, f32::NAN, |y| run(&a, &b, &r, y, alpha, s))
            .map_err(TestCaseError::fail)?;
        verify(dense_residual::SPEC, &s.values(), vec![a.into(), b.into(), r.into()],
            &[Value::F32(alpha)], vec![nan(i * j).into()], res, vec![y.into()], sum_rtol(k))?;
    }

    /// Wrong slice lengths are an `Err` of the same kind as the
    /// interpreter's, never a panic.
    #[test]
    fn softmax_wrong_lengths(i in size(13), j in size(13), dx in 0usize..3, dy in 0usize..3) {
        let s = softmax::Sizes { I: i, J: j };
        let (x, mut y) = (vec![0.5f32; i * j + dx - 1], vec![0.0f32; i * j + dy - 1]);
        let r = softmax::cpu(&x, &mut y, s);
        prop_assert_eq!(r.is_ok(), dx == 1 && dy == 1, "{:?}", r);
        verify(softmax::SPEC, &s.values(), vec![x.into()], &[], vec![y.clone().into()], r,
            vec![y.into()], RTOL)?;
    }
}

// ---------------------------------------------------------------------------
// Map, reduce, scan, Mandelbrot

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn map_matches(n in size0(100_000), alpha in -4.0f32..4.0, seed: u64) {
        let mut g = Rng::new(seed);
        let s = map::Sizes { N: n };
        let (x, y) = (g.f32s_in(n, -1.0, 1.0), g.f32s_in(n, -1.0, 1.0));
        let (r, z) = check::guarded(n, f32::NAN, |z| map::cpu(&x, &y, z, alpha, s)).map_err(TestCaseError::fail)?;
        verify(map::SPEC, &s.values(), vec![x.into(), y.into()], &[Value::F32(alpha)],
            vec![nan(n).into()], r, vec![z.into()], RTOL)?;
    }

    #[test]
    fn reduce_matches(n in size0(100_000), seed: u64) {
        let mut g = Rng::new(seed);
        let s = reduce::Sizes { N: n };
        check::f32_case(reduce::SPEC, &s.values(), vec![g.f32s(n)], 1, sum_rtol(n), |x, o| reduce::cpu(&x[0], o, s)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn reduce2_matches(n in size0(100_000), seed: u64) {
        let mut g = Rng::new(seed);
        let s = reduce2::Sizes { N: n };
        let x = g.f32s(n);
        let (sum, max) = check::guarded(1, f32::NAN, |max| check::guarded(1, f32::NAN, |sum| reduce2::cpu(&x, sum, max, s)))
            .map_err(TestCaseError::fail)?;
        let (r, sum) = sum.map_err(TestCaseError::fail)?;
        verify(reduce2::SPEC, &s.values(), vec![x.into()], &[], vec![nan(1).into(), nan(1).into()], r,
            vec![sum.into(), max.into()], sum_rtol(n))?;
    }

    #[test]
    fn scan_matches(n in size0(1000), seed: u64) {
        let mut g = Rng::new(seed);
        let s = scan::Sizes { N: n };
        check::f32_case(scan::SPEC, &s.values(), vec![g.f32s(n)], n, sum_rtol(n), |x, o| scan::cpu(&x[0], o, s)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mbbs_matches(i in size0(200), j in size0(200), seed: u64) {
        let mut g = Rng::new(seed);
        let s = mbbs::Sizes { I: i, J: j };
        check::f32_case(mbbs::SPEC, &s.values(), vec![g.f32s(i * j)], i, sum_rtol(i * j), |x, o| mbbs::cpu(&x[0], o, s)).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mandelbrot_matches(h in size0(31), w in size0(97), max_iter in 0u32..64) {
        let s = mandelbrot::Sizes { H: h, W: w };
        let (r, o) = check::guarded(h * w, 0xDEAD_BEEFu32, |o| mandelbrot::cpu(o, max_iter, s)).map_err(TestCaseError::fail)?;
        verify(mandelbrot::SPEC, &s.values(), vec![], &[Value::U32(max_iter)],
            vec![vec![0xDEAD_BEEFu32; h * w].into()], r, vec![o.into()], 0.0)?;
    }
}

// ---------------------------------------------------------------------------
// 16-bit floats: computed in f32 and rounded to the type at each operation
// (the interpreter's rule, which the CPU code follows). Results of an f16 or
// bf16 type compare with the tolerance of their own ε (`Tol::agree`):
// `max(rel, 4 · ε · √n)` relative plus `16 · ε · √n`, for reductions of
// `n` terms (ε = 2⁻¹⁰ for f16, 2⁻⁷ for bf16); f32 results of 16-bit inputs
// (mixed precision) that of f32.

fn to_f16(v: Vec<f32>) -> Vec<mdh::f16> {
    v.into_iter().map(mdh::f16::from_f32).collect()
}

fn to_bf16(v: Vec<f32>) -> Vec<mdh::bf16> {
    v.into_iter().map(mdh::bf16::from_f32).collect()
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn map_half_matches(n in size0(10_000), alpha in -4.0f32..4.0, seed: u64) {
        let mut g = Rng::new(seed);
        let s = map_half::Sizes { N: n };
        let (x, y) = (to_f16(g.f32s_in(n, -1.0, 1.0)), to_bf16(g.f32s_in(n, -1.0, 1.0)));
        let alpha = mdh::f16::from_f32(alpha);
        let nan16 = mdh::f16::NAN;
        let (b, a) = check::guarded(n, nan16, |a| check::guarded(n, mdh::bf16::NAN, |b| map_half::cpu(&x, &y, a, b, alpha, s)))
            .map_err(TestCaseError::fail)?;
        let (r, b) = b.map_err(TestCaseError::fail)?;
        verify(map_half::SPEC, &s.values(), vec![x.into(), y.into()], &[Value::F16(alpha)],
            vec![vec![nan16; n].into(), vec![mdh::bf16::NAN; n].into()], r, vec![a.into(), b.into()], RTOL)?;
    }

    #[test]
    fn matvec_f16_matches(i in size0(97), k in size0(300), seed: u64) {
        let mut g = Rng::new(seed);
        let s = matvec_f16::Sizes { I: i, K: k };
        let (m, v) = (to_f16(g.f32s(i * k)), to_f16(g.f32s(k)));
        let (r, w) = check::guarded(i, mdh::f16::NAN, |w| matvec_f16::cpu(&m, &v, w, s)).map_err(TestCaseError::fail)?;
        verify(matvec_f16::SPEC, &s.values(), vec![m.into(), v.into()], &[],
            vec![vec![mdh::f16::NAN; i].into()], r, vec![w.into()], sum_rtol(k))?;
    }

    #[test]
    fn matmul_bf16_matches(i in size0(97), j in size0(97), k in size0(31), seed: u64) {
        prop_assume!(i * j * k <= 60_000);
        let mut g = Rng::new(seed);
        let s = matmul_bf16::Sizes { I: i, J: j, K: k };
        let (a, b) = (to_bf16(g.f32s(i * k)), to_bf16(g.f32s(k * j)));
        let (r, c) = check::guarded(i * j, f32::NAN, |c| matmul_bf16::cpu(&a, &b, c, s)).map_err(TestCaseError::fail)?;
        verify(matmul_bf16::SPEC, &s.values(), vec![a.into(), b.into()], &[],
            vec![nan(i * j).into()], r, vec![c.into()], sum_rtol(k))?;
    }

    // Head dimensions past one vector of lanes and odd ones; the scale
    // 1/√D as in attention (each product scaled, then summed in f32).
    #[test]
    fn attention_bf16_matches(i in size0(40), j in size0(70), d in size0(80), seed: u64) {
        prop_assume!(i * j * d <= 60_000);
        let mut g = Rng::new(seed);
        let s = attention_bf16::Sizes { I: i, J: j, D: d };
        let (q, k) = (to_bf16(g.f32s(i * d)), to_bf16(g.f32s(j * d)));
        let scale = 1.0 / (d.max(1) as f32).sqrt();
        let (r, out) = check::guarded(i * j, f32::NAN, |o| attention_bf16::cpu(&q, &k, o, scale, s)).map_err(TestCaseError::fail)?;
        verify(attention_bf16::SPEC, &s.values(), vec![q.into(), k.into()], &[Value::F32(scale)],
            vec![nan(i * j).into()], r, vec![out.into()], sum_rtol(d))?;
    }

    #[test]
    fn scores_f16_matches(i in size0(97), j in size0(97), d in size0(31), seed: u64) {
        prop_assume!(i * j * d <= 60_000);
        let mut g = Rng::new(seed);
        let s = scores_f16::Sizes { I: i, J: j, D: d };
        let (q, k) = (to_f16(g.f32s(i * d)), to_f16(g.f32s(j * d)));
        let (r, c) = check::guarded(i * j, f32::NAN, |c| scores_f16::cpu(&q, &k, c, s)).map_err(TestCaseError::fail)?;
        verify(scores_f16::SPEC, &s.values(), vec![q.into(), k.into()], &[],
            vec![nan(i * j).into()], r, vec![c.into()], sum_rtol(d))?;
    }
}

/// The interpreter, every test's oracle, against the kernel's scalar
/// function as a plain Rust loop: a check that does not go through mdh.
/// The configured `*` entries of matmul (set on 2-core machines: 2 or 4
/// tasks, exact-size bodies) cut into about 16 tasks in a pool of 16
/// threads (and 7), with the results of the plan as set, bit for bit: each
/// result is still summed by one task, in the same order.
#[test]
fn configured_plans_cut_for_more_threads_compute_the_same() {
    let mut g = Rng::new(41);
    for (i, j, k) in [(1024, 1024, 1024), (16, 1000, 2048), (1, 1000, 2048)] {
        let s = matmul::Sizes { I: i, J: j, K: k };
        let (a, b) = (g.f32s(i * k), g.f32s(k * j));
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (r, c) = check::guarded(i * j, f32::NAN, |c| {
                pool.install(|| matmul::cpu(&a, &b, c, s))
            })
            .unwrap();
            r.unwrap();
            c
        };
        let as_set = run(2);
        assert!(as_set.iter().all(|x| x.is_finite()), "{i}x{j}x{k}");
        for threads in [16, 7] {
            let cut = run(threads);
            let same = cut
                .iter()
                .zip(&as_set)
                .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "{i}x{j}x{k} on {threads} threads");
        }
    }
}

#[test]
fn interpreter_mandelbrot_is_the_plain_loop() {
    let (h, w, max_iter) = (13, 23, 50);
    let s = mandelbrot::Sizes { H: h, W: w };
    let mut out = [Buffer::from(vec![0u32; h * w])];
    check::reference(
        mandelbrot::SPEC,
        &s.values(),
        &[],
        &mut out,
        &[Value::U32(max_iter)],
    )
    .unwrap();
    let want: Vec<u32> = (0..h * w)
        .map(|p| mandelbrot_pixel(p / w, p % w, h, w, max_iter))
        .collect();
    // Some points never escape, some at once: the loop and the break both ran.
    assert!(want.contains(&max_iter) && want.iter().any(|&n| n < 5));
    check::compare("mandelbrot", &out[0], &Buffer::from(want), 0.0).unwrap();
}

// ---------------------------------------------------------------------------
// Bad arguments: errors, never panics

fn interp_err(
    spec: &str,
    sizes: &[usize],
    inputs: Vec<Buffer>,
    params: &[Value],
    mut outs: Vec<Buffer>,
) -> Error {
    check::reference(spec, sizes, &inputs, &mut outs, params)
        .expect_err("the interpreter accepted bad arguments")
}

#[test]
fn wrong_lengths_are_errors() {
    let s = matmul::Sizes { I: 3, J: 5, K: 7 };
    let (a, b, mut c) = (vec![0.0f32; 21], vec![0.0f32; 35], vec![0.0f32; 15]);
    assert!(matches!(
        matmul::cpu(&a[..20], &b, &mut c, s),
        Err(Error::BufferLength { .. })
    ));
    assert!(matches!(
        matmul::cpu(&a, &[0.0; 36], &mut c, s),
        Err(Error::BufferLength { .. })
    ));
    assert!(matches!(
        matmul::cpu(&a, &b, &mut c[..14], s),
        Err(Error::BufferLength { .. })
    ));
    assert!(matches!(
        matmul::cpu(&a, &b, &mut [0.0; 16], s),
        Err(Error::BufferLength { .. })
    ));
    let e = interp_err(
        matmul::SPEC,
        &s.values(),
        vec![vec![0.0f32; 20].into(), b.clone().into()],
        &[],
        vec![c.clone().into()],
    );
    assert!(matches!(e, Error::BufferLength { .. }), "{e:?}");

    // A scalar output has exactly one element.
    let x = vec![1.0f32; 4];
    assert!(matches!(
        dot::cpu(&x, &x, &mut [], dot::Sizes { N: 4 }),
        Err(Error::BufferLength { .. })
    ));
    assert!(matches!(
        dot::cpu(&x, &x, &mut [0.0; 2], dot::Sizes { N: 4 }),
        Err(Error::BufferLength { .. })
    ));
    assert!(matches!(
        reduce2::cpu(&x, &mut [0.0], &mut [], reduce2::Sizes { N: 4 }),
        Err(Error::BufferLength { .. })
    ));

    // A stencil's input is bigger than its output.
    let mut w = vec![0.0f32; 8];
    assert!(matches!(
        jacobi1d::cpu(&[0.0; 8], &mut w, 1.0, 1.0, jacobi1d::Sizes { N: 8 }),
        Err(Error::BufferLength { .. })
    ));
    assert!(matches!(
        jacobi2d::cpu(&[0.0; 16], &mut w, jacobi2d::Sizes { N: 2, M: 4 }),
        Err(Error::BufferLength { .. })
    ));

    // Generators and many-input kernels.
    assert!(matches!(
        mandelbrot::cpu(&mut [0; 11], 8, mandelbrot::Sizes { H: 3, W: 4 }),
        Err(Error::BufferLength { .. })
    ));
    let r = vec![0i32; 4];
    assert!(matches!(
        prl::cpu(
            &r,
            &r,
            &r[..3],
            &r,
            &r,
            &r,
            &mut [0; 4],
            prl::Sizes { I: 4, J: 4 }
        ),
        Err(Error::BufferLength { .. })
    ));
    let e = interp_err(
        mandelbrot::SPEC,
        &[3, 4],
        vec![],
        &[Value::U32(8)],
        vec![vec![0u32; 11].into()],
    );
    assert!(matches!(e, Error::BufferLength { .. }), "{e:?}");
}

#[test]
fn overflowing_sizes_are_errors() {
    let big = usize::MAX;
    let is_overflow = |r: Result<(), Error>| matches!(r, Err(Error::SizeOverflow { .. }));
    assert!(is_overflow(matmul::cpu(
        &[],
        &[],
        &mut [],
        matmul::Sizes { I: big, J: 2, K: 1 }
    )));
    assert!(is_overflow(matmul::cpu(
        &[],
        &[],
        &mut [],
        matmul::Sizes {
            I: 1 << 40,
            J: 1 << 40,
            K: 0
        }
    )));
    // No slice can have usize::MAX elements: a length or an overflow error.
    let r = dot::cpu(&[], &[], &mut [0.0], dot::Sizes { N: big });
    assert!(
        matches!(
            r,
            Err(Error::BufferLength { .. } | Error::SizeOverflow { .. })
        ),
        "{r:?}"
    );
    assert!(is_overflow(conv2d::cpu(
        &[],
        &[],
        &mut [],
        conv2d::Sizes {
            P: big,
            Q: 1,
            R: 2,
            S: 1
        }
    )));
    assert!(is_overflow(conv2d::cpu(
        &[],
        &[],
        &mut [],
        conv2d::Sizes {
            P: 0,
            Q: 1,
            R: 0,
            S: 1
        }
    )));
    assert!(is_overflow(mcc::cpu(
        &[],
        &[],
        &mut [],
        mcc::Sizes {
            N: 1,
            P: big / 2 + 1,
            Q: 1,
            K: 1,
            R: 1,
            S: 1,
            C: 1
        }
    )));
    assert!(is_overflow(jacobi1d::cpu(
        &[],
        &mut [],
        1.0,
        1.0,
        jacobi1d::Sizes { N: big - 1 }
    )));
    assert!(is_overflow(jacobi3d::cpu(
        &[],
        &mut [],
        jacobi3d::Sizes {
            N: 1 << 30,
            M: 1 << 30,
            L: 1 << 30
        }
    )));
    assert!(is_overflow(mandelbrot::cpu(
        &mut [],
        1,
        mandelbrot::Sizes { H: big / 2, W: 3 }
    )));
    let e = interp_err(
        matmul::SPEC,
        &[big, 1, 2],
        vec![Vec::<f32>::new().into(), Vec::<f32>::new().into()],
        &[],
        vec![Vec::<f32>::new().into()],
    );
    assert!(matches!(e, Error::SizeOverflow { .. }), "{e:?}");
    let e = interp_err(
        conv2d::SPEC,
        &conv2d::Sizes {
            P: 0,
            Q: 1,
            R: 0,
            S: 1,
        }
        .values(),
        vec![Vec::<f32>::new().into(), Vec::<f32>::new().into()],
        &[],
        vec![Vec::<f32>::new().into()],
    );
    assert!(matches!(e, Error::SizeOverflow { .. }), "{e:?}");
}

#[test]
fn empty_index_spaces() {
    // An empty PW dimension gives the operator's neutral element.
    let mut c = vec![f32::NAN; 6];
    matmul::cpu(&[], &[], &mut c, matmul::Sizes { I: 2, J: 3, K: 0 }).unwrap();
    assert_eq!(c, vec![0.0; 6]);
    let mut s = [f32::NAN];
    reduce::cpu(&[], &mut s, reduce::Sizes { N: 0 }).unwrap();
    assert_eq!(s, [0.0]);
    let (mut s, mut m) = ([f32::NAN], [f32::NAN]);
    reduce2::cpu(&[], &mut s, &mut m, reduce2::Sizes { N: 0 }).unwrap();
    assert_eq!((s[0], m[0]), (0.0, f32::NEG_INFINITY));
    let mut h = [7u32; 4];
    histo::cpu(&[], &[0, 1, 2, 3], &mut h, histo::Sizes { E: 0, B: 4 }).unwrap();
    assert_eq!(h, [0; 4]);
    // ... except for user-defined operators, which have none.
    let mut h = [f32::NAN; 4];
    assert!(matches!(
        genhisto::cpu(
            &[],
            &[],
            &[0, 1, 2, 3],
            &mut h,
            genhisto::Sizes { E: 0, B: 4 }
        ),
        Err(Error::EmptyReduction { .. })
    ));
    // An empty kept dimension writes nothing.
    let mut w: [f32; 0] = [];
    matvec::cpu(&[], &[1.0; 5], &mut w, matvec::Sizes { I: 0, K: 5 }).unwrap();
    mandelbrot::cpu(&mut [], 10, mandelbrot::Sizes { H: 0, W: 1 << 40 }).unwrap();
    let mut best = [0i64; 0];
    prl::cpu(
        &[],
        &[],
        &[],
        &[],
        &[],
        &[],
        &mut best,
        prl::Sizes { I: 0, J: 0 },
    )
    .unwrap();
}

/// Scans long enough for the parallel prefix-sum path of the CPU driver
/// (the interpreter's scan is quadratic, so these compare with a plain loop).
#[test]
fn long_scans_match_plain_loops() {
    for n in [16_384, 65_537, 1 << 20] {
        let x = Rng::new(n as u64).f32s(n);
        let (r, y) =
            check::guarded(n, f32::NAN, |y| scan::cpu(&x, y, scan::Sizes { N: n })).unwrap();
        r.unwrap();
        let mut acc = 0.0f64;
        let want: Vec<f64> = x
            .iter()
            .map(|&a| {
                acc += a as f64;
                acc
            })
            .collect();
        check::compare_f32(&format!("scan N={n}"), &y, &want, sum_rtol(n)).unwrap();
    }
    let (i, j) = (3001, 67);
    let a = Rng::new(5).f32s(i * j);
    let (r, o) = check::guarded(i, f32::NAN, |o| {
        mbbs::cpu(&a, o, mbbs::Sizes { I: i, J: j })
    })
    .unwrap();
    r.unwrap();
    let mut acc = 0.0f64;
    let want: Vec<f64> = a
        .chunks(j)
        .map(|r| {
            acc += r.iter().map(|&v| v as f64).sum::<f64>();
            acc
        })
        .collect();
    check::compare_f32("mbbs 3001x67", &o, &want, sum_rtol(i * j)).unwrap();
}

/// A generator of argument lengths around the right ones.
fn near(n: Option<usize>) -> BoxedStrategy<usize> {
    match n {
        Some(n) if n <= 4096 => {
            prop_oneof![4 => Just(n), 1 => Just(n.saturating_sub(1)), 1 => Just(n + 1)].boxed()
        }
        _ => (0usize..8).boxed(),
    }
}

fn extreme() -> BoxedStrategy<usize> {
    prop_oneof![
        0usize..6,
        Just(usize::MAX),
        Just(usize::MAX / 2 + 1),
        Just(1usize << 32),
        (1usize << 20)..(1 << 34)
    ]
    .boxed()
}

proptest! {
    #![proptest_config(config(4 * CASES))]

    /// Any sizes and slice lengths: `Ok` exactly when every length matches
    /// its shape, and never a panic.
    #[test]
    fn conv2d_any_sizes_never_panic(
        (p, q, r, s, li, lf, lo) in (extreme(), extreme(), extreme(), extreme()).prop_flat_map(|(p, q, r, s)| {
            let il = check::elems(&[p as i128 + r as i128 - 1, q as i128 + s as i128 - 1]);
            let fl = check::elems(&[r as i128, s as i128]);
            let ol = check::elems(&[p as i128, q as i128]);
            (Just(p), Just(q), Just(r), Just(s), near(il), near(fl), near(ol))
        })
    ) {
        let sz = conv2d::Sizes { P: p, Q: q, R: r, S: s };
        let il = check::elems(&[p as i128 + r as i128 - 1, q as i128 + s as i128 - 1]);
        let fl = check::elems(&[r as i128, s as i128]);
        let ol = check::elems(&[p as i128, q as i128]);
        let fits = il == Some(li) && fl == Some(lf) && ol == Some(lo);
        let (img, f, mut o) = (vec![1.0f32; li], vec![1.0f32; lf], vec![0.0f32; lo]);
        let res = conv2d::cpu(&img, &f, &mut o, sz);
        prop_assert_eq!(res.is_ok(), fits, "{:?}", res);
        if res.is_ok() {
            prop_assert!(o.iter().all(|&x| x == (r * s) as f32));
        }
    }
}
