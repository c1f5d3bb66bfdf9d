// `params(alpha: f32, n: i32)`: runtime scalars used in the scalar function.
use mdh::mdh;

mdh! {
    kernel axpy_pow {
        inp(x: f32[N], y: f32[N]),
        out(z: f32[N]),
        params(alpha: f32, n: i32),
        out_view(z: |i| (i)),
        md_hom[N](|a, b| alpha * a.powi(n) + b + n as f32, (CC)),
        inp_view(x: |i| (i), y: |i| (i)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let x = vec![1.0f32, 2.0, 3.0];
    let y = vec![10.0f32, 20.0, 30.0];
    let mut z = vec![0.0f32; 3];
    axpy_pow::cpu(&x, &y, &mut z, 0.5, 2, axpy_pow::Sizes { N: 3 })?;
    // 0.5 * x^2 + y + 2
    assert_eq!(z, vec![12.5, 24.0, 36.5]);
    Ok(())
}
