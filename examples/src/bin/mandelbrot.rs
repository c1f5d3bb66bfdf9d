//! Mandelbrot set, 2048×2048 pixels, at most 256 iterations (`--quick`:
//! 128²; a size argument sets H = W).
use mdh_examples::check::{self, Args, Buffer, Res, Value};
include!("../../kernels/src/mandelbrot.rs");

const MAX_ITER: u32 = 256;

/// The same computation as the kernel's scalar function, as a plain loop.
fn pixel(y: usize, x: usize, h: usize, w: usize) -> u32 {
    let cr = x as f32 * 3.0 / w as f32 - 2.0;
    let ci = y as f32 * 2.0 / h as f32 - 1.0;
    let (mut zr, mut zi, mut n) = (0.0f32, 0.0f32, 0u32);
    for _ in 0..MAX_ITER {
        if zr * zr + zi * zi > 4.0 {
            break;
        }
        let t = zr * zr - zi * zi + cr;
        zi = 2.0 * zr * zi + ci;
        zr = t;
        n += 1;
    }
    n
}

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
                if o[y * n + x] != pixel(y, x, n, n) {
                    return Err(format!(
                        "mandelbrot: pixel ({y}, {x}): got {}, expected {}",
                        o[y * n + x],
                        pixel(y, x, n, n)
                    )
                    .into());
                }
            }
        }
        check::ok("mandelbrot matches a plain loop");
        Ok(())
    })
}
