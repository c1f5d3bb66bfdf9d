// The scalar function takes one parameter per input access: `x` has three
// index functions, so three parameters are needed, not two.
use mdh::mdh;

mdh! {
    kernel jacobi {
        inp(x: f32[N + 2]),
        out(y: f32[N]),
        out_view(y: |i| (i)),
        md_hom[N](|a, b| (a + b) / 3.0, (CC)),
        inp_view(x: [|i| (i), |i| (i + 1), |i| (i + 2)]),
    }
}

fn main() {}
