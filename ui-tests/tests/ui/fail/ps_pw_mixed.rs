// PS and PW dimensions must use the same operator: PS(+) and PW(max).
use mdh::mdh;

mdh! {
    kernel scan_max {
        inp(A: f32[I, J]),
        out(w: f32[I]),
        out_view(w: |i, j| (i)),
        md_hom[I, J](|a| a, (PS(+), PW(max))),
        inp_view(A: |i, j| (i, j)),
    }
}

fn main() {}
