mdh::mdh! {
    /// One attention head, `O = softmax(Q·Kᵀ · scale) · V` (the softmax of
    /// each row of the scores), in five stages: the scores `S = Q·Kᵀ`, the
    /// row maximum `m` of `S · scale`, the row sum `s` of `exp(S · scale -
    /// m)`, the probabilities `P = exp(S · scale - m) / s`, then `O = P·V`.
    /// The scale applies in the row stages, once per score: in the
    /// product (`q * k * scale`) it would cost a multiplication per term,
    /// and both products stay plain `a * b` contractions (what the CPU's
    /// vector register tiles and the GPUs' tensor cores take).
    pub kernel attention {
        inp(Q: f32[I, D], K: f32[J, D], V: f32[J, E]),
        out(O: f32[I, E]),
        params(scale: f32),
        tmp(S: f32[I, J], m: f32[I], s: f32[I], P: f32[I, J]),
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
        stage rowsum {
            out_view(s: |i, j| (i)),
            md_hom[I, J](|a, mx| (a * scale - mx).exp(), (CC, PW(+))),
            inp_view(S: |i, j| (i, j), m: |i, j| (i)),
        },
        stage normalize {
            out_view(P: |i, j| (i, j)),
            md_hom[I, J](|a, mx, sum| (a * scale - mx).exp() / sum, (CC, CC)),
            inp_view(S: |i, j| (i, j), m: |i, j| (i), s: |i, j| (i)),
        },
        stage weighted {
            out_view(O: |i, e, j| (i, e)),
            md_hom[I, E, J](|p, v| p * v, (CC, CC, PW(+))),
            inp_view(P: |i, e, j| (i, j), V: |i, e, j| (j, e)),
        },
    }
}
