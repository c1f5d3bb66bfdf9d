mdh::mdh! {
    /// Multi-channel convolution with stride 2 (NHWC input, KRSC filter,
    /// NPQK output), as in ResNet-50's first layer:
    /// `O[n, p, q, k] = Σ_{r, s, c} I[n, 2p + r, 2q + s, c] · F[k, r, s, c]`.
    /// The input's extent is exactly what the index functions read:
    /// `2 (P - 1) + R = 2P + R - 2`.
    pub kernel mcc {
        inp(I: f32[N, 2 * P + R - 2, 2 * Q + S - 2, C], F: f32[K, R, S, C]),
        out(O: f32[N, P, Q, K]),
        out_view(O: |n, p, q, k, r, s, c| (n, p, q, k)),
        md_hom[N, P, Q, K, R, S, C](|x, w| x * w, (CC, CC, CC, CC, PW(+), PW(+), PW(+))),
        inp_view(
            I: |n, p, q, k, r, s, c| (n, 2 * p + r, 2 * q + s, c),
            F: |n, p, q, k, r, s, c| (k, r, s, c),
        ),
    }
}
