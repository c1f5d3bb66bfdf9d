//! Map (SAXPY with a run-time `alpha`), N = 2^24 (`--quick`: 2^16).
use mdh_examples::check::{self, Args, Buffer, Res, Rng, Value};
include!("../../kernels/src/map.rs");

const ALPHA: f32 = 1.5;

fn main() -> std::process::ExitCode {
    check::main("map", |args: &Args| -> Res {
        let n = args.pick(1 << 24, 1 << 16);
        let mut rng = Rng::new(17);

        let small = n.min(1 << 20);
        let (x, y) = (rng.f32s(small), rng.f32s(small));
        let mut z = vec![0.0f32; small];
        map::cpu(&x, &y, &mut z, ALPHA, map::Sizes { N: small })?;
        check::against_reference(
            &format!("map N={small}"),
            map::SPEC,
            &[small],
            &[Buffer::from(x), Buffer::from(y)],
            &[Value::F32(ALPHA)],
            &[Buffer::from(z)],
            check::RTOL,
        )?;

        let (x, y) = (rng.f32s(n), rng.f32s(n));
        let mut z = vec![0.0f32; n];
        let t = check::median_time(args.runs, || {
            map::cpu(&x, &y, &mut z, ALPHA, map::Sizes { N: n })
        })?;
        check::report(
            "map",
            &format!("N={n}"),
            t,
            Some(2.0 * n as f64),
            Some(12.0 * n as f64),
        );
        let want: Vec<f64> = x
            .iter()
            .zip(&y)
            .map(|(&a, &b)| ALPHA as f64 * a as f64 + b as f64)
            .collect();
        check::compare_f32("map", &z, &want, check::RTOL)?;
        check::ok("map matches a plain loop");
        Ok(())
    })
}
