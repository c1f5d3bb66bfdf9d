// An output index function cannot use a PW (reduced) dimension: k is PW(+).
use mdh::mdh;

mdh! {
    kernel outer_sum {
        inp(M: f32[I, K]),
        out(w: f32[I, K]),
        out_view(w: |i, k| (i, k)),
        md_hom[I, K](|m| m, (CC, PW(+))),
        inp_view(M: |i, k| (i, k)),
    }
}

fn main() {}
