//! A fused epilogue under MPI (a kernel of stages' `fused::STAGE::mpi::run`):
//! the map of a rank's combined part of an output, in place and in
//! parallel, between `Job::combine` and `Job::place`.

use rayon::prelude::*;

use crate::cpu::{Region, SyncPtr};
use mdh_rt::desc::Linear;

/// `out[at] = f(point, out[at])` for every point of `region` along the
/// kept dimensions `kept` (the others at their first point), `at` the
/// output access `lin` at the point; in parallel over the outermost kept
/// dimension. The checker makes an output access injective over the kept
/// dimensions, so no two points share an element.
///
/// # Panics
/// Where an offset lies outside `out` (the job bound the access inside it).
pub fn map_part<T: Copy + Send, const D: usize>(
    region: &Region<D>,
    kept: &[usize],
    lin: &Linear,
    out: &mut [T],
    f: impl Fn(&[usize; D], T) -> T + Sync,
) {
    let first: [usize; D] = region.map(|r| r.0);
    if kept.iter().any(|&d| region[d].0 >= region[d].1) {
        return;
    }
    let Some((&outer, inner)) = kept.split_first() else {
        let at = lin.at(&first);
        out[at] = f(&first, out[at]);
        return;
    };
    let len = out.len();
    let ptr = SyncPtr::new(out);
    (region[outer].0..region[outer].1)
        .into_par_iter()
        .for_each(|i| {
            let mut p = first;
            p[outer] = i;
            loop {
                let at = lin.at(&p);
                assert!(at < len, "a fused epilogue's point lies outside its output");
                // SAFETY: `at` is in bounds (asserted); distinct points are
                // distinct elements (see above), and each point is this
                // task's alone.
                unsafe { ptr.write(at, f(&p, ptr.read(at))) };
                // The next point of the inner dimensions, last fastest.
                let next = inner.iter().rev().find(|&&d| {
                    p[d] += 1;
                    if p[d] < region[d].1 {
                        return true;
                    }
                    p[d] = region[d].0;
                    false
                });
                if next.is_none() {
                    break;
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kept_point_of_the_part_is_mapped_once() {
        // A 4 × 5 output, row-major; the part rows 1..3, columns 2..5 of
        // an index space whose third dimension (reduced) starts at 7.
        let lin = Linear {
            base: 0,
            coefs: vec![5, 1, 0],
        };
        let mut out = vec![0i64; 20];
        let region: Region<3> = [(1, 3), (2, 5), (7, 9)];
        map_part(&region, &[0, 1], &lin, &mut out, |p, v| {
            assert_eq!(p[2], 7);
            v + (10 * p[0] + p[1]) as i64 + 100
        });
        for (at, &v) in out.iter().enumerate() {
            let (i, j) = (at / 5, at % 5);
            let inside = (1..3).contains(&i) && (2..5).contains(&j);
            assert_eq!(v, if inside { (10 * i + j) as i64 + 100 } else { 0 });
        }
        // An empty part maps nothing; no kept dimension: one point.
        map_part(
            &[(2, 2), (0, 5), (0, 1)],
            &[0, 1],
            &lin,
            &mut out,
            |_, _| -1,
        );
        assert!(!out.contains(&-1));
        let mut one = vec![1i64];
        let none = Linear {
            base: 0,
            coefs: vec![0],
        };
        map_part(&[(0, 4)], &[], &none, &mut one, |_, v| v + 1);
        assert_eq!(one, [2]);
    }
}
