//! The OpenCL back end in a few lines: the same kernel on the CPU (rayon)
//! and on the first OpenCL device (`NAME::opencl::run`), on device buffers
//! (`NAME::opencl::launch`), and the OpenCL C it compiles
//! (`NAME::opencl::source`).
//!
//! ```text
//! cargo run -p mdh-examples --example opencl
//! ```
//!
//! Without an OpenCL device (no ICD such as PoCL installed) it says so and
//! exits successfully.

include!("../kernels/src/matvec.rs");

fn main() -> Result<(), mdh::Error> {
    let device = match mdh::opencl::Device::first() {
        Ok(d) => d,
        Err(e) => {
            println!("no OpenCL device, nothing to run: {e}");
            return Ok(());
        }
    };
    println!("OpenCL device: {}", device.name());
    let (i, k) = (1000, 777);
    let sizes = matvec::Sizes { I: i, K: k };
    let m: Vec<f32> = (0..i * k).map(|x| (x % 7) as f32).collect();
    let v: Vec<f32> = (0..k).map(|x| (x % 3) as f32).collect();

    // Host slices in, host slices out: the same signature as `cpu`.
    let mut on_cpu = vec![0.0f32; i];
    let mut on_device = vec![0.0f32; i];
    matvec::cpu(&m, &v, &mut on_cpu, sizes)?;
    matvec::opencl::run(&device, &m, &v, &mut on_device, sizes)?;
    same(&on_cpu, &on_device, "run")?;
    println!(
        "w = M · v for {i}×{k}: OpenCL and CPU agree (w[0..4] = {:?})",
        &on_device[..4]
    );

    // Data that stays on the device: `launch` takes device buffers.
    let dm = device.buffer_from(&m)?;
    let dv = device.buffer_from(&v)?;
    let mut dw = device.buffer::<f32>(i)?;
    matvec::opencl::launch(&device, &dm, &dv, &mut dw, sizes)?;
    let mut back = vec![0.0f32; i];
    device.read(&dw, &mut back)?;
    same(&on_cpu, &back, "launch")?;
    println!("launch on device buffers: same result");

    // The complete OpenCL C compiled for these sizes.
    let src = matvec::opencl::source(&sizes);
    println!(
        "matvec::opencl::source: {} lines; it begins with\n{}",
        src.lines().count(),
        src.lines().take(6).collect::<Vec<_>>().join("\n")
    );
    Ok(())
}

/// The values are small integers, so every order of summation gives the
/// same floats: the results must be equal.
fn same(cpu: &[f32], opencl: &[f32], what: &str) -> Result<(), mdh::Error> {
    if cpu == opencl {
        Ok(())
    } else {
        Err(mdh::Error::Argument(format!(
            "the result of `opencl::{what}` differs from the CPU result"
        )))
    }
}
