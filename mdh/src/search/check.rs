//! What candidates are checked with, by mdh-tune on the CPU (in its
//! scratch crate) and on GPUs, and by run-time GPU tuning
//! ([`mod@crate::gpu::tune`]): the inputs, the initial outputs, the tolerance
//! and the comparison with the reference results.

use mdh_rt::desc::{KernelDesc, SizeCode};
use mdh_rt::types::{DimKind, ScalarType};
use mdh_rt::value::{Buffer, Value};

/// A deterministic input buffer: floats uniform in [0, 1) (reductions of
/// one sign, see the tolerance), integers in 0..8, booleans by coin.
fn input(ty: ScalarType, len: usize, seed: &mut u64) -> Buffer {
    let mut b = Buffer::zeros(ty, len);
    for i in 0..len {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = (*seed >> 40) as u32; // 24 bits
        let x = match ty {
            ScalarType::F32 => Value::F32(r as f32 / (1u32 << 24) as f32),
            ScalarType::F64 => Value::F64(r as f64 / (1u32 << 24) as f64),
            ScalarType::Bool => Value::Bool(r & 1 == 1),
            t => Value::U8((r % 8) as u8).cast(t).unwrap_or(Value::U8(0)),
        };
        b.set(i, x);
    }
    b
}

/// The value of a scalar param in tuning runs.
pub fn param(t: ScalarType) -> Value {
    match t {
        ScalarType::F32 => Value::F32(0.5),
        ScalarType::F64 => Value::F64(0.5),
        ScalarType::Bool => Value::Bool(true),
        t => Value::U8(1).cast(t).unwrap_or(Value::U8(1)),
    }
}

/// The inputs (deterministic) and the initial outputs of the sizes, of
/// element types `in_types` and `out_types`: floats start as NaN, so that
/// an element the kernel forgets to write differs.
pub fn data(
    desc: &KernelDesc,
    in_types: &[ScalarType],
    out_types: &[ScalarType],
    sizes: &[usize],
) -> (Vec<Buffer>, Vec<Buffer>) {
    let len = |shape: &[SizeCode]| -> usize {
        shape
            .iter()
            .map(|c| KernelDesc::eval_size(c, sizes).unwrap_or(0))
            .product()
    };
    let mut seed = 0x5EED;
    let inputs: Vec<Buffer> = in_types
        .iter()
        .zip(desc.inputs.iter())
        .map(|(&t, d)| input(t, len(&d.shape), &mut seed))
        .collect();
    let init: Vec<Buffer> = out_types
        .iter()
        .zip(desc.outputs.iter())
        .map(|(&t, d)| {
            let mut o = Buffer::zeros(t, len(&d.shape));
            if let Some(nan) = Value::F64(f64::NAN).cast(t).filter(|_| t.is_float()) {
                (0..o.len()).for_each(|i| o.set(i, nan));
            }
            o
        })
        .collect();
    (inputs, init)
}

/// The relative tolerance of results: reductions are summed in other
/// orders than the interpreter's, so max(1e-4, 4 ε √n) for n reduced terms
/// of one sign (the derivation is in examples/src/check.rs).
pub fn tolerance(desc: &KernelDesc, sizes: &[usize]) -> f64 {
    let reduced: usize = desc
        .kinds
        .iter()
        .zip(desc.dims.iter())
        .filter(|(kd, _)| **kd != DimKind::Cc)
        .map(|(_, c)| KernelDesc::eval_size(c, sizes).unwrap_or(1))
        .product();
    1e-4f64.max(4.0 * f32::EPSILON as f64 * (reduced as f64).sqrt())
}

fn close(a: f64, b: f64, rtol: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= rtol * 1f64.max(a.abs()).max(b.abs())
}

/// The first element that differs from the reference, if any.
pub fn mismatch(got: &[Buffer], want: &[Buffer], rtol: f64) -> Option<String> {
    for (o, (g, w)) in got.iter().zip(want).enumerate() {
        for i in 0..g.len() {
            let ok = match (g.get(i), w.get(i)) {
                (Value::F32(a), Value::F32(b)) => close(a as f64, b as f64, rtol),
                (Value::F64(a), Value::F64(b)) => close(a, b, rtol),
                (a, b) => a == b,
            };
            if !ok {
                return Some(format!(
                    "output #{o}[{i}] is {}, the reference says {}",
                    g.get(i),
                    w.get(i)
                ));
            }
        }
    }
    None
}

/// Rounds of the interleaved re-timing of the best plan against the plan
/// that runs today: enough for quartiles of each.
pub const RETIME_ROUNDS: usize = 9;

/// The least gain of an entry: a plan less than this much faster than
/// what runs today changes nothing a user would notice.
pub const MIN_GAIN: f64 = 0.03;

/// Whether re-timed samples justify writing an entry, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub write: bool,
    /// The median time of today's plan over the winner's.
    pub speedup: f64,
    /// One sentence for the user.
    pub why: String,
}

/// The winner's samples against those of the plan that runs today (taken
/// in turns): write its entry only when its median is more than
/// [`MIN_GAIN`] faster and beyond the spread of the samples, i.e. the
/// winner's upper quartile is below today's lower quartile (most of its
/// runs beat most of the others', not a lucky few).
pub fn verdict(winner: &[f64], today: &[f64]) -> Verdict {
    let quartiles = |s: &[f64]| {
        let mut s = s.to_vec();
        s.sort_by(f64::total_cmp);
        let at = |p: f64| s[((s.len() - 1) as f64 * p).round() as usize];
        [at(0.25), at(0.5), at(0.75)]
    };
    if winner.len() < 3 || today.len() < 3 {
        return Verdict {
            write: false,
            speedup: 1.0,
            why: format!(
                "too few re-timed samples ({} and {}) to tell a winner from noise",
                winner.len(),
                today.len()
            ),
        };
    }
    let ([w1, w, w3], [t1, t, _]) = (quartiles(winner), quartiles(today));
    let speedup = t / w;
    let gain = 100.0 * (1.0 - w / t);
    let change = if gain >= 0.0 {
        format!("{gain:.1} % faster")
    } else {
        format!("{:.1} % slower", -gain)
    };
    let timed = format!(
        "re-timed in turns over {} rounds, the best plan takes {} (median), the plan that runs today {}",
        winner.len().min(today.len()),
        ms(w),
        ms(t)
    );
    let (write, why) = if w >= t * (1.0 - MIN_GAIN) {
        (
            false,
            format!(
                "{timed}: {change}, not the {:.0} % faster an entry must be",
                100.0 * MIN_GAIN
            ),
        )
    } else if w3 >= t1 {
        (
            false,
            format!(
                "{timed}: {gain:.1} % faster by the medians, but within the noise (the best plan's upper quartile {} is not below today's lower quartile {})",
                ms(w3),
                ms(t1)
            ),
        )
    } else {
        (
            true,
            format!(
                "{timed}: {gain:.1} % faster, beyond the noise (quartiles {}–{} against {}–)",
                ms(w1),
                ms(w3),
                ms(t1)
            ),
        )
    };
    Verdict {
        write,
        speedup,
        why,
    }
}

/// A time in milliseconds, as the tuner prints them.
pub fn ms(t: f64) -> String {
    format!("{:.3} ms", t * 1e3)
}
