//! Every example family through CUDA, without a GPU:
//! - NVRTC compiles the CUDA C of every family, for a few random sizes and
//!   plans (including the second pass across blocks, scans, shared-memory
//!   tiles and warp shuffles where the plans call for them), for sm_80 and
//!   sm_90, with no warning;
//! - the CPU executes every family's CUDA kernels (`mdh_gpu::cuda_sim`: the
//!   threads of a block are fibers, `__syncthreads` and warp shuffles are
//!   barriers among them) over random sizes (1, primes, 0 sometimes) and
//!   random valid plans, with the launches of the generated wrapper's job
//!   (`NAME::cuda::job`), and the results are compared with the reference
//!   interpreter;
//! - on a machine with a CUDA device, `NAME::cuda::run_dyn` runs the same
//!   cases on it.
//!
//! Without NVRTC (or a C++ compiler) the tests print why and pass, unless
//! `MDH_REQUIRE_NVRTC=1` (set by `scripts/test-all.sh`); without a GPU the
//! device part is skipped.

#[macro_use]
mod gpu;

use std::sync::OnceLock;

use mdh::cuda::Device;
use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_core::codegen::c_expr::Dialect;
use mdh_core::desc::{Bound, KernelDesc};
use mdh_core::gpu_plan::{GpuPlan, MAX_ITEMS};
use mdh_examples::*;
use mdh_gpu::cuda::nvrtc_compile;
use mdh_gpu::cuda_sim::{cpu_sim_available, run_launches_on_cpu, SimArg, SimLaunch};

/// The generated `NAME::cuda::job`.
type JobFn = fn(
    &Bound,
    Option<&GpuPlan>,
    &str,
    mdh::gpu::DeviceLimits,
) -> Result<Option<mdh::gpu::Job>, Error>;

/// A device as large as the model allows: CUDA's limits per block.
const LIMITS: mdh::gpu::DeviceLimits = mdh::gpu::DeviceLimits {
    max_items: MAX_ITEMS,
    local_bytes: mdh::gpu::CUDA_STATIC_SHARED_BYTES,
};

/// Random cases per family on the CPU (each compiles one C++ program).
const SIM_CASES: usize = 5;
/// Random cases per family on a GPU.
const GPU_CASES: usize = 24;
/// Sources per family compiled by NVRTC (per architecture).
const NVRTC_SOURCES: usize = 3;
/// Work-items per block of random plans on the CPU (fibers are cheap, but
/// not free).
const SIM_ITEMS: usize = 256;

fn nvrtc_and_compiler() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        if !mdh_gpu::cuda::nvrtc_available() {
            gpu::skip_or_fail("MDH_REQUIRE_NVRTC", "NVRTC is not available (pip install --user nvidia-cuda-nvrtc-cu12 and put its lib folder on LD_LIBRARY_PATH)");
            return false;
        }
        if !cpu_sim_available() {
            gpu::skip_or_fail("MDH_REQUIRE_NVRTC", "there is no C++ compiler for the CPU execution of CUDA (install g++ 11 or later)");
            return false;
        }
        true
    })
}

fn device() -> Option<&'static Device> {
    static DEV: OnceLock<Option<Device>> = OnceLock::new();
    DEV.get_or_init(|| match Device::first() {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("no CUDA device, the device runs are skipped: {e}");
            None
        }
    })
    .as_ref()
}

/// `buffers`' lengths.
fn lens(buffers: &[Buffer]) -> Vec<usize> {
    buffers.iter().map(Buffer::len).collect()
}

/// The bytes of a buffer as the device stores them (bool as bytes 0 / 1).
fn to_bytes(b: &Buffer) -> Vec<u8> {
    macro_rules! bytes {
        ($($V:ident),*) => {
            match b {
                $(Buffer::$V(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),)*
                Buffer::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
            }
        };
    }
    bytes!(F32, F64, I8, I16, I32, I64, U8, U16, U32, U64)
}

/// Stores device bytes back into a buffer of the same type and length.
fn from_bytes(b: &mut Buffer, bytes: &[u8]) {
    macro_rules! back {
        ($($V:ident $t:ty),*) => {
            match b {
                $(Buffer::$V(v) => {
                    let chunks = bytes.chunks_exact(std::mem::size_of::<$t>());
                    for (x, c) in v.iter_mut().zip(chunks) {
                        *x = <$t>::from_ne_bytes(c.try_into().expect("chunks of the element size"));
                    }
                })*
                Buffer::Bool(v) => v.iter_mut().zip(bytes).for_each(|(x, &c)| *x = c != 0),
            }
        };
    }
    back!(F32 f32, F64 f64, I8 i8, I16 i16, I32 i32, I64 i64, U8 u8, U16 u16, U32 u32, U64 u64)
}

/// The bytes of a param as the kernel takes it (bool as a byte).
fn param_bytes(v: &Value) -> Vec<u8> {
    macro_rules! bytes {
        ($($V:ident),*) => {
            match *v {
                $(Value::$V(x) => x.to_ne_bytes().to_vec(),)*
                Value::Bool(x) => vec![u8::from(x)],
            }
        };
    }
    bytes!(F32, F64, I8, I16, I32, I64, U8, U16, U32, U64, Usize)
}

/// Like `NAME::cuda::run_dyn`, on the CPU: the same job (source, plan,
/// launches and their geometry), the same arguments per launch, executed by
/// `cuda_sim` instead of a device.
fn run_on_cpu(
    job: JobFn,
    spec: &str,
    plan: Option<&GpuPlan>,
    inputs: &[Buffer],
    outputs: &mut [Buffer],
    params: &[Value],
    sizes: &[usize],
) -> Result<(), Error> {
    let kernel = mdh::reference::kernel(spec)?;
    let desc = KernelDesc::from_kernel(&kernel);
    let bound = desc.bind(sizes, &lens(inputs), &lens(outputs))?;
    let Some(job) = job(&bound, plan, "the CPU execution of CUDA", LIMITS)? else {
        return Ok(());
    };
    let c = |t| Dialect::Cuda.storage_ty(t);
    // Arguments: inputs, outputs, partial results per output access, params.
    let mut data: Vec<(Vec<u8>, &'static str)> = Vec::new();
    data.extend(inputs.iter().map(|b| (to_bytes(b), c(b.ty()))));
    data.extend(outputs.iter().map(|b| (to_bytes(b), c(b.ty()))));
    for (b, _) in kernel.output_accesses() {
        let t = kernel.outputs[b].ty;
        data.push((to_bytes(&Buffer::zeros(t, job.partial_len)), c(t)));
    }
    let n_bufs = data.len();
    let (n_in, n_out) = (inputs.len(), outputs.len());
    let mut args: Vec<SimArg> = data
        .iter_mut()
        .map(|(bytes, elem)| SimArg::Buf {
            data: bytes.as_mut_slice(),
            elem,
        })
        .chain(params.iter().map(|v| SimArg::Scalar {
            bytes: param_bytes(v),
            ty: c(v.ty()),
        }))
        .collect();
    let launches = job.launches();
    let sim: Vec<SimLaunch> = launches
        .iter()
        .map(|l| {
            let (grid, block) = l.grid_block()?;
            let mut a: Vec<usize> = Vec::new();
            if l.inputs {
                a.extend(0..n_in);
            }
            a.extend(n_in..n_in + n_out);
            if l.partials {
                a.extend(n_in + n_out..n_bufs);
            }
            a.extend(n_bufs..n_bufs + params.len());
            Ok(SimLaunch {
                kernel: &l.kernel,
                args: a,
                grid,
                block,
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

/// NVRTC compiles `NVRTC_SOURCES` sources of the family (random nonzero
/// sizes; the configured / default plan, then random plans) for sm_80 and
/// sm_90, with an empty log.
fn nvrtc_sources(job: JobFn, spec: &str, budget: usize, seed: u64) {
    gpu::sources(
        spec,
        NVRTC_SOURCES,
        budget,
        seed,
        MAX_ITEMS,
        |bound, plan| job(bound, plan, "*", LIMITS),
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

macro_rules! cuda_tests {
    ($($name:ident: $budget:expr;)*) => {
        $(
            #[test]
            fn $name() {
                if !nvrtc_and_compiler() {
                    return;
                }
                let seed = gpu::seed(stringify!($name));
                nvrtc_sources($name::cuda::job, $name::SPEC, $budget, seed);
                gpu::family($name::SPEC, SIM_CASES, $budget, seed, SIM_ITEMS, |plan, i, o, p, s| {
                    run_on_cpu($name::cuda::job, $name::SPEC, plan, i, o, p, s)
                });
                if let Some(dev) = device() {
                    let max_items = dev.max_threads_per_block();
                    gpu::family($name::SPEC, GPU_CASES, $budget, seed, max_items, |plan, i, o, p, s| {
                        $name::cuda::run_dyn(dev, plan, i, o, p, s)
                    });
                }
            }
        )*
    };
}

with_families!(cuda_tests);

/// Scans along lines longer than a chunk of the scan pass (64 elements),
/// executed on the CPU: the carry from chunk to chunk.
#[test]
fn long_scans() {
    if !nvrtc_and_compiler() {
        return;
    }
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("long scans"));
    gpu::long_scans(
        &mut rng,
        SIM_ITEMS,
        &mut |plan, i, o, p, s| run_on_cpu(scan::cuda::job, scan::SPEC, plan, i, o, p, s),
        &mut |plan, i, o, p, s| run_on_cpu(mbbs::cuda::job, mbbs::SPEC, plan, i, o, p, s),
    );
}

/// The plans of `split_kept_groups_with_pw_items` (tests/opencl.rs),
/// executed on the CPU: tile loops of one trip per block inside loops of
/// several, around the barriers of the reduction tree.
#[test]
fn split_kept_groups_with_pw_items() {
    if !nvrtc_and_compiler() {
        return;
    }
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("split kept groups"));
    gpu::split_kept_cases(
        conv2d::SPEC,
        3,
        &mut rng,
        SIM_ITEMS,
        &mut |plan, i, o, p, s| run_on_cpu(conv2d::cuda::job, conv2d::SPEC, plan, i, o, p, s),
    );
    gpu::split_kept_cases(
        matmul::SPEC,
        3,
        &mut rng,
        SIM_ITEMS,
        &mut |plan, i, o, p, s| run_on_cpu(matmul::cuda::job, matmul::SPEC, plan, i, o, p, s),
    );
}

/// `configs/matmul.yaml`'s CUDA entry is compiled in and chosen: the source
/// for its sizes carries its plan.
#[test]
fn configured_plan_is_used() {
    let src = matmul::cuda::source(&matmul::Sizes {
        I: 1024,
        J: 1024,
        K: 1024,
    });
    for def in [
        "#define W0 8L",
        "#define W1 32L",
        "#define T0 32L",
        "#define T1 64L",
        "#define T2 64L",
        "#define LOCAL0 1",
        "#define LOCAL1 1",
    ] {
        assert!(src.contains(def), "no `{def}` in\n{src}");
    }
}

/// Without a CUDA driver, opening a device is an `Err` that says so, not a
/// panic; with one, it is a device.
#[test]
fn device_first_is_an_err_without_a_driver() {
    match Device::first() {
        Ok(d) => assert!(d.max_threads_per_block() >= 1),
        Err(e) => assert!(
            !mdh_gpu::cuda::driver_available() || e.to_string().contains("CUDA"),
            "{e}"
        ),
    }
}
