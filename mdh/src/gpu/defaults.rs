//! The analytical default GPU plan: what a call runs when no config entry
//! serves it. Per computation class ([`Class`]) a few candidate plans
//! (at most [`MAX_CANDIDATES`]) are derived from the call's sizes and what
//! the device reports ([`DeviceLimits`]), every one valid and fitting the
//! device; the throughput model ([`super::model`]) ranks them and the
//! fastest under it is the default. A CPU device (PoCL) keeps the CPU's
//! rule, [`GpuPlan::default_for`] (no local memory: caches serve better).
//!
//! A default never lowers precision: TF32 tensor cores (`mma`) are
//! candidates only where the user opts in, with `MDH_GPU_MATH=tf32` (or
//! `3xtf32`; [`GpuMath`]), as cuBLAS's math mode and PyTorch's
//! `allow_tf32` are opt-ins; by default every candidate computes in FP32,
//! except that a contraction of two bf16 (f16) inputs also has candidates
//! on the m16n8k16 tensor cores (`mma: bf16` / `f16`): the products of
//! such inputs are exact in FP32 and summed in FP32 accumulators, the
//! precision of the FP32 path (cuBLAS, too, runs bf16 GEMMs on tensor
//! cores by default).
//!
//! The classes, by what the kernel's views say (for the call's strides):
//! - **contraction**: two inputs each missing a kept dimension the other
//!   uses (matmul, batched matmul, tensor contractions, convolutions):
//!   register tiles of both inputs' fragments over local tiles of both,
//!   vectors of 4, two stages from sm_80 on; for few rows, lanes along the
//!   reduction; where the kept tiles make fewer groups than two per unit,
//!   the reduction split across groups;
//! - **reduction along a contiguous dimension** (dot, matvec, reduce):
//!   lanes along the PW dimension that is contiguous in the largest input,
//!   several rows per group, the inputs that do not move with the rows in
//!   local memory, the grid sized to the units;
//! - **map** (no PW dimension: maps, stencils): the output's contiguous
//!   dimension coalesced, a few points per thread along the others, a
//!   stencil's input (several accesses) in local memory as a candidate;
//! - **other** (scans): [`GpuPlan::default_for`].
//!
//! Kept reductions with a user-defined combine operator (prl) are
//! reductions or contractions by their views like any other.

use mdh_rt::desc::{Bound, KernelDesc};
use mdh_rt::gpu_plan::{GpuPlan, Mma, Resolved};
use mdh_rt::types::DimKind;

use super::model::{predict, Bytes, GpuModel, ModelKernel, Prediction, Resources};
use super::{CallPlan, DeviceLimits, KernelInfo};

/// The most candidates a class ranks.
pub const MAX_CANDIDATES: usize = 16;

/// The arithmetic the default of a contraction may use
/// (`MDH_GPU_MATH`: `fp32`, the default, `tf32` or `3xtf32`): the
/// precision a user opts in to (the 16-bit modes need no opt-in).
pub type GpuMath = Mma;

/// `MDH_GPU_MATH`, read once; FP32 (with a warning) for anything else.
pub fn gpu_math() -> GpuMath {
    static MATH: std::sync::OnceLock<GpuMath> = std::sync::OnceLock::new();
    *MATH.get_or_init(|| match std::env::var("MDH_GPU_MATH") {
        Err(_) => Mma::Off,
        Ok(v) if v == "fp32" || v.is_empty() => Mma::Off,
        Ok(v) => Mma::from_name(&v).unwrap_or_else(|| {
            log::warn!("mdh: MDH_GPU_MATH={v:?} is none of fp32, tf32, 3xtf32: FP32");
            Mma::Off
        }),
    })
}

/// A kernel's computation class (module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Dimensions `m` and `n` kept, each used by one input alone, and a
    /// PW dimension `k` both use.
    Contraction {
        m: usize,
        n: usize,
        k: usize,
    },
    /// PW dimension `r`, contiguous in the largest input.
    Reduction {
        r: usize,
    },
    Map,
    Other,
}

impl Class {
    /// Its name in `MDH_EXPLAIN=1`'s lines.
    pub fn name(self) -> &'static str {
        match self {
            Class::Contraction { .. } => "contraction",
            Class::Reduction { .. } => "reduction along a contiguous dimension",
            Class::Map => "map",
            Class::Other => "other",
        }
    }
}

/// The class of `k`.
pub fn class_of(k: &ModelKernel) -> Class {
    let kinds = &k.desc.kinds;
    let d = kinds.len();
    if kinds.contains(&DimKind::Ps) {
        return Class::Other;
    }
    let pw: Vec<usize> = (0..d).filter(|&x| kinds[x] == DimKind::Pw).collect();
    if pw.is_empty() {
        return Class::Map;
    }
    let kept = DimKind::kept(kinds);
    // Per input buffer the dimensions its (first) access uses.
    let uses = |b: usize| {
        k.inputs
            .iter()
            .find(|a| a.buffer == b)
            .map_or(&[][..], |a| &a.uses[..])
    };
    let buffers = k.desc.inputs.len();
    for a in 0..buffers {
        for b in 0..buffers {
            if a == b {
                continue;
            }
            let only = |x: usize, p: usize, q: usize| uses(p).contains(&x) && !uses(q).contains(&x);
            // n: the last kept dimension only `b` uses, m before it only `a`.
            let Some(&n) = kept.iter().rev().find(|&&x| only(x, b, a)) else {
                continue;
            };
            let m = kept.iter().rev().find(|&&x| x != n && only(x, a, b));
            let k_dim = pw
                .iter()
                .rev()
                .find(|&&x| uses(a).contains(&x) && uses(b).contains(&x));
            if let (Some(&m), Some(&k_dim)) = (m, k_dim) {
                return Class::Contraction { m, n, k: k_dim };
            }
        }
    }
    // The largest input's contiguous PW dimension, else the last PW one.
    let largest = k
        .inputs
        .iter()
        .max_by_key(|a| a.uses.len())
        .and_then(|a| pw.iter().copied().find(|&x| a.coefs[x] == Some(1)));
    Class::Reduction {
        r: largest.unwrap_or(pw[pw.len() - 1]),
    }
}

/// The default plan of a call: the best candidate of its class under the
/// model (see the module documentation), the CPU's rule on a CPU device.
pub fn default_plan(
    desc: &KernelDesc,
    bound: &Bound,
    info: &KernelInfo,
    device: &str,
    lim: DeviceLimits,
) -> GpuPlan {
    if lim.compute.cpu {
        return fitted(GpuPlan::default_for(desc), desc, bound, info, lim);
    }
    ranked_with(desc, bound, info, device, lim, gpu_math())
        .into_iter()
        .next()
        .map(|c| c.plan)
        .unwrap_or_else(|| fitted(GpuPlan::default_for(desc), desc, bound, info, lim))
}

/// One candidate of the default and the model's answer for it.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub plan: GpuPlan,
    pub prediction: Prediction,
}

/// The candidates of a call's class that are valid and fit the device,
/// fastest under the model first (at equal times, in the order derived).
pub fn ranked(
    desc: &KernelDesc,
    bound: &Bound,
    info: &KernelInfo,
    device: &str,
    lim: DeviceLimits,
) -> Vec<Candidate> {
    ranked_with(desc, bound, info, device, lim, gpu_math())
}

/// [`ranked`] under the arithmetic `math`.
pub fn ranked_with(
    desc: &KernelDesc,
    bound: &Bound,
    info: &KernelInfo,
    device: &str,
    lim: DeviceLimits,
    math: GpuMath,
) -> Vec<Candidate> {
    let k = ModelKernel::of_call(desc, bound, info);
    let model = GpuModel::for_device(device, &lim);
    let bytes = Bytes::of_call(bound, info);
    let mut seen = Vec::new();
    let mut out: Vec<Candidate> = candidates(&k, bound, lim, math)
        .into_iter()
        .filter_map(|mut plan| {
            plan.fill_layout_defaults(desc);
            plan.validate(desc).ok()?;
            let p = CallPlan::new(desc, info, bound, &plan);
            if !p.fits(lim) || seen.contains(&p.r) {
                return None;
            }
            let shared = p.shared.total();
            let res = Some(registers(&p.r, desc, info));
            seen.push(p.r);
            let prediction = predict(&k, &plan, &bound.extents, bytes, &model, res, shared);
            Some(Candidate { plan, prediction })
        })
        .take(MAX_CANDIDATES)
        .collect();
    out.sort_by(|a, b| a.prediction.time_s.total_cmp(&b.prediction.time_s));
    out
}

/// What `MDH_EXPLAIN=1` says of a call's default: its class, each
/// candidate with the model's time and limiter, the choice first.
pub fn explain(
    desc: &KernelDesc,
    bound: &Bound,
    info: &KernelInfo,
    device: &str,
    lim: DeviceLimits,
) -> String {
    use std::fmt::Write;
    if lim.compute.cpu {
        return "a CPU device: the CPU's default plan (no local memory)".into();
    }
    let k = ModelKernel::of_call(desc, bound, info);
    let model = GpuModel::for_device(device, &lim);
    let mut s = format!(
        "class {}, ranked by the throughput model ({}), {}:",
        class_of(&k).name(),
        model.name,
        match gpu_math() {
            Mma::Off => "FP32".to_string(),
            m => format!("MDH_GPU_MATH={}", m.name()),
        }
    );
    for (i, c) in ranked(desc, bound, info, device, lim).iter().enumerate() {
        let p = &c.plan;
        let _ = write!(
            s,
            "\n  {} {:8.1} µs ({}) items {:?} tile {:?} groups {:?} local {:?}{}{}",
            if i == 0 { "->" } else { "  " },
            c.prediction.time_s * 1e6,
            c.prediction.limiter,
            p.items,
            p.tile,
            p.groups,
            p.local,
            if p.blocked { " blocked" } else { "" },
            match p.mma {
                Mma::Off => String::new(),
                m => format!(" mma {}", m.name()),
            },
        );
    }
    s
}

/// Registers per thread the model assumes for a candidate (ptxas reports
/// them only once compiled): a base for indices and loop state, the
/// partial results, and a fragment of each input per step.
fn registers(r: &Resolved, desc: &KernelDesc, info: &KernelInfo) -> Resources {
    let kept = DimKind::kept(&desc.kinds);
    let private: usize = kept.iter().map(|&x| r.private[x]).product();
    let words: usize = info
        .acc_bytes
        .iter()
        .map(|b| b.div_ceil(4))
        .sum::<usize>()
        .max(1);
    let fragments: usize = kept.iter().map(|&x| r.private[x]).sum();
    let regs = 40 + (private * words * 5).div_ceil(4) + fragments;
    Resources {
        registers: regs.min(255) as u32,
        shared_bytes: 0,
    }
}

/// The plan `plan` shrunk until it fits the device: fewer work-items, then
/// no local memory.
pub fn fitted(
    mut plan: GpuPlan,
    desc: &KernelDesc,
    bound: &Bound,
    info: &KernelInfo,
    lim: DeviceLimits,
) -> GpuPlan {
    loop {
        let p = CallPlan::new(desc, info, bound, &plan);
        if p.fits(lim) {
            return plan;
        }
        let r = p.r;
        if plan.local.iter().any(|&l| l) {
            plan.local.iter_mut().for_each(|l| *l = false);
            continue;
        }
        // Halve the largest work-item count (tiles along with it).
        let x = (0..plan.items.len())
            .max_by_key(|&x| r.items[x])
            .unwrap_or(0);
        if r.items[x] <= 1 {
            return plan;
        }
        plan.items[x] = r.items[x] / 2;
        plan.tile[x] = plan.tile[x].div_ceil(2).max(plan.items[x]);
    }
}

/// The tensor-core modes a contraction's candidates may use on a device
/// with (`sm80`) or without them: the 16-bit mode of 16-bit inputs always
/// (it lowers no precision: their products are exact in FP32, summed in
/// FP32 accumulators, which is why cuBLAS runs bf16 GEMMs on tensor cores
/// by default), the TF32 ones only where the user opted in (`math`).
fn tensor_core_modes(desc: &KernelDesc, sm80: bool, math: GpuMath) -> Vec<Mma> {
    let Some(dims) = mdh_rt::gpu_plan::mma_dims(desc).filter(|_| sm80) else {
        return Vec::new();
    };
    Mma::of_inputs(desc, &dims)
        .into_iter()
        .filter(|&m| m.operand_type().is_some() || (m == math && m != Mma::Off))
        .collect()
}

/// The candidates of `k`'s class, before validation and fitting.
fn candidates(k: &ModelKernel, bound: &Bound, lim: DeviceLimits, math: GpuMath) -> Vec<GpuPlan> {
    let ext = &bound.extents;
    let units = lim.compute.compute_units.filter(|&n| n > 0).unwrap_or(100);
    let sm80 = lim.cuda_arch.is_some_and(|a| a >= 80);
    let stages = if sm80 { 2 } else { 1 };
    match class_of(k) {
        Class::Contraction { m, n, k: r } => {
            let mut v = Vec::new();
            // Tensor cores (sm_80 and later): warps of 8 row groups × 4
            // column pairs (see `GpuPlan::mma`).
            for mode in tensor_core_modes(&k.desc, sm80, math) {
                for (tm, tn) in [(128, 64), (64, 64), (64, 32)] {
                    let mut p = GpuPlan::base(ext.len(), k.desc.inputs.len());
                    p.items[m] = 32;
                    p.items[n] = 4;
                    p.tile[m] = tm;
                    p.tile[n] = tn;
                    p.tile[r] = 16;
                    p.local = vec![true; k.desc.inputs.len()];
                    p.stages = stages;
                    p.mma = mode;
                    v.push(p);
                }
            }
            v.extend(contraction(k, ext, units, stages, m, n, r));
            v
        }
        Class::Reduction { r } => reduction(k, ext, units, r),
        Class::Map => map(k, ext),
        Class::Other => vec![GpuPlan::default_for(&k.desc)],
    }
}

/// Groups along the kept dimensions of a plan at `ext` (tiles per block of
/// one tile).
fn kept_groups(kinds: &[DimKind], plan: &GpuPlan, ext: &[usize]) -> usize {
    (0..ext.len())
        .filter(|&x| kinds[x].is_kept())
        .map(|x| ext[x].div_ceil(plan.tile[x].max(1)).max(1))
        .product()
}

/// `plan` with PW dimension `r` split across groups where its kept tiles
/// make fewer groups than two per unit: as many as fill two waves, each
/// group at least `min_steps` tiles of `r`.
fn split(
    mut plan: GpuPlan,
    kinds: &[DimKind],
    ext: &[usize],
    units: usize,
    r: usize,
    min_steps: usize,
) -> Option<GpuPlan> {
    let kept = kept_groups(kinds, &plan, ext);
    let steps = ext[r].div_ceil(plan.tile[r].max(1));
    let want = (2 * units).div_ceil(kept);
    let g = want.min(steps / min_steps.max(1));
    if kept >= units || g < 2 {
        return None;
    }
    plan.groups = (0..ext.len())
        .map(|x| match x {
            _ if x == r => g,
            _ if kinds[x] == DimKind::Pw => 1,
            _ => 0,
        })
        .collect();
    Some(plan)
}

/// Contraction candidates over rows `m`, columns `n` and reduction `r`.
fn contraction(
    k: &ModelKernel,
    ext: &[usize],
    units: usize,
    stages: usize,
    m: usize,
    n: usize,
    r: usize,
) -> Vec<GpuPlan> {
    let kinds = &k.desc.kinds;
    let d = kinds.len();
    let inputs = k.desc.inputs.len();
    // The input that uses the rows (the mma's A): transposed in local
    // memory when its contiguous dimension is the reduction, so that a
    // thread's values along the rows are runs of 4.
    let a_input = k
        .inputs
        .iter()
        .find(|a| a.uses.contains(&m) && !a.uses.contains(&n));
    let transpose: Vec<bool> = (0..inputs)
        .map(|b| a_input.is_some_and(|a| a.buffer == b && a.coefs[r] == Some(1)))
        .collect();
    // The rows are the kept dimensions only A uses, `m` first, the columns
    // those only B uses, `n` first: a tile larger than `m`'s (`n`'s) extent
    // goes on along the next one (tensor contractions of short modes).
    // PW dimensions besides `r` step one index at a time; other kept
    // dimensions take one index per group.
    let only = |x: usize, with: usize, without: usize| {
        let uses = |d: usize| {
            k.inputs
                .iter()
                .any(|a| a.uses.contains(&x) && a.uses.contains(&d))
        };
        kinds[x].is_kept() && uses(with) && !uses(without)
    };
    let along = |first: usize, with: usize, without: usize| -> Vec<usize> {
        let mut v = vec![first];
        v.extend(
            (0..d)
                .rev()
                .filter(|&x| x != first && only(x, with, without)),
        );
        v
    };
    let (rows, cols) = (along(m, m, n), along(n, n, m));
    let tiled = |items_m: usize, items_n: usize, tm: usize, tn: usize, tk: usize, local: bool| {
        let mut p = GpuPlan::base(d, inputs);
        spread_over(&mut p, &rows, ext, items_m, tm);
        spread_over(&mut p, &cols, ext, items_n, tn);
        p.tile[r] = tk;
        if local {
            p.local = vec![true; inputs];
            p.vector = vec![4; inputs];
            p.transpose = transpose.clone();
            p.pad = vec![0; inputs];
            p.stages = stages;
        }
        p
    };
    let mut v = Vec::new();
    let blocks: [(usize, usize, usize, usize, usize); 6] = [
        // items m, items n, tile m, tile n, tile k
        (16, 16, 128, 128, 8),
        (16, 16, 128, 64, 16),
        (16, 16, 64, 128, 16),
        (16, 16, 64, 64, 16),
        (8, 32, 32, 64, 32),
        (8, 16, 32, 32, 32),
    ];
    for &(im, inn, tm, tn, tk) in &blocks {
        let p = tiled(im, inn, tm, tn, tk, true);
        if let Some(s) = split(p.clone(), kinds, ext, units, r, 8) {
            v.push(s);
        }
        v.push(p);
    }
    let mut few = Vec::new();
    // Few rows (a skinny product, a matrix-vector-like one): lanes along the
    // reduction, the rows' whole extent (up to 16) per group, 2-4 columns
    // per thread; the operand without rows in local memory.
    let rows = ext[m].clamp(1, 16).next_power_of_two();
    for (lanes, cols) in [(32, 4), (64, 2), (32, 2)] {
        let mut p = GpuPlan::base(d, inputs);
        p.items[r] = lanes;
        p.tile[r] = lanes * 32;
        p.items[m] = (rows / 2).max(1);
        p.tile[m] = rows;
        p.items[n] = cols.min(256 / lanes / p.items[m]).max(1);
        p.tile[n] = p.items[n] * 2;
        p.local = (0..inputs)
            .map(|b| {
                !k.inputs
                    .iter()
                    .any(|a| a.buffer == b && a.uses.contains(&m))
            })
            .collect();
        p.vector = vec![4; inputs];
        if let Some(s) = split(p.clone(), kinds, ext, units, r, 1) {
            few.push(s);
        }
        few.push(p);
    }
    // One row: columns across threads and groups, the reduction split.
    let mut p = GpuPlan::base(d, inputs);
    p.items[n] = 64;
    p.tile[n] = 128;
    p.tile[r] = 16;
    p.blocked = true;
    if let Some(s) = split(p, kinds, ext, units, r, 1) {
        few.push(s);
    }
    // Ranked within the first [`MAX_CANDIDATES`]: the shape's own first.
    if ext[m] <= 16 {
        few.extend(v);
        few
    } else {
        v.extend(few);
        v
    }
}

/// Spreads `items` work-items and a tile of `tile` indices over `dims`,
/// the first dimension first: each takes what its extent holds (rounded
/// to a power of two), the next the rest.
fn spread_over(p: &mut GpuPlan, dims: &[usize], ext: &[usize], items: usize, tile: usize) {
    let (mut items, mut tile) = (items, tile);
    for &x in dims {
        let room = ext[x].max(1).next_power_of_two();
        let t = tile.min(room);
        let i = items.min(t);
        p.tile[x] = t;
        p.items[x] = i;
        tile = tile.div_ceil(t);
        items = items.div_ceil(i);
        if tile <= 1 {
            break;
        }
    }
}

/// Candidates of a reduction along contiguous PW dimension `r`.
fn reduction(k: &ModelKernel, ext: &[usize], units: usize, r: usize) -> Vec<GpuPlan> {
    let kinds = &k.desc.kinds;
    let d = kinds.len();
    let inputs = k.desc.inputs.len();
    let kept = DimKind::kept(kinds);
    let mut v = Vec::new();
    match kept.last() {
        None => {
            // No kept dimension: one tree per group over the grid.
            for (items, per) in [(256, 8), (512, 8), (1024, 4), (256, 16)] {
                let mut p = GpuPlan::base(d, inputs);
                p.items[r] = items;
                p.tile[r] = items * per;
                v.push(p.clone());
                let tiles = ext[r].div_ceil(p.tile[r]).max(1);
                p.groups[r] = (2 * units).min(tiles).max(1);
                v.push(p);
            }
        }
        Some(&rows) => {
            // Inputs that do not move with the rows are read by every row:
            // local memory.
            let local: Vec<bool> = (0..inputs)
                .map(|b| {
                    !k.inputs
                        .iter()
                        .any(|a| a.buffer == b && a.uses.contains(&rows))
                })
                .collect();
            // Lanes along `r`, rows per group, steps of `r` per lane and
            // tile, which inputs are cached (`local`: those without rows;
            // `None`: those that balance the loads, see [`balanced`]), rows
            // per thread.
            let none = vec![false; inputs];
            for (lanes, nrows, per, cached, per_thread) in [
                (32, 8, 32, Some(&local), 1),
                (32, 32, 32, Some(&local), 1),
                (64, 16, 16, Some(&local), 1),
                (128, 4, 8, Some(&local), 1),
                (32, 8, 32, Some(&none), 1),
                (32, 32, 32, Some(&none), 1),
                (32, 8, 32, Some(&local), 4),
                (32, 32, 16, Some(&local), 16),
                (32, 32, 16, None, 16),
                (8, 128, 64, None, 8),
            ] {
                let mut p = GpuPlan::base(d, inputs);
                p.items[r] = lanes;
                p.tile[r] = (lanes * per).min(ext[r].next_power_of_two().max(lanes));
                p.items[rows] = nrows;
                p.tile[rows] = nrows * per_thread;
                p.local = match cached {
                    Some(l) => l.clone(),
                    None => balanced(k, &p, ext),
                };
                if p.local.contains(&true) {
                    p.vector = vec![4; inputs];
                }
                if let Some(s) = split(p.clone(), kinds, ext, units, r, 2) {
                    v.push(s);
                }
                v.push(p);
            }
        }
    }
    v
}

/// The inputs to cache in local memory so that a plan's loads from local
/// memory and through L1 balance (the model's `shared` and `lsu` pipes
/// move one value per lane and cycle each): per input its loads per point
/// (1 / its reuse across the thread's private points along the kept
/// dimensions it does not use), split into two sums whose larger one is
/// least; at equal sums the fewer cached.
fn balanced(k: &ModelKernel, p: &GpuPlan, ext: &[usize]) -> Vec<bool> {
    let kinds = &k.desc.kinds;
    let r = p.resolve(kinds, ext);
    let n = k.desc.inputs.len();
    let mut loads = vec![0.0; n];
    for a in &k.inputs {
        let reuse: usize = DimKind::kept(kinds)
            .into_iter()
            .filter(|x| !a.uses.contains(x))
            .map(|x| r.private[x])
            .product();
        loads[a.buffer] += 1.0 / reuse.max(1) as f64;
    }
    let cacheable: Vec<usize> = (0..n)
        .filter(|&b| mdh_rt::gpu_plan::can_cache_locally(&k.desc, b))
        .collect();
    let total: f64 = loads.iter().sum();
    let mut best = (f64::INFINITY, usize::MAX, vec![false; n]);
    for mask in 0u32..(1 << cacheable.len().min(12)) {
        let set: Vec<usize> = (0..cacheable.len())
            .filter(|&i| mask & (1 << i) != 0)
            .map(|i| cacheable[i])
            .collect();
        let cached: f64 = set.iter().map(|&b| loads[b]).sum();
        let worst = cached.max(total - cached);
        if (worst, set.len()) < (best.0, best.1) {
            let mut local = vec![false; n];
            set.iter().for_each(|&b| local[b] = true);
            best = (worst, set.len(), local);
        }
    }
    best.2
}

/// Candidates of a map or stencil: the output's contiguous dimension
/// coalesced.
fn map(k: &ModelKernel, ext: &[usize]) -> Vec<GpuPlan> {
    let kinds = &k.desc.kinds;
    let d = kinds.len();
    let inputs = k.desc.inputs.len();
    let kept = DimKind::kept(kinds);
    let inner = k
        .outputs
        .first()
        .and_then(|a| kept.iter().copied().find(|&x| a.coefs[x] == Some(1)))
        .or(kept.last().copied());
    let Some(inner) = inner else {
        return vec![GpuPlan::default_for(&k.desc)];
    };
    let outer: Vec<usize> = kept.iter().rev().copied().filter(|&x| x != inner).collect();
    let stencil: Vec<bool> = (0..inputs)
        .map(|b| k.inputs.iter().filter(|a| a.buffer == b).count() > 1)
        .collect();
    let mut v = Vec::new();
    for (lanes, o1, p1, o2) in [
        (64, 4, 1, 1),
        (128, 2, 1, 1),
        (32, 8, 1, 1),
        (256, 1, 1, 1),
        (64, 4, 2, 1),
        (64, 4, 4, 1),
        (64, 4, 1, 2),
        (32, 4, 2, 2),
    ] {
        let mut p = GpuPlan::base(d, inputs);
        p.items[inner] = lanes.min(ext[inner].next_power_of_two()).max(1);
        p.tile[inner] = p.items[inner];
        if let Some(&x) = outer.first() {
            p.items[x] = o1;
            p.tile[x] = o1 * p1;
        }
        if let Some(&x) = outer.get(1) {
            p.items[x] = o2;
            p.tile[x] = o2;
        }
        v.push(p.clone());
        if stencil.iter().any(|&s| s) {
            p.local = stencil.clone();
            v.push(p);
        }
    }
    v
}

// The tests build their kernels with the interpreter's front end.
#[cfg(all(test, feature = "reference"))]
mod tests {
    use super::*;
    use crate::gpu::{bind_sizes, cuda_arch_limits, DeviceCompute};
    use mdh_core::codegen::c_expr::Dialect;

    /// An H100's limits as its runtime reports them.
    fn h100() -> DeviceLimits {
        DeviceLimits {
            compute: DeviceCompute {
                compute_units: Some(132),
                ..DeviceCompute::default()
            },
            ..cuda_arch_limits("sm_90")
        }
    }

    struct Call {
        desc: KernelDesc,
        info: &'static KernelInfo,
        bound: Bound,
    }

    fn call(k: &mdh_core::Checked, sizes: &[usize]) -> Call {
        let desc = KernelDesc::from_kernel(k);
        let bound = bind_sizes(&desc, sizes).unwrap();
        Call {
            info: crate::reference::kernel_info(k, Dialect::Cuda),
            desc,
            bound,
        }
    }

    impl Call {
        fn ranked(&self, lim: DeviceLimits, math: GpuMath) -> Vec<Candidate> {
            ranked_with(
                &self.desc,
                &self.bound,
                self.info,
                "NVIDIA H100 80GB HBM3",
                lim,
                math,
            )
        }
        fn class(&self) -> Class {
            class_of(&ModelKernel::of_call(&self.desc, &self.bound, self.info))
        }
    }

    #[test]
    fn classes_follow_the_views() {
        use mdh_core::fixtures::{compiled, matmul, matvec, JACOBI1D};
        assert_eq!(
            call(&matmul(), &[64, 64, 64]).class(),
            Class::Contraction { m: 0, n: 1, k: 2 }
        );
        assert_eq!(
            call(&matvec(), &[64, 64]).class(),
            Class::Reduction { r: 1 }
        );
        assert_eq!(call(&compiled(JACOBI1D), &[64]).class(), Class::Map);
    }

    /// At most 16 candidates, each valid and fitting the device, fastest
    /// first; the default is the first.
    #[test]
    fn candidates_are_valid_fitting_and_ranked() {
        let c = call(&mdh_core::fixtures::matmul(), &[1024, 1024, 1024]);
        let lim = h100();
        let ranked = c.ranked(lim, Mma::Off);
        assert!(!ranked.is_empty() && ranked.len() <= MAX_CANDIDATES);
        for (i, cand) in ranked.iter().enumerate() {
            cand.plan.validate(&c.desc).unwrap();
            let p = CallPlan::new(&c.desc, c.info, &c.bound, &cand.plan);
            assert!(p.fits(lim), "{:?}", cand.plan);
            assert_eq!(cand.plan.mma, Mma::Off);
            if i > 0 {
                assert!(ranked[i - 1].prediction.time_s <= cand.prediction.time_s);
            }
        }
        let default = default_plan(&c.desc, &c.bound, c.info, "NVIDIA H100 80GB HBM3", lim);
        assert_eq!(default, ranked[0].plan);
        // matmul 1024³: 8 × 8 register tiles of a 128 × 128 block over
        // shared tiles of both inputs.
        assert_eq!(
            (default.items.clone(), default.tile.clone()),
            (vec![16, 16, 1], vec![128, 128, 8])
        );
        assert_eq!(default.local, [true, true]);
    }

    /// A product of one row and few columns (I = 1, K = 8192, J = 64)
    /// splits its reduction across groups: its kept tiles alone give fewer
    /// groups than the units.
    #[test]
    fn few_rows_split_the_reduction() {
        let c = call(&mdh_core::fixtures::matmul(), &[1, 8192, 64]);
        let p = &c.ranked(h100(), Mma::Off)[0].plan;
        let r = p.resolve(&c.desc.kinds, &c.bound.extents);
        assert!(r.groups[2] > 1, "{p:?} resolved {r:?}");
    }

    /// Tensor cores only where the user opts in, on sm_80 and later.
    #[test]
    fn tensor_cores_only_when_asked() {
        let c = call(&mdh_core::fixtures::matmul(), &[1024, 1024, 1024]);
        let tf32 = c.ranked(h100(), Mma::Tf32);
        assert_eq!(tf32[0].plan.mma, Mma::Tf32, "{:?}", tf32[0]);
        let sm75 = DeviceLimits {
            cuda_arch: Some(75),
            ..h100()
        };
        assert!(c
            .ranked(sm75, Mma::Tf32)
            .iter()
            .all(|x| x.plan.mma == Mma::Off));
        let opencl = DeviceLimits {
            cuda_arch: None,
            ..h100()
        };
        assert!(c
            .ranked(opencl, Mma::Tf32)
            .iter()
            .all(|x| x.plan.mma == Mma::Off));
    }

    /// Two bf16 inputs: m16n8k16 candidates without an opt-in (they lower
    /// no precision), valid, first at 1024³ on sm_90; none before sm_80;
    /// `MDH_GPU_MATH=tf32` adds TF32 ones beside them.
    #[test]
    fn bf16_inputs_take_their_tensor_cores_by_default() {
        let k = mdh_core::fixtures::compiled(&mdh_core::fixtures::example("matmul_bf16"));
        let c = call(&k, &[1024, 1024, 1024]);
        let ranked = c.ranked(h100(), Mma::Off);
        assert_eq!(ranked[0].plan.mma, Mma::Bf16, "{:?}", ranked[0]);
        for cand in &ranked {
            cand.plan.validate(&c.desc).unwrap();
            assert!(matches!(cand.plan.mma, Mma::Off | Mma::Bf16), "{cand:?}");
        }
        let modes = |math: Mma| -> Vec<Mma> {
            let mut v: Vec<Mma> = c.ranked(h100(), math).iter().map(|x| x.plan.mma).collect();
            v.dedup();
            v.sort_by_key(|m| m.name());
            v.dedup();
            v
        };
        assert_eq!(modes(Mma::Tf32), [Mma::Bf16, Mma::Off, Mma::Tf32]);
        let sm75 = DeviceLimits {
            cuda_arch: Some(75),
            ..h100()
        };
        assert!(c
            .ranked(sm75, Mma::Off)
            .iter()
            .all(|x| x.plan.mma == Mma::Off));
    }

    /// A CPU device (PoCL) keeps the CPU's rule.
    #[test]
    fn a_cpu_device_keeps_the_cpu_rule() {
        let c = call(&mdh_core::fixtures::matvec(), &[256, 256]);
        let lim = DeviceLimits {
            max_items: 4096,
            local_bytes: 4 << 20,
            cuda_arch: None,
            compute: DeviceCompute {
                compute_units: Some(2),
                cpu: true,
                ..DeviceCompute::default()
            },
        };
        let plan = default_plan(&c.desc, &c.bound, c.info, "cpu-zen", lim);
        assert_eq!(plan, GpuPlan::default_for(&c.desc));
        assert!(explain(&c.desc, &c.bound, c.info, "cpu-zen", lim).contains("a CPU device"));
    }
}
