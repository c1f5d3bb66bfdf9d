//! Probabilistic record linkage of 2^15 records against 2^15 records (the
//! paper's smallest size; `--quick`: 2^10; a size argument sets both counts).
use mdh_examples::check::{self, Args, Buffer, Res, Rng};
include!("../../kernels/src/prl.rs");

struct Records {
    first: Vec<i32>,
    last: Vec<i32>,
    year: Vec<i32>,
}

fn records(rng: &mut Rng, n: usize) -> Records {
    Records {
        first: rng.i32s(n, 0, 64),
        last: rng.i32s(n, 0, 512),
        year: rng.i32s(n, 1920, 2010),
    }
}

fn link(a: &Records, b: &Records, best: &mut [i64]) -> Result<(), mdh::Error> {
    let s = prl::Sizes {
        I: a.first.len(),
        J: b.first.len(),
    };
    prl::cpu(
        &a.first, &a.last, &a.year, &b.first, &b.last, &b.year, best, s,
    )
}

fn bufs(a: &Records, b: &Records) -> Vec<Buffer> {
    [&a.first, &a.last, &a.year, &b.first, &b.last, &b.year]
        .into_iter()
        .map(|v| Buffer::from(v.clone()))
        .collect()
}

fn main() -> std::process::ExitCode {
    check::main("prl", |args: &Args| -> Res {
        let n = args.pick(1 << 15, 1 << 10);
        let mut rng = Rng::new(13);

        let (a, b) = (records(&mut rng, 331), records(&mut rng, 1009));
        let mut best = vec![0i64; 331];
        link(&a, &b, &mut best)?;
        check::against_reference(
            "prl 331x1009",
            prl::SPEC,
            &prl::Sizes { I: 331, J: 1009 }.values(),
            &bufs(&a, &b),
            &[],
            &[Buffer::from(best)],
            0.0,
        )?;

        let (a, b) = (records(&mut rng, n), records(&mut rng, n));
        let mut best = vec![0i64; n];
        let t = check::median_time(args.runs, || link(&a, &b, &mut best))?;
        check::report("prl", &format!("{n}x{n} records"), t, None, None);
        println!(
            "  {:.1} M record pairs/s",
            (n * n) as f64 / t.as_secs_f64() / 1e6
        );
        let mut sample = Rng::new(14);
        for i in std::iter::once(0).chain((0..200).map(|_| sample.below(n))) {
            let want = (0..n)
                .map(|j| {
                    let w = prl_codec::weight(
                        a.first[i], a.last[i], a.year[i], b.first[j], b.last[j], b.year[j],
                    );
                    prl_codec::encode(w, j)
                })
                .max()
                .unwrap_or(i64::MIN);
            if best[i] != want {
                return Err(format!(
                    "prl: record {i}: got {:?}, expected {:?} (weight, j)",
                    prl_codec::decode(best[i]),
                    prl_codec::decode(want)
                )
                .into());
            }
        }
        check::ok("prl matches a plain loop on 201 sampled records");
        Ok(())
    })
}
