// A literal beyond the largest finite f16 (65504).
use mdh::mdh;

mdh! {
    kernel scale {
        inp(x: f16[N]),
        out(y: f16[N]),
        out_view(y: |i| (i)),
        md_hom[N](|a| a * 70000.0, (CC)),
        inp_view(x: |i| (i)),
    }
}

fn main() {}
