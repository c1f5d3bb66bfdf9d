//! Widening 16-bit floats to `f32` in CPU task bodies: the conversions of
//! mixed-precision kernels' inputs (`x as f32` of an `f16` or `bf16`),
//! done where a tile is packed so that the register tiles compute on `f32`
//! at the FP32 FMA rate. Every conversion is exact (both types' values are
//! `f32` values), so each one computes what `half`'s `to_f32` does, up to
//! NaN payloads.
//!
//! `bf16 → f32` is the 16 bits shifted into the high half of the `f32`,
//! a loop LLVM vectorizes in every instruction set. `f16 → f32` of a run is
//! F16C's `vcvtph2ps` where the task body's instruction set is AVX2 or
//! AVX-512 (`ISA`, after `MDH_ISA`) and the CPU has F16C (detected at run
//! time), else `half`'s conversion.

use crate::simd::AVX2;
use mdh_rt::value::{bf16, f16};

/// A 16-bit float (or `f32` itself) that widens to `f32` exactly.
pub trait Widen: Copy {
    /// The value as an `f32`.
    fn widen(self) -> f32;
    /// `dst[i] = src[i].widen()` for every `i` (same lengths); `ISA`: the
    /// instruction set of the task body this is inlined into.
    #[inline(always)]
    fn widen_run<const ISA: u8>(src: &[Self], dst: &mut [f32]) {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = s.widen();
        }
    }
}

impl Widen for f32 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
}

impl Widen for bf16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        f32::from_bits((self.to_bits() as u32) << 16)
    }
}

impl Widen for f16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }

    #[inline(always)]
    fn widen_run<const ISA: u8>(src: &[f16], dst: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if ISA >= AVX2 && f16c() {
            // SAFETY: the CPU has F16C (detected above).
            unsafe { f16_run_f16c(src, dst) };
            return;
        }
        for (d, s) in dst.iter_mut().zip(src) {
            *d = s.to_f32();
        }
    }
}

/// `x` widened to `f32` (scalar reads of an access read in place).
#[inline(always)]
pub fn widen<const ISA: u8, T: Widen>(x: T) -> f32 {
    x.widen()
}

/// `dst[i] = src[i] as f32` for a run of consecutive elements (the rows of
/// a packed tile).
#[inline(always)]
pub fn widen_run<const ISA: u8, T: Widen>(src: &[T], dst: &mut [f32]) {
    debug_assert_eq!(src.len(), dst.len());
    T::widen_run::<ISA>(src, dst)
}

/// Whether the CPU has F16C (`vcvtph2ps`), detected once.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn f16c() -> bool {
    std::arch::is_x86_feature_detected!("f16c")
}

/// The F16C conversion of a run, 8 elements per `vcvtph2ps`, the rest
/// through `half`.
///
/// # Safety
/// The CPU has F16C and AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "f16c,avx")]
#[inline(never)]
unsafe fn f16_run_f16c(src: &[f16], dst: &mut [f32]) {
    use core::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let n = src.len().min(dst.len());
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: elements i..i+8 are inside both slices; unaligned loads
        // and stores; the caller guarantees F16C and AVX.
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr().add(i) as *const __m128i);
            _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
        }
        i += 8;
    }
    for j in i..n {
        dst[j] = src[j].to_f32();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::{AVX512, BASELINE};

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// Every bit pattern of both types widens as `half` converts it, in
    /// runs of every length mod 8 and on every instruction set's path.
    #[test]
    fn widening_is_halfs_conversion() {
        fn check<T: Widen>(all: &[T], want: impl Fn(T) -> f32) {
            for &x in all {
                assert!(same(widen::<BASELINE, T>(x), want(x)));
            }
            for isa in [BASELINE, AVX2, AVX512] {
                for start in 0..9 {
                    let src = &all[start..];
                    let mut dst = vec![0.0f32; src.len()];
                    match isa {
                        BASELINE => widen_run::<BASELINE, T>(src, &mut dst),
                        AVX2 => widen_run::<AVX2, T>(src, &mut dst),
                        _ => widen_run::<AVX512, T>(src, &mut dst),
                    }
                    for (&x, &d) in src.iter().zip(&dst) {
                        assert!(same(d, want(x)));
                    }
                }
            }
        }
        let h: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let b: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
        check(&h, f16::to_f32);
        check(&b, bf16::to_f32);
    }
}
