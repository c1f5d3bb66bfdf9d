//! Histogram of 2^20 elements into 256 bins (`--quick`: 2^14; a size argument
//! sets the element count). The MDH formulation evaluates every
//! (element, bin) pair.
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/histo.rs");

fn main() -> std::process::ExitCode {
    check::main("histo", |args: &Args| -> Res {
        let e = args.pick(1 << 20, 1 << 14);
        let nb = 256;
        let mut rng = Rng::new(15);
        let bins: Vec<u32> = (0..nb as u32).collect();

        let small = e.min(20_011);
        let elems = rng.u32s(small, nb as u32 + 8);
        let mut hist = vec![0u32; nb];
        histo::cpu(&elems, &bins, &mut hist, histo::Sizes { E: small, B: nb })?;
        check::against_reference(
            &format!("histo E={small} B={nb}"),
            histo::SPEC,
            &histo::Sizes { E: small, B: nb }.values(),
            &[Buffer::from(elems), Buffer::from(bins.clone())],
            &[],
            &[Buffer::from(hist)],
            0.0,
        )?;

        let elems = rng.u32s(e, nb as u32 + 8);
        let mut hist = vec![0u32; nb];
        let t = check::median_time(args.runs, || {
            histo::cpu(&elems, &bins, &mut hist, histo::Sizes { E: e, B: nb })
        })?;
        check::report("histo", &format!("E={e} B={nb}"), t, None, None);
        println!(
            "  {:.2} G (element, bin) pairs/s",
            (e * nb) as f64 / t.as_secs_f64() / 1e9
        );
        let mut want = vec![0u32; nb];
        for &x in &elems {
            if (x as usize) < nb {
                want[x as usize] += 1;
            }
        }
        if hist != want {
            return Err("histo: differs from a plain loop".into());
        }
        check::ok("histo matches a plain loop");
        Ok(())
    })
}
