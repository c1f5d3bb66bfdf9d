mdh::mdh! {
    /// Layer normalization of each row, `y = (x - mean) / √(var + eps) ·
    /// gamma + beta`, in three stages: the row's mean, its variance (of
    /// `x - mean`, a second pass: `E[x²] - mean²` would cancel), then the
    /// normalization with the per-column scale `gamma` and shift `beta`.
    /// The terms are multiplied by `1 / J` and `x - mean` by `1 / √(var +
    /// eps)`, the same for a whole call and a whole row, which the
    /// compiler may compute once: a division per element it could not.
    pub kernel layernorm {
        inp(x: f32[I, J], gamma: f32[J], beta: f32[J]),
        out(y: f32[I, J]),
        params(eps: f32),
        tmp(mean: f32[I], var: f32[I]),
        stage rowmean {
            out_view(mean: |i, j| (i)),
            md_hom[I, J](|a| a * (1.0 / (J as f32)), (CC, PW(+))),
            inp_view(x: |i, j| (i, j)),
        },
        stage rowvar {
            out_view(var: |i, j| (i)),
            md_hom[I, J](|a, mu| (a - mu) * (a - mu) * (1.0 / (J as f32)), (CC, PW(+))),
            inp_view(x: |i, j| (i, j), mean: |i, j| (i)),
        },
        stage normalize {
            out_view(y: |i, j| (i, j)),
            md_hom[I, J](|a, mu, v, g, b| (a - mu) * (1.0 / (v + eps).sqrt()) * g + b, (CC, CC)),
            inp_view(x: |i, j| (i, j), mean: |i, j| (i), var: |i, j| (i), gamma: |i, j| (j), beta: |i, j| (j)),
        },
    }
}
