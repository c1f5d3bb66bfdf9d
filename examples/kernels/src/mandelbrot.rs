mdh::mdh! {
    /// Mandelbrot set on `[-2, 1] × [-1, 1]`: the number of iterations
    /// (at most `max_iter`) before `|z| > 2`. No inputs: the scalar function
    /// reads its MDA indices `y`, `x` and the sizes `H`, `W`.
    pub kernel mandelbrot {
        inp(),
        out(O: u32[H, W]),
        params(max_iter: u32),
        out_view(O: |y, x| (y, x)),
        md_hom[H, W](
            |[y, x]| {
                let cr = x as f32 * 3.0 / W as f32 - 2.0;
                let ci = y as f32 * 2.0 / H as f32 - 1.0;
                let mut zr = 0.0;
                let mut zi = 0.0;
                let mut n = 0;
                for _ in 0..max_iter {
                    if zr * zr + zi * zi > 4.0 {
                        break;
                    }
                    let t = zr * zr - zi * zi + cr;
                    zi = 2.0 * zr * zi + ci;
                    zr = t;
                    n += 1;
                }
                n
            },
            (CC, CC)
        ),
        inp_view(),
    }
}

/// The kernel's scalar function as a plain Rust loop: the escape count of
/// pixel `(y, x)` of an `h × w` image, at most `max_iter`. The check that
/// does not go through mdh (of the interpreter, the binary's full-size
/// image and a UI test).
// Not every file that includes this one checks pixels.
#[allow(dead_code)]
pub fn mandelbrot_pixel(y: usize, x: usize, h: usize, w: usize, max_iter: u32) -> u32 {
    let cr = x as f32 * 3.0 / w as f32 - 2.0;
    let ci = y as f32 * 2.0 / h as f32 - 1.0;
    let (mut zr, mut zi, mut n) = (0.0f32, 0.0f32, 0u32);
    for _ in 0..max_iter {
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
