//! Multi-channel convolution of capsule networks (4×4 capsule matrices):
//! N = 1, 3×3 filters, C = 8, K = 16, P = Q = 32 by default (a size
//! argument sets P = Q; `--quick`: 8).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/mcc_capsule.rs");

type S = mcc_capsule::Sizes;

fn lens(s: &S) -> (usize, usize, usize) {
    let i = s.N * (s.P + s.R - 1) * (s.Q + s.S - 1) * s.C * s.MI * s.MK;
    let f = s.K * s.R * s.S * s.C * s.MK * s.MJ;
    let o = s.N * s.P * s.Q * s.K * s.MI * s.MJ;
    (i, f, o)
}

fn main() -> std::process::ExitCode {
    check::main("mcc_capsule", |args: &Args| -> Res {
        let pq = args.pick(32, 8);
        let mut rng = Rng::new(8);

        let s = S {
            N: 1,
            P: 3,
            Q: 5,
            K: 2,
            MI: 3,
            MJ: 2,
            R: 3,
            S: 2,
            C: 3,
            MK: 5,
        };
        let (li, lf, lo) = lens(&s);
        let (img, f) = (rng.f32s(li), rng.f32s(lf));
        let mut o = vec![0.0f32; lo];
        mcc_capsule::cpu(&img, &f, &mut o, s)?;
        check::against_reference(
            &format!("mcc_capsule {s:?}"),
            mcc_capsule::SPEC,
            &s.values(),
            &[Buffer::from(img), Buffer::from(f)],
            &[],
            &[Buffer::from(o)],
            check::sum_rtol(s.R * s.S * s.C * s.MK),
        )?;

        let s = S {
            N: 1,
            P: pq,
            Q: pq,
            K: 16,
            MI: 4,
            MJ: 4,
            R: 3,
            S: 3,
            C: 8,
            MK: 4,
        };
        let (li, lf, lo) = lens(&s);
        let (img, f) = (rng.f32s(li), rng.f32s(lf));
        let mut o = vec![0.0f32; lo];
        let t = check::median_time(args.runs, || mcc_capsule::cpu(&img, &f, &mut o, s))?;
        let flops = 2.0 * (lo * s.R * s.S * s.C * s.MK) as f64;
        check::report("mcc_capsule", &format!("{s:?}"), t, Some(flops), None);
        let (h, w) = (s.P + s.R - 1, s.Q + s.S - 1);
        check::sampled_f32(
            "mcc_capsule",
            &o,
            4000,
            check::sum_rtol(s.R * s.S * s.C * s.MK),
            |x| {
                let mj = x % s.MJ;
                let mi = x / s.MJ % s.MI;
                let k = x / (s.MJ * s.MI) % s.K;
                let q = x / (s.MJ * s.MI * s.K) % s.Q;
                let p = x / (s.MJ * s.MI * s.K * s.Q) % s.P;
                let n = x / (s.MJ * s.MI * s.K * s.Q * s.P);
                let mut acc = 0.0f64;
                for r in 0..s.R {
                    for ss in 0..s.S {
                        for c in 0..s.C {
                            for mk in 0..s.MK {
                                let ii = ((((n * h + p + r) * w + q + ss) * s.C + c) * s.MI + mi)
                                    * s.MK
                                    + mk;
                                let fi = ((((k * s.R + r) * s.S + ss) * s.C + c) * s.MK + mk)
                                    * s.MJ
                                    + mj;
                                acc += img[ii] as f64 * f[fi] as f64;
                            }
                        }
                    }
                }
                acc
            },
        )?;
        check::ok("mcc_capsule matches a plain loop on 4002 sampled elements");
        Ok(())
    })
}
