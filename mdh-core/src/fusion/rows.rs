//! Stages fused along their rows: consecutive stages that keep the same
//! outermost dimension and read and write their buffers row by row (the
//! three stages of softmax, of layer norm, an attention head's) run tile
//! by tile of rows, every stage on one tile before the next tile, so a
//! tile's rows stay in cache from the first stage to the last and the
//! intermediates that only the tile's stages use exist for one tile.
//!
//! A tile of rows `lo..hi` of such a stage is the same stage over
//! `hi - lo` rows on the buffers' rows `lo..hi`: each buffer it reads or
//! writes is either *sliced* (its shape's first extent is the rows' size,
//! no other extent mentions it, and every access reads it at the row,
//! `(i, …)`, with the row nowhere else) or *whole* (neither its shape nor
//! any access mentions the rows), and the scalar function does not read
//! the rows' size or the index. So the tile runs the stage's own `cpu` on
//! sub-slices with the rows' size set to the tile's: no new code per
//! stage, and each stage keeps its plans.

use std::ops::Range;

use crate::analysis::Checked;
use crate::fusion::Epilogue;
use crate::spec::{
    Affine, BufRef, BufferDecl, DimKind, ExprKind, IndexFn, ReduceOp, SizeExpr, Staged,
};

/// How each tile of a row group sees a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    /// The tile's rows of it.
    Sliced,
    /// All of it (it does not depend on the rows).
    Whole,
}

/// A buffer of a row group, how a tile sees it, and where the group first
/// names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupBuffer {
    pub buf: BufRef,
    pub rows: Rows,
    /// The first of the group's stages that reads or writes it, and its
    /// position among that stage's reads (`output: false`) or writes: the
    /// stage whose sizes give its length.
    pub named: Named,
}

/// A buffer's position among one stage's reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Named {
    pub stage: usize,
    pub output: bool,
    pub at: usize,
}

/// Consecutive stages fused along their rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowGroup {
    /// The stages' positions (at least two).
    pub stages: Range<usize>,
    /// The size parameter of the rows (a position in the kernel of stages'
    /// `size_params`): every stage's outermost, `CC`, dimension.
    pub rows: usize,
    /// Every buffer the stages read or write, once, in the order the
    /// stages first name them, with how a tile sees it.
    pub buffers: Vec<GroupBuffer>,
    /// The intermediates no stage outside the group reads or writes: each
    /// tile has its own rows of them, never the whole.
    pub local: Vec<usize>,
}

impl RowGroup {
    /// Whether one of the group's stages writes `b`.
    pub fn writes(&self, k: &Staged<Checked>, b: BufRef) -> bool {
        self.stages.clone().any(|s| k.stages[s].writes.contains(&b))
    }
}

/// The row groups of `k`, in stage order. A stage whose epilogue fuses
/// into its stores, or that is one (`epilogues`), stays out: the epilogue
/// fusion keeps a product's tiles whole, which rows would cut.
pub fn row_groups(k: &Staged<Checked>, epilogues: &[Epilogue]) -> Vec<RowGroup> {
    let in_epilogue = |s: usize| epilogues.iter().any(|e| e.producer == s || e.stage == s);
    let mut groups: Vec<RowGroup> = Vec::new();
    let mut open: Option<RowGroup> = None;
    for s in 0..k.stages.len() {
        let fit = if in_epilogue(s) {
            None
        } else {
            stage_rows(k, s)
        };
        let joined = match (&mut open, &fit) {
            (Some(g), Some((rows, bufs))) if *rows == g.rows => join(k, g, s, bufs),
            _ => false,
        };
        if !joined {
            groups.extend(open.take().filter(|g| g.stages.len() > 1));
            open = fit.map(|(rows, buffers)| RowGroup {
                stages: s..s + 1,
                rows,
                buffers,
                local: Vec::new(),
            });
        }
    }
    groups.extend(open.filter(|g| g.stages.len() > 1));
    for g in &mut groups {
        g.local = (0..k.tmps.len())
            .filter(|&t| {
                let b = BufRef::Tmp(t);
                let touches =
                    |s: &crate::spec::Stage<Checked>| s.reads.contains(&b) || s.writes.contains(&b);
                g.buffers.iter().any(|x| x.buf == b)
                    && (k.stages.iter().enumerate())
                        .all(|(i, s)| g.stages.contains(&i) || !touches(s))
            })
            .collect();
    }
    groups
}

/// Adds stage `s` (its buffers `bufs`) to `g` if it reads, at its rows, a
/// buffer the group already has at its rows (otherwise fusing it saves no
/// traffic), every buffer both see is seen alike, and no buffer the
/// grown group writes is whole.
fn join(k: &Staged<Checked>, g: &mut RowGroup, s: usize, bufs: &[GroupBuffer]) -> bool {
    let known = |b: BufRef| g.buffers.iter().find(|x| x.buf == b).map(|x| x.rows);
    let sliced = |b: BufRef| bufs.iter().any(|x| x.buf == b && x.rows == Rows::Sliced);
    let shares = k.stages[s]
        .reads
        .iter()
        .any(|&b| known(b) == Some(Rows::Sliced) && sliced(b));
    let alike = bufs
        .iter()
        .all(|x| known(x.buf).is_none_or(|r| r == x.rows));
    let written_whole = (g.buffers.iter())
        .any(|x| x.rows == Rows::Whole && k.stages[s].writes.contains(&x.buf))
        || bufs
            .iter()
            .any(|x| x.rows == Rows::Whole && g.writes(k, x.buf));
    if !(shares && alike) || written_whole {
        return false;
    }
    let new: Vec<GroupBuffer> = (bufs.iter().copied())
        .filter(|x| known(x.buf).is_none())
        .collect();
    g.stages.end = s + 1;
    g.buffers.extend(new);
    true
}

/// Stage `s` as a stage of a row group: its rows' size parameter and how
/// it sees each buffer it reads or writes (see the module documentation),
/// or `None`.
fn stage_rows(k: &Staged<Checked>, s: usize) -> Option<(usize, Vec<GroupBuffer>)> {
    let stage = &k.stages[s];
    let kernel = &stage.kernel;
    if kernel.analysis().kinds.first() != Some(&DimKind::Cc) {
        return None;
    }
    let SizeExpr::Param(name) = &kernel.dims[0].size else {
        return None;
    };
    let rows = k.size_params.iter().position(|p| p == name)?;
    let size = kernel.size_index(&name.to_string())?;
    let names_rows = |e: &crate::spec::Expr| matches!(&e.kind, ExprKind::Var(v) if v == name);
    let closures = kernel.ops.iter().flat_map(|op| match op {
        crate::spec::CombineOp::Pw(ops, _) | crate::spec::CombineOp::Ps(ops, _) => ops.as_slice(),
        crate::spec::CombineOp::Cc(_) => &[],
    });
    let reads_rows = kernel.scalar_fn.index_params.is_some()
        || kernel.scalar_fn.body.any(&names_rows)
        || closures
            .filter_map(|op| match op {
                ReduceOp::Closure(c) => Some(&c.body),
                ReduceOp::Builtin(..) => None,
            })
            .any(|body| body.any(&names_rows));
    if reads_rows || kernel.dims[1..].iter().any(|d| mentions(&d.size, name)) {
        return None;
    }
    let mut bufs: Vec<GroupBuffer> = Vec::new();
    let named = |output: bool, at: usize| Named {
        stage: s,
        output,
        at,
    };
    let accesses = (kernel.input_accesses().into_iter())
        .map(|(b, f)| (stage.reads[b], &kernel.inputs[b], f, named(false, b)))
        .chain(
            (kernel.output_accesses().into_iter())
                .map(|(b, f)| (stage.writes[b], &kernel.outputs[b], f, named(true, b))),
        );
    let reduced = &kernel.analysis().reduced;
    for (b, decl, f, named) in accesses {
        let r = access_rows(decl, f, name, size)?;
        // A product's other operand (read whole along a reduced dimension):
        // every tile would read, and pack, all of it again.
        let along_reduced = (f.components.iter()).any(|c| reduced.iter().any(|&d| c.dims[d] != 0));
        if r == Rows::Whole && along_reduced {
            return None;
        }
        match bufs.iter().find(|x| x.buf == b) {
            Some(x) if x.rows != r => return None,
            Some(_) => {}
            None => bufs.push(GroupBuffer {
                buf: b,
                rows: r,
                named,
            }),
        }
    }
    let writes_whole =
        (bufs.iter()).any(|x| x.rows == Rows::Whole && stage.writes.contains(&x.buf));
    (!writes_whole).then_some((rows, bufs))
}

/// How a tile sees the buffer `decl` through the access `f`, where the
/// rows are dimension 0 and the size parameter `name` (the stage's size
/// parameter `size`).
fn access_rows(
    decl: &BufferDecl,
    f: &IndexFn,
    name: &proc_macro2::Ident,
    size: usize,
) -> Option<Rows> {
    let uses_rows = |c: &Affine| c.dims[0] != 0 || c.sizes.get(size).is_some_and(|&x| x != 0);
    let tail_free = decl.shape.iter().skip(1).all(|e| !mentions(e, name))
        && f.components.iter().skip(1).all(|c| !uses_rows(c));
    let at_row = |c: &Affine| {
        c.constant == 0
            && c.sizes.iter().all(|&x| x == 0)
            && (c.dims.iter().enumerate()).all(|(d, &x)| x == i64::from(d == 0))
    };
    let first_is_rows = matches!(decl.shape.first(), Some(SizeExpr::Param(p)) if p == name);
    if tail_free
        && !decl.shape.first().is_some_and(|e| mentions(e, name))
        && f.components.first().is_none_or(|c| !uses_rows(c))
    {
        Some(Rows::Whole)
    } else if tail_free && first_is_rows && f.components.first().is_some_and(at_row) {
        Some(Rows::Sliced)
    } else {
        None
    }
}

/// Whether the size expression `e` mentions the size parameter `name`.
fn mentions(e: &SizeExpr, name: &proc_macro2::Ident) -> bool {
    match e {
        SizeExpr::Const(..) => false,
        SizeExpr::Param(p) => p == name,
        SizeExpr::Add(a, b) | SizeExpr::Sub(a, b) | SizeExpr::Mul(a, b) => {
            mentions(a, name) || mentions(b, name)
        }
    }
}
