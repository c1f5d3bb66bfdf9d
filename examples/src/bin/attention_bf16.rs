//! Attention scores of bf16 queries and keys, `S = Q·Kᵀ · scale` with f32
//! products and sums: a prompt's 512 queries against 512 keys of head
//! dimension 128 (`--quick`: 64 × 64 × 32).
use mdh::bf16;
use mdh_examples::check::{self, Args, Buffer, Res, Rng, Value};
include!("../../kernels/src/attention_bf16.rs");

fn main() -> std::process::ExitCode {
    check::main("attention_bf16", |args: &Args| -> Res {
        let (n, d) = (args.pick(512, 64), args.pick(128, 32));
        let mut rng = Rng::new(5);
        let bf16s = |rng: &mut Rng, len: usize| -> Vec<bf16> {
            rng.f32s(len)
                .into_iter()
                .map(|x| bf16::from_f32(x - 0.5))
                .collect()
        };

        // Odd sizes against the interpreter.
        let (si, sj, sd) = (n.min(37), n.min(131), d.min(67));
        let scale = 1.0 / (sd as f32).sqrt();
        let sizes = attention_bf16::Sizes {
            I: si,
            J: sj,
            D: sd,
        };
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
        // The products of bf16 values are exact in f64: a plain loop.
        let (sc, d64) = (scale as f64, d);
        check::sampled_f32("attention_bf16", &s, 2000, check::sum_rtol(d), |x| {
            let (i, j) = (x / n, x % n);
            (0..d64)
                .map(|e| q[i * d64 + e].to_f64() * k[j * d64 + e].to_f64() * sc)
                .sum()
        })?;
        check::ok("attention_bf16 matches a plain loop on 2002 sampled elements");
        Ok(())
    })
}
