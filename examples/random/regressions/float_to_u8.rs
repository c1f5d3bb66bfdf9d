mdh::mdh! {
    /// Random kernel 30 of seed 101: the CPU execution of its CUDA C wrote
    /// 100 where Rust's saturating `as` gives 0. C leaves a float to
    /// integer conversion out of range undefined (`(uchar)-5.0` wrapped to
    /// 251); CUDA casts now go through saturating helpers (`mdh_cvt_T_F`).
    pub kernel float_to_u8 {
        inp(x0: i64[I, I]),
        out(y0: u8[2 * J - 1, I + 1]),
        out_view(y0: |i, j| (2 * j, i + 1)),
        md_hom[I, J](|[i, j], a0| ((a0 as u8) * ((((a0 as f64)).max(-16.0).min(16.0) as u8) * 4)), (CC, CC)),
        inp_view(x0: |i, j| (i, i)),
    }
}
