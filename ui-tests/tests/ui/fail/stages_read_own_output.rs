// A stage reads what it computes itself (a cycle).
use mdh::mdh;

mdh! {
    kernel feedback {
        inp(x: f32[N]),
        out(y: f32[N]),
        stage loop_ {
            out_view(y: |i| (i)),
            md_hom[N](|a, b| a + b, (CC)),
            inp_view(x: |i| (i), y: |i| (i)),
        },
    }
}

fn main() {}
