// Each md_hom dimension needs its own size parameter? `md_hom[N, N]`.
use mdh::mdh;

mdh! {
    kernel sq {
        inp(A: f32[N, N]),
        out(w: f32[N]),
        out_view(w: |i, j| (i)),
        md_hom[N, N](|a| a, (CC, PW(+))),
        inp_view(A: |i, j| (i, j)),
    }
}

fn main() {}
