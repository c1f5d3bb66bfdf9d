// A `let` without a value is read before it is assigned.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| { let a; let s = a + y; a = x; s }, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
