// `powi` is a float method; `x` is an i32.
use mdh::mdh;

mdh! {
    kernel square {
        inp(a: i32[N]),
        out(b: i32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x| x.powi(2), (CC)),
        inp_view(a: |i| (i)),
    }
}

fn main() {}
