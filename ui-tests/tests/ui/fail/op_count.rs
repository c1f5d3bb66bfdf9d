// md_hom has two dimensions, so it needs two combine operators.
use mdh::mdh;

mdh! {
    kernel matvec {
        inp(M: f32[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| m * x, (CC)),
        inp_view(M: |i, k| (i, k), v: |i, k| (k)),
    }
}

fn main() {}
