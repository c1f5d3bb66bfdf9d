mdh::mdh! {
    /// Dot product: `r = Σ_k x[k] · y[k]`.
    pub kernel dot {
        inp(x: f32[N], y: f32[N]),
        out(r: f32[]),
        out_view(r: |k| ()),
        md_hom[N](|a, b| a * b, (PW(+))),
        inp_view(x: |k| (k), y: |k| (k)),
    }
}
