// Unary minus needs a signed type; u32 is unsigned.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| x + (-(y as u32)) as f32, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
