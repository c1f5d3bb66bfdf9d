// Size parameters (and MDA indices) used in the scalar function as `usize` values.
use mdh::mdh;

mdh! {
    kernel weights {
        inp(x: f32[N]),
        out(y: f32[N]),
        out_view(y: |i| (i)),
        md_hom[N](|[i], a| a * (N - i) as f32 + (N * 10) as f32, (CC)),
        inp_view(x: |i| (i)),
    }
}

mdh! {
    kernel mean {
        inp(x: f64[N]),
        out(m: f64[]),
        out_view(m: |i| ()),
        md_hom[N](|a| a / N as f64, (PW(+))),
        inp_view(x: |i| (i)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let x = vec![1.0f32, 1.0, 2.0];
    let mut y = vec![0.0f32; 3];
    weights::cpu(&x, &mut y, weights::Sizes { N: 3 })?;
    assert_eq!(y, vec![33.0, 32.0, 32.0]);

    let x = vec![1.0f64, 2.0, 3.0, 6.0];
    let mut m = vec![0.0f64];
    mean::cpu(&x, &mut m, mean::Sizes { N: 4 })?;
    assert_eq!(m, vec![3.0]);
    Ok(())
}
