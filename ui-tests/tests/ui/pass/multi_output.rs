// Several outputs, one PW operator per output (`PW(+, max)`), scalar outputs `f32[]`.
use mdh::mdh;

mdh! {
    kernel sum_max {
        inp(a: f32[N]),
        out(s: f32[], m: f32[]),
        out_view(s: |i| (), m: |i| ()),
        md_hom[N](|x| (x, x * 2.0), (PW(+, max))),
        inp_view(a: |i| (i)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let a = vec![1.0f32, -4.0, 3.5, 2.0, 0.5];
    let (mut s, mut m) = (vec![0.0f32], vec![0.0f32]);
    sum_max::cpu(&a, &mut s, &mut m, sum_max::Sizes { N: a.len() })?;
    assert_eq!(s, vec![3.0]);
    assert_eq!(m, vec![7.0]);
    Ok(())
}
