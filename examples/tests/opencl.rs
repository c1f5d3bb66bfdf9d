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

use std::sync::OnceLock;

use mdh::opencl::Device;
use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_core::desc::KernelDesc;
use mdh_core::gpu_plan::{can_cache_locally, GpuPlan};
use mdh_core::spec::ScalarType;
use mdh_examples::check::{self, Rng};
use mdh_examples::*;

fn device() -> Option<&'static Device> {
    static DEV: OnceLock<Option<Device>> = OnceLock::new();
    DEV.get_or_init(|| match Device::first() {
        Ok(d) => Some(d),
        Err(e) => {
            assert!(
                std::env::var("MDH_REQUIRE_OPENCL").as_deref() != Ok("1"),
                "MDH_REQUIRE_OPENCL=1 but there is no OpenCL device: {e}"
            );
            eprintln!("skipping the OpenCL tests: {e}");
            None
        }
    })
    .as_ref()
}

type RunDyn = fn(
    &Device,
    Option<&GpuPlan>,
    &[Buffer],
    &mut [Buffer],
    &[Value],
    &[usize],
) -> Result<(), Error>;

/// Random values of type `t` (floats in [0, 1): reductions of one sign, see
/// `check`'s tolerances; integers small, so that sums stay exact).
fn random_buffer(rng: &mut Rng, t: ScalarType, n: usize) -> Buffer {
    match t {
        ScalarType::F32 => Buffer::from(rng.f32s(n)),
        ScalarType::F64 => Buffer::from((0..n).map(|_| rng.unit() as f64).collect::<Vec<_>>()),
        ScalarType::I32 => Buffer::from(rng.i32s(n, -8, 8)),
        ScalarType::U32 => Buffer::from(rng.u32s(n, 8)),
        ScalarType::I64 => Buffer::from(
            (0..n)
                .map(|_| rng.below(64) as i64 - 32)
                .collect::<Vec<_>>(),
        ),
        ScalarType::U64 => Buffer::from((0..n).map(|_| rng.below(64) as u64).collect::<Vec<_>>()),
        ScalarType::Bool => Buffer::from((0..n).map(|_| rng.below(2) == 1).collect::<Vec<_>>()),
        other => {
            let mut b = Buffer::zeros(other, n);
            for i in 0..n {
                let v = Value::U8(rng.below(16) as u8)
                    .cast(other)
                    .unwrap_or(Value::U8(0));
                b.set(i, v);
            }
            b
        }
    }
}

/// An output's initial contents: a sentinel that no kernel computes, so a
/// forgotten element shows.
fn sentinel(t: ScalarType, n: usize) -> Buffer {
    let mut b = Buffer::zeros(t, n);
    let v = match t {
        ScalarType::F32 => Value::F32(f32::NAN),
        ScalarType::F64 => Value::F64(f64::NAN),
        other => Value::I64(-77).cast(other).unwrap_or(Value::I64(0)),
    };
    for i in 0..n {
        b.set(i, v);
    }
    b
}

fn random_param(rng: &mut Rng, t: ScalarType) -> Value {
    match t {
        ScalarType::F32 => Value::F32(rng.unit()),
        ScalarType::F64 => Value::F64(rng.unit() as f64),
        other => Value::U8(1 + rng.below(20) as u8)
            .cast(other)
            .unwrap_or(Value::U8(1)),
    }
}

/// A random valid plan that fits the device.
fn random_plan(rng: &mut Rng, desc: &KernelDesc, dev: &Device) -> GpuPlan {
    let d = desc.dims.len();
    let pick = |rng: &mut Rng, xs: &[usize]| xs[rng.below(xs.len())];
    loop {
        let items: Vec<usize> = (0..d).map(|_| pick(rng, &[1, 1, 2, 3, 4, 8, 16])).collect();
        let tile = items
            .iter()
            .map(|&w| w * pick(rng, &[1, 1, 2, 3, 5]))
            .collect();
        let plan = GpuPlan {
            groups: (0..d).map(|_| pick(rng, &[0, 0, 1, 2, 3, 7])).collect(),
            items,
            tile,
            local: (0..desc.inputs.len())
                .map(|b| can_cache_locally(desc, b) && rng.below(2) == 1)
                .collect(),
            blocked: rng.below(2) == 1,
        };
        let threads: usize = plan.items.iter().product();
        if plan.validate(desc).is_ok() && threads <= dev.max_work_group_size().min(256) {
            return plan;
        }
    }
}

/// Random sizes with at most `budget` points in the index space.
fn random_sizes(rng: &mut Rng, desc: &KernelDesc, budget: usize) -> Vec<usize> {
    let n = desc.size_params.len();
    loop {
        let sizes: Vec<usize> = (0..n)
            .map(|_| match rng.below(10) {
                0 => 0,
                1..=5 => [1, 2, 3, 5, 7, 13, 31][rng.below(7)],
                _ => 1 + rng.below(40),
            })
            .collect();
        let points = desc
            .dims
            .iter()
            .map(|c| KernelDesc::eval_size(c, &sizes))
            .try_fold(1usize, |a, e| a.checked_mul(e?));
        if points.is_some_and(|p| p <= budget) {
            return sizes;
        }
    }
}

/// `cases` random sizes × random plans of one family through OpenCL.
fn family(spec: &str, run: RunDyn, cases: usize, budget: usize, seed: u64) {
    let Some(dev) = device() else { return };
    let kernel = mdh::reference::kernel(spec).expect("the example's spec checks");
    let desc = KernelDesc::from_kernel(&kernel);
    let mut rng = Rng::new(seed);
    for case in 0..cases {
        let sizes = random_sizes(&mut rng, &desc, budget);
        // The first case runs the configured / default plan.
        let plan = (case > 0).then(|| random_plan(&mut rng, &desc, dev));
        let shape_len = |b: &mdh_core::desc::BufDesc| {
            b.shape
                .iter()
                .map(|c| KernelDesc::eval_size(c, &sizes).unwrap_or(0))
                .product::<usize>()
        };
        let inputs: Vec<Buffer> = kernel
            .inputs
            .iter()
            .zip(desc.inputs.iter())
            .map(|(b, d)| random_buffer(&mut rng, b.ty, shape_len(d)))
            .collect();
        let init: Vec<Buffer> = kernel
            .outputs
            .iter()
            .zip(desc.outputs.iter())
            .map(|(b, d)| sentinel(b.ty, shape_len(d)))
            .collect();
        let params: Vec<Value> = kernel
            .params
            .iter()
            .map(|p| random_param(&mut rng, p.ty))
            .collect();
        let mut got = init.clone();
        let result = run(dev, plan.as_ref(), &inputs, &mut got, &params, &sizes);
        let points: usize = desc
            .dims
            .iter()
            .map(|c| KernelDesc::eval_size(c, &sizes).unwrap_or(0))
            .product();
        if let Err(msg) = check::verify(
            spec,
            &sizes,
            &inputs,
            &params,
            init,
            result,
            &got,
            check::sum_rtol(points),
        ) {
            panic!(
                "kernel `{}`, sizes {sizes:?}, plan {plan:?}: {msg}",
                kernel.name
            );
        }
    }
}

const CASES: usize = 24;

macro_rules! families {
    ($($name:ident: $budget:expr;)*) => {
        $(
            #[test]
            fn $name() {
                family($name::SPEC, $name::opencl::run_dyn, CASES, $budget, line!() as u64);
            }
        )*
    };
}

families! {
    dot: 4096;
    matvec: 4096;
    matmul: 4096;
    matmul_t: 4096;
    bmatmul: 4096;
    conv2d: 4096;
    mcc: 4096;
    mcc_capsule: 4096;
    ccsdt: 4096;
    jacobi1d: 4096;
    jacobi2d: 4096;
    jacobi3d: 4096;
    prl: 4096;
    histo: 4096;
    genhisto: 4096;
    map: 4096;
    reduce: 4096;
    reduce2: 4096;
    scan: 4096;
    mbbs: 4096;
    mandelbrot: 1024;
}
