mdh::mdh! {
    /// Reduction: `s = Σ_i x[i]`.
    pub kernel reduce {
        inp(x: f32[N]),
        out(s: f32[]),
        out_view(s: |i| ()),
        md_hom[N](|a| a, (PW(+))),
        inp_view(x: |i| (i)),
    }
}
