mdh::mdh! {
    /// Issue 37: accepted by `mdh!`, but its release build stopped with
    /// "rustc-LLVM ERROR: Cannot emit physreg copy instruction" (rustc
    /// 1.95): the loop vectorizer turned the `f32::max` and `f64::max`
    /// reductions of one loop into an invalid NaN check across both types.
    /// Float `max`/`min` are now compare-and-select (`mdh::__rt::FloatMinMax`).
    pub kernel physreg {
        out(y0: f32[], y1: f64[]),
        out_view(y0: |i| (), y1: |i| ()),
        md_hom[N](|[i]| { let r = (i as f32) * ((i as f32) + 1.0); (r, r as f64) }, (PW(max))),
        inp_view(),
    }
}
