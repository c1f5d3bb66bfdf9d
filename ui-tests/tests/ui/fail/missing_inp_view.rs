// Inputs are declared but there is no inp_view clause (one error, no follow-up
// error about the scalar function's parameter count).
use mdh::mdh;

mdh! {
    kernel id {
        inp(a: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x| x, (CC)),
    }
}

fn main() {}
