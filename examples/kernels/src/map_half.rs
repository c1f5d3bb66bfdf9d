mdh::mdh! {
    /// Map in the 16-bit float types: `a[i] = alpha · x[i] + y[i]` in f16
    /// and `b[i] = √|y[i]| − x[i]` in bf16 (each operation computed in f32
    /// and rounded to the type).
    pub kernel map_half {
        inp(x: f16[N], y: bf16[N]),
        out(a: f16[N], b: bf16[N]),
        params(alpha: f16),
        out_view(a: |i| (i), b: |i| (i)),
        md_hom[N](|x, y| (alpha * x + y as f16, y.abs().sqrt() - x as bf16), (CC)),
        inp_view(x: |i| (i), y: |i| (i)),
    }
}
