// All PW dimensions must use the same operator (Lemma 1): + and max are mixed.
use mdh::mdh;

mdh! {
    kernel mixed {
        inp(M: f32[I, K]),
        out(s: f32[]),
        out_view(s: |i, k| ()),
        md_hom[I, K](|m| m, (PW(+), PW(max))),
        inp_view(M: |i, k| (i, k)),
    }
}

fn main() {}
