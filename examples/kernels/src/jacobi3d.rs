mdh::mdh! {
    /// 7-point Jacobi stencil: a weighted sum of a point (weight 0.4) and its
    /// six neighbours (weight 0.1 each).
    pub kernel jacobi3d {
        inp(v: f32[N + 2, M + 2, L + 2]),
        out(w: f32[N, M, L]),
        out_view(w: |i, j, k| (i, j, k)),
        md_hom[N, M, L](
            |c, xm, xp, ym, yp, zm, zp| 0.4 * c + 0.1 * (xm + xp + ym + yp + zm + zp),
            (CC, CC, CC)
        ),
        inp_view(v: [
            |i, j, k| (i + 1, j + 1, k + 1),
            |i, j, k| (i, j + 1, k + 1),
            |i, j, k| (i + 2, j + 1, k + 1),
            |i, j, k| (i + 1, j, k + 1),
            |i, j, k| (i + 1, j + 2, k + 1),
            |i, j, k| (i + 1, j + 1, k),
            |i, j, k| (i + 1, j + 1, k + 2),
        ]),
    }
}
