// Each stage is checked as a kernel of its own: here an index function of
// the wrong arity.
use mdh::mdh;

mdh! {
    kernel center {
        inp(x: f32[N]),
        out(y: f32[N]),
        tmp(s: f32[]),
        stage sum {
            out_view(s: |i| ()),
            md_hom[N](|a| a, (PW(+))),
            inp_view(x: |i| (i)),
        },
        stage sub {
            out_view(y: |i| (i)),
            md_hom[N](|a, m| a - m, (CC)),
            inp_view(x: |i, j| (i), s: |i| ()),
        },
    }
}

fn main() {}
