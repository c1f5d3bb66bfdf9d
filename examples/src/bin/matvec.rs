//! Matrix-vector multiplication, the paper's size 4096² (`--quick`: 256²).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/matvec.rs");

fn main() -> std::process::ExitCode {
    check::main("matvec", |args: &Args| -> Res {
        let n = args.pick(4096, 256);
        let mut rng = Rng::new(2);

        let (si, sk) = (n.min(509), n.min(512));
        let (m, v) = (rng.f32s(si * sk), rng.f32s(sk));
        let mut w = vec![0.0f32; si];
        matvec::cpu(&m, &v, &mut w, matvec::Sizes { I: si, K: sk })?;
        check::against_reference(
            &format!("matvec {si}x{sk}"),
            matvec::SPEC,
            &matvec::Sizes { I: si, K: sk }.values(),
            &[Buffer::from(m), Buffer::from(v)],
            &[],
            &[Buffer::from(w)],
            check::sum_rtol(sk),
        )?;

        let (m, v) = (rng.f32s(n * n), rng.f32s(n));
        let mut w = vec![0.0f32; n];
        let t = check::median_time(args.runs, || {
            matvec::cpu(&m, &v, &mut w, matvec::Sizes { I: n, K: n })
        })?;
        let bytes = 4.0 * (n * n + 2 * n) as f64;
        check::report(
            "matvec",
            &format!("{n}x{n}"),
            t,
            Some(2.0 * (n * n) as f64),
            Some(bytes),
        );
        let want: Vec<f64> = (0..n)
            .map(|i| (0..n).map(|k| m[i * n + k] as f64 * v[k] as f64).sum())
            .collect();
        check::compare_f32("matvec", &w, &want, check::sum_rtol(n))?;
        check::ok("matvec matches a plain loop");
        Ok(())
    })
}
