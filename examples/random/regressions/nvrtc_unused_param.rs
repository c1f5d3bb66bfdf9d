mdh::mdh! {
    /// Seed 103 drew several kernels whose scalar function leaves a
    /// parameter unread or sets a `let mut` it never reads; NVRTC warned
    /// of each (#177, #550). The user's variables are `[[maybe_unused]]`
    /// in CUDA C now.
    pub kernel nvrtc_unused_param {
        inp(x0: u32[I], x1: f32[I + 1]),
        out(y0: u32[I]),
        out_view(y0: |i| (i)),
        md_hom[I](|a0, a1, a1b| { let mut t0 = a1; if a0 > 3 { t0 = 2.0; } a0 + 1 }, (CC)),
        inp_view(x0: |i| (i), x1: [|i| (i), |i| (i + 1)]),
    }
}
