//! The plan's data: its fields, declared once, and the plans every other
//! is built from (the skeleton, the heuristic default).

use super::mma::Mma;
use crate::desc::KernelDesc;
use crate::types::DimKind;

/// The GPU plan's fields, declared once: the struct [`GpuPlan`], its serde
/// form (the tuner's logs), [`GpuPlan::fields`] (what the YAML writer and
/// the plan literals of generated code walk) and `mdh-core`'s config
/// reader are all expanded from this list, so a new plan parameter is one
/// line here (and the rules that use it).
///
/// Calls `$then!` with one item per field, in the order configs write
/// them: its attributes, then `name: Type = absence`, where the absence is
/// what a config that leaves the field out means: `required` (it is always
/// written), `each(v)` (a list: `v` per entry; an empty list means the
/// same) or `or(v)`.
#[doc(hidden)]
#[macro_export]
macro_rules! gpu_plan_fields {
    ($then:ident) => {
        $then! {
            /// #PRT(WG, d) per md_hom dimension: the work-groups (0: chosen
            /// at run time).
            groups: Vec<usize> = required,
            /// #PRT(WI, d) per md_hom dimension: the work-items of a
            /// work-group.
            items: Vec<usize> = required,
            /// Per md_hom dimension: the indices a work-group processes per
            /// step (the LM tile).
            tile: Vec<usize> = required,
            /// One flag per input buffer: cache its tiles in local memory.
            local: Vec<bool> = required,
            /// Work-items take consecutive indices of a tile (else strided).
            blocked: bool = required,
            /// One width per input buffer (1, 2 or 4): the vector width of the
            /// copies of its tiles into local memory and of the loads of its
            /// register fragments from there. Used where the call's sizes prove the
            /// alignment (see [`copy_vector`](crate::gpu_plan::copy_vector), [`fragment_vector`](crate::gpu_plan::fragment_vector)), scalar
            /// elsewhere.
            #[cfg_attr(feature = "serde", serde(default))]
            vector: Vec<usize> = each(1),
            /// One flag per input buffer: its local-memory tile is stored with the
            /// components of its index function in reverse order (transposed: the
            /// first component innermost).
            #[cfg_attr(feature = "serde", serde(default))]
            transpose: Vec<bool> = each(false),
            /// One count per input buffer: elements added to the innermost extent of
            /// its local-memory tile (padding against bank conflicts).
            #[cfg_attr(feature = "serde", serde(default))]
            pad: Vec<usize> = each(0),
            /// The pipeline stages of the local-memory tiles (1 or 2): with 2, each
            /// cached input has two tiles in local memory, and the copy of the next
            /// PW tile is issued before the current one is computed (on CUDA sm_80
            /// and later by `cp.async`, which runs beside the computation; else
            /// plain copies the compiler may interleave with it), one barrier per
            /// tile instead of two. Without a cached input there is nothing to
            /// prefetch (resolved to 1).
            #[cfg_attr(feature = "serde", serde(default = "one_stage"))]
            stages: usize = or(1),
            /// Tensor cores, an explicit precision choice for contraction-shaped
            /// kernels on CUDA (see [`Mma`]); off by default: exact FP32.
            #[cfg_attr(feature = "serde", serde(default))]
            mma: $crate::gpu_plan::Mma = or($crate::gpu_plan::Mma::Off),
            /// The warp layer (the paper's WRP): per md_hom dimension, the warps
            /// of a work-group along it (empty: no warp layer, as 1 everywhere).
            /// `items[x]` are then `warps[x]` warps of `items[x] / warps[x]` lanes,
            /// the lanes of all dimensions make one warp of [`WARP_LANES`](crate::gpu_plan::WARP_LANES), and each
            /// warp owns a contiguous part of the tile along `x` (`tile[x] /
            /// warps[x]` indices) whose points its lanes take strided or blocked: a
            /// warp's accesses stay in its sub-tile (fewer shared-memory bank
            /// conflicts, whole tensor-core tiles). Only kept dimensions have warps:
            /// the work-items that combine a PW result stay lanes of one warp.
            #[cfg_attr(feature = "serde", serde(default))]
            warps: Vec<usize> = each(1),
        }
    };
}

/// Whether a field's value says what leaving it out of a config says (see
/// [`gpu_plan_fields`](crate::gpu_plan_fields)).
macro_rules! unset {
    ($v:expr, required) => {
        false
    };
    ($v:expr, each($absent:expr)) => {
        $v.iter().all(|e| *e == $absent)
    };
    ($v:expr, or($absent:expr)) => {
        *$v == $absent
    };
}

macro_rules! declare_plan {
    ($($(#[$attr:meta])* $name:ident: $ty:ty = $absence:ident $(($absent:expr))?,)*) => {
        /// A plan on the GPU ASMs (see the module docs).
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub struct GpuPlan {
            $($(#[$attr])* pub $name: $ty,)*
        }

        /// The number of [`GpuPlan`]'s fields.
        pub const PLAN_FIELDS: usize = [$(stringify!($name)),*].len();

        impl GpuPlan {
            /// The fields in the order configs write them.
            pub fn fields(&self) -> [PlanField<'_>; PLAN_FIELDS] {
                [$(PlanField {
                    name: stringify!($name),
                    value: PlanValue::from(&self.$name),
                    unset: unset!(&self.$name, $absence $(($absent))?),
                }),*]
            }
        }
    };
}

gpu_plan_fields!(declare_plan);

/// One field of a plan, as [`GpuPlan::fields`] lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanField<'a> {
    pub name: &'static str,
    pub value: PlanValue<'a>,
    /// Whether the value says what leaving the field out of a config says
    /// (written configs leave it out).
    pub unset: bool,
}

/// The value of a plan field, by the shape it has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanValue<'a> {
    Counts(&'a [usize]),
    Flags(&'a [bool]),
    Count(usize),
    Flag(bool),
    Mma(Mma),
}

impl<'a> From<&'a Vec<usize>> for PlanValue<'a> {
    fn from(v: &'a Vec<usize>) -> Self {
        PlanValue::Counts(v)
    }
}

impl<'a> From<&'a Vec<bool>> for PlanValue<'a> {
    fn from(v: &'a Vec<bool>) -> Self {
        PlanValue::Flags(v)
    }
}

impl From<&usize> for PlanValue<'_> {
    fn from(v: &usize) -> Self {
        PlanValue::Count(*v)
    }
}

impl From<&bool> for PlanValue<'_> {
    fn from(v: &bool) -> Self {
        PlanValue::Flag(*v)
    }
}

impl From<&Mma> for PlanValue<'_> {
    fn from(v: &Mma) -> Self {
        PlanValue::Mma(*v)
    }
}

#[cfg(feature = "serde")]
fn one_stage() -> usize {
    1
}

impl GpuPlan {
    /// The documented heuristic default:
    /// - work-items: up to 64 along the kept dimension that is contiguous in
    ///   the output (the last kept one), then up to 4 along the kept
    ///   dimension before it; a kernel without kept dimensions puts 256
    ///   work-items on its innermost PW dimension (a tree reduction);
    /// - tiles: one index per work-item along kept dimensions, 64 indices
    ///   per work-item along PW dimensions;
    /// - work-groups: chosen at run time (every kept tile its own group; PW
    ///   dimensions split further only when kept groups are few);
    /// - no local memory (on CPUs through PoCL, caches serve better).
    pub fn default_for(k: &KernelDesc) -> GpuPlan {
        let d = k.dims.len();
        let kinds = &k.kinds;
        let mut items = vec![1; d];
        let kept = DimKind::kept(kinds);
        match kept.as_slice() {
            [] => {
                if let Some(pw) = (0..d).rev().find(|&x| kinds[x] == DimKind::Pw) {
                    items[pw] = 256;
                }
            }
            [.., outer, inner] => {
                items[*inner] = 64;
                items[*outer] = 4;
            }
            [inner] => items[*inner] = 64,
        }
        let tile = (0..d)
            .map(|x| {
                if kinds[x] == DimKind::Pw {
                    items[x] * 64
                } else {
                    items[x]
                }
            })
            .collect();
        GpuPlan {
            items,
            tile,
            ..GpuPlan::base(d, k.inputs.len())
        }
    }

    /// A plan skeleton for `dims` md_hom dimensions and `inputs` input
    /// buffers: one work-item and index per dimension, groups chosen at run
    /// time, no local memory, strided, scalar, one stage, FP32, no warp
    /// layer.
    pub fn base(dims: usize, inputs: usize) -> GpuPlan {
        GpuPlan {
            groups: vec![0; dims],
            items: vec![1; dims],
            tile: vec![1; dims],
            local: vec![false; inputs],
            blocked: false,
            vector: vec![1; inputs],
            transpose: vec![false; inputs],
            pad: vec![0; inputs],
            stages: 1,
            mma: Mma::Off,
            warps: Vec::new(),
        }
    }

    /// Gives the per-input layout fields that are empty (a plan written
    /// before they existed, e.g. in a tuner's log) their defaults, one per
    /// input of `k`: scalar, row-major, unpadded.
    pub fn fill_layout_defaults(&mut self, k: &KernelDesc) {
        let n = k.inputs.len();
        if self.vector.is_empty() {
            self.vector = vec![1; n];
        }
        if self.transpose.is_empty() {
            self.transpose = vec![false; n];
        }
        if self.pad.is_empty() {
            self.pad = vec![0; n];
        }
    }

    /// The points of a work-item's tile along the kept dimensions (one
    /// partial result each per output access).
    pub fn private_points(&self, kinds: &[DimKind]) -> usize {
        DimKind::kept(kinds)
            .into_iter()
            .map(|x| self.tile[x].div_ceil(self.items[x]))
            .product()
    }
}

#[cfg(test)]
mod tests {
    use super::GpuPlan;

    /// The skeleton means what a config that gives only the required
    /// fields means: every optional field unset.
    #[test]
    fn the_base_plan_leaves_every_optional_field_unset() {
        let plan = GpuPlan::base(3, 2);
        let written: Vec<&str> = plan
            .fields()
            .iter()
            .filter(|f| !f.unset)
            .map(|f| f.name)
            .collect();
        assert_eq!(written, ["groups", "items", "tile", "local", "blocked"]);
    }
}
