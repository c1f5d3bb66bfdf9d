// Unknown param type `f128`.
use mdh::mdh;

mdh! {
    kernel saxpy {
        inp(x: f32[N], y: f32[N]),
        out(z: f32[N]),
        params(alpha: f128),
        out_view(z: |i| (i)),
        md_hom[N](|a, b| alpha * a + b, (CC)),
        inp_view(x: |i| (i), y: |i| (i)),
    }
}

fn main() {}
