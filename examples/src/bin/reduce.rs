//! Sum reduction, N = 2^24 (`--quick`: 2^16).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/reduce.rs");

fn main() -> std::process::ExitCode {
    check::main("reduce", |args: &Args| -> Res {
        let n = args.pick(1 << 24, 1 << 16);
        let mut rng = Rng::new(18);

        let small = n.min(1 << 20);
        let x = rng.f32s(small);
        let mut s = vec![0.0f32];
        reduce::cpu(&x, &mut s, reduce::Sizes { N: small })?;
        check::against_reference(
            &format!("reduce N={small}"),
            reduce::SPEC,
            &[small],
            &[Buffer::from(x)],
            &[],
            &[Buffer::from(s)],
            check::sum_rtol(small),
        )?;

        let x = rng.f32s(n);
        let mut s = vec![0.0f32];
        let t = check::median_time(args.runs, || {
            reduce::cpu(&x, &mut s, reduce::Sizes { N: n })
        })?;
        check::report(
            "reduce",
            &format!("N={n}"),
            t,
            Some(n as f64),
            Some(4.0 * n as f64),
        );
        let want: f64 = x.iter().map(|&a| a as f64).sum();
        check::compare_f32("reduce", &s, &[want], check::sum_rtol(n))?;
        check::ok("reduce matches a plain loop");
        Ok(())
    })
}
