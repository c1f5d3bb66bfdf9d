// f16 and f32 operands of one operator: the contract has no implicit
// conversion; `as f32` says where the f16 value is widened.
use mdh::mdh;

mdh! {
    kernel matvec {
        inp(M: f16[I, K], v: f32[K]),
        out(w: f16[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| m * x, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k)),
    }
}

fn main() {}
