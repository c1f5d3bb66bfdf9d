// A user-defined combine operator: `PW(|a, b| if a > b { a } else { b })`,
// and `PS(|a, b| ...)`.
use mdh::mdh;

mdh! {
    kernel my_max {
        inp(x: f64[N]),
        out(m: f64[]),
        out_view(m: |i| ()),
        md_hom[N](|a| a, (PW(|a, b| if a > b { a } else { b }))),
        inp_view(x: |i| (i)),
    }
}

mdh! {
    kernel running_max {
        inp(x: u8[N]),
        out(m: u8[N]),
        out_view(m: |i| (i)),
        md_hom[N](|a| a, (PS(|a, b| a.max(b)))),
        inp_view(x: |i| (i)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let x = vec![3.0f64, -1.0, 7.5, 2.0];
    let mut m = vec![0.0f64];
    my_max::cpu(&x, &mut m, my_max::Sizes { N: 4 })?;
    assert_eq!(m, vec![7.5]);

    let x = vec![3u8, 1, 7, 2, 9, 0];
    let mut m = vec![0u8; 6];
    running_max::cpu(&x, &mut m, running_max::Sizes { N: 6 })?;
    assert_eq!(m, vec![3, 3, 7, 7, 9, 9]);
    Ok(())
}
