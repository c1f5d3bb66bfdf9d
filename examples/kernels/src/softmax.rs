mdh::mdh! {
    /// Softmax of each row, in three stages: the row's maximum `m`, the sum
    /// `s` of `exp(x - m)`, then `y = exp(x - m) / s`.
    pub kernel softmax {
        inp(x: f32[I, J]),
        out(y: f32[I, J]),
        tmp(m: f32[I], s: f32[I]),
        stage rowmax {
            out_view(m: |i, j| (i)),
            md_hom[I, J](|a| a, (CC, PW(max))),
            inp_view(x: |i, j| (i, j)),
        },
        stage rowsum {
            out_view(s: |i, j| (i)),
            md_hom[I, J](|a, mx| (a - mx).exp(), (CC, PW(+))),
            inp_view(x: |i, j| (i, j), m: |i, j| (i)),
        },
        stage normalize {
            out_view(y: |i, j| (i, j)),
            md_hom[I, J](|a, mx, sum| (a - mx).exp() / sum, (CC, CC)),
            inp_view(x: |i, j| (i, j), m: |i, j| (i), s: |i, j| (i)),
        },
    }
}
