//! A plan fitted to the extents of one call.

use super::mma::{mma_dims, mma_geometry, Mma};
use super::{lanes_of, GpuPlan, WARP_LANES};
use crate::desc::KernelDesc;
use crate::types::DimKind;

/// A plan fitted to the extents of one call: every count effective, every
/// work-group non-empty. A resolved plan is a plan: its fields read as the
/// plan's (`r.items`), with the two the call adds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Resolved {
    /// The plan as the call runs it: work-items and tiles clamped to the
    /// extents, group counts exact, 1 stage without a cached input, and 1
    /// warp per dimension without a warp layer (or where the clamped
    /// work-items no longer make whole warps). `mma` stays the plan's
    /// choice; whether a call's tiles run on tensor cores is decided in
    /// [`defines`](super::defines) ([`names::MMA`](crate::names::MMA)).
    pub plan: GpuPlan,
    /// Indices per work-group (its block) along each dimension.
    pub block: Vec<usize>,
    /// Indices per work-item per tile (the PM tile).
    pub private: Vec<usize>,
}

impl std::ops::Deref for Resolved {
    type Target = GpuPlan;

    fn deref(&self) -> &GpuPlan {
        &self.plan
    }
}

impl Resolved {
    pub fn threads_per_group(&self) -> usize {
        self.items.iter().product()
    }

    pub fn group_count(&self) -> usize {
        self.groups.iter().product()
    }

    /// Whether this call's full tiles run on tensor cores: the plan asks
    /// for them and its work-items and tiles, clamped to the call's
    /// extents, still make whole mma tiles (FP32 elsewhere: a plan is valid
    /// at every size).
    pub fn tensor_cores(&self, k: &KernelDesc) -> bool {
        self.mma != Mma::Off
            && mma_dims(k).is_some_and(|dims| {
                mma_geometry(
                    &dims,
                    &self.lanes(),
                    &self.items,
                    &self.tile,
                    self.mma.k_step(),
                )
                .is_ok()
            })
    }

    /// The lanes of a warp along each dimension.
    pub fn lanes(&self) -> Vec<usize> {
        lanes_of(&self.items, &self.warps)
    }

    /// Work-groups that split PW dimensions (their partial results need the
    /// second pass).
    pub fn pw_groups(&self, kinds: &[DimKind]) -> usize {
        (0..kinds.len())
            .filter(|&x| kinds[x] == DimKind::Pw)
            .map(|x| self.groups[x])
            .product()
    }
}

/// Work-groups the run-time choice aims for when kept dimensions alone
/// give fewer: enough to fill a large GPU.
const TARGET_GROUPS: usize = 256;

impl GpuPlan {
    /// The plan for `extents`: work-items and tiles clamped to the extents
    /// (no idle work-items on small sizes), `groups` 0 resolved, and the
    /// group counts made exact so that no work-group is empty.
    pub fn resolve(&self, kinds: &[DimKind], extents: &[usize]) -> Resolved {
        let d = extents.len();
        let mut items = vec![1; d];
        let mut tile = vec![1; d];
        let mut block = vec![0; d];
        let mut groups = vec![1; d];
        for x in 0..d {
            let n = extents[x].max(1);
            tile[x] = self.tile[x].min(n);
            items[x] = self.items[x].min(tile[x]);
        }
        let kept_groups: usize = DimKind::kept(kinds)
            .into_iter()
            .map(|x| {
                if self.groups[x] == 0 {
                    extents[x].max(1).div_ceil(tile[x])
                } else {
                    self.groups[x]
                }
            })
            .product();
        let mut pw_budget = TARGET_GROUPS.div_ceil(kept_groups.max(1));
        for x in 0..d {
            let n = extents[x];
            let wanted = match (self.groups[x], kinds[x]) {
                (0, DimKind::Pw) => {
                    let g = n.max(1).div_ceil(tile[x]).min(pw_budget).max(1);
                    pw_budget = pw_budget.div_ceil(g);
                    g
                }
                (0, _) => n.max(1).div_ceil(tile[x]),
                (g, _) => g.min(n.max(1)),
            };
            block[x] = n.div_ceil(wanted);
            groups[x] = if n == 0 { 1 } else { n.div_ceil(block[x]) };
        }
        let private = (0..d).map(|x| tile[x].div_ceil(items[x])).collect();
        // Work-items clamped to small extents may no longer make whole
        // warps: then no warp layer for this call.
        let warps = if self.warps.len() == d
            && (0..d).all(|x| self.warps[x] > 0 && items[x].is_multiple_of(self.warps[x]))
            && lanes_of(&items, &self.warps).iter().product::<usize>() == WARP_LANES
        {
            self.warps.clone()
        } else {
            vec![1; d]
        };
        let stages = if self.local.iter().any(|&l| l) {
            self.stages
        } else {
            1
        };
        Resolved {
            plan: GpuPlan {
                groups,
                items,
                tile,
                stages,
                warps,
                ..self.clone()
            },
            block,
            private,
        }
    }
}
