// No inputs: the example Mandelbrot generator (examples/kernels/src/), with
// the index pattern `|[y, x]|`, `let mut`, `for _ in 0..max_iter` with
// `break`, and casts.
include!("../../../../examples/kernels/src/mandelbrot.rs");

/// The example's scalar function in Rust, with max_iter = 20.
fn reference(y: usize, x: usize, h: usize, w: usize) -> u32 {
    let cr = x as f32 * 3.0 / w as f32 - 2.0;
    let ci = y as f32 * 2.0 / h as f32 - 1.0;
    let (mut zr, mut zi, mut n) = (0.0f32, 0.0f32, 0u32);
    for _ in 0..20 {
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

fn main() -> Result<(), mdh::Error> {
    let (h, w) = (5, 6);
    let mut img = vec![0u32; h * w];
    mandelbrot::cpu(&mut img, 20, mandelbrot::Sizes { H: h, W: w })?;
    for y in 0..h {
        for x in 0..w {
            assert_eq!(img[y * w + x], reference(y, x, h, w), "at ({y}, {x})");
        }
    }
    // Some points escape at once, some never: the loop and the break both ran.
    assert!(img.contains(&20));
    assert!(img.iter().any(|&n| n < 20));
    Ok(())
}
