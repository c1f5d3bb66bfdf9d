// An intermediate that no stage computes or reads.
use mdh::mdh;

mdh! {
    kernel idle {
        inp(x: f32[N]),
        out(y: f32[N]),
        tmp(s: f32[N]),
        stage copy {
            out_view(y: |i| (i)),
            md_hom[N](|a| a, (CC)),
            inp_view(x: |i| (i)),
        },
    }
}

fn main() {}
