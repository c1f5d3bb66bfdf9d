// An output index function must use every CC dimension: `j` is CC but unused.
use mdh::mdh;

mdh! {
    kernel rows {
        inp(A: f32[I, J]),
        out(w: f32[I]),
        out_view(w: |i, j| (i)),
        md_hom[I, J](|a| a, (CC, CC)),
        inp_view(A: |i, j| (i, j)),
    }
}

fn main() {}
