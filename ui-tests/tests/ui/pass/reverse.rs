// A size parameter in an index expression: `K - 1 - k` reverses.
use mdh::mdh;

mdh! {
    kernel reverse {
        inp(x: i16[K]),
        out(y: i16[K]),
        out_view(y: |k| (k)),
        md_hom[K](|a| a, (CC)),
        inp_view(x: |k| (K - 1 - k)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let x = vec![1i16, 2, 3, 4, 5];
    let mut y = vec![0i16; 5];
    reverse::cpu(&x, &mut y, reverse::Sizes { K: 5 })?;
    assert_eq!(y, vec![5, 4, 3, 2, 1]);
    Ok(())
}
