mdh::mdh! {
    /// 2-D convolution (valid, no padding):
    /// `O[p, q] = Σ_{r, s} I[p + r, q + s] · F[r, s]`.
    pub kernel conv2d {
        inp(I: f32[P + R - 1, Q + S - 1], F: f32[R, S]),
        out(O: f32[P, Q]),
        out_view(O: |p, q, r, s| (p, q)),
        md_hom[P, Q, R, S](|x, w| x * w, (CC, CC, PW(+), PW(+))),
        inp_view(I: |p, q, r, s| (p + r, q + s), F: |p, q, r, s| (r, s)),
    }
}
