// An output index function must be injective over the CC dimensions:
// (i + j) maps (0, 1) and (1, 0) to the same element.
use mdh::mdh;

mdh! {
    kernel diag {
        inp(A: f32[I, J, K]),
        out(w: f32[I + J - 1]),
        out_view(w: |i, j, k| (i + j)),
        md_hom[I, J, K](|a| a, (CC, CC, PW(+))),
        inp_view(A: |i, j, k| (i, j, k)),
    }
}

fn main() {}
