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
//! GPU: the per-SM throughput model of [`crate::gpu_model`] (its bound).

use mdh_core::plan::{simd_lanes, CpuPlan};
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
}
