mdh::mdh! {
    /// A dense layer: `y = max(A · B + bias, 0)`, the product in one stage
    /// and the bias and ReLU in the next.
    pub kernel matmul_bias_relu {
        inp(A: f32[I, K], B: f32[K, J], bias: f32[J]),
        out(y: f32[I, J]),
        tmp(t: f32[I, J]),
        stage product {
            out_view(t: |i, j, k| (i, j)),
            md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
            inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
        },
        stage epilogue {
            out_view(y: |i, j| (i, j)),
            md_hom[I, J](|v, b| (v + b).max(0.0), (CC, CC)),
            inp_view(t: |i, j| (i, j), bias: |i, j| (j)),
        },
    }
}
