//! Mixed-precision matrix multiplication: bf16 inputs, f32 products and
//! sums, the paper's size 1024³ (`--quick`: 64³).
use mdh::bf16;
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/matmul_bf16.rs");

fn main() -> std::process::ExitCode {
    check::main("matmul_bf16", |args: &Args| -> Res {
        let n = args.pick(1024, 64);
        let mut rng = Rng::new(3);
        let bf16s = |rng: &mut Rng, len: usize| -> Vec<bf16> {
            rng.f32s(len).into_iter().map(bf16::from_f32).collect()
        };

        // Odd sizes against the interpreter (about 1 M points).
        let (si, sj, sk) = (n.min(97), n.min(131), n.min(79));
        let sizes = matmul_bf16::Sizes {
            I: si,
            J: sj,
            K: sk,
        };
        let (a, b) = (bf16s(&mut rng, si * sk), bf16s(&mut rng, sk * sj));
        let mut c = vec![0.0f32; si * sj];
        matmul_bf16::cpu(&a, &b, &mut c, sizes)?;
        check::against_reference(
            &format!("matmul_bf16 {si}x{sj}x{sk}"),
            matmul_bf16::SPEC,
            &sizes.values(),
            &[Buffer::from(a), Buffer::from(b)],
            &[],
            &[Buffer::from(c)],
            check::sum_rtol(sk),
        )?;

        let (a, b) = (bf16s(&mut rng, n * n), bf16s(&mut rng, n * n));
        let mut c = vec![0.0f32; n * n];
        let sizes = matmul_bf16::Sizes { I: n, J: n, K: n };
        let t = check::median_time(args.runs, || matmul_bf16::cpu(&a, &b, &mut c, sizes))?;
        check::report(
            "matmul_bf16",
            &format!("{n}x{n}x{n}"),
            t,
            Some(2.0 * (n as f64).powi(3)),
            None,
        );
        // The products of bf16 values are exact in f32 and f64: the plain
        // loop sums the same terms.
        check::sampled_f32("matmul_bf16", &c, 2000, check::sum_rtol(n), |x| {
            let (i, j) = (x / n, x % n);
            (0..n)
                .map(|k| a[i * n + k].to_f64() * b[k * n + j].to_f64())
                .sum()
        })?;
        check::ok("matmul_bf16 matches a plain loop on 2002 sampled elements");
        Ok(())
    })
}
