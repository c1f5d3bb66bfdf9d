//! Streamed results (a plan's `stream`): final results written past the
//! caches with non-temporal stores, whole cache lines at a time, so that a
//! large output neither evicts the tiles a kernel reuses nor is read in
//! before it is overwritten.
//!
//! A non-temporal store needs an address aligned to its width, and it only
//! pays where it fills a whole line: partial lines leave the write-combining
//! buffers as slow partial writes. Outputs are often not 64-byte aligned
//! (glibc aligns large allocations to 16 bytes), so a vector of results
//! usually straddles two lines. [`StreamWriter`] assembles lines: it rotates
//! each vector so that its lanes sit at their offsets within the lines, and
//! merges the two parts into lines it holds (in L1, not in the output) until
//! a line is whole, which then goes out with one non-temporal store. The
//! line a vector begins is completed by the next vector of a run; the line
//! where a run ends waits in the slot its address maps to ([`slot_of`]), so
//! the rows of a register tile, written tile after tile, each complete their
//! lines. A line given up before it is whole (another line maps to its slot,
//! or the task ends) is written normally. Any alignment that is a multiple of 4 bytes
//! streams.

use crate::cpu::SyncPtr;

/// L2 per core assumed where the machine does not say (sysfs unreadable).
const L2_UNKNOWN: u64 = 1 << 20;

/// How a kernel's results reach its outputs, for [`pays`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Results {
    /// Final as they are computed (no PW or PS dimension: maps and
    /// stencils); `aligned`: every output access's vector runs start on
    /// lines ([`starts_lines`]).
    Direct { aligned: bool },
    /// Combined over PW tiles, stored once after the reduction.
    Accumulated,
}

/// Whether a call whose outputs take `out_bytes` streams its `results` (a
/// plan with `stream`): only where they are larger than the L2 caches of
/// all cores together, so that they leave the private caches before anyone
/// reads them again anyway (jacobi3d's and ccsdt's 64 MiB). A smaller
/// result, e.g. one step of a stencil iterated on a small grid, stays in
/// the caches for its next reader. Measured on the 2-core AMD EPYC (Zen 5)
/// at 64 MiB, streamed against written:
/// - direct results only where each vector run fills whole lines (outputs
///   and rows aligned to 64 bytes, [`starts_lines`]): jacobi3d, AVX-512:
///   2.7-2.8 ms against 3.4-3.5; AVX2: 4.0 against 4.8-4.9 (each pair one
///   executable's). At another alignment the writer assembles
///   every line from two vectors, which costs more than the bandwidth it
///   saves (AVX-512: 5.0-5.1 against 3.4-3.5; AVX2: 5.0-5.2 against
///   4.7-5.0);
/// - accumulated results only with AVX-512, whose vector is a line, at any
///   alignment (ccsdt: 3.6 ms aligned, 4.1 at 16 bytes, 4.9 written); with
///   AVX2, aligned or not, the per-vector choice and the two-vector lines
///   cost more (ccsdt 5.6-5.7 against 3.6).
///
/// The environment variable `MDH_STREAM=always` (or `never`) overrides
/// these rules: the test command streams at the tests' small sizes with it.
pub fn pays(out_bytes: usize, results: Results) -> bool {
    let out_bytes = out_bytes.max(CALL_OUT_BYTES.get());
    static POLICY: std::sync::OnceLock<Option<bool>> = std::sync::OnceLock::new();
    let policy = POLICY.get_or_init(|| match std::env::var("MDH_STREAM").as_deref() {
        Ok("always") => Some(true),
        Ok("never") => Some(false),
        _ => None,
    });
    policy.unwrap_or_else(|| {
        let m = &crate::machine::host().machine;
        let private = m.l2.unwrap_or(L2_UNKNOWN).saturating_mul(m.cores as u64);
        let suits = match results {
            Results::Direct { aligned } => aligned,
            Results::Accumulated => m.isa == crate::machine::Isa::Avx512,
        };
        suits && out_bytes as u64 > private
    })
}

thread_local! {
    /// The outputs of the whole call a kernel's call is part of
    /// ([`within_call`]), in bytes; 0 outside one.
    static CALL_OUT_BYTES: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// Runs `f` as part of a call whose outputs take `out_bytes`: the kernels
/// `f` calls on this thread decide [`pays`] by that size rather than by
/// their own outputs. A fused row tile's last stage (softmax's and layer
/// norm's `y`) writes a few rows of an output that outgrows the caches: it
/// streams them as the unfused stage would (layer norm 4096² on the Zen 3
/// EPYC: 5.7-6.6 ms against 7.6-9.2 written).
pub fn within_call<R>(out_bytes: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            CALL_OUT_BYTES.set(self.0);
        }
    }
    let _restore = Restore(CALL_OUT_BYTES.replace(out_bytes));
    f()
}

/// Whether the vector runs of an output access start on cache lines: its
/// buffer (at `ptr`, of `elem`-byte elements) starts on one, and the
/// access's offset and every stride but the contiguous one (±1) are whole
/// lines. Only then do a kernel's direct results fill whole lines vector by
/// vector ([`Results::Direct`]): jacobi3d at 250³, whose rows are 1000
/// bytes, ran 8.1-8.3 ms streamed against 3.8 written into an aligned
/// output (2-core AMD EPYC, AVX-512); at 248³ (992-byte rows) 5.8 against
/// 3.5-4.4.
pub fn starts_lines(ptr: usize, elem: usize, access: &mdh_rt::desc::Linear) -> bool {
    let whole = |x: isize| x.unsigned_abs().saturating_mul(elem).is_multiple_of(64);
    ptr.is_multiple_of(64)
        && whole(access.base)
        && access
            .coefs
            .iter()
            .all(|&c| c.unsigned_abs() == 1 || whole(c))
}

/// Lines a [`StreamWriter`]'s table holds. A prime, so that the lines where
/// rows at a power-of-two stride end map to distinct slots (`jacobi3d`'s
/// 2 × 6 rows, 16 and 4096 lines apart, take 12 of them).
const SLOTS: usize = 31;

/// The slot of the line at `at`. Direct-mapped: finding a line costs no
/// search, and a write depends only on the earlier write to the same line,
/// not on every write before it.
#[inline(always)]
fn slot_of(at: usize) -> usize {
    (at / 64) % SLOTS
}

/// Writes one task's final results of one output access, streaming whole
/// lines (see the module documentation). Dropping it writes the line parts
/// it still holds and fences: the task's results are then in memory,
/// ordered before whatever hands them to another thread.
pub struct StreamWriter<T> {
    ptr: SyncPtr<T>,
    /// The address of the line each slot holds parts of.
    at: [usize; SLOTS],
    /// Per slot, which 4-byte lanes of its line it holds (results not yet
    /// in memory, newer than memory there); 0: none.
    held: [u16; SLOTS],
    lines: [Line; SLOTS],
    /// The line the last vector written began (its address, the lanes held,
    /// the lanes), which the next one usually completes: a run of vectors
    /// then costs no table access, and this stays in registers.
    last_at: usize,
    last_held: u16,
    last: Line,
    /// The instruction set `last` was assembled with (to complete it when
    /// the writer is dropped).
    last_isa: u8,
    /// Lines streamed (what the tests check the assembly by).
    #[cfg(test)]
    streamed: usize,
}

/// One cache line of results, aligned like one.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u32; 16]);

/// The vector operations a [`StreamWriter`] assembles lines with, for one
/// vector width. A line is held in a `Reg` (one 64-byte register, or two
/// 32-byte halves); a vector of results is rotated into a *line image*: a
/// `Reg` whose lane `j` holds the result that belongs at lane `j` of
/// whichever of the two lines the vector straddles it lands in.
#[cfg(target_arch = "x86_64")]
trait LineOps {
    type Reg: Copy;
    /// The instruction set (`crate::simd`'s constants).
    const ISA: u8;
    /// The vector's 4-byte lanes as a mask of line lanes.
    const LANES: u32;
    /// The line image of the vector at `v` whose first lane goes to lane `s`
    /// of its first line.
    ///
    /// # Safety
    /// The instruction set is enabled; `v` points to the vector.
    unsafe fn image(v: *const u8, s: u32) -> Self::Reg;
    /// # Safety
    /// The instruction set is enabled.
    unsafe fn get(line: &Line) -> Self::Reg;
    /// # Safety
    /// The instruction set is enabled.
    unsafe fn set(line: &mut Line, x: Self::Reg);
    /// Lanes `mask` of `b`, the others of `a`.
    ///
    /// # Safety
    /// The instruction set is enabled.
    unsafe fn blend(a: Self::Reg, b: Self::Reg, mask: u16) -> Self::Reg;
    /// Streams `x` to the 64-byte aligned line at `at`.
    ///
    /// # Safety
    /// The instruction set is enabled; the line is the caller's elements.
    unsafe fn stream(at: *mut u8, x: Self::Reg);
}

/// Lines of 64-byte AVX-512 vectors: one register each.
#[cfg(target_arch = "x86_64")]
struct Avx512Lines;

// SAFETY: (of every method) AVX-512 is enabled (the trait's contract);
// `Line` is 64 bytes, 64-byte aligned.
#[cfg(target_arch = "x86_64")]
impl LineOps for Avx512Lines {
    type Reg = core::arch::x86_64::__m512i;
    const ISA: u8 = crate::simd::AVX512;
    const LANES: u32 = 0xffff;

    #[inline(always)]
    unsafe fn image(v: *const u8, s: u32) -> Self::Reg {
        use core::arch::x86_64::*;
        // Lane `l` of the vector goes to lane `(l + s) % 16`.
        // SAFETY: AVX-512 is enabled and `v` points to a 64-byte vector
        // (the trait's contract); the load is unaligned.
        unsafe {
            let from = _mm512_and_si512(
                _mm512_sub_epi32(
                    _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                    _mm512_set1_epi32(s as i32),
                ),
                _mm512_set1_epi32(15),
            );
            _mm512_permutexvar_epi32(from, _mm512_loadu_si512(v as *const _))
        }
    }

    #[inline(always)]
    unsafe fn get(line: &Line) -> Self::Reg {
        // SAFETY: AVX-512 is enabled; `Line` is 64 bytes, 64-byte aligned.
        unsafe { core::arch::x86_64::_mm512_load_si512(line.0.as_ptr() as *const _) }
    }

    #[inline(always)]
    unsafe fn set(line: &mut Line, x: Self::Reg) {
        // SAFETY: AVX-512 is enabled; `Line` is 64 bytes, 64-byte aligned.
        unsafe { core::arch::x86_64::_mm512_store_si512(line.0.as_mut_ptr() as *mut _, x) }
    }

    #[inline(always)]
    unsafe fn blend(a: Self::Reg, b: Self::Reg, mask: u16) -> Self::Reg {
        // SAFETY: AVX-512 is enabled (a register operation).
        unsafe { core::arch::x86_64::_mm512_mask_blend_epi32(mask, a, b) }
    }

    #[inline(always)]
    unsafe fn stream(at: *mut u8, x: Self::Reg) {
        // SAFETY: AVX-512 is enabled; `at` is a 64-byte aligned line of the
        // caller's elements (the trait's contract).
        unsafe { core::arch::x86_64::_mm512_stream_si512(at as *mut _, x) }
    }
}

/// Lines of 32-byte AVX2 vectors: two halves each, streamed back to back
/// (which fills the line's write-combining buffer at once, as one 64-byte
/// store would).
#[cfg(target_arch = "x86_64")]
struct Avx2Lines;

// SAFETY: (of every method) AVX2 is enabled (the trait's contract); `Line`
// is 64 bytes, 64-byte aligned, so both halves are 32-byte aligned.
#[cfg(target_arch = "x86_64")]
impl LineOps for Avx2Lines {
    type Reg = [core::arch::x86_64::__m256i; 2];
    const ISA: u8 = crate::simd::AVX2;
    const LANES: u32 = 0xff;

    #[inline(always)]
    unsafe fn image(v: *const u8, s: u32) -> Self::Reg {
        use core::arch::x86_64::*;
        // Lane `l` of the vector goes to lane `(l + s) % 8` of a half: the
        // same rotation serves the half the vector begins in and the next.
        // SAFETY: AVX2 is enabled and `v` points to a 32-byte vector (the
        // trait's contract); the load is unaligned.
        unsafe {
            let from = _mm256_and_si256(
                _mm256_sub_epi32(
                    _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                    _mm256_set1_epi32(s as i32),
                ),
                _mm256_set1_epi32(7),
            );
            let r = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(v as *const _), from);
            [r, r]
        }
    }

    #[inline(always)]
    unsafe fn get(line: &Line) -> Self::Reg {
        use core::arch::x86_64::*;
        let p = line.0.as_ptr() as *const __m256i;
        // SAFETY: AVX2 is enabled; `Line` is 64 bytes, 64-byte aligned: two
        // 32-byte aligned halves.
        unsafe { [_mm256_load_si256(p), _mm256_load_si256(p.add(1))] }
    }

    #[inline(always)]
    unsafe fn set(line: &mut Line, x: Self::Reg) {
        use core::arch::x86_64::*;
        let p = line.0.as_mut_ptr() as *mut __m256i;
        // SAFETY: AVX2 is enabled; `Line` is 64 bytes, 64-byte aligned: two
        // 32-byte aligned halves.
        unsafe {
            _mm256_store_si256(p, x[0]);
            _mm256_store_si256(p.add(1), x[1]);
        }
    }

    #[inline(always)]
    unsafe fn blend(a: Self::Reg, b: Self::Reg, mask: u16) -> Self::Reg {
        use core::arch::x86_64::*;
        // SAFETY: AVX2 is enabled (register operations).
        unsafe {
            let m = _mm256_set1_epi32(mask as i32);
            let pick = |bits: __m256i| _mm256_cmpeq_epi32(_mm256_and_si256(m, bits), bits);
            let lo = pick(_mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128));
            let hi = pick(_mm256_setr_epi32(
                1 << 8,
                1 << 9,
                1 << 10,
                1 << 11,
                1 << 12,
                1 << 13,
                1 << 14,
                1 << 15,
            ));
            [
                _mm256_blendv_epi8(a[0], b[0], lo),
                _mm256_blendv_epi8(a[1], b[1], hi),
            ]
        }
    }

    #[inline(always)]
    unsafe fn stream(at: *mut u8, x: Self::Reg) {
        use core::arch::x86_64::*;
        // SAFETY: AVX2 is enabled; `at` is a 64-byte aligned line of the
        // caller's elements (the trait's contract): two aligned halves.
        unsafe {
            _mm256_stream_si256(at as *mut _, x[0]);
            _mm256_stream_si256(at.add(32) as *mut _, x[1]);
        }
    }
}

impl<T> StreamWriter<T> {
    #[inline(always)]
    pub fn new(ptr: SyncPtr<T>) -> Self {
        StreamWriter {
            ptr,
            at: [0; SLOTS],
            held: [0; SLOTS],
            lines: [Line([0; 16]); SLOTS],
            last_at: 0,
            last_held: 0,
            last: Line([0; 16]),
            last_isa: crate::simd::BASELINE,
            #[cfg(test)]
            streamed: 0,
        }
    }

    /// Writes `v` to elements `i..i + N`. A 64-byte vector (with AVX-512 or
    /// AVX2) or a 32-byte one (with AVX2) goes past the caches in whole
    /// lines at any 4-byte alignment (module documentation); everything
    /// else is a plain store.
    ///
    /// # Safety
    /// As for [`SyncPtr::write_lanes`]; no element is written twice through
    /// one writer (final results: a line's parts never overlap); `ISA` is
    /// the instruction set of the `#[target_feature]` function this is
    /// inlined into.
    #[inline(always)]
    pub unsafe fn write<const ISA: u8, const N: usize>(&mut self, i: usize, v: [T; N])
    where
        T: Copy,
    {
        #[cfg(target_arch = "x86_64")]
        {
            let bytes = core::mem::size_of::<[T; N]>();
            let dst = self.ptr.as_ptr().wrapping_add(i) as usize;
            let v = v.as_ptr() as *const u8;
            if ISA == crate::simd::AVX512 && bytes == 64 && dst.is_multiple_of(4) {
                // SAFETY: the instruction set is enabled (`ISA`); `v` is a
                // vector of that width; its lanes are the caller's
                // elements from `dst`.
                return unsafe { self.assemble::<Avx512Lines>(dst, v) };
            }
            // A 64-byte vector with AVX2 is two registers: on a line, the
            // line as it is (its halves back to back); else two halves,
            // each assembled. Assembling the halves of aligned lines cost
            // jacobi3d 256³ on the Zen 3 EPYC 11-14 ms against 7 written.
            if ISA >= crate::simd::AVX2 && bytes == 64 && dst.is_multiple_of(64) {
                use core::arch::x86_64::{__m256i, _mm256_loadu_si256};
                let v = v as *const __m256i;
                // SAFETY: AVX2 is enabled (`ISA`); `v` is 64 bytes (two
                // unaligned loads); the line at `dst` is the caller's
                // elements, none held (each element is written once).
                return unsafe {
                    self.stream::<Avx2Lines>(
                        dst,
                        [_mm256_loadu_si256(v), _mm256_loadu_si256(v.add(1))],
                    )
                };
            }
            if ISA >= crate::simd::AVX2 && (bytes == 32 || bytes == 64) && dst.is_multiple_of(4) {
                for h in (0..bytes).step_by(32) {
                    // SAFETY: as above, for each 32-byte half of `v`.
                    unsafe { self.assemble::<Avx2Lines>(dst + h, v.wrapping_add(h)) };
                }
                return;
            }
        }
        // SAFETY: the caller's guarantee. Lines held for other writes hold
        // none of these elements (each element is written once).
        unsafe { self.ptr.write_lanes(i, v) }
    }

    /// Puts the vector at `v`, for the elements from address `dst`, into
    /// the lines it straddles: lanes that complete a line go out with it,
    /// the others wait in `last` or the table.
    ///
    /// # Safety
    /// `L`'s instruction set is enabled; `v` is one of its vectors, the
    /// caller's elements from `dst` (4-byte aligned), none written before.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn assemble<L: LineOps>(&mut self, dst: usize, v: *const u8) {
        let off = dst % 64;
        let (head, s) = (dst - off, (off / 4) as u32);
        // Lanes of the line at `head` (low half) and of the next (high).
        let lanes = L::LANES << s;
        let (here, next) = (lanes as u16, (lanes >> 16) as u16);
        // SAFETY: (of the block) the instruction set is enabled; every
        // line streamed is whole, all of it the caller's elements; held
        // lanes are the caller's elements.
        unsafe {
            let r = L::image(v, s);
            if here == 0xffff {
                // A whole line (no line holds any of it).
                self.stream::<L>(head, r);
                return;
            }
            // The part in the line at `head` usually continues the line the
            // vector before left off (`last`); else that line goes to the
            // table and this one takes the parts the table holds of it.
            let (line, held) = if self.last_held != 0 && self.last_at == head {
                (L::blend(L::get(&self.last), r, here), self.last_held | here)
            } else {
                if self.last_held != 0 {
                    self.merge::<L>(self.last_at, L::get(&self.last), self.last_held);
                }
                self.take::<L>(head, r, here)
            };
            if next == 0 {
                // The vector ends inside this line (a 32-byte vector): the
                // next one of a run continues it.
                if held == 0xffff {
                    self.stream::<L>(head, line);
                    self.last_held = 0;
                } else {
                    L::set(&mut self.last, line);
                    (self.last_at, self.last_held, self.last_isa) = (head, held, L::ISA);
                }
            } else {
                if held == 0xffff {
                    self.stream::<L>(head, line);
                } else {
                    self.merge::<L>(head, line, held);
                }
                L::set(&mut self.last, r);
                (self.last_at, self.last_held, self.last_isa) = (head + 64, next, L::ISA);
            }
        }
    }

    /// Streams the whole line `r` to the line at `at`.
    ///
    /// # Safety
    /// `L`'s instruction set is enabled; the line is the caller's elements.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn stream<L: LineOps>(&mut self, at: usize, r: L::Reg) {
        // SAFETY: the caller's.
        unsafe { L::stream(self.line_ptr(at), r) };
        #[cfg(test)]
        {
            self.streamed += 1;
        }
    }

    /// `r` with the lanes the table holds of the line at `at` merged in
    /// (which the table then no longer holds), and the lanes held now.
    ///
    /// # Safety
    /// `L`'s instruction set is enabled.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn take<L: LineOps>(&mut self, at: usize, r: L::Reg, lanes: u16) -> (L::Reg, u16) {
        let k = slot_of(at);
        if self.at[k] == at && self.held[k] != 0 {
            let held = self.held[k] | lanes;
            self.held[k] = 0;
            // SAFETY: the caller's.
            return (unsafe { L::blend(L::get(&self.lines[k]), r, lanes) }, held);
        }
        (r, lanes)
    }

    /// Merges lanes `lanes` of `r` into the line at `at`: streams the line
    /// once all its lanes are there, else holds them (giving up the line
    /// its slot held before, if another).
    ///
    /// # Safety
    /// `L`'s instruction set is enabled; the lanes are the caller's
    /// elements, none of them held already.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn merge<L: LineOps>(&mut self, at: usize, r: L::Reg, lanes: u16) {
        // SAFETY: the caller's: the instruction set is enabled, the lanes
        // are the caller's elements, none held already.
        let (r, held) = unsafe { self.take::<L>(at, r, lanes) };
        let k = slot_of(at);
        // SAFETY: (of the block) the caller's; a whole line is all the
        // caller's elements; a line given up holds the caller's elements.
        unsafe {
            if held == 0xffff {
                self.stream::<L>(at, r);
                return;
            }
            self.give_up(k);
            L::set(&mut self.lines[k], r);
        }
        (self.at[k], self.held[k]) = (at, held);
    }
}

impl<T> StreamWriter<T> {
    /// A pointer to the line at address `at`, derived from the output's.
    #[inline(always)]
    fn line_ptr(&self, at: usize) -> *mut u8 {
        let base = self.ptr.as_ptr() as *mut u8;
        base.wrapping_add(at.wrapping_sub(base as usize))
    }

    /// Writes lanes `held` of `line` to the line at `at`: the parts of a
    /// line given up before it was whole (rare: plain stores suffice).
    ///
    /// # Safety
    /// Those lanes at `at` are the caller's elements.
    #[inline(always)]
    unsafe fn write_held(&self, line: &Line, at: usize, held: u16) {
        let p = self.line_ptr(at) as *mut u32;
        for (l, &x) in line.0.iter().enumerate() {
            if held >> l & 1 != 0 {
                // SAFETY: the caller's: lane `l` is one of its elements.
                unsafe { p.wrapping_add(l).write(x) }
            }
        }
    }

    /// Writes the lanes slot `k` holds (normally: not a whole line), if any,
    /// and frees it.
    ///
    /// # Safety
    /// The held lanes are results `write` was given (the caller's elements).
    #[inline(always)]
    unsafe fn give_up(&mut self, k: usize) {
        if self.held[k] != 0 {
            // SAFETY: the caller's.
            unsafe { self.write_held(&self.lines[k], self.at[k], self.held[k]) };
            self.held[k] = 0;
        }
    }
}

/// Merges the writer's `last` line into its table (the table may hold the
/// rest of it: a run written downwards ends there).
///
/// # Safety
/// The CPU has AVX-512 (`last` was assembled with it).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn retire_last_avx512<T>(w: &mut StreamWriter<T>) {
    // SAFETY: AVX-512 is enabled; `last` holds the caller's elements.
    unsafe { w.merge::<Avx512Lines>(w.last_at, Avx512Lines::get(&w.last), w.last_held) };
    w.last_held = 0;
}

/// As [`retire_last_avx512`], for a `last` assembled with AVX2.
///
/// # Safety
/// The CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn retire_last_avx2<T>(w: &mut StreamWriter<T>) {
    // SAFETY: AVX2 is enabled; `last` holds the caller's elements.
    unsafe { w.merge::<Avx2Lines>(w.last_at, Avx2Lines::get(&w.last), w.last_held) };
    w.last_held = 0;
}

impl<T> Drop for StreamWriter<T> {
    #[inline(always)]
    fn drop(&mut self) {
        self.retire();
    }
}

impl<T> StreamWriter<T> {
    /// Writes what the writer holds (streaming the lines that are whole)
    /// and fences: its results are then in memory, ordered before whatever
    /// hands them to another thread. Holds nothing afterwards.
    #[inline(always)]
    fn retire(&mut self) {
        #[cfg(target_arch = "x86_64")]
        match self.last_isa {
            _ if self.last_held == 0 => {}
            // SAFETY: AVX-512 assembled `last`, so the CPU has it.
            crate::simd::AVX512 => unsafe { retire_last_avx512(self) },
            // SAFETY: AVX2 assembled `last`, so the CPU has it.
            crate::simd::AVX2 => unsafe { retire_last_avx2(self) },
            _ => {}
        }
        if self.last_held != 0 {
            // SAFETY: held lanes are results `write` was given.
            unsafe { self.write_held(&self.last, self.last_at, self.last_held) };
        }
        for k in 0..SLOTS {
            // SAFETY: as above.
            unsafe { self.give_up(k) };
        }
        fence();
    }
}

/// Orders the non-temporal stores before the plain stores that follow (as
/// the release that hands a task's results to the caller): they are weakly
/// ordered otherwise.
#[inline(always)]
fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` is SSE, part of every x86-64.
    unsafe {
        core::arch::x86_64::_mm_sfence()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::{AVX2, AVX512, BASELINE};

    #[test]
    fn results_stream_where_they_outgrow_the_private_caches() {
        // Nothing fits no cache; an empty output fits any. Direct results
        // stream only into aligned outputs, accumulated ones only with
        // AVX-512.
        let avx512 = crate::machine::host().machine.isa == crate::machine::Isa::Avx512;
        let policy = match std::env::var("MDH_STREAM").as_deref() {
            Ok("always") => Some(true),
            Ok("never") => Some(false),
            _ => None,
        };
        let cases = [
            (Results::Accumulated, avx512),
            (Results::Direct { aligned: true }, true),
            (Results::Direct { aligned: false }, false),
        ];
        for (results, suits) in cases {
            let (empty, huge) = match policy {
                Some(p) => (p, p),
                None => (false, suits),
            };
            assert_eq!(
                (pays(0, results), pays(usize::MAX, results)),
                (empty, huge),
                "{results:?}"
            );
            // Part of a call whose outputs outgrow the caches (a fused row
            // tile), an empty output streams as the call's would, and only
            // inside the call.
            let within = within_call(usize::MAX, || pays(0, results));
            assert_eq!((within, pays(0, results)), (huge, empty), "{results:?}");
        }
    }

    #[test]
    fn vector_runs_start_on_lines_only_with_whole_line_strides() {
        let access = |base: isize, coefs: &[isize]| mdh_rt::desc::Linear {
            base,
            coefs: coefs.to_vec(),
        };
        // jacobi3d's output at 256³ (f32): planes and rows of whole lines.
        let rows_256 = access(0, &[65536, 256, 1]);
        assert!(starts_lines(4096, 4, &rows_256));
        // The buffer off a line, or rows of 250 floats (1000 bytes).
        assert!(!starts_lines(4096 + 16, 4, &rows_256));
        assert!(!starts_lines(4096, 4, &access(0, &[62500, 250, 1])));
        // An offset of a row, a reduced dimension (0), rows in reverse, f64.
        assert!(starts_lines(0, 4, &access(256, &[256, 0, 1])));
        assert!(!starts_lines(0, 4, &access(8, &[256, 1])));
        assert!(starts_lines(0, 4, &access(65280, &[-256, 1])));
        assert!(starts_lines(0, 8, &access(0, &[8, 1])));
        assert!(!starts_lines(0, 8, &access(0, &[4, 1])));
    }

    /// Writes `vs[j]` at element `at[j]`, in order, through one writer.
    #[inline(always)]
    unsafe fn write_all<const ISA: u8, T: Copy, const N: usize>(
        p: SyncPtr<T>,
        at: &[usize],
        vs: &[[T; N]],
    ) -> usize {
        let mut w = StreamWriter::new(p);
        for (&i, &v) in at.iter().zip(vs) {
            // SAFETY: the caller's.
            unsafe { w.write::<ISA, N>(i, v) };
        }
        w.retire();
        w.streamed
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn write_avx512<T: Copy, const N: usize>(
        p: SyncPtr<T>,
        at: &[usize],
        vs: &[[T; N]],
    ) -> usize {
        // SAFETY: the caller's; AVX-512 is enabled here.
        unsafe { write_all::<AVX512, T, N>(p, at, vs) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn write_avx2<T: Copy, const N: usize>(
        p: SyncPtr<T>,
        at: &[usize],
        vs: &[[T; N]],
    ) -> usize {
        // SAFETY: the caller's; AVX2 is enabled here.
        unsafe { write_all::<AVX2, T, N>(p, at, vs) }
    }

    /// The instruction sets this machine runs.
    fn isas() -> Vec<u8> {
        let mut isas = vec![BASELINE];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                isas.push(AVX2);
            }
            if std::is_x86_feature_detected!("avx512f") {
                isas.push(AVX512);
            }
        }
        isas
    }

    /// Write orders of `k` vectors of `n` lanes: one run up, one down, runs
    /// of two with gaps, one element apart (each vector at another offset in
    /// its line), every other vector (more partial lines than a writer
    /// holds), and shuffled (vectors never overlap: each element is one
    /// final result).
    fn orders(k: usize, n: usize, seed: u64) -> Vec<Vec<usize>> {
        let up: Vec<usize> = (0..k).map(|j| j * n).collect();
        let down: Vec<usize> = up.iter().rev().copied().collect();
        let gaps: Vec<usize> = (0..k).map(|j| (j / 2) * 3 * n + (j % 2) * n).collect();
        let spaced: Vec<usize> = (0..k).map(|j| j * (n + 1)).collect();
        let sparse: Vec<usize> = (0..k).map(|j| 2 * j * n).collect();
        let mut shuffled = up.clone();
        let mut x = seed | 1;
        for j in (1..k).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            shuffled.swap(j, (x % (j as u64 + 1)) as usize);
        }
        vec![up, down, gaps, spaced, sparse, shuffled]
    }

    /// Vectors per write order: the sparse order leaves 2 · 40 partial
    /// lines, more than a writer holds.
    const K: usize = 40;

    /// Every write order at every element offset from a 64-byte line lands
    /// exactly its values, and nothing else, with every instruction set.
    fn lands_everywhere<T, const N: usize>(value: impl Fn(usize) -> T)
    where
        T: Copy + PartialEq + core::fmt::Debug + Default,
    {
        let lanes_per_line = 64 / core::mem::size_of::<T>();
        for isa in isas() {
            for skew in 0..lanes_per_line {
                for (o, order) in orders(K, N, skew as u64 + 7).into_iter().enumerate() {
                    let len = 2 * K * N + 2 * lanes_per_line;
                    let mut buf = vec![T::default(); len + lanes_per_line];
                    let base = buf.as_ptr().align_offset(64) + skew;
                    let at: Vec<usize> = order.iter().map(|&e| base + e).collect();
                    let vs: Vec<[T; N]> = order
                        .iter()
                        .map(|&e| core::array::from_fn(|l| value(e + l)))
                        .collect();
                    let p = SyncPtr::new(&mut buf);
                    // SAFETY: every vector's elements lie inside `buf`
                    // (`base + 2 * (K - 1) * N + N < len`), written by this
                    // thread only; `isas` ran the detection.
                    let streamed = unsafe {
                        match isa {
                            #[cfg(target_arch = "x86_64")]
                            AVX512 => write_avx512(p, &at, &vs),
                            #[cfg(target_arch = "x86_64")]
                            AVX2 => write_avx2(p, &at, &vs),
                            _ => write_all::<BASELINE, T, N>(p, &at, &vs),
                        }
                    };
                    let mut want = vec![T::default(); buf.len()];
                    for &e in &order {
                        for l in 0..N {
                            want[base + e + l] = value(e + l);
                        }
                    }
                    assert_eq!(buf, want, "ISA {isa}, skew {skew}, order {o}");
                    // A run up or down streams every line it covers whole
                    // (where the writer streams at all: 4-byte aligned
                    // vectors of its widths).
                    let bytes = core::mem::size_of::<[T; N]>();
                    let assembles = (skew * core::mem::size_of::<T>()).is_multiple_of(4)
                        && isa >= AVX2
                        && (bytes == 32 || bytes == 64);
                    if assembles && o < 2 {
                        let (first, end) = (
                            skew * core::mem::size_of::<T>(),
                            (skew + K * N) * core::mem::size_of::<T>(),
                        );
                        let whole = end / 64 - first.div_ceil(64);
                        assert_eq!(
                            streamed, whole,
                            "ISA {isa}, skew {skew}, order {o}: lines streamed"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn streamed_vectors_land_at_every_alignment_in_every_order() {
        lands_everywhere::<f32, 16>(|e| e as f32 + 1.0);
        lands_everywhere::<f32, 8>(|e| e as f32 + 1.0);
        lands_everywhere::<f64, 8>(|e| e as f64 + 0.5);
        lands_everywhere::<f64, 4>(|e| e as f64 + 0.5);
        lands_everywhere::<u8, 64>(|e| (e % 251) as u8 + 1);
        lands_everywhere::<u8, 32>(|e| (e % 251) as u8 + 1);
    }
}
