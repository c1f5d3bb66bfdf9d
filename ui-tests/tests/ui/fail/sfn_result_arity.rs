// The scalar function returns one value per output access: two outputs, one value.
use mdh::mdh;

mdh! {
    kernel sum_max {
        inp(a: f32[N]),
        out(s: f32[], m: f32[]),
        out_view(s: |i| (), m: |i| ()),
        md_hom[N](|x| x, (PW(+, max))),
        inp_view(a: |i| (i)),
    }
}

fn main() {}
