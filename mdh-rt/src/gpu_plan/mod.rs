//! The low-level plan on the GPU abstract system models (the paper's
//! Section 3 and Table 1): OpenCL (memory GM, LM, PM; cores WG, WI) and CUDA
//! (memory DM, SM, RM; cores BLK, THR). One plan type serves both: a work-group
//! is a CUDA block, a work-item a CUDA thread, local memory is shared memory.
//!
//! Per md_hom dimension `d`, a [`GpuPlan`] fixes
//! - `groups[d]`: #PRT(WG, d), the number of work-groups; each gets one
//!   contiguous block of `ceil(N_d / groups[d])` indices (0: chosen at run
//!   time);
//! - `tile[d]`: the LM tile, the indices a work-group processes per step
//!   (its block is walked in steps of `tile[d]`);
//! - `items[d]`: #PRT(WI, d), the work-items of a work-group; each takes
//!   `ceil(tile[d] / items[d])` indices of a tile (the PM tile), strided
//!   (work-item `w` takes `w, w + items, …`: coalesced) or blocked
//!   (consecutive indices).
//!
//! `local[b]` copies the tiles of input `b` cooperatively into local memory
//! (the paper's D3/S3 memory region) before they are used.
//!
//! Partial results of PW dimensions live in private memory, are combined
//! across the work-items of a group (on CUDA first by warp shuffles, the
//! WRP layer of ASM_CUDA+WRP) by a tree in local memory, and across
//! work-groups by a second pass. Plans are fitted to a device's limits: its
//! work-items per work-group (CUDA: at most 1024 threads per block) and its
//! local memory (CUDA: the 48 KiB of static shared memory per block). PS
//! dimensions are computed like CC dimensions and then scanned in place
//! (per PS dimension: chunks of a line by work-groups, then the chunks'
//! carries; see `codegen::gpu`).

mod defines;
mod local;
mod mma;
mod plan;
mod resolve;
mod validate;

pub use crate::error::PlanError;
pub use defines::{defines, epilogue_defines, index_type, IndexType};
pub use local::{
    can_cache_locally, copy_vector, fragment_dim, fragment_vector, local_align, local_elems,
};
pub use mma::{mma_dims, Mma, MmaDims};
pub use plan::{GpuPlan, PlanField, PlanValue, PLAN_FIELDS};
pub use resolve::Resolved;
pub use validate::output_accesses;

/// Most work-items of one work-group any plan may ask for (CUDA's limit;
/// OpenCL devices report theirs, checked at run time).
pub const MAX_ITEMS: usize = 1024;
/// Work-items per work-group of the second pass and of the scans.
pub const PASS_ITEMS: usize = 64;

/// Elements of a line that one work-group of the scan pass scans; longer
/// lines are split into chunks of this many across work-groups.
pub const SCAN_CHUNK: usize = 4 * PASS_ITEMS;
/// Most private accumulators per work-item (all output accesses together):
/// more would spill out of registers.
pub const MAX_PRIVATE_ACCUMULATORS: usize = 64;

/// The compute capability of a CUDA architecture as one number (`sm_90`
/// and `sm_90a`: 90, `compute_80`: 80), by which a `cuda` config entry
/// tuned on one device serves the other devices of its architecture
/// (`arch:` in the config); `None` for what is not such a name.
pub fn cuda_arch_number(arch: &str) -> Option<u32> {
    let digits = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"))?;
    let digits = digits.strip_suffix('a').unwrap_or(digits);
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The lanes of a warp of the warp layer (CUDA's warp size).
pub const WARP_LANES: usize = 32;

/// The lanes of a warp along each dimension: `items` / `warps` (`warps`
/// empty: no warp layer, every work-item a lane).
fn lanes_of(items: &[usize], warps: &[usize]) -> Vec<usize> {
    (0..items.len())
        .map(|x| items[x] / warps.get(x).copied().unwrap_or(1).max(1))
        .collect()
}

/// The most pipeline stages a plan may ask for.
pub const MAX_STAGES: usize = 2;

/// The vector widths a plan may ask for.
pub const VECTOR_WIDTHS: [usize; 3] = [1, 2, 4];
/// The most padding a plan may add to a local tile's innermost extent.
pub const MAX_PAD: usize = 32;

fn err(field: &'static str, message: String) -> PlanError {
    PlanError { field, message }
}

#[cfg(test)]
mod tests {
    use super::cuda_arch_number;

    #[test]
    fn cuda_architectures_read_as_their_compute_capability() {
        assert_eq!(cuda_arch_number("sm_90"), Some(90));
        assert_eq!(cuda_arch_number("sm_90a"), Some(90));
        assert_eq!(cuda_arch_number("compute_80"), Some(80));
        assert_eq!(cuda_arch_number("sm_120"), Some(120));
        for not in ["90", "sm_", "sm_9", "sm_9x", "H100", "sm_90b", ""] {
            assert_eq!(cuda_arch_number(not), None, "{not}");
        }
    }
}
