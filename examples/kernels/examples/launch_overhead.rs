//! What a repeated call of a generated GPU wrapper costs on the host, above
//! a bare launch of the same compiled kernels with the same arguments:
//!
//! - without a device: the lookup of the prepared call (`NAME::cuda::call`
//!   on a device that compiles nothing, plus taking and giving back its
//!   buffers of partial results) against what a call did before prepared
//!   calls (bind the sizes, choose the plan, complete the source, find the
//!   module by hashing the source);
//! - on OpenCL (PoCL on a CPU): `NAME::opencl::launch` against `opencl3`
//!   enqueues (arguments set once) of the same kernels of the same program,
//!   both waiting for each kernel as `launch` does;
//! - on CUDA: `NAME::cuda::launch` against cudarc launches of the same
//!   module's functions, as host time per launch (the stream synchronized
//!   after each batch, outside the timing) and as launch + synchronize.
//!
//! A missing OpenCL or CUDA device skips its part with the reason.
//!
//! ```sh
//! cargo run --release -p mdh-example-kernels --example launch_overhead [-- --quick]
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use mdh::gpu::{Call, DeviceLimits, GpuDevice, Launch};
use mdh::Error;
use mdh_example_kernels::{dot, matmul};
use mdh_gpu::memo::Memo;

/// Calls per timed batch and batches per variant (interleaved).
struct Reps {
    batch: usize,
    rounds: usize,
}

/// The median seconds per call of each of `fs`, timed in interleaved
/// batches (the order reversed every other round).
fn per_call(reps: &Reps, fs: &mut [&mut dyn FnMut()]) -> Vec<f64> {
    let mut samples = vec![Vec::new(); fs.len()];
    let mut order: Vec<usize> = (0..fs.len()).collect();
    for _ in 0..reps.rounds {
        for &i in &order {
            let t = Instant::now();
            for _ in 0..reps.batch {
                fs[i]();
            }
            samples[i].push(t.elapsed().as_secs_f64() / reps.batch as f64);
        }
        order.reverse();
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort_by(f64::total_cmp);
            s[s.len() / 2]
        })
        .collect()
}

fn us(s: f64) -> String {
    format!("{:8.2} µs", s * 1e6)
}

/// The cases: a small dot (two launches: `mdh_main`, `mdh_combine`) and
/// the smallest matmul of mdh-bench.
const DOT_N: usize = 4096;
const MM: (usize, usize, usize) = (10, 500, 64);

// ------------------------------------------------------------------ without a device

/// A device that compiles nothing and holds partial results on the host:
/// what is left of a call is the host's bookkeeping.
struct Lookup {
    memo: Memo,
}

impl GpuDevice for Lookup {
    type Program = ();
    type Buffer = Vec<u8>;

    fn limits(&self) -> DeviceLimits {
        DeviceLimits {
            max_items: 1024,
            local_bytes: mdh::gpu::CUDA_STATIC_SHARED_BYTES,
            cuda_arch: None,
            compute: Default::default(),
        }
    }

    fn device_name(&self) -> &str {
        "NVIDIA H100 80GB HBM3"
    }

    fn memo(&self) -> &Memo {
        &self.memo
    }

    fn compile(&self, _: &str) -> Result<(), Error> {
        Ok(())
    }

    fn scratch(&self, bytes: usize) -> Result<Vec<u8>, Error> {
        Ok(vec![0; bytes])
    }
}

fn lookup(reps: &Reps) -> Result<(), Error> {
    println!("\n== host work per call without a device (the CUDA wrappers' lookup path)");
    let dev = Lookup {
        memo: Memo::default(),
    };
    let name = dev.device_name().to_owned();
    let lim = dev.limits();
    // Before prepared calls: bind, choose, complete the source, find the
    // module by the source (a map keyed by it, as `Device::module`).
    let modules: std::cell::RefCell<HashMap<String, ()>> = Default::default();
    let before = |desc: &mdh::__rt::KernelDesc,
                  job: &dyn Fn(&mdh::__rt::Bound) -> Option<mdh::gpu::Job>,
                  sizes: &[usize],
                  ins: &[usize],
                  outs: &[usize]| {
        let bound = desc.bind(sizes, ins, outs).unwrap();
        let job = job(&bound).unwrap();
        let mut modules = modules.borrow_mut();
        if !modules.contains_key(&job.source) {
            modules.insert(job.source.clone(), ());
        }
        std::hint::black_box(job.launches());
    };
    let dot_job = |b: &mdh::__rt::Bound| dot::cuda::job(b, None, &name, lim).unwrap();
    let mm_job = |b: &mdh::__rt::Bound| matmul::cuda::job(b, None, &name, lim).unwrap();
    let (i, j, k) = MM;
    let after = |call: &dyn Fn() -> Arc<Call<Lookup>>| {
        let c = call();
        if let Some(r) = c.ready() {
            std::hint::black_box(r.partials(&dev).unwrap());
        }
    };
    let dot_call = || dot::cuda::call(&dev, None, &[DOT_N], &[DOT_N, DOT_N], &[1]).unwrap();
    let mm_call = || matmul::cuda::call(&dev, None, &[i, k, j], &[i * k, k * j], &[i * j]).unwrap();
    let t = per_call(
        reps,
        &mut [
            &mut || before(dot::desc(), &dot_job, &[DOT_N], &[DOT_N, DOT_N], &[1]),
            &mut || after(&dot_call),
            &mut || {
                before(
                    matmul::desc(),
                    &mm_job,
                    &[i, k, j],
                    &[i * k, k * j],
                    &[i * j],
                )
            },
            &mut || after(&mm_call),
        ],
    );
    println!(
        "dot N={DOT_N}:          per call before {}, prepared call {}",
        us(t[0]),
        us(t[1])
    );
    println!(
        "matmul {i}x{j}x{k}: per call before {}, prepared call {}",
        us(t[2]),
        us(t[3])
    );
    Ok(())
}

// ------------------------------------------------------------------ OpenCL

fn opencl(reps: &Reps) -> Result<(), Error> {
    use mdh::opencl::Device;
    use mdh_gpu::opencl::opencl3::kernel::Kernel;
    use mdh_gpu::opencl::opencl3::memory::ClMem;
    println!("\n== OpenCL: NAME::opencl::launch vs a bare opencl3 enqueue of the same kernels");
    let dev = match Device::first() {
        Ok(d) => d,
        Err(e) => {
            println!("skipped: no OpenCL device ({e})");
            return Ok(());
        }
    };
    println!("device: {}", dev.name());
    let n = DOT_N;
    let (x, y) = (vec![0.5f32; n], vec![2.0f32; n]);
    let (dx, dy) = (dev.buffer_from(&x)?, dev.buffer_from(&y)?);
    let mut dr = dev.buffer::<f32>(1)?;
    let call = dot::opencl::call(&dev, None, &[n], &[n, n], &[1])?;
    let ready = call.ready().expect("dot has something to compute");
    // The bare launches: one cl_kernel per launch, its arguments set once.
    let parts: Vec<mdh::opencl::Buffer<u8>> = (0..1)
        .map(|_| dev.buffer::<u8>(ready.job().partial_len * 4))
        .collect::<Result<_, _>>()?;
    let mems = [dx.get(), dy.get(), dr.get(), parts[0].get()];
    let mut bare: Vec<(Kernel, &Launch)> = Vec::new();
    for l in ready.launches() {
        let k = Kernel::create(ready.program().raw(), &l.kernel)
            .map_err(|e| Error::Backend(format!("clCreateKernel: {e}")))?;
        for (i, a) in l.arg_order(2, 1, 1, 0).into_iter().enumerate() {
            // SAFETY: a cl_mem handle, copied by OpenCL; the buffers outlive
            // the kernels.
            unsafe { k.set_arg(i as u32, &mems[a]) }
                .map_err(|e| Error::Backend(format!("clSetKernelArg: {e}")))?;
        }
        bare.push((k, l));
    }
    let queue = dev.queue();
    let mut run_bare = || {
        for (k, l) in &bare {
            // SAFETY: every argument is set; the sizes live through the call.
            let ev = unsafe {
                queue.enqueue_nd_range_kernel(
                    k.get(),
                    1,
                    std::ptr::null(),
                    [l.global].as_ptr(),
                    [l.local].as_ptr(),
                    &[],
                )
            }
            .expect("enqueue");
            ev.wait().expect("wait");
        }
    };
    let mut run_mdh = || {
        dot::opencl::launch(&dev, &dx, &dy, &mut dr, dot::Sizes { N: n }).expect("launch");
    };
    let t = per_call(reps, &mut [&mut run_mdh, &mut run_bare]);
    let mut r = [0f32];
    dev.read(&dr, &mut r)?;
    assert_eq!(r[0], n as f32, "dot of 0.5 and 2.0");
    println!(
        "dot N={n} ({} launches): launch {}, bare {}, launch above bare {}",
        ready.launches().len(),
        us(t[0]),
        us(t[1]),
        us(t[0] - t[1])
    );
    Ok(())
}

// ------------------------------------------------------------------ CUDA

fn cuda(reps: &Reps) -> Result<(), Error> {
    use mdh::cuda::cudarc::driver::{LaunchConfig, PushKernelArg};
    use mdh::cuda::Device;
    println!("\n== CUDA: NAME::cuda::launch vs a bare cudarc launch of the same module");
    let dev = match Device::first() {
        Ok(d) => d,
        Err(e) => {
            println!("skipped: no CUDA device ({e})");
            return Ok(());
        }
    };
    println!("device: {} ({})", dev.name(), dev.arch());
    let (i, j, k) = MM;
    let sizes = matmul::Sizes { I: i, J: j, K: k };
    let (a, b) = (vec![1.0f32; i * k], vec![1.0f32; k * j]);
    let (da, db) = (dev.buffer_from(&a)?, dev.buffer_from(&b)?);
    // Both variants write C (and the partial results): one at a time.
    let dc = std::cell::RefCell::new(dev.buffer::<f32>(i * j)?);
    let call = matmul::cuda::call(&dev, None, &[i, k, j], &[i * k, k * j], &[i * j])?;
    let ready = call.ready().expect("matmul has something to compute");
    let part = std::cell::RefCell::new(dev.buffer::<u8>(ready.job().partial_len * 4)?);
    let funcs: Vec<_> = ready
        .launches()
        .iter()
        .map(|l| Ok((ready.program().function(&l.kernel)?, l.clone())))
        .collect::<Result<_, Error>>()?;
    let stream = dev.stream().clone();
    let mut bare = || {
        for (f, l) in &funcs {
            let (grid, block) = l.grid_block().unwrap();
            let cfg = LaunchConfig {
                grid_dim: (grid[0], grid[1], grid[2]),
                block_dim: (block[0], block[1], block[2]),
                shared_mem_bytes: 0,
            };
            let (mut c, mut p) = (dc.borrow_mut(), part.borrow_mut());
            let mut builder = stream.launch_builder(f);
            if l.inputs {
                builder.arg(&da).arg(&db);
            }
            builder.arg(&mut *c);
            if l.partials {
                builder.arg(&mut *p);
            }
            // SAFETY: the arguments are the kernel's, in its order.
            unsafe { builder.launch(cfg) }.expect("launch");
        }
    };
    let mut mdh = || {
        matmul::cuda::launch(&dev, &da, &db, &mut dc.borrow_mut(), sizes).expect("launch");
    };
    let sync = || dev.synchronize().expect("synchronize");
    // Host time per call: batches of launches, synchronized outside.
    let host = |f: &mut dyn FnMut()| {
        let mut s = Vec::new();
        for _ in 0..reps.rounds {
            sync();
            let t = Instant::now();
            for _ in 0..reps.batch {
                f();
            }
            s.push(t.elapsed().as_secs_f64() / reps.batch as f64);
        }
        sync();
        s.sort_by(f64::total_cmp);
        s[s.len() / 2]
    };
    let (h_mdh, h_bare) = (host(&mut mdh), host(&mut bare));
    let t = per_call(
        reps,
        &mut [
            &mut || {
                mdh();
                sync()
            },
            &mut || {
                bare();
                sync()
            },
        ],
    );
    let mut c = vec![0f32; i * j];
    dev.read(&dc.borrow(), &mut c)?;
    assert!(c.iter().all(|&v| v == k as f32), "matmul of ones");
    println!(
        "matmul {i}x{j}x{k} ({} launches): host per call: launch {}, bare {}, above bare {}",
        funcs.len(),
        us(h_mdh),
        us(h_bare),
        us(h_mdh - h_bare)
    );
    println!(
        "  with synchronize: launch {}, bare {}, above bare {}",
        us(t[0]),
        us(t[1]),
        us(t[0] - t[1])
    );
    Ok(())
}

fn main() -> Result<(), Error> {
    let quick = std::env::args().any(|a| a == "--quick");
    let reps = Reps {
        batch: if quick { 50 } else { 200 },
        rounds: if quick { 11 } else { 31 },
    };
    println!("host CPU: {}", mdh::cpu::cpu_name());
    lookup(&reps)?;
    opencl(&reps)?;
    cuda(&reps)?;
    Ok(())
}
