//! What the GPU tests share (`tests/opencl.rs`, `tests/cuda.rs`): the list
//! of example families, random sizes (1, primes, 0 sometimes), random valid
//! plans, random inputs and params, and the loop that runs a family's cases
//! through a back end and compares every result with the reference
//! interpreter.

// tests/cuda.rs and tests/random_kernels.rs run CUDA kernels on the CPU;
// the other tests that share this module do not.
#[allow(dead_code)]
pub mod cuda_cpu;
#[allow(dead_code)] // tests/cuda.rs shares this module but not OpenCL
pub mod opencl_guarded;
#[allow(dead_code)] // tests/opencl.rs and tests/cuda.rs only
pub mod stages;

use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_core::desc::{Bound, BufDesc, KernelDesc};
use mdh_core::gpu_plan::{can_cache_locally, mma_dims, GpuPlan, Mma, MmaDims};
use mdh_core::spec::ScalarType;
use mdh_examples::check::{self, Rng};

/// The fused products' runs (`stages::FusedRuns`) on device `$dev` of
/// backend `$b` (`opencl`, `cuda`): the inputs uploaded, the fused
/// module's `launch_with`, the output read back.
macro_rules! fused_device_runs {
    ($dev:expr, $b:ident) => {{
        use dense_residual::fused::dense_residual_product as residual;
        use dense_residual::stages::dense_residual_residual as residual_epilogue;
        use matmul_bias_relu::fused::matmul_bias_relu_product as dense;
        use matmul_bias_relu::stages::matmul_bias_relu_epilogue as dense_epilogue;
        let dev = $dev;
        gpu::stages::fused_cases(gpu::stages::FusedRuns {
            dense: &|plan, x, y, _, [i, j, k]| {
                let up = |v: &Vec<f32>| dev.buffer_from(v);
                let mut dy = dev.buffer_from(y)?;
                let s = dense::Sizes { I: i, J: j, K: k };
                let es = dense_epilogue::Sizes { I: i, J: j };
                let (a, b, bias) = (up(&x[0])?, up(&x[1])?, up(&x[2])?);
                dense::$b::launch_with(dev, Some(plan), &a, &b, &mut dy, s, &bias, es)?;
                dev.read(&dy, y)
            },
            residual: &|plan, x, y, alpha, [i, j, k]| {
                let up = |v: &Vec<f32>| dev.buffer_from(v);
                let mut dy = dev.buffer_from(y)?;
                let s = residual::Sizes { I: i, J: j, K: k };
                let es = residual_epilogue::Sizes { I: i, J: j };
                let (a, b, r) = (up(&x[0])?, up(&x[1])?, up(&x[2])?);
                residual::$b::launch_with(dev, Some(plan), &a, &b, &mut dy, alpha, s, &r, es)?;
                dev.read(&dy, y)
            },
        });
    }};
}

/// Calls `$m! { family: budget; … }` with every example family and the most
/// points of its index space a random case may have.
macro_rules! with_families {
    ($m:ident) => {
        $m! {
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
            map_half: 4096;
            matvec_f16: 4096;
            matmul_bf16: 4096;
            scores_f16: 4096;
        }
    };
}

/// Whether a missing device fails the test (`MDH_REQUIRE_<what>=1`, set by
/// `scripts/test-all.sh`) instead of skipping it with a note.
pub fn skip_or_fail(var: &str, why: impl std::fmt::Display) {
    assert!(
        std::env::var(var).as_deref() != Ok("1"),
        "{var}=1 but {why}"
    );
    eprintln!("skipping: {why} (set {var}=1 to make this a failure)");
}

/// Random values of type `t` (floats in [0, 1): reductions of one sign, see
/// `check`'s tolerances; integers small, so that sums stay exact).
pub fn random_buffer(rng: &mut Rng, t: ScalarType, n: usize) -> Buffer {
    match t {
        ScalarType::F32 => Buffer::from(rng.f32s(n)),
        ScalarType::F64 => Buffer::from((0..n).map(|_| rng.unit() as f64).collect::<Vec<_>>()),
        ScalarType::F16 | ScalarType::Bf16 => {
            let mut b = Buffer::zeros(t, n);
            for i in 0..n {
                b.set(i, Value::F32(rng.unit()).cast(t).unwrap_or(Value::F32(0.0)));
            }
            b
        }
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
pub fn sentinel(t: ScalarType, n: usize) -> Buffer {
    let mut b = Buffer::zeros(t, n);
    let v = match t {
        ScalarType::F32 => Value::F32(f32::NAN),
        ScalarType::F64 => Value::F64(f64::NAN),
        ScalarType::F16 | ScalarType::Bf16 => {
            Value::F32(f32::NAN).cast(t).unwrap_or(Value::F32(0.0))
        }
        // Either value can be computed: `true` shows a forgotten element
        // half the time.
        ScalarType::Bool => Value::Bool(true),
        other => Value::I64(-77).cast(other).unwrap_or(Value::I64(0)),
    };
    for i in 0..n {
        b.set(i, v);
    }
    b
}

pub fn random_param(rng: &mut Rng, t: ScalarType) -> Value {
    match t {
        ScalarType::F32 => Value::F32(rng.unit()),
        ScalarType::F64 => Value::F64(rng.unit() as f64),
        other => Value::U8(1 + rng.below(20) as u8)
            .cast(other)
            .unwrap_or(Value::U8(1)),
    }
}

/// A random valid plan for `sizes` with at most `max_items` work-items per
/// work-group. A third of the plans make the tile of each dimension split
/// across 2 to 7 work-groups exactly the group's block (as `groups` 0 does
/// anyway), half of those with one point per work-item: tile loops of one
/// trip per group inside loops of several, around the barriers of the
/// reduction tree and the local copies, where PoCL turned such a loop
/// into a branch on the group id (see `conv2d_split_kept_groups_with_pw_items`
/// in tests/opencl.rs). Half of the other plans ask for vectors of 2 or 4
/// elements with tiles of 4 or 8 points per work-item (so that fragments
/// can load them); the local tiles are transposed or padded at random
/// ([`random_layout`]), and in one or two pipeline stages.
pub fn random_plan(rng: &mut Rng, desc: &KernelDesc, max_items: usize, sizes: &[usize]) -> GpuPlan {
    let d = desc.dims.len();
    let pick = |rng: &mut Rng, xs: &[usize]| xs[rng.below(xs.len())];
    let extents: Vec<usize> = desc
        .dims
        .iter()
        .map(|c| KernelDesc::eval_size(c, sizes).unwrap_or(0).max(1))
        .collect();
    loop {
        let groups: Vec<usize> = (0..d).map(|_| pick(rng, &[0, 0, 1, 2, 3, 7])).collect();
        let mut items: Vec<usize> = (0..d).map(|_| pick(rng, &[1, 1, 2, 3, 4, 8, 16])).collect();
        let vectors = rng.below(2) == 0;
        let factors: &[usize] = if vectors { &[4, 8] } else { &[1, 1, 2, 3, 5] };
        let mut tile: Vec<usize> = items.iter().map(|&w| w * pick(rng, factors)).collect();
        if !vectors && rng.below(3) == 0 {
            let one_point = rng.below(2) == 0;
            for x in 0..d {
                if groups[x] >= 2 {
                    tile[x] = extents[x].div_ceil(groups[x]);
                }
                items[x] = if one_point {
                    tile[x]
                } else {
                    items[x].min(tile[x])
                };
            }
        }
        let plan = with_random_memory(rng, desc, groups, items, tile, vectors);
        let threads: usize = plan.items.iter().product();
        if plan.validate(desc).is_ok() && threads <= max_items {
            return plan;
        }
    }
}

/// A random plan (of [`random_plan`]) with a warp layer: 32 lanes split
/// over the kept dimensions in powers of two (over fewer along kept
/// dimensions when PW dimensions take 2 or 4 of them), 1, 2 or 4 warps along
/// each kept dimension, work-items = lanes × warps, tiles of 1, 2 or 4
/// points per work-item. `None` for a kernel without kept dimensions.
pub fn warp_plan(
    rng: &mut Rng,
    desc: &KernelDesc,
    max_items: usize,
    sizes: &[usize],
) -> Option<GpuPlan> {
    let kinds = &desc.kinds;
    let kept: Vec<usize> = (0..kinds.len()).filter(|&x| kinds[x].is_kept()).collect();
    let pw: Vec<usize> = (0..kinds.len()).filter(|&x| !kinds[x].is_kept()).collect();
    if kept.is_empty() {
        return None;
    }
    loop {
        let mut plan = random_plan(rng, desc, max_items, sizes);
        let mut lanes = vec![1; kinds.len()];
        if let Some(&x) = pw.get(rng.below(pw.len() + 1)) {
            lanes[x] = [1, 2, 4][rng.below(3)];
        }
        let mut left = 32 / lanes.iter().product::<usize>();
        while left > 1 {
            lanes[kept[rng.below(kept.len())]] *= 2;
            left /= 2;
        }
        let warps: Vec<usize> = (0..kinds.len())
            .map(|x| {
                if kinds[x].is_kept() {
                    [1, 1, 2, 4][rng.below(4)]
                } else {
                    1
                }
            })
            .collect();
        for x in 0..kinds.len() {
            plan.items[x] = lanes[x] * warps[x];
            plan.tile[x] = plan.items[x] * [1, 2, 4][rng.below(3)];
        }
        plan.warps = warps;
        let threads: usize = plan.items.iter().product();
        if plan.validate(desc).is_ok() && threads <= max_items {
            return Some(plan);
        }
    }
}

/// The plan of `groups`, `items` and `tile` with its memory at random:
/// local tiles where they can be, their layout ([`random_layout`], vectors
/// where `vectors`), blocked or strided work-items, one or two stages (no
/// tensor cores, no warp layer).
fn with_random_memory(
    rng: &mut Rng,
    desc: &KernelDesc,
    groups: Vec<usize>,
    items: Vec<usize>,
    tile: Vec<usize>,
    vectors: bool,
) -> GpuPlan {
    let local: Vec<bool> = (0..desc.inputs.len())
        .map(|b| can_cache_locally(desc, b) && rng.below(2) == 1)
        .collect();
    let (vector, transpose, pad) = random_layout(rng, &local, vectors);
    GpuPlan {
        groups,
        items,
        tile,
        local,
        blocked: rng.below(2) == 1,
        vector,
        transpose,
        pad,
        stages: 1 + rng.below(2),
        ..GpuPlan::base(desc.dims.len(), desc.inputs.len())
    }
}

/// Random layout fields of a plan whose inputs `local` are cached in local
/// memory: vector widths of 2 or 4 (1 without `vectors`), and for cached
/// inputs a transposed tile (a third of them) and padding of 0, 1, 3 or 4
/// elements.
pub fn random_layout(
    rng: &mut Rng,
    local: &[bool],
    vectors: bool,
) -> (Vec<usize>, Vec<bool>, Vec<usize>) {
    let vector = local
        .iter()
        .map(|_| if vectors { [2, 4][rng.below(2)] } else { 1 })
        .collect();
    let transpose = local.iter().map(|&l| l && rng.below(3) == 0).collect();
    let pad = local
        .iter()
        .map(|&l| if l { [0, 0, 1, 3, 4][rng.below(5)] } else { 0 })
        .collect();
    (vector, transpose, pad)
}

/// A random plan of the shape that PoCL miscompiled before tile loops had
/// uniform trip counts (see `conv2d_split_kept_groups_with_pw_items` in
/// tests/opencl.rs): the outer kept dimension walked in tiles of 1 by one
/// work-group (several trips), every other kept dimension split across 2 or
/// 3 work-groups with one tile per group and one point per work-item (one
/// trip), PW dimensions on 2 to 4 work-items (a reduction tree with
/// barriers); local tiles, layouts and stages at random. `None` when the
/// kernel has no such shape at `sizes`.
pub fn split_kept_plan(
    rng: &mut Rng,
    desc: &KernelDesc,
    max_items: usize,
    sizes: &[usize],
) -> Option<GpuPlan> {
    let d = desc.dims.len();
    let kept: Vec<usize> = (0..d).filter(|&x| desc.kinds[x].is_kept()).collect();
    let extent = |x: usize| KernelDesc::eval_size(&desc.dims[x], sizes).unwrap_or(0);
    let (&outer, inner) = kept.split_first()?;
    if inner.is_empty() || kept.len() == d || extent(outer) < 2 {
        return None;
    }
    let wide = rng.below(2) == 0;
    let mut plan = with_random_memory(rng, desc, vec![1; d], vec![1; d], vec![1; d], wide);
    for x in 0..d {
        if x == outer {
            continue;
        }
        if desc.kinds[x].is_kept() {
            plan.groups[x] = 2 + rng.below(2);
            plan.tile[x] = extent(x).max(1).div_ceil(plan.groups[x]);
            plan.items[x] = plan.tile[x];
        } else {
            plan.items[x] = 2 + rng.below(3);
            plan.tile[x] = plan.items[x] * (1 + rng.below(2));
        }
    }
    let threads: usize = plan.items.iter().product();
    (plan.validate(desc).is_ok() && threads <= max_items).then_some(plan)
}

/// `cases` random sizes with plans of [`split_kept_plan`] of kernel `spec`
/// through `run`, each compared with the reference interpreter.
pub fn split_kept_cases(
    spec: &str,
    cases: usize,
    rng: &mut Rng,
    max_items: usize,
    run: &mut RunDyn,
) {
    let kernel = mdh::reference::kernel(spec).expect("the example's spec checks");
    let desc = KernelDesc::from_kernel(&kernel);
    let mut done = 0;
    for _ in 0..10_000 {
        if done == cases {
            return;
        }
        let sizes = random_sizes(rng, &desc, 4096, false);
        if let Some(plan) = split_kept_plan(rng, &desc, max_items, &sizes) {
            one_case(spec, &sizes, Some(&plan), rng, run);
            done += 1;
        }
    }
    panic!(
        "kernel `{}`: too few sizes fit the shape of split_kept_plan",
        kernel.name
    );
}

/// Random sizes with at most `budget` points in the index space (empty
/// dimensions counted as 1); 0 only when `zeros`.
pub fn random_sizes(rng: &mut Rng, desc: &KernelDesc, budget: usize, zeros: bool) -> Vec<usize> {
    let n = desc.size_params.len();
    loop {
        let sizes: Vec<usize> = (0..n)
            .map(|_| match rng.below(10) {
                0 if zeros => 0,
                0..=5 => [1, 2, 3, 5, 7, 13, 31][rng.below(7)],
                _ => 1 + rng.below(40),
            })
            .collect();
        if within(desc, &sizes, budget) {
            return sizes;
        }
    }
}

/// Whether the index space at `sizes` has at most `budget` points (empty
/// dimensions counted as 1: a zero must not let the others grow).
fn within(desc: &KernelDesc, sizes: &[usize], budget: usize) -> bool {
    desc.dims
        .iter()
        .map(|c| KernelDesc::eval_size(c, sizes))
        .try_fold(1usize, |a, e| a.checked_mul(e?.max(1)))
        .is_some_and(|p| p <= budget)
}

/// The sizes of random case `case`: multiples of 4 for every other one
/// ([`round_sizes`]), else [`random_sizes`] (0 only when `zeros`).
fn case_sizes(
    rng: &mut Rng,
    desc: &KernelDesc,
    budget: usize,
    case: usize,
    zeros: bool,
) -> Vec<usize> {
    if case % 2 == 1 {
        round_sizes(rng, desc, budget)
    } else {
        random_sizes(rng, desc, budget, zeros)
    }
}

/// Random sizes that are multiples of 4 (where rows of 4 elements are
/// aligned, so that plans asking for vectors get them), with at most
/// `budget` points in the index space.
pub fn round_sizes(rng: &mut Rng, desc: &KernelDesc, budget: usize) -> Vec<usize> {
    for _ in 0..1000 {
        let sizes: Vec<usize> = (0..desc.size_params.len())
            .map(|_| 4 * (1 + rng.below(6)))
            .collect();
        if within(desc, &sizes, budget) {
            return sizes;
        }
    }
    // Too many dimensions for multiples of 4 within the budget.
    random_sizes(rng, desc, budget, false)
}

/// The elements of a buffer of the kernel at `sizes`.
pub fn buffer_len(b: &BufDesc, sizes: &[usize]) -> usize {
    b.shape
        .iter()
        .map(|c| KernelDesc::eval_size(c, sizes).unwrap_or(0))
        .product()
}

/// The seed of the random cases named `name` (a family, a test): from its
/// name and this run's seed, which is `MDH_TEST_SEED` or a new one per run
/// (as proptest draws new cases per run), said on stderr (shown with a
/// failing test's output) with how to draw the same cases again.
pub fn seed(name: &str) -> u64 {
    let run = run_seed();
    eprintln!("{name}: random cases of MDH_TEST_SEED={run} (set it to draw them again)");
    name.bytes().fold(0xcbf2_9ce4_8422_2325 ^ run, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// `MDH_TEST_SEED`, else one drawn from the clock and the process id,
/// once per process.
fn run_seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| match std::env::var("MDH_TEST_SEED") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("MDH_TEST_SEED={v:?} is not a number")),
        Err(_) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            Rng::new(now ^ u64::from(std::process::id())).next_u64()
        }
    })
}

/// A back end: like `NAME::opencl::run_dyn` without the device.
pub type RunDyn<'a> = dyn FnMut(Option<&GpuPlan>, &[Buffer], &mut [Buffer], &[Value], &[usize]) -> Result<(), Error>
    + 'a;

/// `cases` random sizes × random plans (of at most `max_items` work-items
/// per work-group) of one family through `run`, each compared with the
/// reference interpreter. The first case runs the configured / default plan.
pub fn family(
    spec: &str,
    cases: usize,
    budget: usize,
    seed: u64,
    max_items: usize,
    mut run: impl FnMut(
        Option<&GpuPlan>,
        &[Buffer],
        &mut [Buffer],
        &[Value],
        &[usize],
    ) -> Result<(), Error>,
) {
    let kernel = mdh::reference::kernel(spec).expect("the example's spec checks");
    let desc = KernelDesc::from_kernel(&kernel);
    let mut rng = Rng::new(seed);
    for case in 0..cases {
        let sizes = case_sizes(&mut rng, &desc, budget, case, true);
        let plan = (case > 0).then(|| random_plan(&mut rng, &desc, max_items, &sizes));
        one_case(spec, &sizes, plan.as_ref(), &mut rng, &mut run);
    }
}

/// `cases` random sizes (as [`family`]'s) with plans of [`warp_plan`] of
/// one family through `run`, each compared with the reference interpreter
/// (nothing for a family without kept dimensions).
pub fn warp_cases(
    spec: &str,
    cases: usize,
    budget: usize,
    seed: u64,
    max_items: usize,
    run: &mut RunDyn,
) {
    let kernel = mdh::reference::kernel(spec).expect("the example's spec checks");
    let desc = KernelDesc::from_kernel(&kernel);
    let mut rng = Rng::new(seed ^ 0x3a7f);
    for case in 0..cases {
        let sizes = case_sizes(&mut rng, &desc, budget, case, true);
        let Some(plan) = warp_plan(&mut rng, &desc, max_items, &sizes) else {
            return;
        };
        one_case(spec, &sizes, Some(&plan), &mut rng, run);
    }
}

/// One call of a kernel at `sizes` with `plan` (`None`: the configured /
/// default plan) on random inputs and params through `run`, compared with
/// the reference interpreter; panics with the case on a mismatch.
pub fn one_case(
    spec: &str,
    sizes: &[usize],
    plan: Option<&GpuPlan>,
    rng: &mut Rng,
    run: &mut RunDyn,
) {
    one_case_within(spec, sizes, plan, rng, run, 0.0);
}

/// [`one_case`] with `extra` added to the relative tolerance of floats
/// (a plan's own precision: [`mma_rtol`]).
pub fn one_case_within(
    spec: &str,
    sizes: &[usize],
    plan: Option<&GpuPlan>,
    rng: &mut Rng,
    run: &mut RunDyn,
    extra: f64,
) {
    let kernel = mdh::reference::kernel(spec).expect("the example's spec checks");
    let desc = KernelDesc::from_kernel(&kernel);
    let inputs: Vec<Buffer> = kernel
        .inputs
        .iter()
        .zip(desc.inputs.iter())
        .map(|(b, d)| random_buffer(rng, b.ty, buffer_len(d, sizes)))
        .collect();
    let init: Vec<Buffer> = kernel
        .outputs
        .iter()
        .zip(desc.outputs.iter())
        .map(|(b, d)| sentinel(b.ty, buffer_len(d, sizes)))
        .collect();
    let params: Vec<Value> = kernel
        .params
        .iter()
        .map(|p| random_param(rng, p.ty))
        .collect();
    let mut got = init.clone();
    let result = run(plan, &inputs, &mut got, &params, sizes);
    let points: usize = desc
        .dims
        .iter()
        .map(|c| KernelDesc::eval_size(c, sizes).unwrap_or(0))
        .product();
    if let Err(msg) = check::verify(
        spec,
        sizes,
        &inputs,
        &params,
        init,
        result,
        &got,
        check::sum_rtol(points).plus(extra),
    ) {
        panic!(
            "kernel `{}`, sizes {sizes:?}, plan {plan:?}: {msg}",
            kernel.name
        );
    }
}

/// `count` complete sources of a family (random nonzero sizes; the
/// configured / default plan, then random plans of at most `max_items`
/// work-items per work-group) from `job` (a back end's `NAME::…::job` for
/// one device), each handed to `check` with a description of its case.
pub fn sources(
    spec: &str,
    count: usize,
    budget: usize,
    seed: u64,
    max_items: usize,
    mut job: impl FnMut(&Bound, Option<&GpuPlan>) -> Result<Option<mdh::gpu::Job>, Error>,
    mut check: impl FnMut(&str, &str),
) {
    let kernel = mdh::reference::kernel(spec).expect("the example's spec checks");
    let desc = KernelDesc::from_kernel(&kernel);
    let mut rng = Rng::new(seed ^ 0x4e56);
    for case in 0..count {
        let sizes = case_sizes(&mut rng, &desc, budget, case, false);
        let plan = (case > 0).then(|| random_plan(&mut rng, &desc, max_items, &sizes));
        let len =
            |b: &[BufDesc]| -> Vec<usize> { b.iter().map(|d| buffer_len(d, &sizes)).collect() };
        let bound = desc
            .bind(&sizes, &len(&desc.inputs[..]), &len(&desc.outputs[..]))
            .expect("sizes fit");
        let what = format!("kernel `{}`, sizes {sizes:?}, plan {plan:?}", kernel.name);
        match job(&bound, plan.as_ref()) {
            Ok(Some(job)) => check(&job.source, &what),
            Ok(None) => {}
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

/// `scan` and `mbbs` along lines of several chunks of the scan pass (of 64
/// elements per work-group step, 256 per work-group: 1000 and 1024
/// elements, 300 rows), with the default plan and random plans of at most
/// `max_items` work-items, through their back ends `scan` and `mbbs`.
pub fn long_scans<'a>(
    rng: &mut Rng,
    max_items: usize,
    scan: &mut RunDyn<'a>,
    mbbs: &mut RunDyn<'a>,
) {
    for (spec, sizes) in [
        (mdh_example_kernels::scan::SPEC, vec![1000]),
        (mdh_example_kernels::scan::SPEC, vec![1024]),
        (mdh_example_kernels::mbbs::SPEC, vec![300, 7]),
    ] {
        let run = if spec == mdh_example_kernels::scan::SPEC {
            &mut *scan
        } else {
            &mut *mbbs
        };
        let desc = KernelDesc::from_kernel(&mdh::reference::kernel(spec).expect("checks"));
        for case in 0..3 {
            let plan = (case > 0).then(|| random_plan(rng, &desc, max_items, &sizes));
            one_case(spec, &sizes, plan.as_ref(), rng, run);
        }
    }
}

/// The first OpenCL device for the OpenCL tests, or `None` after saying
/// why (a failure under `MDH_REQUIRE_OPENCL=1`).
#[allow(dead_code)] // tests/cuda.rs shares this module but not the device
pub fn opencl_device() -> Option<&'static mdh::opencl::Device> {
    static DEV: std::sync::OnceLock<Option<mdh::opencl::Device>> = std::sync::OnceLock::new();
    DEV.get_or_init(|| match mdh::opencl::Device::first() {
        Ok(d) => Some(d),
        Err(e) => {
            skip_or_fail(
                "MDH_REQUIRE_OPENCL",
                format!("there is no OpenCL device: {e}"),
            );
            None
        }
    })
    .as_ref()
}

/// Builds an OpenCL `source` with `-Werror` on `dev` and checks that its
/// build log is empty: the generated C has no warning to hide.
#[allow(dead_code)] // tests/cuda.rs shares this module but not OpenCL
pub fn build_without_warnings(dev: &mdh::opencl::Device, source: &str, what: &str) {
    let program = dev
        .program(source, "-Werror")
        .unwrap_or_else(|e| panic!("{what}: {e}\n{source}"));
    assert!(
        program.build_log().is_empty(),
        "{what}: the build log is not empty:\n{}\n{source}",
        program.build_log()
    );
}

/// The CPU execution's arguments of buffers held as (bytes, C element
/// type), in order.
#[allow(dead_code)] // tests/opencl.rs shares this module but not cuda_sim
pub fn sim_buffers<'a>(
    data: &'a mut [(Vec<u8>, &'static str)],
) -> impl Iterator<Item = mdh_gpu::cuda_sim::SimArg<'a>> {
    data.iter_mut()
        .map(|(bytes, elem)| mdh_gpu::cuda_sim::SimArg::Buf {
            data: bytes.as_mut_slice(),
            elem,
        })
}

/// The register-tiled plans of matmul (issue 21), written once.
pub use mdh_core::fixtures::{matmul_register_tiled, matmul_register_tiled_vectors};

/// The register-tiled plan with vectors under layouts of the local tiles
/// (transposed or not, padded or not), through `run` at sizes of full
/// tiles (vector copies and vector fragment loads), of cut ones (edge
/// tiles: the runs of 4 that an edge cuts are copied element by element)
/// and of unaligned rows (scalar copies), each equal to the reference
/// interpreter.
pub fn matmul_vector_layouts(rng: &mut Rng, run: &mut RunDyn) {
    for (transpose, pad) in [
        (vec![true, false], vec![0, 0]),
        (vec![false, true], vec![4, 1]),
        (vec![true, true], vec![1, 4]),
    ] {
        let plan = GpuPlan {
            transpose,
            pad,
            ..matmul_register_tiled_vectors()
        };
        for (i, j, k) in [(128, 256, 16), (136, 132, 12), (130, 129, 13)] {
            let sizes = matmul_sizes(i, j, k);
            one_case(
                mdh_example_kernels::matmul::SPEC,
                &sizes,
                Some(&plan),
                rng,
                run,
            );
        }
    }
}

/// A matmul plan whose shared tiles exceed the 48 KiB a CUDA block may
/// declare statically: tiles of 64 × 64 results and 128 steps of k (A's
/// and B's tiles 32 KiB each, 64 KiB in all), 16 × 16 threads of 4 × 4
/// results. On CUDA they live in dynamic shared memory.
pub fn matmul_big_tiles() -> GpuPlan {
    GpuPlan {
        tile: vec![64, 64, 128],
        ..matmul_register_tiled()
    }
}

/// [`matmul_big_tiles`] with scalar and vector copies (A transposed and
/// padded, B padded: the tiles' offsets in dynamic shared memory follow
/// their padded sizes) through `run` at sizes of full tiles, cut ones and
/// unaligned rows, each equal to the reference interpreter.
pub fn matmul_big_tiles_cases(rng: &mut Rng, run: &mut RunDyn) {
    let vectors = GpuPlan {
        vector: vec![4, 4],
        transpose: vec![true, false],
        pad: vec![4, 4],
        ..matmul_big_tiles()
    };
    let sizes = [(128, 64, 256), (67, 130, 131)];
    matmul_cases(&[matmul_big_tiles(), vectors], &sizes, rng, run);
}

/// matmul under each of `plans` at each of `sizes` (`I`, `J`, `K`)
/// through `run`, each equal to the reference interpreter.
fn matmul_cases(
    plans: &[GpuPlan],
    sizes: &[(usize, usize, usize)],
    rng: &mut Rng,
    run: &mut RunDyn,
) {
    for plan in plans {
        for &(i, j, k) in sizes {
            one_case(
                mdh_example_kernels::matmul::SPEC,
                &matmul_sizes(i, j, k),
                Some(plan),
                rng,
                run,
            );
        }
    }
}

/// matmul's register-tiled plans (scalar copies, vectors, and the big
/// tiles of [`matmul_big_tiles`], whose two stages take 128 KiB: dynamic
/// shared memory on CUDA) in two pipeline stages, through `run` at sizes
/// of several full PW tiles and of cut ones, each equal to the reference
/// interpreter.
pub fn matmul_stages_cases(rng: &mut Rng, run: &mut RunDyn) {
    let plans = [
        matmul_register_tiled(),
        matmul_register_tiled_vectors(),
        matmul_big_tiles(),
    ]
    .map(|base| GpuPlan { stages: 2, ..base });
    matmul_cases(&plans, &[(128, 128, 40), (67, 130, 300)], rng, run);
}

/// matmul's sizes `I`, `J`, `K` in the order of its size parameters.
pub fn matmul_sizes(i: usize, j: usize, k: usize) -> Vec<usize> {
    let kernel = mdh::reference::kernel(mdh_example_kernels::matmul::SPEC).unwrap();
    KernelDesc::from_kernel(&kernel)
        .size_params
        .iter()
        .map(|n| match n.as_ref() {
            "I" => i,
            "J" => j,
            _ => k,
        })
        .collect()
}

/// The relative error that tensor cores add to a contraction of terms of
/// one sign (docs/guide/06-cuda.md, "Tensor cores"): TF32 rounds each operand to within
/// 2^-11, so each product and the sum to within 2^-10; 3xTF32 drops the
/// product of the remainders and rounds them (3 · 2^-22, bounded by 2^-20).
/// The 16-bit modes compute products of bf16 (f16) values exactly in FP32,
/// as the FP32 path does: nothing beyond the FP32 sums' tolerance on the
/// CPU, whose emulation sums in FP32; a GPU's mma rounds its sums toward
/// zero (Fasi et al., "Numerical behavior of NVIDIA tensor cores", 2021),
/// twice FP32's rounding at most, which 2^-20 covers.
#[allow(dead_code)] // tests/opencl.rs shares this module but has no tensor cores
pub fn mma_rtol(mma: Mma) -> f64 {
    match mma {
        Mma::Off => 0.0,
        Mma::Tf32 => 2f64.powi(-10),
        Mma::Tf32x3 | Mma::Bf16 | Mma::F16 => 2f64.powi(-20),
    }
}

/// A random plan on tensor cores for a contraction with `MmaDims`: per
/// warp 4 lanes along `n` and 8 along `m`, 1 elsewhere, in one or two
/// warps along `m` (without a warp layer: 16 work-items along `m`) or,
/// with a warp layer, one or two warps along `m` and `n`; pairs of rows
/// and columns per work-item, one or two mma steps along `k`, 1 to 3 points
/// along other dimensions (fewer than 64 accumulators); local tiles,
/// layouts, stages and work-item order at random; the mode `mode`, or
/// any the inputs allow (TF32, 3xTF32, and the 16-bit one of 16-bit
/// inputs: steps of 16 along `k`).
pub fn mma_plan(rng: &mut Rng, desc: &KernelDesc, dims: &MmaDims, mode: Option<Mma>) -> GpuPlan {
    let modes: Vec<Mma> = match mode {
        Some(m) => vec![m],
        None => Mma::of_inputs(desc, dims)
            .into_iter()
            .filter(|&m| m != Mma::Off)
            .collect(),
    };
    let d = desc.dims.len();
    let pick = |rng: &mut Rng, xs: &[usize]| xs[rng.below(xs.len())];
    loop {
        let mma = modes[rng.below(modes.len())];
        let mut warps = vec![1; d];
        if rng.below(2) == 0 {
            warps[dims.m] = pick(rng, &[1, 2]);
            warps[dims.n] = pick(rng, &[1, 2]);
        }
        let mut items = vec![1; d];
        items[dims.n] = 4 * warps[dims.n];
        items[dims.m] = 8 * pick(rng, &[1, 2]) * warps[dims.m];
        let tile: Vec<usize> = (0..d)
            .map(|x| match x {
                _ if x == dims.m || x == dims.n => items[x] * pick(rng, &[2, 4]),
                _ if x == dims.k => mma.k_step() * pick(rng, &[1, 2]),
                _ => 1 + rng.below(3),
            })
            .collect();
        let groups = (0..d).map(|_| pick(rng, &[0, 0, 1, 2])).collect();
        let vectors = rng.below(2) == 0;
        let plan = GpuPlan {
            mma,
            warps,
            ..with_random_memory(rng, desc, groups, items, tile, vectors)
        };
        if plan.validate(desc).is_ok() {
            return plan;
        }
    }
}

/// `cases` random sizes (at most `budget` points, sizes up to 48 so that
/// full tiles occur beside cut ones) with random [`mma_plan`]s of the
/// contraction `spec` through `run`, each compared with the interpreter
/// with `extra` of its mode added to the tolerance (CUDA: [`mma_rtol`];
/// OpenCL, which has no tensor cores and computes such plans in FP32:
/// none); every other case at sizes where the plan's tiles are whole mma
/// tiles (so that they run on tensor cores).
pub fn mma_cases(
    spec: &str,
    cases: usize,
    budget: usize,
    rng: &mut Rng,
    run: &mut RunDyn,
    extra: fn(Mma) -> f64,
    mode: Option<Mma>,
) {
    let kernel = mdh::reference::kernel(spec).expect("the example's spec checks");
    let desc = KernelDesc::from_kernel(&kernel);
    let dims = mma_dims(&desc).expect("a contraction with mma dimensions");
    for case in 0..cases {
        let plan = mma_plan(rng, &desc, &dims, mode);
        let sizes = (0..)
            .map(|_| -> Vec<usize> {
                (0..desc.size_params.len())
                    .map(|_| [1, 2, 3, 5, 8, 16, 24, 32, 48, 64][rng.below(10)] + rng.below(2))
                    .collect()
            })
            .find(|sizes| {
                let extents: Vec<usize> = desc
                    .dims
                    .iter()
                    .map(|c| KernelDesc::eval_size(c, sizes).unwrap_or(0))
                    .collect();
                within(&desc, sizes, budget)
                    && (case % 2 == 1 || plan.resolve(&desc.kinds, &extents).tensor_cores(&desc))
            })
            .expect("an endless search");
        one_case_within(spec, &sizes, Some(&plan), rng, run, extra(plan.mma));
    }
}

/// Sizes for the default plans: per size parameter one of a few extents
/// below, at and past the candidates' tiles (1, primes, 64, 130, 257), with
/// at most `budget` points in the index space: sizes below one wave of the
/// units, edge tiles, reductions split across groups.
fn default_sizes(rng: &mut Rng, desc: &KernelDesc, budget: usize) -> Vec<usize> {
    for _ in 0..1000 {
        let sizes: Vec<usize> = (0..desc.size_params.len())
            .map(|_| [1, 3, 17, 64, 130, 257][rng.below(6)])
            .collect();
        if within(desc, &sizes, budget) {
            return sizes;
        }
    }
    random_sizes(rng, desc, budget, false)
}

/// `cases` random sizes ([`default_sizes`]) of one family, each with the
/// analytical default plan of a GPU of `lim` (`mdh::gpu::defaults`),
/// through `run`, compared with the reference interpreter. `run` is given
/// the plan, so that a back end whose device is no GPU (PoCL) runs the
/// GPUs' default too.
pub fn default_cases(
    spec: &str,
    cases: usize,
    budget: usize,
    seed: u64,
    lim: mdh::gpu::DeviceLimits,
    info: &mdh::gpu::KernelInfo,
    run: &mut RunDyn,
) {
    let kernel = mdh::reference::kernel(spec).expect("the example's spec checks");
    let desc = KernelDesc::from_kernel(&kernel);
    let mut rng = Rng::new(seed ^ 0xdef0);
    for _ in 0..cases {
        let sizes = default_sizes(&mut rng, &desc, budget);
        let bound = mdh::gpu::bind_sizes(&desc, &sizes).expect("the sizes bind");
        let plan = mdh::gpu::defaults::default_plan(&desc, &bound, info, "a GPU", lim);
        one_case(spec, &sizes, Some(&plan), &mut rng, run);
    }
}
