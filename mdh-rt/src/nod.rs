//! The NOD layer's parts (the node layer over MPI, `mdh`'s `mpi` feature):
//! the default split and a config entry's, shared by the runtime and the
//! tuner.

use crate::DimKind;

/// The default parts per dimension for `ranks`: kept dimensions first, then
/// reductions (as the CPU's COR layer splits), each the largest divisor of
/// the ranks still to place that its extent can feed; ranks no dimension
/// can feed go to the first one (and idle).
pub fn default_nod(extents: &[usize], kinds: &[DimKind], ranks: usize) -> Vec<usize> {
    let mut nod = vec![1; extents.len()];
    let order = (0..extents.len())
        .filter(|&d| kinds[d].is_kept())
        .chain((0..extents.len()).filter(|&d| !kinds[d].is_kept()));
    let mut left = ranks.max(1);
    for d in order {
        let f = (1..=left.min(extents[d].max(1)))
            .rev()
            .find(|&f| left.is_multiple_of(f))
            .unwrap_or(1);
        nod[d] = f;
        left /= f;
    }
    if let Some(first) = nod.first_mut() {
        *first *= left;
    }
    nod
}

/// A config entry's `nod` (all 0: unset) if its parts fit `ranks`.
pub fn configured_nod(nod: &[usize], ranks: usize) -> Option<&[usize]> {
    (nod.iter().all(|&p| p > 0) && nod.iter().product::<usize>() == ranks).then_some(nod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use DimKind::*;

    #[test]
    fn default_parts_split_kept_dimensions_first_and_multiply_to_the_ranks() {
        assert_eq!(default_nod(&[100, 100], &[Cc, Pw], 4), vec![4, 1]);
        assert_eq!(default_nod(&[3, 100], &[Cc, Pw], 4), vec![2, 2]);
        assert_eq!(default_nod(&[100, 3], &[Pw, Cc], 6), vec![2, 3]);
        assert_eq!(default_nod(&[1, 1], &[Cc, Pw], 3), vec![3, 1]);
        assert_eq!(default_nod(&[0], &[Pw], 2), vec![2]);
    }

    #[test]
    fn a_configured_nod_is_taken_only_for_its_number_of_ranks() {
        static NOD: [usize; 2] = [2, 3];
        static UNSET: [usize; 2] = [0, 0];
        assert_eq!(configured_nod(&NOD, 6), Some(&NOD[..]));
        assert_eq!(configured_nod(&NOD, 4), None);
        assert_eq!(configured_nod(&UNSET, 1), None);
    }
}
