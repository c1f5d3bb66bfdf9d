//! Matrix multiplication, the paper's size 1024³ (`--quick`: 64³).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/matmul.rs");

fn main() -> std::process::ExitCode {
    check::main("matmul", |args: &Args| -> Res {
        let n = args.pick(1024, 64);
        let mut rng = Rng::new(3);

        // Odd sizes against the interpreter (about 1 M points).
        let (si, sj, sk) = (n.min(97), n.min(131), n.min(79));
        let (a, b) = (rng.f32s(si * sk), rng.f32s(sk * sj));
        let mut c = vec![0.0f32; si * sj];
        matmul::cpu(
            &a,
            &b,
            &mut c,
            matmul::Sizes {
                I: si,
                J: sj,
                K: sk,
            },
        )?;
        check::against_reference(
            &format!("matmul {si}x{sj}x{sk}"),
            matmul::SPEC,
            &matmul::Sizes {
                I: si,
                J: sj,
                K: sk,
            }
            .values(),
            &[Buffer::from(a), Buffer::from(b)],
            &[],
            &[Buffer::from(c)],
            check::sum_rtol(sk),
        )?;

        let (a, b) = (rng.f32s(n * n), rng.f32s(n * n));
        let mut c = vec![0.0f32; n * n];
        let sizes = matmul::Sizes { I: n, J: n, K: n };
        let t = check::median_time(args.runs, || matmul::cpu(&a, &b, &mut c, sizes))?;
        check::report(
            "matmul",
            &format!("{n}x{n}x{n}"),
            t,
            Some(2.0 * (n as f64).powi(3)),
            None,
        );
        check::sampled_f32("matmul", &c, 2000, check::sum_rtol(n), |x| {
            let (i, j) = (x / n, x % n);
            (0..n)
                .map(|k| a[i * n + k] as f64 * b[k * n + j] as f64)
                .sum()
        })?;
        check::ok("matmul matches a plain loop on 2002 sampled elements");
        Ok(())
    })
}
