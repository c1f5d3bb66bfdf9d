//! Random whole kernels (the crate mdh-random-kernels: drawn at build time
//! from the seed `MDH_RANDOM_SEED`, and every kernel that once failed) on
//! every back end that runs without a GPU, against the reference
//! interpreter: the CPU kernel, OpenCL (PoCL) with random plans, and the
//! CUDA kernel compiled by NVRTC and executed on the CPU
//! (`mdh_gpu::cuda_sim`).
//!
//! Each test runs every kernel and reports all that fail, with the seed
//! that reproduces them: `MDH_RANDOM_SEED=<seed> cargo test -p
//! mdh-random-kernels` draws the same kernels, sizes, plans and inputs
//! (`MDH_RANDOM_ONLY=rk07` runs one of them). Without an OpenCL device or
//! NVRTC the GPU tests skip, unless `MDH_REQUIRE_OPENCL=1` /
//! `MDH_REQUIRE_NVRTC=1` (set by scripts/test-all.sh).

// The GPU tests' shared helpers; many serve only the example families.
#[allow(dead_code, unused_macros)]
mod gpu;

use std::panic::{catch_unwind, AssertUnwindSafe};

use mdh::gpu::GpuDevice as _;
use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_core::gpu_plan::GpuPlan;
use mdh_random_kernels::*;

use gpu::cuda_cpu::{nvrtc_and_compiler, nvrtc_sources, run_on_cpu, JobFn};

/// Sources per kernel built by PoCL with `-Werror`, with an empty log.
const WERROR_SOURCES: usize = 1;
/// Random sizes per kernel on the CPU (its configured / default plan).
const CPU_CASES: usize = 6;
/// Random sizes and plans per kernel on OpenCL.
const OPENCL_CASES: usize = 3;
/// Random sizes per kernel on the CPU execution of CUDA, with the default
/// plan (each case compiles one C++ program; random plans of the emitter
/// both GPU dialects share run on OpenCL).
const CUDA_CASES: usize = 1;
/// Sources per kernel NVRTC compiles (for sm_80 and sm_90, without a
/// warning).
const NVRTC_SOURCES: usize = 1;
/// Work-items per work-group of random GPU plans.
const MAX_ITEMS: usize = 64;

type CpuDyn = fn(&[Buffer], &mut [Buffer], &[Value], &[usize]) -> Result<(), Error>;
type OpenClDyn = fn(
    &mdh::opencl::Device,
    Option<&GpuPlan>,
    &[Buffer],
    &mut [Buffer],
    &[Value],
    &[usize],
) -> Result<(), Error>;

/// One kernel of the crate and its entry points (`JobFn`: a back end's
/// `NAME::…::job`).
struct Kernel {
    name: &'static str,
    spec: &'static str,
    budget: usize,
    cpu: CpuDyn,
    opencl: OpenClDyn,
    opencl_job: JobFn,
    cuda: JobFn,
}

macro_rules! kernel_list {
    ($($name:ident: $budget:expr;)*) => {
        [$(Kernel {
            name: stringify!($name),
            spec: $name::SPEC,
            budget: $budget,
            cpu: $name::cpu_dyn,
            opencl: $name::opencl::run_dyn,
            opencl_job: $name::opencl::job,
            cuda: $name::cuda::job,
        }),*]
    };
}

/// The kernels to run: all, or the one `MDH_RANDOM_ONLY` names.
fn kernels() -> Vec<Kernel> {
    let only = std::env::var("MDH_RANDOM_ONLY").ok();
    let all: Vec<Kernel> = with_kernels!(kernel_list).into();
    let chosen: Vec<Kernel> = all
        .into_iter()
        .filter(|k| only.as_deref().is_none_or(|o| o == k.name))
        .collect();
    assert!(
        !chosen.is_empty(),
        "MDH_RANDOM_ONLY={only:?} names no kernel of mdh-random-kernels"
    );
    chosen
}

/// Runs `run` (cases of one kernel on one back end, seeded) for every
/// kernel, and fails with every kernel that failed, its source and how to
/// reproduce it.
fn run_all(backend: &str, mut run: impl FnMut(&Kernel, u64)) {
    let kernels = kernels();
    eprintln!(
        "{backend}: {} kernels of seed {SEED} (MDH_RANDOM_SEED={SEED} draws them again)",
        kernels.len()
    );
    let mut failed = Vec::new();
    for k in &kernels {
        let seed = SEED ^ gpu::seed(k.name) ^ gpu::seed(backend);
        let outcome = catch_unwind(AssertUnwindSafe(|| run(k, seed)));
        if let Err(payload) = outcome {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failed.push(format!("{}: {msg}\n{}", k.name, k.spec));
        }
    }
    assert!(
        failed.is_empty(),
        "{backend}: {} of {} kernels of seed {SEED} failed (reproduce with MDH_RANDOM_SEED={SEED} MDH_RANDOM_ONLY=<name> cargo test -p mdh-random-kernels; keep a failing kernel in examples/random/regressions/<name>.rs):\n\n{}",
        failed.len(),
        kernels.len(),
        failed.join("\n\n")
    );
}

#[test]
fn cpu() {
    run_all("cpu", |k, seed| {
        gpu::family(
            k.spec,
            CPU_CASES,
            k.budget,
            seed,
            MAX_ITEMS,
            |_, i, o, p, s| (k.cpu)(i, o, p, s),
        );
    });
}

#[test]
fn opencl() {
    let Some(dev) = gpu::opencl_device() else {
        return;
    };
    let max_items = dev.max_work_group_size().min(MAX_ITEMS);
    run_all("opencl", |k, seed| {
        gpu::sources(
            k.spec,
            WERROR_SOURCES,
            k.budget,
            seed,
            max_items,
            |bound, plan| (k.opencl_job)(bound, plan, dev.name(), dev.limits()),
            |source, what| gpu::build_without_warnings(dev, source, what),
        );
        gpu::family(
            k.spec,
            OPENCL_CASES,
            k.budget,
            seed,
            max_items,
            |plan, i, o, p, s| (k.opencl)(dev, plan, i, o, p, s),
        );
    });
}

#[test]
fn cuda_on_cpu() {
    if !nvrtc_and_compiler() {
        return;
    }
    run_all("cuda", |k, seed| {
        nvrtc_sources(k.cuda, k.spec, NVRTC_SOURCES, k.budget, seed);
        gpu::family(
            k.spec,
            CUDA_CASES,
            k.budget,
            seed,
            MAX_ITEMS,
            |plan, i, o, p, s| run_on_cpu(k.cuda, k.spec, plan, i, o, p, s),
        );
    });
}
