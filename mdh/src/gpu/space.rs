//! The GPU search space: the paper's Table 1 parameters of the OpenCL and
//! CUDA ASMs as [`GpuPlan`] fields (work-groups, work-items and the local
//! tile per dimension, local-memory caching per input, blocked or strided
//! work-items, and per input that can be cached: the vector width, a
//! transposed or padded local tile; the pipeline stages of the local
//! tiles; for CUDA contractions, tensor cores), each a list of values.
//!
//! Structural constraints are built into the values: work-items and tile
//! factors are powers of two, work-items at most the extent's next power of
//! two, tiles a multiple of the work-items (the parameter is the factor),
//! `local` only for inputs whose accesses share one box
//! ([`can_cache_locally`]), at most as many work-groups as tiles (more
//! would leave work-items idle: on an H100 such a matmul plan took 18 s
//! where the best took 0.2 ms). The constraints that couple dimensions and
//! depend on the device (work-items per work-group, local memory, private
//! accumulators) are the facade's own check, [`crate::gpu::fit`], the one the
//! generated wrappers apply to a forced plan: repairing shrinks a point
//! until it passes, so no plan the device cannot run is measured.

use crate::gpu::{fit, DeviceLimits, KernelInfo};
use mdh_rt::desc::{Bound, KernelDesc};
use mdh_rt::gpu_plan::{
    can_cache_locally, mma_dims, GpuPlan, Mma, MmaDims, MAX_ITEMS, MAX_PRIVATE_ACCUMULATORS,
    MAX_STAGES, VECTOR_WIDTHS,
};
use mdh_rt::types::DimKind;

use crate::search::space::Space;
use crate::search::{Point, Rng};

/// Tile = work-items × one of these, along PW dimensions (steps of the
/// reduction per work-group); kept dimensions stop at the private
/// accumulators' limit.
const PW_TILE_FACTORS: [usize; 10] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];
/// Work-groups per dimension (0: chosen at run time, one per tile along
/// kept dimensions).
const GROUPS: [usize; 12] = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
/// Paddings of a local tile's innermost extent: none, one element (rows of
/// 32-bit elements then fall on different banks), one vector of 4.
const PADS: [usize; 3] = [0, 1, 4];
/// Warps of the warp layer per kept dimension (a plan whose work-items do
/// not make warps of 32 lanes with them is the plan without the layer).
const WARPS: [usize; 4] = [1, 2, 4, 8];
/// Uniform samples behind the estimate of the space's size.
const SIZE_SAMPLES: usize = 2000;

#[derive(Clone, Debug)]
pub enum Param {
    Groups(usize, Vec<usize>),
    Items(usize, Vec<usize>),
    /// The tile as a multiple of the work-items.
    Tile(usize, Vec<usize>),
    Local(usize, Vec<bool>),
    Blocked(Vec<bool>),
    /// Per input: its vector width (used where its tiles are cached).
    Vector(usize, Vec<usize>),
    /// Per input: its local tile transposed (where cached).
    Transpose(usize, Vec<bool>),
    /// Per input: its local tile's padding (where cached).
    Pad(usize, Vec<usize>),
    /// The pipeline stages of the local tiles (where some are cached).
    Stages(Vec<usize>),
    /// Tensor cores (CUDA contractions).
    Mma(Vec<Mma>),
    /// The warps of the warp layer along a kept dimension.
    Warps(usize, Vec<usize>),
}

impl Param {
    fn len(&self) -> usize {
        match self {
            Param::Groups(_, v) | Param::Items(_, v) | Param::Tile(_, v) | Param::Warps(_, v) => {
                v.len()
            }
            Param::Vector(_, v) | Param::Pad(_, v) | Param::Stages(v) => v.len(),
            Param::Local(_, v) | Param::Blocked(v) | Param::Transpose(_, v) => v.len(),
            Param::Mma(v) => v.len(),
        }
    }

    fn counts(&self) -> Option<&[usize]> {
        match self {
            Param::Groups(_, v) | Param::Items(_, v) | Param::Tile(_, v) | Param::Warps(_, v) => {
                Some(v)
            }
            _ => None,
        }
    }
}

/// The GPU space of one kernel at one set of sizes on one device.
#[derive(Clone)]
pub struct GpuSpace {
    pub params: Vec<Param>,
    desc: &'static KernelDesc,
    bound: Bound,
    info: &'static KernelInfo,
    lim: DeviceLimits,
}

fn powers_up_to(n: usize) -> Vec<usize> {
    std::iter::successors(Some(1usize), |&p| p.checked_mul(2))
        .take_while(|&p| p <= n)
        .collect()
}

impl GpuSpace {
    pub fn new(
        desc: &'static KernelDesc,
        bound: Bound,
        info: &'static KernelInfo,
        mut lim: DeviceLimits,
    ) -> GpuSpace {
        // Plans allow fewer work-items than some OpenCL devices do.
        lim.max_items = lim.max_items.min(MAX_ITEMS);
        let mut params = Vec::new();
        for (x, &ext) in bound.extents.iter().enumerate() {
            let reach = ext.max(1).next_power_of_two();
            params.push(Param::Groups(
                x,
                GROUPS.iter().copied().filter(|&g| g <= reach).collect(),
            ));
            params.push(Param::Items(x, powers_up_to(reach.min(lim.max_items))));
            let tile = if desc.kinds[x] == DimKind::Pw {
                PW_TILE_FACTORS.to_vec()
            } else {
                powers_up_to(MAX_PRIVATE_ACCUMULATORS)
            };
            params.push(Param::Tile(x, tile));
        }
        for b in 0..desc.inputs.len() {
            if can_cache_locally(desc, b) {
                params.push(Param::Local(b, vec![false, true]));
                params.push(Param::Vector(b, VECTOR_WIDTHS.to_vec()));
                params.push(Param::Transpose(b, vec![false, true]));
                params.push(Param::Pad(b, PADS.to_vec()));
            } else {
                params.push(Param::Local(b, vec![false]));
            }
        }
        params.push(Param::Blocked(vec![false, true]));
        if (0..desc.inputs.len()).any(|b| can_cache_locally(desc, b)) {
            params.push(Param::Stages((1..=MAX_STAGES).collect()));
        }
        for x in DimKind::kept(&desc.kinds) {
            params.push(Param::Warps(x, WARPS.to_vec()));
        }
        // The CUDA template of a contraction holds the tensor-core path:
        // the TF32 modes, and the 16-bit one of 16-bit inputs.
        if let Some(dims) = mma_dims(desc).filter(|_| info.template.contains("mma.sync")) {
            params.push(Param::Mma(Mma::of_inputs(desc, &dims)));
        }
        GpuSpace {
            params,
            desc,
            bound,
            info,
            lim,
        }
    }

    /// Whether the device can run the plan of `p` (the facade's check).
    pub fn fits(&self, p: &Point) -> bool {
        fit(self.desc, &self.bound, self.info, &self.decode(p), self.lim).is_ok()
    }

    /// A plan that asks for tensor cores given the shape they need (see
    /// `gpu_plan::MmaDims`): per warp 4 lanes along `n`, at least 8 along
    /// `m` (exactly 8 with a warp layer: its warps have 32 lanes), 1
    /// elsewhere, tiles of whole mma tiles (the tile factors are powers of
    /// two, so rounding up is taking the larger); where that shape does not
    /// run on tensor cores at these extents, the plan without them.
    fn tensor_core_shape(&self, plan: GpuPlan) -> GpuPlan {
        let Some(MmaDims { m, n, k, .. }) = mma_dims(self.desc).filter(|_| plan.mma != Mma::Off)
        else {
            return plan;
        };
        let mut mma = plan.clone();
        let layer = mma.warps.iter().any(|&w| w > 1);
        for x in 0..mma.items.len() {
            let warps = if layer { mma.warps[x] } else { 1 };
            mma.items[x] = warps
                * match x {
                    _ if x == n => 4,
                    _ if x == m && layer => 8,
                    _ if x == m => mma.items[x].max(8),
                    _ => 1,
                };
            let unit = match x {
                _ if x == m || x == n => 2 * mma.items[x],
                _ if x == k => plan.mma.k_step(),
                _ => 1,
            };
            mma.tile[x] = mma.tile[x].max(unit).next_multiple_of(mma.items[x]);
        }
        let (kinds, extents) = (&self.desc.kinds, &self.bound.extents);
        if mma.resolve(kinds, extents).tensor_cores(self.desc) {
            mma
        } else {
            GpuPlan {
                mma: Mma::Off,
                warps: Vec::new(),
                ..plan
            }
        }
    }

    /// The slot of the largest value among the parameters `which` selects
    /// that can still shrink.
    fn largest(&self, p: &Point, which: impl Fn(&Param) -> bool) -> Option<usize> {
        self.params
            .iter()
            .enumerate()
            .filter(|&(s, q)| which(q) && p[s] > 0)
            .filter_map(|(s, q)| q.counts().map(|v| (s, v[p[s]])))
            .max_by_key(|&(_, v)| v)
            .map(|(s, _)| s)
    }
}

impl Space for GpuSpace {
    type Plan = GpuPlan;

    fn cards(&self) -> Vec<usize> {
        self.params.iter().map(Param::len).collect()
    }

    fn decode(&self, p: &Point) -> GpuPlan {
        let d = self.bound.extents.len();
        let n = self.desc.inputs.len();
        let mut plan = GpuPlan::base(d, n);
        // Parameters come per dimension as groups, items, tile: items first.
        for (q, &i) in self.params.iter().zip(p) {
            match q {
                Param::Groups(x, v) => plan.groups[*x] = v[i],
                Param::Items(x, v) => plan.items[*x] = v[i],
                Param::Tile(x, v) => {
                    // Tiles beyond the extent are one plan.
                    let w = plan.items[*x];
                    let most = self.bound.extents[*x].max(1).div_ceil(w) * w;
                    plan.tile[*x] = (w * v[i]).min(most);
                }
                Param::Local(b, v) => plan.local[*b] = v[i],
                Param::Blocked(v) => plan.blocked = v[i],
                Param::Vector(b, v) => plan.vector[*b] = v[i],
                Param::Transpose(b, v) => plan.transpose[*b] = v[i],
                Param::Pad(b, v) => plan.pad[*b] = v[i],
                Param::Stages(v) => plan.stages = v[i],
                Param::Mma(v) => plan.mma = v[i],
                Param::Warps(x, v) => {
                    plan.warps.resize(d, 1);
                    plan.warps[*x] = v[i];
                }
            }
        }
        plan = self.tensor_core_shape(plan);
        // Warps whose lanes are not one warp: the plan without the layer.
        if plan.validate_warps(self.desc).is_err() || plan.warps.iter().all(|&w| w == 1) {
            plan.warps.clear();
        }
        // Stages without a cached tile prefetch nothing.
        if !plan.local.iter().any(|&l| l) {
            plan.stages = 1;
        }
        // The layout of a tile that is not cached is no layout: such plans
        // are the plan without it (vectors apply only to cached tiles).
        for b in 0..n {
            if !plan.local[b] {
                plan.vector[b] = 1;
                plan.transpose[b] = false;
                plan.pad[b] = 0;
            }
        }
        // More work-groups than tiles leave work-items idle (a block smaller
        // than a tile): such plans are the plan with one group per tile.
        for (x, &ext) in self.bound.extents.iter().enumerate() {
            let tiles = ext.max(1).div_ceil(plan.tile[x]);
            if plan.groups[x] > tiles {
                plan.groups[x] = tiles;
            }
        }
        plan
    }

    /// Logs written before the layout fields existed hold empty lists.
    fn complete(&self, mut plan: GpuPlan) -> GpuPlan {
        plan.fill_layout_defaults(self.desc);
        plan
    }

    /// Plans that resolve alike at these extents launch the same kernel.
    fn runs_alike(&self, a: &GpuPlan, b: &GpuPlan) -> bool {
        let (kinds, extents) = (&self.desc.kinds, &self.bound.extents);
        a.resolve(kinds, extents) == b.resolve(kinds, extents)
    }

    /// The warps and the tensor cores are read off the plan: a partial
    /// point decodes them away (warps whose lanes are no warp yet, tiles
    /// not yet of the tensor cores' shape), so no search would agree.
    fn value_of(&self, s: usize, plan: &GpuPlan) -> Option<usize> {
        match &self.params[s] {
            Param::Warps(x, v) => v
                .iter()
                .position(|&w| w == plan.warps.get(*x).copied().unwrap_or(1)),
            Param::Mma(v) => v.iter().position(|&m| m == plan.mma),
            _ => None,
        }
    }

    fn agrees(&self, s: usize, a: &GpuPlan, b: &GpuPlan) -> bool {
        match &self.params[s] {
            Param::Groups(x, _) => a.groups[*x] == b.groups[*x],
            Param::Items(x, _) => a.items[*x] == b.items[*x],
            Param::Tile(x, _) => a.tile[*x] == b.tile[*x],
            Param::Local(i, _) => a.local[*i] == b.local[*i],
            Param::Blocked(_) => a.blocked == b.blocked,
            Param::Vector(i, _) => a.vector[*i] == b.vector[*i],
            Param::Transpose(i, _) => a.transpose[*i] == b.transpose[*i],
            Param::Pad(i, _) => a.pad[*i] == b.pad[*i],
            Param::Stages(_) => a.stages == b.stages,
            Param::Mma(_) => a.mma == b.mma,
            Param::Warps(x, _) => a.warps.get(*x) == b.warps.get(*x),
        }
    }

    /// Shrinks `p` until the device can run it: too many work-items per
    /// group, the largest work-item count halves; too many private
    /// accumulators, the largest kept tile factor; else (local memory) the
    /// pipeline stages, then the largest tile factor, then caching goes,
    /// then work-items.
    fn repair(&self, mut p: Point) -> Point {
        while !self.fits(&p) {
            let plan = self.decode(&p);
            let threads: usize = plan.items.iter().product();
            let kinds = &self.desc.kinds;
            let private = plan.private_points(kinds);
            // The warps set work-items too (lanes × warps).
            let items = |q: &Param| matches!(q, Param::Items(..) | Param::Warps(..));
            let kept_tiles = |q: &Param| matches!(q, Param::Tile(x, _) if kinds[*x].is_kept());
            let tiles = |q: &Param| matches!(q, Param::Tile(..));
            let stages = self
                .params
                .iter()
                .position(|q| matches!(q, Param::Stages(..)))
                .filter(|&s| p[s] > 0);
            let local = self
                .params
                .iter()
                .enumerate()
                .find(|(s, q)| matches!(q, Param::Local(..)) && p[*s] > 0)
                .map(|(s, _)| s);
            let slot = if threads > self.lim.max_items {
                self.largest(&p, items)
            } else if private > MAX_PRIVATE_ACCUMULATORS {
                self.largest(&p, kept_tiles)
            } else {
                stages
                    .or_else(|| self.largest(&p, tiles))
                    .or(local)
                    .or_else(|| self.largest(&p, items))
            };
            // Nothing left to shrink: the smallest plan; its measurement
            // reports why it cannot run.
            let Some(slot) = slot else { break };
            p[slot] -= 1;
        }
        p
    }

    fn sample(&self, rng: &mut Rng) -> Point {
        let p = self.params.iter().map(|q| rng.below(q.len())).collect();
        self.repair(p)
    }

    /// An estimate: all combinations times the share of uniformly drawn
    /// ones that the device can run.
    fn size(&self) -> f64 {
        let all: f64 = self.params.iter().map(|q| q.len() as f64).product();
        let mut rng = Rng::new(0x512E);
        let fit = (0..SIZE_SAMPLES)
            .filter(|_| {
                let p: Point = self.params.iter().map(|q| rng.below(q.len())).collect();
                self.fits(&p)
            })
            .count();
        all * fit.max(1) as f64 / SIZE_SAMPLES as f64
    }
}

#[cfg(all(test, feature = "reference"))]
mod tests {
    use super::*;
    use crate::reference::kernel_info;

    fn space(k: &mdh_core::Checked, sizes: &[usize], lim: DeviceLimits) -> GpuSpace {
        let desc: &'static KernelDesc = Box::leak(Box::new(KernelDesc::from_kernel(k)));
        let info = kernel_info(k, mdh_core::codegen::c_expr::Dialect::Cuda);
        let bound = crate::gpu::bind_sizes(desc, sizes).unwrap();
        GpuSpace::new(desc, bound, info, lim)
    }

    #[test]
    fn every_sampled_or_repaired_point_fits_the_device() {
        let k = mdh_core::fixtures::matmul();
        // CUDA's limits, and a small device.
        for lim in [
            DeviceLimits {
                max_items: 1024,
                local_bytes: crate::gpu::CUDA_STATIC_SHARED_BYTES,
                cuda_arch: None,
                compute: Default::default(),
            },
            DeviceLimits {
                max_items: 256,
                local_bytes: 4096,
                cuda_arch: None,
                compute: Default::default(),
            },
        ] {
            let s = space(&k, &[64, 100, 48], lim);
            let mut rng = Rng::new(5);
            let cards = s.cards();
            for _ in 0..500 {
                let p = s.sample(&mut rng);
                assert!(s.fits(&p), "{:?}", s.decode(&p));
                let wild: Point = cards.iter().map(|&c| rng.below(c)).collect();
                let plan = s.decode(&s.repair(wild));
                assert!(plan.items.iter().product::<usize>() <= lim.max_items);
                assert!(
                    fit(s.desc, &s.bound, s.info, &plan, lim).is_ok(),
                    "{plan:?}"
                );
                for x in 0..3 {
                    assert!(plan.items[x].is_power_of_two(), "{plan:?}");
                    assert_eq!(plan.tile[x] % plan.items[x], 0, "{plan:?}");
                }
            }
            assert!(s.size() > 1e3, "{}", s.size());
        }
    }

    /// A plan from a log written before the per-input layout fields and
    /// the stages existed (`--resume`): the lists read empty, which no
    /// kernel validates; completed, they are the defaults per input.
    #[test]
    fn plans_of_old_logs_get_their_layout_defaults() {
        let k = mdh_core::fixtures::matmul();
        let s = space(&k, &[64, 100, 48], crate::gpu::cuda_arch_limits("sm_90"));
        let old = r#"{"groups":[0,0,1],"items":[16,16,1],"tile":[64,64,8],"local":[true,false],"blocked":false}"#;
        let plan: GpuPlan = serde_json::from_str(old).unwrap();
        assert!(plan.validate(s.desc).is_err());
        let plan = s.complete(plan);
        assert_eq!(
            (&plan.vector, &plan.transpose, &plan.pad, plan.stages),
            (&vec![1, 1], &vec![false, false], &vec![0, 0], 1)
        );
        assert!(plan.validate(s.desc).is_ok());
        // A complete plan stays as it is.
        let mut full = plan.clone();
        full.vector[0] = 4;
        assert_eq!(s.complete(full.clone()), full);
    }

    #[test]
    fn points_encode_back() {
        let k = mdh_core::fixtures::matmul();
        let lim = DeviceLimits {
            max_items: 1024,
            local_bytes: crate::gpu::CUDA_STATIC_SHARED_BYTES,
            cuda_arch: None,
            compute: Default::default(),
        };
        let s = space(&k, &[256, 256, 256], lim);
        let mut rng = Rng::new(9);
        for _ in 0..100 {
            let p = s.sample(&mut rng);
            let plan = s.decode(&p);
            assert_eq!(s.encode(&plan).map(|q| s.decode(&q)), Some(plan));
        }
    }
}
