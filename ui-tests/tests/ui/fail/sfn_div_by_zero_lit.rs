// Integer division by the literal 0.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: i32[N], c: i32[N]),
        out(b: i32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| x / 0 + y, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
