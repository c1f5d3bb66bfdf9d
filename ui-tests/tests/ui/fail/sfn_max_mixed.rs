// `max` needs two values of one type.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| x.max(y as f64) as f32, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
