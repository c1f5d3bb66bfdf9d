// An intermediate that is computed but never read.
use mdh::mdh;

mdh! {
    kernel wasted {
        inp(x: f32[N]),
        out(y: f32[N]),
        tmp(s: f32[]),
        stage sum {
            out_view(s: |i| ()),
            md_hom[N](|a| a, (PW(+))),
            inp_view(x: |i| (i)),
        },
        stage copy {
            out_view(y: |i| (i)),
            md_hom[N](|a| a, (CC)),
            inp_view(x: |i| (i)),
        },
    }
}

fn main() {}
