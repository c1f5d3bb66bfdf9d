//! The bf16 pairs of mixed-precision kernels: their packing and whether
//! the task bodies run them. (The widening of 16-bit float inputs to f32
//! is `crate::simd::half`'s.)

use mdh_rt::value::bf16;

/// One row of pairs of a bf16 product's packed tile
/// (`codegen::cpu`'s pair bodies): `n` pairs from `dst[at]` on, pair `l`
/// of `src[a + l·stride]` and `src[b + l·stride]` (0 where `b` is `None`:
/// an odd last point pairs with zero).
///
/// # Safety
/// `at + 2n <= dst.len()`; every `a + l·stride` and `b + l·stride` for
/// `l < n` is inside `src`.
#[inline(always)]
pub unsafe fn pack_pairs(
    dst: &mut [bf16],
    at: usize,
    src: &[bf16],
    a: usize,
    b: Option<usize>,
    stride: isize,
    n: usize,
) {
    // SAFETY: the caller's bounds; pairs are written as the 32-bit word of
    // two bf16 (the first in the low half, as `vdpbf16ps` reads them).
    unsafe {
        let d = dst.as_mut_ptr().add(at) as *mut u32;
        let s = src.as_ptr() as *const u16;
        let put = |l: usize, lo: u16, hi: u16| {
            d.add(l).write_unaligned(lo as u32 | (hi as u32) << 16);
        };
        match (b, stride) {
            // Contiguous rows: one loop LLVM vectorizes.
            (Some(b), 1) => (0..n).for_each(|l| put(l, *s.add(a + l), *s.add(b + l))),
            (None, 1) => (0..n).for_each(|l| put(l, *s.add(a + l), 0)),
            _ => (0..n).for_each(|l| {
                let o = l as isize * stride;
                let hi = b.map_or(0, |b| *s.offset(b as isize + o));
                put(l, *s.offset(a as isize + o), hi)
            }),
        }
    }
}

/// How the task bodies of a bf16 product run its pairs of reduction
/// points (`codegen::cpu`'s pair bodies, [`crate::simd::V::dot_pairs`]):
/// one AVX-512 BF16 `vdpbf16ps` per pair of products and vector where the
/// CPU has it, the same arithmetic emulated in f32 (for tests on CPUs
/// without it), or not at all (inputs widened to f32 while packed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bf16Pairs {
    Off,
    Emulated,
    Native,
}

/// The pairs of this process ([`Bf16Pairs`]): native where the task bodies
/// are AVX-512 ones ([`crate::cpu::isa`]) and the CPU has AVX-512 BF16,
/// else off; the environment variable `MDH_BF16_PAIRS` says `off` (the
/// widened bodies everywhere, e.g. to compare) or `emulate` (the pair
/// bodies without `vdpbf16ps`, on AVX-512 and AVX2: how tests run them on
/// CPUs without it).
pub fn bf16_pairs() -> Bf16Pairs {
    static PAIRS: std::sync::OnceLock<Bf16Pairs> = std::sync::OnceLock::new();
    *PAIRS.get_or_init(|| {
        let var = std::env::var("MDH_BF16_PAIRS").ok();
        match pairs_choice(crate::cpu::isa(), has_avx512_bf16(), var.as_deref()) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("mdh: {e}; ignored");
                pairs_choice(crate::cpu::isa(), has_avx512_bf16(), None).unwrap_or(Bf16Pairs::Off)
            }
        }
    })
}

fn has_avx512_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512bf16");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// [`bf16_pairs`] for the task bodies of `isa`, a CPU with AVX-512 BF16 or
/// not (`native`) and the value of `MDH_BF16_PAIRS` (`var`).
fn pairs_choice(
    isa: crate::cpu::Isa,
    native: bool,
    var: Option<&str>,
) -> Result<Bf16Pairs, String> {
    use crate::cpu::Isa;
    let var = var.map(str::to_ascii_lowercase);
    Ok(match var.as_deref() {
        None | Some("") | Some("native") if isa == Isa::Avx512 && native => Bf16Pairs::Native,
        None | Some("") | Some("native") | Some("off") => Bf16Pairs::Off,
        Some("emulate") if isa != Isa::Baseline => Bf16Pairs::Emulated,
        Some("emulate") => Bf16Pairs::Off,
        Some(other) => {
            return Err(format!(
                "MDH_BF16_PAIRS={other:?} is not one of native, emulate, off"
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Native pairs only in AVX-512 bodies of a CPU with AVX-512 BF16;
    /// emulated ones on request in AVX-512 and AVX2 bodies.
    #[test]
    fn pairs_follow_the_cpu_and_the_request() {
        use crate::cpu::Isa;
        use Bf16Pairs::*;
        let c = |isa, native, var| pairs_choice(isa, native, var).unwrap();
        assert_eq!(c(Isa::Avx512, true, None), Native);
        assert_eq!(c(Isa::Avx512, true, Some("native")), Native);
        assert_eq!(c(Isa::Avx512, false, None), Off);
        assert_eq!(c(Isa::Avx2, true, None), Off);
        assert_eq!(c(Isa::Avx512, true, Some("OFF")), Off);
        assert_eq!(c(Isa::Avx512, true, Some("emulate")), Emulated);
        assert_eq!(c(Isa::Avx2, false, Some("emulate")), Emulated);
        assert_eq!(c(Isa::Baseline, false, Some("emulate")), Off);
        let e = pairs_choice(Isa::Avx512, true, Some("yes")).unwrap_err();
        assert!(e.contains("native, emulate, off"), "{e}");
    }

    /// Rows of pairs, contiguous and strided, an odd last row with zeros.
    #[test]
    fn pack_pairs_interleaves_two_rows() {
        let src: Vec<bf16> = (0..24).map(|i| bf16::from_f32(i as f32)).collect();
        let got = |b: Option<usize>, stride: isize| {
            let mut dst = vec![bf16::from_f32(-1.0); 8];
            // SAFETY: 1 + 2·3 <= 8; the reads stay below 24.
            unsafe { pack_pairs(&mut dst, 1, &src, 2, b, stride, 3) };
            dst.iter().map(|x| x.to_f32()).collect::<Vec<f32>>()
        };
        assert_eq!(got(Some(10), 1), [-1., 2., 10., 3., 11., 4., 12., -1.]);
        assert_eq!(got(None, 1), [-1., 2., 0., 3., 0., 4., 0., -1.]);
        assert_eq!(got(Some(10), 5), [-1., 2., 10., 7., 15., 12., 20., -1.]);
        assert_eq!(got(None, 5), [-1., 2., 0., 7., 0., 12., 0., -1.]);
    }
}
