//! A dense layer `max(A · B + bias, 0)`, a kernel of two stages, 1024³
//! (`--quick`: 128³).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/matmul_bias_relu.rs");

fn main() -> std::process::ExitCode {
    check::main("matmul_bias_relu", |args: &Args| -> Res {
        let n = args.pick(1024, 128);
        let mut rng = Rng::new(39);

        let (si, sj, sk) = (n.min(61), n.min(97), n.min(127));
        let (a, b, bias) = (
            rng.f32s_in(si * sk, -1.0, 1.0),
            rng.f32s_in(sk * sj, -1.0, 1.0),
            rng.f32s_in(sj, -1.0, 1.0),
        );
        let mut y = vec![0.0f32; si * sj];
        let sizes = matmul_bias_relu::Sizes {
            I: si,
            K: sk,
            J: sj,
        };
        matmul_bias_relu::cpu(&a, &b, &bias, &mut y, sizes)?;
        check::against_reference(
            &format!("matmul_bias_relu {si}x{sj}x{sk}"),
            matmul_bias_relu::SPEC,
            &sizes.values(),
            &[Buffer::from(a), Buffer::from(b), Buffer::from(bias)],
            &[],
            &[Buffer::from(y)],
            check::sum_rtol(sk),
        )?;

        let (a, b, bias) = (rng.f32s(n * n), rng.f32s(n * n), rng.f32s(n));
        let mut y = vec![0.0f32; n * n];
        let sizes = matmul_bias_relu::Sizes { I: n, K: n, J: n };
        let t = check::median_time(args.runs, || {
            matmul_bias_relu::cpu(&a, &b, &bias, &mut y, sizes)
        })?;
        check::report(
            "matmul_bias_relu",
            &format!("{n}x{n}x{n}"),
            t,
            Some(2.0 * (n * n * n) as f64),
            None,
        );
        // Inputs in [0, 1): no result is clamped, and each is a dot product plus the bias.
        let (i, j) = (n / 2, n / 3);
        let want: f64 = (0..n)
            .map(|k| a[i * n + k] as f64 * b[k * n + j] as f64)
            .sum::<f64>()
            + bias[j] as f64;
        check::compare_f32(
            "matmul_bias_relu",
            &y[i * n + j..=i * n + j],
            &[want],
            check::sum_rtol(n),
        )?;
        check::ok("matmul_bias_relu matches a plain loop at one point");
        Ok(())
    })
}
