//! 2-D convolution with a 5×5 filter; the paper's sizes are 224² and 4096²
//! outputs, default 4096² (`--quick`: 64²; a size argument sets P = Q).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/conv2d.rs");

fn main() -> std::process::ExitCode {
    check::main("conv2d", |args: &Args| -> Res {
        let n = args.pick(4096, 64);
        let mut rng = Rng::new(6);

        let s = conv2d::Sizes {
            P: 61,
            Q: 67,
            R: 5,
            S: 3,
        };
        let (h, w) = (s.P + s.R - 1, s.Q + s.S - 1);
        let (img, f) = (rng.f32s(h * w), rng.f32s(s.R * s.S));
        let mut o = vec![0.0f32; s.P * s.Q];
        conv2d::cpu(&img, &f, &mut o, s)?;
        check::against_reference(
            &format!("conv2d {s:?}"),
            conv2d::SPEC,
            &s.values(),
            &[Buffer::from(img), Buffer::from(f)],
            &[],
            &[Buffer::from(o)],
            check::sum_rtol(s.R * s.S),
        )?;

        let s = conv2d::Sizes {
            P: n,
            Q: n,
            R: 5,
            S: 5,
        };
        let (h, w) = (n + 4, n + 4);
        let (img, f) = (rng.f32s(h * w), rng.f32s(25));
        let mut o = vec![0.0f32; n * n];
        let t = check::median_time(args.runs, || conv2d::cpu(&img, &f, &mut o, s))?;
        check::report(
            "conv2d",
            &format!("{n}x{n} * 5x5"),
            t,
            Some(2.0 * 25.0 * (n * n) as f64),
            None,
        );
        let want: Vec<f64> = (0..n * n)
            .map(|x| {
                let (p, q) = (x / n, x % n);
                let mut acc = 0.0f64;
                for r in 0..5 {
                    for c in 0..5 {
                        acc += img[(p + r) * w + q + c] as f64 * f[r * 5 + c] as f64;
                    }
                }
                acc
            })
            .collect();
        check::compare_f32("conv2d", &o, &want, check::sum_rtol(25))?;
        check::ok("conv2d matches a plain loop");
        Ok(())
    })
}
