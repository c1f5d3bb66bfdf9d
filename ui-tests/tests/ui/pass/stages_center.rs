// A kernel of two stages: the sum of `x`, then `x` minus its mean.
use mdh::mdh;

mdh! {
    /// `y = x - mean(x)`.
    pub kernel center {
        inp(x: f32[N]),
        out(y: f32[N]),
        params(scale: f32),
        tmp(s: f32[]),
        stage sum {
            out_view(s: |i| ()),
            md_hom[N](|a| a, (PW(+))),
            inp_view(x: |i| (i)),
        },
        stage sub {
            out_view(y: |i| (i)),
            md_hom[N](|a, total| a - total / (N as f32) * scale, (CC)),
            inp_view(x: |i| (i), s: |i| ()),
        },
    }
}

fn main() {
    let x = [1.0f32, 2.0, 3.0, 6.0];
    let mut y = [0.0f32; 4];
    center::cpu(&x, &mut y, 1.0, center::Sizes { N: 4 }).unwrap();
    assert_eq!(y, [-2.0, -1.0, 0.0, 3.0]);
    // Wrong lengths are an error.
    assert!(center::cpu(&x[..3], &mut y, 1.0, center::Sizes { N: 4 }).is_err());
}
