//! Tensor cores: the plan's precision choice and the shape of a
//! contraction's mma tiles.

use super::err;
use crate::desc::KernelDesc;
use crate::error::PlanError;
use crate::types::{DimKind, ScalarType};

/// Whether and how a contraction's full tiles run on the tensor cores
/// (sm_80 and later): `mma.sync.m16n8k8` on TF32 operands, or
/// `mma.sync.m16n8k16` on the 16-bit inputs' own bits. The precision is
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
    /// `mma.sync.m16n8k16` on bf16 inputs (both contraction inputs `bf16`
    /// buffers), their bits packed two per register, FP32 accumulators:
    /// products of bf16 values are exact in FP32, so results are as exact
    /// as the FP32 path's (sums in another order), at twice TF32's rate.
    #[cfg_attr(feature = "serde", serde(rename = "bf16"))]
    Bf16,
    /// As [`Mma::Bf16`], on f16 inputs (their products are exact in FP32 too).
    #[cfg_attr(feature = "serde", serde(rename = "f16"))]
    F16,
}

impl Mma {
    pub const ALL: [Mma; 5] = [Mma::Off, Mma::Tf32, Mma::Tf32x3, Mma::Bf16, Mma::F16];

    /// Its name in configs.
    pub fn name(self) -> &'static str {
        match self {
            Mma::Off => "off",
            Mma::Tf32 => "tf32",
            Mma::Tf32x3 => "3xtf32",
            Mma::Bf16 => "bf16",
            Mma::F16 => "f16",
        }
    }

    /// The 16-bit type both inputs must have (`mma.sync.m16n8k16` reads
    /// their bits), `None` for the TF32 modes and `Off`.
    pub fn operand_type(self) -> Option<ScalarType> {
        match self {
            Mma::Bf16 => Some(ScalarType::Bf16),
            Mma::F16 => Some(ScalarType::F16),
            _ => None,
        }
    }

    /// The reduction steps of one mma: 8 (m16n8k8, TF32), 16 (m16n8k16).
    pub fn k_step(self) -> usize {
        if self.operand_type().is_some() {
            16
        } else {
            8
        }
    }

    /// The modes a contraction `k` with [`MmaDims`] `dims` may ask for:
    /// `Off`, the TF32 ones, and the 16-bit one of its inputs' type where
    /// both inputs have it.
    pub fn of_inputs(k: &KernelDesc, dims: &MmaDims) -> Vec<Mma> {
        Mma::ALL
            .into_iter()
            .filter(|m| m.operand_type().is_none_or(|t| m.fits(k, dims, t)))
            .collect()
    }

    /// Whether both contraction inputs are buffers of type `t`.
    fn fits(self, k: &KernelDesc, dims: &MmaDims, t: ScalarType) -> bool {
        k.inputs[dims.a].ty == t && k.inputs[dims.b].ty == t
    }

    /// That both inputs have this mode's 16-bit type, with the reason
    /// where not.
    pub(super) fn check_inputs(self, k: &KernelDesc, dims: &MmaDims) -> Result<(), PlanError> {
        let Some(t) = self.operand_type() else {
            return Ok(());
        };
        if self.fits(k, dims, t) {
            return Ok(());
        }
        let (a, b) = (&k.inputs[dims.a], &k.inputs[dims.b]);
        Err(err("mma", format!(
            "`mma: {}` feeds the tensor cores the inputs' own {} bits, and the contraction's inputs are `{}: {}` and `{}: {}`; declare both `{}` or use `mma: tf32` (exact for 16-bit inputs)",
            self.name(), t.name(), a.name, a.ty.name(), b.name, b.ty.name(), t.name()
        )))
    }

    pub fn from_name(name: &str) -> Option<Mma> {
        Mma::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The value of [`names::MMA`](crate::names::MMA): 0 off, the mmas
    /// per product for TF32, 16 for m16n8k16 (the template knows its
    /// inputs' type).
    pub(super) fn define(self) -> usize {
        match self {
            Mma::Off => 0,
            Mma::Tf32 => 1,
            Mma::Tf32x3 => 3,
            Mma::Bf16 | Mma::F16 => 16,
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
/// `n`), and tiles step the reduction by the mma's `k_step` (8 or 16).
pub(super) fn mma_geometry(
    dims: &MmaDims,
    lanes: &[usize],
    items: &[usize],
    tile: &[usize],
    k_step: usize,
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
        || !tile[k].is_multiple_of(k_step)
    {
        return Err(err("tile", format!(
            "`mma` computes tiles of 16 rows × 8 columns × {k_step} steps: `tile` must be a multiple of 2 × `items` along dimension {m} (the rows) and {n} (the columns), of {k_step} along dimension {k} (the reduction), not {tile:?}"
        )));
    }
    Ok(())
}
