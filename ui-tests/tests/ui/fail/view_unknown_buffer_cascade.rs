// A view must name a declared buffer: `u` is not declared. The scalar function
// has a parameter for `u`; the parameter count is not checked after this error.
use mdh::mdh;

mdh! {
    kernel matvec {
        inp(M: f32[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x, y| m * x * y, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k), u: |i, k| (k)),
    }
}

fn main() {}
