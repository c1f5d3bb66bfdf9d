// Rust's deferred initialization of a `let`: `let a; a = x;` (one plain
// assignment directly in the block of the `let`, before any use), also with a
// type annotation and with `let mut`.
use mdh::mdh;

mdh! {
    kernel map {
        inp(a: f32[N], c: f32[N]),
        out(b: f32[N]),
        out_view(b: |i| (i)),
        md_hom[N](|x, y| {
            let a;
            a = x;
            let t: f32;
            t = a * 2.0;
            let mut s;
            s = t;
            s += y;
            s
        }, (CC)),
        inp_view(a: |i| (i), c: |i| (i)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let a = vec![1.0f32, 2.0, 3.0];
    let c = vec![10.0f32, 20.0, 30.0];
    let mut b = vec![0.0f32; 3];
    map::cpu(&a, &c, &mut b, map::Sizes { N: 3 })?;
    assert_eq!(b, vec![12.0, 24.0, 36.0]);
    Ok(())
}
