// A stage reads an intermediate that no stage computes.
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
    }
}

fn main() {}
