mdh::mdh! {
    /// Matrix-vector multiplication in f16: `w = M · v`, every product and
    /// every partial sum rounded to f16.
    pub kernel matvec_f16 {
        inp(M: f16[I, K], v: f16[K]),
        out(w: f16[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| m * x, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k)),
    }
}
