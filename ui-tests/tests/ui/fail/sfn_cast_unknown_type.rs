// Cast to an unknown type `f128`.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| (x as f128) as f32 + y, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
