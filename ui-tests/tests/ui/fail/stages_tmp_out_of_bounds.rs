// A stage reads an intermediate over a dimension larger than it.
use mdh::mdh;

mdh! {
    kernel rows {
        inp(x: f32[I, J]),
        out(y: f32[I, J]),
        tmp(m: f32[I]),
        stage rowmax {
            out_view(m: |i, j| (i)),
            md_hom[I, J](|a| a, (CC, PW(max))),
            inp_view(x: |i, j| (i, j)),
        },
        stage sub {
            out_view(y: |i, j| (i, j)),
            md_hom[I, J](|a, mx| a - mx, (CC, CC)),
            inp_view(x: |i, j| (i, j), m: |i, j| (j)),
        },
    }
}

fn main() {}
