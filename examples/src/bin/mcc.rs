//! Multi-channel convolution, stride 2: ResNet-50's first layer (N = 1,
//! 7×7 filters, C = 3, K = 64, P = Q = 112, i.e. the 230×230 padded input of
//! which a stride-2 7×7 convolution reads 229×229). A size argument sets N
//! (the paper also uses 16); `--quick` uses P = Q = 16.
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/mcc.rs");

fn in_len(s: &mcc::Sizes) -> usize {
    s.N * (2 * s.P + s.R - 2) * (2 * s.Q + s.S - 2) * s.C
}

fn main() -> std::process::ExitCode {
    check::main("mcc", |args: &Args| -> Res {
        let nn = args.pick(1, 1);
        let pq = if args.quick { 16 } else { 112 };
        let mut rng = Rng::new(7);

        let s = mcc::Sizes {
            N: 2,
            P: 5,
            Q: 7,
            K: 6,
            R: 3,
            S: 5,
            C: 3,
        };
        let (img, f) = (rng.f32s(in_len(&s)), rng.f32s(s.K * s.R * s.S * s.C));
        let mut o = vec![0.0f32; s.N * s.P * s.Q * s.K];
        mcc::cpu(&img, &f, &mut o, s)?;
        check::against_reference(
            &format!("mcc {s:?}"),
            mcc::SPEC,
            &s.values(),
            &[Buffer::from(img), Buffer::from(f)],
            &[],
            &[Buffer::from(o)],
            check::sum_rtol(s.R * s.S * s.C),
        )?;

        let s = mcc::Sizes {
            N: nn,
            P: pq,
            Q: pq,
            K: 64,
            R: 7,
            S: 7,
            C: 3,
        };
        let (h, w) = (2 * s.P + s.R - 2, 2 * s.Q + s.S - 2);
        let (img, f) = (rng.f32s(in_len(&s)), rng.f32s(s.K * s.R * s.S * s.C));
        let mut o = vec![0.0f32; s.N * s.P * s.Q * s.K];
        let t = check::median_time(args.runs, || mcc::cpu(&img, &f, &mut o, s))?;
        let flops = 2.0 * (s.N * s.P * s.Q * s.K * s.R * s.S * s.C) as f64;
        check::report("mcc", &format!("{s:?}"), t, Some(flops), None);
        check::sampled_f32("mcc", &o, 4000, check::sum_rtol(s.R * s.S * s.C), |x| {
            let k = x % s.K;
            let q = x / s.K % s.Q;
            let p = x / (s.K * s.Q) % s.P;
            let n = x / (s.K * s.Q * s.P);
            let mut acc = 0.0f64;
            for r in 0..s.R {
                for ss in 0..s.S {
                    for c in 0..s.C {
                        let i = img[((n * h + 2 * p + r) * w + 2 * q + ss) * s.C + c] as f64;
                        acc += i * f[((k * s.R + r) * s.S + ss) * s.C + c] as f64;
                    }
                }
            }
            acc
        })?;
        check::ok("mcc matches a plain loop on 4002 sampled elements");
        Ok(())
    })
}
