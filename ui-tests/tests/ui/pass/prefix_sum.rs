// `PS(+)`: prefix sum (the dimension is kept in the output), row-wise.
use mdh::mdh;

mdh! {
    kernel row_scan {
        inp(a: i32[R, N]),
        out(s: i32[R, N]),
        out_view(s: |r, i| (r, i)),
        md_hom[R, N](|x| x, (CC, PS(+))),
        inp_view(a: |r, i| (r, i)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let a = vec![1i32, 2, 3, 4, 5, 10, 20, 30, 40, 50];
    let mut s = vec![0i32; 10];
    row_scan::cpu(&a, &mut s, row_scan::Sizes { R: 2, N: 5 })?;
    assert_eq!(s, vec![1, 3, 6, 10, 15, 10, 30, 60, 100, 150]);
    Ok(())
}
