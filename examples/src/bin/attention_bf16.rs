//! Attention scores in mixed precision: `S = Q·Kᵀ · 1/√D` of bf16 queries
//! and keys into f32, 1024 queries × 1024 keys of head dimension 128
//! (`--quick`: 64 × 64 × 64). The bf16 inputs are widened to f32 while
//! their tiles are packed, so the register tiles are the f32 ones.
use mdh::bf16;
use mdh_examples::check::{self, Args, Buffer, Res, Rng, Value};
include!("../../kernels/src/attention_bf16.rs");

fn main() -> std::process::ExitCode {
    check::main("attention_bf16", |args: &Args| -> Res {
        let (n, d) = (args.pick(1024, 64), args.pick(128, 64));
        let mut rng = Rng::new(5);
        let bf16s = |rng: &mut Rng, len: usize| -> Vec<bf16> {
            rng.f32s(len).into_iter().map(bf16::from_f32).collect()
        };

        // Odd sizes against the interpreter.
        let (si, sj, sd) = (n.min(97), n.min(131), d.min(79));
        let sizes = attention_bf16::Sizes {
            I: si,
            J: sj,
            D: sd,
        };
        let scale = 1.0 / (sd as f32).sqrt();
        let (q, k) = (bf16s(&mut rng, si * sd), bf16s(&mut rng, sj * sd));
        let mut s = vec![0.0f32; si * sj];
        attention_bf16::cpu(&q, &k, &mut s, scale, sizes)?;
        check::against_reference(
            &format!("attention_bf16 {si}x{sj}x{sd}"),
            attention_bf16::SPEC,
            &sizes.values(),
            &[Buffer::from(q), Buffer::from(k)],
            &[Value::F32(scale)],
            &[Buffer::from(s)],
            check::sum_rtol(sd),
        )?;

        let scale = 1.0 / (d as f32).sqrt();
        let (q, k) = (bf16s(&mut rng, n * d), bf16s(&mut rng, n * d));
        let mut s = vec![0.0f32; n * n];
        let sizes = attention_bf16::Sizes { I: n, J: n, D: d };
        let t = check::median_time(args.runs, || {
            attention_bf16::cpu(&q, &k, &mut s, scale, sizes)
        })?;
        check::report(
            "attention_bf16",
            &format!("{n}x{n}x{d}"),
            t,
            Some(2.0 * (n * n * d) as f64),
            None,
        );
        // The products of bf16 values are exact in f32 and f64: the plain
        // loop sums the same terms, scaled.
        check::sampled_f32("attention_bf16", &s, 2000, check::sum_rtol(d), |x| {
            let (i, j) = (x / n, x % n);
            (0..d)
                .map(|e| q[i * d + e].to_f64() * k[j * d + e].to_f64() * scale as f64)
                .sum()
        })?;
        check::ok("attention_bf16 matches a plain loop on 2002 sampled elements");
        Ok(())
    })
}
