// The `md_hom` clause is required.
use mdh::mdh;

mdh! {
    kernel matvec {
        inp(M: f32[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        inp_view(M: |i, k| (i, k), v: |i, k| (k)),
    }
}

fn main() {}
