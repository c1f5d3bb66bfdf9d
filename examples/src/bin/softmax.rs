//! Softmax of each row, a kernel of four stages, 4096² (`--quick`: 256²).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/softmax.rs");

fn main() -> std::process::ExitCode {
    check::main("softmax", |args: &Args| -> Res {
        let n = args.pick(4096, 256);
        let mut rng = Rng::new(39);

        let (si, sj) = (n.min(97), n.min(509));
        let x = rng.f32s_in(si * sj, -4.0, 4.0);
        let mut y = vec![0.0f32; si * sj];
        let sizes = softmax::Sizes { I: si, J: sj };
        softmax::cpu(&x, &mut y, sizes)?;
        check::against_reference(
            &format!("softmax {si}x{sj}"),
            softmax::SPEC,
            &sizes.values(),
            &[Buffer::from(x)],
            &[],
            &[Buffer::from(y)],
            check::sum_rtol(sj),
        )?;

        let x = rng.f32s_in(n * n, -4.0, 4.0);
        let mut y = vec![0.0f32; n * n];
        let sizes = softmax::Sizes { I: n, J: n };
        // Fused along the rows, x crosses memory once and y once; stage by
        // stage x twice, and the exponentials `e` (a matrix of their own)
        // are written once and read twice.
        let t = check::median_time(args.runs, || softmax::cpu_unfused(&x, &mut y, sizes))?;
        check::report(
            "softmax unfused",
            &format!("{n}x{n}"),
            t,
            None,
            Some(24.0 * (n * n) as f64),
        );
        let t = check::median_time(args.runs, || softmax::cpu(&x, &mut y, sizes))?;
        check::report(
            "softmax",
            &format!("{n}x{n}"),
            t,
            None,
            Some(8.0 * (n * n) as f64),
        );
        for (r, row) in y.chunks(n).enumerate() {
            let sum: f64 = row.iter().map(|&v| v as f64).sum();
            if (sum - 1.0).abs() > 1e-3 {
                return Err(format!("softmax row {r} sums to {sum}").into());
            }
        }
        check::ok("softmax rows sum to 1");
        Ok(())
    })
}
