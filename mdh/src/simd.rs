//! Lane-wise vectors for the SIMD layer of generated CPU kernels.
//!
//! `V<T, N>` is `N` lanes of `T` (one lane per point of the SIMD dimension).
//! Every operation is a loop with a constant trip count over a plain array:
//! inside the `#[target_feature]` functions that generated kernels are
//! compiled into, LLVM turns each into vector instructions (AVX-512, AVX2 or
//! SSE), so the generated code states the vectorization explicitly instead of
//! hoping the auto-vectorizer finds it, and needs no intrinsics. Integer
//! arithmetic wraps, as in scalar generated code and in the interpreter.

use core::ops::{Add, Div, Mul, Neg, Not, Rem, Sub};
use mdh_rt::value::{bf16, f16};

mod exp;
mod half;
pub use half::{widen_bf16, widen_f16};

/// `N` lanes of `T`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(transparent)]
pub struct V<T, const N: usize>(pub [T; N]);

/// Element types of vectors: the scalar types of kernels.
pub trait Lane: Copy + Default + PartialOrd + Send + Sync + 'static {
    /// Whether `Self` is an integer type (see [`V::cast`]).
    const INTEGER: bool;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn div(self, o: Self) -> Self;
    fn rem(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn min(self, o: Self) -> Self;
    fn max(self, o: Self) -> Self;
    fn abs(self) -> Self;
}

macro_rules! int_lane {
    ($abs:ident: $($t:ty),*) => {$(
        impl Lane for $t {
            const INTEGER: bool = true;
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)] fn div(self, o: Self) -> Self { crate::scalar::IntDiv::div_or_zero(self, o) }
            #[inline(always)] fn rem(self, o: Self) -> Self { crate::scalar::IntDiv::rem_or_zero(self, o) }
            #[inline(always)] fn neg(self) -> Self { self.wrapping_neg() }
            #[inline(always)] fn min(self, o: Self) -> Self { Ord::min(self, o) }
            #[inline(always)] fn max(self, o: Self) -> Self { Ord::max(self, o) }
            #[inline(always)] fn abs(self) -> Self { $abs(self) }
        }
    )*};
}

trait WrappingAbs {
    fn wrapping_abs_(self) -> Self;
}

macro_rules! wrapping_abs {
    ($($t:ty),*) => {$(
        impl WrappingAbs for $t {
            #[inline(always)]
            fn wrapping_abs_(self) -> Self { self.wrapping_abs() }
        }
    )*};
}
wrapping_abs!(i8, i16, i32, i64);

#[inline(always)]
fn signed_abs<T: WrappingAbs>(x: T) -> T {
    x.wrapping_abs_()
}

#[inline(always)]
fn unsigned_abs<T>(x: T) -> T {
    x
}

int_lane!(signed_abs: i8, i16, i32, i64);
int_lane!(unsigned_abs: u8, u16, u32, u64, usize);

macro_rules! float_lane {
    ($($t:ty: $abs:expr),*) => {$(
        impl Lane for $t {
            const INTEGER: bool = false;
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn sub(self, o: Self) -> Self { self - o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn div(self, o: Self) -> Self { self / o }
            #[inline(always)] fn rem(self, o: Self) -> Self { self % o }
            #[inline(always)] fn neg(self) -> Self { -self }
            #[inline(always)] fn min(self, o: Self) -> Self { <$t>::min(self, o) }
            #[inline(always)] fn max(self, o: Self) -> Self { <$t>::max(self, o) }
            #[inline(always)] fn abs(self) -> Self {
                let abs: fn($t) -> $t = $abs;
                abs(self)
            }
        }
    )*};
}

// The 16-bit floats (packed tiles hold them; no kernel computes on their
// lanes yet): `half`'s operators compute in f32 and round to the type, and
// the absolute value clears the sign bit.
float_lane!(
    f32: f32::abs,
    f64: f64::abs,
    f16: |x| f16::from_bits(x.to_bits() & 0x7fff),
    bf16: |x| bf16::from_bits(x.to_bits() & 0x7fff)
);

impl Lane for bool {
    const INTEGER: bool = false;
    // Booleans only flow through selects and logic; arithmetic on them is
    // rejected by the checker, so these are never called.
    fn add(self, o: Self) -> Self {
        self | o
    }
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    fn mul(self, o: Self) -> Self {
        self & o
    }
    fn div(self, _: Self) -> Self {
        self
    }
    fn rem(self, _: Self) -> Self {
        false
    }
    fn neg(self) -> Self {
        self
    }
    fn min(self, o: Self) -> Self {
        self & o
    }
    fn max(self, o: Self) -> Self {
        self | o
    }
    fn abs(self) -> Self {
        self
    }
}

/// The chunks of a partial vector of `N` lanes of `T` for AVX-512 masked
/// loads and stores: per 64-byte chunk, its first lane and the mask of its
/// lanes among the first `cnt`. `None` where `T` is not 4 or 8 bytes wide
/// or `N` lanes are not whole chunks (no masked path).
#[inline(always)]
pub(crate) fn chunk_masks<T, const N: usize>(
    cnt: usize,
) -> Option<impl Iterator<Item = (usize, u64)>> {
    let bytes = core::mem::size_of::<T>();
    let w = 64 / Ord::max(bytes, 1);
    ((bytes == 4 || bytes == 8) && N.is_multiple_of(w)).then(|| {
        (0..N / w).map(move |c| {
            // k <= w <= 16 lanes: the shift cannot overflow.
            let k = Ord::min(cnt.saturating_sub(c * w), w);
            (c * w, (1u64 << k) - 1)
        })
    })
}

impl<T: Lane, const N: usize> V<T, N> {
    #[inline(always)]
    pub fn splat(x: T) -> Self {
        V([x; N])
    }

    #[inline(always)]
    pub fn from_fn(f: impl FnMut(usize) -> T) -> Self {
        V(core::array::from_fn(f))
    }

    /// `N` consecutive elements of `s` from `at`.
    ///
    /// # Safety
    /// `at + N <= s.len()`.
    #[inline(always)]
    pub unsafe fn load(s: &[T], at: usize) -> Self {
        // SAFETY: the caller guarantees the range is in bounds; `V` is a
        // transparent `[T; N]`, which has the alignment of `T`.
        unsafe {
            V(core::ptr::read_unaligned(
                s.as_ptr().add(at) as *const [T; N]
            ))
        }
    }

    /// The `cnt` (1 ≤ `cnt` ≤ `N`) consecutive elements of `s` from `at` in
    /// the first lanes; every further lane repeats the last of them, so that
    /// each lane holds the value of a point that exists (lanes of an edge
    /// tile past the end of the index space compute a valid point again,
    /// which cannot trap, and are never stored). On AVX-512 a masked load
    /// per 64-byte chunk, which touches no element past the `cnt`-th.
    ///
    /// # Safety
    /// `1 <= cnt <= N` and `at + cnt <= s.len()`; `ISA` is the instruction
    /// set of the `#[target_feature]` function this is inlined into.
    #[inline(always)]
    pub unsafe fn load_part<const ISA: u8>(s: &[T], at: usize, cnt: usize) -> Self {
        #[cfg(target_arch = "x86_64")]
        if ISA == AVX512 {
            use core::arch::x86_64::*;
            let p = s.as_ptr().wrapping_add(at);
            // SAFETY: the caller guarantees `at + cnt - 1` is in bounds.
            let last = unsafe { *p.add(cnt - 1) };
            let mut r = [last; N];
            let bytes = core::mem::size_of::<T>();
            if let Some(chunks) = chunk_masks::<T, N>(cnt) {
                for (first, mask) in chunks {
                    let q = r.as_mut_ptr().wrapping_add(first);
                    // SAFETY: AVX-512 is enabled (`ISA`); the mask selects
                    // elements of `at + first ..` among the first `cnt`,
                    // inside `s` (masked-off elements are not accessed and
                    // cannot fault); `q` points at a 64-byte chunk of `r`
                    // (`chunk_masks`), whose masked-off lanes keep `last`.
                    unsafe {
                        let src = p.wrapping_add(first) as *const u8;
                        if bytes == 4 {
                            let v = _mm512_mask_loadu_epi32(
                                _mm512_loadu_si512(q as *const _),
                                mask as __mmask16,
                                src as *const i32,
                            );
                            _mm512_storeu_si512(q as *mut _, v);
                        } else {
                            let v = _mm512_mask_loadu_epi64(
                                _mm512_loadu_si512(q as *const _),
                                mask as __mmask8,
                                src as *const i64,
                            );
                            _mm512_storeu_si512(q as *mut _, v);
                        }
                    }
                }
                return V(r);
            }
        }
        // SAFETY: every index `at + min(l, cnt - 1)` is below `at + cnt`.
        V(core::array::from_fn(|l| unsafe {
            *s.get_unchecked(at + Ord::min(l, cnt - 1))
        }))
    }

    /// `N` consecutive elements at `p`.
    ///
    /// # Safety
    /// `p .. p + N` are valid, initialized elements.
    #[inline(always)]
    pub unsafe fn read(p: *const T) -> Self {
        // SAFETY: the caller's guarantee; `V` is a transparent `[T; N]`.
        unsafe { V(core::ptr::read_unaligned(p as *const [T; N])) }
    }

    /// Writes the lanes to `N` consecutive elements at `p`.
    ///
    /// # Safety
    /// `p .. p + N` are valid for writes.
    #[inline(always)]
    pub unsafe fn write(self, p: *mut T) {
        // SAFETY: the caller's guarantee.
        unsafe { core::ptr::write_unaligned(p as *mut [T; N], self.0) }
    }

    #[inline(always)]
    fn map(self, f: impl Fn(T) -> T) -> Self {
        let mut r = self.0;
        for x in &mut r {
            *x = f(*x);
        }
        V(r)
    }

    #[inline(always)]
    fn zip(self, o: Self, f: impl Fn(T, T) -> T) -> Self {
        let mut r = self.0;
        for (x, y) in r.iter_mut().zip(o.0) {
            *x = f(*x, y);
        }
        V(r)
    }

    #[inline(always)]
    fn compare(self, o: Self, f: impl Fn(T, T) -> bool) -> V<bool, N> {
        let mut r = [false; N];
        for ((x, a), b) in r.iter_mut().zip(self.0).zip(o.0) {
            *x = f(a, b);
        }
        V(r)
    }

    #[inline(always)]
    pub fn lt(self, o: Self) -> V<bool, N> {
        self.compare(o, |a, b| a < b)
    }
    #[inline(always)]
    pub fn le(self, o: Self) -> V<bool, N> {
        self.compare(o, |a, b| a <= b)
    }
    #[inline(always)]
    pub fn gt(self, o: Self) -> V<bool, N> {
        self.compare(o, |a, b| a > b)
    }
    #[inline(always)]
    pub fn ge(self, o: Self) -> V<bool, N> {
        self.compare(o, |a, b| a >= b)
    }
    #[inline(always)]
    pub fn eq(self, o: Self) -> V<bool, N> {
        self.compare(o, |a, b| a == b)
    }
    #[inline(always)]
    pub fn ne(self, o: Self) -> V<bool, N> {
        self.compare(o, |a, b| a != b)
    }
    #[inline(always)]
    pub fn min(self, o: Self) -> Self {
        self.zip(o, T::min)
    }
    #[inline(always)]
    pub fn max(self, o: Self) -> Self {
        self.zip(o, T::max)
    }
    #[inline(always)]
    pub fn abs(self) -> Self {
        self.map(T::abs)
    }

    /// Lane-wise `if mask { a } else { b }`.
    #[inline(always)]
    pub fn select(mask: V<bool, N>, a: Self, b: Self) -> Self {
        let mut r = b.0;
        for ((x, m), a) in r.iter_mut().zip(mask.0).zip(a.0) {
            if m {
                *x = a;
            }
        }
        V(r)
    }

    /// Lane-wise `as` conversion. A widening integer one first hides its
    /// operand's value from LLVM ([`V::opaque`]): LLVM otherwise moves the
    /// widening into the operations that computed it (a sign extension of
    /// a `select` of constants becomes a `select` of wide constants), so
    /// that prl's `i32` comparisons and sums ran on twice the vectors of
    /// `i64` lanes. Computed narrow and widened once, as gcc does, prl
    /// 2^15 on the 2-core AMD EPYC (Zen 5): 68 ms against 93 (the C loop
    /// 85–90 ms). `ISA`: the instruction set of the body this is inlined
    /// into.
    #[inline(always)]
    pub fn cast<const ISA: u8, U: Lane>(self) -> V<U, N>
    where
        T: CastTo<U>,
    {
        let widens = T::INTEGER && U::INTEGER && size_of::<U>() > size_of::<T>();
        let x = if widens { self.opaque::<ISA>() } else { self };
        V(core::array::from_fn(|l| x.0[l].cast_to()))
    }

    /// `self`, its value hidden from the optimizer by an empty `asm!` on
    /// the vector registers that hold it (no instruction, no memory: the
    /// optimizer may still hoist or merge it, but not look through it):
    /// the operand of a widening cast, and the accumulators of register
    /// tiles of several rows of partial-result lanes (generated code), stay
    /// whole vectors. Lanes that fill no whole 16-byte register, and other
    /// architectures, pass unchanged.
    #[inline(always)]
    pub fn opaque<const ISA: u8>(self) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::*;
            let bytes = size_of::<[T; N]>();
            let mut r = self.0;
            macro_rules! chunked {
                ($w:expr, $reg:ty, $f:ident) => {{
                    for c in 0..bytes / $w {
                        // SAFETY: chunk `c` lies inside `r` (`bytes` is a
                        // multiple of `$w`); `ISA` names the instruction
                        // set of the `#[target_feature]` function this
                        // body is inlined into (chosen after run-time
                        // detection), which `$f` needs.
                        unsafe {
                            let p = (r.as_mut_ptr() as *mut u8).add(c * $w) as *mut $reg;
                            p.write_unaligned($f(p.read_unaligned()));
                        }
                    }
                    return V(r);
                }};
            }
            if ISA == AVX512 && bytes.is_multiple_of(64) {
                chunked!(64, __m512i, opaque_zmm);
            }
            if ISA >= AVX2 && bytes.is_multiple_of(32) {
                chunked!(32, __m256i, opaque_ymm);
            }
            if bytes.is_multiple_of(16) {
                chunked!(16, __m128i, opaque_xmm);
            }
        }
        self
    }
}

/// The empty `asm!` of [`V::opaque`] on one register of each width.
#[cfg(target_arch = "x86_64")]
mod opaque {
    use core::arch::asm;
    use core::arch::x86_64::*;

    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) unsafe fn opaque_zmm(mut v: __m512i) -> __m512i {
        // SAFETY: no instruction; `v` stays as it is.
        unsafe {
            asm!("/* {0} */", inout(zmm_reg) v, options(pure, nomem, nostack, preserves_flags))
        };
        v
    }

    #[target_feature(enable = "avx")]
    #[inline]
    pub(super) unsafe fn opaque_ymm(mut v: __m256i) -> __m256i {
        // SAFETY: as in `opaque_zmm`.
        unsafe {
            asm!("/* {0} */", inout(ymm_reg) v, options(pure, nomem, nostack, preserves_flags))
        };
        v
    }

    #[inline(always)]
    pub(super) unsafe fn opaque_xmm(mut v: __m128i) -> __m128i {
        // SAFETY: as in `opaque_zmm` (SSE2 is part of x86-64).
        unsafe {
            asm!("/* {0} */", inout(xmm_reg) v, options(pure, nomem, nostack, preserves_flags))
        };
        v
    }
}
#[cfg(target_arch = "x86_64")]
use opaque::{opaque_xmm, opaque_ymm, opaque_zmm};

impl<const N: usize> V<bool, N> {
    #[inline(always)]
    pub fn and(self, o: Self) -> Self {
        V(core::array::from_fn(|l| self.0[l] & o.0[l]))
    }
    #[inline(always)]
    pub fn or(self, o: Self) -> Self {
        V(core::array::from_fn(|l| self.0[l] | o.0[l]))
    }
}

impl<const N: usize> V<usize, N> {
    /// `start, start + 1, …`: the indices of the SIMD dimension's lanes.
    #[inline(always)]
    pub fn iota(start: usize) -> Self {
        V(core::array::from_fn(|l| start + l))
    }

    /// `start, …, start + cnt - 1`, then `start + cnt - 1` repeated: the
    /// indices of an edge tile's lanes (see [`V::load_part`]).
    #[inline(always)]
    pub fn iota_part(start: usize, cnt: usize) -> Self {
        V(core::array::from_fn(|l| {
            start + Ord::min(l, Ord::max(cnt, 1) - 1)
        }))
    }
}

macro_rules! float_methods {
    ($($t:ty),*) => {$(
        impl<const N: usize> V<$t, N> {
            #[inline(always)] pub fn sqrt(self) -> Self { self.map(<$t>::sqrt) }
            /// Lane-wise `exp` as vector code: a polynomial after a
            /// reduction by ln 2 (module `simd/exp.rs`), not a library
            /// call per lane. f32 results are within 1 ulp of the
            /// correctly rounded ones, f64 results within 1 ulp of
            /// `f64::exp`'s; subnormal results are computed to the same
            /// bound (not flushed to 0); NaN, the infinities, overflow and
            /// underflow are as `std`'s `exp` has them. `ISA`: the
            /// instruction set of the body this is inlined into (the
            /// multiply-adds are fused where it has FMA).
            #[inline(always)] pub fn exp<const ISA: u8>(self) -> Self {
                self.map(exp::exp_lane::<ISA, $t>)
            }
            #[inline(always)] pub fn ln(self) -> Self { self.map(<$t>::ln) }
            #[inline(always)] pub fn sin(self) -> Self { self.map(<$t>::sin) }
            #[inline(always)] pub fn cos(self) -> Self { self.map(<$t>::cos) }
            #[inline(always)] pub fn tanh(self) -> Self { self.map(<$t>::tanh) }
            #[inline(always)] pub fn floor(self) -> Self { self.map(<$t>::floor) }
            #[inline(always)] pub fn ceil(self) -> Self { self.map(<$t>::ceil) }
            #[inline(always)] pub fn powf(self, e: Self) -> Self { self.zip(e, <$t>::powf) }
            #[inline(always)] pub fn powi(self, e: V<i32, N>) -> Self {
                let mut r = self.0;
                for l in 0..N {
                    r[l] = r[l].powi(e.0[l]);
                }
                V(r)
            }
            #[inline(always)] pub fn mul_add(self, a: Self, b: Self) -> Self {
                let mut r = self.0;
                for l in 0..N {
                    r[l] = r[l].mul_add(a.0[l], b.0[l]);
                }
                V(r)
            }
        }
    )*};
}

float_methods!(f32, f64);

/// An `asm!` that emits no instruction (its template is empty or a
/// comment), on the architectures where `asm!` is stable; elsewhere
/// nothing. Its callers say what it keeps LLVM from seeing.
macro_rules! empty_asm {
    ($($args:tt)*) => {
        #[cfg(any(
            target_arch = "x86_64",
            target_arch = "x86",
            target_arch = "aarch64",
            target_arch = "arm",
            target_arch = "riscv64",
            target_arch = "loongarch64"
        ))]
        // SAFETY: no instruction: it touches no memory, stack or flags, and
        // leaves its register operands as they are.
        unsafe {
            core::arch::asm!($($args)*);
        }
    };
}

/// Called once per step of a loop over whole vectors: keeps LLVM's loop
/// vectorizer off that loop. Its steps are already vector code (`V` lanes,
/// which the SLP vectorizer turns into vector instructions after the loop
/// vectorizer ran); where that pass saw the lanes' scalar operations first,
/// it vectorized across steps instead, with a gather per lane and input
/// (prl's 16-lane steps ran 4.7x slower). An empty `asm!` is an opaque call
/// the loop vectorizer does not widen, and emits no instruction.
#[inline(always)]
pub fn vector_step() {
    empty_asm!("", options(nomem, nostack, preserves_flags));
}

/// The origin `x` of a register tile along one dimension, as a value LLVM
/// cannot follow back to the loop that counts it, so that the tile computes
/// its addresses from it (a few multiply-adds per tile). Without it, loop
/// strength reduction made each address of a tile an induction variable of
/// the loops over tiles: ccsdt's 4 × 4 tile of 16 stores, in their three
/// variants (streamed, direct, partial), gave some 50, spilled and updated
/// on the stack every tile. On the 2-core AMD EPYC (Zen 5): ccsdt's default
/// plan 2.9 -> 2.0 ms, jacobi3d's 3.5 -> 2.8 ms, the other cases unchanged.
#[inline(always)]
pub fn tile_origin(mut x: usize) -> usize {
    empty_asm!("/* {0} */", inout(reg) x, options(pure, nomem, nostack, preserves_flags));
    x
}

/// Instruction sets a kernel body is instantiated for (`ISA` const
/// parameter of generated task bodies).
pub const BASELINE: u8 = 0;
pub const AVX2: u8 = 1;
pub const AVX512: u8 = 2;

impl<const N: usize> V<f32, N> {
    /// `self` plus, in lane `l`, the products of a pair of bf16 values
    /// `x` (the low half: the first point, the high half: the second) with
    /// the pair `y[at + 2l]`, `y[at + 2l + 1]`: two points of a reduction
    /// at once, for the task bodies of a bf16 product's pairs
    /// (`mdh::__rt::bf16_pairs`). `NATIVE`: one AVX-512 BF16 `vdpbf16ps`
    /// (`N` = 16); else the same in f32, the second product first, as
    /// Intel's manual defines the instruction (the products are exact; the
    /// instruction treats subnormal inputs as zero, the emulation does not).
    ///
    /// # Safety
    /// `at + 2N <= y.len()`; `NATIVE` only inlined into a
    /// `#[target_feature]` function that enables `avx512f` and `avx512bf16`.
    #[inline(always)]
    pub unsafe fn dot_pairs<const NATIVE: bool>(self, x: u32, y: &[bf16], at: usize) -> Self {
        #[cfg(target_arch = "x86_64")]
        if NATIVE && N == 16 {
            use core::arch::x86_64::*;
            // SAFETY: the caller guarantees the features and the 2N = 32
            // elements from `at`; `V<f32, 16>` and `__m512` are 64 bytes,
            // 32 bf16 lanes are one `__m512bh`.
            unsafe {
                let acc: __m512 = core::mem::transmute_copy(&self.0);
                let xs: __m512bh = core::mem::transmute(_mm512_set1_epi32(x as i32));
                let ys: __m512bh =
                    core::mem::transmute(_mm512_loadu_si512(y.as_ptr().add(at) as *const _));
                let r = _mm512_dpbf16_ps(acc, xs, ys);
                return V(core::mem::transmute_copy(&r));
            }
        }
        let (x0, x1) = (f32::from_bits(x << 16), f32::from_bits(x & 0xffff_0000));
        // SAFETY: the caller guarantees the 2N elements from `at`.
        let y = |i: usize| widen_bf16(*unsafe { y.get_unchecked(at + i) });
        V(core::array::from_fn(|l| {
            (self.0[l] + x1 * y(2 * l + 1)) + x0 * y(2 * l)
        }))
    }
}

macro_rules! fused_multiply_add {
    ($t:ty, $w512:expr, $f512:ident, $r512:ident, $w256:expr, $f256:ident, $r256:ident) => {
        impl<const N: usize> V<$t, N> {
            /// `self * a + b` with one rounding where the instruction set has
            /// FMA (AVX2, AVX-512), as two operations on the baseline (where
            /// a fused multiply-add would be a slow library call).
            #[inline(always)]
            pub fn fma<const ISA: u8>(self, a: Self, b: Self) -> Self {
                #[cfg(target_arch = "x86_64")]
                {
                    use core::arch::x86_64::*;
                    macro_rules! chunked {
                        ($w:expr, $reg:ident, $f:ident) => {{
                            let mut r = self.0;
                            for c in 0..N / $w {
                                // SAFETY: `ISA` names the instruction set of the
                                // `#[target_feature]` function this body is
                                // inlined into (chosen after run-time detection);
                                // chunk `c` is in bounds since N % width == 0.
                                unsafe {
                                    let at = |v: &[$t; N]| {
                                        core::ptr::read_unaligned(
                                            v.as_ptr().add(c * $w) as *const $reg
                                        )
                                    };
                                    let f = $f(at(&self.0), at(&a.0), at(&b.0));
                                    core::ptr::write_unaligned(
                                        r.as_mut_ptr().add(c * $w) as *mut $reg,
                                        f,
                                    );
                                }
                            }
                            return V(r);
                        }};
                    }
                    if ISA == AVX512 && N % $w512 == 0 {
                        chunked!($w512, $r512, $f512);
                    }
                    if ISA >= AVX2 && N % $w256 == 0 {
                        chunked!($w256, $r256, $f256);
                    }
                }
                self * a + b
            }
        }
    };
}

/// Scalar floats with a multiply-add (the lane type of [`mul_add`]).
pub trait MulAdd: Copy + core::ops::Mul<Output = Self> + core::ops::Add<Output = Self> {
    /// `a * b + c` with one rounding.
    fn fused(a: Self, b: Self, c: Self) -> Self;
}

impl MulAdd for f32 {
    #[inline(always)]
    fn fused(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
}

impl MulAdd for f64 {
    #[inline(always)]
    fn fused(a: f64, b: f64, c: f64) -> f64 {
        a.mul_add(b, c)
    }
}

/// Scalar `a * b + c`, as [`V::fma`] on one lane: fused where the
/// instruction set has FMA, two operations on the baseline (where a fused
/// multiply-add is a slow library call). One expression for every ISA
/// keeps a task body's code the same for all of them.
#[inline(always)]
pub fn mul_add<const ISA: u8, T: MulAdd>(a: T, b: T, c: T) -> T {
    if ISA >= AVX2 {
        T::fused(a, b, c)
    } else {
        a * b + c
    }
}

fused_multiply_add!(f32, 16, _mm512_fmadd_ps, __m512, 8, _mm256_fmadd_ps, __m256);
fused_multiply_add!(
    f64,
    8,
    _mm512_fmadd_pd,
    __m512d,
    4,
    _mm256_fmadd_pd,
    __m256d
);

/// `as` conversions between lane types.
pub trait CastTo<U> {
    fn cast_to(self) -> U;
}

macro_rules! casts_from {
    ($from:ty => $($to:ty),*) => {$(
        impl CastTo<$to> for $from {
            #[inline(always)]
            fn cast_to(self) -> $to { self as $to }
        }
    )*};
}

macro_rules! casts {
    ($($from:ty),*) => {$(
        casts_from!($from => f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, usize);
    )*};
}

casts!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, usize);
casts_from!(bool => i8, i16, i32, i64, u8, u16, u32, u64, usize);

macro_rules! binop {
    ($($tr:ident $f:ident),*) => {$(
        impl<T: Lane, const N: usize> $tr for V<T, N> {
            type Output = Self;
            #[inline(always)]
            fn $f(self, o: Self) -> Self {
                self.zip(o, T::$f)
            }
        }
    )*};
}

binop!(Add add, Sub sub, Mul mul, Div div, Rem rem);

impl<T: Lane, const N: usize> Neg for V<T, N> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        self.map(T::neg)
    }
}

impl<const N: usize> Not for V<bool, N> {
    type Output = Self;
    #[inline(always)]
    fn not(self) -> Self {
        V(core::array::from_fn(|l| !self.0[l]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs of bf16 products: the emulation, and `vdpbf16ps` where the
    /// CPU has it, against the exact sums (integers: every value exact).
    #[test]
    fn dot_pairs_add_both_products_of_each_lane() {
        let b = |x: f32| bf16::from_f32(x);
        let y: Vec<bf16> = (0..40).map(|i| b(i as f32 - 7.0)).collect();
        let (x0, x1) = (b(3.0), b(-2.0));
        let x = x0.to_bits() as u32 | (x1.to_bits() as u32) << 16;
        let acc = V::<f32, 16>::from_fn(|l| l as f32);
        let want = V::<f32, 16>::from_fn(|l| {
            l as f32 + 3.0 * y[3 + 2 * l].to_f32() - 2.0 * y[4 + 2 * l].to_f32()
        });
        // SAFETY: 3 + 32 <= 40.
        assert_eq!(unsafe { acc.dot_pairs::<false>(x, &y, 3) }, want);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512bf16") {
            #[target_feature(enable = "avx512f,avx512bf16")]
            unsafe fn native(acc: V<f32, 16>, x: u32, y: &[bf16]) -> V<f32, 16> {
                // SAFETY: the features are enabled; the caller's `y` holds 35.
                unsafe { acc.dot_pairs::<true>(x, y, 3) }
            }
            // SAFETY: the features were detected; 3 + 32 <= 40.
            assert_eq!(unsafe { native(acc, x, &y) }, want);
        }
    }

    #[test]
    fn lane_wise_semantics_match_scalars() {
        let a = V::<i32, 4>([1, -2, i32::MAX, 7]);
        let b = V::<i32, 4>([3, 5, 1, -7]);
        assert_eq!((a + b).0, [4, 3, i32::MIN, 0]);
        assert_eq!((a * b).0, [3, -10, i32::MAX, -49]);
        assert_eq!(V::select(a.lt(b), a, b).0, [1, -2, 1, -7]);
        assert_eq!(a.abs().0, [1, 2, i32::MAX, 7]);
        let x = V::<f32, 2>([1.5, -2.0]);
        assert_eq!(x.cast::<BASELINE, i32>().0, [1, -2]);
        assert_eq!(a.cast::<BASELINE, i64>().0, [1, -2, i32::MAX as i64, 7]);
        assert_eq!(x.mul_add(V::splat(2.0), V::splat(1.0)).0, [4.0, -3.0]);
        assert_eq!(V::<usize, 3>::iota(5).0, [5, 6, 7]);
        let s = [1.0f32, 2.0, 3.0, 4.0, 5.0];
        // SAFETY: 1 + 4 <= 5.
        assert_eq!(unsafe { V::<f32, 4>::load(&s, 1) }.0, [2.0, 3.0, 4.0, 5.0]);
        assert_eq!(V::<usize, 4>::iota_part(5, 2).0, [5, 6, 6, 6]);
    }

    #[test]
    fn widening_casts_keep_every_lane_on_each_isa() {
        let a = V::<i32, 16>::from_fn(|l| (l as i32 - 8).wrapping_mul(0x1000_0001));
        let want: [i64; 16] = core::array::from_fn(|l| a.0[l] as i64);
        let b = V::<u8, 16>::from_fn(|l| 250u8.wrapping_add(l as u8));
        let wide = V::<u32, 16>::from_fn(|l| b.0[l] as u32);
        assert_eq!(a.cast::<BASELINE, i64>().0, want);
        assert_eq!(b.cast::<BASELINE, u32>().0, wide.0);
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2,fma")]
            unsafe fn avx2(a: V<i32, 16>, b: V<u8, 16>) -> (V<i64, 16>, V<u32, 16>) {
                (a.cast::<AVX2, i64>(), b.cast::<AVX2, u32>())
            }
            #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
            unsafe fn avx512(a: V<i32, 16>, b: V<u8, 16>) -> (V<i64, 16>, V<u32, 16>) {
                (a.cast::<AVX512, i64>(), b.cast::<AVX512, u32>())
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                // SAFETY: the features were detected.
                let (x, y) = unsafe { avx2(a, b) };
                assert_eq!((x.0, y.0), (want, wide.0));
            }
            if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl")
            {
                // SAFETY: the features were detected.
                let (x, y) = unsafe { avx512(a, b) };
                assert_eq!((x.0, y.0), (want, wide.0));
            }
        }
    }

    #[test]
    fn partial_loads_repeat_the_last_element() {
        let s: Vec<f32> = (0..40).map(|x| x as f32).collect();
        let d: Vec<f64> = (0..40).map(|x| x as f64).collect();
        let b: Vec<u8> = (0..40).collect();
        for cnt in 1..=32 {
            let want = |l: usize| 3 + Ord::min(l, cnt - 1);
            // SAFETY: 3 + cnt <= 40, and each body runs with the ISA it names.
            unsafe {
                let f = V::<f32, 32>::load_part::<BASELINE>(&s, 3, cnt);
                assert!((0..32).all(|l| f.0[l] == want(l) as f32));
                let g = V::<f64, 32>::load_part::<BASELINE>(&d, 3, cnt);
                assert!((0..32).all(|l| g.0[l] == want(l) as f64));
                let h = V::<u8, 32>::load_part::<BASELINE>(&b, 3, cnt);
                assert!((0..32).all(|l| h.0[l] as usize == want(l)));
                #[cfg(target_arch = "x86_64")]
                if std::is_x86_feature_detected!("avx512f") {
                    #[target_feature(enable = "avx512f")]
                    unsafe fn both(s: &[f32], d: &[f64], cnt: usize) -> (V<f32, 32>, V<f64, 32>) {
                        // SAFETY: as in the caller.
                        unsafe {
                            (
                                V::<f32, 32>::load_part::<AVX512>(s, 3, cnt),
                                V::<f64, 32>::load_part::<AVX512>(d, 3, cnt),
                            )
                        }
                    }
                    let (f, g) = both(&s, &d, cnt);
                    assert!((0..32).all(|l| f.0[l] == want(l) as f32), "{cnt}: {f:?}");
                    assert!((0..32).all(|l| g.0[l] == want(l) as f64), "{cnt}: {g:?}");
                }
            }
        }
    }
}
