//! When the reference interpreter can check candidates, and when the default
//! plan's result must do instead (CPU and GPU tuning alike).

use mdh_core::desc::KernelDesc;
use mdh_core::Kernel;

/// Points of the md_hom index space up to which the reference interpreter
/// checks candidates; beyond, it would take minutes, and candidates are
/// compared with the default plan's result instead.
const REFERENCE_POINTS: f64 = (1u64 << 27) as f64;
/// Floating-point terms per reduced result up to which the interpreter's
/// sequential sum is a reference: on an H100, a dot product of 2^24 terms
/// in [0, 1) summed sequentially in f32 came out 2.2% low, where every GPU
/// plan (tree reductions) agreed with each other within 1e-6.
const REFERENCE_FLOAT_TERMS: f64 = (1u64 << 14) as f64;

/// Why the reference interpreter is no reference for `k` over the md_hom
/// `extents`, if it is not: too slow, or a float reduction too long for its
/// sequential sum.
pub fn interpreter_unfit(k: &Kernel, desc: &KernelDesc, extents: &[usize]) -> Option<String> {
    let points: f64 = extents.iter().map(|&e| e as f64).product();
    let reduced: f64 = (0..extents.len())
        .filter(|&x| !desc.kinds[x].is_kept())
        .map(|x| extents[x] as f64)
        .product();
    let floats = k.outputs.iter().any(|b| b.ty.is_float());
    if points > REFERENCE_POINTS {
        Some(format!(
            "the reference interpreter is too slow for {points:.2e} points"
        ))
    } else if floats && reduced > REFERENCE_FLOAT_TERMS {
        Some(format!(
            "the reference interpreter's sequential sums of {reduced:.0} floating-point terms are less exact than the plans' trees"
        ))
    } else {
        None
    }
}
