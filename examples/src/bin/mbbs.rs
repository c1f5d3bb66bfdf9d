//! Prefix sums of row sums (MBBS), 4096² (`--quick`: 256²).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/mbbs.rs");

fn main() -> std::process::ExitCode {
    check::main("mbbs", |args: &Args| -> Res {
        let n = args.pick(4096, 256);
        let mut rng = Rng::new(21);

        let (si, sj) = (n.min(257), n.min(199));
        let a = rng.f32s(si * sj);
        let mut o = vec![0.0f32; si];
        mbbs::cpu(&a, &mut o, mbbs::Sizes { I: si, J: sj })?;
        check::against_reference(
            &format!("mbbs {si}x{sj}"),
            mbbs::SPEC,
            &mbbs::Sizes { I: si, J: sj }.values(),
            &[Buffer::from(a)],
            &[],
            &[Buffer::from(o)],
            check::sum_rtol(si * sj),
        )?;

        let a = rng.f32s(n * n);
        let mut o = vec![0.0f32; n];
        let t = check::median_time(args.runs, || {
            mbbs::cpu(&a, &mut o, mbbs::Sizes { I: n, J: n })
        })?;
        check::report(
            "mbbs",
            &format!("{n}x{n}"),
            t,
            Some((n * n) as f64),
            Some(4.0 * (n * n) as f64),
        );
        let mut acc = 0.0f64;
        let want: Vec<f64> = a
            .chunks(n)
            .map(|row| {
                acc += row.iter().map(|&x| x as f64).sum::<f64>();
                acc
            })
            .collect();
        check::compare_f32("mbbs", &o, &want, check::sum_rtol(n * n))?;
        check::ok("mbbs matches a plain loop");
        Ok(())
    })
}
