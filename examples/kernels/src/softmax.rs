mdh::mdh! {
    /// Softmax of each row, in four stages: the row's maximum `m`, the
    /// exponentials `e = exp(x - m)`, their sum `s`, then `y = e / s`. The
    /// stages share their rows and fuse along them (guide, chapter 11): a
    /// tile of rows runs all four while it stays in cache, and `e` exists
    /// only for the tile, so each point costs one `exp`. The division is a
    /// multiplication by `1 / s`, the same for a whole row, which the
    /// compiler may compute once per row.
    pub kernel softmax {
        inp(x: f32[I, J]),
        out(y: f32[I, J]),
        tmp(m: f32[I], e: f32[I, J], s: f32[I]),
        stage rowmax {
            out_view(m: |i, j| (i)),
            md_hom[I, J](|a| a, (CC, PW(max))),
            inp_view(x: |i, j| (i, j)),
        },
        stage exps {
            out_view(e: |i, j| (i, j)),
            md_hom[I, J](|a, mx| (a - mx).exp(), (CC, CC)),
            inp_view(x: |i, j| (i, j), m: |i, j| (i)),
        },
        stage rowsum {
            out_view(s: |i, j| (i)),
            md_hom[I, J](|v| v, (CC, PW(+))),
            inp_view(e: |i, j| (i, j)),
        },
        stage normalize {
            out_view(y: |i, j| (i, j)),
            md_hom[I, J](|v, sum| v * (1.0 / sum), (CC, CC)),
            inp_view(e: |i, j| (i, j), s: |i, j| (i)),
        },
    }
}
