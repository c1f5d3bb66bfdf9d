//! The widening of 16-bit float inputs to f32 (mixed-precision kernels:
//! their inputs are converted while the CPU code packs them or reads them
//! in place, and `V::dot_pairs` emulates `vdpbf16ps` with it). Both
//! conversions are exact.

use mdh_rt::value::{bf16, f16};

/// `x as f32`: the bits of a `bf16` are the upper half of an f32's.
#[inline(always)]
pub fn widen_bf16(x: bf16) -> f32 {
    f32::from_bits((x.to_bits() as u32) << 16)
}

/// `x as f32`: one F16C `vcvtph2ps` in the AVX2 and AVX-512 bodies (whose
/// features include F16C, detected with them: `crate::cpu::isa`), `half`'s
/// conversion on the baseline.
#[inline(always)]
pub fn widen_f16<const ISA: u8>(x: f16) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if ISA >= super::AVX2 {
        use core::arch::x86_64::*;
        // SAFETY: the AVX2 and AVX-512 bodies this is inlined into enable
        // F16C, which `isa()` detected before choosing them.
        return unsafe { _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(x.to_bits() as i32))) };
    }
    x.to_f32()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::BASELINE;

    /// Every bit pattern widens to `half`'s f32 (NaNs: to a NaN).
    #[test]
    fn widening_is_halfs_conversion() {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "f16c")]
        unsafe fn f16c(x: f16) -> f32 {
            widen_f16::<{ crate::simd::AVX2 }>(x)
        }
        #[cfg(target_arch = "x86_64")]
        let has_f16c = std::is_x86_feature_detected!("f16c");
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        for bits in 0..=u16::MAX {
            let (h, b) = (f16::from_bits(bits), bf16::from_bits(bits));
            assert!(same(widen_bf16(b), b.to_f32()), "bf16 {bits:#x}");
            assert!(same(widen_f16::<BASELINE>(h), h.to_f32()), "f16 {bits:#x}");
            #[cfg(target_arch = "x86_64")]
            if has_f16c {
                // SAFETY: F16C was detected.
                let x = unsafe { f16c(h) };
                assert!(same(x, h.to_f32()), "f16 {bits:#x} with F16C: {x}");
            }
        }
    }
}
