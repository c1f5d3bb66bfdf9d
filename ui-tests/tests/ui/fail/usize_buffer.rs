// `usize` is not a buffer element type (it is the type of sizes and indices).
use mdh::mdh;

mdh! {
    kernel matvec {
        inp(M: f32[I, K], v: f32[K]),
        out(w: usize[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| (m * x) as usize, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k)),
    }
}

fn main() {}
