//! What candidates are checked with, by mdh-tune on the CPU (in its
//! scratch crate) and on GPUs, and by run-time GPU tuning
//! (`gpu::tune`): the inputs, the initial outputs, the tolerance
//! and the comparison with the reference results.

use mdh_rt::desc::{KernelDesc, SizeCode};
use mdh_rt::types::{DimKind, ScalarType};
use mdh_rt::value::{bf16, f16, Buffer, Value};

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
            t if t.is_half() => Value::F64(r as f64 / (1u32 << 24) as f64)
                .cast(t)
                .unwrap_or(Value::U8(0)),
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

/// A tolerance of float results: `|a - b| <= rel · max(|a|, |b|) + floor`,
/// relative, with an absolute floor for results near zero (a difference of
/// nearly equal terms keeps their absolute rounding error, which no
/// relative bound covers): `16 · ε · √terms` for a type of machine epsilon
/// `ε` and results that reduce `terms` terms of magnitude at most 1, the
/// inputs' range (the derivation is in examples/src/check.rs). An `f64`
/// converts to a relative tolerance of results without a reduction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tol {
    /// Relative to the larger magnitude of the two values.
    pub rel: f64,
    /// Terms of the longest reduction behind one result (1: none).
    pub terms: usize,
}

impl Tol {
    /// Equal values only (and NaN with NaN).
    pub const EXACT: Tol = Tol { rel: 0.0, terms: 1 };

    /// `extra` more relative tolerance (a plan's own precision).
    pub fn plus(self, extra: f64) -> Tol {
        Tol {
            rel: self.rel + extra,
            ..self
        }
    }

    /// The absolute floor for a type of machine epsilon `eps` (none for
    /// [`Tol::EXACT`]).
    pub fn floor(self, eps: f64) -> f64 {
        if self.rel == 0.0 {
            return 0.0;
        }
        16.0 * eps * (self.terms.max(1) as f64).sqrt()
    }

    /// Whether the values `a` and `b` agree: floats by [`Tol::close`] with
    /// their type's machine epsilon, `f16` and `bf16` also at least
    /// `4 · ε · √terms` relative (their own ε: each of their operations
    /// rounds to the type, sums included, so reductions in other orders
    /// differ by that much), other types exactly.
    pub fn agree(self, a: Value, b: Value) -> bool {
        let half = |eps: f64| Tol {
            rel: match self.rel {
                0.0 => 0.0,
                rel => rel.max(4.0 * eps * (self.terms.max(1) as f64).sqrt()),
            },
            ..self
        };
        match (a, b) {
            (Value::F32(a), Value::F32(b)) => self.close(a as f64, b as f64, f32::EPSILON as f64),
            (Value::F64(a), Value::F64(b)) => self.close(a, b, f64::EPSILON),
            (Value::F16(a), Value::F16(b)) => {
                let eps = f16::EPSILON.to_f64();
                half(eps).close(a.to_f64(), b.to_f64(), eps)
            }
            (Value::Bf16(a), Value::Bf16(b)) => {
                let eps = bf16::EPSILON.to_f64();
                half(eps).close(a.to_f64(), b.to_f64(), eps)
            }
            (a, b) => a == b,
        }
    }

    /// Whether `a` and `b`, of a type of machine epsilon `eps`, agree (NaN
    /// with NaN).
    pub fn close(self, a: f64, b: f64, eps: f64) -> bool {
        if a.is_nan() || b.is_nan() {
            return a.is_nan() && b.is_nan();
        }
        a == b || (a - b).abs() <= self.rel * a.abs().max(b.abs()) + self.floor(eps)
    }
}

impl From<f64> for Tol {
    fn from(rel: f64) -> Tol {
        Tol { rel, terms: 1 }
    }
}

/// The tolerance of results that reduce `n` terms of one sign, summed in
/// other orders than the interpreter's: max(1e-4, 4 ε √n) relative (f32's
/// ε), with the floor of `n` terms.
pub fn sum_tol(n: usize) -> Tol {
    Tol {
        rel: 1e-4f64.max(4.0 * f32::EPSILON as f64 * (n as f64).sqrt()),
        terms: n,
    }
}

/// The tolerance of a kernel's results at `sizes` ([`sum_tol`] of its
/// reduced points).
pub fn tolerance(desc: &KernelDesc, sizes: &[usize]) -> Tol {
    let reduced: usize = desc
        .kinds
        .iter()
        .zip(desc.dims.iter())
        .filter(|(kd, _)| **kd != DimKind::Cc)
        .map(|(_, c)| KernelDesc::eval_size(c, sizes).unwrap_or(1))
        .product();
    sum_tol(reduced)
}

/// The first element that differs from the reference, if any.
pub fn mismatch(got: &[Buffer], want: &[Buffer], tol: Tol) -> Option<String> {
    for (o, (g, w)) in got.iter().zip(want).enumerate() {
        for i in 0..g.len() {
            if !tol.agree(g.get(i), w.get(i)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// 16-bit float results compare within their own ε (`f16`: 2⁻¹⁰,
    /// `bf16`: 2⁻⁷), grown with the reduction's length; exact stays exact.
    #[test]
    fn half_results_agree_within_their_own_epsilon() {
        let h = |x: f32| Value::F16(f16::from_f32(x));
        let b = |x: f32| Value::Bf16(bf16::from_f32(x));
        let tol = sum_tol(1);
        // One f16 ulp at 1 (about 1e-3) is 10 times f32's tolerance; the
        // floor 16 · ε and 4 · ε relative allow about 0.02 there.
        assert!(tol.agree(h(1.0), h(1.0 + 1.0 / 1024.0)));
        assert!(!tol.agree(h(1.0), h(1.03)));
        assert!(tol.agree(b(100.0), b(100.5)));
        assert!(!tol.agree(b(100.0), b(104.0)));
        // 10 000 terms: 4 · ε · 100 relative.
        assert!(sum_tol(10_000).agree(b(100.0), b(104.0)));
        assert!(!Tol::EXACT.agree(h(1.0), h(1.0 + 1.0 / 1024.0)));
        assert!(Tol::EXACT.agree(h(f32::NAN), h(f32::NAN)));
        assert!(!sum_tol(1).agree(Value::F32(1.0), Value::F32(1.001)));
    }
}
