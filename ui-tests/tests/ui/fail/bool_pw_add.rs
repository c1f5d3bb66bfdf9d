// The built-in operator `+` cannot combine bool values.
use mdh::mdh;

mdh! {
    kernel any_positive {
        inp(a: f32[N]),
        out(b: bool[]),
        out_view(b: |i| ()),
        md_hom[N](|x| x > 0.0, (PW(+))),
        inp_view(a: |i| (i)),
    }
}

fn main() {}
