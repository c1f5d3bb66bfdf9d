mdh::mdh! {
    /// Multi-channel convolution of capsule networks: every element is an
    /// `MI×MK` (input) or `MK×MJ` (filter) matrix, multiplied as matrices:
    /// `O[n,p,q,k,mi,mj] = Σ_{r,s,c,mk} I[n,p+r,q+s,c,mi,mk] · F[k,r,s,c,mk,mj]`.
    pub kernel mcc_capsule {
        inp(I: f32[N, P + R - 1, Q + S - 1, C, MI, MK], F: f32[K, R, S, C, MK, MJ]),
        out(O: f32[N, P, Q, K, MI, MJ]),
        out_view(O: |n, p, q, k, mi, mj, r, s, c, mk| (n, p, q, k, mi, mj)),
        md_hom[N, P, Q, K, MI, MJ, R, S, C, MK](
            |x, w| x * w,
            (CC, CC, CC, CC, CC, CC, PW(+), PW(+), PW(+), PW(+))
        ),
        inp_view(
            I: |n, p, q, k, mi, mj, r, s, c, mk| (n, p + r, q + s, c, mi, mk),
            F: |n, p, q, k, mi, mj, r, s, c, mk| (k, r, s, c, mk, mj),
        ),
    }
}
