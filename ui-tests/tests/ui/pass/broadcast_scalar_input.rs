// An empty index tuple `()` reads a scalar input (`f32[]`) at every point;
// a constant in a shape and a constant index (`c: f32[2]` read at `(1)`);
// PW(min, *) on integers, with the PW dimension first.
use mdh::mdh;

mdh! {
    kernel shift_min {
        inp(x: f32[N], s: f32[], c: f32[2]),
        out(y: f32[N]),
        out_view(y: |i| (i)),
        md_hom[N](|a, b, k| a + b * k, (CC)),
        inp_view(x: |i| (i), s: |i| (), c: |i| (1)),
    }
}

mdh! {
    kernel col_min_prod {
        inp(a: i32[R, N]),
        out(lo: i32[N], pr: i64[N]),
        out_view(lo: |r, c| (c), pr: |r, c| (c)),
        md_hom[R, N](|x| (x, x as i64), (PW(min, *), CC)),
        inp_view(a: |r, c| (r, c)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let x = vec![1.0f32, 2.0, 3.0];
    let mut y = vec![0.0f32; 3];
    shift_min::cpu(&x, &[0.5], &[100.0, 2.0], &mut y, shift_min::Sizes { N: 3 })?;
    assert_eq!(y, vec![2.0, 3.0, 4.0]);

    let a = vec![1i32, 2, 3, 4, 5, 6, -1, 8];
    let mut lo = vec![0i32; 2];
    let mut pr = vec![0i64; 2];
    col_min_prod::cpu(&a, &mut lo, &mut pr, col_min_prod::Sizes { R: 4, N: 2 })?;
    assert_eq!(lo, vec![-1, 2]);
    assert_eq!(pr, vec![-15, 384]);
    Ok(())
}
