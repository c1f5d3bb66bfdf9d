//! The lane-wise `exp` of [`V`](super::V) for `f32` and `f64`: the same
//! operations on every lane and no branch, so that inside the
//! `#[target_feature]` functions of generated kernels LLVM turns them into
//! vector instructions (a libm call per lane cannot be vectorized).
//!
//! `x = n·ln 2 + r` with `n` the integer nearest to `x·log2 e` and
//! `|r| ≤ ln 2 / 2`; `exp(r) ≈ 1 + r + r²·q(r)` with `q` the minimax
//! polynomial of the relative error on that interval (degree 6 in all for
//! f32, 11 for f64, fitted by the Remez exchange); `exp(x) = 2^n · exp(r)`,
//! the power of two built from exponent bits. Accuracy (which the tests
//! below check): see [`V::exp`](super::V::exp).

use super::{mul_add, MulAdd};
use core::ops::{Neg, Sub};

/// A float lane type's constants and exponent-bit arithmetic for
/// [`exp_lane`].
pub(super) trait ExpLane:
    MulAdd + PartialOrd + Sub<Output = Self> + Neg<Output = Self> + 'static
{
    /// Inputs are clamped to `[MIN, MAX]`, which keeps `n` in the range
    /// [`ExpLane::half_scales`] handles: `exp(MIN)` is below half the
    /// smallest subnormal (rounds to 0) and `exp(MAX)` overflows, as every
    /// result past them does.
    const MIN: Self;
    const MAX: Self;
    const LOG2_E: Self;
    /// 1.5 · 2^(significand bits): adding it to `x·log2 e` (of magnitude
    /// below 2^22) rounds that to the nearest integer `n`, which then sits
    /// in the sum's low significand bits (no float-to-integer conversion,
    /// whose saturating semantics cost extra instructions per lane).
    const SHIFTER: Self;
    /// ln 2 with so many low significand bits cleared that `n · LN2_HI` is
    /// exact for every `n` of a clamped input (Cody–Waite): `x - n·LN2_HI`
    /// is then exact too, without a fused multiply-add.
    const LN2_HI: Self;
    /// ln 2 − `LN2_HI`, rounded.
    const LN2_LO: Self;
    /// The coefficients of `q`, highest degree first.
    const Q: &'static [Self];
    const ONE: Self;

    /// `(2^⌊n/2⌋, 2^⌈n/2⌉)` for `t = SHIFTER + n`. The scale 2^n is applied
    /// as these two factors, both normal numbers for every `n` of a clamped
    /// input, whereas 2^n itself is not representable at either end
    /// (results that overflow, or are subnormal, are rounded once, by the
    /// second multiplication).
    fn half_scales(t: Self) -> (Self, Self);
}

/// `exp(x)` of one lane. `ISA`: the instruction set of the body this is
/// inlined into (its multiply-adds are fused where it has FMA).
#[inline(always)]
pub(super) fn exp_lane<const ISA: u8, T: ExpLane>(x: T) -> T {
    // A NaN fails both comparisons: it stays NaN through the arithmetic
    // (and these compile to single max/min instructions).
    let x = if x < T::MIN { T::MIN } else { x };
    let x = if x > T::MAX { T::MAX } else { x };
    let t = mul_add::<ISA, T>(x, T::LOG2_E, T::SHIFTER);
    let n = t - T::SHIFTER;
    let r = mul_add::<ISA, T>(-n, T::LN2_HI, x);
    let r = mul_add::<ISA, T>(-n, T::LN2_LO, r);
    let q = T::Q[1..]
        .iter()
        .fold(T::Q[0], |q, &c| mul_add::<ISA, T>(q, r, c));
    let p = mul_add::<ISA, T>(r * r, q, r) + T::ONE;
    let (lo, hi) = T::half_scales(t);
    p * lo * hi
}

/// [`ExpLane::half_scales`] for the float type `$t` with `$m` significand
/// bits (the implicit one not counted) and exponent bias `$bias`.
macro_rules! half_scales {
    ($t:ty, $m:expr, $bias:expr) => {
        #[inline(always)]
        fn half_scales(t: $t) -> ($t, $t) {
            // k = n + 2·bias ≥ 0 in unsigned arithmetic (wrapping: the
            // bits of a NaN are garbage, and so harmless, as the result
            // is NaN anyway). Its halves ⌊k/2⌋ = ⌊n/2⌋ + bias and
            // k − ⌊k/2⌋ = ⌈n/2⌉ + bias are the biased exponents of the
            // two factors; the logical shift needs no signed one (which
            // AVX2 lacks for 64-bit lanes).
            let k = t
                .to_bits()
                .wrapping_sub(Self::SHIFTER.to_bits().wrapping_sub(2 * $bias));
            let k_lo = k >> 1;
            let k_hi = k.wrapping_sub(k_lo);
            (<$t>::from_bits(k_lo << $m), <$t>::from_bits(k_hi << $m))
        }
    };
}

impl ExpLane for f32 {
    // exp(-105) ≈ 2^-151.5; exp(89) ≈ 2^128.4.
    const MIN: f32 = -105.0;
    const MAX: f32 = 89.0;
    const LOG2_E: f32 = core::f32::consts::LOG2_E;
    const SHIFTER: f32 = 12_582_912.0;
    // |n| ≤ 152 < 2^8: 8 bits cleared.
    const LN2_HI: f32 = f32::from_bits(core::f32::consts::LN_2.to_bits() & !0xff);
    const LN2_LO: f32 = 1.428_606_8e-6;
    const Q: &'static [f32] = &[
        1.381_446_7e-3,
        8.368_781e-3,
        4.166_839_3e-2,
        1.666_652e-1,
        4.999_999_4e-1,
    ];
    const ONE: f32 = 1.0;
    half_scales!(f32, 23, 127);
}

impl ExpLane for f64 {
    // exp(-746) ≈ 2^-1076.3; exp(710) ≈ 2^1024.3.
    const MIN: f64 = -746.0;
    const MAX: f64 = 710.0;
    const LOG2_E: f64 = core::f64::consts::LOG2_E;
    const SHIFTER: f64 = 6_755_399_441_055_744.0;
    // |n| ≤ 1077 < 2^11: 11 bits cleared.
    const LN2_HI: f64 = f64::from_bits(core::f64::consts::LN_2.to_bits() & !0x7ff);
    const LN2_LO: f64 = 5.497_923_018_708_371e-14;
    const Q: &'static [f64] = &[
        2.499_996_534_325_592_4e-8,
        2.763_037_862_080_518e-7,
        2.755_758_734_220_382e-6,
        2.480_149_276_279_564_7e-5,
        1.984_126_950_476_535_7e-4,
        1.388_888_894_392_264e-3,
        8.333_333_333_495_624e-3,
        4.166_666_666_652_919e-2,
        1.666_666_666_666_641e-1,
        5.000_000_000_000_011e-1,
    ];
    const ONE: f64 = 1.0;
    half_scales!(f64, 52, 1023);
}

#[cfg(test)]
mod tests {
    use super::super::{AVX2, AVX512, BASELINE, V};
    use super::ExpLane;

    /// Lanes per vector in the sweeps.
    const L: usize = 8;

    /// `exp` (one of `exp_on!`'s) of every element of `xs` on each
    /// instruction set this machine has: `check` gets the set's name and
    /// the results.
    fn for_each_isa<T, F>(xs: &[T], exp: F, mut check: impl FnMut(&str, &[T]))
    where
        T: Copy + Default,
        F: Fn(u8, V<T, L>) -> V<T, L>,
    {
        let run = |isa: u8| -> Vec<T> {
            xs.chunks(L)
                .flat_map(|c| {
                    let mut v = [T::default(); L];
                    v[..c.len()].copy_from_slice(c);
                    exp(isa, V(v)).0.into_iter().take(c.len())
                })
                .collect()
        };
        check("baseline", &run(BASELINE));
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                check("avx2", &run(AVX2));
            }
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl")
            {
                check("avx512", &run(AVX512));
            }
        }
    }

    /// `V::exp::<ISA>` with `ISA` chosen at run time, inside functions that
    /// enable its instruction set (as generated kernels run it).
    macro_rules! exp_on {
        ($t:ty) => {
            |isa: u8, v: V<$t, L>| -> V<$t, L> {
                #[cfg(target_arch = "x86_64")]
                {
                    #[target_feature(enable = "avx2,fma")]
                    fn avx2(v: V<$t, L>) -> V<$t, L> {
                        v.exp::<AVX2>()
                    }
                    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                    fn avx512(v: V<$t, L>) -> V<$t, L> {
                        v.exp::<AVX512>()
                    }
                    match isa {
                        // SAFETY: `for_each_isa` passes an ISA only where
                        // it detected its features.
                        AVX2 => return unsafe { avx2(v) },
                        // SAFETY: as above.
                        AVX512 => return unsafe { avx512(v) },
                        _ => {}
                    }
                }
                v.exp::<BASELINE>()
            }
        };
    }

    /// `n` points spread evenly over `[lo, hi]` (both included).
    fn sweep(lo: f64, hi: f64, n: usize) -> impl Iterator<Item = f64> {
        (0..n).map(move |i| lo + (hi - lo) * i as f64 / (n - 1) as f64)
    }

    /// The most representable steps between a result and the wanted one,
    /// by the bits of both: for floats of the same sign the distance of
    /// their bits counts the floats between them, subnormals, zero and
    /// infinity (one step past the largest finite float) included. A NaN,
    /// or a negative result, is billions of steps off.
    fn max_ulps(pairs: impl Iterator<Item = (u64, u64)>) -> u64 {
        pairs
            .map(|(got, want)| got.abs_diff(want))
            .max()
            .unwrap_or(0)
    }

    /// Special values: every lane as `f32::exp` / `f64::exp` has it.
    #[test]
    fn special_values_match_libm() {
        let f = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            88.8,
            89.0,
            1e30,
            f32::MAX,
            -104.0,
            -110.0,
            f32::MIN,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
        ];
        for_each_isa(&f, exp_on!(f32), |isa, got| {
            for (&x, &y) in f.iter().zip(got) {
                let want = x.exp();
                let same = y == want || (y.is_nan() && want.is_nan());
                assert!(same, "{isa}: exp({x}) = {y}, want {want}");
            }
        });
        let d = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            709.8,
            710.0,
            1e300,
            f64::MAX,
            -746.0,
            -800.0,
            f64::MIN,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
        ];
        for_each_isa(&d, exp_on!(f64), |isa, got| {
            for (&x, &y) in d.iter().zip(got) {
                let want = x.exp();
                let same = y == want || (y.is_nan() && want.is_nan());
                assert!(same, "{isa}: exp({x}) = {y}, want {want}");
            }
        });
    }

    /// f32 lanes over [-104, 89] (from results that round to 0, through
    /// the subnormal ones, to overflow), and every 2^-21 of [-0.5, 0.5]
    /// (the reduced arguments): within 1 ulp of the correctly rounded
    /// result (`f64::exp` rounded to f32).
    #[test]
    fn f32_is_within_one_ulp() {
        let xs: Vec<f32> = sweep(-104.0, 89.0, 1 << 20)
            .chain((-(1 << 20)..=1 << 20).map(|i| i as f64 * 2f64.powi(-21)))
            .map(|x| x as f32)
            .collect();
        for_each_isa(&xs, exp_on!(f32), |isa, got| {
            let want = |x: f32| (f64::from(x).exp() as f32).to_bits();
            let pairs = got
                .iter()
                .zip(&xs)
                .map(|(y, &x)| (y.to_bits().into(), want(x).into()));
            let worst = max_ulps(pairs);
            assert!(worst <= 1, "{isa}: {worst} ulp");
        });
    }

    /// f64 lanes over [-746, 710], and every 2^-21 of [-0.5, 0.5]: within
    /// 1 ulp of `f64::exp` (the system libm's, itself within about half an
    /// ulp of the exact value).
    #[test]
    fn f64_is_within_one_ulp_of_libm() {
        let xs: Vec<f64> = sweep(-746.0, 710.0, 1 << 20)
            .chain((-(1 << 20)..=1 << 20).map(|i| i as f64 * 2f64.powi(-21)))
            .collect();
        for_each_isa(&xs, exp_on!(f64), |isa, got| {
            let want = xs.iter().map(|x| x.exp().to_bits());
            let worst = max_ulps(got.iter().map(|y| y.to_bits()).zip(want));
            assert!(worst <= 1, "{isa}: {worst} ulp");
        });
    }

    /// The Cody–Waite splits: `n · LN2_HI` exact for every `n` of a
    /// clamped input, `LN2_HI + LN2_LO` rounding to ln 2.
    #[test]
    fn ln2_splits_are_exact() {
        macro_rules! check {
            ($t:ty, $ln2:expr) => {{
                let (hi, lo) = (<$t as ExpLane>::LN2_HI, <$t as ExpLane>::LN2_LO);
                let bound = <$t as ExpLane>::MIN.abs().max(<$t as ExpLane>::MAX);
                let n_max = (bound * <$t as ExpLane>::LOG2_E).ceil();
                let mut n = -n_max;
                while n <= n_max {
                    assert_eq!(n.mul_add(hi, -(n * hi)), 0.0, "{n} · {hi}");
                    n += 1.0;
                }
                assert_eq!(hi + lo, $ln2);
            }};
        }
        check!(f32, core::f32::consts::LN_2);
        check!(f64, core::f64::consts::LN_2);
    }
}
