//! The prepared calls of the generated GPU wrappers (`mdh::gpu::calls`):
//! one entry per (kernel, sizes, plan, device), found again by a repeated
//! call without compiling anything again; buffers of partial results kept
//! across calls and per queue; correct across threads. Every result is
//! compared with the reference interpreter.
//!
//! - On OpenCL (PoCL here): `launch` and `run_with` of dot, matmul and scan
//!   over repeated and new sizes and plans, from one thread and from four
//!   at once.
//! - On the CPU execution of CUDA (`mdh_gpu::cuda_sim`): the generated
//!   `NAME::cuda::call` on a device that counts its compilations, whose
//!   buffers of partial results start poisoned (0xFF bytes: NaN as floats),
//!   so that a kernel that read a partial result it did not write would
//!   fail; the same call run again on the buffers the last run left.

#[allow(dead_code, unused_macros)] // what the family tests use
mod gpu;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mdh::gpu::{from_bytes, param_bytes, to_bytes, Call, DeviceLimits, GpuDevice};
use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_core::codegen::c_expr::Dialect;
use mdh_core::gpu_plan::{GpuPlan, MAX_ITEMS};
use mdh_example_kernels::{dot, matmul, scan};
use mdh_examples::check::{self, Rng};
use mdh_gpu::cuda_sim::{cpu_sim_available, run_launches_on_cpu, SimArg, SimLaunch};
use mdh_gpu::memo::Memo;

/// Compares `got` with the interpreter's outputs for these inputs.
fn check_against_interpreter(
    spec: &str,
    sizes: &[usize],
    inputs: &[Buffer],
    got: &[Buffer],
    what: &str,
) {
    let mut want: Vec<Buffer> = got.iter().map(|b| Buffer::zeros(b.ty(), b.len())).collect();
    check::reference(spec, sizes, inputs, &mut want, &[]).unwrap();
    let rtol = check::sum_rtol(sizes.iter().product());
    for (g, w) in got.iter().zip(&want) {
        check::compare(what, g, w, rtol).unwrap_or_else(|e| panic!("{e}"));
    }
}

fn f32s(b: &Buffer) -> &[f32] {
    match b {
        Buffer::F32(v) => v,
        _ => panic!("an f32 buffer"),
    }
}

/// A plan for dot that splits its reduction over `groups` work-groups (so
/// that the second pass reads buffers of partial results).
fn dot_split(groups: usize) -> GpuPlan {
    GpuPlan {
        groups: vec![groups],
        items: vec![32],
        tile: vec![32],
        ..GpuPlan::base(1, 2)
    }
}

// ------------------------------------------------------------------ OpenCL

/// dot on `dev` with `n` random elements through `launch` (or `run_with`
/// when `plan` is given), checked against the interpreter.
fn opencl_dot(dev: &mdh::opencl::Device, rng: &mut Rng, n: usize, plan: Option<&GpuPlan>) {
    let inputs = [Buffer::from(rng.f32s(n)), Buffer::from(rng.f32s(n))];
    let (x, y) = (f32s(&inputs[0]), f32s(&inputs[1]));
    let mut r = [f32::NAN];
    match plan {
        None => {
            let (dx, dy) = (dev.buffer_from(x).unwrap(), dev.buffer_from(y).unwrap());
            let mut dr = dev.buffer_from(&r).unwrap();
            dot::opencl::launch(dev, &dx, &dy, &mut dr, dot::Sizes { N: n }).unwrap();
            dev.read(&dr, &mut r).unwrap();
        }
        Some(p) => dot::opencl::run_with(dev, Some(p), x, y, &mut r, dot::Sizes { N: n }).unwrap(),
    }
    let got = [Buffer::from(r.to_vec())];
    check_against_interpreter(dot::SPEC, &[n], &inputs, &got, &format!("dot N={n}"));
}

fn dot_call(
    dev: &mdh::opencl::Device,
    n: usize,
    plan: Option<&GpuPlan>,
) -> Arc<Call<mdh::opencl::Device>> {
    dot::opencl::call(dev, plan, &[n], &[n, n], &[1]).unwrap()
}

#[test]
fn opencl_calls_are_kept_per_sizes_and_plan() {
    let Some(dev) = gpu::opencl_device() else {
        return;
    };
    let mut rng = Rng::new(gpu::seed("opencl_calls"));
    let memo = dev.memo();
    let before = memo.len();
    // The first call makes the entry, a repeated one finds it.
    opencl_dot(dev, &mut rng, 1000, None);
    let first = dot_call(dev, 1000, None);
    assert_eq!(memo.len(), before + 1);
    opencl_dot(dev, &mut rng, 1000, None);
    assert!(Arc::ptr_eq(&first, &dot_call(dev, 1000, None)));
    assert_eq!(memo.len(), before + 1, "same sizes: no new entry");
    // Other sizes, another plan: other entries.
    opencl_dot(dev, &mut rng, 777, None);
    assert_eq!(memo.len(), before + 2);
    assert!(!Arc::ptr_eq(&first, &dot_call(dev, 777, None)));
    let split = dot_split(5);
    for _ in 0..3 {
        opencl_dot(dev, &mut rng, 1000, Some(&split));
    }
    assert_eq!(memo.len(), before + 3);
    let c = dot_call(dev, 1000, Some(&split));
    let ready = c.ready().expect("something to compute");
    assert_eq!(ready.job().partial_len, 5, "one partial result per group");
    assert_eq!(ready.idle_partials(), 1, "three calls, one set of partials");
    // Lengths that do not fit the sizes of a kept entry: the bind's error.
    let err = dot::opencl::call(dev, None, &[1000], &[999, 1000], &[1]).err();
    assert!(matches!(err, Some(Error::BufferLength { .. })), "{err:?}");
    // Empty: an entry with nothing to compute.
    assert!(
        dot_call(dev, 0, None).ready().is_some(),
        "dot of nothing is 0"
    );

    // matmul and a scan of several chunks (carries) through `launch`.
    for (i, j, k) in [(33, 17, 65), (33, 17, 65), (8, 64, 3)] {
        let inputs = [Buffer::from(rng.f32s(i * k)), Buffer::from(rng.f32s(k * j))];
        let (da, db) = (
            dev.buffer_from(f32s(&inputs[0])).unwrap(),
            dev.buffer_from(f32s(&inputs[1])).unwrap(),
        );
        let mut dc = dev.buffer::<f32>(i * j).unwrap();
        matmul::opencl::launch(dev, &da, &db, &mut dc, matmul::Sizes { I: i, J: j, K: k }).unwrap();
        let mut c = vec![0f32; i * j];
        dev.read(&dc, &mut c).unwrap();
        let got = [Buffer::from(c)];
        // Sizes in order of first appearance: I, K, J.
        check_against_interpreter(matmul::SPEC, &[i, k, j], &inputs, &got, "matmul");
    }
    for n in [5000, 5000, 300] {
        let inputs = [Buffer::from(rng.f32s(n))];
        let mut y = vec![0f32; n];
        scan::opencl::run(dev, f32s(&inputs[0]), &mut y, scan::Sizes { N: n }).unwrap();
        check_against_interpreter(scan::SPEC, &[n], &inputs, &[Buffer::from(y)], "scan");
    }
    assert_eq!(memo.len(), before + 4 + 2 + 2, "dot 4, matmul 2, scan 2");

    // Four threads at once over sizes seen and new: every result right,
    // one entry per distinct sizes.
    let before = memo.len();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            s.spawn(move || {
                let mut rng = Rng::new(gpu::seed("opencl_calls_threads") + t);
                for i in 0..6 {
                    let n = [1000, 777, 4097][(i + t as usize) % 3];
                    let plan = (i % 2 == 1).then(|| dot_split(3));
                    opencl_dot(dev, &mut rng, n, plan.as_ref());
                }
            });
        }
    });
    // New: 4097 without a plan, and 1000, 777, 4097 with the split plan.
    assert_eq!(memo.len(), before + 4);
}

// ------------------------------------------------------------------ CUDA on the CPU

/// A CUDA device executed by `cuda_sim`: it counts its compilations and
/// poisons new buffers of partial results.
struct SimDevice {
    memo: Memo,
    compiled: AtomicUsize,
    queue: AtomicUsize,
}

impl GpuDevice for SimDevice {
    /// The source: `cuda_sim` builds it when it runs.
    type Program = String;
    type Buffer = Vec<u8>;

    fn limits(&self) -> DeviceLimits {
        DeviceLimits {
            max_items: MAX_ITEMS,
            local_bytes: mdh::gpu::CUDA_STATIC_SHARED_BYTES,
            cuda_arch: None,
            compute: Default::default(),
        }
    }

    fn device_name(&self) -> &str {
        "the CPU execution of CUDA"
    }

    fn memo(&self) -> &Memo {
        &self.memo
    }

    fn compile(&self, source: &str) -> Result<String, Error> {
        self.compiled.fetch_add(1, Ordering::SeqCst);
        Ok(source.to_owned())
    }

    fn scratch(&self, bytes: usize) -> Result<Vec<u8>, Error> {
        Ok(vec![0xFF; bytes])
    }

    fn queue_id(&self) -> usize {
        self.queue.load(Ordering::SeqCst)
    }
}

/// Runs the launches of `call` on the CPU with `inputs` and `outputs`,
/// taking the partial results from the call's pool (as the generated
/// `__launch` does); `part_ty`: the C type of the partial results.
fn sim_run(
    dev: &SimDevice,
    call: &Call<SimDevice>,
    inputs: &[Buffer],
    outputs: &mut [Buffer],
    part_ty: &'static str,
) -> Result<(), Error> {
    let Some(ready) = call.ready() else {
        return Ok(());
    };
    let c = |t| Dialect::Cuda.storage_ty(t);
    let mut data: Vec<(Vec<u8>, &'static str)> = inputs
        .iter()
        .chain(outputs.iter())
        .map(|b| (to_bytes(b), c(b.ty())))
        .collect();
    let mut parts = ready.partials(dev)?;
    let n_parts = parts.iter_mut().count();
    let (n_in, n_out) = (inputs.len(), outputs.len());
    let mut args: Vec<SimArg> = gpu::sim_buffers(&mut data)
        .chain(parts.iter_mut().map(|(p, _)| SimArg::Buf {
            data: p.as_mut_slice(),
            elem: part_ty,
        }))
        .collect();
    let no_params: [Value; 0] = [];
    args.extend(no_params.iter().map(|v| SimArg::Scalar {
        bytes: param_bytes(v),
        ty: c(v.ty()),
    }));
    let sim: Vec<SimLaunch> = ready
        .launches()
        .iter()
        .map(|l| {
            let (grid, block) = l.grid_block()?;
            Ok(SimLaunch {
                kernel: &l.kernel,
                args: l.arg_order(n_in, n_out, n_parts, 0),
                grid,
                block,
                shared: l.shared_bytes,
            })
        })
        .collect::<Result<_, Error>>()?;
    run_launches_on_cpu(&ready.job().source, &mut args, &sim)?;
    drop(args);
    for (o, (bytes, _)) in outputs.iter_mut().zip(&data[n_in..]) {
        from_bytes(o, bytes);
    }
    Ok(())
}

fn cpu_sim_or_skip() -> bool {
    if !cpu_sim_available() {
        gpu::skip_or_fail(
            "MDH_REQUIRE_NVRTC",
            "there is no C++ compiler for the CPU execution of CUDA (install g++ 11 or later)",
        );
        return false;
    }
    true
}

#[test]
fn cuda_calls_on_the_cpu_keep_jobs_and_poisoned_partials() {
    if !cpu_sim_or_skip() {
        return;
    }
    let dev = SimDevice {
        memo: Memo::default(),
        compiled: AtomicUsize::new(0),
        queue: AtomicUsize::new(1),
    };
    let mut rng = Rng::new(gpu::seed("cuda_calls"));
    let split = dot_split(4);
    let mut dot_on_cpu = |n: usize, plan: Option<&GpuPlan>| {
        let call = dot::cuda::call(&dev, plan, &[n], &[n, n], &[1]).unwrap();
        let inputs = [Buffer::from(rng.f32s(n)), Buffer::from(rng.f32s(n))];
        let mut out = [Buffer::from(vec![f32::NAN])];
        sim_run(&dev, &call, &inputs, &mut out, "float").unwrap();
        check_against_interpreter(dot::SPEC, &[n], &inputs, &out, &format!("dot N={n}"));
        call
    };
    // Twice the same sizes and plan: one compilation, the second run on the
    // partial results the first left (no zeroing in between).
    let a = dot_on_cpu(300, Some(&split));
    let b = dot_on_cpu(300, Some(&split));
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(dev.compiled.load(Ordering::SeqCst), 1);
    let ready = a.ready().unwrap();
    assert_eq!(ready.job().partial_len, 4);
    assert_eq!(ready.idle_partials(), 1);
    // Other sizes: a new entry and compilation.
    let c = dot_on_cpu(301, Some(&split));
    assert!(!Arc::ptr_eq(&a, &c));
    assert_eq!(dev.compiled.load(Ordering::SeqCst), 2);
    assert_eq!(dev.memo.len(), 2);

    // Partial results are taken per queue: a set in use is not handed out
    // twice, and a set last used on queue 1 is not taken on queue 2.
    let held = ready.partials(&dev).unwrap();
    assert_eq!(ready.idle_partials(), 0);
    drop(ready.partials(&dev).unwrap());
    drop(held);
    assert_eq!(ready.idle_partials(), 2);
    dev.queue.store(2, Ordering::SeqCst);
    drop(ready.partials(&dev).unwrap());
    assert_eq!(ready.idle_partials(), 3, "queue 2 allocated its own set");

    // matmul with its reduction split over work-groups.
    let plan = GpuPlan {
        groups: vec![2, 1, 3],
        items: vec![4, 8, 4],
        tile: vec![4, 8, 4],
        ..GpuPlan::base(3, 2)
    };
    let (i, j, k) = (7, 9, 40);
    let call =
        matmul::cuda::call(&dev, Some(&plan), &[i, k, j], &[i * k, k * j], &[i * j]).unwrap();
    assert!(call.ready().unwrap().job().partial_len > 1);
    for _ in 0..2 {
        let inputs = [Buffer::from(rng.f32s(i * k)), Buffer::from(rng.f32s(k * j))];
        let mut out = [Buffer::from(vec![f32::NAN; i * j])];
        sim_run(&dev, &call, &inputs, &mut out, "float").unwrap();
        check_against_interpreter(matmul::SPEC, &[i, k, j], &inputs, &out, "matmul");
    }
    assert_eq!(dev.compiled.load(Ordering::SeqCst), 3);
}
