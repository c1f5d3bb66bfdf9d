//! 7-point Jacobi stencil, the paper's 256³ (`--quick`: 32³; a size argument
//! sets N = M = L, e.g. 512).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/jacobi3d.rs");

fn main() -> std::process::ExitCode {
    check::main("jacobi3d", |args: &Args| -> Res {
        let n = args.pick(256, 32);
        let mut rng = Rng::new(12);

        let s = jacobi3d::Sizes {
            N: n.min(37),
            M: n.min(41),
            L: n.min(43),
        };
        let v = rng.f32s((s.N + 2) * (s.M + 2) * (s.L + 2));
        let mut w = vec![0.0f32; s.N * s.M * s.L];
        jacobi3d::cpu(&v, &mut w, s)?;
        check::against_reference(
            &format!("jacobi3d {s:?}"),
            jacobi3d::SPEC,
            &s.values(),
            &[Buffer::from(v)],
            &[],
            &[Buffer::from(w)],
            check::RTOL,
        )?;

        let m = n + 2;
        let v = rng.f32s(m * m * m);
        let mut w = vec![0.0f32; n * n * n];
        let s = jacobi3d::Sizes { N: n, M: n, L: n };
        let t = check::median_time(args.runs, || jacobi3d::cpu(&v, &mut w, s))?;
        let pts = (n * n * n) as f64;
        check::report(
            "jacobi3d",
            &format!("{n}^3"),
            t,
            Some(8.0 * pts),
            Some(8.0 * pts),
        );
        let at = |i: usize, j: usize, k: usize| v[(i * m + j) * m + k] as f64;
        let want: Vec<f64> = (0..n * n * n)
            .map(|x| {
                let (i, j, k) = (x / (n * n), x / n % n, x % n);
                0.4 * at(i + 1, j + 1, k + 1)
                    + 0.1
                        * (at(i, j + 1, k + 1)
                            + at(i + 2, j + 1, k + 1)
                            + at(i + 1, j, k + 1)
                            + at(i + 1, j + 2, k + 1)
                            + at(i + 1, j + 1, k)
                            + at(i + 1, j + 1, k + 2))
            })
            .collect();
        check::compare_f32("jacobi3d", &w, &want, check::RTOL)?;
        check::ok("jacobi3d matches a plain loop");
        Ok(())
    })
}
