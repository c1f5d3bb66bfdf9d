//! A per-SM throughput model of a GPU plan: the analytical default plan's
//! ranking of its candidates (`gpu::defaults`), run-time tuning's first
//! candidates, and the tuner's lower bound (it prunes candidates that cannot
//! beat the best measured time) and prediction (printed next to each
//! measurement and kept in the log). One model for all of them.
//!
//! The device is a row of [`DEVICES`], picked by the name the runtime
//! reports ([`GpuModel::of`]); the tuner gives any other device
//! [`GpuModel::generic`], which only bounds: it assumes more of everything
//! than any device has, and its prediction is its bound. A call ranks on
//! [`GpuModel::for_device`]: the row, else for a GPU a model derived from
//! what its runtime reports ([`GpuModel::derived`]: figures per unit of
//! its architecture's class, guesses that rank plans of one call, not
//! absolute times). The number of units and the clock the runtime reports
//! replace the row's (a MIG slice has fewer SMs).
//!
//! The geometry is the facade's ([`GpuPlan::resolve`], as `mdh::gpu::job`
//! launches it). Per work-group (block) of the first, whole block:
//! - the FMA pipe: one operation per point, `fma_lanes` per cycle and unit
//!   (`4 / bytes` times that for narrower types); on tensor cores
//!   (`GpuPlan::mma` where the call runs them) [`TF32_PER_FP32`] times
//!   the FP32 rate divided by the mmas per product (3 for 3xTF32), an
//!   `HMMA.1688` per 32 of a thread's products issued, or for 16-bit
//!   inputs (`bf16`, `f16`) [`HALF_PER_FP32`] times it and an `HMMA.16816`
//!   per 64 products; and a quarter of the fragment loads (a lane loads per
//!   mma step the rows and columns it shares with 3 or 7 others);
//! - loads: per point and input access, one value per step of the
//!   reduction for each register fragment, i.e. `1 / reuse` where `reuse`
//!   is the product of the thread's private extents along the kept
//!   dimensions that the access does not use (matmul's 8 × 8 micro-tile:
//!   1/8 of a load of A and of B per FMA); from shared memory for `local`
//!   inputs (`shared` per cycle), else through L1 (`lsu` per cycle); the
//!   copies of `local` tiles add a global load and a shared store per
//!   element of each tile;
//! - issue slots: the FMA, the loads and the other instructions
//!   ([`OTHER_BASE`] + [`OTHER_PER_STEP`] / private kept points: fitted to
//!   the SASS of matmul's reference plans, see docs/guide/06-cuda.md) at `issue`
//!   per cycle;
//! - the block's time is the largest of these; a unit runs
//!   [`occupancy`] blocks at once (threads, registers and shared memory,
//!   from ptxas' report when known), at full rate only with
//!   `warps_to_hide` warps of independent work (a thread's private points
//!   count as independent work, up to [`MAX_ILP`]); the busiest unit runs
//!   `ceil(groups / units)` blocks in waves of that many (wave
//!   quantization);
//! - memory: the inputs, outputs and partial results once, from L2 when
//!   they fit there (repeated runs keep them), else from DRAM; the bytes
//!   the blocks load (each block its footprint of each input) through L2;
//!   global accesses whose consecutive threads are not consecutive
//!   elements move more (`spread`: sectors of 32 bytes), in L2, DRAM
//!   and L1 cycles alike;
//! - and a fixed time per launch.
//!
//! The bound takes the same geometry at the peak rates, with no occupancy
//! or latency losses, no issue or load terms (broadcasts and vector loads
//! can beat any count of them) and the inputs at the L2's peak when they
//! fit there; wave quantization counts only when every block is whole.

use mdh_rt::desc::{Bound, KernelDesc};
use mdh_rt::gpu_plan::{GpuPlan, Mma, Resolved};
use mdh_rt::types::{elem_bytes, DimKind};

use super::{DeviceCompute, DeviceLimits, KernelInfo};

/// Other instructions per point (index arithmetic, loop control) of a
/// register-tiled step: `OTHER_BASE + OTHER_PER_STEP / private kept
/// points`. Fitted to the hot loops of matmul's reference plans (NVRTC
/// 12.9, sm_90): 2.3 other instructions per FFMA with one point per thread,
/// 0.36 with 4 × 2, 0.19 with 8 × 8.
pub const OTHER_BASE: f64 = 0.16;
pub const OTHER_PER_STEP: f64 = 2.14;
/// TF32 tensor-core multiply-adds per FP32 FMA of an SM and cycle: dense
/// TF32 is 8 times FP32 on the H100 (494.7 vs 66.9 TFLOPS, SXM) and the
/// A100 (156 vs 19.5).
pub const TF32_PER_FP32: f64 = 8.0;
/// BF16/FP16 tensor-core multiply-adds (FP32 accumulators) per FP32 FMA of
/// an SM and cycle: dense BF16 is 16 times FP32 on the A100 (312 vs 19.5
/// TFLOPS) and 14.8 times on the H100 SXM (989.4 vs 66.9), NVIDIA's data
/// sheets; twice TF32's rate on both.
pub const HALF_PER_FP32: f64 = 16.0;

/// Tensor-core products per FP32 FMA of the mode `mma` (0: none).
fn mma_rate(mma: Mma) -> f64 {
    match mma {
        Mma::Off => 0.0,
        Mma::Tf32 => TF32_PER_FP32,
        Mma::Tf32x3 => TF32_PER_FP32 / 3.0,
        Mma::Bf16 | Mma::F16 => HALF_PER_FP32,
    }
}

/// The `HMMA`s a thread issues per product of the mode `mma`: one per 32
/// (`HMMA.1688`: 16 × 8 × 8 / 32), three for 3xTF32, one per 64
/// (`HMMA.16816`: 16 × 8 × 16 / 32).
fn hmma_per_product(mma: Mma) -> f64 {
    match mma {
        Mma::Off => 0.0,
        Mma::Tf32 => 1.0 / 32.0,
        Mma::Tf32x3 => 3.0 / 32.0,
        Mma::Bf16 | Mma::F16 => 1.0 / 64.0,
    }
}

/// The most independent operations per thread the latency model counts.
pub const MAX_ILP: f64 = 8.0;

/// What the model knows of a device: per unit (SM), per cycle, unless said
/// otherwise.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuModel {
    /// The table row ("generic" for the bound-only model).
    pub name: &'static str,
    pub units: usize,
    pub clock_hz: f64,
    /// 32-bit FMAs.
    pub fma_lanes: f64,
    /// Thread instructions issued (4 schedulers × 32 lanes).
    pub issue: f64,
    /// Thread accesses to global memory through L1 (a warp's coalesced
    /// 128 bytes per cycle).
    pub lsu: f64,
    /// Thread accesses of 4 bytes to shared memory (32 banks).
    pub shared: f64,
    /// Points a work-item does per cycle at most (a GPU thread 1; PoCL
    /// vectorizes a work-item's loop).
    pub item_lanes: f64,
    /// Bytes one unit reads from L2 or memory (the bound's).
    pub unit_bytes: f64,
    /// L2 size in bytes, and its read bandwidth in bytes/s: sustained (the
    /// prediction's) and peak (the bound's).
    pub l2_bytes: f64,
    pub l2_bw: f64,
    pub l2_peak_bw: f64,
    /// DRAM bandwidth in bytes/s: sustained and peak.
    pub dram_bw: f64,
    pub dram_peak_bw: f64,
    /// Resident threads, 32-bit registers, shared-memory bytes and blocks.
    pub unit_threads: usize,
    pub unit_registers: usize,
    pub unit_shared: u64,
    pub unit_blocks: usize,
    /// Seconds of device time per launch beyond its work.
    pub launch_s: f64,
    /// Warps of independent work a unit needs to run at its peak.
    pub warps_to_hide: f64,
}

/// NVIDIA's published figures (boost clock; sustained bandwidths about
/// 90 % of DRAM peak and the L2 bandwidth microbenchmarks report); the
/// launch time and `warps_to_hide` are calibrated on the H100 (docs/guide/06-cuda.md,
/// "The throughput model").
const H100_SXM: GpuModel = GpuModel {
    name: "H100 SXM",
    units: 132,
    clock_hz: 1.98e9,
    fma_lanes: 128.0,
    issue: 128.0,
    lsu: 32.0,
    shared: 32.0,
    item_lanes: 1.0,
    unit_bytes: 128.0,
    l2_bytes: 50.0 * 1024.0 * 1024.0,
    l2_bw: 5.5e12,
    l2_peak_bw: 12.0e12,
    dram_bw: 3.0e12,
    dram_peak_bw: 3.35e12,
    unit_threads: 2048,
    unit_registers: 65536,
    unit_shared: 228 * 1024,
    unit_blocks: 32,
    launch_s: 5.0e-6,
    warps_to_hide: 16.0,
};

/// The rows of known devices, with the parts of the device name that pick
/// them (all of them, lower case; the first row that matches wins).
pub const DEVICES: &[(&[&str], GpuModel)] = &[
    (
        &["h100", "pcie"],
        GpuModel {
            name: "H100 PCIe",
            units: 114,
            clock_hz: 1.755e9,
            dram_bw: 1.8e12,
            dram_peak_bw: 2.0e12,
            ..H100_SXM
        },
    ),
    (&["h100"], H100_SXM),
    (
        &["h200"],
        GpuModel {
            name: "H200",
            dram_bw: 4.3e12,
            dram_peak_bw: 4.8e12,
            ..H100_SXM
        },
    ),
    (
        &["a100"],
        GpuModel {
            name: "A100",
            units: 108,
            clock_hz: 1.41e9,
            fma_lanes: 64.0,
            l2_bytes: 40.0 * 1024.0 * 1024.0,
            l2_bw: 3.8e12,
            l2_peak_bw: 8.0e12,
            dram_bw: 1.8e12,
            dram_peak_bw: 2.04e12,
            unit_shared: 164 * 1024,
            ..H100_SXM
        },
    ),
];

impl GpuModel {
    /// The model of the device called `name` whose runtime reports
    /// `compute`: its row of [`DEVICES`], else [`GpuModel::generic`].
    pub fn of(name: &str, compute: DeviceCompute) -> GpuModel {
        let lower = name.to_lowercase();
        let row = DEVICES
            .iter()
            .find(|(parts, _)| parts.iter().all(|p| lower.contains(p)));
        let Some((_, row)) = row else {
            return GpuModel::generic(compute);
        };
        let mut m = row.clone();
        if let Some(n) = compute.compute_units.filter(|&n| n > 0) {
            m.units = n;
        }
        if let Some(hz) = compute.clock_hz.filter(|f| f.is_finite() && *f > 0.0) {
            m.clock_hz = hz;
        }
        m
    }

    /// The model a call ranks plans on: the device's row of [`DEVICES`];
    /// else, for a GPU, [`GpuModel::derived`]; for a CPU device (PoCL)
    /// the bound-only [`GpuModel::generic`].
    pub fn for_device(name: &str, lim: &DeviceLimits) -> GpuModel {
        let m = GpuModel::of(name, lim.compute);
        if m.predicts() || lim.compute.cpu {
            m
        } else {
            GpuModel::derived(lim)
        }
    }

    /// The model of a GPU no row names, from what its runtime reports and
    /// its architecture's class: 128 FP32 lanes per unit from sm_86 on
    /// (sm_90 included), 64 before and on other vendors; L2 and memory
    /// bandwidth per unit as the H100's (about 40 and 23 GB/s per SM and
    /// 0.4 MiB of L2). Units and clock where the runtime does not say:
    /// 100 units at 1.5 GHz (the ranking of one call's plans depends on
    /// their ratios, not on these).
    pub fn derived(lim: &DeviceLimits) -> GpuModel {
        let c = lim.compute;
        let units = c.compute_units.filter(|&n| n > 0).unwrap_or(100);
        let per_unit = |x: f64| x * units as f64;
        let wide = lim.cuda_arch.is_some_and(|a| a >= 86 && a != 87);
        GpuModel {
            name: "derived",
            units,
            clock_hz: c
                .clock_hz
                .filter(|f| f.is_finite() && *f > 0.0)
                .unwrap_or(1.5e9),
            fma_lanes: if wide { 128.0 } else { 64.0 },
            l2_bytes: per_unit(0.4 * 1024.0 * 1024.0),
            l2_bw: per_unit(40.0e9),
            l2_peak_bw: per_unit(90.0e9),
            dram_bw: per_unit(23.0e9),
            dram_peak_bw: per_unit(25.0e9),
            unit_threads: c.unit_threads.unwrap_or(2048),
            unit_registers: c.unit_registers.unwrap_or(65536),
            unit_shared: c
                .unit_shared
                .unwrap_or(lim.local_bytes.saturating_add(1024)),
            ..H100_SXM
        }
    }

    /// The bound-only model of a device not in the table: at least 3 GHz,
    /// 128 lanes per unit and 64 per work-item (PoCL vectorizes a
    /// work-item's loop on a CPU core), 256 bytes per cycle and unit and
    /// 20 TB/s in all; 1024 units when the runtime does not say.
    pub fn generic(compute: DeviceCompute) -> GpuModel {
        GpuModel {
            name: "generic",
            units: compute
                .compute_units
                .filter(|&n| n > 0)
                .unwrap_or(GENERIC_UNITS),
            clock_hz: compute
                .clock_hz
                .filter(|f| f.is_finite())
                .unwrap_or(0.0)
                .max(GENERIC_CLOCK_HZ),
            fma_lanes: 128.0,
            issue: f64::INFINITY,
            lsu: f64::INFINITY,
            shared: f64::INFINITY,
            item_lanes: 64.0,
            unit_bytes: 256.0,
            l2_bytes: 0.0,
            l2_bw: f64::INFINITY,
            l2_peak_bw: f64::INFINITY,
            dram_bw: GENERIC_BANDWIDTH,
            dram_peak_bw: GENERIC_BANDWIDTH,
            unit_threads: usize::MAX,
            unit_registers: usize::MAX,
            unit_shared: u64::MAX,
            unit_blocks: usize::MAX,
            launch_s: 0.0,
            warps_to_hide: 0.0,
        }
    }

    /// Whether this model predicts (a row of the table or a derived
    /// model; the generic one only bounds).
    pub fn predicts(&self) -> bool {
        self.name != "generic"
    }
}

/// The generic model's least clock, in Hz: above any GPU's (H100: 1.98 GHz).
pub const GENERIC_CLOCK_HZ: f64 = 3.0e9;
/// The generic model's bandwidth in bytes/s: above any GPU's memory or L2.
pub const GENERIC_BANDWIDTH: f64 = 20.0e12;
/// Units of the generic model where the runtime does not say (more than any
/// GPU has: MI300X 304, H100 132).
pub const GENERIC_UNITS: usize = 1024;

/// What ptxas reports of `mdh_main` (`mdh_gpu::cuda::nvrtc_resources`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resources {
    pub registers: u32,
    pub shared_bytes: u64,
}

/// The bytes a call moves at least.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bytes {
    pub inputs: f64,
    pub outputs: f64,
}

/// The model's answer for one plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Seconds the plan needs at least (for pruning).
    pub bound_s: f64,
    /// Seconds the model expects.
    pub time_s: f64,
    /// What limits it: `fma`, `issue`, `shared`, `lsu`, `latency`, `l2`,
    /// `dram` or `launch`.
    pub limiter: &'static str,
    /// Blocks a unit runs at once, and waves of them on the busiest unit.
    pub blocks_per_unit: usize,
    pub waves: usize,
}

/// What the model reads of a kernel: its description and, per input and
/// output access (in the order of the kernel's views), the buffer, its
/// element bytes, the dimensions it uses and their coefficients in the
/// row-major offset where known.
#[derive(Clone, Debug)]
pub struct ModelKernel {
    pub desc: KernelDesc,
    pub inputs: Vec<ModelAccess>,
    pub outputs: Vec<ModelAccess>,
}

/// One access of a [`ModelKernel`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelAccess {
    /// Index of the buffer among the inputs (or among the outputs).
    pub buffer: usize,
    /// Bytes of one element.
    pub bytes: usize,
    /// The dimensions the index function depends on, in increasing order.
    pub uses: Vec<usize>,
    /// Per md_hom dimension: its coefficient in the row-major offset, when
    /// known.
    pub coefs: Vec<Option<i64>>,
}

impl ModelKernel {
    /// The kernel of one call: coefficients from the call's linear forms.
    pub fn of_call(desc: &KernelDesc, bound: &Bound, info: &KernelInfo) -> ModelKernel {
        let d = desc.kinds.len();
        let accesses = |bufs: &[mdh_rt::desc::BufDesc],
                        linear: &[Vec<mdh_rt::desc::Linear>],
                        bytes: &dyn Fn(usize) -> usize| {
            let mut v = Vec::new();
            for (b, buf) in bufs.iter().enumerate() {
                for (j, a) in buf.accesses.iter().enumerate() {
                    let uses = (0..d)
                        .filter(|&x| a.components.iter().any(|c| c.dims[x] != 0))
                        .collect();
                    let coefs = (0..d)
                        .map(|x| {
                            linear
                                .get(b)
                                .and_then(|l| l.get(j))
                                .map(|l| l.coefs[x] as i64)
                        })
                        .collect();
                    v.push(ModelAccess {
                        buffer: b,
                        bytes: bytes(b),
                        uses,
                        coefs,
                    });
                }
            }
            v
        };
        ModelKernel {
            desc: desc.clone(),
            inputs: accesses(&desc.inputs, &bound.in_linear, &|b| {
                info.in_bytes.get(b).copied().unwrap_or(4)
            }),
            outputs: accesses(&desc.outputs, &bound.out_linear, &|b| {
                info.out_types.get(b).map_or(4, |&t| elem_bytes(t))
            }),
        }
    }
}

impl Bytes {
    /// The bytes of one call's buffers.
    pub fn of_call(bound: &Bound, info: &KernelInfo) -> Bytes {
        let sum = |shapes: &[Vec<usize>], bytes: &dyn Fn(usize) -> usize| {
            shapes
                .iter()
                .enumerate()
                .map(|(b, s)| s.iter().product::<usize>() as f64 * bytes(b) as f64)
                .sum()
        };
        Bytes {
            inputs: sum(&bound.in_shapes, &|b| {
                info.in_bytes.get(b).copied().unwrap_or(4)
            }),
            outputs: sum(&bound.out_shapes, &|b| {
                info.out_types.get(b).map_or(4, |&t| elem_bytes(t))
            }),
        }
    }
}

/// The plan's geometry and work per block.
struct Shape {
    points: f64,
    groups: usize,
    threads: usize,
    /// Points of the first (whole) block.
    block_points: f64,
    /// Whether every block is whole.
    whole: bool,
    /// Work per point: global and shared loads, other instructions.
    global_loads: f64,
    /// L1 cycles of the global loads per point (a warp's access of
    /// scattered sectors takes one cycle per 4 of them).
    lsu_loads: f64,
    /// How many times the bytes of the outputs their writes move (sectors
    /// of 32 bytes partly written).
    out_spread: f64,
    shared_loads: f64,
    other: f64,
    /// Elements of `local` tiles copied per block.
    copies: f64,
    /// Bytes each block loads of its inputs (its footprint).
    block_bytes: f64,
    private_kept: f64,
    /// Work-groups that split PW dimensions (the second pass runs).
    pw_groups: usize,
    kept_points: f64,
    /// 4 / the bytes of the smallest element type (at least 1).
    narrow: f64,
    /// The tensor-core mode the call's products run in (`Off`: FP32 FMAs).
    mma: Mma,
}

impl Shape {
    /// How many times the FP32 FMA rate the plan's products run at (on
    /// tensor cores, the mode's rate whatever the inputs' width).
    fn fma_speedup(&self) -> f64 {
        match self.mma {
            Mma::Off => self.narrow,
            m => mma_rate(m),
        }
    }
}

fn shape(k: &ModelKernel, plan: &GpuPlan, extents: &[usize]) -> Shape {
    let kinds = &k.desc.kinds;
    let r = plan.resolve(kinds, extents);
    let mma = if r.tensor_cores(&k.desc) {
        plan.mma
    } else {
        Mma::Off
    };
    let kept = DimKind::kept(kinds);
    let prod = |xs: &mut dyn Iterator<Item = usize>| xs.map(|v| v as f64).product::<f64>();
    let private_kept = prod(&mut kept.iter().map(|&x| r.private[x]));
    let (mut global_loads, mut shared_loads, mut copies, mut block_bytes) = (0.0, 0.0, 0.0, 0.0);
    let mut lsu_loads = 0.0;
    let tiles = prod(&mut (0..extents.len()).map(|x| r.block[x].div_ceil(r.tile[x].max(1))));
    let fast = fastest_dim(kinds, &r);
    for a in &k.inputs {
        let reuse = prod(
            &mut kept
                .iter()
                .filter(|x| !a.uses.contains(x))
                .map(|&x| r.private[x]),
        );
        let footprint = prod(&mut a.uses.iter().map(|&x| r.block[x]));
        let bytes = a.bytes as f64;
        // Tensor-core fragments: a quarter of the loads (module docs).
        let reuse = if mma != Mma::Off { 4.0 * reuse } else { reuse };
        if r.local.get(a.buffer).copied().unwrap_or(false) {
            shared_loads += 1.0 / reuse;
            let tile = prod(&mut a.uses.iter().map(|&x| r.tile[x]));
            copies += tiles * tile;
            block_bytes += tiles * tile * bytes;
        } else {
            let spread = spread(a, fast, &r);
            global_loads += 1.0 / reuse;
            lsu_loads += spread / reuse;
            block_bytes += footprint * bytes * spread;
        }
    }
    let out_spread = k
        .outputs
        .iter()
        .map(|a| spread(a, fast, &r))
        .fold(1.0, f64::max);
    let smallest = k
        .inputs
        .iter()
        .chain(&k.outputs)
        .map(|a| a.bytes)
        .min()
        .unwrap_or(4)
        .max(1);
    Shape {
        points: prod(&mut extents.iter().copied()),
        groups: r.group_count().max(1),
        threads: r.threads_per_group().max(1),
        block_points: prod(&mut r.block.iter().copied()),
        whole: (0..extents.len()).all(|x| extents[x].is_multiple_of(r.block[x].max(1))),
        global_loads,
        lsu_loads,
        out_spread,
        shared_loads,
        other: OTHER_BASE + OTHER_PER_STEP / private_kept,
        copies,
        block_bytes,
        private_kept,
        pw_groups: r.pw_groups(kinds),
        kept_points: DimKind::kept_points(kinds, extents) as f64,
        narrow: (4.0 / smallest as f64).max(1.0),
        mma,
    }
}

/// The dimension along which consecutive threads of a warp lie: the
/// emitter numbers work-items with the PW dimensions inner and the last
/// dimension fastest; `None` when every dimension has one work-item.
fn fastest_dim(kinds: &[DimKind], r: &Resolved) -> Option<usize> {
    let split = |x: &usize| r.items[*x] > 1;
    let last_pw = (0..kinds.len())
        .filter(|&x| kinds[x] == DimKind::Pw)
        .rfind(split);
    last_pw.or_else(|| {
        (0..kinds.len())
            .filter(|&x| kinds[x] != DimKind::Pw)
            .rfind(split)
    })
}

/// How many times its useful bytes a warp's access moves: 1 when
/// consecutive threads read consecutive elements or one element
/// (broadcast), the distance between them in elements when it is known at
/// compile time (blocked work-items: times their private extent), at most
/// a 32-byte sector per element.
fn spread(a: &ModelAccess, fast: Option<usize>, r: &Resolved) -> f64 {
    let most = (32 / a.bytes.max(1)) as f64;
    let Some(x) = fast.filter(|x| a.uses.contains(x)) else {
        return 1.0;
    };
    let step = if r.blocked { r.private[x] as f64 } else { 1.0 };
    match a.coefs.get(x).copied().flatten() {
        Some(c) => (c.unsigned_abs() as f64 * step).clamp(1.0, most),
        None => most,
    }
}

/// Blocks of `threads` threads one unit holds at once, with `res` (the
/// registers per thread and shared memory per block ptxas reports;
/// `None`: only the threads and `shared_bytes` limit).
pub fn occupancy(m: &GpuModel, threads: usize, res: Option<Resources>, shared_bytes: u64) -> usize {
    let warps = threads.div_ceil(32).max(1);
    let by_threads = m.unit_threads / (warps * 32);
    let by_registers = match res {
        // Registers are allocated per warp in units of 256.
        Some(r) => {
            let per_warp = (r.registers as usize * 32).div_ceil(256) * 256;
            m.unit_registers / (per_warp * warps).max(1)
        }
        None => usize::MAX,
    };
    let shared = res.map_or(shared_bytes, |r| r.shared_bytes.max(shared_bytes));
    // The driver reserves 1 KiB of shared memory per block.
    let by_shared = (m.unit_shared / (shared + 1024)) as usize;
    by_threads
        .min(by_registers)
        .min(by_shared)
        .min(m.unit_blocks)
}

/// The model of `plan` for kernel `k` at `extents` moving `bytes` on `m`;
/// `res`: ptxas' report of `mdh_main` when known; `shared_bytes`: the
/// local memory the plan declares (`mdh::gpu::fit`'s count).
pub fn predict(
    k: &ModelKernel,
    plan: &GpuPlan,
    extents: &[usize],
    bytes: Bytes,
    m: &GpuModel,
    res: Option<Resources>,
    shared_bytes: u64,
) -> Prediction {
    let s = shape(k, plan, extents);
    let bound_s = bound(&s, bytes, m);
    if !m.predicts() {
        return Prediction {
            bound_s,
            time_s: bound_s,
            limiter: "bound",
            blocks_per_unit: 1,
            waves: 1,
        };
    }
    // One block's cycles at the unit's full rate, by what limits them.
    let gp = s.block_points;
    let products = match s.mma {
        Mma::Off => 1.0,
        m => hmma_per_product(m),
    };
    let instructions = gp * (products + s.global_loads + s.shared_loads + s.other) + 4.0 * s.copies;
    let per_block = [
        ("fma", gp / (m.fma_lanes * s.fma_speedup())),
        ("issue", instructions / m.issue),
        ("shared", (gp * s.shared_loads + s.copies) / m.shared),
        ("lsu", (gp * s.lsu_loads + s.copies) / m.lsu),
    ];
    let (mut limiter, block_cycles) =
        per_block
            .iter()
            .copied()
            .fold(("fma", 0.0), |a, b| if b.1 > a.1 { b } else { a });
    let bpu = occupancy(m, s.threads, res, shared_bytes).max(1);
    let per_unit = s.groups.div_ceil(m.units.max(1));
    let waves = per_unit.div_ceil(bpu);
    // A wave of `r` blocks runs at full rate with enough independent warps.
    let warps = s.threads.div_ceil(32) as f64;
    let ilp = s.private_kept.clamp(1.0, MAX_ILP);
    let wave = |r: usize| {
        if r == 0 {
            return 0.0;
        }
        let rate = (r as f64 * warps * ilp / m.warps_to_hide).min(1.0);
        r as f64 * block_cycles / rate
    };
    let cycles = (per_unit / bpu) as f64 * wave(bpu) + wave(per_unit % bpu);
    if cycles > 1.0001 * per_unit as f64 * block_cycles {
        limiter = "latency";
    }
    let compute_s = cycles / m.clock_hz;
    // Memory: everything once, then what the blocks load through L2.
    let partial_bytes = if s.pw_groups > 1 {
        2.0 * s.pw_groups as f64 * s.kept_points * 4.0
    } else {
        0.0
    };
    let once = bytes.inputs + bytes.outputs * s.out_spread + partial_bytes;
    let dram_s = if bytes.inputs + bytes.outputs <= m.l2_bytes {
        0.0
    } else {
        once / m.dram_bw
    };
    let l2_s = (s.groups as f64 * s.block_bytes + bytes.outputs * s.out_spread).max(once) / m.l2_bw;
    let launches = if s.pw_groups > 1 { 2.0 } else { 1.0 };
    let launch_s = launches * m.launch_s;
    let mut parts = [
        (limiter, compute_s),
        ("dram", dram_s),
        ("l2", l2_s),
        ("launch", launch_s),
    ];
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    let work_s = compute_s.max(dram_s).max(l2_s);
    Prediction {
        bound_s,
        time_s: (work_s + launch_s).max(bound_s),
        limiter: parts[0].0,
        blocks_per_unit: bpu,
        waves,
    }
}

/// The lower bound of the module documentation.
fn bound(s: &Shape, bytes: Bytes, m: &GpuModel) -> f64 {
    let per_lane = s.fma_speedup() * m.clock_hz;
    let units = s.groups.min(m.units.max(1)) as f64;
    let threads = s.threads as f64;
    let lanes = (s.groups as f64 * threads * m.item_lanes).min(units * m.fma_lanes);
    // The busiest unit: ceil(groups / units) whole blocks when all are
    // whole, else at least the first block.
    let n = if s.whole {
        s.groups.div_ceil(m.units.max(1))
    } else {
        1
    };
    let unit_lanes = (n as f64 * threads * m.item_lanes).min(m.fma_lanes);
    let compute =
        (s.points / (lanes * per_lane)).max(n as f64 * s.block_points / (unit_lanes * per_lane));
    let fits_l2 = bytes.inputs + bytes.outputs <= m.l2_bytes;
    let device_bw = if fits_l2 {
        m.l2_peak_bw
    } else {
        m.dram_peak_bw
    };
    let bandwidth = (units * m.unit_bytes * m.clock_hz).min(device_bw);
    compute.max(bytes.inputs / bandwidth)
}
