/// The match weights of [`prl`] and the encoding of its result, for host code
/// that builds inputs or decodes the output.
pub mod prl_codec {
    /// Weight of a record pair (the same formula as `prl`'s scalar function).
    pub fn weight(nf: i32, nl: i32, ny: i32, ef: i32, el: i32, ey: i32) -> i64 {
        let wf = if nf == ef { 8 } else { -2 };
        let wl = if nl == el { 12 } else { -3 };
        let dy = ny.wrapping_sub(ey);
        let wy = if dy == 0 {
            5
        } else if dy == 1 || dy == -1 {
            2
        } else {
            -4
        };
        (wf + wl + wy) as i64
    }

    /// The scalar `prl` combines: the weight in the high 32 bits, and
    /// `2^32 - 1 - j` in the low ones, so that `max` prefers the higher
    /// weight and, among equal weights, the smaller index `j`.
    pub fn encode(weight: i64, j: usize) -> i64 {
        weight * 4294967296 + (4294967295 - j as i64)
    }

    /// `(weight, j)` of an encoded value.
    pub fn decode(x: i64) -> (i64, usize) {
        let w = x.div_euclid(4294967296);
        let j = 4294967295 - x.rem_euclid(4294967296);
        (w, j as usize)
    }
}
mdh::mdh! {
    /// Probabilistic record linkage: for each record `i` of the first data set
    /// (fields `n_first`, `n_last`, `n_year`), the best match `j` of the
    /// second one (`e_*`), by a sum of field-agreement weights. The result is
    /// `prl_codec::encode(weight, j)` of the best pair, combined by a
    /// user-defined max (associative and commutative: a total order's max).
    pub kernel prl {
        inp(n_first: i32[I], n_last: i32[I], n_year: i32[I],
            e_first: i32[J], e_last: i32[J], e_year: i32[J]),
        out(best: i64[I]),
        out_view(best: |i, j| (i)),
        md_hom[I, J](
            |[i, j], nf, nl, ny, ef, el, ey| {
                let wf = if nf == ef { 8 } else { -2 };
                let wl = if nl == el { 12 } else { -3 };
                let dy = ny - ey;
                let wy = if dy == 0 { 5 } else if dy == 1 || dy == -1 { 2 } else { -4 };
                (wf + wl + wy) as i64 * 4294967296 + (4294967295 - j as i64)
            },
            (CC, PW(|a, b| if a > b { a } else { b }))
        ),
        inp_view(
            n_first: |i, j| (i), n_last: |i, j| (i), n_year: |i, j| (i),
            e_first: |i, j| (j), e_last: |i, j| (j), e_year: |i, j| (j),
        ),
    }
}
