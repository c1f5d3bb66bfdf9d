mdh::mdh! {
    /// A CCSD(T) tensor contraction, TCCG's `abcdef-gdab-efgc`:
    /// `C[a, b, c, d, e, f] = Σ_g A[g, d, a, b] · B[e, f, g, c]`.
    pub kernel ccsdt {
        inp(A: f32[NG, ND, NA, NB], B: f32[NE, NF, NG, NC]),
        out(C: f32[NA, NB, NC, ND, NE, NF]),
        out_view(C: |a, b, c, d, e, f, g| (a, b, c, d, e, f)),
        md_hom[NA, NB, NC, ND, NE, NF, NG](|x, y| x * y, (CC, CC, CC, CC, CC, CC, PW(+))),
        inp_view(
            A: |a, b, c, d, e, f, g| (g, d, a, b),
            B: |a, b, c, d, e, f, g| (e, f, g, c),
        ),
    }
}
