//! The scalar semantics that generated CPU code and the SIMD lanes share
//! with the reference interpreter and the generated C: integer division
//! and float `max` / `min`.

/// Integer `/` and `%` of scalar functions: wrapping, and 0 for a zero
/// divisor, as the reference interpreter and the generated C define them
/// (a kernel cannot stop mid-launch to report an error, and a panic in a
/// rayon task would abort the whole call).
pub trait IntDiv: Sized {
    fn div_or_zero(self, o: Self) -> Self;
    fn rem_or_zero(self, o: Self) -> Self;
}

macro_rules! int_div {
    ($($t:ty),*) => {$(
        impl IntDiv for $t {
            #[inline(always)]
            fn div_or_zero(self, o: $t) -> $t {
                if o == 0 { 0 } else { self.wrapping_div(o) }
            }
            #[inline(always)]
            fn rem_or_zero(self, o: $t) -> $t {
                if o == 0 { 0 } else { self.wrapping_rem(o) }
            }
        }
    )*};
}
int_div!(i8, i16, i32, i64, u8, u16, u32, u64, usize);

/// Float `max` and `min` of scalar functions and combine operators, with
/// `f32::max`'s meaning (a NaN operand yields the other one), written as a
/// compare and select instead of `f32::max` (LLVM's `maxnum`). rustc 1.95's
/// LLVM vectorizes a loop with `maxnum`/`minnum` reductions of both `f32`
/// and `f64` (e.g. `PW(max)` into an `f32` and an `f64` output) into
/// invalid IR: its NaN check compares an `f32` vector with an `f64` one
/// (`fcmp uno <8 x float>, <8 x double>`), and the release build stops with
/// "Cannot emit physreg copy instruction" (issue 37, the `physreg` kernel
/// of mdh-random-kernels). A select is no `maxnum` reduction to LLVM; the
/// lanes of a plan's accumulators still vectorize as element-wise selects.
pub trait FloatMinMax: Sized {
    fn max_num(self, o: Self) -> Self;
    fn min_num(self, o: Self) -> Self;
}

macro_rules! float_min_max {
    ($($t:ty),*) => {$(
        impl FloatMinMax for $t {
            #[inline(always)]
            fn max_num(self, o: $t) -> $t {
                if self < o || self.is_nan() { o } else { self }
            }
            #[inline(always)]
            fn min_num(self, o: $t) -> $t {
                if self > o || self.is_nan() { o } else { self }
            }
        }
    )*};
}
float_min_max!(f32, f64, mdh_rt::value::f16, mdh_rt::value::bf16);

#[cfg(test)]
mod tests {
    use super::*;

    /// The compare-and-select `max_num` / `min_num` mean what `f32::max` /
    /// `f32::min` mean (the interpreter's): a NaN operand yields the other.
    #[test]
    fn float_min_max_are_f32_max_and_min() {
        fn check<T: FloatMinMax + Copy + PartialEq + std::fmt::Debug>(
            xs: &[T],
            max: fn(T, T) -> T,
            min: fn(T, T) -> T,
            nan: fn(T) -> bool,
        ) {
            for &a in xs {
                for &b in xs {
                    let same = |x: T, y: T| x == y || (nan(x) && nan(y));
                    assert!(same(a.max_num(b), max(a, b)), "{a:?} max {b:?}");
                    assert!(same(a.min_num(b), min(a, b)), "{a:?} min {b:?}");
                }
            }
        }
        check(
            &[
                f32::NAN,
                -1.5,
                -0.0,
                0.0,
                2.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
            ],
            f32::max,
            f32::min,
            f32::is_nan,
        );
        check(
            &[
                f64::NAN,
                -1.5,
                -0.0,
                0.0,
                2.0,
                f64::INFINITY,
                f64::NEG_INFINITY,
            ],
            f64::max,
            f64::min,
            f64::is_nan,
        );
    }
}
