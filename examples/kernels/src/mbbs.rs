mdh::mdh! {
    /// Prefix sums of row sums (the paper's MBBS building block):
    /// `o[i] = Σ_{i' <= i} Σ_j A[i', j]`.
    pub kernel mbbs {
        inp(A: f32[I, J]),
        out(o: f32[I]),
        out_view(o: |i, j| (i)),
        md_hom[I, J](|a| a, (PS(+), PW(+))),
        inp_view(A: |i, j| (i, j)),
    }
}
