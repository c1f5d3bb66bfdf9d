// A user-defined PW operator takes two parameters `|a, b|`.
use mdh::mdh;

mdh! {
    kernel total {
        inp(x: f32[N]),
        out(s: f32[]),
        out_view(s: |i| ()),
        md_hom[N](|a| a, (PW(|a| a))),
        inp_view(x: |i| (i)),
    }
}

fn main() {}
