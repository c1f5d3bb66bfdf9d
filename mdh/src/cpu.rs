//! The parallel CPU driver shared by every generated kernel: the paper's
//! de-composition of the index space into parts run as rayon tasks, and the
//! re-composition of their results (concatenation for CC and PS dimensions,
//! the combine operator for PW dimensions, a parallel prefix-sum for PS).
//!
//! Generated code supplies three closures: `compute` folds the scalar function
//! over the reduced (PW) part of a region for each kept point of it, `combine`
//! applies the combine operators to two partial results, and `write` stores
//! results through the output views. Everything about parallelism lives here,
//! once.

use crate::parallel::{each, each_index, in_part, map};

use mdh_rt::{DimKind, Error};

/// A box of the index space: one half-open range per md_hom dimension.
pub type Region<const D: usize> = [(usize, usize); D];

/// Below this much work (index-space points of scalar code, see [`work`]) a
/// kernel runs as one task: splitting would cost more than it saves.
const SEQUENTIAL_POINTS: usize = 1 << 14;

/// The work of `points` index-space points in points of scalar code: a plan
/// whose register tiles run on `lanes` SIMD lanes does `lanes` points per
/// instruction and two such instructions a cycle (the two FMA ports of
/// AVX-512 and AVX2 cores), where scalar code does about one point a
/// cycle. (matmul 10×500×64, 3 µs of vector work on one core, ran 2–5 µs
/// split over the 2-core AMD EPYC's two threads, 3 µs as one task.)
fn work(points: usize, lanes: usize) -> usize {
    if lanes > 1 {
        points / (2 * lanes)
    } else {
        points
    }
}

/// Tasks per rayon thread, so that uneven parts still balance.
const TASKS_PER_THREAD: usize = 4;

/// A raw pointer that may cross threads. Generated kernels write outputs
/// through it; the writes of different tasks are to disjoint elements because
/// output views are injective over the kept dimensions (checked at compile
/// time), distinct accesses of one buffer are disjoint (checked in
/// `KernelDesc::bind`), and each kept point belongs to exactly one task.
#[derive(Clone, Copy, Debug)]
pub struct SyncPtr<T>(*mut T);

// SAFETY: see the type's documentation: users of the pointer only write
// disjoint, in-bounds elements from different threads.
unsafe impl<T: Send> Send for SyncPtr<T> {}
// SAFETY: as for `Send`: shared between threads, it is only used for
// disjoint, in-bounds elements.
unsafe impl<T: Send> Sync for SyncPtr<T> {}

impl<T> SyncPtr<T> {
    pub fn new(slice: &mut [T]) -> Self {
        SyncPtr(slice.as_mut_ptr())
    }

    pub(crate) fn as_ptr(&self) -> *mut T {
        self.0
    }

    /// Writes element `i`.
    ///
    /// # Safety
    /// `i` is in bounds of the slice the pointer came from, the slice outlives
    /// the write, and no other thread accesses element `i` concurrently.
    #[inline(always)]
    pub unsafe fn write(self, i: usize, v: T) {
        // SAFETY: the caller's guarantee: `i` is in bounds and no other
        // thread accesses element `i`.
        unsafe { self.0.add(i).write(v) }
    }

    /// Writes elements `i..i + N`.
    ///
    /// # Safety
    /// As for `write`, for every element of the range.
    #[inline(always)]
    pub unsafe fn write_lanes<const N: usize>(self, i: usize, v: [T; N]) {
        // SAFETY: the caller's guarantee, for every element of the range.
        unsafe { (self.0.add(i) as *mut [T; N]).write_unaligned(v) }
    }

    /// Writes the first `cnt` lanes of `v` to elements `i..i + cnt`: on
    /// AVX-512 one masked store per 64-byte chunk (an edge tile's vectors),
    /// else lane by lane.
    ///
    /// # Safety
    /// As for `write`, for every element of the range; `cnt <= N`; `ISA` is
    /// the instruction set of the `#[target_feature]` function this is
    /// inlined into.
    #[inline(always)]
    pub unsafe fn write_part<const ISA: u8, const N: usize>(self, i: usize, v: [T; N], cnt: usize)
    where
        T: Copy,
    {
        #[cfg(target_arch = "x86_64")]
        if ISA == crate::simd::AVX512 {
            use core::arch::x86_64::*;
            let bytes = core::mem::size_of::<T>();
            if let Some(chunks) = crate::simd::chunk_masks::<T, N>(cnt) {
                for (first, mask) in chunks {
                    // SAFETY: AVX-512 is enabled (`ISA`); the mask selects
                    // elements of `i + first ..` among the first `cnt`,
                    // inside the caller's range (masked-off elements are
                    // not written and cannot fault); `v` has a 64-byte
                    // chunk of lanes from `first` (`chunk_masks`).
                    unsafe {
                        let dst = self.0.wrapping_add(i + first) as *mut u8;
                        let x = _mm512_loadu_si512(v.as_ptr().add(first) as *const _);
                        if bytes == 4 {
                            _mm512_mask_storeu_epi32(dst as *mut i32, mask as __mmask16, x);
                        } else {
                            _mm512_mask_storeu_epi64(dst as *mut i64, mask as __mmask8, x);
                        }
                    }
                }
                return;
            }
        }
        for (l, x) in v.into_iter().enumerate().take(cnt) {
            // SAFETY: `l < cnt`: inside the caller's range.
            unsafe { self.0.add(i + l).write(x) }
        }
    }

    /// Elements `i..i + cnt` in the first `cnt` lanes, the last of them
    /// repeated in the others ([`crate::simd::V::load_part`]).
    ///
    /// # Safety
    /// As for `write`, for every element of the range, which is
    /// initialized; `1 <= cnt <= N`; `ISA` as for [`SyncPtr::write_part`].
    #[inline(always)]
    pub unsafe fn read_part<const ISA: u8, const N: usize>(self, i: usize, cnt: usize) -> [T; N]
    where
        T: crate::simd::Lane,
    {
        // SAFETY: the caller's guarantee: the `cnt` elements are in bounds,
        // initialized, and no other thread writes them meanwhile.
        unsafe {
            let s = core::slice::from_raw_parts(self.0.add(i) as *const T, cnt);
            crate::simd::V::<T, N>::load_part::<ISA>(s, 0, cnt).0
        }
    }

    /// Reads elements `i..i + N` (same contract as [`SyncPtr::write`]).
    ///
    /// # Safety
    /// As for `write`, for every element of the range; they are initialized.
    #[inline(always)]
    pub unsafe fn read_lanes<const N: usize>(self, i: usize) -> [T; N]
    where
        T: Copy,
    {
        // SAFETY: the caller's guarantee: the `N` elements are in bounds,
        // initialized, and no other thread writes them meanwhile.
        unsafe { (self.0.add(i) as *const [T; N]).read_unaligned() }
    }

    /// Reads element `i` (same contract as [`SyncPtr::write`]).
    ///
    /// # Safety
    /// As for `write`.
    #[inline(always)]
    pub unsafe fn read(self, i: usize) -> T
    where
        T: Copy,
    {
        // SAFETY: the caller's guarantee: `i` is in bounds, initialized, and
        // no other thread writes it meanwhile.
        unsafe { self.0.add(i).read() }
    }
}

/// A buffer that holds a packed tile of an input (the paper's memory
/// regions D3/D4): 64-byte aligned, grown on demand, reused across the
/// tiles and parts a thread runs (see [`PackedTile`]).
pub struct Pack<T> {
    blocks: Vec<Block64>,
    len: usize,
    _elems: core::marker::PhantomData<T>,
}

/// The unit of a [`Pack`]'s storage, for its alignment.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block64([u8; 64]);

impl<T: crate::simd::Lane> Pack<T> {
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Pack {
            blocks: Vec::new(),
            len: 0,
            _elems: core::marker::PhantomData,
        }
    }

    /// The buffer as `len` elements (their values are those of an earlier
    /// fill, or zero), to be filled.
    #[inline]
    pub fn resize(&mut self, len: usize) -> &mut [T] {
        let blocks = (len * core::mem::size_of::<T>()).div_ceil(64);
        if self.blocks.len() < blocks {
            self.blocks.resize(blocks, Block64([0; 64]));
        }
        self.len = len;
        // SAFETY: the blocks hold at least `len` elements' bytes, aligned to
        // 64 ≥ align_of::<T>(); every bit pattern written so far is a `T`
        // or zero bytes, and zero bytes are a valid value of every `Lane`
        // type (numbers and `bool`); the borrow of `self` guards the slice.
        unsafe { core::slice::from_raw_parts_mut(self.blocks.as_mut_ptr() as *mut T, len) }
    }

    /// The elements of the last [`Pack::resize`].
    #[inline(always)]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: as in `resize`, for the `len` elements it made valid.
        unsafe { core::slice::from_raw_parts(self.blocks.as_ptr() as *const T, self.len) }
    }
}

/// The packed tile of one input access that a thread keeps between the
/// parts of a call it runs, and its buffer between calls: parts that need
/// the same tile (a convolution's whole filter, packed for every row part)
/// pack it once per thread and call instead of once per part, and no part
/// allocates. `last` is the tile's range (`[lo, hi]` per layout dimension)
/// whose elements `buf` holds for call `call`.
pub struct PackedTile<T, const M: usize> {
    call: u64,
    pub last: [usize; M],
    pub buf: Pack<T>,
}

/// Where a thread parks its [`PackedTile`] of one access of one plan
/// (a `thread_local!` of the generated code).
pub type PackSlot<T, const M: usize> = core::cell::Cell<Option<Box<PackedTile<T, M>>>>;

impl<T: crate::simd::Lane, const M: usize> PackedTile<T, M> {
    /// The tile parked in `slot` for call `call`, emptied if it was packed for
    /// another call (whose inputs may differ), or a new one if none is parked
    /// (the first part on this thread, or a nested use of the same slot).
    pub fn resume(slot: &'static std::thread::LocalKey<PackSlot<T, M>>, call: u64) -> Box<Self> {
        let mut tile = slot.take().unwrap_or_else(|| {
            Box::new(PackedTile {
                call,
                last: [usize::MAX; M],
                buf: Pack::new(),
            })
        });
        if tile.call != call {
            tile.call = call;
            tile.last = [usize::MAX; M];
        }
        tile
    }

    /// Parks the tile for the thread's next part.
    pub fn park(self: Box<Self>, slot: &'static std::thread::LocalKey<PackSlot<T, M>>) {
        slot.set(Some(self));
    }
}

/// A number no other call of any kernel in this process has: what a
/// [`PackedTile`] was packed for.
pub fn next_call() -> u64 {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The partial results of a single-output kernel as plain elements.
#[inline(always)]
pub fn flat<T>(v: &mut [(T,)]) -> &mut [T] {
    const { assert!(core::mem::size_of::<(T,)>() == core::mem::size_of::<T>()) };
    const { assert!(core::mem::align_of::<(T,)>() == core::mem::align_of::<T>()) };
    // SAFETY: a 1-tuple of the same size and alignment as its only field has
    // that field at offset 0 (asserted above), so `[(T,)]` and `[T]` of the
    // same length have the same layout; the borrow is carried over.
    unsafe { core::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut T, v.len()) }
}

/// The instruction sets generated kernels are compiled for (a machine
/// description's class, hence defined with it).
pub use mdh_rt::machine::Isa;

/// The instruction set kernels run with: the best one of this CPU
/// (detected once), capped by the environment variable `MDH_ISA`
/// (`avx2` or `baseline`: runs the other code paths on a bigger machine,
/// e.g. to test them; it never enables what the CPU lacks).
pub fn isa() -> Isa {
    static ISA: std::sync::OnceLock<Isa> = std::sync::OnceLock::new();
    *ISA.get_or_init(|| {
        let cap = std::env::var("MDH_ISA").ok();
        match capped(detected(), cap.as_deref()) {
            Ok(isa) => isa,
            Err(e) => {
                eprintln!("mdh: {e}; ignored");
                detected()
            }
        }
    })
}

/// The best instruction set of this CPU.
fn detected() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            return Isa::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            return Isa::Avx2;
        }
    }
    Isa::Baseline
}

/// `detected`, capped by the value of `MDH_ISA` (if set).
fn capped(detected: Isa, cap: Option<&str>) -> Result<Isa, String> {
    let rank = |isa: Isa| match isa {
        Isa::Baseline => 0,
        Isa::Avx2 => 1,
        Isa::Avx512 => 2,
    };
    let cap = match cap {
        None | Some("") => return Ok(detected),
        Some(name) => Isa::from_name(name).ok_or_else(|| {
            format!(
                "MDH_ISA={:?} is not one of {}",
                name.to_ascii_lowercase(),
                Isa::names()
            )
        })?,
    };
    Ok(if rank(cap) < rank(detected) {
        cap
    } else {
        detected
    })
}

/// This CPU's model name (`/proc/cpuinfo`), or "" where unknown.
pub fn cpu_name() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_default()
    })
}

/// Splits `0..extent` into at most `parts` nearly equal, non-empty ranges
/// whose bounds are multiples of `align` (but the last), so that the
/// register tiles of a task are not cut by its neighbour's.
fn chunks(extent: usize, parts: usize, align: usize) -> Vec<(usize, usize)> {
    let align = align.max(1);
    let units = extent.div_ceil(align);
    let parts = parts.clamp(1, units.max(1));
    let bound = |j: usize| (units * j / parts * align).min(extent);
    (0..parts).map(|j| (bound(j), bound(j + 1))).collect()
}

/// How many parts each dimension in `dims` gets so that together they reach
/// about `target` parts, outer dimensions first, none below `align`
/// points.
fn parts_for(ext: &[usize], align: &[usize], dims: &[usize], mut target: usize) -> Vec<usize> {
    let mut parts = vec![1; ext.len()];
    for &d in dims {
        if target <= 1 {
            break;
        }
        let p = target.min(ext[d].div_ceil(align[d].max(1))).max(1);
        parts[d] = p;
        target = target.div_ceil(p);
    }
    parts
}

/// The parts per dimension of a plan that sets `cor` (all dimensions, kept
/// and reduced; 0 reads as 1), on a machine of `threads` threads. A plan
/// splits into as many tasks as the machine it was tuned on had cores (the
/// `*` entries of configs/ into 2: matmul 1024³ ran on 2 of a 16-core
/// Xeon's cores at 0.22× faer): where that is fewer than `threads`, the
/// dimensions the plan splits are cut further, kept dimensions first and
/// each no finer than `align` points, until there are about `threads`
/// tasks. The plan's choice of which dimensions to split stays; a plan of
/// one task (small work, tuned so) stays one task.
fn planned_parts(
    cor: &[usize],
    kinds: &[DimKind],
    ext: &[usize],
    align: &[usize],
    threads: usize,
) -> Vec<usize> {
    let mut parts: Vec<usize> = cor.iter().map(|&c| c.max(1)).collect();
    let tasks: usize = parts.iter().product();
    if tasks <= 1 || tasks >= threads {
        return parts;
    }
    let mut factor = threads.div_ceil(tasks);
    let split = |kept: bool| (0..parts.len()).filter(move |&d| kinds[d].is_kept() == kept);
    let dims: Vec<usize> = split(true)
        .chain(split(false))
        .filter(|&d| parts[d] > 1)
        .collect();
    for d in dims {
        if factor <= 1 {
            break;
        }
        let most = ext[d].div_ceil(align[d].max(1)).max(parts[d]);
        let p = (parts[d] * factor).min(most);
        factor = factor.div_ceil(p / parts[d]);
        parts[d] = p;
    }
    parts
}

/// All regions of the grid that `parts` cuts out of `full` (whose
/// extents are `ext`) along `dims`.
fn grid<const D: usize>(
    full: Region<D>,
    ext: &[usize],
    align: &[usize],
    parts: &[usize],
) -> Vec<Region<D>> {
    let mut regions = vec![full];
    for d in 0..D {
        if parts[d] <= 1 {
            continue;
        }
        let cs = chunks(ext[d], parts[d], align[d]);
        regions = regions
            .into_iter()
            .flat_map(|r| {
                cs.iter().map(move |&(lo, hi)| {
                    let mut r = r;
                    r[d] = (full[d].0 + lo, full[d].0 + hi);
                    r
                })
            })
            .collect();
    }
    regions
}

fn count_kept<const D: usize>(r: &Region<D>, kinds: &[DimKind; D]) -> usize {
    (0..D)
        .filter(|&d| kinds[d].is_kept())
        .map(|d| r[d].1 - r[d].0)
        .product()
}

/// The box of the index space a call computes (all of it, or the part a
/// node computes, see `mdh::mpi`) and the kinds of its dimensions.
#[derive(Clone, Copy, Debug)]
pub struct IndexBox<const D: usize> {
    pub full: Region<D>,
    pub kinds: [DimKind; D],
}

/// The plan's COR layer as [`execute`] runs it.
#[derive(Clone, Copy, Debug)]
pub struct CorLayer<const D: usize> {
    /// The plan's number of parts per dimension (rayon tasks), cut further
    /// on a machine of more threads than it makes tasks (`planned_parts`);
    /// all zeros lets the driver choose from the thread count.
    pub parts: [usize; D],
    /// The plan's register tile: parts start at its multiples.
    pub align: [usize; D],
    /// The plan's tile-loop order, outermost first: parts the driver
    /// chooses cut the kept dimensions in that order, the outermost loop
    /// first (as OpenMP's `parallel for` does): a contraction's packed
    /// panel, whose dimension the default plan loops outermost, is then
    /// packed by one task instead of by every task of a row split (matmul
    /// 16×1000×2048 with the default plan on the 2-core AMD EPYC: 0.43 ms
    /// split by rows, against 0.21 ms for the hand-set plan that splits the
    /// columns).
    pub order: [usize; D],
    /// The SIMD lanes its register tiles run on (1: scalar code): with
    /// `parts` all zeros, a call of little work runs as one task.
    pub lanes: usize,
}

/// Runs kernel `kernel` over the box `space` of its index space, split
/// into tasks by the plan's COR layer `layer`. Scans (PS) run inside the
/// box.
///
/// `compute(region, out, direct)` pushes, for each kept point of `region`
/// in row-major order of the kept dimensions, the combination of the scalar
/// function over the region's PW ranges (never empty); when no dimension is
/// PW or PS, or when `direct` is true (the region holds the whole PW range,
/// so the results are final), `compute` instead writes its results through
/// the output views itself and pushes nothing, and `write` is not called. `write(region, vals)`
/// stores one value per kept point of `region`, same order. `identity` is the
/// neutral element of the operators, if they have one (used when a PW
/// dimension is empty).
pub fn execute<A, const D: usize>(
    kernel: &str,
    space: IndexBox<D>,
    layer: CorLayer<D>,
    identity: Option<A>,
    compute: impl Fn(&Region<D>, &mut Vec<A>, bool) + Sync,
    combine: impl Fn(A, A) -> A + Sync,
    write: impl Fn(&Region<D>, &[A]) + Sync,
) -> Result<(), Error>
where
    A: Copy + Send + Sync,
{
    let IndexBox { full, kinds } = space;
    let CorLayer {
        parts: cor,
        align,
        order,
        lanes,
    } = layer;
    let ext: [usize; D] = std::array::from_fn(|d| full[d].1 - full[d].0);
    let total = |kept: bool| -> usize {
        (0..D)
            .filter(|&d| kinds[d].is_kept() == kept)
            .map(|d| ext[d])
            .product()
    };
    let (kept_total, red_total) = (total(true), total(false));
    if kept_total == 0 {
        return Ok(());
    }
    let small = work(kept_total.saturating_mul(red_total), lanes) < SEQUENTIAL_POINTS;
    let planned = cor.iter().any(|&c| c > 0);
    let has_ps = kinds.contains(&DimKind::Ps);
    // Inside a part of a parallel call (a tile of fused stages), the call
    // runs on this thread alone (`parallel`): as one task.
    let one_task = in_part()
        || if planned {
            cor.iter().all(|&c| c <= 1)
        } else {
            small
        };
    if red_total > 0 && !has_ps && one_task {
        // One task holding the whole index space: its results are final.
        // (The common case of small kernels, taken before any allocation.)
        compute(&full, &mut Vec::new(), true);
        return Ok(());
    }
    let (kept, reduced) = (DimKind::kept(&kinds), DimKind::reduced(&kinds));
    let threads = rayon::current_num_threads().max(1);
    let target = if small { 1 } else { threads * TASKS_PER_THREAD };
    let planned_parts = planned_parts(&cor, &kinds, &ext, &align, if small { 1 } else { threads });
    let kept_parts = if planned {
        (0..D)
            .map(|d| {
                if kinds[d].is_kept() {
                    planned_parts[d]
                } else {
                    1
                }
            })
            .collect()
    } else {
        let outer_first: Vec<usize> = order.into_iter().filter(|d| kept.contains(d)).collect();
        parts_for(&ext, &align, &outer_first, target)
    };
    let kept_regions = grid(full, &ext, &align, &kept_parts);

    if red_total == 0 {
        let Some(id) = identity else {
            let dim = reduced.iter().copied().find(|&d| ext[d] == 0).unwrap_or(0);
            return Err(Error::EmptyReduction {
                kernel: kernel.to_string(),
                dim,
            });
        };
        each(&kept_regions, |r| {
            write(r, &vec![id; count_kept(r, &kinds)])
        });
        return Ok(());
    }

    // Split PW dimensions too when the kept dimensions alone cannot feed the threads.
    let n_kept_regions = kept_regions.len();
    let red_parts = if planned {
        (0..D)
            .map(|d| {
                if kinds[d].is_kept() {
                    1
                } else {
                    planned_parts[d]
                }
            })
            .collect()
    } else if n_kept_regions < threads && target > 1 {
        parts_for(&ext, &align, &reduced, target.div_ceil(n_kept_regions))
    } else {
        vec![1; D]
    };
    let red_regions: Vec<Region<D>> = grid(full, &ext, &align, &red_parts);

    // One kept region's results: its parts along PW dimensions are computed
    // in parallel and combined in order.
    let kept_region_values = |kr: &Region<D>| -> Vec<A> {
        let merge = |rr: &Region<D>| -> Region<D> {
            std::array::from_fn(|d| if kinds[d].is_kept() { kr[d] } else { rr[d] })
        };
        let part = |rr: &Region<D>| {
            let mut v = Vec::with_capacity(count_kept(kr, &kinds));
            compute(&merge(rr), &mut v, false);
            v
        };
        if red_regions.len() == 1 {
            return part(&red_regions[0]);
        }
        let partials: Vec<Vec<A>> = map(&red_regions, part);
        let mut it = partials.into_iter();
        let mut acc = it.next().unwrap_or_default();
        for p in it {
            for (a, b) in acc.iter_mut().zip(p) {
                *a = combine(*a, b);
            }
        }
        acc
    };

    if reduced.is_empty() && !has_ps {
        // Every point is its own result: `compute` writes it through the
        // output views directly (no task-local copy, no `write`).
        each(&kept_regions, |kr| compute(kr, &mut Vec::new(), true));
        return Ok(());
    }
    if !has_ps && red_regions.len() == 1 {
        // Each task holds the whole PW range of its kept points (kept
        // regions span the full PW ranges): it writes its final results
        // through the output views, with no task-local copy.
        each(&kept_regions, |kr| compute(kr, &mut Vec::new(), true));
        return Ok(());
    }
    if !has_ps {
        each(&kept_regions, |kr| write(kr, &kept_region_values(kr)));
        return Ok(());
    }

    scan_and_write(
        &full,
        &kinds,
        &kept,
        &kept_regions,
        kept_region_values,
        &combine,
        &write,
    );
    Ok(())
}

/// The end of [`execute`] for kernels with PS dimensions: reduces the PW
/// part of each kept region (`values`) into a dense array over the kept
/// dimensions of `full`, scans it along each PS dimension (innermost first,
/// which is the nesting order of the md_hom formula), then writes it out.
fn scan_and_write<A, const D: usize>(
    full: &Region<D>,
    kinds: &[DimKind; D],
    kept: &[usize],
    kept_regions: &[Region<D>],
    values: impl Fn(&Region<D>) -> Vec<A> + Sync,
    combine: &(impl Fn(A, A) -> A + Sync),
    write: &(impl Fn(&Region<D>, &[A]) + Sync),
) where
    A: Copy + Send + Sync,
{
    let kept_ext: Vec<usize> = kept.iter().map(|&d| full[d].1 - full[d].0).collect();
    let kept_total: usize = kept_ext.iter().product();
    let mut dense: Vec<A> = Vec::with_capacity(kept_total);
    {
        let spare = dense.spare_capacity_mut();
        let ptr = SyncPtr::new(spare);
        each(kept_regions, |kr| {
            let vals = values(kr);
            for_each_kept_offset(kr, full, kept, &kept_ext, |n, off| {
                // SAFETY: kept regions partition the kept box, so every
                // offset is written exactly once and is < kept_total.
                unsafe { ptr.write(off, std::mem::MaybeUninit::new(vals[n])) }
            });
        });
    }
    // SAFETY: every element 0..kept_total was initialized above.
    unsafe { dense.set_len(kept_total) };
    for (axis, &d) in kept.iter().enumerate().rev() {
        if kinds[d] == DimKind::Ps {
            scan_axis(&mut dense, &kept_ext, axis, combine);
        }
    }
    let dense = &dense;
    each(kept_regions, |kr| {
        let mut vals = Vec::with_capacity(count_kept(kr, kinds));
        for_each_kept_offset(kr, full, kept, &kept_ext, |_, off| vals.push(dense[off]));
        write(kr, &vals);
    });
}

/// Calls `f(n, offset)` for the n-th kept point of `r` (row-major over the kept
/// dimensions) and its offset in the dense row-major array over `kept_ext`
/// (the kept extents of the box `full`, which holds `r`).
fn for_each_kept_offset<const D: usize>(
    r: &Region<D>,
    full: &Region<D>,
    kept: &[usize],
    kept_ext: &[usize],
    mut f: impl FnMut(usize, usize),
) {
    let k = kept.len();
    let mut idx: Vec<usize> = kept.iter().map(|&d| r[d].0).collect();
    let count: usize = kept.iter().map(|&d| r[d].1 - r[d].0).product();
    for n in 0..count {
        let off = (idx.iter().zip(kept))
            .zip(kept_ext)
            .fold(0, |o, ((&i, &d), &e)| o * e + i - full[d].0);
        f(n, off);
        // Odometer step over the region's kept ranges.
        for a in (0..k).rev() {
            idx[a] += 1;
            if idx[a] < r[kept[a]].1 {
                break;
            }
            idx[a] = r[kept[a]].0;
        }
    }
}

/// Inclusive prefix combination of `data` (dense, row-major over `ext`) along
/// `axis`, in index order so that non-commutative operators stay correct.
fn scan_axis<A: Copy + Send + Sync>(
    data: &mut [A],
    ext: &[usize],
    axis: usize,
    combine: &(impl Fn(A, A) -> A + Sync),
) {
    let n = ext[axis];
    let inner: usize = ext[axis + 1..].iter().product();
    let lines = data.len() / n.max(1);
    let threads = rayon::current_num_threads().max(1);
    if n <= 1 {
        return;
    }
    if lines >= threads || data.len() < SEQUENTIAL_POINTS {
        // Enough independent lines: scan each sequentially, lines in parallel
        // (a block of `inner` lines per part).
        let block = n * inner;
        let ptr = SyncPtr::new(data);
        each_index(data.len() / block, |b| {
            for j in 0..inner {
                for i in 1..n {
                    let at = |i: usize| b * block + i * inner + j;
                    // SAFETY: blocks are disjoint ranges of `data`, each
                    // touched by one part; offsets are < data.len().
                    unsafe { ptr.write(at(i), combine(ptr.read(at(i - 1)), ptr.read(at(i)))) };
                }
            }
        });
        return;
    }
    // Few long lines: the classic three-phase parallel scan per line
    // (scan chunks, combine the chunk totals in order, apply the carries).
    for line in data.chunks_mut(n * inner) {
        for j in 0..inner {
            let parts = chunks(n, threads * TASKS_PER_THREAD, 1);
            let ptr = SyncPtr::new(line);
            let at = move |i: usize| i * inner + j;
            // SAFETY (all three phases): chunks are disjoint ranges of
            // `0..n`, each touched by one task; offsets are < line.len().
            each(&parts, |&(lo, hi)| {
                for i in lo + 1..hi {
                    // SAFETY: as above: `i - 1` and `i` are in this task's chunk.
                    unsafe { ptr.write(at(i), combine(ptr.read(at(i - 1)), ptr.read(at(i)))) };
                }
            });
            let mut carries = Vec::with_capacity(parts.len());
            let mut carry: Option<A> = None;
            for &(_, hi) in &parts {
                carries.push(carry);
                // SAFETY: as above, sequential here.
                let total = unsafe { ptr.read(at(hi - 1)) };
                carry = Some(match carry {
                    Some(c) => combine(c, total),
                    None => total,
                });
            }
            each_index(parts.len(), |p| {
                let ((lo, hi), c) = (parts[p], carries[p]);
                if let Some(c) = c {
                    for i in lo..hi {
                        // SAFETY: as above.
                        unsafe { ptr.write(at(i), combine(c, ptr.read(at(i)))) };
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    std::thread_local! {
        static SLOT: PackSlot<f32, 2> = const { core::cell::Cell::new(None) };
    }

    #[test]
    fn mdh_isa_caps_the_instruction_set_and_never_raises_it() {
        use Isa::*;
        assert_eq!(capped(Avx512, None), Ok(Avx512));
        assert_eq!(capped(Avx512, Some("")), Ok(Avx512));
        assert_eq!(capped(Avx512, Some("AVX2")), Ok(Avx2));
        assert_eq!(capped(Avx512, Some("baseline")), Ok(Baseline));
        assert_eq!(capped(Avx2, Some("avx512")), Ok(Avx2));
        assert_eq!(capped(Baseline, Some("avx2")), Ok(Baseline));
        let e = capped(Avx512, Some("sse9")).unwrap_err();
        assert!(e.contains("MDH_ISA=\"sse9\"") && e.contains("avx2"), "{e}");
    }

    #[test]
    fn partial_writes_and_reads_touch_only_their_lanes() {
        use crate::simd::{AVX512, BASELINE};
        // Each body runs with the ISA it names.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f")]
        unsafe fn masked(p: SyncPtr<f32>, q: SyncPtr<f64>, v: [f32; 32], w: [f64; 32], cnt: usize) {
            // SAFETY: as in the caller.
            unsafe {
                p.write_part::<AVX512, 32>(3, v, cnt);
                q.write_part::<AVX512, 32>(3, w, cnt);
                assert_eq!(
                    p.read_part::<AVX512, 32>(3, cnt),
                    p.read_part::<BASELINE, 32>(3, cnt)
                );
            }
        }
        let v: [f32; 32] = std::array::from_fn(|l| l as f32 + 100.0);
        let w: [f64; 32] = std::array::from_fn(|l| l as f64 + 100.0);
        for cnt in 1..=32 {
            for avx512 in [false, true] {
                #[cfg(target_arch = "x86_64")]
                let run = !avx512 || std::is_x86_feature_detected!("avx512f");
                #[cfg(not(target_arch = "x86_64"))]
                let run = !avx512;
                if !run {
                    continue;
                }
                let (mut s, mut d) = (vec![-1.0f32; 40], vec![-1.0f64; 40]);
                let (p, q) = (SyncPtr::new(&mut s), SyncPtr::new(&mut d));
                // SAFETY: elements 3 .. 3 + cnt <= 35 are inside both
                // buffers, written by this thread only.
                unsafe {
                    if avx512 {
                        #[cfg(target_arch = "x86_64")]
                        masked(p, q, v, w, cnt);
                    } else {
                        p.write_part::<BASELINE, 32>(3, v, cnt);
                        q.write_part::<BASELINE, 32>(3, w, cnt);
                    }
                    let back = p.read_part::<BASELINE, 32>(3, cnt);
                    let last = v[cnt - 1];
                    assert!((0..32).all(|l| back[l] == if l < cnt { v[l] } else { last }));
                }
                let want = |i: usize| {
                    if (3..3 + cnt).contains(&i) {
                        i as f64 + 97.0
                    } else {
                        -1.0
                    }
                };
                assert!(
                    (0..40).all(|i| s[i] as f64 == want(i)),
                    "{cnt} {avx512}: {s:?}"
                );
                assert!((0..40).all(|i| d[i] == want(i)), "{cnt} {avx512}: {d:?}");
            }
        }
    }

    #[test]
    fn packed_tiles_are_kept_within_a_call_only() {
        let call = next_call();
        assert_ne!(next_call(), call, "call numbers are unique");
        let mut tile = PackedTile::resume(&SLOT, call);
        assert_eq!(tile.last, [usize::MAX; 2], "a new tile holds no range");
        tile.last = [0, 4];
        tile.buf.resize(4).copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
        // A nested use of the slot while the tile is out gets a tile of its own.
        assert_eq!(PackedTile::resume(&SLOT, call).last, [usize::MAX; 2]);
        tile.park(&SLOT);
        let tile = PackedTile::resume(&SLOT, call);
        assert_eq!(
            tile.last,
            [0, 4],
            "the next part of the call finds the tile"
        );
        assert_eq!(tile.buf.as_slice(), &[1.0, 2.0, 3.0, 4.0]);
        tile.park(&SLOT);
        let later = next_call();
        let tile = PackedTile::resume(&SLOT, later);
        assert_eq!(tile.last, [usize::MAX; 2], "another call repacks");
        tile.park(&SLOT);
    }

    fn sum_kernel(n: usize, kinds: [DimKind; 1]) -> Vec<u64> {
        sum_kernel_planned(n, kinds, [0]).0
    }

    /// `sum_kernel` under a plan of `cor` parts, and how many regions it
    /// computed.
    fn sum_kernel_planned(n: usize, kinds: [DimKind; 1], cor: [usize; 1]) -> (Vec<u64>, usize) {
        let regions = std::sync::atomic::AtomicUsize::new(0);
        let out = std::sync::Mutex::new(vec![0u64; n]);
        let store = |r: &Region<1>, vals: &[u64]| {
            let mut out = out.lock().unwrap();
            if kinds[0].is_kept() {
                for (i, v) in (r[0].0..r[0].1).zip(vals) {
                    out[i] = *v;
                }
            } else {
                out[0] = vals[0];
            }
        };
        execute::<u64, 1>(
            "t",
            IndexBox {
                full: [(0, n)],
                kinds,
            },
            CorLayer {
                parts: cor,
                align: [3],
                order: [0],
                lanes: 1,
            },
            Some(0),
            |r, o, direct| {
                regions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let mut v = Vec::new();
                if kinds[0].is_kept() {
                    v.extend((r[0].0..r[0].1).map(|i| i as u64 + 1));
                } else {
                    v.push((r[0].0..r[0].1).map(|i| i as u64 + 1).sum());
                }
                if direct {
                    store(r, &v);
                } else {
                    o.extend(v);
                }
            },
            |a, b| a + b,
            store,
        )
        .unwrap();
        (out.into_inner().unwrap(), regions.into_inner())
    }

    /// A plan of 2 parts runs as 2 tasks on 2 threads and is cut into
    /// about 16 on 16 threads, along a kept or a PW dimension alike, with
    /// the same results.
    #[test]
    fn a_plan_of_fewer_tasks_than_threads_is_cut_further() {
        let n = 100_003;
        let total = (n as u64) * (n as u64 + 1) / 2;
        for (threads, tasks) in [(2, 2), (16, 16)] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (kept, regions) = pool.install(|| sum_kernel_planned(n, [DimKind::Cc], [2]));
            assert_eq!(regions, tasks, "{threads} threads");
            assert_eq!(kept[n - 1], n as u64);
            assert_eq!(kept.iter().sum::<u64>(), total);
            let (reduced, regions) = pool.install(|| sum_kernel_planned(n, [DimKind::Pw], [2]));
            assert_eq!(regions, tasks, "{threads} threads");
            assert_eq!(reduced[0], total);
        }
    }

    /// The regions `compute` sees for a (kept, PW) space of 512 × 512
    /// points (2^18) whose register tiles run on `lanes` lanes.
    fn tasks_of(lanes: usize) -> Vec<(Region<2>, bool)> {
        let tasks = std::sync::Mutex::new(Vec::new());
        execute::<u64, 2>(
            "t",
            IndexBox {
                full: [(0, 512), (0, 512)],
                kinds: [DimKind::Cc, DimKind::Pw],
            },
            CorLayer {
                parts: [0, 0],
                align: [1, 1],
                order: [0, 1],
                lanes,
            },
            Some(0),
            |r, o, direct| {
                tasks.lock().unwrap().push((*r, direct));
                if !direct {
                    o.extend((r[0].0..r[0].1).map(|_| 0));
                }
            },
            |a, b| a + b,
            |_, _| {},
        )
        .unwrap();
        tasks.into_inner().unwrap()
    }

    #[test]
    fn little_vector_work_runs_as_one_task_and_as_much_scalar_work_splits() {
        // 2^18 points on 16 lanes: 2^13 steps of scalar work, below the
        // threshold; the same points in scalar code are above it.
        assert_eq!(tasks_of(16), [([(0, 512), (0, 512)], true)]);
        assert!(tasks_of(1).len() > 1);
    }

    #[test]
    fn a_box_of_the_space_runs_alone_and_scans_inside_itself() {
        // The box 3..9 of a PS dimension over 12 points: its prefix sums
        // start at the box (a node's part, see `mdh::mpi`).
        let out = std::sync::Mutex::new(vec![0u64; 12]);
        execute::<u64, 1>(
            "t",
            IndexBox {
                full: [(3, 9)],
                kinds: [DimKind::Ps],
            },
            CorLayer {
                parts: [2],
                align: [1],
                order: [0],
                lanes: 1,
            },
            Some(0),
            |r, o, _| o.extend((r[0].0..r[0].1).map(|i| i as u64)),
            |a, b| a + b,
            |r, vals| {
                let mut out = out.lock().unwrap();
                for (i, v) in (r[0].0..r[0].1).zip(vals) {
                    out[i] = *v;
                }
            },
        )
        .unwrap();
        assert_eq!(
            out.into_inner().unwrap(),
            [0, 0, 0, 3, 7, 12, 18, 25, 33, 0, 0, 0]
        );
    }

    #[test]
    fn reductions_split_across_tasks_combine_to_the_total() {
        for n in [1, 2, 17, 1 << 15, 100_003] {
            let want = (n as u64) * (n as u64 + 1) / 2;
            assert_eq!(sum_kernel(n, [DimKind::Pw])[0], want, "n = {n}");
        }
    }

    #[test]
    fn prefix_sums_are_inclusive_and_ordered() {
        for n in [1, 5, 1 << 15, 70_001] {
            let got = sum_kernel(n, [DimKind::Ps]);
            let mut acc = 0;
            for (i, g) in got.iter().enumerate() {
                acc += i as u64 + 1;
                assert_eq!(*g, acc, "n = {n}, i = {i}");
            }
        }
    }

    #[test]
    fn planned_parts_grow_to_the_threads_along_the_split_dimensions() {
        use DimKind::{Cc, Pw};
        let kinds = [Cc, Cc, Pw];
        let ext = [1024, 1000, 2048];
        let align = [6, 64, 1];
        // As tuned (2 tasks) on 2 threads; cut to 16 along I on 16.
        assert_eq!(
            planned_parts(&[2, 0, 0], &kinds, &ext, &align, 2),
            [2, 1, 1]
        );
        assert_eq!(
            planned_parts(&[2, 0, 0], &kinds, &ext, &align, 16),
            [16, 1, 1]
        );
        // No finer than the register tile: J has 16 tiles of 64, so the
        // rest goes to the next split dimension (a PW split last).
        assert_eq!(
            planned_parts(&[1, 4, 2], &kinds, &ext, &align, 64),
            [1, 16, 4]
        );
        assert_eq!(
            planned_parts(&[1, 2, 1], &kinds, &[16, 100, 2048], &align, 16),
            [1, 2, 1]
        );
        // One task (small work, or tuned so) stays one; enough tasks stay.
        assert_eq!(
            planned_parts(&[1, 1, 1], &kinds, &ext, &align, 16),
            [1, 1, 1]
        );
        assert_eq!(
            planned_parts(&[4, 4, 1], &kinds, &ext, &align, 16),
            [4, 4, 1]
        );
        assert_eq!(
            planned_parts(&[0, 3, 0], &kinds, &ext, &align, 16),
            [1, 16, 1]
        );
    }

    #[test]
    fn regions_partition_the_space() {
        let ext = [7usize, 13, 5];
        let full: Region<3> = std::array::from_fn(|d| (0, ext[d]));
        for align in [[1, 1, 1], [2, 4, 1], [8, 3, 16]] {
            let parts = parts_for(&ext, &align, &[0, 1, 2], 40);
            let mut seen = vec![0u8; 7 * 13 * 5];
            for r in grid(full, &ext, &align, &parts) {
                for d in 0..3 {
                    assert!(r[d].0 < r[d].1 && r[d].0 % align[d] == 0, "{r:?}");
                }
                for a in r[0].0..r[0].1 {
                    for b in r[1].0..r[1].1 {
                        for c in r[2].0..r[2].1 {
                            seen[(a * 13 + b) * 5 + c] += 1;
                        }
                    }
                }
            }
            assert!(seen.iter().all(|&s| s == 1));
        }
    }
}
