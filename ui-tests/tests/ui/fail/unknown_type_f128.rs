// Unknown element type `f128`.
use mdh::mdh;

mdh! {
    kernel matvec {
        inp(M: f128[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| m * x, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k)),
    }
}

fn main() {}
