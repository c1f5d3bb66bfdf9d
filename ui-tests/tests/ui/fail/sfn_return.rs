// The scalar function has no `return`: its value is its last expression.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| { if x > y { return x; } y }, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
