// An index function binds each name once: `|i, i|`.
use mdh::mdh;

mdh! {
    kernel rows {
        inp(A: f32[I, J]),
        out(w: f32[I]),
        out_view(w: |i, j| (i)),
        md_hom[I, J](|a| a, (CC, PW(+))),
        inp_view(A: |i, i| (i, i)),
    }
}

fn main() {}
