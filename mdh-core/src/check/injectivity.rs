//! Output index functions: no PW dimension, injective over kept dimensions.

use crate::diagnostics::Diagnostics;
use crate::spec::parsed::Kernel;
use crate::spec::DimKind;

pub(super) fn check_output_index_fns(k: &Kernel, errs: &mut Diagnostics) {
    let kinds = k.dim_kinds();
    let nd = k.dims.len();
    for v in &k.out_view {
        let buf = v.buffer.to_string();
        // Two accesses with the same index function write the same elements.
        for (j, g) in v.accesses.iter().enumerate() {
            if g.params.len() != nd {
                continue;
            }
            let same = v.accesses[..j]
                .iter()
                .position(|f| f.params.len() == nd && f.components == g.components);
            if let Some(i) = same {
                errs.error(
                    g.range,
                    format!(
                        "both index functions of `{buf}` write the same elements (index functions {} and {} of `{buf}` in out_view are equal); remove one of them, or write the second value to another output buffer or to another part of `{buf}` (a different index function, with a larger buffer)",
                        i + 1,
                        j + 1,
                    ),
                );
            }
        }
        for f in &v.accesses {
            let dim_name = |d: usize| -> String {
                match f.params.get(d) {
                    Some(p) => format!("`{p}` (dimension {})", d + 1),
                    None => format!("dimension {}", d + 1),
                }
            };
            let mut uses_pw = false;
            for (c, comp) in f.components.iter().enumerate() {
                let span = f.component_ranges.get(c).copied().unwrap_or(f.body_range);
                for (d, kind) in kinds.iter().enumerate() {
                    if *kind == DimKind::Pw && comp.dims.get(d).copied().unwrap_or(0) != 0 {
                        uses_pw = true;
                        errs.error(
                            span,
                            format!(
                                "this output index uses {}, which is reduced by PW, so all its values combine into one output element; remove it from the output index function or make the dimension CC",
                                dim_name(d)
                            ),
                        );
                    }
                }
            }
            if uses_pw {
                continue;
            }
            let kept: Vec<usize> = (0..kinds.len())
                .filter(|&d| kinds.get(d).is_some_and(|k| k.is_kept()))
                .collect();
            let matrix: Vec<Vec<i128>> = f
                .components
                .iter()
                .map(|c| {
                    kept.iter()
                        .map(|&d| c.dims.get(d).copied().unwrap_or(0) as i128)
                        .collect()
                })
                .collect();
            match rank(matrix, kept.len()) {
                Some(r) if r == kept.len() => {}
                Some(_) => {
                    let missing: Vec<String> = kept
                        .iter()
                        .filter(|&&d| f.components.iter().all(|c| c.dims.get(d).copied().unwrap_or(0) == 0))
                        .map(|&d| dim_name(d))
                        .collect();
                    let which = if missing.is_empty() {
                        "its kept dimensions are combined so that different points map to the same index".to_string()
                    } else {
                        format!("it does not use {}", missing.join(", "))
                    };
                    errs.error(
                        f.body_range,
                        format!(
                            "this output index function is not injective over the kept (CC and PS) dimensions ({which}), so two points of the index space would write the same element of `{buf}`; add the missing dimension to the output index function or make that dimension PW"
                        ),
                    );
                }
                None => errs.error(
                    f.body_range,
                    "the coefficients of this output index function are too large to check that it is injective; use smaller coefficients",
                ),
            }
        }
    }
}

fn gcd128(mut a: i128, mut b: i128) -> i128 {
    a = a.checked_abs().unwrap_or(0);
    b = b.checked_abs().unwrap_or(0);
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// Rank of an integer matrix (rows of length `cols`), by fraction-free
/// Gaussian elimination with row-gcd normalization. `None` on overflow.
fn rank(mut m: Vec<Vec<i128>>, cols: usize) -> Option<usize> {
    if m.iter().any(|r| r.len() != cols) {
        return None;
    }
    let rows = m.len();
    let mut r = 0;
    for c in 0..cols {
        if r >= rows {
            break;
        }
        let Some(p) = (r..rows).find(|&i| m[i][c] != 0) else {
            continue;
        };
        m.swap(r, p);
        let pivot_row = m[r].clone();
        let pv = pivot_row[c];
        for row in m.iter_mut().skip(r + 1) {
            let f = row[c];
            if f == 0 {
                continue;
            }
            for j in c..cols {
                row[j] = row[j]
                    .checked_mul(pv)?
                    .checked_sub(pivot_row[j].checked_mul(f)?)?;
            }
            let g = row.iter().fold(0i128, |g, &x| gcd128(g, x));
            if g > 1 {
                for x in row.iter_mut() {
                    *x /= g;
                }
            }
        }
        r += 1;
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::rank;

    #[test]
    fn rank_is_exact() {
        assert_eq!(rank(vec![vec![1, 0], vec![0, 1]], 2), Some(2));
        assert_eq!(rank(vec![vec![1, 1], vec![2, 2]], 2), Some(1));
        assert_eq!(rank(vec![vec![1, 1]], 2), Some(1));
        assert_eq!(rank(vec![], 0), Some(0));
        assert_eq!(
            rank(vec![vec![2, 3, 0], vec![4, 6, 1], vec![0, 0, 5]], 3),
            Some(2)
        );
        assert_eq!(
            rank(
                vec![vec![i64::MAX as i128, 1], vec![1, i64::MAX as i128]],
                2
            ),
            Some(2)
        );
    }
}
