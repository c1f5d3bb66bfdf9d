//! Dot product, the paper's size 2^24 (`--quick`: 2^16).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/dot.rs");

fn run(n: usize, rng: &mut Rng) -> Res<(Vec<f32>, Vec<f32>, f32)> {
    let (x, y) = (rng.f32s(n), rng.f32s(n));
    let mut r = vec![0.0f32];
    dot::cpu(&x, &y, &mut r, dot::Sizes { N: n })?;
    Ok((x, y, r[0]))
}

fn main() -> std::process::ExitCode {
    check::main("dot", |args: &Args| {
        let n = args.pick(1 << 24, 1 << 16);
        let mut rng = Rng::new(1);

        // Against the interpreter, at a size it finishes quickly.
        let small = n.min(1 << 20);
        let (x, y, r) = run(small, &mut rng)?;
        check::against_reference(
            &format!("dot N={small}"),
            dot::SPEC,
            &[small],
            &[Buffer::from(x), Buffer::from(y)],
            &[],
            &[Buffer::from(vec![r])],
            check::sum_rtol(small),
        )?;

        // The full size, against a plain loop in f64.
        let (x, y) = (rng.f32s(n), rng.f32s(n));
        let mut r = vec![0.0f32];
        let t = check::median_time(args.runs, || dot::cpu(&x, &y, &mut r, dot::Sizes { N: n }))?;
        check::report(
            "dot",
            &format!("N={n}"),
            t,
            Some(2.0 * n as f64),
            Some(8.0 * n as f64),
        );
        let want: f64 = x.iter().zip(&y).map(|(&a, &b)| a as f64 * b as f64).sum();
        check::compare_f32("dot", &r, &[want], check::sum_rtol(n))?;
        check::ok("dot matches a plain loop");
        Ok(())
    })
}
