//! Inclusive prefix sum, N = 2^24 (`--quick`: 2^16).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/scan.rs");

fn main() -> std::process::ExitCode {
    check::main("scan", |args: &Args| -> Res {
        let n = args.pick(1 << 24, 1 << 16);
        let mut rng = Rng::new(20);

        // The interpreter evaluates each prefix on its own (O(N²)).
        let small = n.min(4099);
        let x = rng.f32s(small);
        let mut y = vec![0.0f32; small];
        scan::cpu(&x, &mut y, scan::Sizes { N: small })?;
        check::against_reference(
            &format!("scan N={small}"),
            scan::SPEC,
            &[small],
            &[Buffer::from(x)],
            &[],
            &[Buffer::from(y)],
            check::sum_rtol(small),
        )?;

        let x = rng.f32s(n);
        let mut y = vec![0.0f32; n];
        let t = check::median_time(args.runs, || scan::cpu(&x, &mut y, scan::Sizes { N: n }))?;
        check::report(
            "scan",
            &format!("N={n}"),
            t,
            Some(n as f64),
            Some(8.0 * n as f64),
        );
        let mut acc = 0.0f64;
        let want: Vec<f64> = x
            .iter()
            .map(|&a| {
                acc += a as f64;
                acc
            })
            .collect();
        check::compare_f32("scan", &y, &want, check::sum_rtol(n))?;
        check::ok("scan matches a plain loop");
        Ok(())
    })
}
