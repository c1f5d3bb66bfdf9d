//! Generalized histogram (sum of squares per key, with a user-defined
//! combine operator) of 2^20 elements into 256 bins (`--quick`: 2^14).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/genhisto.rs");

fn main() -> std::process::ExitCode {
    check::main("genhisto", |args: &Args| -> Res {
        let e = args.pick(1 << 20, 1 << 14);
        let nb = 256;
        let mut rng = Rng::new(16);
        let bins: Vec<i32> = (0..nb as i32).collect();

        let small = e.min(20_011);
        let (vals, keys) = (rng.f32s(small), rng.i32s(small, -4, nb as i32 + 4));
        let mut hist = vec![0.0f32; nb];
        genhisto::cpu(
            &vals,
            &keys,
            &bins,
            &mut hist,
            genhisto::Sizes { E: small, B: nb },
        )?;
        check::against_reference(
            &format!("genhisto E={small} B={nb}"),
            genhisto::SPEC,
            &genhisto::Sizes { E: small, B: nb }.values(),
            &[
                Buffer::from(vals),
                Buffer::from(keys),
                Buffer::from(bins.clone()),
            ],
            &[],
            &[Buffer::from(hist)],
            check::sum_rtol(small),
        )?;

        let (vals, keys) = (rng.f32s(e), rng.i32s(e, -4, nb as i32 + 4));
        let mut hist = vec![0.0f32; nb];
        let s = genhisto::Sizes { E: e, B: nb };
        let t = check::median_time(args.runs, || {
            genhisto::cpu(&vals, &keys, &bins, &mut hist, s)
        })?;
        check::report("genhisto", &format!("E={e} B={nb}"), t, None, None);
        println!(
            "  {:.2} G (element, bin) pairs/s",
            (e * nb) as f64 / t.as_secs_f64() / 1e9
        );
        let mut want = vec![0.0f64; nb];
        for (&v, &k) in vals.iter().zip(&keys) {
            if (0..nb as i32).contains(&k) {
                want[k as usize] += v as f64 * v as f64;
            }
        }
        check::compare_f32("genhisto", &hist, &want, check::sum_rtol(e))?;
        check::ok("genhisto matches a plain loop");
        Ok(())
    })
}
