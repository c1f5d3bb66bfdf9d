// A kernel with stages has no md_hom outside them.
use mdh::mdh;

mdh! {
    kernel stray {
        inp(x: f32[N]),
        out(y: f32[N]),
        md_hom[N](|a| a, (CC)),
        stage copy {
            out_view(y: |i| (i)),
            md_hom[N](|a| a, (CC)),
            inp_view(x: |i| (i)),
        },
    }
}

fn main() {}
