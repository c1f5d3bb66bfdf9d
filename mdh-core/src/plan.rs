//! The low-level plan on the CPU's abstract system model (the paper's
//! Section 3 and Table 1): memory layers MM (main memory), L2, L1 and REG,
//! core layers COR (rayon tasks) and SIMD (vector lanes).
//!
//! A [`CpuPlan`] fixes, per md_hom dimension, the number of COR parts, the
//! tile sizes of the L2, L1 and REG layers, and the loop order of the tile
//! loops. Register tiles have constant trip counts; the dimension mapped to
//! SIMD lanes is the one whose register tile is contiguous in memory. Partial
//! results of PW dimensions live in registers inside a register tile and in
//! a task-local buffer over the task's kept points across tiles (the paper's
//! re-composition in a faster memory region). Tile sizes need not divide the
//! sizes: edge tiles run a variable-trip version of the same code (a
//! register tile of several vectors as smaller tiles: one vector wide where
//! the SIMD dimension is cut, two rows at a time where only others are).
//!
//! Memory regions of inputs (the paper's D3/D4): an input access may be
//! *packed*: at each L1 tile, the elements the access reads over the tile
//! are copied into a contiguous, 64-byte aligned buffer of the thread, in a
//! layout the plan chooses (e.g. transposed so that the SIMD dimension is
//! contiguous: vector loads instead of gathers), and the register tiles
//! read the buffer. A buffer is refilled only when the tile's range of the
//! dimensions the access uses changes; it is kept across the parts of one
//! call that the thread runs (`mdh::cpu::PackedTile`). Where the layout's
//! contiguous dimension is contiguous in the input too, a tile the register
//! tiles would read fewer than 8 times (few rows of a matrix product) is
//! read in place instead, decided per L1 tile at run time: its copy would
//! cost about as much as the reads it speeds up.
//!
//! Memory region of results: a plan may *stream* its final results, writing
//! them with non-temporal stores past the caches into the output (no read
//! of the line first, no eviction of the inputs): for outputs far larger
//! than the caches and not read again soon.

pub use mdh_rt::types::elem_bytes;

use crate::analysis::Checked;
use crate::spec::DimKind;

/// Bytes of one vector register of the widest SIMD layer (AVX-512).
pub const VECTOR_BYTES: usize = 64;
/// Upper bound on the elements of one register tile, whatever the type.
pub const MAX_REGISTER_TILE: usize = 512;

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CpuPlan {
    /// #PRT(NOD, d): parts of each dimension on the ranks of an MPI
    /// communicator (`NAME::mpi`, the facade's `mpi` feature), taken by
    /// calls on as many ranks as their product; all 0: chosen at run time
    /// from the sizes and the number of ranks.
    pub nod: Vec<usize>,
    /// #PRT(COR, d): parts of each dimension run as separate rayon tasks
    /// (0: chosen at run time from the number of threads).
    pub cor: Vec<usize>,
    /// Tile extents of the L2 and L1 layers per dimension (≥ 1).
    pub l2: Vec<usize>,
    pub l1: Vec<usize>,
    /// Register tile extents per dimension (≥ 1, constant trip counts). Only
    /// the innermost PW dimension may have an extent above 1 among the PW
    /// dimensions: its register tile holds independent partial results
    /// (vector lanes) that are combined at the end of the tile.
    pub reg: Vec<usize>,
    /// Loop order of the L2 and L1 tile loops, outermost first (a
    /// permutation of the dimensions).
    pub order: Vec<usize>,
    /// Per input access (the scalar function's parameters, in order): the
    /// layout of its packed L1 tile, outermost dimension first, the last
    /// one contiguous (a permutation of the dimensions the access uses), or
    /// empty: read the input in place. A layout whose last dimension is
    /// contiguous in the input is packed only where the tile is read often
    /// enough to repay the copy (see the module documentation).
    pub pack: Vec<Vec<usize>>,
    /// Whether final results go to the output with non-temporal stores
    /// (see the module documentation). Only whole vectors at addresses
    /// aligned to their size stream (a 64-byte aligned output of a kernel
    /// whose SIMD dimension is contiguous there); other stores, and results
    /// that a later PW tile combines with, are written as usual.
    pub stream: bool,
    /// Whether the entry's `sizes` also get a task body compiled for
    /// exactly those sizes (constant sizes, strides and unsplit region
    /// bounds; see `Gen::exact_binds`), taken by calls with exactly them.
    /// It costs a body per instruction set in compile time and pays where
    /// constant strides and trip counts matter (mcc 0.64 → 0.54 ms when it
    /// came in); only an entry with `sizes` can ask for it.
    #[serde(default)]
    pub exact: bool,
}

pub use mdh_rt::PlanError;

fn err(field: &'static str, message: String) -> PlanError {
    PlanError { field, message }
}

/// Bytes of one point's accumulators in a register tile: one per output
/// access.
pub fn accumulator_bytes_per_point(k: &Checked) -> usize {
    k.analysis().outputs.iter().map(|o| elem_bytes(o.ty)).sum()
}

/// Lanes of one vector of the widest SIMD layer for the kernel's widest
/// output type.
pub fn simd_lanes(k: &Checked) -> usize {
    lanes_of(k.analysis().outputs.iter().map(|a| elem_bytes(a.ty)).max())
}

/// Lanes of one vector where the SIMD dimension is the innermost PW one
/// (lanes of partial results): one vector of the narrowest input or output
/// type, so that the scalar function's narrow part fills whole vectors and
/// wider values take several (prl: 16 lanes, its `i32` comparisons in one
/// vector, its `i64` results in two), as C compilers vectorize such loops.
/// On the 2-core AMD EPYC (Zen 5), prl 2^15: 94 ms against 135 with 8
/// lanes (before widening casts kept their operand narrow, `V::cast`; with
/// them 70 ms, a gcc-vectorized C loop 82–90 ms).
pub fn reduction_lanes(k: &Checked) -> usize {
    lanes_of(element_bytes(k).min())
}

/// Lanes of one vector of the widest input or output type: the lanes of a
/// kept SIMD dimension, where every value of a point takes one lane.
pub fn kept_lanes(k: &Checked) -> usize {
    lanes_of(element_bytes(k).max())
}

/// Bytes of the element type of each input buffer and output access.
fn element_bytes(k: &Checked) -> impl Iterator<Item = usize> + '_ {
    k.inputs
        .iter()
        .map(|b| b.ty)
        .chain(k.analysis().outputs.iter().map(|o| o.ty))
        .map(elem_bytes)
}

/// Lanes of one vector of elements of `bytes` (4 bytes without elements).
fn lanes_of(bytes: Option<usize>) -> usize {
    (VECTOR_BYTES / bytes.unwrap_or(4)).max(1)
}

/// The dimension whose consecutive indices are consecutive in memory for
/// the most accesses: the natural SIMD dimension.
pub fn contiguous_dim(k: &Checked) -> Option<usize> {
    let score = contiguity(k);
    // Prefer the innermost among the best (row-major: the last dimension).
    (0..score.len())
        .filter(|&x| score[x] > 0)
        .max_by_key(|&x| (score[x], x))
}

/// The SIMD dimension of a contraction, if the kernel is one: a kept
/// CC dimension along which every output is contiguous, in a kernel with a PW
/// dimension whose every input access leaves some kept dimension out (so
/// each input element is reused across the points of that dimension, as
/// in a matrix product or a convolution, unlike matvec's matrix). The
/// innermost such dimension. A convolution's channels may be contiguous in
/// more accesses, but they are few (3 in ResNet-50's first layer): SIMD
/// lanes over them would leave most lanes idle.
pub fn contraction_dim(k: &Checked) -> Option<usize> {
    let a = k.analysis();
    let (kinds, kept) = (&a.kinds, &a.kept);
    let reuse = a
        .inputs
        .iter()
        .all(|i| kept.iter().any(|x| !i.uses.contains(x)));
    if !kinds.contains(&DimKind::Pw) || !reuse {
        return None;
    }
    kept.iter().rev().copied().find(|&x| {
        kinds[x] == DimKind::Cc && a.outputs.iter().all(|o| o.static_coefs[x] == Some(1))
    })
}

/// Per dimension: how many accesses (inputs and outputs) have consecutive
/// elements at consecutive indices of it.
pub fn contiguity(k: &Checked) -> Vec<usize> {
    let a = k.analysis();
    (0..a.kinds.len())
        .map(|x| {
            let accesses = a.inputs.iter().chain(&a.outputs);
            accesses
                .filter(|acc| acc.static_coefs[x] == Some(1))
                .count()
        })
        .collect()
}

impl CpuPlan {
    /// Checks a plan against the kernel and the CPU model.
    pub fn validate(&self, k: &Checked) -> Result<(), PlanError> {
        let d = k.dims.len();
        let kinds = &k.analysis().kinds;
        let lists: [(&'static str, &Vec<usize>); 5] = [
            ("nod", &self.nod),
            ("cor", &self.cor),
            ("l2", &self.l2),
            ("l1", &self.l1),
            ("reg", &self.reg),
        ];
        for (name, v) in lists {
            if v.len() != d {
                return Err(err(name, format!(
                    "`{name}` has {} entries but the kernel has {d} dimensions; give one per md_hom dimension",
                    v.len()
                )));
            }
        }
        if self.nod.contains(&0) && self.nod.iter().any(|&p| p > 0) {
            return Err(err(
                "nod",
                format!(
                    "`nod` {:?} mixes 0 (chosen at run time) with set parts; give every dimension's parts (their product is the number of ranks), or all 0",
                    self.nod
                ),
            ));
        }
        for (name, v) in lists.into_iter().skip(2) {
            if let Some(x) = v.iter().position(|&t| t == 0) {
                return Err(err(
                    name,
                    format!("`{name}` of dimension {x} is 0; tile sizes must be at least 1"),
                ));
            }
        }
        let mut seen = vec![false; d];
        if self.order.len() != d
            || self
                .order
                .iter()
                .any(|&x| x >= d || std::mem::replace(&mut seen[x], true))
        {
            return Err(err(
                "order",
                format!(
                    "`order` must be a permutation of the dimensions 0..{d}, got {:?}",
                    self.order
                ),
            ));
        }
        let pw_with_reg: Vec<usize> = (0..d)
            .filter(|&x| kinds[x] == DimKind::Pw && self.reg[x] > 1)
            .collect();
        let innermost_pw = (0..d).rev().find(|&x| kinds[x] == DimKind::Pw);
        if pw_with_reg.iter().any(|&x| Some(x) != innermost_pw) {
            return Err(err(
                "reg",
                format!(
                    "only the innermost PW dimension ({innermost_pw:?}) may have a register tile above 1, got `reg` {:?}",
                    self.reg
                ),
            ));
        }
        let accesses = &k.analysis().inputs;
        if self.pack.len() != accesses.len() {
            return Err(err(
                "pack",
                format!(
                    "`pack` has {} entries but the kernel has {} input accesses (one per scalar-function parameter); give one layout per access, [] to read it in place",
                    self.pack.len(),
                    accesses.len()
                ),
            ));
        }
        for (j, (access, layout)) in accesses.iter().zip(&self.pack).enumerate() {
            let used = &access.uses;
            let mut sorted = layout.clone();
            sorted.sort_unstable();
            if !layout.is_empty() && sorted != *used {
                return Err(err(
                    "pack",
                    format!(
                        "`pack[{j}]` ({}) is {layout:?} but must list each dimension its index function uses exactly once, in the order of the packed layout (last: contiguous): a permutation of {used:?}, or [] to read it in place",
                        k.inputs[access.buffer].name
                    ),
                ));
            }
        }
        let tile: usize = self.reg.iter().product();
        let per_output = self.reg_elements();
        let outs = k.output_accesses().len().max(1);
        if tile > MAX_REGISTER_TILE || per_output.saturating_mul(outs) > MAX_REGISTER_TILE {
            return Err(err(
                "reg",
                format!(
                    "the register tile {:?} has {tile} points; at most {MAX_REGISTER_TILE} fit the registers",
                    self.reg
                ),
            ));
        }
        Ok(())
    }

    /// Accumulators of one output in a register tile.
    pub fn reg_elements(&self) -> usize {
        self.reg.iter().product()
    }

    /// Bytes of the accumulators of a register tile, every output access
    /// together (whether an instruction set's registers hold them:
    /// `PlanEntry::suits`).
    pub fn accumulator_bytes(&self, k: &Checked) -> usize {
        self.reg_elements() * accumulator_bytes_per_point(k)
    }

    /// The plan with its register tile narrowed to the registers of `isa`,
    /// where its accumulators outgrow them; `None` where they fit, or where
    /// no narrower tile is valid. The widest extent is halved first, never
    /// below one vector, so that every L1 tile still holds whole register
    /// tiles and the rows, which share each vector's loads, stay. An entry
    /// tuned on AVX-512 then runs narrowed on AVX2 rather than after the
    /// default plan: matmul 1×1000×2048's 1 × 128 floats as 1 × 64 ran 0.18
    /// ms on the 2-core Zen 3 EPYC, the AVX2 default 0.30–0.32.
    pub fn narrowed(&self, k: &Checked, isa: mdh_rt::machine::Isa) -> Option<CpuPlan> {
        let fits = |p: &CpuPlan| p.accumulator_bytes(k) <= isa.accumulator_bytes();
        if fits(self) {
            return None;
        }
        let lanes = simd_lanes(k);
        let mut p = self.clone();
        while !fits(&p) {
            // A vector's lanes (or one point, for extents below a vector)
            // stay whole.
            let unit = |r: usize| if r >= lanes { lanes } else { 1 };
            let x = (0..p.reg.len())
                .filter(|&x| p.reg[x].is_multiple_of(2 * unit(p.reg[x])))
                .max_by_key(|&x| p.reg[x])?;
            p.reg[x] /= 2;
        }
        p.validate(k).is_ok().then_some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    fn kernel(src: proc_macro2::TokenStream) -> crate::Checked {
        crate::compile(src).expect("valid kernel")
    }

    #[test]
    fn register_tiles_narrow_to_an_instruction_sets_registers() {
        use mdh_rt::machine::Isa;
        let k = fixtures::matmul();
        let plan = |reg: Vec<usize>| CpuPlan {
            reg,
            l1: vec![6, 128, 512],
            l2: vec![6, 1024, 512],
            ..CpuPlan::default_for(&k)
        };
        // One row of 8 zmm (512 B) on AVX2's 384 B: half as wide; 6 rows
        // of 4 zmm: a vector each, the rows kept.
        assert_eq!(
            plan(vec![1, 128, 1]).narrowed(&k, Isa::Avx2).map(|p| p.reg),
            Some(vec![1, 64, 1])
        );
        assert_eq!(
            plan(vec![6, 64, 1]).narrowed(&k, Isa::Avx2).map(|p| p.reg),
            Some(vec![6, 16, 1])
        );
        // A tile that fits is not narrowed; one that cannot fit is not
        // either (it is passed over).
        assert_eq!(plan(vec![6, 16, 1]).narrowed(&k, Isa::Avx2), None);
        assert_eq!(
            plan(vec![6, 16, 1]).narrowed(&k, Isa::Baseline),
            Some(plan(vec![3, 16, 1]))
        );
        assert_eq!(plan(vec![5, 16, 1]).narrowed(&k, Isa::Baseline), None);
    }

    #[test]
    fn packing_layouts_are_validated() {
        let k = crate::fixtures::matmul();
        let mut p = CpuPlan::default_for(&k);
        // A contraction: B, which depends on the SIMD dimension j, is packed
        // (k, j).
        assert_eq!(p.pack, vec![vec![], vec![2, 1]]);
        p.pack = vec![vec![2, 0], vec![2, 1]];
        assert_eq!(p.validate(&k), Ok(()));
        p.pack = vec![vec![2, 0]];
        let e = p.validate(&k).unwrap_err();
        assert!(
            e.field == "pack" && e.message.contains("2 input accesses"),
            "{e:?}"
        );
        p.pack = vec![vec![], vec![0, 1]];
        let e = p.validate(&k).unwrap_err();
        assert!(e.message.contains("`pack[1]` (B)"), "{e:?}");
        assert!(e.message.contains("permutation of [1, 2]"), "{e:?}");
        p.pack = vec![vec![2, 2], vec![]];
        assert!(p.validate(&k).is_err());
    }

    #[test]
    fn convolutions_vectorize_their_output_channels_by_default() {
        // The channels C are contiguous in two accesses, the output
        // channels K in the output only; but every input is reused across
        // some kept dimension: a contraction, SIMD over K, the filter packed
        // with K innermost, the input read in place (broadcasts).
        let k = kernel(quote::quote! {
            kernel mcc {
                inp(I: f32[N, P + R - 1, Q + S - 1, C], F: f32[K, R, S, C]),
                out(O: f32[N, P, Q, K]),
                out_view(O: |n, p, q, k, r, s, c| (n, p, q, k)),
                md_hom[N, P, Q, K, R, S, C](|x, w| x * w, (CC, CC, CC, CC, PW(+), PW(+), PW(+))),
                inp_view(
                    I: |n, p, q, k, r, s, c| (n, p + r, q + s, c),
                    F: |n, p, q, k, r, s, c| (k, r, s, c),
                ),
            }
        });
        assert_eq!(contraction_dim(&k), Some(3));
        let p = CpuPlan::default_for(&k);
        assert_eq!(p.reg, vec![1, 1, 6, 64, 1, 1, 1]);
        assert_eq!(p.pack, vec![vec![], vec![4, 5, 6, 3]]);
        assert_eq!(p.validate(&k), Ok(()));
        // matvec's matrix is used once per point: a reduction along its
        // contiguous rows, not a contraction.
        let mv = crate::fixtures::matvec();
        assert_eq!(contraction_dim(&mv), None);
    }

    #[test]
    fn strided_simd_inputs_are_packed_by_default() {
        // B is strided along the SIMD dimension `f` (the output's
        // contiguous one): packed with `f` innermost; A does not depend on
        // `f`: read in place.
        let k = fixtures::compiled(&fixtures::example("ccsdt"));
        let p = CpuPlan::default_for(&k);
        assert_eq!(p.pack, vec![vec![], vec![2, 4, 6, 5]]);
        assert_eq!(p.validate(&k), Ok(()));
    }
}
