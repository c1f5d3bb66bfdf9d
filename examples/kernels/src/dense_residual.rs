mdh::mdh! {
    /// A dense layer with a scaled residual: `y = alpha · (A · B) + R`, the
    /// product in one stage, the scale and the residual add in the next (an
    /// epilogue with a param and a second input of the product's shape).
    pub kernel dense_residual {
        inp(A: f32[I, K], B: f32[K, J], R: f32[I, J]),
        out(y: f32[I, J]),
        params(alpha: f32),
        tmp(t: f32[I, J]),
        stage product {
            out_view(t: |i, j, k| (i, j)),
            md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
            inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
        },
        stage residual {
            out_view(y: |i, j| (i, j)),
            md_hom[I, J](|v, r| alpha * v + r, (CC, CC)),
            inp_view(t: |i, j| (i, j), R: |i, j| (i, j)),
        },
    }
}
