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
