// An integer literal beyond the largest finite bf16 (about 3.39e38).
use mdh::mdh;

mdh! {
    kernel shift {
        inp(x: bf16[N]),
        out(y: bf16[N]),
        out_view(y: |i| (i)),
        md_hom[N](|a| a + 340282366920938463463374607431768211455, (CC)),
        inp_view(x: |i| (i)),
    }
}

fn main() {}
