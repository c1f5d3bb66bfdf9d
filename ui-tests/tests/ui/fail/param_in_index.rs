// A runtime param cannot appear in an index function (only dimensions and sizes).
use mdh::mdh;

mdh! {
    kernel shift {
        inp(a: f32[N + 4]),
        out(b: f32[N]),
        params(s: i32),
        out_view(b: |i| (i)),
        md_hom[N](|x| x, (CC)),
        inp_view(a: |i| (i + s)),
    }
}

fn main() {}
