//! Analytic lower bounds on a plan's run time, for pruning: a candidate
//! whose bound exceeds the best measured time cannot win and is not built
//! (CPU) or not compiled and launched (GPU). A bound must never exceed the
//! real time, so the machine is modelled optimistically; what depends on
//! the plan is how much of the machine it can use.
//!
//! CPU ([`lower_bound`]): every lane of both FMA ports busy at a clock no
//! CPU here exceeds, every input byte loaded once through both load ports;
//! the COR parts give at most `Π parts` tasks, and the largest task (its
//! extents rounded up to whole register tiles) runs on one core alone.
//!
//! GPU ([`gpu_lower_bound`]): the plan's geometry is the facade's own
//! ([`GpuPlan::resolve`], as `mdh::gpu::job` launches it). A compute unit
//! (an SM, a CU, a CPU core under PoCL) does at most
//! [`GPU_LANES_PER_UNIT`] points per cycle, a work-item at most
//! [`GPU_LANES_PER_ITEM`] (a GPU thread does one; PoCL may vectorize a
//! work-item's loop on a CPU core), both times `4 / bytes` of the
//! kernel's smallest element type (packed halves and bytes), at the larger
//! of the device's reported clock and [`GPU_CLOCK_HZ`]. So the points are
//! spread over at most `min(work-items × item lanes, min(work-groups,
//! units) × unit lanes)` lanes, and the largest work-group's block runs on
//! one unit alone: a plan with few work-items or work-groups gets a high
//! bound. Input bytes are read once, at most [`GPU_UNIT_BYTES_PER_CYCLE`]
//! per busy unit and cycle and [`GPU_BANDWIDTH`] in all. Units unknown to
//! the runtime count as [`GPU_FALLBACK_UNITS`].

use mdh::gpu::DeviceCompute;
use mdh_core::gpu_plan::GpuPlan;
use mdh_core::plan::elem_bytes;
use mdh_core::plan::{simd_lanes, CpuPlan};
use mdh_core::spec::DimKind;
use mdh_core::Checked;

/// Cycles per second: above any sustained all-core clock.
const CLOCK_HZ: f64 = 6.0e9;
const FMA_PORTS: f64 = 2.0;
/// Bytes per cycle and core: two 64-byte loads.
const LOAD_BYTES_PER_CYCLE: f64 = 128.0;

pub struct Machine {
    pub threads: usize,
}

/// Seconds the plan needs at least for a kernel with `extents` whose
/// inputs have `input_bytes` bytes in all.
pub fn lower_bound(
    k: &Checked,
    plan: &CpuPlan,
    extents: &[usize],
    input_bytes: f64,
    m: &Machine,
) -> f64 {
    let lanes = simd_lanes(k) as f64;
    let threads = m.threads.max(1) as f64;
    let points: f64 = extents.iter().map(|&e| e as f64).product();
    // COR parts: 0 lets the run time choose, up to one per thread.
    let mut tasks = 1f64;
    let mut largest = 1f64;
    for (x, &e) in extents.iter().enumerate() {
        let reg = plan.reg[x].max(1);
        let tiles = e.div_ceil(reg).max(1);
        let parts = match plan.cor[x] {
            0 => tiles.min(m.threads.max(1)),
            p => p.min(tiles),
        };
        tasks *= parts as f64;
        largest *= (tiles.div_ceil(parts) * reg) as f64;
    }
    let used = tasks.min(threads);
    let per_core = lanes * FMA_PORTS * CLOCK_HZ;
    let compute = (points / (used * per_core)).max(largest / per_core);
    let loads = input_bytes / (used * LOAD_BYTES_PER_CYCLE * CLOCK_HZ);
    compute.max(loads)
}

/// Points per cycle one GPU compute unit does at most (32-bit elements): an
/// H100 SM has 128 FP32 lanes, an AMD CU 64 (128 dual-issued), a CPU core
/// under PoCL 2 × 16 (AVX-512).
pub const GPU_LANES_PER_UNIT: f64 = 128.0;
/// Points per cycle one work-item does at most (32-bit elements): a GPU
/// thread one; under PoCL a work-item's loop vectorized on a CPU core,
/// 2 × 16 lanes, at up to twice [`GPU_CLOCK_HZ`].
pub const GPU_LANES_PER_ITEM: f64 = 64.0;
/// The least clock assumed, in Hz: above any GPU's (H100: 1.98 GHz); a
/// device that reports a higher one is taken at its word.
pub const GPU_CLOCK_HZ: f64 = 3.0e9;
/// Bytes one compute unit reads per cycle at most (an H100 SM's L1: 128).
pub const GPU_UNIT_BYTES_PER_CYCLE: f64 = 256.0;
/// Bytes per second the whole device reads at most: above any GPU's memory
/// or L2 bandwidth (H100: 3.35 TB/s HBM3).
pub const GPU_BANDWIDTH: f64 = 20.0e12;
/// Compute units assumed where the runtime does not say (more than any GPU
/// has: MI300X 304, H100 132).
pub const GPU_FALLBACK_UNITS: usize = 1024;

/// What the GPU bound knows of a device.
#[derive(Clone, Copy, Debug)]
pub struct Gpu {
    pub compute_units: usize,
    pub clock_hz: f64,
}

impl Gpu {
    /// The optimistic model of a device from what its runtime says.
    pub fn of(c: DeviceCompute) -> Gpu {
        Gpu {
            compute_units: c
                .compute_units
                .filter(|&n| n > 0)
                .unwrap_or(GPU_FALLBACK_UNITS),
            clock_hz: c
                .clock_hz
                .filter(|f| f.is_finite())
                .unwrap_or(0.0)
                .max(GPU_CLOCK_HZ),
        }
    }
}

/// Seconds the GPU plan needs at least for a kernel with `kinds` and
/// `extents` whose inputs have `input_bytes` bytes in all (the passes after
/// `mdh_main` only add to it and are not counted).
pub fn gpu_lower_bound(
    k: &Checked,
    kinds: &[DimKind],
    plan: &GpuPlan,
    extents: &[usize],
    input_bytes: f64,
    g: &Gpu,
) -> f64 {
    let r = plan.resolve(kinds, extents);
    let points: f64 = extents.iter().map(|&e| e as f64).product();
    // The first work-group has a whole block along every dimension.
    let group_points: f64 = r.block.iter().map(|&b| b as f64).product();
    let smallest = k
        .inputs
        .iter()
        .chain(&k.outputs)
        .map(|b| elem_bytes(b.ty))
        .min()
        .unwrap_or(4)
        .max(1);
    let per_lane = (4.0 / smallest as f64).max(1.0) * g.clock_hz;
    let groups = r.group_count().max(1);
    let items = r.threads_per_group().max(1) as f64;
    let units = groups.min(g.compute_units.max(1)) as f64;
    let lanes = (groups as f64 * items * GPU_LANES_PER_ITEM).min(units * GPU_LANES_PER_UNIT);
    let group_lanes = (items * GPU_LANES_PER_ITEM).min(GPU_LANES_PER_UNIT);
    let compute = (points / (lanes * per_lane)).max(group_points / (group_lanes * per_lane));
    let bandwidth = (units * GPU_UNIT_BYTES_PER_CYCLE * g.clock_hz).min(GPU_BANDWIDTH);
    compute.max(input_bytes / bandwidth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_task_is_bounded_by_one_core() {
        let k = mdh_core::fixtures::matvec();
        let m = Machine { threads: 4 };
        let mut p = CpuPlan::default_for(&k);
        let ext = [1024, 1024];
        let bytes = 4.0 * (1024.0 * 1024.0 + 1024.0);
        p.cor = vec![4, 1];
        let parallel = lower_bound(&k, &p, &ext, bytes, &m);
        p.cor = vec![1, 1];
        let serial = lower_bound(&k, &p, &ext, bytes, &m);
        assert!(
            (serial / parallel - 4.0).abs() < 0.3,
            "{serial} vs {parallel}"
        );
        // Below what any real CPU achieves: 1M FMAs in > 1 µs.
        assert!(parallel < 1e-5 && parallel > 0.0);
    }

    fn gpu_plan(groups: [usize; 2], items: [usize; 2], tile: [usize; 2]) -> GpuPlan {
        GpuPlan {
            groups: groups.to_vec(),
            items: items.to_vec(),
            tile: tile.to_vec(),
            local: vec![false, false],
            blocked: false,
            vector: vec![1, 1],
            transpose: vec![false, false],
            pad: vec![0, 0],
        }
    }

    #[test]
    fn one_work_item_is_bounded_far_above_the_whole_device() {
        let k = mdh_core::fixtures::matvec();
        let kinds = [DimKind::Cc, DimKind::Pw];
        // An H100 as CUDA reports it: 132 SMs at 1.98 GHz.
        let h100 = Gpu::of(DeviceCompute {
            compute_units: Some(132),
            clock_hz: Some(1.98e9),
        });
        assert_eq!(h100.clock_hz, GPU_CLOCK_HZ);
        let ext = [8192, 8192];
        let bytes = 4.0 * (8192.0 * 8192.0 + 8192.0);
        let points = 8192.0 * 8192.0;
        let plan = gpu_plan([0, 0], [64, 4], [64, 256]);
        let compute_only = |p: &GpuPlan| gpu_lower_bound(&k, &kinds, p, &ext, 0.0, &h100);
        let alone = compute_only(&gpu_plan([1, 1], [1, 1], [1, 1]));
        let whole = compute_only(&plan);
        // One work-item: all points at one work-item's rate.
        let one_item = points / (GPU_LANES_PER_ITEM * GPU_CLOCK_HZ);
        assert!(
            (alone / one_item - 1.0).abs() < 1e-9,
            "{alone} vs {one_item}"
        );
        assert!(alone > 100.0 * whole, "{alone} vs {whole}");
        // Positive, and below what the H100 achieves: 67M FMAs at its FP32
        // peak (33.5 T FMA/s) take 2 µs; reading the 268 MB matrix at
        // 3.35 TB/s takes 80 µs.
        assert!(whole > 0.0 && whole < 2e-6, "{whole}");
        let with_memory = gpu_lower_bound(&k, &kinds, &plan, &ext, bytes, &h100);
        assert!(with_memory > whole && with_memory < 80e-6, "{with_memory}");
        // A single work-group of many work-items runs on one unit.
        let group = compute_only(&gpu_plan([1, 1], [64, 4], [64, 256]));
        let one_unit = points / (GPU_LANES_PER_UNIT * GPU_CLOCK_HZ);
        assert!(
            (group / one_unit - 1.0).abs() < 1e-9,
            "{group} vs {one_unit}"
        );
        // Unknown units: the generous fallback, a lower bound still.
        let unknown = Gpu::of(DeviceCompute::default());
        assert_eq!(unknown.compute_units, GPU_FALLBACK_UNITS);
        assert!(gpu_lower_bound(&k, &kinds, &plan, &ext, bytes, &unknown) <= with_memory);
    }

    #[test]
    fn more_groups_than_units_do_not_lower_the_bound() {
        let k = mdh_core::fixtures::matvec();
        let kinds = [DimKind::Cc, DimKind::Pw];
        let two = Gpu {
            compute_units: 2,
            clock_hz: GPU_CLOCK_HZ,
        };
        let ext = [4096, 4096];
        let b = |groups: [usize; 2]| {
            gpu_lower_bound(
                &k,
                &kinds,
                &gpu_plan(groups, [64, 4], [64, 256]),
                &ext,
                0.0,
                &two,
            )
        };
        // Two units bound everything from two work-groups on.
        assert!((b([2, 1]) - b([64, 1])).abs() <= 1e-12 * b([2, 1]));
        assert!((b([1, 1]) / b([2, 1]) - 2.0).abs() < 1e-9);
        // Memory: input bytes at the device's bandwidth at best.
        let mem = gpu_lower_bound(
            &k,
            &kinds,
            &gpu_plan([64, 1], [64, 4], [64, 256]),
            &[64, 1],
            1e9,
            &two,
        );
        assert!((mem - 1e9 / (2.0 * GPU_UNIT_BYTES_PER_CYCLE * GPU_CLOCK_HZ)).abs() < 1e-15);
    }
}
