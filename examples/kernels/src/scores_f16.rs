mdh::mdh! {
    /// Attention scores in mixed precision (QKᵀ, unscaled): f16 queries
    /// and keys, products and sums in f32, `S[i, j] = Σ_d Q[i, d] · K[j, d]`
    /// (the keys' rows are the mma's columns, contiguous along the reduction).
    pub kernel scores_f16 {
        inp(Q: f16[I, D], K: f16[J, D]),
        out(S: f32[I, J]),
        out_view(S: |i, j, d| (i, j)),
        md_hom[I, J, D](|q, k| (q as f32) * (k as f32), (CC, CC, PW(+))),
        inp_view(Q: |i, j, d| (i, d), K: |i, j, d| (j, d)),
    }
}
