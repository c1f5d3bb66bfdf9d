//! 3-point Jacobi stencil with run-time weights, N = 2^24 (`--quick`: 2^16).
use mdh_examples::check::{self, Args, Buffer, Res, Rng, Value};
include!("../../kernels/src/jacobi1d.rs");

const C0: f32 = 0.25;
const C1: f32 = 0.5;

fn main() -> std::process::ExitCode {
    check::main("jacobi1d", |args: &Args| -> Res {
        let n = args.pick(1 << 24, 1 << 16);
        let mut rng = Rng::new(10);

        let small = n.min(100_003);
        let v = rng.f32s(small + 2);
        let mut w = vec![0.0f32; small];
        jacobi1d::cpu(&v, &mut w, C0, C1, jacobi1d::Sizes { N: small })?;
        check::against_reference(
            &format!("jacobi1d N={small}"),
            jacobi1d::SPEC,
            &[small],
            &[Buffer::from(v)],
            &[Value::F32(C0), Value::F32(C1)],
            &[Buffer::from(w)],
            check::RTOL,
        )?;

        let v = rng.f32s(n + 2);
        let mut w = vec![0.0f32; n];
        let t = check::median_time(args.runs, || {
            jacobi1d::cpu(&v, &mut w, C0, C1, jacobi1d::Sizes { N: n })
        })?;
        check::report(
            "jacobi1d",
            &format!("N={n}"),
            t,
            Some(4.0 * n as f64),
            Some(8.0 * n as f64),
        );
        let want: Vec<f64> = (0..n)
            .map(|i| C0 as f64 * (v[i] as f64 + v[i + 2] as f64) + C1 as f64 * v[i + 1] as f64)
            .collect();
        check::compare_f32("jacobi1d", &w, &want, check::RTOL)?;
        check::ok("jacobi1d matches a plain loop");
        Ok(())
    })
}
