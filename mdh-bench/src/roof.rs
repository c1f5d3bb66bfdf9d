//! The machine's limits, measured in the same run as the cases, and how
//! close a case comes to them (its `% of roof`).
//!
//! - **FMA peak**: single-precision FMAs on all threads, registers only,
//!   with the widest instruction set the CPU has (AVX-512, else AVX2+FMA,
//!   else the baseline: SSE2 multiply and add on x86-64, the compiler's
//!   vectors elsewhere), chosen at run time; enough independent
//!   accumulators per thread to cover the FMA latency times the FMA ports.
//! - **bf16 pair peak**, where the CPU has AVX-512 BF16: the same with
//!   `vdpbf16ps` (two bf16 products added to each f32 lane): the roof of
//!   the cases of bf16 products (elsewhere the FMA peak is theirs: their
//!   inputs are widened to f32).
//! - **Streaming bandwidth**: a read-only sum, a copy and a triad
//!   (`c = a + s·b`) over buffers of four times the last-level caches that
//!   the threads span (at least 64 MiB each), split among all threads.
//! - **L2 bandwidth**: a read-only sum over a buffer of half a thread's
//!   share of the L2, per thread, repeated.
//!
//! Each rate is the fastest of a few timed runs (a roof is an upper bound).
//! A case's roof is the roofline at its arithmetic intensity ([`roofline`]):
//! `min(FMA peak, flops/bytes × streaming bandwidth)`, where the streaming
//! bandwidth is the highest of sum, copy and triad; see [`Limits`].

use std::hint::black_box;
use std::time::{Duration, Instant};

/// The peak rates a case is held against (per second, all threads).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Single-precision floating-point operations per second (FMA peak).
    pub flops: f64,
    /// The same for products of bf16 inputs summed in f32 (the bf16 pair
    /// peak where the CPU has one, else the FMA peak).
    pub bf16_flops: f64,
    /// Bytes per second from and to memory (streaming bandwidth).
    pub bytes: f64,
}

/// The roofline: the highest rate (flop/s) a kernel of arithmetic intensity
/// `intensity` (flops per byte moved) can reach under `limits`.
pub fn roofline(intensity: f64, limits: Limits) -> f64 {
    limits.flops.min(intensity * limits.bytes)
}

impl Limits {
    /// The limits of a case of bf16 products: the bf16 peak for its flops.
    pub fn of_bf16_products(self) -> Limits {
        Limits {
            flops: self.bf16_flops,
            ..self
        }
    }

    /// The shortest time one run of a case that does `flops` and must move
    /// `bytes` can take: `flops` over the roofline at `flops / bytes`; a
    /// case that states only one of them is held against that limit alone
    /// (flops: the FMA peak, bytes: the bandwidth). `None` where it states
    /// neither (or only zeros).
    pub fn min_seconds(self, flops: Option<f64>, bytes: Option<f64>) -> Option<f64> {
        let positive = |x: Option<f64>| x.filter(|v| v.is_finite() && *v > 0.0);
        match (positive(flops), positive(bytes)) {
            (Some(f), Some(b)) => Some(f / roofline(f / b, self)),
            (Some(f), None) => Some(f / self.flops),
            (None, Some(b)) => Some(b / self.bytes),
            (None, None) => None,
        }
    }

    /// How close a run that took `seconds` comes to the roof, in percent
    /// (100: at the roof).
    pub fn pct_of_roof(self, flops: Option<f64>, bytes: Option<f64>, seconds: f64) -> Option<f64> {
        let min = self.min_seconds(flops, bytes)?;
        (seconds > 0.0).then(|| 100.0 * min / seconds)
    }
}

/// One measured limit, a row above the table.
pub struct Roof {
    pub name: &'static str,
    /// GFLOP/s or GB/s, see `unit`.
    pub rate: f64,
    pub unit: &'static str,
    pub threads: usize,
    pub isa: &'static str,
    /// How it was measured.
    pub how: String,
}

/// The measured limits: the rows to print and the limits of `% of roof`.
pub struct Roofs {
    pub rows: Vec<Roof>,
    pub limits: Limits,
}

/// How large and how long the measurements are.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Bytes of each streaming buffer (all threads together).
    pub stream: usize,
    /// Bytes of each thread's L2-resident buffer.
    pub l2: usize,
    /// The shortest timed run.
    pub sample: Duration,
    /// Timed runs per limit (the fastest counts).
    pub tries: usize,
}

/// Streaming buffers are at least this large (where the cache sizes are
/// unknown, or small).
const MIN_STREAM: usize = 64 << 20;
/// A thread's share of the L2 where sysfs does not say.
const DEFAULT_L2: usize = 512 << 10;

impl Sizes {
    /// Sized from this machine's caches (sysfs, through [`mdh::machine`]):
    /// each streaming buffer four times the last-level cache of the cores
    /// that `threads` threads span, at least [`MIN_STREAM`]; the L2 buffer
    /// half of one thread's share of its core's L2. Longer runs without
    /// `quick`.
    pub fn for_machine(threads: usize, quick: bool) -> Sizes {
        let m = &mdh::machine::host().machine;
        let l3 = m.l3.map_or(0, |b| b as usize);
        // The threads span this many last-level caches (each shared by
        // `sharing(3)` CPUs), at least one.
        let l3_total = l3 * threads.div_ceil(sharing(3)).max(1);
        let l2 = m.l2.map_or(DEFAULT_L2, |b| b as usize / sharing(2));
        Sizes {
            stream: (4 * l3_total).max(MIN_STREAM),
            l2: (l2 / 2).max(4096),
            sample: Duration::from_millis(if quick { 40 } else { 200 }),
            tries: if quick { 5 } else { 7 },
        }
    }
}

/// How many CPUs share the first CPU's cache of `level` (sysfs
/// `shared_cpu_list`, e.g. "0-7,16-23"); 1 where it does not say.
fn sharing(level: u32) -> usize {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let Ok(list) = std::fs::read_dir(dir) else {
        return 1;
    };
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok();
    list.flatten()
        .find(|e| {
            read(e.path().join("level")).is_some_and(|l| l.trim() == level.to_string())
                && read(e.path().join("type")).is_some_and(|t| t.trim() != "Instruction")
        })
        .and_then(|e| read(e.path().join("shared_cpu_list")))
        .and_then(|s| count_cpus(&s))
        .map_or(1, |n| n.max(1))
}

/// The number of CPUs in a list such as "0-7,16-23" (`None`: malformed).
fn count_cpus(list: &str) -> Option<usize> {
    list.trim()
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|part| match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse::<usize>().ok()?, b.parse::<usize>().ok()?);
                b.checked_sub(a).map(|d| d + 1)
            }
            None => part.parse::<usize>().ok().map(|_| 1),
        })
        .sum()
}

/// The widest instruction set of this CPU, detected at run time; the only
/// way to make one is [`Isa::detect`], so a kernel compiled for an
/// instruction set runs only where the CPU has it.
#[derive(Clone, Copy)]
pub struct Isa(Kind);

#[derive(Clone, Copy)]
enum Kind {
    /// avx512f, avx512vl, avx2 and fma.
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// avx2 and fma.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// What every CPU of the target has.
    Baseline,
}

impl Isa {
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx512f") && has!("avx512vl") && has!("avx2") && has!("fma") {
                return Isa(Kind::Avx512);
            }
            if has!("avx2") && has!("fma") {
                return Isa(Kind::Avx2);
            }
        }
        Isa(Kind::Baseline)
    }

    pub fn name(self) -> &'static str {
        match self.0 {
            #[cfg(target_arch = "x86_64")]
            Kind::Avx512 => "avx512",
            #[cfg(target_arch = "x86_64")]
            Kind::Avx2 => "avx2+fma",
            #[cfg(target_arch = "x86_64")]
            Kind::Baseline => "sse2 (mul+add)",
            #[cfg(not(target_arch = "x86_64"))]
            Kind::Baseline => std::env::consts::ARCH,
        }
    }
}

/// Defines `fn $name(isa: Isa, args) -> ret`: the body compiled for each
/// instruction set (inlined into a `#[target_feature]` function per set,
/// so that the compiler vectorizes it for that set) and called for `isa`.
/// In the body, the const `$acc` is the f32 lanes of 8 of the set's
/// vectors (128, 64, 32): independent accumulators enough to cover the
/// add latency × the loads per cycle.
macro_rules! per_isa {
    ($(#[$doc:meta])* fn $name:ident<const $acc:ident>($($arg:ident: $ty:ty),*) -> $ret:ty $body:block) => {
        $(#[$doc])*
        fn $name(isa: Isa, $($arg: $ty),*) -> $ret {
            #[inline(always)]
            fn body<const $acc: usize>($($arg: $ty),*) -> $ret $body
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
            fn avx512($($arg: $ty),*) -> $ret {
                body::<128>($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn avx2($($arg: $ty),*) -> $ret {
                body::<64>($($arg),*)
            }
            match isa.0 {
                // SAFETY: an `Isa` of this kind comes only from
                // `Isa::detect`, which found avx512f, avx512vl, avx2 and
                // fma on this CPU.
                #[cfg(target_arch = "x86_64")]
                Kind::Avx512 => unsafe { avx512($($arg),*) },
                // SAFETY: an `Isa` of this kind comes only from
                // `Isa::detect`, which found avx2 and fma on this CPU.
                #[cfg(target_arch = "x86_64")]
                Kind::Avx2 => unsafe { avx2($($arg),*) },
                Kind::Baseline => body::<32>($($arg),*),
            }
        }
    };
}

/// Each thread's part of a buffer is a multiple of this many floats (the
/// widest accumulator of [`per_isa`]).
const ALIGN: usize = 128;

per_isa! {
    /// The sum of `x`.
    fn sum<const ACC>(x: &[f32]) -> f32 {
        let mut acc = [0.0f32; ACC];
        let chunks = x.chunks_exact(ACC);
        let rest: f32 = chunks.remainder().iter().sum();
        for c in chunks {
            for (a, v) in acc.iter_mut().zip(c) {
                *a += v;
            }
        }
        acc.iter().sum::<f32>() + rest
    }
}

per_isa! {
    /// `a = b + s·c`.
    fn triad<const ACC>(a: &mut [f32], b: &[f32], c: &[f32], s: f32) -> () {
        for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
            *a = b + s * c;
        }
    }
}

/// Registers-only FMA chains: `chains` accumulators of `V`, each updated
/// `iters` times; returns the flops done. One function per x86 instruction
/// set (the vector types and intrinsics differ).
#[cfg(target_arch = "x86_64")]
macro_rules! fma_chains {
    ($name:ident, $features:literal, $splat:ident, $fmadd:ident, $chains:literal, $lanes:literal) => {
        #[target_feature(enable = $features)]
        fn $name(iters: u64) -> f64 {
            use std::arch::x86_64::*;
            // x ← x·a + b stays finite and away from denormals for ever.
            let a = $splat(black_box(0.999_999));
            let b = $splat(black_box(1e-6));
            let mut acc = [$splat(black_box(1.0)); $chains];
            for _ in 0..iters {
                for x in &mut acc {
                    *x = $fmadd(*x, a, b);
                }
            }
            black_box(acc);
            (iters * $chains * $lanes * 2) as f64
        }
    };
}

// 16 chains of 16 lanes: latency 4 × 2 ports needs 8; 16 of the 32
// registers leave room for `a` and `b`.
#[cfg(target_arch = "x86_64")]
fma_chains!(
    fma_avx512,
    "avx512f",
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    16,
    16
);
// 12 chains of 8 lanes in 16 registers (with `a` and `b`).
#[cfg(target_arch = "x86_64")]
fma_chains!(fma_avx2, "avx2,fma", _mm256_set1_ps, _mm256_fmadd_ps, 12, 8);

/// Registers-only `vdpbf16ps` chains (AVX-512 BF16), as `fma_chains`:
/// each instruction adds two bf16 products to each of 16 f32 lanes (4
/// flops a lane); returns the flops done.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
fn dpbf16_avx512(iters: u64) -> f64 {
    use std::arch::x86_64::*;
    const CHAINS: u64 = 16;
    // Pairs of 2^-20: each step adds 2^-39 to a lane, which stays a
    // normal number near 1 for ever.
    // SAFETY: `__m512i` and `__m512bh` are both 64 bytes of lanes.
    let pairs: __m512bh = unsafe { std::mem::transmute(_mm512_set1_epi32(black_box(0x3580_3580))) };
    let mut acc = [_mm512_set1_ps(black_box(1.0)); CHAINS as usize];
    for _ in 0..iters {
        for x in &mut acc {
            *x = _mm512_dpbf16_ps(*x, pairs, pairs);
        }
    }
    black_box(acc);
    (iters * CHAINS * 16 * 4) as f64
}

/// Whether this CPU runs `vdpbf16ps` (with the AVX-512 bodies).
fn has_bf16_pairs(isa: Isa) -> bool {
    match isa.0 {
        #[cfg(target_arch = "x86_64")]
        Kind::Avx512 => std::arch::is_x86_feature_detected!("avx512bf16"),
        _ => false,
    }
}

/// The same without FMA instructions (x86-64 baseline: SSE2 multiply and
/// add, 2 flops per lane) or with the target's own (`mul_add` where the
/// target has FMA, e.g. aarch64).
fn fma_baseline(iters: u64) -> f64 {
    const CHAINS: usize = 16;
    const W: usize = 4;
    const FUSED: bool = cfg!(any(target_arch = "aarch64", target_feature = "fma"));
    let (a, b) = (black_box(0.999_999f32), black_box(1e-6f32));
    let mut acc = [[black_box(1.0f32); W]; CHAINS];
    for _ in 0..iters {
        for x in acc.iter_mut().flatten() {
            *x = if FUSED { x.mul_add(a, b) } else { *x * a + b };
        }
    }
    black_box(acc);
    iters as f64 * (CHAINS * W * 2) as f64
}

/// `iters` rounds of FMA chains with `isa`; the flops done.
fn fma(isa: Isa, iters: u64) -> f64 {
    match isa.0 {
        // SAFETY: an `Isa` of this kind comes only from `Isa::detect`,
        // which found avx512f on this CPU.
        #[cfg(target_arch = "x86_64")]
        Kind::Avx512 => unsafe { fma_avx512(iters) },
        // SAFETY: an `Isa` of this kind comes only from `Isa::detect`,
        // which found avx2 and fma on this CPU.
        #[cfg(target_arch = "x86_64")]
        Kind::Avx2 => unsafe { fma_avx2(iters) },
        Kind::Baseline => fma_baseline(iters),
    }
}

/// The highest rate, in units per second, of `run(reps)`, which does
/// `reps` repetitions and returns the units (flops, bytes) they did and the
/// seconds they took: a run shorter than half of `sizes.sample` does not
/// count and doubles `reps` (those runs warm up; a run that was slowed down,
/// e.g. preempted, counts at its slower rate but never makes the later
/// runs too short to time), and the fastest of `sizes.tries` runs counts.
fn best_rate(sizes: &Sizes, mut run: impl FnMut(u64) -> (f64, f64)) -> f64 {
    let long_enough = sizes.sample.as_secs_f64() / 2.0;
    let (mut reps, mut best, mut counted) = (1u64, 0.0f64, 0);
    while counted < sizes.tries.max(1) {
        let (units, seconds) = run(reps);
        if seconds >= long_enough || reps >= 1 << 40 {
            counted += 1;
            best = best.max(units / seconds.max(1e-9));
        } else {
            reps *= 2;
        }
    }
    best
}

/// Sums `x` `reps` times; the bytes read.
fn sums(isa: Isa, x: &[f32], reps: u64) -> f64 {
    for _ in 0..reps {
        black_box(sum(isa, black_box(x)));
    }
    reps as f64 * (4 * x.len()) as f64
}

/// A buffer of `len` floats, every page written (reading pages never
/// written would read the kernel's zero page, from the cache), or why there
/// is no memory for it.
fn buffer(len: usize, value: f32) -> Result<Vec<f32>, String> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|e| {
        format!(
            "roofs: cannot allocate a {} buffer: {e}",
            mdh::machine::format_size(4 * len as u64)
        )
    })?;
    v.resize(len, value);
    Ok(v)
}

/// Runs `work` on each of `parts` in a thread of its own, all starting at
/// once (the threads' start-up is not timed); the sum of what they return
/// (NaN where a thread failed) and the seconds the slowest took.
fn on_threads<T: Send>(
    parts: impl IntoIterator<Item = T>,
    work: impl Fn(T) -> f64 + Sync,
) -> (f64, f64) {
    let parts: Vec<T> = parts.into_iter().collect();
    let start = std::sync::Barrier::new(parts.len());
    let (work, start) = (&work, &start);
    std::thread::scope(|s| {
        let running: Vec<_> = parts
            .into_iter()
            .map(|p| {
                s.spawn(move || {
                    start.wait();
                    let t = Instant::now();
                    let units = work(p);
                    (units, t.elapsed().as_secs_f64())
                })
            })
            .collect();
        running
            .into_iter()
            .map(|t| t.join().unwrap_or((f64::NAN, f64::NAN)))
            .fold((0.0f64, 0.0f64), |(u, s), (units, secs)| {
                (u + units, s.max(secs))
            })
    })
}

/// A streaming kernel: `kernel(c, a, b)` writes `c` from `a` and `b`.
type StreamKernel<'a> = dyn Fn(&mut [f32], &[f32], &[f32]) + Sync + 'a;

/// Measures the roofs with `sizes` on `threads` threads.
pub fn measure(sizes: Sizes, threads: usize) -> Result<Roofs, String> {
    let isa = Isa::detect();
    let threads = threads.max(1);
    let size = |b: usize| mdh::machine::format_size(b as u64);
    let mut rows = Vec::new();
    let mut roof = |name, unit, how: String, run: &mut dyn FnMut(u64) -> (f64, f64)| {
        let rate = best_rate(&sizes, run);
        if !(rate.is_finite() && rate > 0.0) {
            return Err(format!("roofs: {name} measured {rate} (a thread failed?)"));
        }
        rows.push(Roof {
            name,
            rate: rate / 1e9,
            unit,
            threads,
            isa: isa.name(),
            how,
        });
        Ok(rate)
    };

    let how = match isa.0 {
        #[cfg(target_arch = "x86_64")]
        Kind::Avx512 => "16 chains of 16-lane FMAs",
        #[cfg(target_arch = "x86_64")]
        Kind::Avx2 => "12 chains of 8-lane FMAs",
        Kind::Baseline => "16 chains of 4-lane multiply-adds",
    };
    let peak = roof(
        "FMA peak (f32)",
        "GFLOP/s",
        format!("{how} per thread, registers only"),
        &mut |iters| on_threads(0..threads, |_| fma(isa, black_box(iters))),
    )?;
    let bf16_peak = if has_bf16_pairs(isa) {
        roof(
            "bf16 pair peak",
            "GFLOP/s",
            "16 chains of 16-lane vdpbf16ps (two products a lane) per thread, registers only"
                .to_string(),
            &mut |iters| {
                on_threads(0..threads, |_| {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: `has_bf16_pairs` found avx512f and avx512bf16.
                    return unsafe { dpbf16_avx512(black_box(iters)) };
                    #[cfg(not(target_arch = "x86_64"))]
                    unreachable!("no bf16 pairs off x86-64")
                })
            },
        )?
    } else {
        peak
    };

    // Streaming: each buffer split among the threads, each thread's part
    // a whole number of ALIGN.
    let len = (sizes.stream / 4).div_ceil(ALIGN * threads) * ALIGN * threads;
    let chunk = len / threads;
    let (a, b, mut c) = (buffer(len, 1.0)?, buffer(len, 2.0)?, buffer(len, 0.0)?);
    let stream_sum = roof(
        "stream sum",
        "GB/s",
        format!("read-only sum over {}", size(4 * len)),
        &mut |reps| on_threads(a.chunks(chunk), |x| sums(isa, x, reps)),
    )?;
    // Copy and triad: `kernel(c, a, b)` on each thread's parts, `arrays`
    // buffers moved (bytes counted as STREAM does).
    let mut stream = |name, what: &str, arrays: usize, kernel: &StreamKernel<'_>| {
        let how = format!("{what}, {arrays} × {}", size(4 * len));
        roof(name, "GB/s", how, &mut |reps| {
            let parts = c
                .chunks_mut(chunk)
                .zip(a.chunks(chunk))
                .zip(b.chunks(chunk));
            on_threads(parts, |((c, a), b)| {
                for _ in 0..reps {
                    kernel(black_box(&mut *c), a, b);
                }
                reps as f64 * (4 * arrays * a.len()) as f64
            })
        })
    };
    let stream_copy = stream("stream copy", "c = a (memcpy)", 2, &|c, a, _| {
        c.copy_from_slice(a)
    })?;
    let stream_triad = stream("stream triad", "c = a + s·b", 3, &|c, a, b| {
        triad(isa, c, a, b, 1.5)
    })?;
    drop((a, b, c));

    // L2: each thread sums a buffer of its own, over and over.
    let l2_len = (sizes.l2 / 4).div_ceil(ALIGN) * ALIGN;
    let l2_bufs = (0..threads)
        .map(|_| buffer(l2_len, 1.0))
        .collect::<Result<Vec<_>, _>>()?;
    roof(
        "L2 sum",
        "GB/s",
        format!(
            "read-only sum over {} per thread, repeated",
            size(4 * l2_len)
        ),
        &mut |reps| on_threads(&l2_bufs, |x| sums(isa, x, reps)),
    )?;
    Ok(Roofs {
        rows,
        limits: Limits {
            flops: peak,
            bf16_flops: bf16_peak,
            bytes: stream_sum.max(stream_copy).max(stream_triad),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 GFLOP/s, 10 GB/s: the ridge at 10 flops per byte.
    const LIMITS: Limits = Limits {
        flops: 100e9,
        bf16_flops: 200e9,
        bytes: 10e9,
    };

    #[test]
    fn roofline_is_bandwidth_below_the_ridge_and_the_peak_above() {
        assert_eq!(roofline(0.25, LIMITS), 2.5e9);
        assert_eq!(roofline(10.0, LIMITS), 100e9);
        assert_eq!(roofline(1000.0, LIMITS), 100e9);
    }

    #[test]
    fn pct_of_roof_by_intensity() {
        // dot-like: 2 flops per 8 bytes; 1 GB in 0.2 s is 50 % of 10 GB/s.
        let (f, b) = (Some(0.25e9), Some(1e9));
        assert_eq!(LIMITS.min_seconds(f, b), Some(0.1));
        assert_eq!(LIMITS.pct_of_roof(f, b, 0.2), Some(50.0));
        // Compute-bound: 1e11 flops over 1e9 bytes; 1 s is the peak.
        assert_eq!(LIMITS.pct_of_roof(Some(1e11), Some(1e9), 1.0), Some(100.0));
        assert_eq!(LIMITS.pct_of_roof(Some(1e11), Some(1e9), 4.0), Some(25.0));
        // Flops alone: the FMA peak; bytes alone: the bandwidth.
        assert_eq!(LIMITS.pct_of_roof(Some(50e9), None, 1.0), Some(50.0));
        // bf16 products: the bf16 peak for the FMA's.
        let bf16 = LIMITS.of_bf16_products();
        assert_eq!(bf16.pct_of_roof(Some(50e9), None, 1.0), Some(25.0));
        assert_eq!(bf16.pct_of_roof(Some(0.25e9), Some(1e9), 0.2), Some(50.0));
        assert_eq!(LIMITS.pct_of_roof(None, Some(5e9), 1.0), Some(50.0));
        // Neither, zeros, or no time: no roof.
        assert_eq!(LIMITS.pct_of_roof(None, None, 1.0), None);
        assert_eq!(LIMITS.pct_of_roof(Some(0.0), Some(0.0), 1.0), None);
        assert_eq!(LIMITS.pct_of_roof(Some(1e9), None, 0.0), None);
    }

    #[test]
    fn every_instruction_set_computes_the_same() {
        let x: Vec<f32> = (0..1000).map(|i| (i % 7) as f32).collect();
        let y: Vec<f32> = (0..1000).map(|i| (i % 5) as f32).collect();
        let want: f32 = x.iter().sum();
        for isa in [Isa::detect(), Isa(Kind::Baseline)] {
            assert_eq!(sum(isa, &x), want, "{}", isa.name());
            let mut out = vec![f32::NAN; 1000];
            triad(isa, &mut out, &x, &y, 0.5);
            assert!(out
                .iter()
                .zip(x.iter().zip(&y))
                .all(|(o, (a, b))| *o == a + 0.5 * b));
            assert!(fma(isa, 3) > 0.0);
        }
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(count_cpus("0-7,16-23\n"), Some(16));
        assert_eq!(count_cpus("3"), Some(1));
        assert_eq!(count_cpus("0,2,4-5"), Some(4));
        assert_eq!(count_cpus("7-3"), None);
        assert_eq!(count_cpus("x"), None);
    }

    #[test]
    fn roofs_measure_finite_positive_rates() {
        let sizes = Sizes {
            stream: 1 << 20,
            l2: 64 << 10,
            sample: Duration::from_millis(2),
            tries: 1,
        };
        let roofs = measure(sizes, 2).unwrap();
        let names: Vec<_> = roofs.rows.iter().map(|r| r.name).collect();
        // The bf16 pair peak where the CPU has it.
        let pairs = has_bf16_pairs(Isa::detect());
        let mut want = vec!["FMA peak (f32)"];
        want.extend(pairs.then_some("bf16 pair peak"));
        want.extend(["stream sum", "stream copy", "stream triad", "L2 sum"]);
        assert_eq!(names, want);
        for r in &roofs.rows {
            assert!(r.rate.is_finite() && r.rate > 0.0, "{}: {}", r.name, r.rate);
            assert_eq!(r.threads, 2);
        }
        let l = roofs.limits;
        assert!(l.flops.is_finite() && l.flops > 0.0);
        assert!(pairs || l.bf16_flops == l.flops);
        assert!(l.bytes.is_finite() && l.bytes > 0.0);
    }

    #[test]
    fn sizes_exceed_the_caches() {
        let s = Sizes::for_machine(2, true);
        let m = &mdh::machine::host().machine;
        assert!(s.stream >= MIN_STREAM);
        assert!(m.l3.is_none_or(|l3| s.stream as u64 >= 4 * l3));
        assert!(m.l2.is_none_or(|l2| s.l2 as u64 <= l2 / 2));
    }
}
