mdh::mdh! {
    /// Generalized histogram with a user-defined function and operator: the
    /// sum of squares of the values whose key falls into each bin.
    pub kernel genhisto {
        inp(vals: f32[E], keys: i32[E], bins: i32[B]),
        out(hist: f32[B]),
        out_view(hist: |e, b| (b)),
        md_hom[E, B](
            |x, key, bin| if key == bin { x * x } else { 0.0 },
            (PW(|a, b| a + b), CC)
        ),
        inp_view(vals: |e, b| (e), keys: |e, b| (e), bins: |e, b| (b)),
    }
}
