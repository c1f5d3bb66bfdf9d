// The index pattern `|[y, x]|` needs one name per dimension (md_hom has one).
use mdh::mdh;

mdh! {
    kernel gen {
        inp(),
        out(o: u32[N]),
        out_view(o: |i| (i)),
        md_hom[N](|[y, x]| (y + x) as u32, (CC)),
        inp_view(),
    }
}

fn main() {}
