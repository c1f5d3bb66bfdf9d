//! The mdh kernels of the benchmark that `mdh-example-kernels` does not define with
//! the benchmark's exact shapes.

use mdh::mdh;

mdh! {
    /// ResNet-50's first layer as the benchmark (and oneDNN) state it: stride
    /// 2, NHWC input of extent `2P + R - 1` (= 230 for P = 112, R = 7, i.e.
    /// 224 plus the padding 3 on each side), KRSC filter, NPQK output:
    /// `O[n, p, q, k] = Σ_{r, s, c} I[n, 2p + r, 2q + s, c] · F[k, r, s, c]`.
    /// The same computation as `mdh_example_kernels::mcc`, whose input is exactly
    /// the `2P + R - 2` rows and columns that are read; the last input row
    /// and column are not read. Named `mcc` so that both share a config.
    pub kernel mcc {
        inp(I: f32[N, 2 * P + R - 1, 2 * Q + S - 1, C], F: f32[K, R, S, C]),
        out(O: f32[N, P, Q, K]),
        out_view(O: |n, p, q, k, r, s, c| (n, p, q, k)),
        md_hom[N, P, Q, K, R, S, C](|x, w| x * w, (CC, CC, CC, CC, PW(+), PW(+), PW(+))),
        inp_view(
            I: |n, p, q, k, r, s, c| (n, 2 * p + r, 2 * q + s, c),
            F: |n, p, q, k, r, s, c| (k, r, s, c),
        ),
    }
}
