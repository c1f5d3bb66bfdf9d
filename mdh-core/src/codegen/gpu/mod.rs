//! The C-like kernel emitter shared by the OpenCL and CUDA back ends.
//!
//! It emits a source *template*: every size, every count of the plan and
//! every offset is a preprocessor name (`N0`, `W1`, `IN0_0_BASE`, …) that
//! [`crate::gpu_plan::defines`] defines for one call, so one template serves
//! every size and every plan (the tuner varies plans by definitions alone),
//! and the device compiler sees constants.
//!
//! The template holds up to three kinds of kernels (all launched as 1-D
//! ranges; work-group coordinates per md_hom dimension are decoded from the
//! linear id, last dimension fastest; work-item coordinates with the kept
//! dimensions outer and the PW dimensions inner, so that the work-items
//! that combine one result are consecutive):
//! - `mdh_main`: each work-group walks its block of the index space in LM
//!   tiles (kept dimensions outside, PW dimensions inside), optionally
//!   copying the tiles of inputs into local memory first; each work-item
//!   computes its PM tile of points, keeps partial results of PW dimensions
//!   in private memory, combines them across the work-items of its group
//!   (CUDA: by warp shuffles within runs of up to 32 lanes, the paper's WRP
//!   layer, then) by a tree in local memory, and writes the result through
//!   the output view
//!   (or, when PW dimensions are split across work-groups, into a buffer of
//!   partial results per work-group). PS dimensions are computed here like
//!   CC dimensions.
//! - `mdh_combine`: the second pass over the partial results of work-groups.
//! - `mdh_scan{d}`, `mdh_scan{d}_carry`, `mdh_scan{d}_add`: for each PS
//!   dimension `d`, an inclusive scan in place along `d` (chunks of a line
//!   scanned by work-groups in local memory, then the carries of the chunks
//!   scanned and added).
//!
//! The prelude defines `MDH_MIN`, the defaults of the plan's names, and the
//! integer division helpers the kernels call: in generated C, `x / 0` and
//! `x % 0` are 0, `MIN / -1` is `MIN` and `MIN % -1` is 0 (see
//! [`crate::codegen::c_expr`]), where C leaves all four undefined.
//!
//! The dialects differ only in [`Dialect`]'s methods and `Words`: the
//! words of kernel heads, address spaces, barriers and ids, CUDA's
//! `__launch_bounds__(WG_ITEMS)` (registers budgeted for the block size)
//! and its warp shuffles.

use std::cell::RefCell;
use std::fmt::Write;

mod epilogue;
mod local;
mod mma;
mod reduce;
mod scan;
mod stages;
mod words;

use crate::analysis::Checked;
use crate::codegen::c_expr::{
    float_cast_helpers, from_storage, half_helpers, identity, int_div_helpers, to_storage, Dialect,
    Lowering,
};
use crate::fusion::Epilogue;
use crate::spec::{DimKind, ReduceOp, ScalarType, Type};
use mdh_rt::names::{
    self, BLOCKED, DYN_SHARED, IDX, KEPT_POINTS, LANES, MMA, PW_GROUPS, PW_ITEMS, STAGES, WG_ITEMS,
};
use words::{words, Words};

pub use mdh_rt::gpu_plan::{PASS_ITEMS, SCAN_CHUNK};

/// What the emitter needs to know about one kernel.
struct Emit<'k> {
    k: &'k Checked,
    d: Dialect,
    w: Words,
    dims: usize,
    kinds: Vec<DimKind>,
    kept: Vec<usize>,
    pw: Vec<usize>,
    /// Per output access: (buffer, access of that buffer, value type).
    outs: Vec<(usize, usize, ScalarType)>,
    /// Per input access: (buffer, access of that buffer).
    ins: Vec<(usize, usize)>,
    ops: Vec<Option<&'k ReduceOp>>,
    /// The integer types whose division helpers the kernels emitted so far
    /// call (the prelude, emitted last, defines them).
    int_divs: RefCell<Vec<ScalarType>>,
    /// The float to integer casts whose helpers they call (CUDA).
    float_casts: RefCell<Vec<(ScalarType, ScalarType)>>,
    /// A fused epilogue (its stage's kernel and the fact), applied where
    /// the kernels store final results ([`epilogue`]).
    epilogue: Option<(&'k Checked, &'k Epilogue)>,
}

/// Opens the loop over the LM tiles `[t{x}, e{x})` of this work-group's
/// block along dimension `x`. The trip count is the same in every
/// work-group (the block extent `B{x}` they all share, not the group's
/// possibly shorter `bhi{x} - blo{x}`): the loop body holds barriers, which
/// every work-item of a group must reach under the same control flow, and a
/// trip count that depends on the group id is not that (PoCL turned a
/// one-trip loop into a branch on the group id and dropped results). Tiles
/// past the group's block are empty (`e{x} <= t{x}`): they compute and
/// copy nothing but still reach the barriers.
fn tile_loop(l: &mut Lowering, x: usize) {
    let (block, tile) = (names::block(x), names::tile(x));
    l.line(&format!(
        "for ({IDX} tt{x} = 0; tt{x} < {block}; tt{x} += {tile}) {{"
    ));
    l.line(&format!("const {IDX} t{x} = blo{x} + tt{x};"));
    l.line(&format!(
        "const {IDX} e{x} = MDH_MIN(t{x} + {tile}, bhi{x});"
    ));
}

/// Opens the loop over this work-item's indices of the current tile along
/// dimension `x` (its PM tile).
fn private_loop(l: &mut Lowering, x: usize) {
    let private = names::private(x);
    l.line(&format!(
        "for ({IDX} p{x} = 0; p{x} < {private}; p{x}++) {{"
    ));
}

/// The index along dimension `x` of a work-item's point `p{x}` of the tile:
/// in its warp's part of the tile (`wp{x}`: the warp layer's contiguous
/// sub-tiles, 0 without one), consecutive per lane (`wl{x}`) when blocked,
/// strided by the lanes else, in runs of `VG{x}` consecutive indices (1,
/// or the width of the vectors that fragments load along `x`: a run is one
/// vector).
fn item_index(x: usize) -> String {
    let (lanes, private, run) = (names::lanes(x), names::private(x), names::vector_group(x));
    format!(
        "t{x} + wp{x} * {private} * {lanes} + ({BLOCKED} ? wl{x} * {private} + p{x} : ((p{x} / {run}) * {lanes} + wl{x}) * {run} + p{x} % {run})"
    )
}

/// Binds the kernel params `params` (`arg_{name}`, as every kernel takes
/// them) for scalar functions and operators.
fn bind_params(l: &mut Lowering, params: &[crate::spec::ParamDecl]) {
    for prm in params {
        let v = if prm.ty == ScalarType::Bool {
            format!("(arg_{} != 0)", prm.name)
        } else {
            from_storage(prm.ty, &format!("arg_{}", prm.name))
        };
        l.bind(&prm.name.to_string(), &v);
    }
}

/// Per access (in the kernel's order of accesses): its buffer and its
/// position among that buffer's accesses.
fn per_buffer(accs: Vec<(usize, &crate::spec::IndexFn)>) -> Vec<(usize, usize)> {
    let mut seen = std::collections::HashMap::new();
    accs.into_iter()
        .map(|(b, _)| {
            let a = seen.entry(b).or_insert(0usize);
            *a += 1;
            (b, *a - 1)
        })
        .collect()
}

impl<'k> Emit<'k> {
    fn new(k: &'k Checked, d: Dialect) -> Self {
        let dims = k.dims.len();
        let kinds = k.analysis().kinds.clone();
        let ins = per_buffer(k.input_accesses());
        let outs = per_buffer(k.output_accesses())
            .into_iter()
            .map(|(b, a)| (b, a, k.outputs[b].ty))
            .collect();
        let n_out = k.analysis().outputs.len();
        Emit {
            k,
            d,
            w: words(d),
            dims,
            kept: k.analysis().kept.clone(),
            pw: (0..dims).filter(|&x| kinds[x] == DimKind::Pw).collect(),
            kinds,
            outs,
            ins,
            ops: (0..n_out).map(|o| k.op(o)).collect(),
            int_divs: RefCell::new(Vec::new()),
            float_casts: RefCell::new(Vec::new()),
            epilogue: None,
        }
    }

    /// Appends a lowered kernel body to `src`, noting the helpers it calls.
    fn finish(&self, src: &mut String, l: Lowering) {
        src.push_str(&l.out);
        let mut divs = self.int_divs.borrow_mut();
        for t in l.int_divs {
            if !divs.contains(&t) {
                divs.push(t);
            }
        }
        let mut casts = self.float_casts.borrow_mut();
        for c in l.float_casts {
            if !casts.contains(&c) {
                casts.push(c);
            }
        }
    }

    /// The kernel parameters shared by all kernels: inputs, outputs,
    /// partial results per output access, params, then a fused epilogue's
    /// other inputs.
    fn params(&self, with_inputs: bool, with_partials: bool) -> String {
        let mut p = Vec::new();
        let g = self.w.global;
        if with_inputs {
            for (b, buf) in self.k.inputs.iter().enumerate() {
                let t = self.d.storage_ty(buf.ty);
                p.push(format!("{g}const {t}* {} in{b}", self.w.restrict));
            }
        }
        for (b, buf) in self.k.outputs.iter().enumerate() {
            p.push(format!("{g}{}* out{b}", self.d.storage_ty(buf.ty)));
        }
        if with_partials {
            for (o, &(_, _, t)) in self.outs.iter().enumerate() {
                p.push(format!("{g}{}* part{o}", self.d.storage_ty(t)));
            }
        }
        for prm in &self.k.params {
            p.push(format!(
                "const {} arg_{}",
                self.d.storage_ty(prm.ty),
                prm.name
            ));
        }
        p.extend(self.epilogue_params());
        p.join(", ")
    }

    /// Binds the kernel's params and size parameters for the scalar function
    /// and the operators.
    fn bind_names(&self, l: &mut Lowering) {
        for s in &self.k.size_params {
            l.bind(&s.to_string(), &names::size(&s.to_string()));
        }
        bind_params(l, &self.k.params);
    }

    /// Decodes `id` into per-dimension coordinates `{prefix}{x}` with radix
    /// `radix(x)` (last dimension fastest), for `dims`.
    fn decode(
        &self,
        l: &mut Lowering,
        id: &str,
        prefix: &str,
        radix: fn(usize) -> String,
        dims: &[usize],
    ) {
        if dims.is_empty() {
            return;
        }
        let rest = l.fresh("rest");
        l.line(&format!("{IDX} {rest} = {id};"));
        for &x in dims.iter().rev() {
            let radix = radix(x);
            l.line(&format!("const {IDX} {prefix}{x} = {rest} % {radix};"));
            l.line(&format!("{rest} /= {radix};"));
        }
    }

    /// `Σ coef · i` of the linear offset of `access` at the point `i{x}`.
    fn linear(&self, access: &str, dims: &[usize]) -> String {
        let mut s = names::base(access);
        for &x in dims {
            let _ = write!(s, " + {} * i{x}", names::coef(access, x));
        }
        s
    }

    /// The dimensions an input access depends on.
    fn used(&self, b: usize, a: usize) -> Vec<usize> {
        let f = self.access(b, a);
        (0..self.dims)
            .filter(|&x| f.components.iter().any(|c| c.dims[x] != 0))
            .collect()
    }

    fn access(&self, b: usize, a: usize) -> &crate::spec::IndexFn {
        self.k
            .inp_view
            .iter()
            .filter(|v| v.buffer == self.k.inputs[b].name)
            .flat_map(|v| v.accesses.iter())
            .nth(a)
            .expect("accesses are numbered from the views")
    }

    /// The element of input access `(b, a)` at point `i`: from local memory
    /// when its buffer is cached there (`#if LOCAL{b}`), else from global.
    fn load(&self, b: usize, a: usize) -> String {
        from_storage(self.k.inputs[b].ty, &self.load_bits(b, a))
    }

    /// Input access `(b, a)`'s element at point `i` as the buffer stores it
    /// (a 16-bit float: its bits).
    fn load_bits(&self, b: usize, a: usize) -> String {
        let (local, global) = self.load_parts(b, a);
        format!("MDH_LOAD{b}(({local}), ({global}))")
    }

    /// The index in local memory and the offset in global memory of input
    /// access `(b, a)` at point `i`.
    fn load_parts(&self, b: usize, a: usize) -> (String, String) {
        let f = self.access(b, a);
        let mut local = String::from("0");
        for (c, comp) in f.components.iter().enumerate() {
            let mut v = names::local_offset(b, a, c);
            for (x, &cf) in comp.dims.iter().enumerate() {
                if cf != 0 {
                    let _ = write!(v, " + (({IDX}){cf}L) * i{x}");
                }
            }
            let _ = write!(
                local,
                " + ({v} - lo{b}_{c}) * {}",
                names::local_stride(b, c)
            );
        }
        let global = self.linear(&names::input_access(b, a), &self.used(b, a));
        (local, global)
    }

    /// `mdh_main`: the LM tiles of this work-group's block, the PM tiles of
    /// its work-items, the combination of partial results across them.
    fn main_kernel(&self, src: &mut String) {
        let w = &self.w;
        let _ = writeln!(
            src,
            "{}\n{{",
            w.head("mdh_main", WG_ITEMS, &self.params(true, true))
        );
        let mut l = Lowering::new(self.d, 1);
        self.bind_names(&mut l);
        self.main_prologue(&mut l);
        for &x in &self.kept {
            tile_loop(&mut l, x);
        }
        let q = self.accumulators(&mut l);
        l.line(&format!("#if {STAGES} > 1"));
        self.first_tile(&mut l);
        l.line("#endif");
        for &x in &self.pw {
            tile_loop(&mut l, x);
        }
        l.line(&format!("#if {STAGES} > 1"));
        self.prefetch(&mut l);
        l.line("#else");
        self.local_copies(&mut l);
        l.line("#endif");
        self.accumulate(&mut l, &q);
        l.line(&format!("#if {STAGES} > 1 && MDH_CP_ASYNC"));
        l.line("mdh_cp_async_wait();");
        l.line("#endif");
        l.line("#if ANY_LOCAL");
        l.line(self.w.barrier);
        l.line("#endif");
        l.line(&format!("#if {STAGES} > 1"));
        self.next_stage(&mut l);
        l.line("#endif");
        for _ in &self.pw {
            l.line("}");
        }
        self.main_results(&mut l, &q);
        for _ in &self.kept {
            l.line("}");
        }
        self.finish(src, l);
        src.push_str("}\n\n");
    }

    /// The ids and coordinates of this work-group and work-item, the bounds
    /// of its block, and its local memory (tiles of cached inputs, the
    /// reduction tree).
    fn main_prologue(&self, l: &mut Lowering) {
        let (d, w) = (self.d, &self.w);
        let all: Vec<usize> = (0..self.dims).collect();
        l.line(&format!("const {IDX} gid = {};", w.group_id()));
        l.line(&format!("const {IDX} lid = {};", w.local_id()));
        self.decode(l, "gid", "g", names::groups, &all);
        // The warp layer: the warp's coordinates (`wp{x}`, 0 along PW
        // dimensions) from `lid / MDH_LANES`, the lane's (`wl{x}`) from
        // `lid % MDH_LANES`, kept coordinates outer and PW coordinates
        // inner: the work-items that combine one result are consecutive
        // (`lid = kl * PW_ITEMS + pwl`), so they share a warp where the
        // dialect has warps. Without a warp layer `MDH_LANES` is the
        // work-group and `wl{x}` the work-item's coordinate.
        let kept_then_pw: Vec<usize> = self.kept.iter().chain(&self.pw).copied().collect();
        self.decode(
            l,
            &format!("lid % {LANES}"),
            "wl",
            names::lanes,
            &kept_then_pw,
        );
        self.decode(
            l,
            &format!("lid / {LANES}"),
            "wp",
            names::warps,
            &kept_then_pw,
        );
        if let Some(warp) = self.w.warp {
            // The lanes of this work-item's warp (the last warp of a
            // work-group may be partial).
            l.line(&format!("#if {PW_ITEMS} > 1 && MDH_SHFL > 1"));
            l.line(&format!(
                "const {IDX} mdh_lanes = MDH_MIN({WG_ITEMS} - (lid - lid % {warp}), {warp});"
            ));
            l.line(&format!(
                "const unsigned mdh_mask = mdh_lanes == {warp} ? 0xffffffffu : (1u << mdh_lanes) - 1u;"
            ));
            l.line("#endif");
        }
        for &x in &all {
            let (block, extent) = (names::block(x), names::extent(x));
            l.line(&format!("const {IDX} blo{x} = g{x} * {block};"));
            l.line(&format!(
                "const {IDX} bhi{x} = MDH_MIN(blo{x} + {block}, {extent});"
            ));
        }
        self.local_tiles(l);
        for (b, buf) in self.k.inputs.iter().enumerate() {
            l.line(&format!("#if {}", names::local(b)));
            for c in 0..buf.shape.len() {
                l.line(&format!("{IDX} lo{b}_{c} = 0;"));
            }
            l.line("#endif");
        }
        l.line(&format!("#if {PW_ITEMS} > MDH_SHFL"));
        for (o, &(_, _, t)) in self.outs.iter().enumerate() {
            l.line(&format!(
                "{} {} red{o}[{WG_ITEMS}];",
                w.shared,
                d.storage_ty(t)
            ));
            if !self.k.has_identity(o) {
                l.line(&format!("{} uchar redf{o}[{WG_ITEMS}];", w.shared));
            }
        }
        l.line("#endif");
        // The linear index of this work-item among the PW work-items, and
        // of its kept work-item coordinates (see the decoding above).
        l.line(&format!("const {IDX} pwl = lid % {PW_ITEMS};"));
        l.line(&format!("#if {PW_ITEMS} > MDH_SHFL"));
        l.line(&format!("const {IDX} kl = lid / {PW_ITEMS};"));
        l.line("#endif");
    }

    /// Declares and initializes the private accumulators over the kept PM
    /// tile (`PK` of them per output access); returns the index `q` of the
    /// current point's accumulator.
    fn accumulators(&self, l: &mut Lowering) -> String {
        let d = self.d;
        let mut pk = String::from("1");
        for &x in &self.kept {
            pk = format!("{pk} * {}", names::private(x));
        }
        let q = self.kept_index(&|x| format!("p{x}"));
        l.line(&format!("#define PK ({pk})"));
        for (o, &(_, _, t)) in self.outs.iter().enumerate() {
            let init = match self.ops[o] {
                Some(ReduceOp::Builtin(op, _)) => identity(d, *op, t),
                _ => crate::codegen::c_expr::int_lit(d, 0, t),
            };
            l.line(&format!("{} acc{o}[PK];", d.ty(t)));
            if !self.k.has_identity(o) {
                l.line(&format!("bool has{o}[PK];"));
            }
            l.line(&format!(
                "for ({IDX} q = 0; q < PK; q++) {{ acc{o}[q] = {init};"
            ));
            if !self.k.has_identity(o) {
                l.line(&format!("    has{o}[q] = false;"));
            }
            l.line("}");
        }
        q
    }

    /// The index of the private accumulator at the point whose private index
    /// along each kept dimension `x` is `p(x)` (row-major).
    fn kept_index(&self, p: &dyn Fn(usize) -> String) -> String {
        self.kept.iter().fold(String::from("0"), |q, &x| {
            format!("({q}) * {} + {}", names::private(x), p(x))
        })
    }

    /// The points of this work-item's PM tile within the current LM tile:
    /// the scalar function combined into the accumulators.
    ///
    /// A full tile (every work-item's points inside it: the tile is not cut
    /// by the end of the block, and the work-items' points cover exactly
    /// `T{x}`) takes the register-tiled path: per step of the PW private
    /// loops, each input access's values for the work-item's kept points are
    /// loaded once into a fragment of registers, then the scalar function
    /// runs over the kept points from them (matmul: `P0 + P1` loads for
    /// `P0 · P1` products), without a guard per point. An edge tile checks
    /// and loads per point. Both combine the same values in the same order
    /// into each accumulator: results do not depend on the path. The choice
    /// is made once per tile; the constant part (`W{x} · P{x} == T{x}`, and
    /// `T{x} <= B{x}`: a tile larger than its block is always cut) by the
    /// preprocessor.
    fn accumulate(&self, l: &mut Lowering, q: &str) {
        // The constant part in the preprocessor (OpenCL's clang warns of
        // constants in `&&`), and no register-tiled path where it is false.
        // A path that can never run is not emitted: PoCL 3.1 (`loops`
        // work-group method) miscompiles a kernel whose always-false full-tile
        // branch holds a loop, and its edge tiles then compute nothing
        // (reproduced in `examples/tests/opencl.rs`).
        let (mut covers, mut full) = (vec!["1".to_string()], String::from("1"));
        for x in 0..self.dims {
            let (items, private, tile) = (names::items(x), names::private(x), names::tile(x));
            covers.push(format!("{items} * {private} == {tile}"));
            covers.push(format!("{tile} <= {}", names::block(x)));
            let _ = write!(full, " && e{x} - t{x} == {tile}");
        }
        l.line(&format!("#if {}", covers.join(" && ")));
        l.line(&format!("if ({full}) {{"));
        match self.mma_dims() {
            Some(dims) => {
                let kept = |p: &dyn Fn(usize) -> String| self.kept_index(p);
                if let Some(t) = self.mma_half() {
                    l.line(&format!("#if {MMA} == 16"));
                    self.mma_points(l, &dims, &kept, Some(t));
                    l.line(&format!("#elif {MMA}"));
                } else {
                    l.line(&format!("#if {MMA}"));
                }
                self.mma_points(l, &dims, &kept, None);
                l.line("#else");
                self.points(l, q, true);
                l.line("#endif");
            }
            None => self.points(l, q, true),
        }
        l.line("} else");
        l.line("#endif");
        l.line("{");
        self.points(l, q, false);
        l.line("}");
    }

    /// The private loops of [`Self::accumulate`] (PW outside, kept inside:
    /// the accumulators' index is then a constant after unrolling): with
    /// fragments and no guards for a `full` tile, else guarded per point.
    fn points(&self, l: &mut Lowering, q: &str, full: bool) {
        for &x in &self.pw {
            private_loop(l, x);
        }
        // Without guards, an index is declared only where it is read (an
        // unread one is a compiler warning): PW indices by the loads of the
        // inputs that depend on them; index parameters of the scalar
        // function take the index's expression itself.
        let all: Vec<usize> = (0..self.dims).collect();
        let inputs: Vec<String> = if full {
            for &x in &self.pw {
                if self.ins.iter().any(|&(b, a)| self.used(b, a).contains(&x)) {
                    l.line(&format!("const {IDX} i{x} = {};", item_index(x)));
                }
            }
            self.fragments(l)
        } else {
            self.ins.iter().map(|&(b, a)| self.load(b, a)).collect()
        };
        for &x in &self.kept {
            private_loop(l, x);
        }
        let indices: Vec<String> = if full {
            all.iter()
                .map(|&x| format!("({})", item_index(x)))
                .collect()
        } else {
            for &x in &all {
                l.line(&format!("const {IDX} i{x} = {};", item_index(x)));
            }
            all.iter().map(|x| format!("i{x}")).collect()
        };
        if !full {
            let mut inside = String::from("1");
            for &x in &all {
                let _ = write!(inside, " && i{x} < e{x}");
            }
            l.line(&format!("if ({inside}) {{"));
        }
        let results = self.point(l, &inputs, &indices);
        l.line(&format!("const {IDX} q = {q};"));
        for (o, r) in results.iter().enumerate() {
            let t = self.outs[o].2;
            match self.ops[o] {
                None => l.line(&format!("acc{o}[q] = {r};")),
                Some(op) => {
                    let c = l.combine(op, t, &format!("acc{o}[q]"), r);
                    if !self.k.has_identity(o) {
                        l.line(&format!(
                            "acc{o}[q] = has{o}[q] ? {c} : {r}; has{o}[q] = true;"
                        ));
                    } else {
                        l.line(&format!("acc{o}[q] = {c};"));
                    }
                }
            }
        }
        if !full {
            l.line("}");
        }
        for _ in self.pw.iter().chain(&self.kept) {
            l.line("}");
        }
    }

    /// Loads, for the current PW point, each input access's values at the
    /// kept points of this work-item that it depends on into a private
    /// array (indexed by those points' `p{x}`, row-major); returns per
    /// access the element the kept point `p` reads.
    fn fragments(&self, l: &mut Lowering) -> Vec<String> {
        self.ins
            .iter()
            .map(|&(b, a)| {
                let dims: Vec<usize> = self
                    .used(b, a)
                    .into_iter()
                    .filter(|&x| self.kinds[x] != DimKind::Pw)
                    .collect();
                let mut len = String::from("1");
                for &x in &dims {
                    let _ = write!(len, " * {}", names::private(x));
                }
                let frag = l.fresh("frag");
                let t = self.k.inputs[b].ty;
                l.line(&format!("{} {frag}[{len}];", self.d.ty(t)));
                let at_of = |p: &dyn Fn(usize) -> String| {
                    dims.iter().fold(String::from("0"), |at, &x| {
                        format!("({at}) * {} + {}", names::private(x), p(x))
                    })
                };
                self.fragment_loads(l, (b, a), &dims, &frag, &at_of);
                format!("{frag}[{}]", at_of(&|x| format!("p{x}")))
            })
            .collect()
    }

    /// Results: the tree across PW work-items, then the output view or the
    /// partial results of this work-group.
    fn main_results(&self, l: &mut Lowering, q: &str) {
        for &x in &self.kept {
            private_loop(l, x);
        }
        for &x in &self.kept {
            l.line(&format!("const {IDX} i{x} = {};", item_index(x)));
        }
        let mut valid = String::from("1");
        for &x in &self.kept {
            let _ = write!(valid, " && i{x} < e{x}");
        }
        l.line(&format!("const {IDX} q = {q};"));
        l.line(&format!("#if {PW_ITEMS} > 1"));
        self.warp_shuffles(l);
        self.tree(l);
        l.line("#endif");
        l.line(&format!(
            "if (pwl == 0{}) {{",
            valid.trim_start_matches('1')
        ));
        self.write_results(l);
        l.line("}");
        for _ in &self.kept {
            l.line("}");
        }
        l.line("#undef PK");
    }

    /// The scalar function at a point: binds its parameters to `inputs`
    /// (one C expression per input access) and its index parameters to
    /// `indices` (one per dimension), and returns one C expression per
    /// output access.
    fn point(&self, l: &mut Lowering, inputs: &[String], indices: &[String]) -> Vec<String> {
        let f = &self.k.scalar_fn;
        if let Some(ix) = &f.index_params {
            for (name, i) in ix.iter().zip(indices) {
                l.bind(&name.to_string(), &format!("((ulong){i})"));
            }
        }
        for ((name, &(b, _)), input) in f.params.iter().zip(&self.ins).zip(inputs) {
            let t = self.k.inputs[b].ty;
            let v = l.user_var(&name.to_string(), t, Some(input));
            l.bind(&name.to_string(), &v);
        }
        let dests: Vec<String> = self
            .outs
            .iter()
            .map(|&(_, _, t)| {
                let v = l.fresh("r");
                l.line(&format!("{} {v};", self.d.ty(t)));
                v
            })
            .collect();
        match &f.body.ty {
            Type::Tuple(_) | Type::Scalar(_) => l.assign_into(&f.body, &dests),
            Type::Unit | Type::Never => l.stmt(&f.body),
        }
        dests
    }

    /// Writes `acc{o}[q]` of every output access at kept point `i`.
    fn write_results(&self, l: &mut Lowering) {
        l.line(&format!("#if {PW_GROUPS} == 1"));
        for o in 0..self.outs.len() {
            self.store_result(l, o, &format!("acc{o}[q]"));
        }
        l.line("#else");
        let mut gpw = String::from("0");
        for &x in &self.pw {
            gpw = format!("({gpw}) * {} + g{x}", names::groups(x));
        }
        let mut kept_lin = String::from("0");
        for &x in &self.kept {
            kept_lin = format!("({kept_lin}) * {} + i{x}", names::extent(x));
        }
        for (o, &(_, _, t)) in self.outs.iter().enumerate() {
            let v = to_storage(t, &format!("acc{o}[q]"));
            l.line(&format!(
                "part{o}[({gpw}) * {KEPT_POINTS} + ({kept_lin})] = {v};"
            ));
        }
        l.line("#endif");
    }

    fn prelude(&self, src: &mut String) {
        let kernels = std::iter::once(self.k).chain(self.epilogue.map(|(ek, _)| ek));
        let kernels: Vec<&Checked> = kernels.collect();
        let uses = |t: ScalarType| {
            kernels.iter().any(|k| {
                k.inputs.iter().any(|b| b.ty == t)
                    || k.outputs.iter().any(|b| b.ty == t)
                    || k.params.iter().any(|p| p.ty == t)
                    || k.source.contains(t.name())
            })
        };
        match self.d {
            Dialect::OpenCl => {
                if uses(ScalarType::F64) {
                    src.push_str("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
                }
            }
            Dialect::Cuda => {
                src.push_str(
                "typedef unsigned char uchar;\ntypedef unsigned short ushort;\ntypedef unsigned int uint;\ntypedef unsigned long ulong;\n",
                );
                let mut types: Vec<ScalarType> = Vec::new();
                for b in self.k.inputs.iter() {
                    if !types.contains(&b.ty) {
                        types.push(b.ty);
                    }
                }
                src.push_str(&local::cuda_vec_types(&types));
                src.push_str(&local::cuda_cp_async());
            }
        }
        if self.d == Dialect::OpenCl {
            src.push_str("#define MDH_CP_ASYNC 0\n");
        }
        src.push_str("#define MDH_MIN(a, b) ((a) < (b) ? (a) : (b))\n");
        let _ = writeln!(src, "#define SCAN_CHUNK {SCAN_CHUNK}");
        src.push_str(&int_div_helpers(self.d, &self.int_divs.borrow()));
        src.push_str(&float_cast_helpers(self.d, &self.float_casts.borrow()));
        let halves = [ScalarType::F16, ScalarType::Bf16];
        let halves: Vec<ScalarType> = halves.into_iter().filter(|&t| uses(t)).collect();
        src.push_str(&half_helpers(self.d, &halves));
        if self.mma_dims().is_some() {
            src.push_str(&mma::cuda_mma(self.mma_half()));
        }
        // MDH_SHFL: the lanes per run of PW work-items combined by shuffles,
        // the largest power of two that divides PW_ITEMS and a warp.
        match self.w.warp {
            Some(warp) => {
                let mut k = warp;
                while k > 1 {
                    let _ = writeln!(
                        src,
                        "#{}if {PW_ITEMS} % {k} == 0\n#define MDH_SHFL {k}",
                        if k == warp { "" } else { "el" }
                    );
                    k /= 2;
                }
                src.push_str("#else\n#define MDH_SHFL 1\n#endif\n");
            }
            None => src.push_str("#define MDH_SHFL 1\n"),
        }
        src.push_str(&format!("#ifndef {BLOCKED}\n#define {BLOCKED} 0\n#endif\n"));
        src.push_str(&format!(
            "#ifndef {DYN_SHARED}\n#define {DYN_SHARED} 0\n#endif\n#ifndef {STAGES}\n#define {STAGES} 1\n#endif\n"
        ));
        // Without the definitions of a call (the template alone), 64-bit.
        src.push_str(&format!("#ifndef {IDX}\n#define {IDX} long\n#endif\n"));
        let mut any = Vec::new();
        for b in 0..self.k.inputs.len() {
            let local = names::local(b);
            let _ = writeln!(
                src,
                "#ifndef {local}\n#define {local} 0\n#endif\n#if {local}\n#define MDH_LOAD{b}(l, g) lmem{b}[l]\n#else\n#define MDH_LOAD{b}(l, g) in{b}[g]\n#endif"
            );
            any.push(local);
        }
        if any.is_empty() {
            any.push("0".into());
        }
        let _ = writeln!(src, "#define ANY_LOCAL ({})\n", any.join(" || "));
    }
}

/// The source template of kernel `k` in dialect `d` (see the module docs);
/// [`crate::gpu_plan::defines`] completes it for one call.
pub fn template(k: &Checked, d: Dialect) -> String {
    template_of(Emit::new(k, d))
}

/// The template of a producing stage `k` with its epilogue `e` (of kernel
/// `ek`) fused into its stores ([`crate::fusion`]); the epilogue's definitions
/// for a call (`mdh_rt::gpu_plan::epilogue_defines`) complete it beside
/// the producer's.
pub fn fused_template(k: &Checked, ek: &Checked, e: &Epilogue, d: Dialect) -> String {
    template_of(Emit {
        epilogue: Some((ek, e)),
        ..Emit::new(k, d)
    })
}

fn template_of(e: Emit) -> String {
    let mut kernels = String::new();
    e.main_kernel(&mut kernels);
    e.combine_kernel(&mut kernels);
    e.scan_kernels(&mut kernels);
    // The prelude last: it defines the helpers the kernels turned out to call.
    let mut src = String::new();
    e.prelude(&mut src);
    src + &kernels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desc::KernelDesc;
    use crate::gpu_plan::{defines, index_type, GpuPlan, IndexType};

    fn matmul() -> (Checked, KernelDesc) {
        let k = crate::fixtures::matmul();
        let desc = KernelDesc::from_kernel(&k);
        (k, desc)
    }

    /// Sizes in the kernel's order of size parameters.
    fn sizes(desc: &KernelDesc, i: usize, j: usize, k: usize) -> Vec<usize> {
        desc.size_params
            .iter()
            .map(|n| match n.as_ref() {
                "I" => i,
                "J" => j,
                _ => k,
            })
            .collect()
    }

    /// 32-bit indices while every offset fits with room to spare, 64-bit
    /// beyond: A of 2^16 × 2^15 elements has offsets up to 2^31.
    #[test]
    fn index_type_follows_the_largest_offset() {
        let (_, desc) = matmul();
        let plan = GpuPlan::default_for(&desc);
        for ((i, j, k), want) in [
            ((1024, 1024, 1024), IndexType::Int),
            ((1 << 14, 1, 1 << 15), IndexType::Int),
            ((1 << 16, 1, 1 << 15), IndexType::Long),
        ] {
            let bound = desc.bind_sizes(&sizes(&desc, i, j, k)).unwrap();
            let r = plan.resolve(&desc.kinds, &bound.extents);
            assert_eq!(index_type(&desc, &bound, &r), want, "{i}×{j}×{k}");
            let defs = defines(&desc, &bound, &r);
            let n0 = format!(
                "#define N0 {i}{}\n",
                if want == IndexType::Int { "" } else { "L" }
            );
            assert!(defs.contains(&n0), "{defs}");
            assert!(
                defs.contains(&format!("#define {IDX} {}\n", want.c_name())),
                "{defs}"
            );
        }
    }

    /// Every index of the kernels is `MDH_IDX`: no `long` is left to widen
    /// a 32-bit call's arithmetic. The main kernel has a guard-free path
    /// over register fragments beside the guarded one, and decodes its
    /// shared-memory copies with the box's extents.
    #[test]
    fn kernels_index_with_mdh_idx_and_keep_register_fragments() {
        let (k, _) = matmul();
        for d in [Dialect::Cuda, Dialect::OpenCl] {
            let src = template(&k, d);
            let longs: Vec<&str> = src
                .lines()
                .filter(|l| l.contains("long"))
                .filter(|l| !l.contains("typedef unsigned long ulong"))
                .filter(|l| *l != format!("#define {IDX} long"))
                .collect();
            assert!(longs.is_empty(), "{longs:?}");
            assert_eq!(src.matches("_frag[1 * ").count(), 2, "{src}");
            assert!(src.contains("rest % (L0_E1 / L0_VEC)"), "{src}");
            // Vector fragment loads of A along i (transposed tile) and of B
            // along j, each for widths 4 and 2, beside the scalar loads.
            assert!(src.contains("#if FV0_0 > 1 && FVX0_0 == 0"), "{src}");
            assert!(src.contains("#if FV1_0 > 1 && FVX1_0 == 1"), "{src}");
            let vloads = match d {
                Dialect::Cuda => src.matches("= *(const mdh_vec_f32_").count(),
                Dialect::OpenCl => src.matches("= vload").count(),
            };
            // Per width: one per fragment (A, B), and one per copy (A, B)
            // of each of the three (one stage; the first and the next tile
            // of two stages).
            assert_eq!(vloads, 2 * (2 + 3 * 2), "{src}");
            assert!(src.contains("&& i0 < e0 && i1 < e1 && i2 < e2"), "{src}");
        }
    }

    /// The vector widths follow what the sizes prove: matmul's
    /// register-tiled plan with vectors of 4 and A's tile transposed gets
    /// them for B's copy and both fragments at 1024³ (runs of 4 per strided
    /// thread; A's transposed tile is copied element by element); at
    /// 1024 × 1024 × 1026 B's rows (and so its copy)
    /// lose the alignment, its fragments keep it; a padding of 1 takes the
    /// fragments' (the next row's start) and adds a column to the tile.
    #[test]
    fn vector_widths_follow_the_sizes_and_the_layout() {
        let (_, desc) = matmul();
        let plan = crate::fixtures::matmul_register_tiled_vectors();
        let defs = |plan: &GpuPlan, (i, j, k)| {
            let bound = desc.bind_sizes(&sizes(&desc, i, j, k)).unwrap();
            defines(&desc, &bound, &plan.resolve(&desc.kinds, &bound.extents))
        };
        let has = |d: &str, want: &[&str]| {
            for w in want {
                assert!(d.contains(&format!("#define {w}\n")), "no {w} in\n{d}");
            }
        };
        has(
            &defs(&plan, (1024, 1024, 1024)),
            &[
                "L0_VEC 1",
                "L1_VEC 4",
                "FV0_0 4",
                "FVX0_0 0",
                "FV1_0 4",
                "FVX1_0 1",
                "VG0 4",
                "VG1 4",
                "L0_S0 1",
                "L0_S1 128",
                "L0_SIZE 1024",
            ],
        );
        has(&defs(&plan, (1024, 1026, 1024)), &["L1_VEC 1", "FV1_0 4"]);
        let padded = GpuPlan {
            pad: vec![1, 0],
            ..plan.clone()
        };
        has(
            &defs(&padded, (1024, 1024, 1024)),
            &[
                "FV0_0 1",
                "FVX0_0 -1",
                "VG0 1",
                "FV1_0 4",
                "L0_S0 1",
                "L0_S1 129",
                "L0_SIZE 1032",
            ],
        );
        let scalar = GpuPlan {
            vector: vec![1, 1],
            ..plan
        };
        has(
            &defs(&scalar, (1024, 1024, 1024)),
            &[
                "L0_VEC 1", "L1_VEC 1", "FV0_0 1", "FV1_0 1", "VG0 1", "VG1 1",
            ],
        );
    }

    /// Tensor cores: the CUDA template of a contraction has the mma path
    /// beside the FP32 one, OpenCL's and other kernels' have none; a call
    /// gets `MDH_MMA` 1 or 3 where its clamped plan keeps whole mma tiles,
    /// 0 at sizes that cut them (FP32 there).
    #[test]
    fn tensor_cores_follow_the_kernel_the_dialect_and_the_sizes() {
        use mdh_rt::gpu_plan::Mma;
        let (k, desc) = matmul();
        assert!(desc.contraction);
        let cuda = template(&k, Dialect::Cuda);
        assert!(
            cuda.contains("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
            "{cuda}"
        );
        assert!(cuda.contains("cvt.rna.tf32.f32"), "{cuda}");
        assert!(cuda.contains("mdh_mma1(acc0["), "{cuda}");
        assert!(!template(&k, Dialect::OpenCl).contains("mma"));
        // bf16 inputs widened `as f32`: the same mma, on the exact f32 values.
        let mixed = crate::fixtures::compiled(&crate::fixtures::example("matmul_bf16"));
        assert!(KernelDesc::from_kernel(&mixed).contraction);
        let mixed = template(&mixed, Dialect::Cuda);
        assert!(mixed.contains("mdh_mma1(acc0["), "{mixed}");
        assert!(mixed.contains("mdh_ld_bf16("), "{mixed}");
        // And m16n8k16 on their bits (`MDH_MMA == 16`); f32 inputs have none.
        assert!(
            mixed.contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
            "{mixed}"
        );
        assert!(mixed.contains("#if MDH_MMA == 16"), "{mixed}");
        assert!(mixed.contains("mdh_mma16(acc0["), "{mixed}");
        assert!(!cuda.contains("m16n8k16") && !cuda.contains("MDH_MMA == 16"));
        // f16 inputs: the f16 instruction, and a plan of that mode is valid.
        let scores = crate::fixtures::compiled(&crate::fixtures::example("scores_f16"));
        let scores_desc = KernelDesc::from_kernel(&scores);
        let scores = template(&scores, Dialect::Cuda);
        assert!(
            scores.contains("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
            "{scores}"
        );
        assert!(!scores.contains(".bf16."), "{scores}");
        crate::fixtures::matmul_tensor_cores(Mma::F16)
            .validate(&scores_desc)
            .unwrap();
        let stencil = crate::fixtures::compiled(&crate::fixtures::example("jacobi1d"));
        assert!(!KernelDesc::from_kernel(&stencil).contraction);
        assert!(!template(&stencil, Dialect::Cuda).contains("mma"));
        // The 16-bit modes only where both inputs have their type.
        let bf16 = KernelDesc::from_kernel(&crate::fixtures::compiled(&crate::fixtures::example(
            "matmul_bf16",
        )));
        let f16 = crate::fixtures::matmul_tensor_cores(Mma::F16);
        let e = f16.validate(&bf16).unwrap_err();
        assert_eq!(e.field, "mma");
        assert!(
            e.message.contains("`mma: f16`") && e.message.contains("`A: bf16` and `B: bf16`"),
            "{}",
            e.message
        );
        let e = crate::fixtures::matmul_tensor_cores(Mma::Bf16)
            .validate(&desc)
            .unwrap_err();
        assert!(e.message.contains("declare both `bf16`"), "{}", e.message);
        // Steps of 16 along k: a tile of 8 is not a whole m16n8k16 step.
        let e = GpuPlan {
            tile: vec![128, 64, 8],
            ..crate::fixtures::matmul_tensor_cores(Mma::Bf16)
        }
        .validate(&bf16)
        .unwrap_err();
        assert!(
            e.message.contains("of 16 along dimension 2"),
            "{}",
            e.message
        );
        let plan = crate::fixtures::matmul_tensor_cores(Mma::Bf16);
        plan.validate(&bf16).unwrap();
        for ((i, j, kk), want) in [((256, 128, 64), 16), ((256, 128, 12), 0)] {
            let bound = bf16.bind_sizes(&sizes(&bf16, i, j, kk)).unwrap();
            let defs = defines(&bf16, &bound, &plan.resolve(&bf16.kinds, &bound.extents));
            assert!(
                defs.contains(&format!("#define MDH_MMA {want}\n")),
                "{defs}"
            );
        }
        for (mma, want) in [(Mma::Off, 0), (Mma::Tf32, 1), (Mma::Tf32x3, 3)] {
            let plan = crate::fixtures::matmul_tensor_cores(mma);
            plan.validate(&desc).unwrap();
            for ((i, j, kk), fits) in [
                ((256, 128, 64), true),
                ((20, 128, 64), false),
                ((256, 128, 12), false),
            ] {
                let bound = desc.bind_sizes(&sizes(&desc, i, j, kk)).unwrap();
                let defs = defines(&desc, &bound, &plan.resolve(&desc.kinds, &bound.extents));
                let got = if fits { want } else { 0 };
                assert!(
                    defs.contains(&format!("#define MDH_MMA {got}\n")),
                    "{i}×{j}×{kk}: {defs}"
                );
            }
        }
    }
}
