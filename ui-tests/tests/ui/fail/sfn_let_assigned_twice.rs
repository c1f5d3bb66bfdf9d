// An immutable `let` without a value can be assigned only once.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| { let a; a = x; a = a + y; a }, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
