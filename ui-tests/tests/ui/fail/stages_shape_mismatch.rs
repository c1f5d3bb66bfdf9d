// A stage computes an intermediate over a dimension whose md_hom size is not
// the intermediate's size.
use mdh::mdh;

mdh! {
    kernel rows {
        inp(x: f32[I, J]),
        out(y: f32[I, J]),
        tmp(m: f32[I]),
        stage rowmax {
            out_view(m: |j, i| (j)),
            md_hom[J, I](|a| a, (CC, PW(max))),
            inp_view(x: |j, i| (i, j)),
        },
        stage sub {
            out_view(y: |i, j| (i, j)),
            md_hom[I, J](|a, mx| a - mx, (CC, CC)),
            inp_view(x: |i, j| (i, j), m: |i, j| (i)),
        },
    }
}

fn main() {}
