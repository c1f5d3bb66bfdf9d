// No inputs: the example Mandelbrot generator (examples/kernels/src/), with
// the index pattern `|[y, x]|`, `let mut`, `for _ in 0..max_iter` with
// `break`, and casts.
include!("../../../../examples/kernels/src/mandelbrot.rs");

fn main() -> Result<(), mdh::Error> {
    let (h, w) = (5, 6);
    let mut img = vec![0u32; h * w];
    mandelbrot::cpu(&mut img, 20, mandelbrot::Sizes { H: h, W: w })?;
    for y in 0..h {
        for x in 0..w {
            assert_eq!(img[y * w + x], mandelbrot_pixel(y, x, h, w, 20), "at ({y}, {x})");
        }
    }
    // Some points escape at once, some never: the loop and the break both ran.
    assert!(img.contains(&20));
    assert!(img.iter().any(|&n| n < 20));
    Ok(())
}
