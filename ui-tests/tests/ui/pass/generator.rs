// No inputs: a Mandelbrot-like generator with the index pattern `|[y, x]|`,
// `let mut`, `for _ in 0..N` with `break`, and casts.
use mdh::mdh;

mdh! {
    kernel mandel {
        inp(),
        out(img: u32[H, W]),
        out_view(img: |y, x| (y, x)),
        md_hom[H, W](|[y, x]| {
            let cr = x as f32 * 0.5 - 1.5;
            let ci = y as f32 * 0.5 - 1.0;
            let mut zr = 0.0;
            let mut zi = 0.0;
            let mut n = 0u32;
            for _ in 0..20 {
                if zr * zr + zi * zi > 4.0 {
                    break;
                }
                let t = zr * zr - zi * zi + cr;
                zi = 2.0 * zr * zi + ci;
                zr = t;
                n = n + 1;
            }
            n
        }, (CC, CC)),
        inp_view(),
    }
}

fn reference(y: usize, x: usize) -> u32 {
    let cr = x as f32 * 0.5 - 1.5;
    let ci = y as f32 * 0.5 - 1.0;
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
    mandel::cpu(&mut img, mandel::Sizes { H: h, W: w })?;
    for y in 0..h {
        for x in 0..w {
            assert_eq!(img[y * w + x], reference(y, x), "at ({y}, {x})");
        }
    }
    // Some points escape at once, some never: the loop and the break both ran.
    assert!(img.contains(&20));
    assert!(img.iter().any(|&n| n < 20));
    Ok(())
}
