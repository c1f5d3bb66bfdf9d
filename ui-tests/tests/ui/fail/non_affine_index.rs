// Index expressions must be affine: `i * k` multiplies two dimensions.
use mdh::mdh;

mdh! {
    kernel strided {
        inp(M: f32[I, K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m| m, (CC, PW(+))),
        inp_view(M: |i, k| (i * k, k)),
    }
}

fn main() {}
