mdh::mdh! {
    /// Batched matrix multiplication: `C[b, i, j] = Σ_k A[b, i, k] · B[b, k, j]`.
    pub kernel bmatmul {
        inp(A: f32[NB, I, K], B: f32[NB, K, J]),
        out(C: f32[NB, I, J]),
        out_view(C: |b, i, j, k| (b, i, j)),
        md_hom[NB, I, J, K](|a, x| a * x, (CC, CC, CC, PW(+))),
        inp_view(A: |b, i, j, k| (b, i, k), B: |b, i, j, k| (b, k, j)),
    }
}
