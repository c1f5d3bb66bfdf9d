//! Layer normalization of each row, a kernel of three stages, 4096²
//! (`--quick`: 256²).
use mdh_examples::check::{self, Args, Buffer, Res, Rng, Value};
include!("../../kernels/src/layernorm.rs");

fn main() -> std::process::ExitCode {
    check::main("layernorm", |args: &Args| -> Res {
        let n = args.pick(4096, 256);
        let mut rng = Rng::new(39);
        let eps = 1e-5f32;

        let (si, sj) = (n.min(97), n.min(509));
        let x = rng.f32s_in(si * sj, -4.0, 4.0);
        let (gamma, beta) = (rng.f32s_in(sj, -1.0, 1.0), rng.f32s_in(sj, -1.0, 1.0));
        let mut y = vec![0.0f32; si * sj];
        let sizes = layernorm::Sizes { I: si, J: sj };
        layernorm::cpu(&x, &gamma, &beta, &mut y, eps, sizes)?;
        check::against_reference(
            &format!("layernorm {si}x{sj}"),
            layernorm::SPEC,
            &sizes.values(),
            &[Buffer::from(x), Buffer::from(gamma), Buffer::from(beta)],
            &[Value::F32(eps)],
            &[Buffer::from(y)],
            check::sum_rtol(sj),
        )?;

        // gamma = 1, beta = 0: every row of y has mean 0 and variance
        // var / (var + eps), checked below.
        let x = rng.f32s_in(n * n, -4.0, 4.0);
        let (gamma, beta) = (vec![1.0f32; n], vec![0.0f32; n]);
        let mut y = vec![0.0f32; n * n];
        let sizes = layernorm::Sizes { I: n, J: n };
        let t = check::median_time(args.runs, || {
            layernorm::cpu(&x, &gamma, &beta, &mut y, eps, sizes)
        })?;
        // The compulsory traffic: x read once, y written once.
        check::report(
            "layernorm",
            &format!("{n}x{n}"),
            t,
            None,
            Some(8.0 * (n * n) as f64),
        );
        for (r, row) in y.chunks(n).enumerate() {
            let mean = row.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
            let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n as f64;
            if mean.abs() > 1e-3 || (var - 1.0).abs() > 1e-3 {
                return Err(format!("layernorm row {r}: mean {mean}, variance {var}").into());
            }
        }
        check::ok("layernorm rows have mean 0 and variance 1");
        Ok(())
    })
}
