// A stage writes an input.
use mdh::mdh;

mdh! {
    kernel in_place {
        inp(x: f32[N]),
        out(y: f32[N]),
        stage scale {
            out_view(x: |i| (i), y: |i| (i)),
            md_hom[N](|a| (a * 2.0, a), (CC)),
            inp_view(x: |i| (i)),
        },
    }
}

fn main() {}
