// An index expression uses `j`, which is neither a dimension nor a size parameter.
use mdh::mdh;

mdh! {
    kernel matvec {
        inp(M: f32[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| m * x, (CC, PW(+))),
        inp_view(M: |i, k| (i, j), v: |i, k| (k)),
    }
}

fn main() {}
