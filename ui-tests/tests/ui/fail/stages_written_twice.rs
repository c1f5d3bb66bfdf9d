// Two stages write the same buffer.
use mdh::mdh;

mdh! {
    kernel twice {
        inp(x: f32[N]),
        out(y: f32[N]),
        stage first {
            out_view(y: |i| (i)),
            md_hom[N](|a| a, (CC)),
            inp_view(x: |i| (i)),
        },
        stage second {
            out_view(y: |i| (i)),
            md_hom[N](|a| a * 2.0, (CC)),
            inp_view(x: |i| (i)),
        },
    }
}

fn main() {}
