//! When the reference interpreter can check candidates, and when the default
//! plan's result must do instead (CPU and GPU tuning alike).

use mdh_core::desc::KernelDesc;
use mdh_core::spec::DimKind;
use mdh_core::Checked;

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
/// sequential sum. The interpreter evaluates every output point on its own:
/// it sums all points along PW dimensions and, along a PS dimension, all
/// points up to the output's, so a scan of `n` costs it `n²/2` points (the
/// examples' scan of 2^24 would take days) and sums up to `n` terms.
pub fn interpreter_unfit(k: &Checked, desc: &KernelDesc, extents: &[usize]) -> Option<String> {
    let kinds = &desc.kinds;
    let points: f64 = (0..extents.len())
        .map(|x| {
            let e = extents[x] as f64;
            match kinds[x] {
                DimKind::Ps => e * (e + 1.0) / 2.0,
                _ => e,
            }
        })
        .product();
    let reduced: f64 = (0..extents.len())
        .filter(|&x| kinds[x] != DimKind::Cc)
        .map(|x| extents[x] as f64)
        .product();
    let floats = k.outputs.iter().any(|b| b.ty.is_float());
    if points > REFERENCE_POINTS {
        Some(format!(
            "the reference interpreter is too slow for {points:.2e} point evaluations"
        ))
    } else if floats && reduced > REFERENCE_FLOAT_TERMS {
        Some(format!(
            "the reference interpreter's sequential sums of {reduced:.0} floating-point terms are less exact than the plans' trees"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::tests::example;

    #[test]
    fn scans_cost_the_interpreter_quadratic_time_and_long_sums() {
        let unfit = |name: &str, extents: &[usize]| {
            let k = example(name);
            interpreter_unfit(&k, &KernelDesc::from_kernel(&k), extents)
        };
        // 2^24 points, but 2^47 evaluations.
        assert!(unfit("scan", &[1 << 24]).is_some_and(|w| w.contains("slow")));
        assert_eq!(unfit("scan", &[1 << 12]), None);
        // Few evaluations, but sums of 2^16 floats (a scan of 64 row sums).
        assert!(unfit("mbbs", &[64, 1024]).is_some_and(|w| w.contains("terms")));
        assert_eq!(unfit("matvec", &[4096, 4096]), None);
    }
}
