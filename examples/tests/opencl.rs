//! Every example family through OpenCL (on the CPU through PoCL in CI),
//! against the reference interpreter, over random sizes (1, primes, 0
//! sometimes) and random valid OpenCL plans: work-groups and work-items per
//! dimension, tiles, strided or blocked work-items, inputs cached in local
//! memory, PW dimensions split across work-items (tree) and work-groups
//! (second pass).
//!
//! Without an OpenCL device the tests print why and pass, unless
//! `MDH_REQUIRE_OPENCL=1` (set by `scripts/test-all.sh`), where a missing
//! device is a failure.

#[macro_use]
mod gpu;

use mdh::opencl::Device;
use mdh_core::desc::KernelDesc;
use mdh_example_kernels::*;

fn device() -> Option<&'static Device> {
    gpu::opencl_device()
}

const CASES: usize = 24;
/// Random cases per family with a warp layer.
const WARP_CASES: usize = 2;

/// Random sizes per family run with the GPUs' analytical default plan.
const DEFAULT_CASES: usize = 3;
/// Most points of their index spaces.
const DEFAULT_BUDGET: usize = 1 << 18;

/// The limits of a GPU (sm_80's, with 108 units) within what PoCL's device
/// allows: the GPUs' analytical default plans run on PoCL.
fn gpu_limits(dev: &mdh::opencl::Device) -> mdh::gpu::DeviceLimits {
    let sm80 = mdh::gpu::cuda_arch_limits("sm_80");
    mdh::gpu::DeviceLimits {
        max_items: sm80.max_items.min(dev.max_work_group_size()),
        local_bytes: sm80.local_bytes.min(dev.local_mem_bytes()),
        compute: mdh::gpu::DeviceCompute {
            compute_units: Some(108),
            ..Default::default()
        },
        ..sm80
    }
}

/// `plan` with vectors of 1 (its local tiles copied element by element).
/// PoCL 3.1 (Debian 12) miscompiles the vector copy into a local tile of some
/// defaults: bmatmul's few-rows plan (items `[1, 2, 2, 64]`, tile
/// `[1, 4, 4, 2048]`, B in local memory, vectors of 4) at NB 1, I 3, J 64
/// and K 1, 2 or 130 dies with SIGSEGV in `mdh_main`, although every index
/// of the copy is in bounds: an always-true bound added to the vector
/// branch, or PoCL's `loops` work-group method
/// (`POCL_WORK_GROUP_METHOD=loops`; `auto` took `repl` there), makes the
/// same source pass. The CUDA execution on the CPU (`tests/cuda.rs`, canaries around
/// every buffer) runs the defaults with their vectors, that plan among
/// them (`few_rows_vector_copies`); their other parameters run here.
fn scalar_copies(plan: &mdh::__rt::GpuPlan) -> mdh::__rt::GpuPlan {
    mdh::__rt::GpuPlan {
        vector: vec![1; plan.vector.len()],
        ..plan.clone()
    }
}

macro_rules! opencl_tests {
    ($($name:ident: $budget:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let Some(dev) = device() else { return };
                let max_items = dev.max_work_group_size().min(256);
                // The random plans with guards around the outputs on the
                // device; the other cases through the generated `run_dyn`.
                // Regressions of a PoCL 3.1 bug (its `loops` work-group
                // method): MDH_TEST_SEED=316950097 (matmul I 24, K 4, J 4;
                // groups [1, 3, 0], items [4, 4, 4], tiles of 32) and
                // 1259230580 (bmatmul) draw plans whose tiles exceed their
                // blocks. Their full-tile branch can never run; while it was
                // emitted with a loop in it, PoCL compiled the edge tiles'
                // loop to nothing (zeros). The emitter now leaves that branch
                // out (`accumulate` in `mdh-core/src/codegen/gpu/mod.rs`).
                gpu::family($name::SPEC, CASES, $budget, gpu::seed(stringify!($name)), max_items,
                    |plan, i, o, p, s| gpu::opencl_guarded::run(dev, $name::opencl::job, $name::SPEC, plan, i, o, p, s));
                gpu::warp_cases($name::SPEC, WARP_CASES, $budget, gpu::seed(stringify!($name)), max_items,
                    &mut |plan, i, o, p, s| $name::opencl::run_dyn(dev, plan, i, o, p, s));
                let kernel = mdh::reference::kernel($name::SPEC).unwrap();
                let info = mdh::reference::kernel_info(&kernel, mdh_core::codegen::c_expr::Dialect::OpenCl);
                gpu::default_cases($name::SPEC, DEFAULT_CASES, DEFAULT_BUDGET, gpu::seed(stringify!($name)),
                    gpu_limits(dev), info,
                    &mut |plan, i, o, p, s| $name::opencl::run_dyn(dev, plan.map(scalar_copies).as_ref(), i, o, p, s));
            }
        )*
    };
}

with_families!(opencl_tests);

/// Sources per family built with `-Werror`.
const WERROR_SOURCES: usize = 4;

macro_rules! opencl_sources {
    ($($name:ident: $budget:expr;)*) => {
        /// Every family's complete source (random sizes; the configured /
        /// default plan, then random plans) builds with `-Werror` and an
        /// empty build log: the generated C has no warning to hide.
        #[test]
        fn sources_build_without_warnings() {
            use mdh::gpu::GpuDevice as _;
            let Some(dev) = device() else { return };
            let max_items = dev.max_work_group_size().min(256);
            $(
                gpu::sources(
                    $name::SPEC,
                    WERROR_SOURCES,
                    $budget,
                    gpu::seed(stringify!($name)),
                    max_items,
                    |bound, plan| $name::opencl::job(bound, plan, dev.name(), dev.limits()),
                    |source, what| gpu::build_without_warnings(dev, source, what),
                );
            )*
        }
    };
}

with_families!(opencl_sources);

/// Regression: PW work-items (a reduction tree with barriers) in work-groups
/// that split a kept dimension. Tile loops whose trip count depended on the
/// group made PoCL turn a one-trip loop around the barriers into a branch on
/// the group id, and the kernel wrote 0 instead of 13 (barriers must be
/// reached by all work-items of a group, under the same control flow).
#[test]
fn conv2d_split_kept_groups_with_pw_items() {
    let Some(dev) = device() else { return };
    let plan = mdh::__rt::GpuPlan {
        groups: vec![1, 2, 1, 1],
        items: vec![1, 2, 1, 3],
        tile: vec![1, 2, 1, 6],
        ..mdh::__rt::GpuPlan::base(4, 2)
    };
    let (p, r, q, s) = (7, 1, 4, 13);
    let image = vec![1.0f32; (p + r - 1) * (q + s - 1)];
    let filter = vec![1.0f32; r * s];
    let mut out = vec![f32::NAN; p * q];
    let sizes = conv2d::Sizes {
        P: p,
        R: r,
        Q: q,
        S: s,
    };
    conv2d::opencl::run_with(dev, Some(&plan), &image, &filter, &mut out, sizes)
        .expect("the plan is valid");
    assert_eq!(out, vec![13.0; p * q]);
    // The same plan on random inputs, with inputs cached in local memory
    // too (barriers around the copies), blocked and strided.
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("conv2d split"));
    for local in [false, true] {
        for blocked in [false, true] {
            let plan = mdh::__rt::GpuPlan {
                local: vec![local, local],
                blocked,
                ..plan.clone()
            };
            gpu::one_case(
                conv2d::SPEC,
                &sizes.values(),
                Some(&plan),
                &mut rng,
                &mut |plan, i, o, pr, sz| conv2d::opencl::run_dyn(dev, plan, i, o, pr, sz),
            );
        }
    }
}

/// Regression: the split-kept plan of bmatmul at NB 32, I 3, K 1, J 4
/// (two and three work-groups along i and j, two PW work-items over one
/// index of k) with both inputs in local memory, vectors of 2, tiles
/// transposed and padded by 3 and 1, crashed PoCL: its compiler turned the
/// loop of the vector copy into B's transposed tile (vectors loaded whole,
/// stored element by element) into an endless one. Transposed tiles are
/// now copied element by element (`gpu_plan::copy_vector`).
#[test]
fn bmatmul_split_kept_vector_tiles() {
    let Some(dev) = device() else { return };
    let desc = KernelDesc::from_kernel(&mdh::reference::kernel(bmatmul::SPEC).unwrap());
    let sizes: Vec<usize> = desc
        .size_params
        .iter()
        .map(|p| match p.as_ref() {
            "NB" => 32,
            "I" => 3,
            "K" => 1,
            _ => 4,
        })
        .collect();
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("bmatmul split"));
    for transpose in [[true, true], [true, false], [false, true], [false, false]] {
        for blocked in [false, true] {
            let plan = mdh::__rt::GpuPlan {
                groups: vec![1, 3, 3, 1],
                items: vec![1, 1, 2, 2],
                tile: vec![1, 1, 2, 2],
                local: vec![true, true],
                blocked,
                vector: vec![2, 2],
                transpose: transpose.to_vec(),
                pad: vec![3, 1],
                ..mdh::__rt::GpuPlan::base(4, 2)
            };
            gpu::one_case(
                bmatmul::SPEC,
                &sizes,
                Some(&plan),
                &mut rng,
                &mut |plan, i, o, p, s| bmatmul::opencl::run_dyn(dev, plan, i, o, p, s),
            );
        }
    }
}

/// Regression: tiles larger than their blocks (matmul at I 24, K 4, J 4,
/// three work-groups asked along j, tiles of 32, a PW reduction across four
/// work-items). No tile is full, yet the full-tile branch was emitted with
/// its loops; PoCL 3.1 then compiled the edge tiles' loop to nothing and the
/// kernel wrote zeros. The emitter leaves out a branch that cannot run.
#[test]
fn tiles_larger_than_blocks() {
    let Some(dev) = device() else { return };
    let desc = KernelDesc::from_kernel(&mdh::reference::kernel(matmul::SPEC).unwrap());
    let sizes: Vec<usize> = desc
        .size_params
        .iter()
        .map(|p| if p == "I" { 24 } else { 4 })
        .collect();
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("tiles past blocks"));
    for blocked in [false, true] {
        let plan = mdh::__rt::GpuPlan {
            groups: vec![1, 3, 0],
            items: vec![4, 4, 4],
            tile: vec![32, 32, 32],
            blocked,
            ..mdh::__rt::GpuPlan::base(3, 2)
        };
        gpu::one_case(
            matmul::SPEC,
            &sizes,
            Some(&plan),
            &mut rng,
            &mut |plan, i, o, p, s| matmul::opencl::run_dyn(dev, plan, i, o, p, s),
        );
    }
}

/// OpenCL has no tensor cores: plans that ask for them (configs reject
/// `mma` in `opencl` entries; a plan handed to `run_with` may still carry
/// it) compute in FP32, at the FP32 tolerance.
#[test]
fn tensor_core_plans_compute_in_fp32() {
    let Some(dev) = device() else { return };
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("opencl mma"));
    gpu::mma_cases(
        matmul::SPEC,
        4,
        1 << 15,
        &mut rng,
        &mut |plan, i, o, p, s| matmul::opencl::run_dyn(dev, plan, i, o, p, s),
        |_| 0.0,
        None,
    );
}

/// Scans along lines longer than a chunk of the scan pass (64 elements):
/// the carry from chunk to chunk, with the default and random plans.
#[test]
fn long_scans() {
    let Some(dev) = device() else { return };
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("long scans"));
    gpu::long_scans(
        &mut rng,
        dev.max_work_group_size().min(256),
        &mut |plan, i, o, p, s| scan::opencl::run_dyn(dev, plan, i, o, p, s),
        &mut |plan, i, o, p, s| mbbs::opencl::run_dyn(dev, plan, i, o, p, s),
    );
}

/// Random sizes and plans of the shape of
/// `conv2d_split_kept_groups_with_pw_items` ([`gpu::split_kept_plan`]) for
/// the families with two or more kept dimensions and a PW dimension (the
/// random plans of the family tests rarely take that shape).
#[test]
fn split_kept_groups_with_pw_items() {
    let Some(dev) = device() else { return };
    let max_items = dev.max_work_group_size().min(256);
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("split kept groups"));
    macro_rules! split_cases {
        ($($name:ident),*) => {$(
            gpu::split_kept_cases($name::SPEC, 12, &mut rng, max_items, &mut |plan, i, o, p, s| {
                $name::opencl::run_dyn(dev, plan, i, o, p, s)
            });
        )*};
    }
    split_cases!(conv2d, matmul, bmatmul, mcc);
}

/// The register-tiled plan of matmul with vectors (`vload4`) under layouts
/// of the local tiles, on PoCL (see `gpu::matmul_vector_layouts`).
#[test]
fn matmul_vector_layouts() {
    let Some(dev) = device() else { return };
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("vector layouts"));
    gpu::matmul_vector_layouts(&mut rng, &mut |plan, i, o, p, s| {
        matmul::opencl::run_dyn(dev, plan, i, o, p, s)
    });
}

/// Local tiles beyond 48 KiB (CUDA's static limit; OpenCL declares them in
/// the kernel up to the device's local memory), on PoCL (see
/// `gpu::matmul_big_tiles_cases`).
#[test]
fn matmul_big_local_tiles() {
    let Some(dev) = device() else { return };
    if !local_mem_at_least(dev, 80 * 1024) {
        return;
    }
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("big local tiles"));
    gpu::matmul_big_tiles_cases(&mut rng, &mut |plan, i, o, p, s| {
        matmul::opencl::run_dyn(dev, plan, i, o, p, s)
    });
}

/// matmul's register-tiled plans in two pipeline stages (double-buffered
/// local tiles, plain copies), on PoCL (see `gpu::matmul_stages_cases`).
#[test]
fn matmul_pipeline_stages() {
    let Some(dev) = device() else { return };
    if !local_mem_at_least(dev, 160 * 1024) {
        return;
    }
    let mut rng = mdh_examples::check::Rng::new(gpu::seed("pipeline stages"));
    gpu::matmul_stages_cases(&mut rng, &mut |plan, i, o, p, s| {
        matmul::opencl::run_dyn(dev, plan, i, o, p, s)
    });
}

/// Whether `dev` has `bytes` of local memory, else the test is skipped
/// (said on stderr), or fails where `MDH_REQUIRE_LOCAL_MEM=1` (set by
/// scripts/test-all.sh together with PoCL's `POCL_CPU_LOCAL_MEM_SIZE`).
fn local_mem_at_least(dev: &mdh::opencl::Device, bytes: u64) -> bool {
    let has = dev.local_mem_bytes();
    if has < bytes {
        gpu::skip_or_fail(
            "MDH_REQUIRE_LOCAL_MEM",
            format!("the device has {has} bytes of local memory, the test needs {bytes} (PoCL: set POCL_CPU_LOCAL_MEM_SIZE)"),
        );
    }
    has >= bytes
}

/// The guards of `gpu::opencl_guarded` see a store past an output: map's
/// job with every store of its output moved one element on fails, naming
/// the guard bytes it wrote.
#[test]
fn guards_see_a_store_past_an_output() {
    let Some(dev) = device() else { return };
    fn shifted(
        bound: &mdh_core::desc::Bound,
        plan: Option<&mdh::__rt::GpuPlan>,
        name: &str,
        limits: mdh::gpu::DeviceLimits,
    ) -> Result<Option<mdh::gpu::Job>, mdh::Error> {
        let mut job = map::opencl::job(bound, plan, name, limits)?;
        if let Some(j) = job.as_mut() {
            assert!(j.source.contains("out0[OUT0_0_BASE + "), "{}", j.source);
            j.source = j
                .source
                .replace("out0[OUT0_0_BASE + ", "out0[1 + OUT0_0_BASE + ");
        }
        Ok(job)
    }
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let inputs = [x.clone().into(), x.into()];
    let mut outputs = [vec![0.0f32; n].into()];
    let params = [mdh::reference::Value::F32(2.0)];
    let e = gpu::opencl_guarded::run(
        dev,
        shifted,
        map::SPEC,
        None,
        &inputs,
        &mut outputs,
        &params,
        &[n],
    )
    .expect_err("a store past the output is seen");
    assert!(
        e.to_string().contains(
            "wrote outside output #0 (4000 bytes), at byte offsets [4000, 4001, 4002, 4003]"
        ),
        "{e}"
    );
    // The same job unshifted passes.
    gpu::opencl_guarded::run(
        dev,
        map::opencl::job,
        map::SPEC,
        None,
        &inputs,
        &mut outputs,
        &params,
        &[n],
    )
    .unwrap();
}

/// The kernels of stages: `run` launches each stage in order on the
/// device, intermediates on the device.
#[test]
fn stages_run() {
    let Some(dev) = device() else { return };
    gpu::stages::cases(gpu::stages::Runs {
        softmax: &|x, y, s| softmax::opencl::run(dev, &x[0], y, s),
        dense: &|x, y, s| matmul_bias_relu::opencl::run(dev, &x[0], &x[1], &x[2], y, s),
        layernorm: &|x, y, eps, s| layernorm::opencl::run(dev, &x[0], &x[1], &x[2], y, eps, s),
        attention: &|x, o, scale, s| attention::opencl::run(dev, &x[0], &x[1], &x[2], o, scale, s),
    });
}

/// The fused products (`gpu::stages::fused_cases`) through the fused
/// module's `launch_with`, with plans that store in `mdh_main` and in
/// `mdh_combine`.
#[test]
fn fused_products_run() {
    if let Some(dev) = device() {
        fused_device_runs!(dev, opencl);
    }
}
