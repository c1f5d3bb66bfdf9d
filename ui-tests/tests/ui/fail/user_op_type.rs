// A user-defined operator returns the element type of the output it combines (f32).
use mdh::mdh;

mdh! {
    kernel total {
        inp(x: f32[N]),
        out(s: f32[]),
        out_view(s: |i| ()),
        md_hom[N](|a| a, (PW(|a, b| a > b))),
        inp_view(x: |i| (i)),
    }
}

fn main() {}
