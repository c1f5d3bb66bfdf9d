// The scalar function cannot index: elements are passed as values.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| x + y[0], (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
