mdh::mdh! {
    /// Random kernel 45 of seed 108: PoCL's clang rejected its OpenCL C
    /// under `-Werror` ("self-comparison always evaluates to false"): the
    /// emitter wrote the integer `t1.max(t1)` as `t1 > t1 ? t1 : t1`. It
    /// writes OpenCL's `max` / `min` built-ins now.
    pub kernel self_max {
        inp(x0: f64[K + 2], x1: i32[J + 1, I], x2: f64[I + 2, J, K]),
        out(y0: i16[], y1: i16[], y2: i16[]),
        params(p0: f64),
        out_view(y0: |i, j, k| (), y1: |i, j, k| (), y2: |i, j, k| ()),
        md_hom[I, J, K](|a0, a0b, a1, a2| {
            let t0 = (a0).floor();
            let mut t1 = ((9 - (a1 as u8)) as i64);
            if (t0 > ((p0).max(-16.0).min(16.0)).abs()) { t1 = t1; } else { t1 = ((t1).max(t1) - (((J % 5) as i64)).max(t1)); }
            ((-((-((a0b * 4.0) as i16)) - ((t1 as i16) / 1))), (t0 as i16), (t1 as i16))
        }, (PW(+, min, |a, b| a * b), PW(+, min, |a, b| a * b), PW(+, min, |a, b| a * b))),
        inp_view(x0: [|i, j, k| (k + 2), |i, j, k| (k)], x1: |i, j, k| (j + 1, i), x2: |i, j, k| (i + 2, j, k)),
    }
}
