// Several index functions for one buffer: `x: [|i| (i), |i| (i + 1), |i| (i + 2)]`,
// and a size expression in a shape (`N + 2`).
use mdh::mdh;

mdh! {
    kernel jacobi {
        inp(x: f32[N + 2]),
        out(y: f32[N]),
        out_view(y: |i| (i)),
        md_hom[N](|l, c, r| (l + c + r) / 3.0, (CC)),
        inp_view(x: [|i| (i), |i| (i + 1), |i| (i + 2)]),
    }
}

fn main() -> Result<(), mdh::Error> {
    let x = vec![0.0f32, 3.0, 6.0, 9.0, 3.0];
    let mut y = vec![0.0f32; 3];
    jacobi::cpu(&x, &mut y, jacobi::Sizes { N: 3 })?;
    assert_eq!(y, vec![3.0, 6.0, 6.0]);
    Ok(())
}
