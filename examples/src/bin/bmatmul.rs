//! Batched matrix multiplication, the paper's size (16, 10, 500, 64)
//! (batch, I, J, K); a size argument sets the batch count (`--quick`: 2).
include!("../../kernels/src/bmatmul.rs");
use mdh_examples::check::{self, Args, Buffer, Res, Rng};

fn main() -> std::process::ExitCode {
    check::main("bmatmul", |args: &Args| -> Res {
        let nb = args.pick(16, 2);
        let (i, j, k) = if args.quick {
            (10, 50, 64)
        } else {
            (10, 500, 64)
        };
        let mut rng = Rng::new(5);

        let s = bmatmul::Sizes {
            NB: nb.min(3),
            I: 7,
            J: 61,
            K: 37,
        };
        let (a, b) = (rng.f32s(s.NB * s.I * s.K), rng.f32s(s.NB * s.K * s.J));
        let mut c = vec![0.0f32; s.NB * s.I * s.J];
        bmatmul::cpu(&a, &b, &mut c, s)?;
        check::against_reference(
            &format!("bmatmul {s:?}"),
            bmatmul::SPEC,
            &s.values(),
            &[Buffer::from(a), Buffer::from(b)],
            &[],
            &[Buffer::from(c)],
            check::sum_rtol(s.K),
        )?;

        let s = bmatmul::Sizes {
            NB: nb,
            I: i,
            J: j,
            K: k,
        };
        let (a, b) = (rng.f32s(nb * i * k), rng.f32s(nb * k * j));
        let mut c = vec![0.0f32; nb * i * j];
        let t = check::median_time(args.runs, || bmatmul::cpu(&a, &b, &mut c, s))?;
        let flops = 2.0 * (nb * i * j * k) as f64;
        check::report(
            "bmatmul",
            &format!("{nb}x{i}x{j}x{k}"),
            t,
            Some(flops),
            None,
        );
        let mut want = vec![0.0f64; nb * i * j];
        for bb in 0..nb {
            for ii in 0..i {
                for kk in 0..k {
                    let x = a[(bb * i + ii) * k + kk] as f64;
                    for jj in 0..j {
                        want[(bb * i + ii) * j + jj] += x * b[(bb * k + kk) * j + jj] as f64;
                    }
                }
            }
        }
        check::compare_f32("bmatmul", &c, &want, check::sum_rtol(k))?;
        check::ok("bmatmul matches a plain loop");
        Ok(())
    })
}
