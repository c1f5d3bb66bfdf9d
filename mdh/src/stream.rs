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
}

/// One cache line of results, aligned like one.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u32; 16]);

#[cfg(target_arch = "x86_64")]
impl Line {
    /// # Safety
    /// AVX-512 is enabled.
    #[inline(always)]
    unsafe fn get(&self) -> core::arch::x86_64::__m512i {
        // SAFETY: AVX-512 is enabled; `Line` is 64 bytes, 64-byte aligned.
        unsafe { core::arch::x86_64::_mm512_load_si512(self.0.as_ptr() as *const _) }
    }

    /// # Safety
    /// AVX-512 is enabled.
    #[inline(always)]
    unsafe fn set(&mut self, x: core::arch::x86_64::__m512i) {
        // SAFETY: as in `get`.
        unsafe { core::arch::x86_64::_mm512_store_si512(self.0.as_mut_ptr() as *mut _, x) }
    }
}

impl<T: Copy> StreamWriter<T> {
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
        }
    }

    /// Writes `v` to elements `i..i + N`. With AVX-512 and a 64-byte vector
    /// of 4- or 8-byte lanes, whole lines go past the caches at any
    /// alignment (module documentation); an AVX2 vector goes past them where
    /// it is aligned to its 32 bytes; everything else is a plain store.
    ///
    /// # Safety
    /// As for [`SyncPtr::write_lanes`]; no element is written twice through
    /// one writer (final results: a line's parts never overlap); `ISA` is
    /// the instruction set of the `#[target_feature]` function this is
    /// inlined into.
    #[inline(always)]
    pub unsafe fn write<const ISA: u8, const N: usize>(&mut self, i: usize, v: [T; N]) {
        let bytes = core::mem::size_of::<[T; N]>();
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::*;
            let dst = self.ptr.as_ptr().wrapping_add(i) as usize;
            if ISA == crate::simd::AVX512 && bytes == 64 && dst.is_multiple_of(4) {
                // SAFETY (of the block): AVX-512 is enabled (`ISA`); `v` is
                // 64 bytes; the lanes merged into held lines are the
                // caller's elements `i..i + N`.
                unsafe {
                    let x = _mm512_loadu_si512(v.as_ptr() as *const _);
                    let off = dst % 64;
                    if off == 0 {
                        // A whole line: `v` is newer than any part held.
                        let k = slot_of(dst);
                        if self.at[k] == dst {
                            self.held[k] = 0;
                        }
                        if self.last_at == dst {
                            self.last_held = 0;
                        }
                        _mm512_stream_si512(dst as *mut _, x);
                        return;
                    }
                    // Lane `l` of `v` (4-byte lanes) goes to lane `(l + s)
                    // % 16` of `r`: lanes `s..` of `r` end the line at
                    // `head`, lanes `..s` begin the next one.
                    let (head, s) = (dst - off, (off / 4) as u32);
                    let from = _mm512_and_si512(
                        _mm512_sub_epi32(
                            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                            _mm512_set1_epi32(s as i32),
                        ),
                        _mm512_set1_epi32(15),
                    );
                    let r = _mm512_permutexvar_epi32(from, x);
                    let ends = (0xffff_u32 << s) as u16;
                    // The head part usually completes the line the vector
                    // before began (`last`); else that line waits in the
                    // table and the head part goes there.
                    if self.last_held != 0 && self.last_at == head {
                        let merged = _mm512_mask_blend_epi32(ends, self.last.get(), r);
                        let held = self.last_held | ends;
                        if held == 0xffff {
                            _mm512_stream_si512(head as *mut _, merged);
                        } else {
                            self.merge(head, merged, held);
                        }
                    } else {
                        if self.last_held != 0 {
                            self.merge(self.last_at, self.last.get(), self.last_held);
                        }
                        self.merge(head, r, ends);
                    }
                    self.last.set(r);
                    (self.last_at, self.last_held) = (head + 64, !ends);
                }
                return;
            }
            if ISA >= crate::simd::AVX2 && bytes == 32 && dst.is_multiple_of(32) {
                // SAFETY: AVX2 is enabled (`ISA`); `dst` is 32-byte aligned
                // and its 32 bytes are the caller's elements. No line is
                // held: this write path is the only one for this `T`, `N`
                // and `ISA`.
                unsafe {
                    _mm256_stream_si256(dst as *mut _, _mm256_loadu_si256(v.as_ptr() as *const _))
                };
                return;
            }
        }
        // SAFETY: the caller's guarantee; no line is held (as above).
        unsafe { self.ptr.write_lanes(i, v) }
    }

    /// Merges lanes `lanes` of `r` into the line at `at`: streams the line
    /// once all its lanes are there, else holds them (giving up the line
    /// its slot held before, if another).
    ///
    /// # Safety
    /// AVX-512 is enabled; the lanes are the caller's elements, none of
    /// them held already.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn merge(&mut self, at: usize, r: core::arch::x86_64::__m512i, lanes: u16) {
        use core::arch::x86_64::*;
        let k = slot_of(at);
        // SAFETY (of the block): AVX-512 is enabled; the line at `at` is
        // 64-byte aligned and, once whole, all its lanes are the caller's
        // elements; a line given up holds the caller's elements too.
        unsafe {
            if self.at[k] == at && self.held[k] != 0 {
                let merged = _mm512_mask_blend_epi32(lanes, self.lines[k].get(), r);
                let held = self.held[k] | lanes;
                if held == 0xffff {
                    _mm512_stream_si512(at as *mut _, merged);
                    self.held[k] = 0;
                } else {
                    self.lines[k].set(merged);
                    self.held[k] = held;
                }
                return;
            }
            self.give_up(k);
            self.lines[k].set(r);
            (self.at[k], self.held[k]) = (at, lanes);
        }
    }
}

impl<T> StreamWriter<T> {
    /// Writes the lanes slot `k` holds (normally: not a whole line), if any,
    /// and frees it.
    ///
    /// # Safety
    /// The held lanes are results `write` was given (the caller's elements).
    #[inline(always)]
    unsafe fn give_up(&mut self, k: usize) {
        if self.held[k] == 0 {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: lines are held only after an AVX-512 `write`, so the CPU
        // has AVX-512; the held lanes are the caller's elements.
        unsafe {
            write_held(&self.lines[k], self.at[k] as *mut u32, self.held[k])
        };
        self.held[k] = 0;
    }
}

/// Writes lanes `held` of `line` to the line at `at`.
///
/// # Safety
/// The CPU has AVX-512; those lanes at `at` are the caller's elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn write_held(line: &Line, at: *mut u32, held: u16) {
    use core::arch::x86_64::*;
    // SAFETY: `line` is 64-byte aligned (`Line`); masked-off lanes are not
    // written and cannot fault; the others are the caller's elements.
    unsafe { _mm512_mask_storeu_epi32(at as *mut i32, held, line.get()) }
}

impl<T> Drop for StreamWriter<T> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if self.last_held != 0 {
            // SAFETY: as below, for the last line begun.
            unsafe { write_held(&self.last, self.last_at as *mut u32, self.last_held) };
        }
        for k in 0..SLOTS {
            // SAFETY: held lanes are results `write` was given.
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

    /// Writes `vs[j]` at element `at[j]`, in order, through one writer.
    #[inline(always)]
    unsafe fn write_all<const ISA: u8, T: Copy, const N: usize>(
        p: SyncPtr<T>,
        at: &[usize],
        vs: &[[T; N]],
    ) {
        let mut w = StreamWriter::new(p);
        for (&i, &v) in at.iter().zip(vs) {
            // SAFETY: the caller's.
            unsafe { w.write::<ISA, N>(i, v) };
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn write_avx512<T: Copy, const N: usize>(p: SyncPtr<T>, at: &[usize], vs: &[[T; N]]) {
        // SAFETY: the caller's; AVX-512 is enabled here.
        unsafe { write_all::<AVX512, T, N>(p, at, vs) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn write_avx2<T: Copy, const N: usize>(p: SyncPtr<T>, at: &[usize], vs: &[[T; N]]) {
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
                    unsafe {
                        match isa {
                            #[cfg(target_arch = "x86_64")]
                            AVX512 => write_avx512(p, &at, &vs),
                            #[cfg(target_arch = "x86_64")]
                            AVX2 => write_avx2(p, &at, &vs),
                            _ => write_all::<BASELINE, T, N>(p, &at, &vs),
                        }
                    }
                    let mut want = vec![T::default(); buf.len()];
                    for &e in &order {
                        for l in 0..N {
                            want[base + e + l] = value(e + l);
                        }
                    }
                    assert_eq!(buf, want, "ISA {isa}, skew {skew}, order {o}");
                }
            }
        }
    }

    #[test]
    fn streamed_vectors_land_at_every_alignment_in_every_order() {
        lands_everywhere::<f32, 16>(|e| e as f32 + 1.0);
        lands_everywhere::<f32, 8>(|e| e as f32 + 1.0);
        lands_everywhere::<f64, 8>(|e| e as f64 + 0.5);
        lands_everywhere::<u8, 64>(|e| (e % 251) as u8 + 1);
    }
}
