// A stage reads an intermediate that a later stage computes: stages run in order.
use mdh::mdh;

mdh! {
    kernel center {
        inp(x: f32[N]),
        out(y: f32[N]),
        tmp(s: f32[]),
        stage sub {
            out_view(y: |i| (i)),
            md_hom[N](|a, m| a - m, (CC)),
            inp_view(x: |i| (i), s: |i| ()),
        },
        stage sum {
            out_view(s: |i| ()),
            md_hom[N](|a| a, (PW(+))),
            inp_view(x: |i| (i)),
        },
    }
}

fn main() {}
