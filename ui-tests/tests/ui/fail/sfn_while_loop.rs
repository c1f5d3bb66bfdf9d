// The scalar function has no `while` loops: only `for _ in 0..N` with break.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| { let mut a = x; while a > y { a = a - y; } a }, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
