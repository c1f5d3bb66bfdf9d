// The scalar function cannot call functions: only the whitelisted methods exist.
use mdh::mdh;

fn foo(x: f32) -> f32 {
    x
}

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| foo(x) + y, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {
    let _ = foo(0.0);
}
