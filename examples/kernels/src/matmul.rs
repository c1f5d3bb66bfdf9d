mdh::mdh! {
    /// Matrix multiplication: `C[i, j] = Σ_k A[i, k] · B[k, j]`.
    pub kernel matmul {
        inp(A: f32[I, K], B: f32[K, J]),
        out(C: f32[I, J]),
        out_view(C: |i, j, k| (i, j)),
        md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
        inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
    }
}
