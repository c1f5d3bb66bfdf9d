// `%` needs two numbers of one type: `x` is f32, `n` is i32.
use mdh::mdh;

mdh! {
    kernel modulo {
        inp(a: f32[N]),
        out(b: f32[N]),
        params(n: i32),
        out_view(b: |i| (i)),
        md_hom[N](|x| x % n, (CC)),
        inp_view(a: |i| (i)),
    }
}

fn main() {}
