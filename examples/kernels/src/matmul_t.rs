mdh::mdh! {
    /// Transposed matrix multiplication (the paper's MatMulᵀ):
    /// `C[j, i] = Σ_k A[k, i] · B[j, k]`, i.e. `Cᵀ = Aᵀ · Bᵀ`.
    pub kernel matmul_t {
        inp(A: f32[K, I], B: f32[J, K]),
        out(C: f32[J, I]),
        out_view(C: |i, j, k| (j, i)),
        md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
        inp_view(A: |i, j, k| (k, i), B: |i, j, k| (j, k)),
    }
}
