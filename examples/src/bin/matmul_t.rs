//! Transposed matrix multiplication `C[j, i] = Σ_k A[k, i] · B[j, k]`,
//! the paper's size 1024³ (`--quick`: 64³).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/matmul_t.rs");

fn main() -> std::process::ExitCode {
    check::main("matmul_t", |args: &Args| -> Res {
        let n = args.pick(1024, 64);
        let mut rng = Rng::new(4);

        let (si, sj, sk) = (n.min(101), n.min(127), n.min(83));
        let (a, b) = (rng.f32s(sk * si), rng.f32s(sj * sk));
        let mut c = vec![0.0f32; sj * si];
        matmul_t::cpu(
            &a,
            &b,
            &mut c,
            matmul_t::Sizes {
                I: si,
                J: sj,
                K: sk,
            },
        )?;
        check::against_reference(
            &format!("matmul_t {si}x{sj}x{sk}"),
            matmul_t::SPEC,
            &matmul_t::Sizes {
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
        let sizes = matmul_t::Sizes { I: n, J: n, K: n };
        let t = check::median_time(args.runs, || matmul_t::cpu(&a, &b, &mut c, sizes))?;
        check::report(
            "matmul_t",
            &format!("{n}x{n}x{n}"),
            t,
            Some(2.0 * (n as f64).powi(3)),
            None,
        );
        check::sampled_f32("matmul_t", &c, 2000, check::sum_rtol(n), |x| {
            let (j, i) = (x / n, x % n);
            (0..n)
                .map(|k| a[k * n + i] as f64 * b[j * n + k] as f64)
                .sum()
        })?;
        check::ok("matmul_t matches a plain loop on 2002 sampled elements");
        Ok(())
    })
}
