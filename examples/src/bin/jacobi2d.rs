//! 5-point Jacobi stencil, 4096² (`--quick`: 128²; a size argument sets N = M).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/jacobi2d.rs");

fn main() -> std::process::ExitCode {
    check::main("jacobi2d", |args: &Args| -> Res {
        let n = args.pick(4096, 128);
        let mut rng = Rng::new(11);

        let (sn, sm) = (n.min(257), n.min(263));
        let v = rng.f32s((sn + 2) * (sm + 2));
        let mut w = vec![0.0f32; sn * sm];
        jacobi2d::cpu(&v, &mut w, jacobi2d::Sizes { N: sn, M: sm })?;
        check::against_reference(
            &format!("jacobi2d {sn}x{sm}"),
            jacobi2d::SPEC,
            &jacobi2d::Sizes { N: sn, M: sm }.values(),
            &[Buffer::from(v)],
            &[],
            &[Buffer::from(w)],
            check::RTOL,
        )?;

        let m = n + 2;
        let v = rng.f32s(m * m);
        let mut w = vec![0.0f32; n * n];
        let t = check::median_time(args.runs, || {
            jacobi2d::cpu(&v, &mut w, jacobi2d::Sizes { N: n, M: n })
        })?;
        check::report(
            "jacobi2d",
            &format!("{n}x{n}"),
            t,
            Some(5.0 * (n * n) as f64),
            Some(8.0 * (n * n) as f64),
        );
        let at = |i: usize, j: usize| v[i * m + j] as f64;
        let want: Vec<f64> = (0..n * n)
            .map(|x| {
                let (i, j) = (x / n, x % n);
                0.2 * (at(i, j + 1)
                    + at(i + 1, j)
                    + at(i + 1, j + 1)
                    + at(i + 1, j + 2)
                    + at(i + 2, j + 1))
            })
            .collect();
        check::compare_f32("jacobi2d", &w, &want, check::RTOL)?;
        check::ok("jacobi2d matches a plain loop");
        Ok(())
    })
}
