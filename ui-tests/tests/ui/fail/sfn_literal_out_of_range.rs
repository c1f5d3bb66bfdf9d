// 300 does not fit in u8.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: u8[N], c: u8[N]),
        out(b: u8[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| x + y + 300, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
