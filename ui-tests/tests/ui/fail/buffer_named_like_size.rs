// A buffer cannot be named like a size parameter: `K`.
use mdh::mdh;

mdh! {
    kernel matvec {
        inp(M: f32[I, K], K: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| m * x, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), K: |i, k| (k)),
    }
}

fn main() {}
