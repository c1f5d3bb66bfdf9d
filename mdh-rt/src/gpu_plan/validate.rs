//! The constraints a plan keeps, checked against the kernel, each error a
//! sentence that says how to fix it.

use super::local::can_cache_locally;
use super::mma::{mma_dims, mma_geometry, Mma};
use super::{
    err, lanes_of, GpuPlan, MAX_ITEMS, MAX_PAD, MAX_PRIVATE_ACCUMULATORS, MAX_STAGES,
    VECTOR_WIDTHS, WARP_LANES,
};
use crate::desc::KernelDesc;
use crate::error::PlanError;
use crate::types::DimKind;

/// The number of output accesses (one partial result each).
pub fn output_accesses(k: &KernelDesc) -> usize {
    k.outputs.iter().map(|b| b.accesses.len()).sum()
}

impl GpuPlan {
    /// Checks a plan against the kernel and the model's constraints.
    pub fn validate(&self, k: &KernelDesc) -> Result<(), PlanError> {
        let d = k.dims.len();
        for (name, v) in [
            ("groups", &self.groups),
            ("items", &self.items),
            ("tile", &self.tile),
        ] {
            if v.len() != d {
                return Err(err(name, format!(
                    "`{name}` has {} entries but the kernel has {d} dimensions; give one per md_hom dimension",
                    v.len()
                )));
            }
        }
        for (name, v) in [("items", &self.items), ("tile", &self.tile)] {
            if let Some(x) = v.iter().position(|&t| t == 0) {
                return Err(err(
                    name,
                    format!("`{name}` of dimension {x} is 0; it must be at least 1"),
                ));
            }
        }
        let threads = self
            .items
            .iter()
            .try_fold(1usize, |a, &x| a.checked_mul(x))
            .unwrap_or(usize::MAX);
        if threads > MAX_ITEMS {
            return Err(err(
                "items",
                format!(
                    "`items` {:?} asks for {threads} work-items per work-group; at most {MAX_ITEMS} are allowed (CUDA's threads per block): make `items` smaller",
                    self.items
                ),
            ));
        }
        let private = self
            .private_points(&k.kinds)
            .saturating_mul(output_accesses(k).max(1));
        if private > MAX_PRIVATE_ACCUMULATORS {
            return Err(err(
                "tile",
                format!(
                    "each work-item would hold {private} partial results (kept `tile` / `items`, times the output accesses); at most {MAX_PRIVATE_ACCUMULATORS} fit the registers: make `tile` smaller or `items` larger along kept dimensions"
                ),
            ));
        }
        if self.local.len() != k.inputs.len() {
            return Err(err(
                "local",
                format!(
                    "`local` has {} entries but the kernel has {} inputs; give one per input buffer",
                    self.local.len(),
                    k.inputs.len()
                ),
            ));
        }
        self.validate_layout(k)?;
        self.validate_warps(k)?;
        self.validate_mma(k)?;
        if let Some(b) = (0..k.inputs.len()).find(|&b| self.local[b] && !can_cache_locally(k, b)) {
            return Err(err(
                "local",
                format!(
                    "input `{}` cannot be cached in local memory: its index functions move differently with the dimensions; set its `local` entry to false",
                    k.inputs[b].name
                ),
            ));
        }
        Ok(())
    }

    /// Whether the plan runs on `backend` (`opencl` or `cuda`): tensor
    /// cores are CUDA's.
    pub fn validate_backend(&self, backend: &str) -> Result<(), PlanError> {
        if self.mma != Mma::Off && backend != "cuda" {
            return Err(err(
                "mma",
                format!("`mma` runs on CUDA's tensor cores, and this is an `{backend}` entry; drop `mma` or make it a `cuda` entry"),
            ));
        }
        Ok(())
    }

    /// Tensor cores only for a contraction with [`MmaDims`] and a plan whose
    /// warps hold whole mma tiles ([`mma_geometry`]).
    fn validate_mma(&self, k: &KernelDesc) -> Result<(), PlanError> {
        if self.mma == Mma::Off {
            return Ok(());
        }
        let Some(dims) = mma_dims(k) else {
            let why = if k.contraction {
                "it has no kept dimension that one input alone uses beside one that only the other uses"
            } else {
                "it is not the f32 product of two inputs combined with PW(+)"
            };
            return Err(err(
                "mma",
                format!(
                    "`mma: {}` runs contraction-shaped kernels on tensor cores, and `{}` is not one ({why}); drop `mma` (exact FP32)",
                    self.mma.name(),
                    k.name
                ),
            ));
        };
        self.mma.check_inputs(k, &dims)?;
        mma_geometry(
            &dims,
            &lanes_of(&self.items, &self.warps),
            &self.items,
            &self.tile,
            self.mma.k_step(),
        )
    }

    /// The warp layer: none (empty), or per dimension at least 1 warp, 1
    /// along PW dimensions, dividing the work-items, whose lanes make one
    /// warp.
    pub fn validate_warps(&self, k: &KernelDesc) -> Result<(), PlanError> {
        let w = &self.warps;
        if w.is_empty() {
            return Ok(());
        }
        let d = k.dims.len();
        if w.len() != d {
            return Err(err(
                "warps",
                format!(
                    "`warps` has {} entries but the kernel has {d} dimensions; give one per md_hom dimension (or none)",
                    w.len()
                ),
            ));
        }
        if let Some(x) = (0..d).find(|&x| w[x] == 0 || !self.items[x].is_multiple_of(w[x])) {
            return Err(err(
                "warps",
                format!(
                    "`warps` of dimension {x} is {}; it must be at least 1 and divide `items` ({}), each warp taking `items` / `warps` lanes",
                    w[x], self.items[x]
                ),
            ));
        }
        if let Some(x) = (0..d).find(|&x| w[x] > 1 && k.kinds[x] == DimKind::Pw) {
            return Err(err(
                "warps",
                format!(
                    "`warps` of dimension {x} is {}, a PW dimension: the work-items that combine a result stay lanes of one warp; give 1",
                    w[x]
                ),
            ));
        }
        let lanes: usize = lanes_of(&self.items, w).iter().product();
        if w.iter().any(|&n| n > 1) && lanes != WARP_LANES {
            return Err(err(
                "warps",
                format!(
                    "`items` / `warps` {:?} gives {lanes} lanes per warp; a warp has {WARP_LANES}: change `warps` or `items`",
                    lanes_of(&self.items, w)
                ),
            ));
        }
        Ok(())
    }

    /// The per-input fields of the local-memory layout: one entry per input,
    /// widths among [`VECTOR_WIDTHS`], transposition and padding only for
    /// inputs cached in local memory.
    fn validate_layout(&self, k: &KernelDesc) -> Result<(), PlanError> {
        let n = k.inputs.len();
        for (name, len) in [
            ("vector", self.vector.len()),
            ("transpose", self.transpose.len()),
            ("pad", self.pad.len()),
        ] {
            if len != n {
                return Err(err(
                    name,
                    format!("`{name}` has {len} entries but the kernel has {n} inputs; give one per input buffer"),
                ));
            }
        }
        if let Some(b) = (0..n).find(|&b| !VECTOR_WIDTHS.contains(&self.vector[b])) {
            return Err(err(
                "vector",
                format!(
                    "`vector` of input `{}` is {}; the widths are {VECTOR_WIDTHS:?}",
                    k.inputs[b].name, self.vector[b]
                ),
            ));
        }
        if !(1..=MAX_STAGES).contains(&self.stages) {
            return Err(err(
                "stages",
                format!(
                    "`stages` is {}; it must be 1 (copy, then compute each tile) or {MAX_STAGES} (prefetch the next tile)",
                    self.stages
                ),
            ));
        }
        if let Some(b) = (0..n).find(|&b| self.pad[b] > MAX_PAD) {
            return Err(err(
                "pad",
                format!(
                    "`pad` of input `{}` is {}; at most {MAX_PAD} elements pad a tile",
                    k.inputs[b].name, self.pad[b]
                ),
            ));
        }
        for (name, on) in [
            (
                "transpose",
                (0..n).find(|&b| self.transpose[b] && !self.local[b]),
            ),
            ("pad", (0..n).find(|&b| self.pad[b] > 0 && !self.local[b])),
        ] {
            if let Some(b) = on {
                return Err(err(
                    name,
                    format!(
                        "`{name}` of input `{}` shapes its local-memory tile, but its `local` entry is false; set `local` to true or drop the `{name}` entry",
                        k.inputs[b].name
                    ),
                ));
            }
        }
        Ok(())
    }
}
