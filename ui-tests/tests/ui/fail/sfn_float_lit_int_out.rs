// A float literal cannot be an i32.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: i32[N], c: i32[N]),
        out(b: i32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| x + y + 1.5, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
