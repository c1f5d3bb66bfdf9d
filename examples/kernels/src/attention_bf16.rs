mdh::mdh! {
    /// Attention scores in mixed precision: bf16 queries and keys, products
    /// and sums in f32, `S[i, j] = Σ_d Q[i, d] · K[j, d] · scale` (Q·Kᵀ
    /// scaled, e.g. by 1/√D).
    pub kernel attention_bf16 {
        inp(Q: bf16[I, D], K: bf16[J, D]),
        out(S: f32[I, J]),
        params(scale: f32),
        out_view(S: |i, j, d| (i, j)),
        md_hom[I, J, D](|q, k| (q as f32) * (k as f32) * scale, (CC, CC, PW(+))),
        inp_view(Q: |i, j, d| (i, d), K: |i, j, d| (j, d)),
    }
}
