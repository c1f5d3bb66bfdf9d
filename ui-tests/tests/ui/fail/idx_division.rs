// Index expressions must be affine with integer coefficients: `k / 2` is not.
use mdh::mdh;

mdh! {
    kernel matvec {
        inp(M: f32[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| m * x, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k / 2)),
    }
}

fn main() {}
