mdh::mdh! {
    /// Inclusive prefix sum: `y[i] = Σ_{i' <= i} x[i']`.
    pub kernel scan {
        inp(x: f32[N]),
        out(y: f32[N]),
        out_view(y: |i| (i)),
        md_hom[N](|a| a, (PS(+))),
        inp_view(x: |i| (i)),
    }
}
