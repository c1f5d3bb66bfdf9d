//! Two reductions in one pass (sum and max), N = 2^24 (`--quick`: 2^16).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/reduce2.rs");

fn main() -> std::process::ExitCode {
    check::main("reduce2", |args: &Args| -> Res {
        let n = args.pick(1 << 24, 1 << 16);
        let mut rng = Rng::new(19);

        let small = n.min(1 << 20);
        let x = rng.f32s(small);
        let (mut s, mut m) = (vec![0.0f32], vec![0.0f32]);
        reduce2::cpu(&x, &mut s, &mut m, reduce2::Sizes { N: small })?;
        check::against_reference(
            &format!("reduce2 N={small}"),
            reduce2::SPEC,
            &[small],
            &[Buffer::from(x)],
            &[],
            &[Buffer::from(s), Buffer::from(m)],
            check::sum_rtol(small),
        )?;

        let x = rng.f32s(n);
        let (mut s, mut m) = (vec![0.0f32], vec![0.0f32]);
        let t = check::median_time(args.runs, || {
            reduce2::cpu(&x, &mut s, &mut m, reduce2::Sizes { N: n })
        })?;
        check::report(
            "reduce2",
            &format!("N={n}"),
            t,
            Some(2.0 * n as f64),
            Some(4.0 * n as f64),
        );
        let want_s: f64 = x.iter().map(|&a| a as f64).sum();
        let want_m = x.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        check::compare_f32("reduce2 sum", &s, &[want_s], check::sum_rtol(n))?;
        if m[0] != want_m {
            return Err(format!("reduce2 max: got {}, expected {want_m}", m[0]).into());
        }
        check::ok("reduce2 matches a plain loop");
        Ok(())
    })
}
