// Tokens after the kernel body.
use mdh::mdh;

mdh! {
    kernel id {
        inp(a: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x| x, (CC)),
        inp_view(a: |i| (i)),
    }
    extra
}

fn main() {}
