// An output buffer cannot appear in inp_view: `w` is an output. The scalar
// function has a parameter for `w`; the parameter count is not checked after this error.
use mdh::mdh;

mdh! {
    kernel matvec {
        inp(M: f32[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x, y| m * x * y, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k), w: |i, k| (i)),
    }
}

fn main() {}
