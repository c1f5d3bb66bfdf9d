//! Mandelbrot set, 2048×2048 pixels, at most 256 iterations (`--quick`:
//! 128²; a size argument sets H = W).
use mdh_examples::check::{self, Args, Buffer, Res, Value};
include!("../../kernels/src/mandelbrot.rs");

const MAX_ITER: u32 = 256;

fn main() -> std::process::ExitCode {
    check::main("mandelbrot", |args: &Args| -> Res {
        let n = args.pick(2048, 128);

        let (h, w) = (n.min(97), n.min(131));
        let mut o = vec![0u32; h * w];
        mandelbrot::cpu(&mut o, MAX_ITER, mandelbrot::Sizes { H: h, W: w })?;
        check::against_reference(
            &format!("mandelbrot {h}x{w}"),
            mandelbrot::SPEC,
            &mandelbrot::Sizes { H: h, W: w }.values(),
            &[],
            &[Value::U32(MAX_ITER)],
            &[Buffer::from(o)],
            0.0,
        )?;

        let mut o = vec![0u32; n * n];
        let s = mandelbrot::Sizes { H: n, W: n };
        let t = check::median_time(args.runs, || mandelbrot::cpu(&mut o, MAX_ITER, s))?;
        let iters: u64 = o.iter().map(|&k| k as u64).sum();
        check::report(
            "mandelbrot",
            &format!("{n}x{n}, {MAX_ITER} iterations"),
            t,
            Some(7.0 * iters as f64),
            None,
        );
        for y in 0..n {
            for x in 0..n {
                let want = mandelbrot_pixel(y, x, n, n, MAX_ITER);
                if o[y * n + x] != want {
                    return Err(format!(
                        "mandelbrot: pixel ({y}, {x}): got {}, expected {want}",
                        o[y * n + x],
                    )
                    .into());
                }
            }
        }
        check::ok("mandelbrot matches a plain loop");
        Ok(())
    })
}
