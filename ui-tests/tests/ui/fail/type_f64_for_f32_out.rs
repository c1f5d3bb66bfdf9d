// The scalar function's result type must be the output's element type (f32).
use mdh::mdh;

mdh! {
    kernel scale {
        inp(a: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x| x as f64 * 2.0, (CC)),
        inp_view(a: |i| (i)),
    }
}

fn main() {}
