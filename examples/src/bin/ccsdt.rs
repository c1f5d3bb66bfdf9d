//! CCSD(T) contraction `abcdef-gdab-efgc` (TCCG), all extents 16 by default
//! (a size argument sets them all; `--quick`: 8).
include!("../../kernels/src/ccsdt.rs");
use mdh_examples::check::{self, Args, Buffer, Res, Rng};

fn main() -> std::process::ExitCode {
    check::main("ccsdt", |args: &Args| -> Res {
        let e = args.pick(16, 8);
        let mut rng = Rng::new(9);

        let s = ccsdt::Sizes {
            NA: 3,
            NB: 2,
            NC: 5,
            ND: 4,
            NE: 3,
            NF: 7,
            NG: 11,
        };
        let (a, b) = (
            rng.f32s(s.NG * s.ND * s.NA * s.NB),
            rng.f32s(s.NE * s.NF * s.NG * s.NC),
        );
        let mut c = vec![0.0f32; s.NA * s.NB * s.NC * s.ND * s.NE * s.NF];
        ccsdt::cpu(&a, &b, &mut c, s)?;
        check::against_reference(
            &format!("ccsdt {s:?}"),
            ccsdt::SPEC,
            &s.values(),
            &[Buffer::from(a), Buffer::from(b)],
            &[],
            &[Buffer::from(c)],
            check::sum_rtol(s.NG),
        )?;

        let s = ccsdt::Sizes {
            NA: e,
            NB: e,
            NC: e,
            ND: e,
            NE: e,
            NF: e,
            NG: e,
        };
        let (a, b) = (rng.f32s(e.pow(4)), rng.f32s(e.pow(4)));
        let mut c = vec![0.0f32; e.pow(6)];
        let t = check::median_time(args.runs, || ccsdt::cpu(&a, &b, &mut c, s))?;
        check::report(
            "ccsdt",
            &format!("all extents {e}"),
            t,
            Some(2.0 * (e as f64).powi(7)),
            None,
        );
        check::sampled_f32("ccsdt", &c, 4000, check::sum_rtol(e), |x| {
            // C[a, b, c, d, ee, f] = Σ_g A[g, d, a, b] · B[ee, f, g, c]
            let idx: Vec<usize> = (0..6).rev().map(|p| x / e.pow(p) % e).collect();
            let (ia, ib, ic, id, ie, f) = (idx[0], idx[1], idx[2], idx[3], idx[4], idx[5]);
            (0..e)
                .map(|g| {
                    a[((g * e + id) * e + ia) * e + ib] as f64
                        * b[((ie * e + f) * e + g) * e + ic] as f64
                })
                .sum()
        })?;
        check::ok("ccsdt matches a plain loop on 4002 sampled elements");
        Ok(())
    })
}
