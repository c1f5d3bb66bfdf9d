mdh::mdh! {
    /// Histogram: `hist[b] = #{ e | elems[e] == bins[b] }`.
    pub kernel histo {
        inp(elems: u32[E], bins: u32[B]),
        out(hist: u32[B]),
        out_view(hist: |e, b| (b)),
        md_hom[E, B](|x, y| if x == y { 1 } else { 0 }, (PW(+), CC)),
        inp_view(elems: |e, b| (e), bins: |e, b| (b)),
    }
}
