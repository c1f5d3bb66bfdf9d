// Two output accesses of one buffer write the same element.
use mdh::mdh;

mdh! {
    kernel twice {
        inp(a: f32[N]),
        out(b: f32[N]),
        out_view(b: [|i| (i), |i| (i)]),
        md_hom[N](|x| (x, x + 1.0), (CC)),
        inp_view(a: |i| (i)),
    }
}

fn main() {}
