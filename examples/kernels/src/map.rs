mdh::mdh! {
    /// Map (SAXPY): `z[i] = alpha · x[i] + y[i]`.
    pub kernel map {
        inp(x: f32[N], y: f32[N]),
        out(z: f32[N]),
        params(alpha: f32),
        out_view(z: |i| (i)),
        md_hom[N](|a, b| alpha * a + b, (CC)),
        inp_view(x: |i| (i), y: |i| (i)),
    }
}
