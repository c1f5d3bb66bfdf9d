mdh::mdh! {
    /// Random kernel 0 of seed 103: NVRTC warned that `mdh_div_u32` and
    /// `mdh_div_usize` were never referenced (the prelude defines `/` and
    /// `%` helpers in pairs, and this kernel only takes remainders). The
    /// helpers are `[[maybe_unused]]` now.
    pub kernel nvrtc_unused_helper {
        inp(x0: f32[J + 2, J]),
        out(y0: f32[], y1: i16[]),
        params(p0: f32),
        out_view(y0: |i, j| (), y1: |i, j| ()),
        md_hom[I, J](|a0| {
            let mut t0 = ((8 % 7) != ((1.5 + 0.25) as u32));
            if ((0.25 + ((I % 5) as f32)) > (((p0).max(-16.0).min(16.0)).floor()).max(-16.0).min(16.0)) { t0 = t0; }
            ((p0).max(-16.0).min(16.0),
             (((((I % 5) as i16)).abs() / ((t0 as i16) + (t0 as i16)))
              - (((t0 as i16) + 1) % (if (((a0 * 4.0) as u32) > 1) { (t0 as i16) } else { (t0 as i16) }))))
        }, (PW(|a, b| a + b, |a, b| if a > b { a } else { b }), PW(|a, b| a + b, |a, b| if a > b { a } else { b }))),
        inp_view(x0: |i, j| (j + 2, j)),
    }
}
