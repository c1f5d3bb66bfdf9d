//! Helpers shared by the example binaries and the property tests: a small
//! deterministic PRNG, the reference interpreter on a kernel's `SPEC`,
//! result comparison with documented tolerances, timing and reporting.
//!
//! # Tolerances
//!
//! Integers (and `bool`s) are compared exactly: both sides compute the same
//! wrapping arithmetic, and integer reductions are exact in any order.
//!
//! Floats are compared as `|a - b| <= rtol · max(|a|, |b|) + floor` (a
//! [`Tol`]): relative, with an absolute floor for results near zero, where
//! a relative bound means nothing (a difference of nearly equal terms
//! keeps their absolute rounding error, not a relative one). The floor is
//! `16 · ε · √n` for a type of machine epsilon `ε` and results that reduce
//! `n` terms of magnitude at most 1 (the generators' range): the random
//! walk below in absolute terms, ten times over. A scalar
//! function without reduction is evaluated with the same operations in the
//! same order on both sides, so `rtol = 1e-4` ([`RTOL`]) is generous. A
//! reduction of `n` terms is evaluated in different orders (the kernel splits
//! reduced dimensions into parallel parts; the interpreter folds them in
//! lexicographic order): each order commits one rounding error of at most
//! `ε/2 · |partial sum|` per addition. With inputs of one sign (the
//! generators below produce floats in `[0, 1)` unless told otherwise) the
//! partial sums are bounded by the result, so the relative error of either
//! side is at most `n · ε` and, the rounding errors being independent and
//! zero-mean, typically `≈ ε · √n / 3`. [`sum_rtol`] allows
//! `max(1e-4, 4 · ε · √n)`, i.e. more than ten standard deviations of that
//! random walk, for both sides together: for `n = 2^24` that is `2e-3`,
//! for `n <= 2^22` it stays at `1e-4`.

use std::error::Error as StdError;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

pub use mdh::reference::{Buffer, Value};

/// The result type of the binaries' checks.
pub type Res<T = ()> = Result<T, Box<dyn StdError>>;

/// Relative tolerance of float results without a long reduction.
pub const RTOL: f64 = 1e-4;

/// The tolerance of float results (see the module documentation; the
/// tuner's checks share it); an `f64` converts to a relative tolerance of
/// results without a reduction.
pub use mdh::search::check::Tol;

/// The tolerance of float results that are reductions of `n` terms of one
/// sign (see the module documentation for the derivation).
pub fn sum_rtol(n: usize) -> Tol {
    mdh::search::check::sum_tol(n)
}

// ---------------------------------------------------------------------------
// Random inputs

/// SplitMix64: a tiny, deterministic, good-enough PRNG for test inputs.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 11) as u128 * n as u128) >> 53) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }

    /// `n` floats uniform in `[0, 1)`.
    pub fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.unit()).collect()
    }

    /// `n` floats: small integers (0..8) when `exact`, so that every sum of
    /// products below 2^24 is exact in any order and results compare exactly;
    /// else uniform in `[0, 1)`.
    pub fn f32s_or_ints(&mut self, n: usize, exact: bool) -> Vec<f32> {
        if exact {
            (0..n).map(|_| self.below(8) as f32).collect()
        } else {
            self.f32s(n)
        }
    }

    /// `n` floats uniform in `[lo, hi)`.
    pub fn f32s_in(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| lo + (hi - lo) * self.unit()).collect()
    }

    /// `n` integers uniform in `lo..hi`.
    pub fn i32s(&mut self, n: usize, lo: i32, hi: i32) -> Vec<i32> {
        let span = (hi as i64 - lo as i64).max(1) as usize;
        (0..n)
            .map(|_| (lo as i64 + self.below(span) as i64) as i32)
            .collect()
    }

    /// `n` integers uniform in `0..hi`.
    pub fn u32s(&mut self, n: usize, hi: u32) -> Vec<u32> {
        (0..n)
            .map(|_| self.below(hi.max(1) as usize) as u32)
            .collect()
    }
}

/// The number of elements of a buffer with these extents, or `None` when an
/// extent is negative or the product overflows (then the kernel must return
/// an error; callers pass an empty slice).
pub fn elems(extents: &[i128]) -> Option<usize> {
    extents.iter().try_fold(1usize, |acc, &e| {
        let e = usize::try_from(e).ok()?;
        acc.checked_mul(e)
    })
}

/// Like [`elems`], but 0 for impossible shapes (an allocation-friendly length).
pub fn len(extents: &[i128]) -> usize {
    elems(extents).unwrap_or(0)
}

// ---------------------------------------------------------------------------
// The reference interpreter

/// Runs the reference interpreter on a kernel's source (a generated module's
/// `SPEC`) with `sizes` in `Sizes::values()` order. `outputs` are overwritten
/// where the kernel's output views write.
pub fn reference(
    spec: &str,
    sizes: &[usize],
    inputs: &[Buffer],
    outputs: &mut [Buffer],
    params: &[Value],
) -> Result<(), mdh::Error> {
    let kernel = mdh::reference::program(spec)?;
    mdh::reference::run_program(&kernel, sizes, inputs, outputs, params)
}

/// Compares a kernel's result with the reference interpreter's.
///
/// `init` are the outputs' contents before the kernel ran (the interpreter
/// starts from the same contents, so elements that neither writes agree),
/// `result` is what the kernel returned and `got` its outputs afterwards.
/// A kernel error is accepted only if the interpreter fails with the same
/// kind of error; float outputs are compared with `rtol`.
#[allow(clippy::too_many_arguments)]
pub fn verify(
    spec: &str,
    sizes: &[usize],
    inputs: &[Buffer],
    params: &[Value],
    init: Vec<Buffer>,
    result: Result<(), mdh::Error>,
    got: &[Buffer],
    rtol: impl Into<Tol>,
) -> Result<(), String> {
    let rtol = rtol.into();
    let mut want = init;
    let reference = reference(spec, sizes, inputs, &mut want, params);
    match (result, reference) {
        (Err(k), Err(r)) => {
            if std::mem::discriminant(&k) == std::mem::discriminant(&r) {
                Ok(())
            } else {
                Err(format!(
                    "kernel and interpreter fail differently:\n  kernel: {k}\n  interpreter: {r}"
                ))
            }
        }
        (Err(k), Ok(())) => Err(format!("kernel failed but the interpreter succeeded: {k}")),
        (Ok(()), Err(r)) => Err(format!("kernel succeeded but the interpreter failed: {r}")),
        (Ok(()), Ok(())) => {
            if got.len() != want.len() {
                return Err(format!("{} outputs, expected {}", got.len(), want.len()));
            }
            for (o, (g, w)) in got.iter().zip(&want).enumerate() {
                compare(&format!("output #{o}"), g, w, rtol)?;
            }
            Ok(())
        }
    }
}

/// The machine epsilon of `f32`, for [`Tol::close`].
const F32_EPS: f64 = f32::EPSILON as f64;

fn mismatch_report(
    what: &str,
    bad: &[(usize, String, String)],
    count: usize,
    total: usize,
) -> String {
    let mut s = format!("{what}: {count} of {total} elements differ");
    for (i, g, w) in bad {
        let _ = write!(s, "\n  [{i}] got {g}, expected {w}");
    }
    s
}

/// Compares two buffers: exactly for integers and `bool`s, with [`Tol::agree`]
/// for floats.
pub fn compare(
    what: &str,
    got: &Buffer,
    want: &Buffer,
    rtol: impl Into<Tol>,
) -> Result<(), String> {
    let rtol = rtol.into();
    if got.ty() != want.ty() || got.len() != want.len() {
        return Err(format!(
            "{what}: got {} elements of {}, expected {} elements of {}",
            got.len(),
            got.ty(),
            want.len(),
            want.ty()
        ));
    }
    let mut bad = Vec::new();
    let mut count = 0;
    for i in 0..got.len() {
        let (g, w) = (got.get(i), want.get(i));
        if !rtol.agree(g, w) {
            count += 1;
            if bad.len() < 8 {
                bad.push((i, format!("{g:?}"), format!("{w:?}")));
            }
        }
    }
    if count == 0 {
        Ok(())
    } else {
        Err(mismatch_report(what, &bad, count, got.len()))
    }
}

/// Compares float results with values computed by a plain loop (in `f64`).
pub fn compare_f32(
    what: &str,
    got: &[f32],
    want: &[f64],
    rtol: impl Into<Tol>,
) -> Result<(), String> {
    let rtol = rtol.into();
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements, expected {}",
            got.len(),
            want.len()
        ));
    }
    let mut bad = Vec::new();
    let mut count = 0;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if !rtol.close(g as f64, w, F32_EPS) {
            count += 1;
            if bad.len() < 8 {
                bad.push((i, format!("{g}"), format!("{w}")));
            }
        }
    }
    if count == 0 {
        Ok(())
    } else {
        Err(mismatch_report(what, &bad, count, got.len()))
    }
}

/// Checks `samples` elements of a big float result (the first, the last and
/// random ones) against `want(flat_index)`, computed by a plain loop in f64.
pub fn sampled_f32(
    what: &str,
    got: &[f32],
    samples: usize,
    rtol: impl Into<Tol>,
    want: impl Fn(usize) -> f64,
) -> Result<(), String> {
    let rtol = rtol.into();
    if got.is_empty() {
        return Ok(());
    }
    let mut rng = Rng::new(got.len() as u64);
    let mut idx: Vec<usize> = vec![0, got.len() - 1];
    idx.extend((0..samples).map(|_| rng.below(got.len())));
    let mut bad = Vec::new();
    let mut count = 0;
    for &i in &idx {
        let w = want(i);
        if !rtol.close(got[i] as f64, w, F32_EPS) {
            count += 1;
            if bad.len() < 8 {
                bad.push((i, format!("{}", got[i]), format!("{w}")));
            }
        }
    }
    if count == 0 {
        Ok(())
    } else {
        Err(mismatch_report(
            &format!("{what} (sampled)"),
            &bad,
            count,
            idx.len(),
        ))
    }
}

// ---------------------------------------------------------------------------
// Command line, timing and reporting for the binaries

/// The binaries' arguments: `--quick` (small sizes), an optional size (its
/// meaning is the binary's: e.g. the matrix size of `matmul`), `--runs N`
/// (timed runs after one warm-up; 0, the default, lets [`median_time`] pick).
#[derive(Clone, Debug)]
pub struct Args {
    pub quick: bool,
    pub size: Option<usize>,
    pub runs: usize,
}

impl Args {
    pub fn parse() -> Result<Args, String> {
        let mut a = Args {
            quick: false,
            size: None,
            runs: 0,
        };
        let mut it = std::env::args().skip(1);
        while let Some(s) = it.next() {
            match s.as_str() {
                "--quick" | "-q" => a.quick = true,
                "--runs" => {
                    a.runs = it
                        .next()
                        .and_then(|r| r.parse().ok())
                        .filter(|&r| r > 0)
                        .ok_or("--runs needs a positive number")?
                }
                "--help" | "-h" => {
                    return Err(
                        "usage: [--quick] [--runs N] [SIZE]  (SIZE: the main problem size; \
                                accepts 2^k and 1e6 forms)"
                            .into(),
                    )
                }
                _ => a.size = Some(parse_size(&s).ok_or_else(|| format!("not a size: `{s}`"))?),
            }
        }
        if a.quick && a.runs == 0 {
            a.runs = 3;
        }
        Ok(a)
    }

    /// The main size: the argument if given, else `quick` or `full`.
    pub fn pick(&self, full: usize, quick: usize) -> usize {
        self.size.unwrap_or(if self.quick { quick } else { full })
    }
}

/// `4096`, `2^24`, `1e7`, `1_000`.
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.replace('_', "");
    if let Some((b, e)) = s.split_once('^') {
        return b.parse::<usize>().ok()?.checked_pow(e.parse().ok()?);
    }
    if let Some((m, e)) = s.split_once(['e', 'E']) {
        let m: usize = m.parse().ok()?;
        return m.checked_mul(10usize.checked_pow(e.parse().ok()?)?);
    }
    s.parse().ok()
}

/// Runs `f` once to warm up, then `runs` times; returns the median time.
/// `runs == 0` (the binaries' default) means 5 runs, or 3 when the warm-up
/// run took more than a second.
pub fn median_time<E>(runs: usize, mut f: impl FnMut() -> Result<(), E>) -> Result<Duration, E> {
    let t = Instant::now();
    f()?;
    let runs = match runs {
        0 if t.elapsed() > Duration::from_secs(1) => 3,
        0 => 5,
        r => r,
    };
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// Prints one result line: `name (what): median …, … GFLOP/s, … GB/s`.
pub fn report(name: &str, what: &str, t: Duration, flops: Option<f64>, bytes: Option<f64>) {
    let s = t.as_secs_f64();
    let mut line = format!("{name} ({what}): median {:.3} ms", s * 1e3);
    if let Some(f) = flops {
        let _ = write!(line, ", {:.2} GFLOP/s", f / s / 1e9);
    }
    if let Some(b) = bytes {
        let _ = write!(line, ", {:.2} GB/s", b / s / 1e9);
    }
    println!("{line}");
}

/// Prints that a check passed.
pub fn ok(what: &str) {
    println!("  ok: {what}");
}

/// The `main` of every binary: parses the arguments, runs `body`, and turns
/// an error (a failed check, a kernel error) into exit code 1.
pub fn main(name: &str, body: impl FnOnce(&Args) -> Res) -> std::process::ExitCode {
    let args = match Args::parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{name}: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match body(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: FAILED: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Runs the reference interpreter and compares, for the binaries: like
/// [`verify`], but the kernel must have succeeded, and it prints a line.
pub fn against_reference(
    what: &str,
    spec: &str,
    sizes: &[usize],
    inputs: &[Buffer],
    params: &[Value],
    got: &[Buffer],
    rtol: impl Into<Tol>,
) -> Res {
    let init: Vec<Buffer> = got.iter().map(|b| Buffer::zeros(b.ty(), b.len())).collect();
    let t = Instant::now();
    verify(spec, sizes, inputs, params, init, Ok(()), got, rtol)
        .map_err(|e| format!("{what}: {e}"))?;
    ok(&format!(
        "{what} matches the reference interpreter ({:.2} s)",
        t.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// A case of the shape of most examples: `f32` inputs and one `f32` output
/// of `out_len` elements, no params; `kernel` computes it into a
/// [`Guarded`] output, whose guards are checked, and the result is
/// [`verify`]'d against the interpreter.
pub fn f32_case(
    spec: &str,
    sizes: &[usize],
    inputs: Vec<Vec<f32>>,
    out_len: usize,
    rtol: impl Into<Tol>,
    kernel: impl FnOnce(&[Vec<f32>], &mut [f32]) -> Result<(), mdh::Error>,
) -> Result<(), String> {
    f32_case_with(spec, sizes, inputs, &[], out_len, rtol, kernel)
}

/// [`f32_case`] of a kernel with `params` (which `kernel` passes itself).
pub fn f32_case_with(
    spec: &str,
    sizes: &[usize],
    inputs: Vec<Vec<f32>>,
    params: &[Value],
    out_len: usize,
    rtol: impl Into<Tol>,
    kernel: impl FnOnce(&[Vec<f32>], &mut [f32]) -> Result<(), mdh::Error>,
) -> Result<(), String> {
    // Half of the calls write into a 64-byte aligned output (where plans
    // with `stream` write whole vectors past the caches), the others into
    // one 4 bytes off.
    let skew = sizes.iter().sum::<usize>() % 2;
    let mut out = Guarded::new(out_len, skew, f32::NAN);
    let r = kernel(&inputs, out.slice());
    // A store outside the output first: it may be what broke the values.
    let got = out.into_checked()?;
    let ins: Vec<Buffer> = inputs.into_iter().map(Buffer::from).collect();
    verify(
        spec,
        sizes,
        &ins,
        params,
        vec![vec![f32::NAN; out_len].into()],
        r,
        &[got.into()],
        rtol,
    )
}

/// An element type of a [`Guarded`] output: its guard value, a pattern
/// that the kernels under test do not compute, compared bit for bit.
pub trait Guard: Copy + std::fmt::Debug {
    /// The guard value.
    const PATTERN: Self;
    /// Whether `self` is still the guard value, bit for bit.
    fn is_guard(&self) -> bool;
}

macro_rules! guard_ints {
    ($($t:ty),*) => {$(
        impl Guard for $t {
            // 0xA5 in every byte: no index, count or small value.
            const PATTERN: $t = <$t>::from_ne_bytes([0xA5; std::mem::size_of::<$t>()]);
            fn is_guard(&self) -> bool {
                *self == Self::PATTERN
            }
        }
    )*};
}
guard_ints!(i8, u8, i16, u16, i32, u32, i64, u64);

impl Guard for f32 {
    /// A NaN with a payload that no arithmetic produces (its quiet NaNs
    /// carry the default payload or an operand's).
    const PATTERN: f32 = f32::from_bits(0x7FE5_A5A5);
    fn is_guard(&self) -> bool {
        self.to_bits() == Self::PATTERN.to_bits()
    }
}

impl Guard for f64 {
    /// As for `f32`.
    const PATTERN: f64 = f64::from_bits(0x7FFC_A5A5_A5A5_A5A5);
    fn is_guard(&self) -> bool {
        self.to_bits() == Self::PATTERN.to_bits()
    }
}

impl Guard for mdh::f16 {
    /// As for `f32`: a NaN with a payload that no conversion produces.
    const PATTERN: mdh::f16 = mdh::f16::from_bits(0x7DA5);
    fn is_guard(&self) -> bool {
        self.to_bits() == Self::PATTERN.to_bits()
    }
}

impl Guard for mdh::bf16 {
    /// As for `f16`.
    const PATTERN: mdh::bf16 = mdh::bf16::from_bits(0x7FA5);
    fn is_guard(&self) -> bool {
        self.to_bits() == Self::PATTERN.to_bits()
    }
}

/// An output with guard elements (64 bytes) on each side, which hold
/// [`Guard::PATTERN`] and are checked after the call: a store past either
/// end (a streamed store of a whole vector, an index off by one) is a
/// failure, not a silent write into a neighbour's memory.
pub struct Guarded<T> {
    buf: Vec<T>,
    start: usize,
    len: usize,
}

impl<T: Guard> Guarded<T> {
    /// Guard elements on each side: a 64-byte vector.
    pub const GUARDS: usize = 64 / std::mem::size_of::<T>();

    /// `len` elements set to `init`, starting `skew` elements past a
    /// 64-byte boundary.
    pub fn new(len: usize, skew: usize, init: T) -> Guarded<T> {
        let g = Self::GUARDS;
        let mut buf = vec![T::PATTERN; len + 3 * g + skew];
        let start = buf.as_ptr().align_offset(64) % g + g + skew;
        buf[start..start + len].fill(init);
        Guarded { buf, start, len }
    }

    /// The output itself.
    pub fn slice(&mut self) -> &mut [T] {
        &mut self.buf[self.start..self.start + self.len]
    }

    /// `Err` naming the guard elements that were written.
    pub fn check(&self) -> Result<(), String> {
        let written: Vec<String> = (0..self.buf.len())
            .filter(|&i| i < self.start || i >= self.start + self.len)
            .filter(|&i| !self.buf[i].is_guard())
            .map(|i| {
                let at = i as isize - self.start as isize;
                format!("[{at}] = {:?}", self.buf[i])
            })
            .collect();
        if written.is_empty() {
            return Ok(());
        }
        Err(format!(
            "the kernel wrote outside its output of {} elements: {}",
            self.len,
            written.join(", ")
        ))
    }

    /// The output, once [`check`](Self::check)ed.
    pub fn into_checked(self) -> Result<Vec<T>, String> {
        self.check()?;
        Ok(self.buf[self.start..self.start + self.len].to_vec())
    }
}

/// `kernel` run on a [`Guarded`] output of `len` elements set to `init`
/// (starting 64-byte aligned or one element off, by `len`'s parity): its
/// result and the output, or `Err` if it wrote outside the output.
pub fn guarded<T: Guard, R>(
    len: usize,
    init: T,
    kernel: impl FnOnce(&mut [T]) -> R,
) -> Result<(R, Vec<T>), String> {
    let mut out = Guarded::new(len, len % 2, init);
    let r = kernel(out.slice());
    Ok((r, out.into_checked()?))
}

/// Runs `$e` with `$v` bound to the vector inside a [`Buffer`].
macro_rules! each_vec {
    ($b:expr, $v:ident => $e:expr) => {
        match $b {
            Buffer::F32($v) => $e,
            Buffer::F64($v) => $e,
            Buffer::F16($v) => $e,
            Buffer::Bf16($v) => $e,
            Buffer::I8($v) => $e,
            Buffer::I16($v) => $e,
            Buffer::I32($v) => $e,
            Buffer::I64($v) => $e,
            Buffer::U8($v) => $e,
            Buffer::U16($v) => $e,
            Buffer::U32($v) => $e,
            Buffer::U64($v) => $e,
            Buffer::Bool($v) => $e,
        }
    };
}

/// Guard bytes past the end of a vector's elements, in its allocation's
/// spare capacity, for outputs that must stay `Vec`s (the interpreter's
/// [`Buffer`]s, which `run_dyn` entry points take): a store one element
/// or a vector past the end lands there, and [`check_tail`] sees it. (A
/// front guard needs a slice into a larger allocation: [`Guarded`].)
pub fn guard_tail(b: &mut Buffer) {
    each_vec!(b, v => fill_tail(v));
}

/// `Err` if a byte of the guard [`guard_tail`] put past `b`'s elements was
/// written. Only for buffers [`guard_tail`] guarded and that have not been
/// reallocated since (other spare capacity is uninitialized).
pub fn check_tail(b: &Buffer) -> Result<(), String> {
    each_vec!(b, v => tail_written(v))
}

/// Guard bytes past the elements: 64 (a vector of the widest ISA).
const TAIL_BYTES: usize = 64;
const TAIL_PATTERN: u8 = 0xA5;

fn fill_tail<T>(v: &mut Vec<T>) {
    let size = std::mem::size_of::<T>().max(1);
    v.reserve_exact(TAIL_BYTES.div_ceil(size));
    let spare = v.spare_capacity_mut();
    let bytes = std::mem::size_of_val(spare);
    // SAFETY: the spare capacity is `bytes` bytes of this allocation that
    // no element occupies; `MaybeUninit<u8>` has no validity invariant.
    let spare = unsafe {
        std::slice::from_raw_parts_mut(spare.as_mut_ptr() as *mut std::mem::MaybeUninit<u8>, bytes)
    };
    spare.fill(std::mem::MaybeUninit::new(TAIL_PATTERN));
}

fn tail_written<T>(v: &Vec<T>) -> Result<(), String> {
    let size = std::mem::size_of::<T>();
    let (len, cap) = (v.len() * size, v.capacity() * size);
    let base = v.as_ptr() as *const u8;
    let written: Vec<usize> = (len..cap)
        // SAFETY: inside the allocation (below its capacity), in bytes that
        // `fill_tail` initialized (or a stray store wrote).
        .filter(|&i| unsafe { base.add(i).read() } != TAIL_PATTERN)
        .map(|i| (i - len) / size.max(1))
        .collect();
    if written.is_empty() {
        return Ok(());
    }
    Err(format!(
        "written past the end of the output of {} elements, at element(s) {:?} after it",
        v.len(),
        written
            .iter()
            .copied()
            .collect::<std::collections::BTreeSet<_>>()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_see_a_store_just_before_or_after_an_output() {
        for skew in [0, 1] {
            let mut g = Guarded::new(5, skew, f32::NAN);
            assert_eq!(g.buf.as_ptr().wrapping_add(g.start - skew) as usize % 64, 0);
            g.slice().fill(1.0);
            assert_eq!(g.check(), Ok(()));
            let (start, end) = (g.start, g.start + g.len);
            g.buf[end] = 2.0;
            assert!(g.check().is_err_and(|e| e.contains("[5] = 2.0")));
            g.buf[end] = f32::PATTERN;
            g.buf[start - 1] = 3.0;
            assert!(g.check().is_err_and(|e| e.contains("[-1] = 3.0")));
        }
    }

    #[test]
    fn tail_guards_see_a_store_past_a_buffer() {
        let mut b = Buffer::from(vec![0u32; 7]);
        guard_tail(&mut b);
        assert_eq!(check_tail(&b), Ok(()));
        let Buffer::U32(v) = &mut b else {
            unreachable!()
        };
        v.iter_mut().for_each(|x| *x = 9);
        assert_eq!(check_tail(&b), Ok(()), "the elements are not the guard");
        let Buffer::U32(v) = &mut b else {
            unreachable!()
        };
        // SAFETY: the element after the last lies in the capacity that
        // `guard_tail` reserved: what a stray store would write.
        unsafe { v.as_mut_ptr().add(7).write(1) };
        let e = check_tail(&b).unwrap_err();
        assert!(e.contains("at element(s) {0}"), "{e}");
    }

    #[test]
    fn floats_compare_relatively_with_a_floor_near_zero() {
        let eps = f32::EPSILON as f64;
        let t = Tol::from(1e-4);
        assert!(t.close(1000.0, 1000.09, eps));
        assert!(!t.close(1000.0, 1000.2, eps));
        // Below 1 the bound stays relative: 0.5 vs 0.5001 is 2e-4 off.
        assert!(!t.close(0.5, 0.5001, eps));
        // Near zero, the floor of the reduction's length.
        assert!(t.close(0.0, 1e-6, eps));
        assert!(!t.close(0.0, 1e-5, eps));
        assert!(sum_rtol(10_000).close(0.0, 1e-5, eps));
        assert!(Tol::EXACT.close(f64::NAN, f64::NAN, eps));
        assert!(!Tol::EXACT.close(0.0, 1e-30, eps));
    }
}
