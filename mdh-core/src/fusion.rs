//! Which stages of a kernel of stages fuse: the epilogues, derived once
//! here and read by the generators.
//!
//! An *epilogue* is a stage that maps an earlier stage's intermediate point
//! by point: every dimension CC, the intermediate read at the same point
//! (the identity index function over its extents), written at the same
//! point into a buffer of the intermediate's type and shape. Its scalar
//! function then runs where the producing stage stores its final value,
//! and the intermediate never exists (CUTLASS's epilogues, burn's fused
//! element-wise tails). Stages that share their rows fuse along them
//! ([`rows`]). See the guide's chapter 11 for what fuses and why.

use crate::analysis::Checked;
use crate::check::stages::distinct_lone_dims;
use crate::spec::{BufRef, DimKind, IndexFn, SizeExpr, Staged};

pub mod rows;

pub use rows::{GroupBuffer, Named, RowGroup, Rows};

/// What fuses in a kernel of stages on the CPU: its epilogues, and its
/// stages fused along their rows ([`rows`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fusion {
    pub epilogues: Vec<Epilogue>,
    pub rows: Vec<RowGroup>,
}

impl Fusion {
    pub fn of(k: &Staged<Checked>) -> Fusion {
        let epilogues = epilogues(k);
        let rows = rows::row_groups(k, &epilogues);
        Fusion { epilogues, rows }
    }
}

/// An epilogue stage and the stage whose store it runs in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Epilogue {
    /// The producing stage (its position among the stages).
    pub producer: usize,
    /// The epilogue stage (after `producer`).
    pub stage: usize,
    /// The intermediate the producer writes and the epilogue reads (a
    /// `tmp`), which fusion leaves out.
    pub tmp: usize,
    /// The producer's output access that writes the intermediate.
    pub output: usize,
    /// The epilogue's input access that reads the intermediate (one of
    /// its scalar function's parameters).
    pub input: usize,
    /// Per dimension of the epilogue, the producer's dimension at the same
    /// point (a kept dimension).
    pub dims: Vec<usize>,
}

/// The epilogues of `k`, in stage order: at most one per producer, and a
/// stage that is an epilogue produces none (its own epilogue, if any,
/// runs as a stage of its own after it).
pub fn epilogues(k: &Staged<Checked>) -> Vec<Epilogue> {
    let mut found: Vec<Epilogue> = Vec::new();
    for s in 0..k.stages.len() {
        if let Some(e) = epilogue(k, s) {
            let taken = found
                .iter()
                .any(|f| f.producer == e.producer || f.stage == e.producer);
            if !taken {
                found.push(e);
            }
        }
    }
    found
}

/// Stage `s` as an epilogue, if it is one (see the module documentation).
fn epilogue(k: &Staged<Checked>, s: usize) -> Option<Epilogue> {
    let stage = &k.stages[s];
    let ek = &stage.kernel;
    let ea = ek.analysis();
    if ea.kinds.iter().any(|&d| d != DimKind::Cc) {
        return None;
    }
    // One output, written at the same point.
    let [(out_buf, out_fn)] = ek.output_accesses()[..] else {
        return None;
    };
    if !identity(out_fn, ea.kinds.len()) {
        return None;
    }
    // One intermediate read at the same point, read by no other stage.
    let mut tmp = None;
    for (j, (b, f)) in ek.input_accesses().into_iter().enumerate() {
        if let BufRef::Tmp(t) = stage.reads[b] {
            let only_reader = (k.stages.iter().enumerate())
                .all(|(r, other)| r == s || !other.reads.contains(&BufRef::Tmp(t)));
            let once = ek.input_accesses().iter().filter(|(c, _)| *c == b).count() == 1;
            if tmp.is_none() && only_reader && once && identity(f, ea.kinds.len()) {
                tmp = Some((t, j));
            }
        }
    }
    let (t, input) = tmp?;
    let (producer_stage, out_pos) = k.writer(BufRef::Tmp(t))?;
    let producer = k
        .stages
        .iter()
        .position(|p| std::ptr::eq(p, producer_stage))?;
    let pk = &producer_stage.kernel;
    let pa = pk.analysis();
    // The producer reduces (a map of a map is item 3 of issue 39, stages
    // fused along kept dimensions), and writes the intermediate once, each
    // component one kept dimension.
    if pa.reduced.is_empty() {
        return None;
    }
    let writes: Vec<(usize, &IndexFn)> = (pk.output_accesses().into_iter().enumerate())
        .filter(|(_, (b, _))| *b == out_pos)
        .map(|(o, (_, f))| (o, f))
        .collect();
    let [(output, pfn)] = writes[..] else {
        return None;
    };
    let dims = distinct_lone_dims(pfn)?;
    if dims.len() != ea.kinds.len() || !dims.iter().all(|d| pa.kept.contains(d)) {
        return None;
    }
    // The output has the intermediate's type and shape, so the producer's
    // store writes it as it would the intermediate.
    let (tmp_decl, out_decl) = (&k.tmps[t], k.decl(stage.writes[out_buf]));
    let same_shape = tmp_decl.shape.len() == out_decl.shape.len()
        && (tmp_decl.shape.iter().zip(&out_decl.shape)).all(|(a, b)| SizeExpr::same_as(a, b));
    if tmp_decl.ty != out_decl.ty || !same_shape {
        return None;
    }
    // Everything else it reads is ready when the producer runs.
    let ready = stage.reads.iter().all(|&b| match b {
        BufRef::Input(_) => true,
        b if b == BufRef::Tmp(t) => true,
        b => k.writer(b).is_some_and(|(w, _)| {
            k.stages.iter().position(|p| std::ptr::eq(p, w)) < Some(producer)
        }),
    });
    (producer < s && ready).then_some(Epilogue {
        producer,
        stage: s,
        tmp: t,
        output,
        input,
        dims,
    })
}

/// Whether the GPU kernels of `producer` (a producer of an epilogue) run
/// the epilogue in their stores: where it has no PS dimension. Its scans
/// run after its stores, on what they stored (a fused epilogue's result
/// there would be scanned), so its epilogue runs as a stage of its own.
pub fn fuses_on_gpu(producer: &Checked) -> bool {
    !producer.analysis().kinds.contains(&DimKind::Ps)
}

/// Whether `f` is `|i0, …, iR-1| (i0, …, iR-1)` over `rank` dimensions.
fn identity(f: &IndexFn, rank: usize) -> bool {
    f.components.len() == rank
        && f.components.iter().enumerate().all(|(m, c)| {
            c.constant == 0
                && c.sizes.iter().all(|&x| x == 0)
                && (c.dims.iter().enumerate()).all(|(d, &x)| x == i64::from(d == m))
        })
}

#[cfg(test)]
mod tests;
