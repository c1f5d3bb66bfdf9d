// A `let` without a value may only be initialized by an assignment directly in
// its block (the macro's rule is simpler than Rust's flow analysis).
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| { let a; if x > y { a = x; } else { a = y; } a }, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() {}
