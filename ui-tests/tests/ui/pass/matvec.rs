// The example of DESIGN.md §1, verbatim.
use mdh::mdh;

mdh! {
    /// Matrix-vector multiplication: w = M · v
    pub kernel matvec {
        inp(M: f32[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| m * x, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k)),
    }
}

fn main() -> Result<(), mdh::Error> {
    // M = [[1, 2, 3], [4, 5, 6]], v = [1, 10, 100]
    let m = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let v = vec![1.0f32, 10.0, 100.0];
    let mut w = vec![0.0f32; 2];
    matvec::cpu(&m, &v, &mut w, matvec::Sizes { I: 2, K: 3 })?;
    assert_eq!(w, vec![321.0, 654.0]);
    Ok(())
}
