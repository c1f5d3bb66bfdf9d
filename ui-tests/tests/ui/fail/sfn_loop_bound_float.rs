// Loop bounds must be integers; `y` is f32.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| { let mut a = x; for _ in 0..y { a = a * 2.0; } a }, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
