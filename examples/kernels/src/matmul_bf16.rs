mdh::mdh! {
    /// Mixed-precision matrix multiplication: bf16 inputs, products and
    /// sums in f32, `C[i, j] = Σ_k A[i, k] · B[k, j]`.
    pub kernel matmul_bf16 {
        inp(A: bf16[I, K], B: bf16[K, J]),
        out(C: f32[I, J]),
        out_view(C: |i, j, k| (i, j)),
        md_hom[I, J, K](|a, b| (a as f32) * (b as f32), (CC, CC, PW(+))),
        inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
    }
}
