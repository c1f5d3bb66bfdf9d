//! One attention head, `softmax(Q·Kᵀ / √D) · V`, a kernel of six stages:
//! sequence 1024, head dimension 64 (`--quick`: sequence 256).
use mdh_examples::check::{self, Args, Buffer, Res, Rng, Value};
include!("../../kernels/src/attention.rs");

/// Row `i` of the head's output, by plain loops in f64.
fn row(q: &[f32], k: &[f32], v: &[f32], (i, j, d, e): (usize, usize, usize, usize)) -> Vec<f64> {
    let scale = 1.0 / (d as f64).sqrt();
    let scores: Vec<f64> = (0..j)
        .map(|c| {
            (0..d)
                .map(|t| q[i * d + t] as f64 * k[c * d + t] as f64)
                .sum::<f64>()
                * scale
        })
        .collect();
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let sum: f64 = p.iter().sum();
    (0..e)
        .map(|col| (0..j).map(|c| p[c] / sum * v[c * e + col] as f64).sum())
        .collect()
}

fn main() -> std::process::ExitCode {
    check::main("attention", |args: &Args| -> Res {
        let n = args.pick(1024, 256);
        let (d, e) = (64, 64);
        let mut rng = Rng::new(39);

        let (si, sj, sd, se) = (n.min(61), n.min(97), 13, 7);
        let scale = 1.0 / (sd as f32).sqrt();
        let (q, k, v) = (
            rng.f32s_in(si * sd, -1.0, 1.0),
            rng.f32s_in(sj * sd, -1.0, 1.0),
            rng.f32s(sj * se),
        );
        let mut o = vec![0.0f32; si * se];
        let sizes = attention::Sizes {
            I: si,
            J: sj,
            D: sd,
            E: se,
        };
        attention::cpu(&q, &k, &v, &mut o, scale, sizes)?;
        check::against_reference(
            &format!("attention {si}x{sj}x{sd}x{se}"),
            attention::SPEC,
            &sizes.values(),
            &[Buffer::from(q), Buffer::from(k), Buffer::from(v)],
            &[Value::F32(scale)],
            &[Buffer::from(o)],
            check::sum_rtol(sj),
        )?;

        let scale = 1.0 / (d as f32).sqrt();
        let (q, k, v) = (
            rng.f32s_in(n * d, -1.0, 1.0),
            rng.f32s_in(n * d, -1.0, 1.0),
            rng.f32s(n * e),
        );
        let mut o = vec![0.0f32; n * e];
        let sizes = attention::Sizes {
            I: n,
            J: n,
            D: d,
            E: e,
        };
        let t = check::median_time(args.runs, || {
            attention::cpu(&q, &k, &v, &mut o, scale, sizes)
        })?;
        check::report(
            "attention",
            &format!("{n}x{d}"),
            t,
            Some(2.0 * (n * n * (d + e)) as f64),
            None,
        );
        let i = n / 2;
        check::compare_f32(
            "attention",
            &o[i * e..(i + 1) * e],
            &row(&q, &k, &v, (i, n, d, e)),
            check::sum_rtol(n),
        )?;
        check::ok("attention matches plain loops at one row");
        Ok(())
    })
}
