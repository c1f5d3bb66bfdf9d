mdh::mdh! {
    /// Two reductions in one pass, the paper's `reduce(⊕, ⊗)`:
    /// `s = Σ_i x[i]` and `m = max_i x[i]`.
    pub kernel reduce2 {
        inp(x: f32[N]),
        out(s: f32[], m: f32[]),
        out_view(s: |i| (), m: |i| ()),
        md_hom[N](|a| (a, a), (PW(+, max))),
        inp_view(x: |i| (i)),
    }
}
