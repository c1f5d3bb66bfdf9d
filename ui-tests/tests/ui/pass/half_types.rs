// f16 and bf16 (the `half` crate's types, re-exported as `mdh::f16` and
// `mdh::bf16`): buffers, params, literals, casts and methods. Arithmetic on
// them computes in f32 and rounds each result to the type.
use mdh::{bf16, f16, mdh};

mdh! {
    // Mixed precision: f16 weights, accumulated in f32.
    kernel matvec {
        inp(M: f16[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| (m as f32) * x, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k)),
    }
}

mdh! {
    // bf16 throughout: a param, literals of the type, a method, a sum.
    kernel scaled_sum {
        inp(x: bf16[N]),
        out(s: bf16[], m: f16[]),
        params(alpha: bf16),
        out_view(s: |n| (), m: |n| ()),
        md_hom[N](|x| (alpha * x.abs() + 0.5, x as f16), (PW(+, max))),
        inp_view(x: |n| (n)),
    }
}

fn main() -> Result<(), mdh::Error> {
    let m: Vec<f16> = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0].map(f16::from_f32).to_vec();
    let v = [1.0f32, 0.5, -1.0];
    let mut w = [0.0f32; 2];
    matvec::cpu(&m, &v, &mut w, matvec::Sizes { I: 2, K: 3 })?;
    assert_eq!(w, [-1.0, 0.5]);

    let x = [-1.0f32, 2.0, 3.0].map(bf16::from_f32);
    let (mut s, mut mx) = ([bf16::ZERO], [f16::ZERO]);
    scaled_sum::cpu(&x, &mut s, &mut mx, bf16::from_f32(2.0), scaled_sum::Sizes { N: 3 })?;
    // 2·1 + 0.5 + 2·2 + 0.5 + 2·3 + 0.5, every value exact in bf16.
    assert_eq!(s, [bf16::from_f32(13.5)]);
    assert_eq!(mx, [f16::from_f32(3.0)]);
    Ok(())
}
