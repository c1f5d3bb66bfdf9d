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

use crate::desc::{affine_offset, Bound, KernelDesc, Linear};
use crate::names;
use crate::types::DimKind;

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
            /// alignment (see [`copy_vector`], [`fragment_vector`]), scalar
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
            /// the lanes of all dimensions make one warp of [`WARP_LANES`], and each
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

/// The lanes of a warp of the warp layer (CUDA's warp size).
pub const WARP_LANES: usize = 32;

/// Whether and how a contraction's full tiles run on the tensor cores
/// (`mma.sync.m16n8k8` on TF32 operands, sm_80 and later): the precision is
/// the plan's choice, never implied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Mma {
    /// FP32 FMAs: results as exact as the FP32 path computes them.
    #[default]
    #[cfg_attr(feature = "serde", serde(rename = "off"))]
    Off,
    /// Operands rounded to TF32 (10-bit mantissa), products summed in
    /// FP32: relative errors about 1e-3.
    #[cfg_attr(feature = "serde", serde(rename = "tf32"))]
    Tf32,
    /// Each operand split into a TF32 part and a TF32 remainder, three
    /// mmas (big · big + big · small + small · big): about FP32 accuracy
    /// at three times the tensor-core work.
    #[cfg_attr(feature = "serde", serde(rename = "3xtf32"))]
    Tf32x3,
}

impl Mma {
    pub const ALL: [Mma; 3] = [Mma::Off, Mma::Tf32, Mma::Tf32x3];

    /// Its name in configs.
    pub fn name(self) -> &'static str {
        match self {
            Mma::Off => "off",
            Mma::Tf32 => "tf32",
            Mma::Tf32x3 => "3xtf32",
        }
    }

    pub fn from_name(name: &str) -> Option<Mma> {
        Mma::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The value of [`names::MMA`]: 0 off, else the mmas per product.
    fn define(self) -> usize {
        match self {
            Mma::Off => 0,
            Mma::Tf32 => 1,
            Mma::Tf32x3 => 3,
        }
    }
}

/// The md_hom dimensions a contraction's tensor-core tiles (16 rows × 8
/// columns × 8 steps of the reduction) take: `n`, the last kept dimension
/// that exactly one input uses (input `b`, the mma's B operand: columns),
/// `m`, the last kept dimension before it that only the other input `a`
/// uses (rows), `k`, the last PW dimension both use. Other dimensions are
/// looped over around the mmas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaDims {
    pub a: usize,
    pub b: usize,
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

/// The [`MmaDims`] of a contraction-shaped kernel, `None` for any other
/// kernel or a contraction without such dimensions.
pub fn mma_dims(k: &KernelDesc) -> Option<MmaDims> {
    if !k.contraction {
        return None;
    }
    let uses = |b: usize, x: usize| {
        k.inputs[b].accesses[0]
            .components
            .iter()
            .any(|c| c.dims[x] != 0)
    };
    let kept = DimKind::kept(&k.kinds);
    let n = *kept.iter().rev().find(|&&x| uses(0, x) != uses(1, x))?;
    let b = usize::from(uses(1, n));
    let a = 1 - b;
    let m = *kept
        .iter()
        .rev()
        .find(|&&x| x < n && uses(a, x) && !uses(b, x))?;
    let k = (0..k.kinds.len())
        .rev()
        .find(|&x| k.kinds[x] == DimKind::Pw && uses(0, x) && uses(1, x))?;
    Some(MmaDims { a, b, m, n, k })
}

/// Whether work-items `items` of `lanes` lanes per warp (`items` /
/// warps) and tiles `tile` give every warp whole tensor-core tiles, with
/// the reason where not: a warp's lanes are the mma's 8 row groups × 4
/// column pairs (4 lanes along `n`, a multiple of 8 along `m`, 1
/// elsewhere: a warp's lanes share every other index), each lane holds
/// pairs of rows and of columns (even points per work-item along `m` and
/// `n`), and tiles step the reduction by 8.
fn mma_geometry(
    dims: &MmaDims,
    lanes: &[usize],
    items: &[usize],
    tile: &[usize],
) -> Result<(), PlanError> {
    let MmaDims { m, n, k, .. } = *dims;
    let fit = (0..lanes.len()).all(|x| match x {
        _ if x == n => lanes[x] == 4,
        _ if x == m => lanes[x].is_multiple_of(8),
        _ => lanes[x] == 1,
    });
    if !fit {
        return Err(err("items", format!(
            "`mma` makes the lanes of a warp the tensor cores' 8 row groups × 4 column pairs: `items` (per warp: `items` / `warps`) must be 4 along dimension {n} (the columns), a multiple of 8 along dimension {m} (the rows) and 1 elsewhere, not {lanes:?}"
        )));
    }
    if !tile[m].is_multiple_of(2 * items[m])
        || !tile[n].is_multiple_of(2 * items[n])
        || !tile[k].is_multiple_of(8)
    {
        return Err(err("tile", format!(
            "`mma` computes tiles of 16 rows × 8 columns × 8 steps: `tile` must be a multiple of 2 × `items` along dimension {m} (the rows) and {n} (the columns), of 8 along dimension {k} (the reduction), not {tile:?}"
        )));
    }
    Ok(())
}

/// The lanes of a warp along each dimension: `items` / `warps` (`warps`
/// empty: no warp layer, every work-item a lane).
fn lanes_of(items: &[usize], warps: &[usize]) -> Vec<usize> {
    (0..items.len())
        .map(|x| items[x] / warps.get(x).copied().unwrap_or(1).max(1))
        .collect()
}

#[cfg(feature = "serde")]
fn one_stage() -> usize {
    1
}

/// The most pipeline stages a plan may ask for.
pub const MAX_STAGES: usize = 2;

/// The vector widths a plan may ask for.
pub const VECTOR_WIDTHS: [usize; 3] = [1, 2, 4];
/// The most padding a plan may add to a local tile's innermost extent.
pub const MAX_PAD: usize = 32;

pub use crate::error::PlanError;

fn err(field: &'static str, message: String) -> PlanError {
    PlanError { field, message }
}

/// Whether input `b`'s accesses all move alike with the dimensions (differ
/// only in constant offsets), so that one box of local memory holds the
/// tile of all of them.
pub fn can_cache_locally(k: &KernelDesc, b: usize) -> bool {
    let accesses = &k.inputs[b].accesses;
    !accesses.is_empty()
        && accesses.iter().all(|f| {
            f.components
                .iter()
                .zip(accesses[0].components.iter())
                .all(|(x, y)| x.dims == y.dims)
        })
}

/// The number of output accesses (one partial result each).
pub fn output_accesses(k: &KernelDesc) -> usize {
    k.outputs.iter().map(|b| b.accesses.len()).sum()
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
        mma_geometry(
            &dims,
            &lanes_of(&self.items, &self.warps),
            &self.items,
            &self.tile,
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

/// A plan fitted to the extents of one call: every count effective, every
/// work-group non-empty. A resolved plan is a plan: its fields read as the
/// plan's (`r.items`), with the two the call adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The plan as the call runs it: work-items and tiles clamped to the
    /// extents, group counts exact, 1 stage without a cached input, and 1
    /// warp per dimension without a warp layer (or where the clamped
    /// work-items no longer make whole warps). `mma` stays the plan's
    /// choice; whether a call's tiles run on tensor cores is decided in
    /// [`defines`] ([`names::MMA`]).
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
                mma_geometry(&dims, &self.lanes(), &self.items, &self.tile).is_ok()
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
    /// The points of a work-item's tile along the kept dimensions (one
    /// partial result each per output access).
    pub fn private_points(&self, kinds: &[DimKind]) -> usize {
        DimKind::kept(kinds)
            .into_iter()
            .map(|x| self.tile[x].div_ceil(self.items[x]))
            .product()
    }

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

/// The C preprocessor definitions that specialize a kernel's source for one
/// call: extents, the resolved plan, linear offsets of every access, the
/// strides and local boxes of locally cached inputs. Prepended to the
/// generated source; the source refers only to these names ([`names`]).
pub fn defines(k: &KernelDesc, bound: &Bound, r: &Resolved) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let d = bound.extents.len();
    let idx = index_type(k, bound, r);
    let mut def = |name: String, v: String| {
        let _ = writeln!(s, "#define {name} {v}");
    };
    // Index values typed as MDH_IDX: an `L` suffix would widen `int`
    // arithmetic to 64 bits.
    let suffix = if idx == IndexType::Int { "" } else { "L" };
    let num = |v: &dyn std::fmt::Display| format!("{v}{suffix}");
    def(names::IDX.into(), idx.c_name().into());
    for (name, v) in k.size_params.iter().zip(&bound.sizes) {
        def(names::size(name), format!("{v}UL"));
    }
    for x in 0..d {
        def(names::extent(x), num(&bound.extents[x]));
        def(names::groups(x), num(&r.groups[x]));
        def(names::items(x), num(&r.items[x]));
        def(names::tile(x), num(&r.tile[x]));
        def(names::block(x), num(&r.block[x]));
        def(names::private(x), num(&r.private[x]));
        def(names::warps(x), num(&r.warps[x]));
        def(names::lanes(x), num(&(r.items[x] / r.warps[x])));
    }
    let lanes: usize = r.lanes().iter().product();
    def(names::LANES.into(), num(&lanes));
    def(names::WG_ITEMS.into(), num(&r.threads_per_group()));
    def(names::BLOCKED.into(), u8::from(r.blocked).to_string());
    def(names::STAGES.into(), r.stages.to_string());
    let mma = if r.tensor_cores(k) { r.mma.define() } else { 0 };
    def(names::MMA.into(), mma.to_string());
    let kinds = &k.kinds;
    def(names::PW_GROUPS.into(), num(&r.pw_groups(kinds)));
    def(names::KEPT_POINTS.into(), num(&kept_points(k, bound)));
    let pw_items: usize = (0..d)
        .filter(|&x| kinds[x] == DimKind::Pw)
        .map(|x| r.items[x])
        .product();
    def(names::PW_ITEMS.into(), num(&pw_items));
    let lin = |def: &mut dyn FnMut(String, String), access: &str, l: &Linear| {
        def(names::base(access), num(&l.base));
        for (x, c) in l.coefs.iter().enumerate() {
            def(names::coef(access, x), num(c));
        }
    };
    for (b, accs) in bound.in_linear.iter().enumerate() {
        for (a, l) in accs.iter().enumerate() {
            lin(&mut def, &names::input_access(b, a), l);
        }
    }
    for (b, accs) in bound.out_linear.iter().enumerate() {
        for (a, l) in accs.iter().enumerate() {
            lin(&mut def, &names::output_access(b, a), l);
        }
    }
    // Locally cached inputs: row-major strides, per-access component
    // offsets, the box of one tile and its layout in local memory.
    for (b, shape) in bound.in_shapes.iter().enumerate() {
        if !r.local.get(b).copied().unwrap_or(false) {
            continue;
        }
        let mut stride = 1usize;
        for c in (0..shape.len()).rev() {
            def(names::input_stride(b, c), num(&stride));
            stride *= shape[c];
        }
        def(names::local(b), "1".into());
        let comps = local_box(k, bound, &r.tile, b);
        let layout = LocalLayout::new(&comps, r.transpose[b], r.pad[b]);
        for (c, comp) in comps.iter().enumerate() {
            for (a, o) in comp.offsets.iter().enumerate() {
                def(names::local_offset(b, a, c), num(o));
            }
            def(names::offset_min(b, c), num(&comp.min));
            def(names::offset_max(b, c), num(&comp.max));
            def(names::local_extent(b, c), num(&comp.extent));
            def(names::local_stride(b, c), num(&layout.strides[c]));
        }
        def(names::local_size(b), format!("{}", layout.size));
        def(names::local_stage(b), format!("{}", layout.stage()));
        def(names::local_box(b), num(&layout.elems));
        def(
            names::copy_vector(b),
            copy_vector(k, bound, r, b).to_string(),
        );
    }
    let mut group = vec![1; d];
    for (b, buf) in k.inputs.iter().enumerate() {
        for a in 0..buf.accesses.len() {
            let (x, v) = match fragment_vector(k, bound, r, b, a) {
                Some((x, v)) => (x as i64, v),
                None => (-1, 1),
            };
            if x >= 0 && !r.blocked {
                group[x as usize] = group[x as usize].max(v);
            }
            def(names::fragment_vector(b, a), v.to_string());
            def(names::fragment_vector_dim(b, a), x.to_string());
        }
    }
    for (x, g) in group.iter().enumerate() {
        def(names::vector_group(x), num(g));
    }
    s
}

/// The points of the kept (CC and PS) dimensions.
fn kept_points(k: &KernelDesc, bound: &Bound) -> usize {
    DimKind::kept(&k.kinds)
        .into_iter()
        .map(|x| bound.extents[x])
        .product()
}

/// The C type of the kernels' indices and offsets for one call
/// ([`names::IDX`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexType {
    Int,
    Long,
}

impl IndexType {
    pub fn c_name(self) -> &'static str {
        match self {
            IndexType::Int => "int",
            IndexType::Long => "long",
        }
    }
}

/// `int` when every index value the kernels compute fits in 31 bits with a
/// factor 2 to spare, `long` else. 32-bit indices halve the registers of
/// index arithmetic and keep it off the GPUs' emulated 64-bit multiplies.
/// The values bounded: every partial sum of every access's linear offset
/// (`|base| + Σ |coef| · (N - 1)`), the buffers' lengths (the copies into
/// local memory index them by shape), extents plus tiles and blocks (a tile
/// loop steps past its block once), the work-items of the launches (the
/// second pass and the scans take one per kept point), the partial
/// results, and the local boxes plus a work-group (their copy loops).
pub fn index_type(k: &KernelDesc, bound: &Bound, r: &Resolved) -> IndexType {
    let n = &bound.extents;
    let linear = |l: &Linear| {
        l.coefs
            .iter()
            .zip(n)
            .fold(l.base.unsigned_abs() as u128, |a, (&c, &e)| {
                a + c.unsigned_abs() as u128 * e.saturating_sub(1) as u128
            })
    };
    let offsets = bound
        .in_linear
        .iter()
        .chain(&bound.out_linear)
        .flatten()
        .map(linear);
    let lens = bound
        .in_shapes
        .iter()
        .chain(&bound.out_shapes)
        .map(|s| s.iter().map(|&e| e as u128).product::<u128>());
    let dims = (0..n.len()).map(|x| n[x] as u128 + r.tile[x] as u128 + r.block[x] as u128);
    let items = r.threads_per_group() as u128;
    let kept = kept_points(k, bound) as u128;
    let launches = [
        r.group_count() as u128 * items,
        kept * r.pw_groups(&k.kinds) as u128,
        kept + (PASS_ITEMS + SCAN_CHUNK) as u128,
    ];
    let boxes = local_elems(k, bound, r)
        .into_iter()
        .map(|e| e as u128 + items);
    let most = offsets
        .chain(lens)
        .chain(dims)
        .chain(launches)
        .chain(boxes)
        .max()
        .unwrap_or(0);
    if most.saturating_mul(2) <= i32::MAX as u128 {
        IndexType::Int
    } else {
        IndexType::Long
    }
}

/// One component of the box of local memory that holds a tile of an input.
struct LocalComponent {
    /// The constant offset of each access of the buffer in this component.
    offsets: Vec<i128>,
    min: i128,
    max: i128,
    /// The values the component takes over one tile (all accesses together).
    extent: usize,
}

/// The box of input `b`'s elements that one tile of `tile` indices reads:
/// per component of its index function (coefficients are the same for every
/// access, see [`can_cache_locally`]; offsets differ by constants).
fn local_box(k: &KernelDesc, bound: &Bound, tile: &[usize], b: usize) -> Vec<LocalComponent> {
    let accesses = &k.inputs[b].accesses;
    (0..bound.in_shapes[b].len())
        .map(|c| {
            let offsets: Vec<i128> = accesses
                .iter()
                .map(|a| affine_offset(&a.components[c], &bound.sizes))
                .collect();
            let min = offsets.iter().copied().min().unwrap_or(0);
            let max = offsets.iter().copied().max().unwrap_or(0);
            let extent = accesses[0].components[c]
                .dims
                .iter()
                .zip(tile)
                .map(|(&cf, &t)| cf.unsigned_abs() as usize * (t - 1))
                .sum::<usize>()
                + (max - min) as usize
                + 1;
            LocalComponent {
                offsets,
                min,
                max,
                extent,
            }
        })
        .collect()
}

/// Where the elements of a tile's box lie in local memory: the components
/// in row-major order (the last innermost) or transposed (the first
/// innermost), the innermost extent padded.
struct LocalLayout {
    /// Per component: its stride in local memory.
    strides: Vec<usize>,
    /// The elements the layout takes (padding included).
    size: usize,
    /// The elements of the box.
    elems: usize,
}

impl LocalLayout {
    /// The elements from one pipeline stage of the tile to the next: its
    /// size rounded up to the widest vector (4 elements), so that every
    /// stage keeps the alignment of the first.
    fn stage(&self) -> usize {
        self.size.next_multiple_of(4)
    }

    fn new(comps: &[LocalComponent], transpose: bool, pad: usize) -> LocalLayout {
        let rank = comps.len();
        let mut order: Vec<usize> = (0..rank).collect();
        if !transpose {
            order.reverse();
        }
        // `order`: innermost first.
        let mut strides = vec![0; rank];
        let mut size = 1usize;
        for (i, &c) in order.iter().enumerate() {
            strides[c] = size;
            size *= comps[c].extent + if i == 0 { pad } else { 0 };
        }
        LocalLayout {
            strides,
            size,
            elems: comps.iter().map(|c| c.extent).product(),
        }
    }
}

/// Per input buffer: the elements of local memory its tiles take under `r`
/// (0 when it is not cached there), padding and every pipeline stage
/// included: the definitions' `L{b}_SIZE` for the last stage, `L{b}_STAGE`
/// for each one before it; what plan fitting weighs against a device's
/// local (shared) memory.
pub fn local_elems(k: &KernelDesc, bound: &Bound, r: &Resolved) -> Vec<usize> {
    (0..k.inputs.len())
        .map(|b| {
            if r.local.get(b).copied().unwrap_or(false) {
                let comps = local_box(k, bound, &r.tile, b);
                let layout = LocalLayout::new(&comps, r.transpose[b], r.pad[b]);
                layout.stage() * (r.stages - 1) + layout.size
            } else {
                0
            }
        })
        .collect()
}

/// The bytes a local-memory tile of elements of `elem_bytes` bytes is
/// aligned to: a vector of the widest width (4), and at least 16 (CUDA's
/// 16-byte loads and stores, `cp.async`'s 16-byte copies).
pub fn local_align(elem_bytes: usize) -> usize {
    (4 * elem_bytes).max(16)
}

/// The component of input `b`'s tile that is innermost in local memory.
fn innermost(k: &KernelDesc, r: &Resolved, b: usize) -> usize {
    if r.transpose[b] {
        0
    } else {
        k.inputs[b].shape.len().saturating_sub(1)
    }
}

/// The vector width of the copies of input `b`'s tiles into local memory:
/// the plan's width where every vector of the copy is aligned in global
/// and local memory, else 1. The copy walks the box row by row of its last
/// component (contiguous in global memory), in vectors of that width: the
/// rows' extent and the buffer's row length must be multiples of it, and
/// the first element of a tile's row too, for every tile (its box's least
/// value in the last component moves with the tiles' starts, by the
/// coefficients times the blocks and tiles; a negative coefficient moves
/// it with a tile's end, which the sizes do not align). The vectors are
/// stored whole, so the last component must be innermost in local memory
/// (a transposed tile of rank 2 and more is copied element by element: its
/// vectors would be stored element by element anyway, and PoCL 3 turned
/// that path into an endless loop, `bmatmul_split_kept_vector_tiles` in
/// tests/opencl.rs) and its padded extent a multiple of the width.
pub fn copy_vector(k: &KernelDesc, bound: &Bound, r: &Resolved, b: usize) -> usize {
    let v = r.vector[b];
    let shape = &bound.in_shapes[b];
    if v == 1 || !r.local[b] || shape.is_empty() {
        return 1;
    }
    let last = shape.len() - 1;
    let comps = local_box(k, bound, &r.tile, b);
    let comp = &k.inputs[b].accesses[0].components[last];
    let aligned = |n: i128| n.rem_euclid(v as i128) == 0;
    let rows = last == 0 || shape[last].is_multiple_of(v);
    let extent = comps[last].extent.is_multiple_of(v);
    let starts = aligned(comps[last].min)
        && comp.dims.iter().enumerate().all(|(x, &cf)| {
            cf >= 0
                && aligned(cf as i128 * r.block[x] as i128)
                && aligned(cf as i128 * r.tile[x] as i128)
        });
    let store = last == 0
        || (innermost(k, r, b) == last && (comps[last].extent + r.pad[b]).is_multiple_of(v));
    if rows && extent && starts && store {
        v
    } else {
        1
    }
}

/// The dimension whose index alone makes component `c` of access `a` of
/// input `b` (coefficient 1, no other dimension; constants aside) when
/// that dimension is kept and no other component depends on it: a
/// work-item's consecutive points along it read consecutive elements of
/// the component. Register fragments load vectors only along such a
/// dimension.
pub fn fragment_dim(k: &KernelDesc, b: usize, a: usize, c: usize) -> Option<usize> {
    let comps = &k.inputs[b].accesses[a].components;
    let dims = &comps.get(c)?.dims;
    let x = dims.iter().position(|&cf| cf != 0)?;
    let alone = dims[x] == 1 && dims.iter().filter(|&&cf| cf != 0).count() == 1;
    let only_here = comps
        .iter()
        .enumerate()
        .all(|(c2, comp)| c2 == c || comp.dims[x] == 0);
    (alone && only_here && k.kinds[x].is_kept()).then_some(x)
}

/// The dimension and width of the vector loads of access `a` of input
/// `b`'s register fragments from local memory, or `None` (scalar loads):
/// the plan's width where the tile is cached, its innermost component in
/// local memory is one kept dimension's index alone ([`fragment_dim`]),
/// a work-item's points along that dimension come in runs of the width
/// (its points per tile a multiple of it; strided work-items take runs of
/// [`names::vector_group`]), the access's offset from the box's least
/// value a multiple of it, and so the padded innermost extent (the stride
/// of the next component).
pub fn fragment_vector(
    k: &KernelDesc,
    bound: &Bound,
    r: &Resolved,
    b: usize,
    a: usize,
) -> Option<(usize, usize)> {
    let v = r.vector[b];
    if v == 1 || !r.local[b] {
        return None;
    }
    let c = innermost(k, r, b);
    let x = fragment_dim(k, b, a, c)?;
    let comps = local_box(k, bound, &r.tile, b);
    let offset = comps[c].offsets[a] - comps[c].min;
    let next = comps.len() == 1 || (comps[c].extent + r.pad[b]).is_multiple_of(v);
    (r.private[x].is_multiple_of(v) && offset % v as i128 == 0 && next).then_some((x, v))
}

#[cfg(test)]
mod tests {
    use super::{cuda_arch_number, GpuPlan};

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
