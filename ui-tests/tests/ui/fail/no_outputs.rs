// A kernel needs at least one output.
use mdh::mdh;

mdh! {
    kernel nothing {
        inp(x: f32[N]),
        out(),
        out_view(),
        md_hom[N](|a| a, (CC)),
        inp_view(x: |i| (i)),
    }
}

fn main() {}
