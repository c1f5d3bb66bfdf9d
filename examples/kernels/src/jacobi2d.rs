mdh::mdh! {
    /// 5-point Jacobi stencil: the mean of a point and its four neighbours.
    pub kernel jacobi2d {
        inp(v: f32[N + 2, M + 2]),
        out(w: f32[N, M]),
        out_view(w: |i, j| (i, j)),
        md_hom[N, M](|n, wst, c, e, s| 0.2 * (n + wst + c + e + s), (CC, CC)),
        inp_view(v: [
            |i, j| (i, j + 1),
            |i, j| (i + 1, j),
            |i, j| (i + 1, j + 1),
            |i, j| (i + 1, j + 2),
            |i, j| (i + 2, j + 1),
        ]),
    }
}
