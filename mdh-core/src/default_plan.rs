//! The analytical default plan: a [`CpuPlan`] derived from the kernel's
//! computation class and a machine description (vector registers, cache
//! sizes), used where no config entry applies. As BLIS derives its
//! blocking from cache and register parameters instead of tuning it (Low
//! et al., 2016), each class gets a small model:
//!
//! - **contraction** (matmul, convolution, tensor contraction: every input
//!   reused across some kept dimension): GotoBLAS/BLIS blocking. The
//!   register tile is `nr` vectors of the output's contiguous dimension ×
//!   `mr` rows, as many accumulators as the register file holds beside the
//!   operands (more than the FMA latency × FMA ports that keep the units
//!   busy); the input that dimension indexes is packed into a contiguous
//!   kc × nr panel that stays in L2 (kc from the L2 size) while the rows
//!   pass over it (read in place at run time where fewer than 8 register
//!   tiles of rows would read it, see [`CpuPlan::pack`]). A tensor
//!   contraction whose packed operand has a second free index outside the
//!   SIMD dimension (ccsdt) gets a register tile of one vector × rows of
//!   the other operand × columns of that index instead, whose extents are
//!   often a single vector, and streams its results;
//! - **reduction along contiguous inputs** (matvec, dot): SIMD lanes of
//!   independent partial results along the innermost PW dimension, runs of
//!   an eighth of the L2 per row that the prefetchers follow;
//! - **map / stencil** (no PW dimension): two vectors × up to six rows per
//!   register tile, L1 tiles whose input footprint (the tile and its halo)
//!   fits the L1, results streamed past the caches where the call's output
//!   outgrows them (decided at run time, `mdh::stream::pays`);
//! - **reduction over a kept SIMD dimension** (record linkage with an
//!   expensive scalar function and a user-defined combine, histograms): two
//!   vectors of lanes over the kept dimension with built-in combines (or
//!   closures that compute one, [`Checked::cpu_op`]) where a kept dimension
//!   is innermost; where the innermost is PW, one point per register tile
//!   over long PW runs with lanes of partial results along them (one
//!   vector of the narrowest type, as a C compiler vectorizes the loop);
//!   with a closure (no identity to
//!   start lanes from) scalar rows, one vector's worth, which stay in
//!   registers; PW tiles whose inputs stay in L1.
//!
//! The macro runs at compile time, possibly on another machine than the one
//! the kernel runs on, and tile sizes are constants of the generated code;
//! so [`CpuPlan::default_for`] derives the plan for [`REFERENCE_MACHINE`],
//! whose caches are the smallest of current x86-64 server and desktop cores:
//! tiles that fit them fit the larger caches too. What depends on the call
//! or the host is decided at run time: the COR parts (the host's cores) and
//! whether results stream (the host's L2 sizes).

use mdh_rt::machine::{Isa, Machine, RowsWithin};

use crate::analysis::Checked;
use crate::plan::{
    contiguous_dim, contraction_dim, reduction_lanes, simd_lanes, CpuPlan, VECTOR_BYTES,
};
use crate::spec::{DimKind, ScalarType, SizeExpr};

/// The machine the compile-time default is derived for (see the module
/// documentation): AVX-512's register file, 32 KiB L1d, 512 KiB L2 per
/// core (AMD Zen 2–4, older Intel server cores; Zen 5 has 48 KiB and
/// 1 MiB, Sapphire Rapids 48 KiB and 2 MiB).
pub const REFERENCE_MACHINE: Machine = Machine {
    isa: Isa::Avx512,
    cores: 1,
    l1d: Some(32 << 10),
    l2: Some(512 << 10),
    l3: None,
};

/// Registers that hold one vector of the plan's SIMD layer
/// ([`VECTOR_BYTES`]) on an instruction set.
const fn register_parts(isa: Isa) -> usize {
    let n = VECTOR_BYTES / isa.vector_bytes();
    if n == 0 {
        1
    } else {
        n
    }
}

/// Accumulators a register tile may hold, counted in vectors of the plan's
/// SIMD layer ([`VECTOR_BYTES`]: one plan serves every instruction set's
/// body, a narrower register holds part of such a vector). AVX-512: 24.
const fn accumulator_vectors(isa: Isa) -> usize {
    let n = isa.accumulator_bytes() / VECTOR_BYTES;
    if n == 0 {
        1
    } else {
        n
    }
}

/// L1d and L2 of `m`, those of [`REFERENCE_MACHINE`] where it does not say.
fn caches(m: &Machine) -> (usize, usize) {
    let or = |s: Option<u64>, r: Option<u64>| s.or(r).unwrap_or(1 << 15) as usize;
    (
        or(m.l1d, REFERENCE_MACHINE.l1d),
        or(m.l2, REFERENCE_MACHINE.l2),
    )
}

/// The largest power of two at most `x`, within `lo..=hi`.
fn pow2_within(x: usize, lo: usize, hi: usize) -> usize {
    let p = if x == 0 { 1 } else { 1 << x.ilog2() };
    p.clamp(lo, hi)
}

/// The innermost PW dimension of a kept reduction and its L1 tile: as many
/// points as the inputs that only it indexes (the second record set of
/// prl) fit in `bytes`, a power of two in 64..=4096; `None` without such
/// inputs.
fn pw_run(k: &Checked, bytes: usize) -> Option<(usize, usize)> {
    let a = k.analysis();
    let &pw = a.reduced.last()?;
    let per_point: usize = a
        .inputs
        .iter()
        .filter(|i| i.uses.contains(&pw) && a.kept.iter().all(|x| !i.uses.contains(x)))
        .map(|i| crate::plan::elem_bytes(i.ty))
        .sum();
    Some((pw, pow2_within(bytes.checked_div(per_point)?, 64, 4096)))
}

/// Bytes of one element of each input buffer, summed (a stencil's
/// accesses of one buffer count once).
fn input_bytes(k: &Checked) -> usize {
    let mut buffers: Vec<(usize, usize)> = k
        .analysis()
        .inputs
        .iter()
        .map(|i| (i.buffer, crate::plan::elem_bytes(i.ty)))
        .collect();
    buffers.sort_unstable();
    buffers.dedup();
    buffers.iter().map(|b| b.1).sum()
}

/// The narrowest element type of the inputs that SIMD dimension `s`
/// indexes.
fn lane_input(k: &Checked, s: usize) -> Option<ScalarType> {
    let inputs = k.analysis().inputs.iter().filter(|i| i.uses.contains(&s));
    inputs
        .map(|i| i.ty)
        .min_by_key(|&t| crate::plan::elem_bytes(t))
}

/// The default's packed layouts: an input access that depends on the kept
/// SIMD dimension `simd` of a register tile wider than one point, without
/// being contiguous along it (every such access in a contraction), is
/// packed with that dimension innermost, its others in dimension order.
/// In a contraction, a 16-bit input widened to f32 (see
/// `codegen::cpu::widened`) that does not depend on it (the broadcast
/// operand) is packed too, in its own order: its tile holds f32, so each
/// broadcast is one f32 load instead of a conversion in the register tile.
fn default_pack(
    k: &Checked,
    simd: Option<usize>,
    reg: &[usize],
    contraction: bool,
) -> Vec<Vec<usize>> {
    let widened = crate::codegen::cpu::widened(k);
    k.analysis()
        .inputs
        .iter()
        .zip(widened)
        .map(|(i, w)| match simd {
            Some(s)
                if reg[s] > 1
                    && i.uses.contains(&s)
                    && (contraction || i.static_coefs[s] != Some(1)) =>
            {
                let mut layout: Vec<usize> = i.uses.iter().copied().filter(|&x| x != s).collect();
                layout.push(s);
                layout
            }
            Some(s) if reg[s] > 1 && contraction && w.is_some() => {
                let mut layout = i.uses.clone();
                layout.sort_by_key(|&x| i.static_coefs[x] == Some(1));
                layout
            }
            _ => Vec::new(),
        })
        .collect()
}

/// A kernel's computation class, which picks the model of its default plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// SIMD over kept dimension `simd`, register-tile rows along `rows`,
    /// a PW dimension; every input reused across some kept dimension.
    /// `cols`: a kept dimension outside `simd` that only inputs indexed by
    /// `simd` use (a tensor contraction's second free index of the same
    /// operand; none in a matrix product), whose register tile of rows
    /// those inputs' vectors share across `rows`.
    Contraction {
        simd: usize,
        rows: usize,
        cols: Option<usize>,
    },
    /// SIMD over the innermost PW dimension, along which the inputs are
    /// contiguous (matvec, dot).
    ContiguousReduction { simd: usize },
    /// No PW dimension; SIMD over a kept dimension (maps, stencils).
    Map { simd: usize },
    /// PW dimensions and SIMD over a kept dimension, not a contraction
    /// (record linkage, histograms).
    KeptReduction { simd: usize },
    /// No dimension that SIMD lanes can take (scans, scalar kernels).
    Scalar,
}

impl Class {
    /// The kept dimension whose points are SIMD lanes, if there is one.
    pub fn kept_simd(self) -> Option<usize> {
        match self {
            Class::Contraction { simd, .. }
            | Class::Map { simd }
            | Class::KeptReduction { simd } => Some(simd),
            _ => None,
        }
    }

    /// The class of `k`.
    pub fn of(k: &Checked) -> Class {
        let a = k.analysis();
        let kinds = &a.kinds;
        let innermost_pw = (0..kinds.len()).rev().find(|&x| kinds[x] == DimKind::Pw);
        let Some(s) = contraction_dim(k).or_else(|| contiguous_dim(k)) else {
            return Class::Scalar;
        };
        if Some(s) == innermost_pw {
            return Class::ContiguousReduction { simd: s };
        }
        if kinds[s] != DimKind::Cc {
            return Class::Scalar;
        }
        let rows = (0..s).rev().find(|&x| kinds[x] == DimKind::Cc);
        match (contraction_dim(k), rows, innermost_pw) {
            (Some(_), Some(rows), Some(_)) => {
                // Inputs split by whether they depend on `s`: `cols` is
                // used by the first kind only, `rows` then by the second.
                let by_s = |x: usize, with: bool| {
                    a.inputs
                        .iter()
                        .filter(|i| i.uses.contains(&x))
                        .all(|i| i.uses.contains(&s) == with)
                };
                let kept_outside = || (0..s).rev().filter(|&x| kinds[x] == DimKind::Cc);
                let cols = kept_outside().find(|&x| by_s(x, true));
                match (cols, kept_outside().find(|&x| by_s(x, false))) {
                    (Some(c), Some(r)) => Class::Contraction {
                        simd: s,
                        rows: r,
                        cols: Some(c),
                    },
                    _ => Class::Contraction {
                        simd: s,
                        rows,
                        cols: None,
                    },
                }
            }
            (_, _, None) => Class::Map { simd: s },
            _ => Class::KeptReduction { simd: s },
        }
    }
}

impl CpuPlan {
    /// The default plan: [`CpuPlan::default_for_machine`] for the
    /// [`REFERENCE_MACHINE`] (the macro cannot know the machine the kernel
    /// will run on; see the module documentation).
    pub fn default_for(k: &Checked) -> CpuPlan {
        CpuPlan::default_for_machine(k, &REFERENCE_MACHINE)
    }

    /// The default plan as generated code runs it on instruction set
    /// `isa`: the default for the reference machine with `isa`'s register
    /// file. x86-64's baseline body runs it (16 SSE registers: register
    /// tiles a fraction of AVX-512's, so a body LLVM compiles fast), and so
    /// does the default entry's AVX2 body (a plan sized for AVX-512's 32
    /// registers spills on AVX2's 16: matmul 1024³ on AVX2 ran 18.4 ms with
    /// AVX-512's default, 9.3 with AVX2's).
    pub fn default_for_isa(k: &Checked, isa: Isa) -> CpuPlan {
        let m = Machine {
            isa,
            ..REFERENCE_MACHINE
        };
        CpuPlan::default_for_machine(k, &m)
    }

    /// The plans of matrix products of few rows, which the macro adds
    /// before the default plan for calls where the rows' extent, a size
    /// parameter, is below the default's 6 rows of register tile: of one
    /// row (a vector times a matrix, an LLM's decoding step) and of 2 to 5
    /// rows. The default's register tile then holds one to five rows of
    /// accumulators (AVX2: two vectors a row, so the multiply-adds of one
    /// row wait on their latency) and packs B, which few rows read few
    /// times. Here: one row × 8 vectors of accumulators, or 4 rows × 4
    /// vectors (AVX-512; the AVX2 body narrows both to 8 ymm: 1 × 4 and
    /// 4 × 1 vectors), B read in place along runs of 512 of its rows, and 4
    /// parts of the columns (grown to the threads on larger machines). On
    /// the 2-core AMD EPYC (Zen 3, AVX2), matmul I × 1000 × 2048, default
    /// against these plans interleaved in one process: I = 1 0.22–0.26 ms
    /// against 0.14–0.16; 2: 0.21–0.24 against 0.17–0.18; 3: 0.30 against
    /// 0.26; 4: 0.33 against 0.21; 5: 0.42 against 0.38.
    ///
    /// The 2..5-rows plan's L1 tile holds all 5 rows (two register tiles),
    /// so that a fifth row reads B's tile from the caches, not again from
    /// memory: bf16 5 × 4096 × 4096 on the 2-core AMD EPYC (Zen 4), 4.85 ms
    /// with 4 rows an L1 tile, 2.82 with 8. Before it, a product of bf16
    /// inputs gets the same tiles with B packed as pairs, for hosts whose
    /// bodies run them (`vdpbf16ps`, see `codegen::cpu::pairs`; elsewhere
    /// B would be packed widened to f32, slower than in place: AVX2 3.3 ms
    /// against 2.2 at 4 rows), in panels of 256 columns (512 bytes of B's
    /// rows; 64: 2.9 ms, 128: 1.9): I = 2..5 × 4096 × 4096 1.66, 1.78,
    /// 1.79, 1.88 ms against 2.07, 2.55, 2.62, 2.82 in place. One row keeps
    /// B in place (1.37 ms against 1.90 packed as pairs: memory-bound).
    ///
    /// Three rows, where no plan of pairs takes them, get a register tile
    /// of their own (3 rows × 4 vectors): the 4-row tile cut to 3 rows ran
    /// as two tiles of row pairs, each reading B. Zen 4, f32, one process,
    /// old against new interleaved, best of 60: 3 × 1000 × 2048
    /// 0.132–0.138 ms against 0.082–0.084, 3 × 4096 × 4096 3.28–3.35
    /// against 2.63–2.67 (2 and 4 rows unchanged). A 5-row tile (5 rows
    /// ran as 4 and 1: 0.127 ms against 0.094 at 5 × 1000 × 2048, 3.7
    /// against 3.3 at 5 × 4096 × 4096) was left out: each plan of few rows
    /// is two more task bodies in every product's build (the matmul
    /// example's release build 11.7 s, 12.9 with the 3-row plan, 14.1 with
    /// both).
    pub fn few_rows_for(k: &Checked) -> Vec<(CpuPlan, RowsWithin)> {
        let Class::Contraction {
            simd: s,
            rows: o,
            cols: None,
        } = Class::of(k)
        else {
            return Vec::new();
        };
        let SizeExpr::Param(rows) = &k.dims[o].size else {
            return Vec::new();
        };
        let Some(param) = k.size_params.iter().position(|p| p == rows) else {
            return Vec::new();
        };
        let outputs = k.analysis().outputs.len().max(1);
        let plan = |rows: usize, vectors: usize, serves: usize| {
            let mut p = CpuPlan::default_for(k);
            let vectors = (accumulator_vectors(Isa::Avx512) / rows / outputs).clamp(1, vectors);
            p.reg[o] = rows;
            p.reg[s] = vectors * simd_lanes(k);
            (p.l1[o], p.l2[o]) = (serves.next_multiple_of(rows), serves.next_multiple_of(rows));
            p.l1[s] = p.reg[s];
            p.l2[s] = (1024 / p.reg[s]).max(1) * p.reg[s];
            p.cor = vec![0; p.reg.len()];
            p.cor[s] = 4;
            p.pack = vec![Vec::new(); p.pack.len()];
            p
        };
        let within = |min, max| RowsWithin { param, min, max };
        let mut plans = vec![(plan(1, 8, 1), within(1, 1))];
        if lane_input(k, s) == Some(ScalarType::Bf16) {
            // B (the input along the lanes) packed as the default packs it:
            // a plan that runs pairs (`PlanEntry::pairs`), which ranks only
            // where they run.
            let mut p = plan(4, 4, 5);
            let packed = CpuPlan::default_for(k).pack;
            for (j, a) in k.analysis().inputs.iter().enumerate() {
                if a.uses.contains(&s) {
                    p.pack[j] = packed[j].clone();
                }
            }
            p.l1[s] = (256 / p.reg[s]).max(1) * p.reg[s];
            plans.push((p, within(2, 5)));
        }
        // Before the plan of 2..5 rows: ranks take the first that holds.
        plans.push((plan(3, 4, 3), within(3, 3)));
        plans.push((plan(4, 4, 5), within(2, 5)));
        plans
            .into_iter()
            .filter(|(p, _)| p.validate(k).is_ok())
            .collect()
    }

    /// The analytical default plan of `k` on machine `m` (see the module
    /// documentation for the model of each [`Class`]). Common to all
    /// classes: COR parts chosen at run time; tile loops with the kept
    /// dimensions outermost in dimension order, then the PW dimensions, so
    /// that partial results stay in the task-local buffer; L1 tiles hold
    /// whole register tiles (a remainder would run an edge tile in every L1
    /// tile: jacobi3d's 64 rows of 6-row tiles ran 1.86× slower than 48);
    /// an input access that depends on a kept SIMD dimension without being
    /// contiguous along it (it would be read with gathers) is packed with
    /// that dimension innermost, its other dimensions in dimension order.
    pub fn default_for_machine(k: &Checked, m: &Machine) -> CpuPlan {
        let a = k.analysis();
        let (d, kinds) = (a.kinds.len(), &a.kinds);
        let lanes = simd_lanes(k);
        let (l1d_bytes, l2_bytes) = caches(m);
        let acc = accumulator_vectors(m.isa);
        let outputs = a.outputs.len().max(1);
        let class = Class::of(k);
        let mut reg = vec![1; d];
        // Defaults the classes refine: L1 tiles of 256 along PW
        // dimensions and 64 along kept ones, L2 tiles four times larger.
        let mut l1: Vec<usize> = (0..d)
            .map(|x| if kinds[x] == DimKind::Pw { 256 } else { 64 })
            .collect();
        let mut l2: Vec<usize>;
        let mut order = a.kept.clone();
        order.extend(&a.reduced);
        let mut stream = false;
        let outer_kept = |s: usize| (0..s).rev().find(|&x| kinds[x] == DimKind::Cc);
        // `want` vectors of the SIMD dimension where the accumulators hold
        // them for every output, else fewer (at least one).
        let vectors = |want: usize| want.min(acc / outputs).max(1);
        let whole = |t: usize, r: usize| (t / r).max(1) * r;
        match class {
            Class::Contraction {
                simd: s,
                rows: o,
                cols,
            } => {
                // The narrowest input along the lanes (bf16: pairs).
                let lane = lane_input(k, s);
                match cols {
                    // A tensor contraction (ccsdt): one vector × 4 rows × 4
                    // columns (AVX-512; AVX2: 2 × 2), 16 accumulators over
                    // 4 broadcasts and 4 vector loads per step, whatever
                    // the SIMD dimension's extent (tensor extents are often
                    // one vector: 16 in the TCCG cases). On the 2-core AMD
                    // EPYC (Zen 5), ccsdt 16⁷ in a standalone program: 2.0
                    // ms against 5.1–5.9 with 6 rows along e × 4 vectors,
                    // and 9.1 against 19.5 ms with the SIMD dimension at 64
                    // (as a config entry; in a kernel whose only plan it is,
                    // 3.1–4.2 ms at 16⁷ then; see CHANGELOG.md, 2026-11-26).
                    Some(c) => {
                        let side = (acc / outputs).isqrt().clamp(1, 4);
                        reg[s] = lanes;
                        reg[o] = side;
                        reg[c] = side;
                    }
                    // A matrix product: mr = 6 rows × nr vectors, the
                    // widest nr whose accumulators, nr loaded vectors and
                    // one broadcast fit the register file (BLIS's kernels:
                    // AVX-512 6 × 4 zmm, 29 of 32 registers, three times
                    // the 4-cycle latency × 2 FMA ports; AVX2 6 × 2 ymm,
                    // Haswell's 6 × 16, 15 of 16). Fewer rows where even
                    // one vector leaves no room for 6 (SSE: 2 × 4 xmm).
                    // AVX2's 3 rows × 4 ymm needed 17 registers: matmul
                    // 1024³ on AVX2 ran 18.4 ms, 9.3 with 6 × 2 (OpenBLAS's
                    // Haswell kernel 9.3; the 2-core AMD EPYC, MDH_ISA=avx2).
                    None => {
                        let (regs, per) = (m.isa.vector_registers(), register_parts(m.isa));
                        let rows = |v: usize| {
                            (regs.saturating_sub(v * per + 1) / (v * per * outputs)).min(6)
                        };
                        let v = [4, 2, 1].into_iter().find(|&v| rows(v) == 6).unwrap_or(1);
                        reg[s] = v * lanes;
                        reg[o] = rows(v).max(1);
                    }
                }
                l1 = (0..d).map(|x| whole(l1[x], reg[x])).collect();
                l2 = l1.iter().map(|&t| t * 4).collect();
                if cols.is_none() {
                    // The panel as wide as AVX-512's register tile (four
                    // vectors of the plan's SIMD layer, 256 bytes a row:
                    // four lines), in whole register tiles; the rows' L1
                    // tile is 64 register tiles. A panel of AVX2's tile
                    // (64 bytes) read in place (few rows) touched one line
                    // per page along the reduction, a TLB miss per load:
                    // matmul 16×4096×4096 on the 2-core AMD EPYC (Zen 3)
                    // ran 30 ms against OpenBLAS's 6.6 (21-25 after this;
                    // 8.5-12 once B, 64 MiB, is packed: `read_in_place`).
                    // Of narrower inputs, as many lanes as make those 256
                    // bytes of the input's rows: bf16 16 × 4096 × 4096 on
                    // the 2-core AMD EPYC (Zen 4), B packed as pairs from
                    // memory, 3.3–3.6 ms with a panel of 64, 2.7–2.8 with
                    // 128 (1024³ alike: 4.9 ms).
                    let lane_bytes = lane.map_or(4, crate::plan::elem_bytes);
                    l1[s] = whole((4 * lanes).max(256 / lane_bytes), reg[s]);
                    l1[o] = 64 * reg[o];
                    l2[o] = l1[o];
                }
                // The packed kc × (SIMD dimension's L1 tile) panel of the
                // input the SIMD dimension indexes takes a quarter of the
                // L2, beside the rows' tile of the other input (512 on the
                // reference machine: 265–285 GFLOP/s at 1024³ on the 2-core
                // AVX-512 Xeon, OpenBLAS 286). On AVX-512, elements of
                // bf16 inputs count as they are packed in pairs (a CPU
                // without AVX-512 BF16 packs them widened: then half the
                // L2); elsewhere as widened.
                let pairs = m.isa == Isa::Avx512 && lane == Some(ScalarType::Bf16);
                let elem = if pairs { 2 } else { VECTOR_BYTES / lanes };
                let kc = pow2_within(l2_bytes / 4 / (l1[s] * elem), 64, 1024);
                l2[s] = 1024;
                for x in (0..d).filter(|&x| kinds[x] == DimKind::Pw) {
                    l1[x] = kc;
                    l2[x] = kc;
                }
                // The SIMD dimension's loops outermost: its packed panel
                // stays while the rows pass over it.
                order.retain(|&x| x != s);
                order.insert(0, s);
                // A tensor contraction's output is large (16⁶ floats in
                // ccsdt): streamed where it outgrows the caches.
                stream = cols.is_some() && a.outputs.iter().all(|o| o.static_coefs[s] == Some(1));
            }
            Class::ContiguousReduction { simd: s } => {
                // Four rows of the kept dimension outward share the other
                // inputs' loads (matvec's vector); as many vectors of
                // partial results as the accumulators then hold, up to
                // four, hide the combine's latency (AVX-512: 4 rows × 4
                // vectors). Rows come first: AVX2's six accumulator
                // vectors went to one row of four vectors (matvec 4096² on
                // the 2-core AMD EPYC (Zen 3): 2.55–2.72 ms; 4 rows × one
                // vector 1.69–1.84, OpenBLAS about 1.9–2.1).
                let outer = (0..d).rev().find(|&x| kinds[x] == DimKind::Cc);
                let rows = if outer.is_some() { 4 } else { 1 };
                reg[s] = vectors((acc / outputs / rows).clamp(1, 4)) * lanes;
                if let Some(o) = outer {
                    reg[o] = (acc * lanes / outputs / reg[s]).clamp(1, 4);
                }
                // Rows stream as runs of an eighth of the L2 (64 KiB on the
                // reference machine: matvec 4096² 0.71–1.40× OpenBLAS on the
                // 2-core Xeon, 256-long tiles 0.40–0.63×); other PW
                // dimensions and kept L1 tiles one register tile, kept L2
                // tiles 16, so the tile of the other inputs stays in L2.
                let run = (l2_bytes / 8).max(VECTOR_BYTES) * lanes / VECTOR_BYTES;
                l2 = vec![0; d];
                for x in 0..d {
                    if kinds[x] == DimKind::Pw {
                        l1[x] = if x == s { whole(run, reg[x]) } else { reg[x] };
                        l2[x] = l1[x];
                    } else {
                        l1[x] = reg[x];
                        l2[x] = 16 * reg[x];
                    }
                }
            }
            Class::Map { simd: s } => {
                // Register tiles of four rows × four vectors, L1 tiles of
                // one tile's rows × runs of four tiles (1 KiB of f32): each
                // input row is read as a long contiguous run, which the
                // prefetchers follow, and results fill whole lines, which
                // stream. On the 2-core AMD EPYC (Zen 5), jacobi3d 256³:
                // 4.9 ms against the former 36 rows × 64 points of 6 × 2
                // vectors' 6.8 ms (C/OpenMP 5.8), and with an output not
                // 64-byte aligned 13 against 37 ms (C 18).
                // A stencil (a buffer read through several accesses) takes
                // one row per tile: each row of a tile reads its own rows
                // of the neighbours, and the prefetchers follow only so
                // many streams at once. On the 2-core AMD EPYC (Zen 4),
                // jacobi3d 256³ in one process: 4 rows (14 input rows in
                // flight) 7.0 ms, 2 rows 4.9–7.5, one row 4.9–5.1 (86 % of
                // the streaming copy roof; the C/OpenMP loop, one row at a
                // time, 5.0–5.4); on Zen 5, 4 rows ran at 4.9 ms (C 5.8).
                let v = vectors(4);
                reg[s] = v * lanes;
                if let Some(o) = outer_kept(s) {
                    let stencil = (1..a.inputs.len())
                        .any(|j| a.inputs[..j].iter().any(|i| i.buffer == a.inputs[j].buffer));
                    reg[o] = if stencil {
                        1
                    } else {
                        (acc / v / outputs).clamp(1, 4)
                    };
                }
                // Dimensions outside the run and its rows (jacobi3d's
                // planes) take one point per tile, L1 and L2 alike: the
                // tiles then walk the rows of a plane in memory order, and
                // the prefetchers follow a few long streams. L1 tiles 64
                // planes deep (a row of each plane, then the next row)
                // started a stream at every plane: on the 2-core AMD EPYC
                // (Zen 3, AVX2) jacobi3d 256³ 9.1–9.6 ms against 6.6–7.2.
                l1 = reg.clone();
                l1[s] = whole(16 * lanes, reg[s]);
                // Three layers of the tile and its halo, for every input,
                // stay in the L1 (a stencil's neighbours outward): shorter
                // runs where they would not.
                let rows = outer_kept(s).map_or(1, |o| l1[o]);
                while l1[s] > reg[s] && 3 * (rows + 2) * (l1[s] + 2) * input_bytes(k) > l1d_bytes {
                    l1[s] -= reg[s];
                }
                l2 = l1.clone();
                l2[s] *= 4;
                if let Some(o) = outer_kept(s) {
                    l2[o] *= 4;
                }
                // Whole vectors of results at contiguous addresses: they
                // can stream where the output outgrows the caches.
                stream = a.outputs.iter().all(|o| o.static_coefs[s] == Some(1));
            }
            Class::KeptReduction { .. }
                if crate::codegen::cpu::lanes_apply(k) && kinds[d - 1] == DimKind::Pw =>
            {
                // One register-tile point of the kept dimensions, SIMD lanes
                // of partial results along the innermost PW dimension where
                // every input it indexes is contiguous along it (one vector
                // of the narrowest type, [`reduction_lanes`]), as a C
                // compiler vectorizes the loop; lanes over the kept
                // dimension cost mask conversions per lane, and more rows per
                // tile did not pay. On the 2-core AMD EPYC (Zen 5), prl 2^15
                // with `max`: 70 ms (16 PW lanes, its `i32` part widened once
                // per step: `V::cast`), a gcc-vectorized C loop 82–90 ms;
                // before widening casts kept their operand narrow, 94 ms
                // (16 PW lanes), 101 ms (a plain loop that LLVM vectorized
                // with 8 `i64` lanes), 135 ms (8 PW lanes), 240 ms (16 kept
                // lanes). Runs as long as the inputs only they index fill
                // the L1.
                let pw = d - 1;
                let contiguous = a
                    .inputs
                    .iter()
                    .all(|i| !i.uses.contains(&pw) || i.static_coefs[pw] == Some(1));
                if contiguous {
                    reg[pw] = reduction_lanes(k);
                }
                l1 = (0..d).map(|x| whole(l1[x], reg[x])).collect();
                if let Some((pw, t)) = pw_run(k, l1d_bytes) {
                    l1[pw] = whole(t, reg[pw]);
                }
                l2 = l1.iter().map(|&t| t * 4).collect();
            }
            Class::KeptReduction { simd: s } if crate::codegen::cpu::lanes_apply(k) => {
                reg[s] = vectors(2) * lanes;
                if let Some(o) = outer_kept(s) {
                    reg[o] = (acc * lanes / outputs / reg[s]).clamp(1, 6);
                }
                l1 = (0..d).map(|x| whole(l1[x], reg[x])).collect();
                // The innermost PW tile as long as its inputs (those that
                // do not depend on the kept dimensions) take a quarter of
                // the L1, so that each register tile's accumulators leave
                // the registers once per long run.
                if let Some((pw, t)) = pw_run(k, l1d_bytes / 4) {
                    l1[pw] = t;
                }
                l2 = l1.iter().map(|&t| t * 4).collect();
            }
            Class::KeptReduction { simd: s } => {
                // A user-defined combine (no identity to start lanes
                // from, prl's best match): scalar register tiles of one
                // vector's worth of rows, which stay in registers (LLVM
                // vectorizes them across the rows), over PW tiles whose
                // inputs fill the L1. On the 2-core AMD EPYC (Zen 5), prl
                // 2^15: rows 16 × 256 records 3.7 s, 8 × 256 0.9 s, 8 × 4096
                // 0.5 s (a C/OpenMP loop 0.43 s in the same hour).
                reg[s] = lanes;
                l1 = (0..d).map(|x| whole(l1[x], reg[x])).collect();
                if let Some((pw, t)) = pw_run(k, l1d_bytes) {
                    l1[pw] = t;
                }
                l2 = l1.iter().map(|&t| t * 4).collect();
            }
            Class::Scalar => {
                l2 = l1.iter().map(|&t| t * 4).collect();
            }
        }
        let contraction = matches!(class, Class::Contraction { .. });
        let simd = class.kept_simd();
        let pack = default_pack(k, simd, &reg, contraction);
        CpuPlan {
            nod: vec![0; d],
            cor: vec![0; d],
            l2,
            l1,
            reg,
            order,
            pack,
            stream,
            exact: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{self, compiled, example};
    use proptest::prelude::*;

    /// Every example family (examples/kernels/src).
    const FAMILIES: &[&str] = &[
        "bmatmul",
        "ccsdt",
        "conv2d",
        "dot",
        "genhisto",
        "histo",
        "jacobi1d",
        "jacobi2d",
        "jacobi3d",
        "mandelbrot",
        "map",
        "matmul",
        "matmul_t",
        "matvec",
        "mbbs",
        "mcc",
        "mcc_capsule",
        "prl",
        "reduce",
        "reduce2",
        "scan",
    ];

    fn family(name: &str) -> Checked {
        compiled(&example(name))
    }

    fn machine(isa: Isa, l1d: u64, l2: u64) -> Machine {
        Machine {
            isa,
            cores: 2,
            l1d: Some(l1d << 10),
            l2: Some(l2 << 10),
            l3: None,
        }
    }

    #[test]
    fn the_register_file_sets_the_accumulators() {
        // AVX-512: 32 zmm, 8 for operands; AVX2: 16 ymm, 4 for operands,
        // two per 64-byte vector of the plan.
        assert_eq!(accumulator_vectors(Isa::Avx512), 24);
        assert_eq!(accumulator_vectors(Isa::Avx2), 6);
        assert_eq!(accumulator_vectors(Isa::Baseline), 3);
    }

    #[test]
    fn each_family_has_its_class() {
        let class = |n: &str| Class::of(&family(n));
        assert_eq!(
            class("matmul"),
            Class::Contraction {
                simd: 1,
                rows: 0,
                cols: None
            }
        );
        assert!(matches!(class("mcc"), Class::Contraction { simd: 3, .. }));
        // C[a,b,c,d,e,f] = Σ_g A[g,d,a,b] · B[e,f,g,c]: rows along d (A
        // only), columns along e (B only, as the SIMD dimension f).
        assert_eq!(
            class("ccsdt"),
            Class::Contraction {
                simd: 5,
                rows: 3,
                cols: Some(4)
            }
        );
        assert_eq!(class("matvec"), Class::ContiguousReduction { simd: 1 });
        assert_eq!(class("dot"), Class::ContiguousReduction { simd: 0 });
        assert_eq!(class("jacobi3d"), Class::Map { simd: 2 });
        assert_eq!(class("map"), Class::Map { simd: 0 });
        assert_eq!(class("prl"), Class::KeptReduction { simd: 0 });
    }

    #[test]
    fn contractions_block_as_blis_does() {
        let k = fixtures::matmul();
        // The reference machine: 6 rows × 4 vectors (24 accumulators), the
        // packed 512 × 64 panel of B takes a quarter of the 512 KiB L2.
        let p = CpuPlan::default_for(&k);
        assert_eq!(p.reg, vec![6, 64, 1]);
        assert_eq!((p.l1[2], p.l2[2]), (512, 512));
        assert_eq!((p.l1[1], p.l1[0]), (64, 384));
        assert_eq!(p.order, vec![1, 0, 2]);
        assert_eq!(p.pack, vec![vec![], vec![2, 1]]);
        // Twice the L2: a panel twice as deep.
        let p = CpuPlan::default_for_machine(&k, &machine(Isa::Avx512, 48, 1024));
        assert_eq!(p.l1[2], 1024);
        // AVX2's 16 registers: one vector (two ymm) of six rows; the panel
        // four such tiles wide, as AVX-512's, so 512 deep.
        let p = CpuPlan::default_for_machine(&k, &machine(Isa::Avx2, 32, 512));
        assert_eq!(p.reg, vec![6, 16, 1]);
        assert_eq!((p.l1[1], p.l1[2]), (64, 512));
        // SSE's 16 registers: one vector (four xmm) of two rows.
        let p = CpuPlan::default_for_machine(&k, &machine(Isa::Baseline, 32, 512));
        assert_eq!(p.reg, vec![2, 16, 1]);
        // bf16 inputs: a panel of 128 lanes (256 bytes of B's rows), as
        // deep as f32's (its pairs take as many bytes).
        let p = CpuPlan::default_for(&family("matmul_bf16"));
        assert_eq!((p.reg[1], p.l1[1], p.l1[2]), (64, 128, 512));
        // AVX2 packs them widened: half as deep.
        let m = machine(Isa::Avx2, 32, 512);
        let p = CpuPlan::default_for_machine(&family("matmul_bf16"), &m);
        assert_eq!((p.l1[1], p.l1[2]), (128, 256));
    }

    #[test]
    fn products_of_few_rows_read_b_in_place() {
        let k = fixtures::matmul();
        let plans = CpuPlan::few_rows_for(&k);
        let rows: Vec<(usize, usize, usize)> =
            plans.iter().map(|(_, r)| (r.param, r.min, r.max)).collect();
        // `I`, the first size parameter, is the rows' extent.
        assert_eq!(k.size_params[0], "I");
        assert_eq!(rows, [(0, 1, 1), (0, 3, 3), (0, 2, 5)]);
        assert!(plans
            .iter()
            .all(|(p, _)| !crate::codegen::cpu::runs_pairs(&k, p)));
        let (one, three, four) = (&plans[0].0, &plans[1].0, &plans[2].0);
        assert_eq!(
            (one.reg.clone(), four.reg.clone()),
            (vec![1, 128, 1], vec![4, 64, 1])
        );
        // Three rows in a register tile of their own: a tile of 4 rows cut
        // to 3 ran as two tiles of row pairs (B read twice).
        assert_eq!(three.reg, vec![3, 64, 1]);
        assert_eq!((three.l1[0], three.l2[0]), (3, 3));
        assert_eq!(
            (one.l1[0], one.l1[1], one.l2[1], one.l1[2]),
            (1, 128, 1024, 512)
        );
        // All five rows in one L1 tile: B's tile read from memory once.
        assert_eq!((four.l1[0], four.l2[0], four.l2[1]), (8, 8, 1024));
        for (p, rows) in &plans {
            assert_eq!(p.pack, vec![Vec::<usize>::new(); 2]);
            assert_eq!(p.cor, vec![0, 4, 0]);
            // 8, 12 and 16 zmm of accumulators; on AVX2 narrowed to 8, 12
            // (a row's 4) and 8 ymm.
            let avx2 = p.narrowed(&k, Isa::Avx2).expect("narrowed to AVX2");
            let ymm = if rows.min == 3 { 12 } else { 8 };
            assert_eq!(avx2.accumulator_bytes(&k), ymm * 32, "{rows:?}");
        }
        // Other classes, tensor contractions, and rows whose extent is not
        // a size parameter have none.
        for other in ["matvec", "ccsdt", "jacobi3d", "prl"] {
            assert!(CpuPlan::few_rows_for(&family(other)).is_empty(), "{other}");
        }
        let rows_of_a_sum = crate::fixtures::compiled(
            "kernel mm2 { inp(A: f32[N + 1, K], B: f32[K, J]), out(C: f32[N + 1, J]), \
             out_view(C: |i, j, k| (i, j)), md_hom[N + 1, J, K](|a, b| a * b, (CC, CC, PW(+))), \
             inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)) }",
        );
        assert!(CpuPlan::few_rows_for(&rows_of_a_sum).is_empty());
    }

    #[test]
    fn contiguous_reductions_stream_runs_of_an_eighth_of_the_l2() {
        let k = fixtures::matvec();
        let p = CpuPlan::default_for(&k);
        // 4 vectors of partial results, 4 rows; 64 KiB runs of 16 384 f32.
        assert_eq!(p.reg, vec![4, 64]);
        assert_eq!((p.l1[1], p.l1[0], p.l2[0]), (16384, 4, 64));
        let p = CpuPlan::default_for_machine(&k, &machine(Isa::Avx512, 48, 2048));
        assert_eq!(p.l1[1], 65536);
        assert!(!p.stream);
    }

    #[test]
    fn stencils_fit_three_layers_in_l1_and_stream() {
        let k = family("jacobi3d");
        let p = CpuPlan::default_for(&k);
        // One row × 4 vectors (a stencil); runs of four tiles: three
        // layers of 3 × 258 f32 take 9.3 of the 32 KiB L1. One plane per
        // tile: the tiles walk a plane's rows in memory order.
        assert_eq!(p.reg, vec![1, 1, 64]);
        assert_eq!(p.l1, vec![1, 1, 256]);
        assert_eq!(p.l2, vec![1, 4, 1024]);
        assert!(p.stream);
        // A map that is no stencil takes 4 rows.
        let add = crate::compile(quote::quote! {
            kernel add {
                inp(x: f32[N, M], y: f32[N, M]),
                out(z: f32[N, M]),
                out_view(z: |i, j| (i, j)),
                md_hom[N, M](|a, b| a + b, (CC, CC)),
                inp_view(x: |i, j| (i, j), y: |i, j| (i, j)),
            }
        });
        assert_eq!(CpuPlan::default_for(&add.unwrap()).reg, vec![4, 64]);
        // AVX2: the register file holds one row of 4 × 16 lanes.
        let p = CpuPlan::default_for_machine(&k, &machine(Isa::Avx2, 32, 512));
        assert_eq!(
            (p.reg.clone(), p.l1.clone(), p.l2.clone()),
            (vec![1, 1, 64], vec![1, 1, 256], vec![1, 4, 1024])
        );
        // A small L1 shortens the runs until three layers fit.
        let p = CpuPlan::default_for_machine(&k, &machine(Isa::Avx512, 8, 512));
        assert_eq!(p.l1[2], 192);
        assert_eq!(p.validate(&k), Ok(()));
        // Maps stream too; matvec's results (a PW dimension) do not.
        assert!(CpuPlan::default_for(&family("map")).stream);
    }

    #[test]
    fn kept_reductions_vectorize_the_kept_dimension() {
        // prl's closure is a max (`Checked::cpu_op`), and its innermost
        // dimension is PW: one point of the kept dimension per register
        // tile, 16 lanes of partial results along the PW one (its inputs
        // are i32), 12 bytes of the second set per record fill the 32 KiB
        // L1 with 2048 records.
        let prl = example("prl");
        for src in [prl.clone(), prl.replace(CLOSURE, "PW(max)")] {
            let k = compiled(&src);
            assert!(crate::codegen::cpu::lanes_apply(&k));
            let p = CpuPlan::default_for(&k);
            assert_eq!((p.reg.clone(), p.l1.clone()), (vec![1, 16], vec![64, 2048]));
            assert!(!p.stream);
            assert_eq!(p.validate(&k), Ok(()));
        }
        // A closure that is no built-in: scalar rows, one vector's worth
        // (eight i64 results), over the same runs.
        let other = prl.replace(CLOSURE, "PW(|a, b| if a > b { a } else { b + 0 })");
        let p = CpuPlan::default_for(&compiled(&other));
        assert_eq!((p.reg, p.l1), (vec![8, 1], vec![64, 2048]));
        // The kept dimension innermost (the same kernel with its
        // dimensions swapped): two vectors of lanes over it, PW tiles in a
        // quarter of the L1.
        let swapped = prl
            .replace(CLOSURE, "PW(max)")
            .replace("md_hom[I, J]", "md_hom[J, I]")
            .replace("(CC, PW(max))", "(PW(max), CC)")
            .replace("|i, j|", "|j, i|")
            .replace("|[i, j]", "|[j, i]");
        let k = compiled(&swapped);
        let p = CpuPlan::default_for(&k);
        assert_eq!(p.reg, vec![1, 16]);
        assert_eq!(p.l1, vec![512, 64]);
        assert_eq!(p.validate(&k), Ok(()));
    }

    /// prl's user-defined combine operator.
    const CLOSURE: &str = "PW(|a, b| if a > b { a } else { b })";

    fn any_machine() -> impl Strategy<Value = Machine> {
        (
            prop::sample::select(Isa::ALL.to_vec()),
            1usize..=256,
            prop::option::of(4u64..=20),
            prop::option::of(16u64..=28),
        )
            .prop_map(|(isa, cores, l1, l2)| Machine {
                isa,
                cores,
                l1d: l1.map(|b| 1 << b),
                l2: l2.map(|b| 1 << b),
                l3: None,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// For every family (also in f64) and any machine, the default is a
        /// valid plan whose register tile fits the accumulators of the
        /// machine's register file (at least one vector per output) and
        /// whose L1 tiles hold whole register tiles. (That it runs and agrees with
        /// the interpreter at random sizes: examples/tests/properties.rs,
        /// `default_matmul_matches`, `default_ccsdt_matches`, and every
        /// family whose config has no `*` entry: its entries name other CPUs.)
        #[test]
        fn the_default_is_valid_on_any_machine(
            f in prop::sample::select(FAMILIES.to_vec()),
            f64s in any::<bool>(),
            m in any_machine(),
        ) {
            let src = example(f);
            let k = compiled(&if f64s { fixtures::in_f64(&src) } else { src });
            let p = CpuPlan::default_for_machine(&k, &m);
            prop_assert_eq!(p.validate(&k), Ok(()));
            let lanes = crate::plan::simd_lanes(&k);
            let outputs = k.analysis().outputs.len().max(1);
            let vectors = p.reg_elements().div_ceil(lanes) * outputs;
            let acc = accumulator_vectors(m.isa);
            prop_assert!(vectors <= acc.max(outputs), "{f}: {:?} on {}", p.reg, m.describe());
            for x in 0..p.reg.len() {
                prop_assert!(p.l1[x].is_multiple_of(p.reg[x]) || p.l1[x] < p.reg[x], "{f}: l1 {:?} reg {:?}", p.l1, p.reg);
            }
        }
    }
}
