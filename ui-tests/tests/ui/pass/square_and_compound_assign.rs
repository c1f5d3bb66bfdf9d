// One size parameter for two dimensions (`md_hom[N, N]`, `f32[N, N]`), and the
// compound assignment `+=` / `*=` in the scalar function (an extension of the
// grammar that the macro accepts).
use mdh::mdh;

mdh! {
    kernel row_sums {
        inp(A: f32[N, N]),
        out(w: f32[N]),
        out_view(w: |i, j| (i)),
        md_hom[N, N](|a| {
            let mut t = a;
            t += 1.0;
            t *= 2.0;
            t
        }, (CC, PW(+))),
        inp_view(A: |i, j| (i, j)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let a = vec![1.0f32, 2.0, 3.0, 4.0];
    let mut w = vec![0.0f32; 2];
    row_sums::cpu(&a, &mut w, row_sums::Sizes { N: 2 })?;
    // row 0: 2*(1+1) + 2*(2+1) = 10; row 1: 2*(3+1) + 2*(4+1) = 18
    assert_eq!(w, vec![10.0, 18.0]);
    Ok(())
}
