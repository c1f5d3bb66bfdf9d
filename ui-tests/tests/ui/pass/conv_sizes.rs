// Size expressions in shapes: `P + R - 1`, `2 * P + R - 2`, and affine
// indices `p + r`, `2 * p + r`.
use mdh::mdh;

mdh! {
    kernel conv {
        inp(x: f32[P + R - 1], w: f32[R]),
        out(y: f32[P]),
        out_view(y: |p, r| (p)),
        md_hom[P, R](|a, b| a * b, (CC, PW(+))),
        inp_view(x: |p, r| (p + r), w: |p, r| (r)),
    }
}

mdh! {
    kernel strided_conv {
        inp(x: i64[2 * P + R - 2], w: i64[R]),
        out(y: i64[P]),
        out_view(y: |p, r| (p)),
        md_hom[P, R](|a, b| a * b, (CC, PW(+))),
        inp_view(x: |p, r| (2 * p + r), w: |p, r| (r)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let x = vec![1.0f32, 2.0, 3.0, 4.0, 5.0];
    let w = vec![1.0f32, 10.0];
    let mut y = vec![0.0f32; 4];
    conv::cpu(&x, &w, &mut y, conv::Sizes { P: 4, R: 2 })?;
    assert_eq!(y, vec![21.0, 32.0, 43.0, 54.0]);

    // P = 3, R = 2: x has 2 * 3 + 2 - 2 = 6 elements.
    let x = vec![1i64, 2, 3, 4, 5, 6];
    let w = vec![1i64, 10];
    let mut y = vec![0i64; 3];
    strided_conv::cpu(&x, &w, &mut y, strided_conv::Sizes { P: 3, R: 2 })?;
    assert_eq!(y, vec![21, 43, 65]);
    Ok(())
}
