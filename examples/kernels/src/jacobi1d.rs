mdh::mdh! {
    /// 3-point Jacobi stencil with run-time weights:
    /// `w[i] = c0 · (v[i] + v[i + 2]) + c1 · v[i + 1]`.
    pub kernel jacobi1d {
        inp(v: f32[N + 2]),
        out(w: f32[N]),
        params(c0: f32, c1: f32),
        out_view(w: |i| (i)),
        md_hom[N](|l, m, r| c0 * (l + r) + c1 * m, (CC)),
        inp_view(v: [|i| (i), |i| (i + 1), |i| (i + 2)]),
    }
}
