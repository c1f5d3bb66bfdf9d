//! The CPU execution of a kernel's CUDA C (`mdh_gpu::cuda_sim`), for the
//! tests of the example families (tests/cuda.rs) and of random kernels
//! (tests/random_kernels.rs).

use std::sync::OnceLock;

use mdh::gpu::{from_bytes, param_bytes, to_bytes};
use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_core::codegen::c_expr::Dialect;
use mdh_core::desc::{Bound, KernelDesc};
use mdh_core::gpu_plan::{GpuPlan, MAX_ITEMS};
use mdh_gpu::cuda::nvrtc_compile;
use mdh_gpu::cuda_sim::{cpu_sim_available, run_launches_on_cpu, SimArg, SimLaunch};

/// The generated `NAME::cuda::job`.
pub type JobFn = fn(
    &Bound,
    Option<&GpuPlan>,
    &str,
    mdh::gpu::DeviceLimits,
) -> Result<Option<mdh::gpu::Job>, Error>;

/// The limits of the smaller of the two architectures the tests compile
/// for (sm_80: 1024 threads and 163 KiB of shared memory per block), with
/// an A100's 108 units (the analytical default's candidates split
/// reductions by them).
pub fn limits() -> mdh::gpu::DeviceLimits {
    mdh::gpu::DeviceLimits {
        compute: mdh::gpu::DeviceCompute {
            compute_units: Some(108),
            ..Default::default()
        },
        ..mdh::gpu::cuda_arch_limits("sm_80")
    }
}

pub fn nvrtc_and_compiler() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        if !mdh_gpu::cuda::nvrtc_available() {
            super::skip_or_fail("MDH_REQUIRE_NVRTC", "NVRTC is not available (pip install --user nvidia-cuda-nvrtc-cu12 and put its lib folder on LD_LIBRARY_PATH)");
            return false;
        }
        if !cpu_sim_available() {
            super::skip_or_fail("MDH_REQUIRE_NVRTC", "there is no C++ compiler for the CPU execution of CUDA (install g++ 11 or later)");
            return false;
        }
        true
    })
}

/// `buffers`' lengths.
fn lens(buffers: &[Buffer]) -> Vec<usize> {
    buffers.iter().map(Buffer::len).collect()
}

/// The kernel of `spec` and the job `job` makes of a call on `inputs`,
/// `outputs` and `sizes` (their lengths bound as `run_dyn` binds them)
/// for a device named `device` with `limits`; `None`: nothing to launch.
pub fn bound_job(
    job: JobFn,
    spec: &str,
    plan: Option<&GpuPlan>,
    (inputs, outputs, sizes): (&[Buffer], &[Buffer], &[usize]),
    device: &str,
    limits: mdh::gpu::DeviceLimits,
) -> Result<Option<(mdh_core::Checked, mdh::gpu::Job)>, Error> {
    let kernel = mdh::reference::kernel(spec)?;
    let desc = KernelDesc::from_kernel(&kernel);
    let bound = desc.bind(sizes, &lens(inputs), &lens(outputs))?;
    Ok(job(&bound, plan, device, limits)?.map(|j| (kernel, j)))
}

/// Like `NAME::cuda::run_dyn`, on the CPU: the same job (source, plan,
/// launches and their geometry), the same arguments per launch, executed by
/// `cuda_sim` instead of a device.
pub fn run_on_cpu(
    job: JobFn,
    spec: &str,
    plan: Option<&GpuPlan>,
    inputs: &[Buffer],
    outputs: &mut [Buffer],
    params: &[Value],
    sizes: &[usize],
) -> Result<(), Error> {
    let Some((kernel, job)) = bound_job(
        job,
        spec,
        plan,
        (inputs, outputs, sizes),
        "the CPU execution of CUDA",
        limits(),
    )?
    else {
        return Ok(());
    };
    run_job_on_cpu(&kernel, &job, (inputs, outputs, params), &[])
}

/// The launches of `job` (of `kernel`) executed on the CPU with the
/// arguments of `NAME::cuda::launch`: the inputs, outputs and params, and
/// a fused epilogue's other inputs (`epilogue`, after the params, as every
/// kernel of a fused template takes them).
pub fn run_job_on_cpu(
    kernel: &mdh_core::Checked,
    job: &mdh::gpu::Job,
    (inputs, outputs, params): (&[Buffer], &mut [Buffer], &[Value]),
    epilogue: &[Buffer],
) -> Result<(), Error> {
    let c = |t| Dialect::Cuda.storage_ty(t);
    // Arguments: inputs, outputs, partial results per output access,
    // params, the epilogue's inputs.
    let mut data: Vec<(Vec<u8>, &'static str)> = Vec::new();
    data.extend(inputs.iter().map(|b| (to_bytes(b), c(b.ty()))));
    data.extend(outputs.iter().map(|b| (to_bytes(b), c(b.ty()))));
    for (b, _) in kernel.output_accesses() {
        let t = kernel.outputs[b].ty;
        data.push((to_bytes(&Buffer::zeros(t, job.partial_len)), c(t)));
    }
    let n_bufs = data.len();
    let mut tail: Vec<(Vec<u8>, &'static str)> =
        epilogue.iter().map(|b| (to_bytes(b), c(b.ty()))).collect();
    let (n_in, n_out) = (inputs.len(), outputs.len());
    let mut args: Vec<SimArg> = super::sim_buffers(&mut data)
        .chain(params.iter().map(|v| SimArg::Scalar {
            bytes: param_bytes(v),
            ty: c(v.ty()),
        }))
        .chain(super::sim_buffers(&mut tail))
        .collect();
    let launches = job.launches();
    let sim: Vec<SimLaunch> = launches
        .iter()
        .map(|l| {
            let (grid, block) = l.grid_block()?;
            let mut order = l.arg_order(n_in, n_out, n_bufs - n_in - n_out, params.len());
            let first = n_bufs + params.len();
            order.extend(first..first + epilogue.len());
            Ok(SimLaunch {
                kernel: &l.kernel,
                args: order,
                grid,
                block,
                shared: l.shared_bytes,
            })
        })
        .collect::<Result<_, Error>>()?;
    run_launches_on_cpu(&job.source, &mut args, &sim)?;
    drop(args);
    for (o, (bytes, _)) in outputs.iter_mut().zip(&data[n_in..n_in + n_out]) {
        from_bytes(o, bytes);
    }
    Ok(())
}

/// NVRTC compiles `count` sources of the kernel (random nonzero
/// sizes; the configured / default plan, then random plans) for sm_80 and
/// sm_90, with an empty log.
pub fn nvrtc_sources(job: JobFn, spec: &str, count: usize, budget: usize, seed: u64) {
    super::sources(
        spec,
        count,
        budget,
        seed,
        MAX_ITEMS,
        |bound, plan| job(bound, plan, "*", limits()),
        |source, what| {
            for arch in ["sm_80", "sm_90"] {
                let out = nvrtc_compile(source, arch)
                    .unwrap_or_else(|e| panic!("{what}, {arch}: {e}\n{source}"));
                assert!(
                    out.log.is_empty(),
                    "{what}, {arch}: NVRTC warned:\n{}\n{source}",
                    out.log
                );
            }
        },
    );
}
