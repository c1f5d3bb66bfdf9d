mdh::mdh! {
    /// One attention head, `O = softmax(Q·Kᵀ · scale) · V` (the softmax of
    /// each row of the scores), in six stages: the scores `S = Q·Kᵀ`, the
    /// row maximum `m` of `S · scale`, the exponentials `P = exp(S · scale
    /// - m)`, their row sum `s`, the product `U = P·V`, then `O = U / s`.
    /// The scale applies in the row stages, once per score: in the
    /// product (`q * k * scale`) it would cost a multiplication per term,
    /// and both products stay plain `a * b` contractions (what the CPU's
    /// vector register tiles and the GPUs' tensor cores take). Dividing by
    /// the row sum after the second product, as flash attention does,
    /// divides `I × E` values instead of `I × J` probabilities, and the
    /// division is the product's epilogue (guide, chapter 11); the three
    /// row stages between the products fuse along the rows.
    pub kernel attention {
        inp(Q: f32[I, D], K: f32[J, D], V: f32[J, E]),
        out(O: f32[I, E]),
        params(scale: f32),
        tmp(S: f32[I, J], m: f32[I], P: f32[I, J], s: f32[I], U: f32[I, E]),
        stage scores {
            out_view(S: |i, j, d| (i, j)),
            md_hom[I, J, D](|q, k| q * k, (CC, CC, PW(+))),
            inp_view(Q: |i, j, d| (i, d), K: |i, j, d| (j, d)),
        },
        stage rowmax {
            out_view(m: |i, j| (i)),
            md_hom[I, J](|a| a * scale, (CC, PW(max))),
            inp_view(S: |i, j| (i, j)),
        },
        stage exps {
            out_view(P: |i, j| (i, j)),
            md_hom[I, J](|a, mx| (a * scale - mx).exp(), (CC, CC)),
            inp_view(S: |i, j| (i, j), m: |i, j| (i)),
        },
        stage rowsum {
            out_view(s: |i, j| (i)),
            md_hom[I, J](|p| p, (CC, PW(+))),
            inp_view(P: |i, j| (i, j)),
        },
        stage weighted {
            out_view(U: |i, e, j| (i, e)),
            md_hom[I, E, J](|p, v| p * v, (CC, CC, PW(+))),
            inp_view(P: |i, e, j| (i, j), V: |i, e, j| (j, e)),
        },
        stage normalize {
            out_view(O: |i, e| (i, e)),
            md_hom[I, E](|u, sum| u / sum, (CC, CC)),
            inp_view(U: |i, e| (i, e), s: |i, e| (i)),
        },
    }
}
