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
//! device part is skipped, unless `MDH_REQUIRE_CUDA_DEVICE=1` (for runs on
//! a GPU machine, so that a broken driver set-up cannot pass silently).

#[macro_use]
mod gpu;

use std::sync::OnceLock;

use gpu::cuda_cpu::{limits, nvrtc_and_compiler, nvrtc_sources, run_on_cpu, JobFn};
use mdh::cuda::Device;
use mdh::reference::{Buffer, Value};
use mdh_core::codegen::c_expr::Dialect;
use mdh_core::desc::{Bound, KernelDesc};
use mdh_core::fixtures;
use mdh_core::gpu_plan::{GpuPlan, Mma, MAX_ITEMS};
use mdh_core::spec::Stage;
use mdh_core::Checked;
use mdh_example_kernels::*;
use mdh_gpu::cuda::nvrtc_compile;

/// Random cases per family on the CPU (each compiles one C++ program).
const SIM_CASES: usize = 5;
/// Random cases per family with a warp layer, on the CPU.
const WARP_CASES: usize = 2;
/// Random sizes per family with the analytical default plan, on the CPU,
/// and the most points of their index spaces.
const DEFAULT_CASES: usize = 3;
const DEFAULT_BUDGET: usize = 1 << 18;
/// Random cases per family on a GPU.
const GPU_CASES: usize = 24;
/// Sources per family compiled by NVRTC (per architecture).
const NVRTC_SOURCES: usize = 3;
/// Work-items per block of random plans on the CPU (fibers are cheap, but
/// not free).
const SIM_ITEMS: usize = 256;

fn device() -> Option<&'static Device> {
    static DEV: OnceLock<Option<Device>> = OnceLock::new();
    DEV.get_or_init(|| match Device::first() {
        Ok(d) => {
            eprintln!("the device runs use {} ({})", d.name(), d.arch());
            Some(d)
        }
        Err(e) => {
            gpu::skip_or_fail(
                "MDH_REQUIRE_CUDA_DEVICE",
                format!("there is no CUDA device, so the device runs are skipped: {e}"),
            );
            None
        }
    })
    .as_ref()
}

/// What a CUBIN records of each kernel (registers, stack frame, static
/// shared memory) is what ptxas reports of it, for every family's sources
/// on sm_80, sm_90 and sm_120 (whose CUBINs count CUDA's reserved shared
/// memory): the reading that describes a kernel where NVRTC's log holds
/// no report.
#[test]
fn cubin_attributes_agree_with_the_ptxas_report() {
    if !mdh_gpu::cuda::nvrtc_available() {
        gpu::skip_or_fail("MDH_REQUIRE_NVRTC", "NVRTC is not available");
        return;
    }
    macro_rules! families {
        ($($name:ident: $budget:expr;)*) => {
            [$(($name::SPEC, $name::cuda::job as JobFn, $budget)),*]
        };
    }
    for (spec, job, budget) in with_families!(families) {
        gpu::sources(
            spec,
            2,
            budget,
            gpu::seed(spec) ^ 0xcb,
            MAX_ITEMS,
            |bound, plan| job(bound, plan, "*", limits()),
            |source, what| {
                for arch in ["sm_80", "sm_90", "sm_120"] {
                    let c = mdh_gpu::cuda::nvrtc_resources(source, arch)
                        .unwrap_or_else(|e| panic!("{what}, {arch}: {e}"));
                    let read = mdh_gpu::cuda::cubin_resources(&c.cubin).unwrap();
                    let unreported: Vec<_> = c
                        .kernels
                        .iter()
                        .map(|k| mdh_gpu::cuda::KernelResources {
                            spill_stores: None,
                            spill_loads: None,
                            ..k.clone()
                        })
                        .collect();
                    assert!(
                        c.kernels.iter().all(|k| k.spill_bytes().is_some()),
                        "{what}, {arch}: no report\n{}",
                        c.log
                    );
                    let by_name = |v: &[mdh_gpu::cuda::KernelResources]| {
                        let mut v = v.to_vec();
                        v.sort_by(|a, b| a.name.cmp(&b.name));
                        v
                    };
                    assert_eq!(
                        by_name(&read),
                        by_name(&unreported),
                        "{what}, {arch}\n{}",
                        c.log
                    );
                }
            },
        );
    }
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
                nvrtc_sources($name::cuda::job, $name::SPEC, NVRTC_SOURCES, $budget, seed);
                gpu::family($name::SPEC, SIM_CASES, $budget, seed, SIM_ITEMS, |plan, i, o, p, s| {
                    run_on_cpu($name::cuda::job, $name::SPEC, plan, i, o, p, s)
                });
                gpu::warp_cases($name::SPEC, WARP_CASES, $budget, seed, SIM_ITEMS, &mut |plan, i, o, p, s| {
                    run_on_cpu($name::cuda::job, $name::SPEC, plan, i, o, p, s)
                });
                let kernel = mdh::reference::kernel($name::SPEC).unwrap();
                let info = mdh::reference::kernel_info(&kernel, Dialect::Cuda);
                gpu::default_cases($name::SPEC, DEFAULT_CASES, DEFAULT_BUDGET, seed, limits(), info,
                    &mut |plan, i, o, p, s| run_on_cpu($name::cuda::job, $name::SPEC, plan, i, o, p, s));
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
        "#define W0 8\n",
        "#define W1 32\n",
        "#define T0 32\n",
        "#define T1 64\n",
        "#define T2 64\n",
        "#define LOCAL0 1",
        "#define LOCAL1 1",
    ] {
        assert!(src.contains(def), "no `{def}` in\n{src}");
    }
    // On the device it was tuned for, the tuned entry of the same sizes
    // wins over the hand-written `*` one.
    let kernel = mdh::reference::kernel(matmul::SPEC).unwrap();
    let desc = KernelDesc::from_kernel(&kernel);
    let n = 1024 * 1024;
    let bound = desc.bind(&[1024, 1024, 1024], &[n, n], &[n]).unwrap();
    let job = matmul::cuda::job(&bound, None, "NVIDIA H100 80GB HBM3", limits())
        .unwrap()
        .unwrap();
    for def in ["#define W0 2\n", "#define W1 256\n", "#define T1 1024\n"] {
        assert!(job.source.contains(def), "no `{def}` in\n{}", job.source);
    }
}

/// matmul's bound at `I`, `J`, `K`.
fn matmul_bound(i: usize, j: usize, k: usize) -> Bound {
    let kernel = mdh::reference::kernel(matmul::SPEC).unwrap();
    let desc = KernelDesc::from_kernel(&kernel);
    mdh::gpu::bind_sizes(&desc, &gpu::matmul_sizes(i, j, k)).unwrap()
}

/// The CUDA source of matmul at `I`, `J`, `K` on `device` under `plan`
/// (`None`: the configured entry for that device, or the default).
fn matmul_source(sizes: (usize, usize, usize), plan: Option<&GpuPlan>, device: &str) -> String {
    let bound = matmul_bound(sizes.0, sizes.1, sizes.2);
    matmul::cuda::job(&bound, plan, device, limits())
        .unwrap()
        .unwrap()
        .source
}

/// The reference plans of matmul compile for sm_90 without spills (ptxas'
/// report through NVRTC, no GPU needed): the entries of
/// configs/matmul.yaml (hand-written `*` and tuned ones, at their sizes),
/// the default plan and the register-tiled one.
/// Kernel `k` neither spills nor keeps arrays in local memory: no stack
/// frame (which spills would need), and no spills where ptxas reported.
fn assert_no_local_memory(k: &mdh_gpu::cuda::KernelResources, what: &str, log: &str) {
    assert_local_memory_within(k, 0, what, log);
}

/// Kernel `k`'s stack frame and spilled bytes are at most `bytes` each: a
/// few spilled registers at most, never an array in local memory (an
/// accumulator array there is hundreds of bytes).
fn assert_local_memory_within(
    k: &mdh_gpu::cuda::KernelResources,
    bytes: u64,
    what: &str,
    log: &str,
) {
    let (stack, spills) = (k.stack_bytes, k.spill_bytes().unwrap_or(0));
    assert!(
        stack <= bytes && spills <= bytes,
        "{what}: `{}` uses local memory (stack frame {stack}, spilled bytes {spills}; at most {bytes} each)\n{log}",
        k.name
    );
}

#[test]
fn matmul_reference_plans_do_not_spill() {
    if !mdh_gpu::cuda::nvrtc_available() {
        gpu::skip_or_fail("MDH_REQUIRE_NVRTC", "NVRTC is not available");
        return;
    }
    let tuned = "NVIDIA H100 80GB HBM3";
    let desc = KernelDesc::from_kernel(&mdh::reference::kernel(matmul::SPEC).unwrap());
    let default = GpuPlan::default_for(&desc);
    let tiled = fixtures::matmul_register_tiled();
    let cases = [
        ((1024, 1024, 1024), None, "*"),
        ((1024, 1024, 1024), None, tuned),
        ((16, 1000, 2048), None, tuned),
        ((1, 1000, 2048), None, tuned),
        ((10, 500, 64), None, tuned),
        ((1024, 1024, 1024), Some(&default), "*"),
        ((1024, 1024, 1024), Some(&tiled), "*"),
    ];
    for (sizes, plan, device) in cases {
        let src = matmul_source(sizes, plan, device);
        let c = mdh_gpu::cuda::nvrtc_resources(&src, "sm_90").unwrap();
        // (On the H200 image of 2026-11-26 the CUDA 13.0 toolkit's NVRTC
        // returned an empty log here; pip's 13.0 and 13.5 do not. The
        // kernels are then read from the CUBIN, without spill counts: no
        // stack frame means no spills.)
        assert!(
            c.kernels.iter().any(|k| k.name == "mdh_main"),
            "NVRTC {:?}, sizes {sizes:?}, plan {plan:?} on `{device}`: no `mdh_main` in {:?}; its log: {:?}",
            mdh_gpu::cuda::nvrtc_version(),
            c.kernels,
            c.log
        );
        for k in &c.kernels {
            assert_no_local_memory(
                k,
                &format!("sizes {sizes:?}, plan {plan:?} on `{device}`"),
                &c.log,
            );
        }
    }
}

/// The SASS of matmul's register-tiled plan (sm_90, NVRTC → `nvdisasm`): in
/// the hot loop, FMAs are the majority (each thread's 8 × 8 outer product
/// from 8 + 8 values loaded once per step of k), at most one shared load
/// per 4 FMAs, and no integer division calls anywhere in the kernel (copies
/// decoded with constant extents, 32-bit indices). Skipped without
/// `nvdisasm` unless `MDH_REQUIRE_NVDISASM=1` (scripts/test-all.sh).
#[test]
fn matmul_register_tiled_sass() {
    if !sass_tools() {
        return;
    }
    let (c, main, sass) = matmul_main_sass(&fixtures::matmul_register_tiled(), "sm_90");
    let hot = main.hot_loop().expect(&sass);
    let report = format!("hot loop {hot:?}\n{}", c.log);
    assert_eq!(hot.ffma, 64, "{report}");
    assert!(hot.ffma_share() >= 0.6, "{report}");
    assert!(hot.lds_per_ffma() <= 0.25, "{report}");
    assert_eq!(main.division_calls(), 0, "{report}\n{sass}");
}

/// NVRTC and `nvdisasm` are there, or the SASS tests skip (fail under
/// `MDH_REQUIRE_NVRTC=1` / `MDH_REQUIRE_NVDISASM=1`).
fn sass_tools() -> bool {
    if !mdh_gpu::cuda::nvrtc_available() {
        gpu::skip_or_fail("MDH_REQUIRE_NVRTC", "NVRTC is not available");
        return false;
    }
    if mdh_gpu::sass::nvdisasm().is_none() {
        gpu::skip_or_fail(
            "MDH_REQUIRE_NVDISASM",
            "nvdisasm was not found (pip install --user nvidia-cuda-nvdisasm)",
        );
        return false;
    }
    true
}

/// matmul 1024³ under `plan` compiled for `arch` (32-bit indices): what
/// NVRTC made, the SASS of `mdh_main` and the whole disassembly. Every
/// plan these tests read the SASS of must not spill registers.
fn matmul_main_sass(plan: &GpuPlan, arch: &str) -> MainSass {
    main_sass(
        &matmul_source((1024, 1024, 1024), Some(plan), "*"),
        plan,
        arch,
    )
}

/// What NVRTC made of a source, the SASS of its `mdh_main` and the whole
/// disassembly.
type MainSass = (
    mdh_gpu::cuda::CompiledCubin,
    mdh_gpu::sass::Function,
    String,
);

/// `src` (under `plan`) compiled for `arch` (32-bit indices): what NVRTC
/// made, the SASS of `mdh_main` and the whole disassembly; no spills.
fn main_sass(src: &str, plan: &GpuPlan, arch: &str) -> MainSass {
    main_sass_spilling(src, plan, arch, 0)
}

/// [`main_sass`] with at most `spilled` bytes of spills (and stack frame)
/// per kernel.
fn main_sass_spilling(src: &str, plan: &GpuPlan, arch: &str, spilled: u64) -> MainSass {
    assert!(src.contains("#define MDH_IDX int\n"), "{src}");
    let c = mdh_gpu::cuda::nvrtc_resources(src, arch).unwrap();
    for k in &c.kernels {
        assert_local_memory_within(k, spilled, &format!("{plan:?} on {arch}"), &c.log);
    }
    let sass = mdh_gpu::sass::disassemble(&c.cubin).unwrap();
    let main = mdh_gpu::sass::Function::parse_all(&sass)
        .into_iter()
        .find(|f| f.name == "mdh_main")
        .expect(&sass);
    (c, main, sass)
}

/// The SASS of matmul's register-tiled plan with and without vectors
/// (sm_80 and sm_90): 128-bit global loads (`LDG.E.128`) and shared loads
/// (`LDS.128`) appear exactly when the plan asks for vectors; with them,
/// the hot loop's 64 FMAs per step of k take 4 shared loads (2 of A, 2 of
/// B) instead of 16.
#[test]
fn matmul_vector_loads_in_sass() {
    if !sass_tools() {
        return;
    }
    for arch in ["sm_80", "sm_90"] {
        for (plan, vectors) in [
            (fixtures::matmul_register_tiled(), false),
            (gpu::matmul_register_tiled_vectors(), true),
        ] {
            let (c, main, sass) = matmul_main_sass(&plan, arch);
            let hot = main.hot_loop().expect(&sass);
            let (ldg, lds) = (main.wide("LDG"), main.wide("LDS"));
            let report = format!(
                "{arch}, vectors {vectors}: LDG.E.128 {ldg}, LDS.128 {lds}, STS.128 {}, hot loop {hot:?}\n{}",
                main.wide("STS"),
                c.log
            );
            eprintln!("{report}");
            assert_eq!(ldg > 0, vectors, "{report}\n{sass}");
            assert_eq!(lds > 0, vectors, "{report}\n{sass}");
            assert_eq!(hot.ffma, 64, "{report}");
            assert_eq!(hot.lds, if vectors { 4 } else { 16 }, "{report}\n{sass}");
            assert_eq!(main.division_calls(), 0, "{report}");
        }
    }
}

/// The limits of a device of `arch` with 132 units (an H100's): what the
/// bench cases' defaults are derived for in the SASS tests.
fn gpu_limits(arch: &str) -> mdh::gpu::DeviceLimits {
    mdh::gpu::DeviceLimits {
        compute: mdh::gpu::DeviceCompute {
            compute_units: Some(132),
            ..Default::default()
        },
        ..mdh::gpu::cuda_arch_limits(arch)
    }
}

/// The SASS of the analytical default plan of each class at a bench
/// case's sizes, on sm_80 and sm_90 (NVRTC → `nvdisasm`, no GPU): no
/// local memory (spills), no integer division calls, no tensor cores
/// (`HMMA`: a default never lowers precision); matmul's (a contraction)
/// hot loop FMA-bound (at least 60 % FFMA, at most 0.25 shared loads per
/// FFMA) with 128-bit global loads (`LDG.E.128`, or `LDGSTS.E.128` where
/// two stages copy by `cp.async`); matvec's (a reduction) 128-bit loads of its
/// cached vector.
#[test]
fn default_plans_in_sass() {
    if !sass_tools() {
        return;
    }
    macro_rules! case {
        ($name:ident, $sizes:expr) => {{
            let kernel = mdh::reference::kernel($name::SPEC).unwrap();
            let desc = KernelDesc::from_kernel(&kernel);
            let info = mdh::reference::kernel_info(&kernel, Dialect::Cuda);
            (
                stringify!($name),
                desc,
                info,
                $sizes,
                $name::cuda::job as JobFn,
            )
        }};
    }
    let cases = [
        case!(matmul, gpu::matmul_sizes(1024, 1024, 1024)),
        case!(matmul, gpu::matmul_sizes(16, 1000, 2048)),
        case!(matvec, vec![4096, 4096]),
        case!(dot, vec![1 << 24]),
        case!(jacobi3d, vec![256, 256, 256]),
        case!(mcc, vec![1, 112, 7, 112, 7, 3, 64]),
    ];
    for (name, desc, info, sizes, job) in cases {
        for arch in ["sm_80", "sm_90"] {
            let lim = gpu_limits(arch);
            let bound = mdh::gpu::bind_sizes(&desc, &sizes).unwrap();
            let plan = mdh::gpu::defaults::default_plan(&desc, &bound, info, "*", lim);
            // Forced: a `*` entry of the configs would serve "*" first.
            let src = job(&bound, Some(&plan), "*", lim).unwrap().unwrap().source;
            let c = mdh_gpu::cuda::nvrtc_resources(&src, arch).unwrap();
            let what = format!("{name} {sizes:?} on {arch}, default {plan:?}");
            for k in &c.kernels {
                assert_no_local_memory(k, &what, &c.log);
            }
            let sass = mdh_gpu::sass::disassemble(&c.cubin).unwrap();
            let main = mdh_gpu::sass::Function::parse_all(&sass)
                .into_iter()
                .find(|f| f.name == "mdh_main")
                .expect(&sass);
            let hot = main.hot_loop();
            // 128-bit global loads: plain, or copying straight into
            // shared memory (`cp.async` of two stages on sm_80 and later).
            let wide_loads = main.wide("LDG") + main.wide("LDGSTS");
            let report = format!(
                "{what}: hot loop {hot:?}, 128-bit global loads {wide_loads}, LDS.128 {}\n{}",
                main.wide("LDS"),
                c.log
            );
            eprintln!("{report}");
            assert_eq!(main.division_calls(), 0, "{report}\n{sass}");
            assert_eq!(main.count("HMMA"), 0, "{report}");
            match (name, sizes[0]) {
                ("matmul", 1024) => {
                    let hot = hot.expect(&sass);
                    assert!(hot.ffma_share() >= 0.6, "{report}");
                    assert!(hot.lds_per_ffma() <= 0.25, "{report}");
                    assert!(wide_loads > 0, "{report}\n{sass}");
                }
                ("matvec", _) => assert!(wide_loads > 0, "{report}\n{sass}"),
                _ => {}
            }
        }
    }
}

/// The register-tiled plan with vectors under every layout of the shared
/// tiles, executed on the CPU (see `gpu::matmul_vector_layouts`).
/// bmatmul's few-rows default (lanes along k, B's tile in shared memory
/// copied in vectors of 4) at the extents where PoCL 3.1 miscompiles its
/// vector copy (`tests/opencl.rs`, `scalar_copies`): the plan itself is
/// right, every access within the canaries.
#[test]
fn few_rows_vector_copies() {
    if !nvrtc_and_compiler() {
        return;
    }
    let desc = KernelDesc::from_kernel(&mdh::reference::kernel(bmatmul::SPEC).unwrap());
    let plan = GpuPlan {
        groups: vec![0; 4],
        items: vec![1, 2, 2, 64],
        tile: vec![1, 4, 4, 2048],
        local: vec![false, true],
        blocked: false,
        vector: vec![4, 4],
        transpose: vec![false, false],
        pad: vec![0, 0],
        stages: 1,
        mma: Mma::Off,
        warps: Vec::new(),
    };
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("few rows vector copies"));
    for k in [1, 2, 130] {
        let sizes: Vec<usize> = desc
            .size_params
            .iter()
            .map(|p| match p.as_ref() {
                "NB" => 1,
                "I" => 3,
                "J" => 64,
                _ => k,
            })
            .collect();
        gpu::one_case(
            bmatmul::SPEC,
            &sizes,
            Some(&plan),
            &mut rng,
            &mut |plan, i, o, p, s| run_on_cpu(bmatmul::cuda::job, bmatmul::SPEC, plan, i, o, p, s),
        );
    }
}

#[test]
fn matmul_vector_layouts_run_full_and_edge_tiles() {
    if !nvrtc_and_compiler() {
        return;
    }
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("vector layouts"));
    gpu::matmul_vector_layouts(&mut rng, &mut |plan, i, o, p, s| {
        run_on_cpu(matmul::cuda::job, matmul::SPEC, plan, i, o, p, s)
    });
}

/// The register-tiled plan executed on the CPU at sizes of full tiles only
/// (the fragment path) and of cut ones (edge tiles, guarded per point).
#[test]
fn matmul_register_tiled_runs_full_and_edge_tiles() {
    if !nvrtc_and_compiler() {
        return;
    }
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("register tiled"));
    let plan = fixtures::matmul_register_tiled();
    for (i, j, k) in [(128, 256, 16), (136, 130, 13)] {
        let sizes = matmul_bound(i, j, k).sizes;
        gpu::one_case(
            matmul::SPEC,
            &sizes,
            Some(&plan),
            &mut rng,
            &mut |plan, i, o, p, s| run_on_cpu(matmul::cuda::job, matmul::SPEC, plan, i, o, p, s),
        );
    }
}

/// Shared tiles beyond the 48 KiB of static shared memory: the tiles move
/// to dynamic shared memory (`extern __shared__`), the launch passes its
/// size; NVRTC compiles the kernel for sm_80 and sm_90 with no static
/// shared memory left but the reduction tree (ptxas' report), and the CPU
/// executes it equal to the interpreter (see `gpu::matmul_big_tiles_cases`).
/// A plan above the architecture's opt-in limit does not fit.
#[test]
fn dynamic_shared_memory_beyond_48_kib() {
    if !nvrtc_and_compiler() {
        return;
    }
    let bound = matmul_bound(1024, 1024, 1024);
    let job = matmul::cuda::job(&bound, Some(&gpu::matmul_big_tiles()), "*", limits())
        .unwrap()
        .unwrap();
    assert_eq!(job.main_shared, 64 * 1024);
    assert!(job.source.contains("#define MDH_DYN_SHARED 1\n"));
    assert!(
        job.source.contains("#define L1_DOFF 32768\n"),
        "{}",
        job.source
    );
    assert_eq!(job.launches()[0].shared_bytes, 64 * 1024);
    for arch in ["sm_80", "sm_90"] {
        let c = mdh_gpu::cuda::nvrtc_resources(&job.source, arch).unwrap();
        let main = c.kernels.iter().find(|k| k.name == "mdh_main").unwrap();
        assert_eq!(
            main.shared_bytes, 0,
            "{arch}: static shared memory\n{}",
            c.log
        );
        assert_no_local_memory(main, arch, &c.log);
    }
    // Within 48 KiB the tiles stay static arrays.
    let small = matmul::cuda::job(&bound, Some(&gpu::matmul_register_tiled()), "*", limits())
        .unwrap()
        .unwrap();
    assert_eq!(small.main_shared, 0);
    assert!(small.source.contains("#define MDH_DYN_SHARED 0\n"));
    // 2 × 128 × 256 floats: 256 KiB, above sm_90's 227 KiB.
    let huge = GpuPlan {
        tile: vec![128, 128, 256],
        ..gpu::matmul_register_tiled()
    };
    let err = matmul::cuda::job(
        &bound,
        Some(&huge),
        "*",
        mdh::gpu::cuda_arch_limits("sm_90"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("262144 bytes of local memory"), "{err}");
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("dynamic shared"));
    gpu::matmul_big_tiles_cases(&mut rng, &mut |plan, i, o, p, s| {
        run_on_cpu(matmul::cuda::job, matmul::SPEC, plan, i, o, p, s)
    });
}

/// Two pipeline stages in the SASS (sm_80 and sm_90, NVRTC → `nvdisasm`):
/// the copies into shared memory are `cp.async` (`LDGSTS`; 128-bit with
/// vectors) exactly when the plan asks for two stages, and the hot loop
/// keeps its 64 FMAs, without spills or division calls.
#[test]
fn matmul_pipeline_stages_in_sass() {
    if !sass_tools() {
        return;
    }
    for arch in ["sm_80", "sm_90"] {
        for base in [
            gpu::matmul_register_tiled(),
            gpu::matmul_register_tiled_vectors(),
        ] {
            for stages in [1, 2] {
                let vectors = base.vector[0] > 1;
                let plan = GpuPlan {
                    stages,
                    ..base.clone()
                };
                let (c, main, sass) = matmul_main_sass(&plan, arch);
                let hot = main.hot_loop().expect(&sass);
                let (ldgsts, wide) = (main.count("LDGSTS"), main.wide("LDGSTS"));
                let report = format!(
                    "{arch}, vectors {vectors}, stages {stages}: LDGSTS {ldgsts} ({wide} of 128 bits), LDG {}, hot loop {hot:?}\n{}",
                    main.count("LDG"),
                    c.log
                );
                eprintln!("{report}");
                assert_eq!(ldgsts > 0, stages == 2, "{report}\n{sass}");
                assert_eq!(wide > 0, stages == 2 && vectors, "{report}\n{sass}");
                assert_eq!(hot.ffma, 64, "{report}");
                assert_eq!(main.division_calls(), 0, "{report}");
            }
        }
    }
}

/// The fused matmul + bias + ReLU in the SASS (sm_80 and sm_90): under
/// FP32 register-tiled plans (scalar, vectors in two stages) and TF32
/// tensor cores, the hot loop of the fused `mdh_main` has the instruction
/// mix of the product's own, opcode for opcode; the epilogue (the ReLU's
/// `FMNMX`, the bias's load) comes after it, nothing spills and NVRTC
/// does not warn.
#[test]
fn fused_epilogue_leaves_the_hot_loop_alone_in_sass() {
    use matmul_bias_relu::fused::matmul_bias_relu_product as dense;
    use matmul_bias_relu::stages::matmul_bias_relu_product as product;
    if !sass_tools() {
        return;
    }
    let n = 1024;
    let s = dense::Sizes { I: n, J: n, K: n };
    let Ok(mdh_core::Program::Staged(k)) = mdh::reference::program(matmul_bias_relu::SPEC) else {
        panic!("a kernel of stages");
    };
    let desc = KernelDesc::from_kernel(&k.stages[0].kernel);
    let bound = desc.bind(&s.values(), &[n * n, n * n], &[n * n]).unwrap();
    let esizes = matmul_bias_relu::stages::matmul_bias_relu_epilogue::Sizes { I: n, J: n }.values();
    let (lens, out) = ([n * n, n], [n * n]);
    let epilogue = dense::cuda::epilogue(mdh::__rt::ArgSizes {
        sizes: &esizes,
        in_lens: &lens,
        out_lens: &out,
    });
    let plans = [
        gpu::matmul_register_tiled(),
        GpuPlan {
            stages: 2,
            ..gpu::matmul_register_tiled_vectors()
        },
        fixtures::matmul_tensor_cores(Mma::Tf32),
    ];
    for arch in ["sm_80", "sm_90"] {
        for plan in &plans {
            let source =
                |job: Result<Option<mdh::gpu::Job>, mdh::Error>| job.unwrap().unwrap().source;
            let plain = source(product::cuda::job(&bound, Some(plan), "*", limits()));
            let fused = source(dense::cuda::job(
                &bound,
                &epilogue,
                Some(plan),
                "*",
                limits(),
            ));
            let (_, plain_main, _) = main_sass(&plain, plan, arch);
            let (c, fused_main, sass) = main_sass(&fused, plan, arch);
            assert!(
                !c.log.contains("warning"),
                "{arch}: NVRTC warned:\n{}",
                c.log
            );
            let mix =
                |f: &mdh_gpu::sass::Function| f.opcodes(f.hot_loop_range().expect("a hot loop"));
            let what = format!("{arch}, {plan:?}");
            assert_eq!(mix(&plain_main), mix(&fused_main), "{what}\n{sass}");
            assert!(
                fused_main.count("FMNMX") > plain_main.count("FMNMX"),
                "{what}: no ReLU after the loop\n{sass}"
            );
            eprintln!("{what}: hot loop {:?}", fused_main.hot_loop());
        }
    }
}

/// matmul's register-tiled plans in two pipeline stages executed on the
/// CPU (`cp.async` as plain copies; see `gpu::matmul_stages_cases`).
#[test]
fn matmul_pipeline_stages_run() {
    if !nvrtc_and_compiler() {
        return;
    }
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("pipeline stages"));
    gpu::matmul_stages_cases(&mut rng, &mut |plan, i, o, p, s| {
        run_on_cpu(matmul::cuda::job, matmul::SPEC, plan, i, o, p, s)
    });
}

/// The contraction-shaped families with tensor-core dimensions
/// (`gpu_plan::MmaDims`): matmul, its transposed layout, batched, a tensor
/// contraction, a convolution (as an implicit GEMM: the mma's rows are
/// output columns `q`, its columns filters `k`, its steps channels `c`) and
/// matmul of bf16 inputs and attention scores of f16 inputs, widened to
/// f32 (exact in TF32; their random plans draw the 16-bit mode too).
fn contractions() -> [(&'static str, JobFn); 7] {
    [
        (matmul::SPEC, matmul::cuda::job),
        (matmul_t::SPEC, matmul_t::cuda::job),
        (bmatmul::SPEC, bmatmul::cuda::job),
        (ccsdt::SPEC, ccsdt::cuda::job),
        (mcc::SPEC, mcc::cuda::job),
        (matmul_bf16::SPEC, matmul_bf16::cuda::job),
        (scores_f16::SPEC, scores_f16::cuda::job),
    ]
}

/// Random plans on tensor cores (TF32, 3xTF32) of every contraction,
/// executed on the CPU (the mma emulated in the PTX fragment layout,
/// operands rounded as the hardware rounds them) over sizes with full and
/// cut tiles: equal to the interpreter within each mode's tolerance
/// (`gpu::mma_rtol`).
#[test]
fn tensor_cores_run_contractions_at_their_precision() {
    if !nvrtc_and_compiler() {
        return;
    }
    for (spec, job) in contractions() {
        let mut rng = mdh_examples::check::Rng::new(gpu::seed(spec) ^ 0x3a3a);
        mma_cases_on_cpu(spec, job, &mut rng, None);
    }
}

/// 8 random tensor-core plans (`mma` the 16-bit mode, or any TF32 one) of
/// contraction `spec` at random sizes, run on the CPU execution of CUDA
/// against the interpreter ([`gpu::mma_cases`]).
fn mma_cases_on_cpu(spec: &str, job: JobFn, rng: &mut mdh_examples::check::Rng, mma: Option<Mma>) {
    gpu::mma_cases(
        spec,
        8,
        1 << 15,
        rng,
        &mut |plan, i, o, p, s| run_on_cpu(job, spec, plan, i, o, p, s),
        gpu::mma_rtol,
        mma,
    );
}

/// The 16-bit contractions on m16n8k16 tensor cores, bf16 matmul (`mma:
/// bf16`) and f16 attention scores (`mma: f16`, the keys' rows as the
/// mma's columns): random plans at random sizes, edge tiles among them,
/// executed on the CPU (the mma emulated in the PTX fragment layout: a
/// wrong mapping of fragments to lanes sums the wrong products) equal to
/// the interpreter at FP32's tolerance (the products of bf16 and f16
/// values are exact in FP32; the output is f32, so the tolerance is that
/// of its sums: `check::sum_rtol`), and NVRTC compiles such plans for
/// sm_80 and sm_90 with an empty log.
#[test]
fn half_tensor_cores_run_and_compile() {
    if !nvrtc_and_compiler() {
        return;
    }
    let families: [(&str, JobFn, Mma); 2] = [
        (matmul_bf16::SPEC, matmul_bf16::cuda::job, Mma::Bf16),
        (scores_f16::SPEC, scores_f16::cuda::job, Mma::F16),
    ];
    for (spec, job, mma) in families {
        let mut rng = mdh_examples::check::Rng::new(gpu::seed(spec) ^ 0x1616);
        mma_cases_on_cpu(spec, job, &mut rng, Some(mma));
        let desc = KernelDesc::from_kernel(&mdh::reference::kernel(spec).unwrap());
        let dims = mdh_core::gpu_plan::mma_dims(&desc).unwrap();
        let bound = mdh::gpu::bind_sizes(&desc, &vec![64; desc.size_params.len()]).unwrap();
        for _ in 0..2 {
            let plan = gpu::mma_plan(&mut rng, &desc, &dims, Some(mma));
            let source = job(&bound, Some(&plan), "*", limits())
                .unwrap()
                .unwrap()
                .source;
            assert!(
                source.contains("#define MDH_MMA 16\n"),
                "{plan:?}\n{source}"
            );
            let ptx = format!(
                "mma.sync.aligned.m16n8k16.row.col.f32.{0}.{0}.f32",
                mma.name()
            );
            assert!(source.contains(&ptx), "{plan:?}\n{source}");
            compiles_for_sm80_and_sm90(&source, &format!("{plan:?}"));
        }
    }
}

/// NVRTC compiles `source` (`what`) for sm_80 and sm_90 with an empty log.
fn compiles_for_sm80_and_sm90(source: &str, what: &str) {
    for arch in ["sm_80", "sm_90"] {
        let out =
            nvrtc_compile(source, arch).unwrap_or_else(|e| panic!("{what}, {arch}: {e}\n{source}"));
        assert!(
            out.log.is_empty(),
            "{what}, {arch}: NVRTC warned:\n{}",
            out.log
        );
    }
}

/// NVRTC compiles random tensor-core plans of every contraction for sm_80
/// and sm_90 with an empty log, at sizes where they run on tensor cores.
#[test]
fn tensor_core_sources_compile() {
    if !mdh_gpu::cuda::nvrtc_available() {
        gpu::skip_or_fail("MDH_REQUIRE_NVRTC", "NVRTC is not available");
        return;
    }
    for (spec, job) in contractions() {
        let desc = KernelDesc::from_kernel(&mdh::reference::kernel(spec).unwrap());
        let dims = mdh_core::gpu_plan::mma_dims(&desc).unwrap();
        let mut rng = mdh_examples::check::Rng::new(gpu::seed(spec) ^ 0x5c5c);
        let bound = mdh::gpu::bind_sizes(&desc, &vec![64; desc.size_params.len()]).unwrap();
        for _ in 0..2 {
            // A random plan may need more shared memory than the device
            // has at these sizes (mcc's tiles, seed 3412592386650262736):
            // the job refuses it with a sentence; draw another.
            let (plan, source) = (0..100)
                .find_map(|_| {
                    let plan = gpu::mma_plan(&mut rng, &desc, &dims, None);
                    match job(&bound, Some(&plan), "*", limits()) {
                        Ok(job) => Some((plan, job.unwrap().source)),
                        Err(mdh::Error::Argument(e)) if e.contains("the device allows") => None,
                        Err(e) => panic!("kernel `{}`, plan {plan:?}: {e}", desc.name),
                    }
                })
                .expect("a random tensor-core plan that fits the device");
            let what = format!("kernel `{}`, plan {plan:?}", desc.name);
            let define = match plan.mma {
                Mma::Tf32 => "#define MDH_MMA 1\n",
                Mma::Tf32x3 => "#define MDH_MMA 3\n",
                _ => "#define MDH_MMA 16\n",
            };
            assert!(source.contains(define), "{what}\n{source}");
            compiles_for_sm80_and_sm90(&source, &what);
        }
    }
}

/// The SASS of matmul 1024³ (sm_80, sm_90): `HMMA` exactly when the plan
/// asks for tensor cores (none under the register-tiled plan or the
/// tensor-core plan's shape in FP32), three times as many per step of k
/// with 3xTF32 as with TF32, no FP32 FMAs in their hot loop, no spills.
#[test]
fn matmul_tensor_cores_in_sass() {
    if !sass_tools() {
        return;
    }
    for arch in ["sm_80", "sm_90"] {
        let mut hmma_per_mode = Vec::new();
        for (plan, name) in [
            (fixtures::matmul_register_tiled(), "register-tiled"),
            (
                fixtures::matmul_tensor_cores(Mma::Off),
                "tensor-core shape, off",
            ),
            (fixtures::matmul_tensor_cores(Mma::Tf32), "tf32"),
            (fixtures::matmul_tensor_cores(Mma::Tf32x3), "3xtf32"),
        ] {
            let (c, main, sass) = matmul_main_sass(&plan, arch);
            let hot = main.hot_loop().expect(&sass);
            let hmma = main.count("HMMA");
            let report = format!(
                "{arch}, {name}: HMMA {hmma}, FFMA {}, hot loop {hot:?}, registers {:?}\n{}",
                main.count("FFMA"),
                c.kernels
                    .iter()
                    .map(|k| (k.name.clone(), k.registers))
                    .collect::<Vec<_>>(),
                c.log
            );
            eprintln!("{report}");
            assert_eq!(hmma > 0, plan.mma != Mma::Off, "{report}\n{sass}");
            if plan.mma != Mma::Off {
                assert_eq!(hot.ffma, 0, "{report}\n{sass}");
                hmma_per_mode.push(hot.hmma);
            }
            assert_eq!(main.division_calls(), 0, "{report}");
        }
        assert_eq!(
            hmma_per_mode[1],
            3 * hmma_per_mode[0],
            "{arch}: {hmma_per_mode:?}"
        );
    }
}

/// The SASS of the 16-bit contractions at 1024³ under the tensor-core
/// plan with tiles of 32 along k (sm_80, sm_90): bf16 matmul with `mma: bf16` holds
/// `HMMA.16816.F32.BF16` in its hot loop, f16 attention scores with `mma:
/// f16` `HMMA.16816.F32` (f16 operands, FP32 accumulators), every HMMA of
/// that shape, no FP32 FMA there, as many HMMAs per step along k as
/// TF32's `HMMA.1688` on the same plan (one m16n8k16 covers the k of two
/// m16n8k8), no local arrays and at most a few spilled registers.
#[test]
fn half_tensor_cores_in_sass() {
    if !sass_tools() {
        return;
    }
    let families: [(&str, JobFn, Mma, &str); 2] = [
        (
            matmul_bf16::SPEC,
            matmul_bf16::cuda::job,
            Mma::Bf16,
            "HMMA.16816.F32.BF16",
        ),
        (
            scores_f16::SPEC,
            scores_f16::cuda::job,
            Mma::F16,
            "HMMA.16816.F32",
        ),
    ];
    for (spec, job, half, half_shape) in families {
        let desc = KernelDesc::from_kernel(&mdh::reference::kernel(spec).unwrap());
        let bound = mdh::gpu::bind_sizes(&desc, &vec![1024; desc.size_params.len()]).unwrap();
        for arch in ["sm_80", "sm_90"] {
            let mut hmma = Vec::new();
            for (mma, shape) in [(half, half_shape), (Mma::Tf32, "HMMA.1688.F32.TF32")] {
                // 32 along k: two mma steps of 16 per tile, so that the
                // steps are a loop of their own (one step would leave the
                // HMMAs in the tile loop, around the edge tiles' loops).
                let plan = GpuPlan {
                    tile: vec![128, 64, 32],
                    ..fixtures::matmul_tensor_cores(mma)
                };
                let src = job(&bound, Some(&plan), "*", limits())
                    .unwrap()
                    .unwrap()
                    .source;
                // Both 16-bit kernels spill 8–24 bytes at this tile (ptxas
                // budgets 128 registers for 128-thread blocks), TF32 too:
                // allowed here. An array in local memory is not (the
                // fragment loops unroll; f16 converts by `cvt` on the
                // device, so the edge tiles' loops unroll as well).
                let (c, main, sass) = main_sass_spilling(&src, &plan, arch, 32);
                let hot = main.hot_loop().expect(&sass);
                let of_shape = main.instrs.iter().filter(|i| i.opcode() == shape).count();
                let report = format!(
                    "{spec:.40}, {arch}, {}: HMMA {}, {shape} {of_shape}, hot loop {hot:?}, registers {:?}\n{}",
                    mma.name(),
                    main.count("HMMA"),
                    c.kernels.iter().map(|k| (k.name.clone(), k.registers)).collect::<Vec<_>>(),
                    c.log
                );
                eprintln!("{report}");
                assert!(of_shape > 0 && hot.hmma > 0, "{report}\n{sass}");
                assert_eq!(main.count("HMMA"), of_shape, "{report}\n{sass}");
                assert_eq!(hot.ffma, 0, "{report}\n{sass}");
                hmma.push(hot.hmma);
            }
            // One mma per 16 × 8 tile of the warp and step along k: as
            // many HMMAs per step (a trip of the hot loop), a 16-bit step
            // covering 16 of k, a TF32 step 8.
            assert_eq!(hmma[0], hmma[1], "{arch}: HMMA per hot loop {hmma:?}");
        }
    }
}

/// The precision of each mode, seen on the CPU execution of matmul
/// 64 × 64 × 128 over values in [0, 1), against products summed in f64:
/// TF32's largest relative error is far above FP32's (its operands keep 10
/// of 23 mantissa bits) and within 2^-10; 3xTF32's is at FP32's level.
#[test]
fn tensor_core_precision_per_mode() {
    if !nvrtc_and_compiler() {
        return;
    }
    let (m, n, k) = (64, 64, 128);
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("tensor core precision"));
    let (a, b) = (rng.f32s(m * k), rng.f32s(k * n));
    let exact: Vec<f64> = (0..m * n)
        .map(|p| {
            (0..k)
                .map(|q| a[p / n * k + q] as f64 * b[q * n + p % n] as f64)
                .sum()
        })
        .collect();
    let sizes = matmul_bound(m, n, k).sizes;
    let error = |mma: Mma| {
        let plan = GpuPlan {
            tile: vec![64, 32, 16],
            ..fixtures::matmul_tensor_cores(mma)
        };
        let inputs = [Buffer::from(a.clone()), Buffer::from(b.clone())];
        let mut out = [Buffer::zeros(mdh_core::spec::ScalarType::F32, m * n)];
        run_on_cpu(
            matmul::cuda::job,
            matmul::SPEC,
            Some(&plan),
            &inputs,
            &mut out,
            &[],
            &sizes,
        )
        .unwrap();
        (0..m * n)
            .map(|p| match out[0].get(p) {
                Value::F32(v) => (v as f64 - exact[p]).abs() / exact[p],
                v => panic!("{v:?}"),
            })
            .fold(0.0, f64::max)
    };
    let (fp32, tf32, tf32x3) = (error(Mma::Off), error(Mma::Tf32), error(Mma::Tf32x3));
    eprintln!("largest relative error: FP32 {fp32:e}, TF32 {tf32:e}, 3xTF32 {tf32x3:e}");
    assert!(
        tf32 > 16.0 * fp32 && tf32 <= 2f64.powi(-10),
        "{fp32:e} {tf32:e}"
    );
    assert!(tf32x3 <= 2.0 * fp32 + 2f64.powi(-20), "{fp32:e} {tf32x3:e}");
}

/// Without a CUDA device (or driver), opening a device is an `Err` that
/// says so, not a panic (and the test says it checked only that, or fails
/// under `MDH_REQUIRE_CUDA_DEVICE=1`); with one, it is a device.
#[test]
fn device_first_is_an_err_without_a_driver() {
    match Device::first() {
        Ok(d) => assert!(d.max_threads_per_block() >= 1),
        Err(e) => {
            assert!(e.to_string().contains("CUDA"), "{e}");
            gpu::skip_or_fail(
                "MDH_REQUIRE_CUDA_DEVICE",
                format!("the device part: there is no CUDA device ({e})"),
            );
        }
    }
}

/// On a device: the public typed API, `run` on host slices and `launch` on
/// device buffers issued asynchronously on a stream of the caller's, agree
/// with the CPU kernel.
#[test]
fn run_and_launch_on_a_side_stream_agree_with_the_cpu() {
    let Some(dev) = device() else {
        return;
    };
    let s = matmul::Sizes {
        I: 67,
        J: 130,
        K: 301,
    };
    let mut rng = mdh_examples::check::Rng::new(7);
    let (a, b) = (rng.f32s(s.I * s.K), rng.f32s(s.K * s.J));
    let mut want = vec![0.0f32; s.I * s.J];
    matmul::cpu(&a, &b, &mut want, s).unwrap();
    let close = |got: &[f32]| {
        got.iter()
            .zip(&want)
            .all(|(g, w)| (g - w).abs() <= 1e-4 * w.abs().max(1.0))
    };
    let mut c = vec![f32::NAN; s.I * s.J];
    matmul::cuda::run(dev, &a, &b, &mut c, s).unwrap();
    assert!(close(&c), "cuda::run disagrees with the CPU kernel");

    let side = dev.on_stream(dev.context().new_stream().unwrap()).unwrap();
    let (da, db) = (side.buffer_from(&a).unwrap(), side.buffer_from(&b).unwrap());
    let mut dc = side.buffer_from(&vec![f32::NAN; s.I * s.J]).unwrap();
    matmul::cuda::launch(&side, &da, &db, &mut dc, s).unwrap();
    let mut c = vec![0.0f32; s.I * s.J];
    side.read(&dc, &mut c).unwrap();
    assert!(
        close(&c),
        "cuda::launch on a side stream disagrees with the CPU kernel"
    );
    // Device buffers of the wrong length are an Err, not a fault.
    let short = side.buffer::<f32>(5).unwrap();
    assert!(matmul::cuda::launch(&side, &short, &db, &mut dc, s).is_err());
}

/// Run-time tuning on the device (`NAME::cuda::tune`, `mdh::gpu::tune`):
/// the kept plan is checked, written to the tuning cache, and the call
/// prepared afterwards on the device runs it and agrees with the CPU
/// kernel. (The cache logic is tested on PoCL in `gpu_tune.rs`; this is
/// its CUDA device, run where `MDH_REQUIRE_CUDA_DEVICE=1` is set.)
#[test]
fn run_time_tuning_keeps_a_checked_plan_on_the_device() {
    let Some(dev) = device() else {
        return;
    };
    // Sizes no other test of this binary calls, so that the kept plan is
    // this test's alone while the other tests run beside it.
    let s = matmul::Sizes {
        I: 41,
        J: 57,
        K: 23,
    };
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuda-tune-cache");
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var("MDH_TUNE_CACHE", &dir);
    let r = matmul::cuda::tune(dev, s, std::time::Duration::from_secs(3)).unwrap();
    eprintln!("{r:?}");
    assert!(r.measured >= 2, "{r:?}");
    assert!(r.best_s > 0.0 && r.best_s <= r.before_s, "{r:?}");
    assert!(r.file.starts_with(&dir) && r.file.exists(), "{r:?}");
    // The call prepared now runs the kept plan.
    let bound = mdh::gpu::bind_sizes(matmul::desc(), &s.values()).unwrap();
    let kept = matmul::cuda::job(
        &bound,
        Some(&r.plan),
        dev.name(),
        mdh::gpu::GpuDevice::limits(dev),
    )
    .unwrap()
    .unwrap()
    .source;
    let call = matmul::cuda::call(
        dev,
        None,
        &s.values(),
        &[s.I * s.K, s.K * s.J],
        &[s.I * s.J],
    )
    .unwrap();
    assert_eq!(call.ready().unwrap().job().source, kept);
    let mut rng = mdh_examples::check::Rng::new(11);
    let (a, b) = (rng.f32s(s.I * s.K), rng.f32s(s.K * s.J));
    let mut want = vec![0.0f32; s.I * s.J];
    matmul::cpu(&a, &b, &mut want, s).unwrap();
    let mut c = vec![f32::NAN; s.I * s.J];
    matmul::cuda::run(dev, &a, &b, &mut c, s).unwrap();
    for (i, (g, w)) in c.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-4 * w.abs().max(1.0),
            "[{i}]: {g} vs {w}"
        );
    }
}

/// The kernels of stages: each stage's CUDA C executed on the CPU (its
/// default plan), in order, on the interpreter's intermediates; on a
/// device, `run` (each stage launched in order, intermediates on the
/// device).
#[test]
fn stages_run() {
    if nvrtc_and_compiler() {
        let softmax_jobs: [JobFn; 4] = [
            softmax::stages::softmax_rowmax::cuda::job,
            softmax::stages::softmax_exps::cuda::job,
            softmax::stages::softmax_rowsum::cuda::job,
            softmax::stages::softmax_normalize::cuda::job,
        ];
        let dense_jobs: [JobFn; 2] = [
            matmul_bias_relu::stages::matmul_bias_relu_product::cuda::job,
            matmul_bias_relu::stages::matmul_bias_relu_epilogue::cuda::job,
        ];
        let layernorm_jobs: [JobFn; 3] = [
            layernorm::stages::layernorm_rowmean::cuda::job,
            layernorm::stages::layernorm_rowvar::cuda::job,
            layernorm::stages::layernorm_normalize::cuda::job,
        ];
        let attention_jobs: [JobFn; 6] = [
            attention::stages::attention_scores::cuda::job,
            attention::stages::attention_rowmax::cuda::job,
            attention::stages::attention_exps::cuda::job,
            attention::stages::attention_rowsum::cuda::job,
            attention::stages::attention_weighted::cuda::job,
            attention::stages::attention_normalize::cuda::job,
        ];
        let (softmax_stage, dense_stage) = (stage_on_cpu(&softmax_jobs), stage_on_cpu(&dense_jobs));
        let (layernorm_stage, attention_stage) =
            (stage_on_cpu(&layernorm_jobs), stage_on_cpu(&attention_jobs));
        gpu::stages::cases(gpu::stages::Runs {
            softmax: &|x, y, s| {
                gpu::stages::per_stage(softmax::SPEC, &s.values(), x, y, &[], &softmax_stage)
            },
            dense: &|x, y, s| {
                gpu::stages::per_stage(matmul_bias_relu::SPEC, &s.values(), x, y, &[], &dense_stage)
            },
            layernorm: &|x, y, eps, s| {
                let params = [Value::F32(eps)];
                gpu::stages::per_stage(
                    layernorm::SPEC,
                    &s.values(),
                    x,
                    y,
                    &params,
                    &layernorm_stage,
                )
            },
            attention: &|x, o, scale, s| {
                let params = [Value::F32(scale)];
                gpu::stages::per_stage(
                    attention::SPEC,
                    &s.values(),
                    x,
                    o,
                    &params,
                    &attention_stage,
                )
            },
        });
    }
    if let Some(dev) = device() {
        gpu::stages::cases(gpu::stages::Runs {
            softmax: &|x, y, s| softmax::cuda::run(dev, &x[0], y, s),
            dense: &|x, y, s| matmul_bias_relu::cuda::run(dev, &x[0], &x[1], &x[2], y, s),
            layernorm: &|x, y, eps, s| layernorm::cuda::run(dev, &x[0], &x[1], &x[2], y, eps, s),
            attention: &|x, o, scale, s| {
                attention::cuda::run(dev, &x[0], &x[1], &x[2], o, scale, s)
            },
        });
    }
}

/// The fused products (`gpu::stages::fused_cases`): the fused module's
/// job executed on the CPU with the epilogue's inputs after the params;
/// on a device, its `launch_with`.
#[test]
fn fused_products_run() {
    use dense_residual::fused::dense_residual_product as residual;
    use dense_residual::stages::dense_residual_residual as residual_epilogue;
    use matmul_bias_relu::fused::matmul_bias_relu_product as dense;
    use matmul_bias_relu::stages::matmul_bias_relu_epilogue as dense_epilogue;
    use mdh::__rt::ArgSizes;
    if nvrtc_and_compiler() {
        // The producing stage's kernel and the product's buffers and sizes.
        let product = |spec: &str| -> Checked {
            let Ok(mdh_core::Program::Staged(k)) = mdh::reference::program(spec) else {
                panic!("a kernel of stages");
            };
            k.stages[0].kernel.clone()
        };
        let (dense_k, residual_k) = (
            product(matmul_bias_relu::SPEC),
            product(dense_residual::SPEC),
        );
        // The fused job (made by `job` from the product's bound and the
        // epilogue's part of the call) executed on the CPU.
        type FusedJob<'a> =
            &'a dyn Fn(&Bound, ArgSizes) -> Result<Option<mdh::gpu::Job>, mdh::Error>;
        let on_cpu = |kernel: &Checked,
                      [sizes, esizes]: [&[usize]; 2],
                      x: &[Vec<f32>],
                      y: &mut [f32],
                      params: &[Value],
                      job: FusedJob|
         -> Result<(), mdh::Error> {
            let desc = KernelDesc::from_kernel(kernel);
            let bound = desc.bind(sizes, &[x[0].len(), x[1].len()], &[y.len()])?;
            let (lens, out) = ([y.len(), x[2].len()], [y.len()]);
            let args = ArgSizes {
                sizes: esizes,
                in_lens: &lens,
                out_lens: &out,
            };
            let Some(job) = job(&bound, args)? else {
                return Ok(());
            };
            let ins = [Buffer::from(x[0].clone()), Buffer::from(x[1].clone())];
            let mut outs = [Buffer::from(y.to_vec())];
            let epilogue = [Buffer::from(x[2].clone())];
            gpu::cuda_cpu::run_job_on_cpu(kernel, &job, (&ins, &mut outs, params), &epilogue)?;
            y.copy_from_slice(outs[0].as_f32().unwrap());
            Ok(())
        };
        let sim = "the CPU execution of CUDA";
        gpu::stages::fused_cases(gpu::stages::FusedRuns {
            dense: &|plan, x, y, _, [i, j, k]| {
                let s = dense::Sizes { I: i, J: j, K: k }.values();
                let es = dense_epilogue::Sizes { I: i, J: j }.values();
                on_cpu(&dense_k, [&s, &es], x, y, &[], &|bound, args| {
                    let e = dense::cuda::epilogue(args);
                    dense::cuda::job(bound, &e, Some(plan), sim, limits())
                })
            },
            residual: &|plan, x, y, alpha, [i, j, k]| {
                let s = residual::Sizes { I: i, J: j, K: k }.values();
                let es = residual_epilogue::Sizes { I: i, J: j }.values();
                let params = [Value::F32(alpha)];
                on_cpu(&residual_k, [&s, &es], x, y, &params, &|bound, args| {
                    let e = residual::cuda::epilogue(args);
                    residual::cuda::job(bound, &e, Some(plan), sim, limits())
                })
            },
        });
    }
    if let Some(dev) = device() {
        fused_device_runs!(dev, cuda);
    }
}

/// Stage `at` of a kernel of stages: the CUDA C of `jobs[at]` (its default
/// plan) executed on the CPU.
fn stage_on_cpu(jobs: &[JobFn]) -> Box<gpu::stages::StageRun<'_>> {
    Box::new(
        move |at: usize,
              s: &Stage<Checked>,
              z: &[usize],
              i: &[Buffer],
              o: &mut [Buffer],
              p: &[Value]| { run_on_cpu(jobs[at], &s.kernel.source, None, i, o, p, z) },
    )
}
