//! Checker: the compile-time checks of DESIGN.md §2 on a parsed
//! [`Kernel`], and type inference for the scalar function and for
//! user-defined combine operators.
//!
//! [`check`] runs after the parser (which already rejects unsupported syntax
//! and non-affine index expressions). Every error is a `syn::Error` with the
//! span of the offending tokens and one sentence saying what is wrong and how
//! to fix it; independent errors are combined so the user sees all at once.
//! The checker never panics.
//!
//! # Structural and view checks
//!
//! - Names: no two of inputs, outputs and params share a name; no buffer or
//!   param is named like a size parameter; closures bind no name twice.
//! - One combine operator per md_hom dimension.
//! - Every index function has one parameter per md_hom dimension and one
//!   component per dimension of its buffer (its rank).
//! - Every view names a declared buffer of the right kind (inputs in
//!   `inp_view`, outputs in `out_view`); every buffer has exactly one view
//!   entry with at least one index function; there is at least one output.
//! - The scalar function has one parameter per input access (in `inp_view`
//!   order); its index pattern `|[y, x], …|` has one name per dimension.
//! - `PW(…)` / `PS(…)` have one operator, or one per output access.
//! - Lemma 1 of the MDH paper: all PW and PS dimensions use the same
//!   operator (per output access).
//! - Built-in operators (`+ * max min`) do not combine `bool` outputs.
//! - Output index functions do not use PW (reduced) dimensions and are
//!   injective over the kept (CC and PS) dimensions (full column rank of the
//!   coefficient matrix, computed exactly); no two accesses of one output
//!   buffer have equal index functions.
//! - After an error in a view clause, checks that count its accesses (the
//!   scalar function's parameters, per-output operators, the result's arity)
//!   are skipped, so that one mistake gives one error.
//!
//! # Type inference
//!
//! Unification over type variables that are unknown, an integer literal
//! (any integer type, or — more lenient than Rust — a float type), a float
//! literal (any float type) or a concrete [`ScalarType`]. Unconstrained
//! literals default to `i32` / `f64`. Names resolve innermost first: `let`
//! bindings and loop variables, closure parameters (element type of the
//! accessed buffer), index names (`usize`), params, size parameters (`usize`).
//! Rules: arithmetic needs two numbers of one type; comparisons one type and
//! give `bool`; `&& || !` need `bool`; unary `-` needs a signed type; `as`
//! casts between numbers and from `bool` to integers; methods per
//! [`Method`]; `if` conditions are `bool` and branches agree; an `if` without
//! `else` and a loop body give `()`; a `let` without a value (Rust's deferred
//! initialization) must be initialized by one plain assignment `x = e;`
//! directly in its own block before any use, and then gets its type from `e`
//! (or its annotation); further assignments only to `let mut` bindings;
//! integer `/` and `%` by a literal `0` are rejected; loop bounds are integers of one
//! type; `break` only in loops; tuples only as the result of the scalar
//! function. The result must match the output element types (in `out_view`
//! access order) and have one value per output access; a user-defined
//! operator `|a, b| e` takes and returns the element type of the output(s)
//! it combines. After a successful check, every [`Expr::ty`] is `Some`.

use std::collections::HashSet;

use proc_macro2::Span;

use crate::spec::{
    BinOp, Block, BufferDecl, CombineOp, DimKind, Expr, ExprKind, IndexFn, Kernel, Lit, Method,
    ReduceOp, ScalarType, SizeExpr, SpanRange, Stmt, Type, UnOp, View,
};

/// Checks a parsed kernel and fills the types of all scalar-function and
/// operator expressions. See the module documentation for the list of checks.
pub fn check(kernel: &mut Kernel) -> syn::Result<()> {
    let mut errs = Errors::default();
    check_names(kernel, &mut errs);
    let ops_ok = check_op_count(kernel, &mut errs);
    let views = check_views(kernel, &mut errs);
    check_scalar_fn_shape(kernel, views, &mut errs);
    check_combine_ops(kernel, ops_ok, views, &mut errs);
    if ops_ok {
        check_output_index_fns(kernel, &mut errs);
    }
    let typed = infer_types(kernel, views, &mut errs);
    errs.finish()?;
    if let Some(typed) = typed {
        apply_types(kernel, typed);
    }
    Ok(())
}

// ----------------------------------------------------------------------------
// Error collection.

#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, at: impl Into<SpanRange>, msg: impl std::fmt::Display) {
        let e = at.into().error(msg);
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    fn finish(self) -> syn::Result<()> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

// ----------------------------------------------------------------------------
// Small text helpers for messages.

fn size_text(e: &SizeExpr) -> String {
    fn is_sum(e: &SizeExpr) -> bool {
        matches!(e, SizeExpr::Add(..) | SizeExpr::Sub(..))
    }
    match e {
        SizeExpr::Const(c, _) => c.to_string(),
        SizeExpr::Param(p) => p.to_string(),
        SizeExpr::Add(a, b) => format!("{} + {}", size_text(a), size_text(b)),
        SizeExpr::Sub(a, b) => {
            if is_sum(b) {
                format!("{} - ({})", size_text(a), size_text(b))
            } else {
                format!("{} - {}", size_text(a), size_text(b))
            }
        }
        SizeExpr::Mul(a, b) => {
            let p = |x: &SizeExpr| {
                if is_sum(x) {
                    format!("({})", size_text(x))
                } else {
                    size_text(x)
                }
            };
            format!("{} * {}", p(a), p(b))
        }
    }
}

fn dims_text(k: &Kernel) -> String {
    let v: Vec<String> = k.dims.iter().map(|d| size_text(&d.size)).collect();
    format!("[{}]", v.join(", "))
}

fn shape_text(b: &BufferDecl) -> String {
    let v: Vec<String> = b.shape.iter().map(size_text).collect();
    format!("{}[{}]", b.ty, v.join(", "))
}

fn quoted_list<I: IntoIterator<Item = String>>(names: I) -> String {
    let v: Vec<String> = names.into_iter().map(|n| format!("`{n}`")).collect();
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn example_params(n: usize) -> String {
    const NAMES: [&str; 6] = ["i", "j", "k", "l", "m", "n"];
    let v: Vec<String> = (0..n)
        .map(|d| match NAMES.get(d) {
            Some(s) => s.to_string(),
            None => format!("d{d}"),
        })
        .collect();
    format!("|{}|", v.join(", "))
}

/// Output accesses as (buffer name, element type), in result order.
fn output_access_info(k: &Kernel) -> Vec<(String, ScalarType)> {
    k.output_accesses()
        .into_iter()
        .filter_map(|(b, _)| k.outputs.get(b).map(|d| (d.name.to_string(), d.ty)))
        .collect()
}

fn input_access_info(k: &Kernel) -> Vec<(String, ScalarType)> {
    k.input_accesses()
        .into_iter()
        .filter_map(|(b, _)| k.inputs.get(b).map(|d| (d.name.to_string(), d.ty)))
        .collect()
}

/// The operator of a PW/PS dimension for output access `k`, without panicking.
fn op_for(op: &CombineOp, k: usize) -> Option<&ReduceOp> {
    match op {
        CombineOp::Cc(_) => None,
        CombineOp::Pw(ops, _) | CombineOp::Ps(ops, _) => {
            if ops.len() == 1 {
                ops.first()
            } else {
                ops.get(k)
            }
        }
    }
}

fn combine_name(op: &CombineOp) -> &'static str {
    match op {
        CombineOp::Cc(_) => "CC",
        CombineOp::Pw(..) => "PW",
        CombineOp::Ps(..) => "PS",
    }
}

// ----------------------------------------------------------------------------
// Names.

fn check_names(k: &Kernel, errs: &mut Errors) {
    let mut entries: Vec<(String, Span, &'static str)> = Vec::new();
    for b in &k.inputs {
        entries.push((b.name.to_string(), b.name.span(), "an input buffer"));
    }
    for b in &k.outputs {
        entries.push((b.name.to_string(), b.name.span(), "an output buffer"));
    }
    for p in &k.params {
        entries.push((p.name.to_string(), p.name.span(), "a param"));
    }
    let sizes: HashSet<String> = k.size_params.iter().map(|s| s.to_string()).collect();
    for (i, (name, span, what)) in entries.iter().enumerate() {
        if let Some((_, _, first)) = entries.iter().take(i).find(|(n, _, _)| n == name) {
            let how = if first == what {
                format!("declared twice as {what}")
            } else {
                format!("declared twice (as {first} and as {what})")
            };
            errs.push(
                *span,
                format!("the name `{name}` is {how}; rename one of them"),
            );
        } else if sizes.contains(name) {
            let renamed = if name.starts_with('N') {
                format!("NUM_{name}")
            } else {
                format!("N{name}")
            };
            let msg = if *what == "a param" {
                format!("`{name}` is a size parameter (used in a shape or in md_hom[...]) and cannot also be a param; size parameters are already available as `usize` values in the scalar function, so drop the param or rename it")
            } else {
                format!("`{name}` is a size parameter (used in a shape or in md_hom[...]) and cannot also name {what}: the generated `cpu` function takes the buffers and the size parameters as arguments by name, so the two would clash; rename the size parameter (e.g. `{renamed}`) or the buffer")
            };
            errs.push(*span, msg);
        }
    }
}

fn check_distinct_idents<'a>(
    idents: impl IntoIterator<Item = &'a syn::Ident>,
    what: &str,
    errs: &mut Errors,
) {
    let mut seen: HashSet<String> = HashSet::new();
    for id in idents {
        let s = id.to_string();
        if s == "_" {
            continue;
        }
        if !seen.insert(s.clone()) {
            errs.push(
                id.span(),
                format!("`{s}` is bound twice in this {what}; give each parameter its own name"),
            );
        }
    }
}

// ----------------------------------------------------------------------------
// Combine operators and views.

fn check_op_count(k: &Kernel, errs: &mut Errors) -> bool {
    if k.ops.len() != k.dims.len() {
        errs.push(
            k.ops_span,
            format!(
                "md_hom has {} {} but {} combine {}; give exactly one operator (CC, PW(...) or PS(...)) per dimension",
                if k.dims.len() == 1 { "1 dimension".to_string() } else { format!("{} dimensions", k.dims.len()) },
                dims_text(k),
                k.ops.len(),
                if k.ops.len() == 1 { "operator" } else { "operators" },
            ),
        );
        false
    } else {
        true
    }
}

fn check_index_fn(k: &Kernel, buf: &BufferDecl, f: &IndexFn, errs: &mut Errors) {
    let nd = k.dims.len();
    if f.params.len() != nd {
        errs.push(
            f.params_range,
            format!(
                "this index function has {} but md_hom has {} {}; write one parameter per dimension, e.g. `{}`",
                plural(f.params.len(), "parameter", "parameters"),
                plural(nd, "dimension", "dimensions"),
                dims_text(k),
                example_params(nd),
            ),
        );
    }
    check_distinct_idents(&f.params, "index function", errs);
    if f.components.len() != buf.shape.len() {
        errs.push(
            f.body_range,
            format!(
                "this index function gives {} but `{}` ({}) has rank {}; return one index per buffer dimension",
                plural(f.components.len(), "index", "indices"),
                buf.name,
                shape_text(buf),
                buf.shape.len(),
            ),
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn check_view_list(
    k: &Kernel,
    views: &[View],
    decls: &[BufferDecl],
    others: &[BufferDecl],
    clause: &str,
    other_clause: &str,
    kind: &str,
    errs: &mut Errors,
) -> bool {
    let mut ok = true;
    let mut seen: HashSet<String> = HashSet::new();
    for v in views {
        let name = v.buffer.to_string();
        let Some(decl) = decls.iter().find(|b| b.name == name) else {
            ok = false;
            if others.iter().any(|b| b.name == name) {
                errs.push(
                    v.buffer.span(),
                    format!(
                        "`{name}` is not an {kind} buffer; list its index functions in {other_clause}, not in {clause}"
                    ),
                );
            } else {
                errs.push(
                    v.buffer.span(),
                    format!(
                        "unknown buffer `{name}` in {clause}; the declared {kind} buffers are {}",
                        quoted_list(decls.iter().map(|b| b.name.to_string()))
                    ),
                );
            }
            continue;
        };
        if !seen.insert(name.clone()) {
            ok = false;
            errs.push(
                v.buffer.span(),
                format!(
                    "`{name}` is listed twice in {clause}; give all of its index functions in one entry: `{name}: [|..| (..), |..| (..)]`"
                ),
            );
            continue;
        }
        if v.accesses.is_empty() {
            ok = false;
            errs.push(
                v.buffer.span(),
                format!("`{name}` has no index function in {clause}; give at least one, e.g. `{name}: {} (...)`", example_params(k.dims.len())),
            );
        }
        for f in &v.accesses {
            check_index_fn(k, decl, f, errs);
        }
    }
    for d in decls {
        if !views.iter().any(|v| v.buffer == d.name) {
            ok = false;
            errs.push(
                d.span,
                format!(
                    "the {kind} buffer `{}` has no entry in {clause}; add `{}: {} (...)` to {clause} or remove the buffer",
                    d.name,
                    d.name,
                    example_params(k.dims.len())
                ),
            );
        }
    }
    ok
}

/// Whether each view clause lists exactly the declared buffers of its kind
/// (so that the accesses can be counted without follow-up errors).
#[derive(Clone, Copy)]
struct ViewsOk {
    inp: bool,
    out: bool,
}

fn check_views(k: &Kernel, errs: &mut Errors) -> ViewsOk {
    let inp = check_view_list(
        k,
        &k.inp_view,
        &k.inputs,
        &k.outputs,
        "inp_view",
        "out_view",
        "input",
        errs,
    );
    let out = check_view_list(
        k,
        &k.out_view,
        &k.outputs,
        &k.inputs,
        "out_view",
        "inp_view",
        "output",
        errs,
    );
    if k.outputs.is_empty() {
        errs.push(
            k.name.span(),
            "this kernel declares no output buffer; add `out(NAME: TYPE[SHAPE])` and its `out_view` entry",
        );
    }
    ViewsOk { inp, out }
}

fn check_scalar_fn_shape(k: &Kernel, views: ViewsOk, errs: &mut Errors) {
    let f = &k.scalar_fn;
    let inputs = input_access_info(k);
    // After an error in inp_view the accesses cannot be counted reliably.
    if views.inp && f.params.len() != inputs.len() {
        errs.push(
            f.params_range,
            format!(
                "the scalar function has {} but inp_view has {} ({}); write one parameter per input access, in inp_view order",
                plural(f.params.len(), "parameter", "parameters"),
                plural(inputs.len(), "input access", "input accesses"),
                quoted_list(inputs.iter().map(|(n, _)| n.clone())),
            ),
        );
    }
    if let Some(idx) = &f.index_params {
        if idx.len() != k.dims.len() {
            let span = f.index_pattern_range.unwrap_or(f.params_range);
            errs.push(
                span,
                format!(
                    "the index pattern binds {} but md_hom has {} {}; write one name per dimension, e.g. `|[{}], ...|`",
                    plural(idx.len(), "name", "names"),
                    plural(k.dims.len(), "dimension", "dimensions"),
                    dims_text(k),
                    example_params(k.dims.len()).trim_matches('|'),
                ),
            );
        }
    }
    let all = f.index_params.iter().flatten().chain(f.params.iter());
    check_distinct_idents(all, "scalar function", errs);
}

fn check_combine_ops(k: &Kernel, ops_ok: bool, views: ViewsOk, errs: &mut Errors) {
    let outs = output_access_info(k);
    let n_out = outs.len();
    let mut counts_ok = true;
    for op in &k.ops {
        if let CombineOp::Pw(ops, span) | CombineOp::Ps(ops, span) = op {
            let name = combine_name(op);
            if ops.is_empty() {
                counts_ok = false;
                errs.push(
                    *span,
                    format!("{name} needs an operator, e.g. `{name}(+)` or `{name}(|a, b| a + b)`"),
                );
            } else if ops.len() > 1 && ops.len() != n_out && views.out {
                counts_ok = false;
                errs.push(
                    *span,
                    format!(
                        "{name} has {} operators but there {} ({}); give one operator per output access in out_view order, or a single operator for all",
                        ops.len(),
                        if n_out == 1 { "is 1 output access".to_string() } else { format!("are {n_out} output accesses") },
                        quoted_list(outs.iter().map(|(n, _)| n.clone())),
                    ),
                );
            }
            for c in ops {
                if let ReduceOp::Closure(c) = c {
                    if c.lhs == c.rhs {
                        errs.push(c.rhs.span(), format!("`{}` is bound twice in this operator; write `|a, b| ...` with two names", c.rhs));
                    }
                }
            }
        }
    }
    if !counts_ok {
        return;
    }
    // Built-in operators only combine numbers.
    let mut reported: HashSet<(usize, usize)> = HashSet::new();
    for (d, op) in k.ops.iter().enumerate() {
        let (CombineOp::Pw(ops, _) | CombineOp::Ps(ops, _)) = op else {
            continue;
        };
        for (a, (name, ty)) in outs.iter().enumerate() {
            let j = if ops.len() == 1 { 0 } else { a };
            if let Some(ReduceOp::Builtin(b, span)) = ops.get(j) {
                if *ty == ScalarType::Bool && reported.insert((d, j)) {
                    errs.push(
                        *span,
                        format!(
                            "`{}({})` cannot combine the `bool` values of output `{name}`; use a closure such as `{}(|a, b| a || b)` or a numeric output type",
                            combine_name(op),
                            b.name(),
                            combine_name(op),
                        ),
                    );
                }
            }
        }
    }
    // Lemma 1: one operator across all PW and PS dimensions (per output access).
    if !ops_ok {
        return;
    }
    let mut reported_dims: HashSet<usize> = HashSet::new();
    for a in 0..n_out.max(1) {
        let mut first: Option<(usize, &ReduceOp)> = None;
        for (d, op) in k.ops.iter().enumerate() {
            let Some(r) = op_for(op, a) else { continue };
            match first {
                None => first = Some((d, r)),
                Some((d0, r0)) => {
                    if !r.same_as(r0) && reported_dims.insert(d) {
                        let for_out = match (outs.get(a), n_out > 1) {
                            (Some((n, _)), true) => format!(" for output access {} (`{n}`)", a + 1),
                            _ => String::new(),
                        };
                        errs.push(
                            r.range(),
                            format!(
                                "dimension {} combines with `{}` but dimension {} with `{}`{for_out}: a combination of dimensions is only well-defined when all reduced dimensions use one associative, commutative operator; use the same operator in every PW and PS dimension (CC dimensions may be mixed freely) or split the computation into two kernels",
                                d + 1,
                                r.describe(),
                                d0 + 1,
                                r0.describe(),
                            ),
                        );
                    }
                }
            }
        }
    }
}

// ----------------------------------------------------------------------------
// Output index functions: no PW dimension, injective over kept dimensions.

fn check_output_index_fns(k: &Kernel, errs: &mut Errors) {
    let kinds = k.dim_kinds();
    let nd = k.dims.len();
    for v in &k.out_view {
        let buf = v.buffer.to_string();
        // Two accesses with the same index function write the same elements.
        for (j, g) in v.accesses.iter().enumerate() {
            if g.params.len() != nd {
                continue;
            }
            let same = v.accesses[..j]
                .iter()
                .position(|f| f.params.len() == nd && f.components == g.components);
            if let Some(i) = same {
                errs.push(
                    g.range,
                    format!(
                        "both index functions of `{buf}` write the same elements (index functions {} and {} of `{buf}` in out_view are equal); remove one of them, or write the second value to another output buffer or to another part of `{buf}` (a different index function, with a larger buffer)",
                        i + 1,
                        j + 1,
                    ),
                );
            }
        }
        for f in &v.accesses {
            let dim_name = |d: usize| -> String {
                match f.params.get(d) {
                    Some(p) => format!("`{p}` (dimension {})", d + 1),
                    None => format!("dimension {}", d + 1),
                }
            };
            let mut uses_pw = false;
            for (c, comp) in f.components.iter().enumerate() {
                let span = f.component_ranges.get(c).copied().unwrap_or(f.body_range);
                for (d, kind) in kinds.iter().enumerate() {
                    if *kind == DimKind::Pw && comp.dims.get(d).copied().unwrap_or(0) != 0 {
                        uses_pw = true;
                        errs.push(
                            span,
                            format!(
                                "this output index uses {}, which is reduced by PW, so all its values combine into one output element; remove it from the output index function or make the dimension CC",
                                dim_name(d)
                            ),
                        );
                    }
                }
            }
            if uses_pw {
                continue;
            }
            let kept: Vec<usize> = (0..kinds.len())
                .filter(|&d| kinds.get(d).is_some_and(|k| k.is_kept()))
                .collect();
            let matrix: Vec<Vec<i128>> = f
                .components
                .iter()
                .map(|c| {
                    kept.iter()
                        .map(|&d| c.dims.get(d).copied().unwrap_or(0) as i128)
                        .collect()
                })
                .collect();
            match rank(matrix, kept.len()) {
                Some(r) if r == kept.len() => {}
                Some(_) => {
                    let missing: Vec<String> = kept
                        .iter()
                        .filter(|&&d| f.components.iter().all(|c| c.dims.get(d).copied().unwrap_or(0) == 0))
                        .map(|&d| dim_name(d))
                        .collect();
                    let which = if missing.is_empty() {
                        "its kept dimensions are combined so that different points map to the same index".to_string()
                    } else {
                        format!("it does not use {}", missing.join(", "))
                    };
                    errs.push(
                        f.body_range,
                        format!(
                            "this output index function is not injective over the kept (CC and PS) dimensions ({which}), so two points of the index space would write the same element of `{buf}`; add the missing dimension to the output index function or make that dimension PW"
                        ),
                    );
                }
                None => errs.push(
                    f.body_range,
                    "the coefficients of this output index function are too large to check that it is injective; use smaller coefficients",
                ),
            }
        }
    }
}

fn gcd128(mut a: i128, mut b: i128) -> i128 {
    a = a.checked_abs().unwrap_or(0);
    b = b.checked_abs().unwrap_or(0);
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// Rank of an integer matrix (rows of length `cols`), by fraction-free
/// Gaussian elimination with row-gcd normalization. `None` on overflow.
fn rank(mut m: Vec<Vec<i128>>, cols: usize) -> Option<usize> {
    if m.iter().any(|r| r.len() != cols) {
        return None;
    }
    let rows = m.len();
    let mut r = 0;
    for c in 0..cols {
        if r >= rows {
            break;
        }
        let Some(p) = (r..rows).find(|&i| m[i][c] != 0) else {
            continue;
        };
        m.swap(r, p);
        let pivot_row = m[r].clone();
        let pv = pivot_row[c];
        for row in m.iter_mut().skip(r + 1) {
            let f = row[c];
            if f == 0 {
                continue;
            }
            for j in c..cols {
                row[j] = row[j]
                    .checked_mul(pv)?
                    .checked_sub(pivot_row[j].checked_mul(f)?)?;
            }
            let g = row.iter().fold(0i128, |g, &x| gcd128(g, x));
            if g > 1 {
                for x in row.iter_mut() {
                    *x /= g;
                }
            }
        }
        r += 1;
    }
    Some(r)
}

// ----------------------------------------------------------------------------
// Type inference.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Any,
    IntLit,
    FloatLit,
    Known(ScalarType),
}

fn class_text(c: Class) -> String {
    match c {
        Class::Any => "a value of unknown type".to_string(),
        Class::IntLit => "an integer".to_string(),
        Class::FloatLit => "a float".to_string(),
        Class::Known(t) => format!("`{t}`"),
    }
}

#[derive(Default)]
struct Vars {
    parent: Vec<usize>,
    class: Vec<Class>,
}

impl Vars {
    fn fresh(&mut self, c: Class) -> usize {
        self.parent.push(self.parent.len());
        self.class.push(c);
        self.parent.len() - 1
    }

    fn find(&mut self, mut v: usize) -> usize {
        let mut root = v;
        while let Some(&p) = self.parent.get(root) {
            if p == root {
                break;
            }
            root = p;
        }
        while let Some(&p) = self.parent.get(v) {
            if p == v {
                break;
            }
            if let Some(slot) = self.parent.get_mut(v) {
                *slot = root;
            }
            v = p;
        }
        root
    }

    fn class(&mut self, v: usize) -> Class {
        let r = self.find(v);
        self.class.get(r).copied().unwrap_or(Class::Any)
    }

    fn set(&mut self, v: usize, c: Class) {
        let r = self.find(v);
        if let Some(slot) = self.class.get_mut(r) {
            *slot = c;
        }
    }

    fn unify(&mut self, a: usize, b: usize) -> Result<(), (Class, Class)> {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return Ok(());
        }
        let (ca, cb) = (self.class(ra), self.class(rb));
        use Class::*;
        let merged = match (ca, cb) {
            (Any, x) | (x, Any) => x,
            (IntLit, IntLit) => IntLit,
            (IntLit, FloatLit) | (FloatLit, IntLit) | (FloatLit, FloatLit) => FloatLit,
            (IntLit, Known(t)) | (Known(t), IntLit) if t != ScalarType::Bool => Known(t),
            (FloatLit, Known(t)) | (Known(t), FloatLit) if t.is_float() => Known(t),
            (Known(x), Known(y)) if x == y => Known(x),
            _ => return Err((ca, cb)),
        };
        if let Some(p) = self.parent.get_mut(ra) {
            *p = rb;
        }
        if let Some(c) = self.class.get_mut(rb) {
            *c = merged;
        }
        Ok(())
    }

    /// Unifies `v` with a fresh variable of class `c`.
    fn constrain(&mut self, v: usize, c: Class) -> Result<(), (Class, Class)> {
        let w = self.fresh(c);
        self.unify(v, w)
    }

    fn resolve(&mut self, v: usize) -> Option<ScalarType> {
        match self.class(v) {
            Class::Known(t) => Some(t),
            Class::IntLit => Some(ScalarType::I32),
            Class::FloatLit => Some(ScalarType::F64),
            Class::Any => None,
        }
    }
}

/// An inferred type.
#[derive(Clone, Debug)]
enum ITy {
    S(usize),
    Unit,
    Never,
    Tuple(Vec<usize>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BKind {
    SizeParam,
    Param,
    IndexName,
    ClosureParam,
    OpParam,
    Let { mutable: bool },
    LoopVar,
}

struct Binding {
    name: String,
    var: usize,
    kind: BKind,
    /// A `let` without a value that has not been assigned yet.
    unassigned: bool,
}

type Deferred = (usize, SpanRange, Box<dyn Fn(ScalarType) -> Option<String>>);

struct Infer<'k> {
    k: &'k Kernel,
    vars: Vars,
    scope: Vec<Binding>,
    slots: Vec<(ITy, SpanRange)>,
    loop_depth: usize,
    checks: Vec<Deferred>,
    errs: Errors,
    /// Set by `block` just before checking a statement `x = e;` that
    /// initializes a `let x;` of the same block (deferred initialization).
    init_assign: bool,
}

/// Per tree, the types of its nodes in pre-order.
struct Typed {
    scalar_fn: Vec<Type>,
    /// Per (combine op, reduce op) index: the closure's node types.
    closures: Vec<((usize, usize), Vec<Type>)>,
}

fn describe_ity(vars: &mut Vars, t: &ITy) -> String {
    match t {
        ITy::S(v) => class_text(vars.class(*v)),
        ITy::Unit => "`()`".to_string(),
        ITy::Never => "`!`".to_string(),
        ITy::Tuple(vs) => {
            let v: Vec<String> = vs
                .iter()
                .map(|&v| match vars.class(v) {
                    Class::Known(t) => t.to_string(),
                    Class::IntLit => "{integer}".to_string(),
                    Class::FloatLit => "{float}".to_string(),
                    Class::Any => "_".to_string(),
                })
                .collect();
            format!("a tuple `({})`", v.join(", "))
        }
    }
}

impl<'k> Infer<'k> {
    fn new(k: &'k Kernel) -> Self {
        let mut s = Infer {
            k,
            vars: Vars::default(),
            scope: Vec::new(),
            slots: Vec::new(),
            loop_depth: 0,
            checks: Vec::new(),
            errs: Errors::default(),
            init_assign: false,
        };
        for sp in &k.size_params {
            let v = s.vars.fresh(Class::Known(ScalarType::Usize));
            s.bind(sp.to_string(), v, BKind::SizeParam);
        }
        for p in &k.params {
            let v = s.vars.fresh(Class::Known(p.ty));
            s.bind(p.name.to_string(), v, BKind::Param);
        }
        s
    }

    fn bind(&mut self, name: String, var: usize, kind: BKind) {
        self.scope.push(Binding {
            name,
            var,
            kind,
            unassigned: false,
        });
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scope.iter().rev().find(|b| b.name == name)
    }

    fn lookup_index(&self, name: &str) -> Option<usize> {
        self.scope.iter().rposition(|b| b.name == name)
    }

    fn known(&mut self, t: ScalarType) -> usize {
        self.vars.fresh(Class::Known(t))
    }

    fn defer(
        &mut self,
        v: usize,
        span: SpanRange,
        f: impl Fn(ScalarType) -> Option<String> + 'static,
    ) {
        self.checks.push((v, span, Box::new(f)));
    }

    /// Integer `/` or `%` by a literal zero panics at run time.
    fn defer_zero_divisor(&mut self, v: usize, span: SpanRange, op: BinOp) {
        let what = if op == BinOp::Div {
            "division"
        } else {
            "remainder"
        };
        let sym = op.symbol();
        self.defer(v, span, move |t| {
            t.is_int().then(|| {
                format!("integer {what} by zero: the right operand of this `{sym}` is the literal `0`, so the kernel would panic at run time; use a non-zero divisor")
            })
        });
    }

    /// The scalar variable of a value; errors on `()` and tuples.
    fn scalar(&mut self, t: ITy, span: SpanRange, what: &str) -> usize {
        match t {
            ITy::S(v) => v,
            ITy::Never => self.vars.fresh(Class::Any),
            other => {
                let d = describe_ity(&mut self.vars, &other);
                self.errs.push(
                    span,
                    format!("{what} needs a single value, but this expression is {d}"),
                );
                self.vars.fresh(Class::Any)
            }
        }
    }

    fn unify_or(
        &mut self,
        a: usize,
        b: usize,
        span: SpanRange,
        msg: impl FnOnce(String, String) -> String,
    ) -> bool {
        match self.vars.unify(a, b) {
            Ok(()) => true,
            Err((ca, cb)) => {
                self.errs.push(span, msg(class_text(ca), class_text(cb)));
                false
            }
        }
    }

    /// Unifies two types (branches of an `if`); `Never` gives way to the other.
    fn unify_ity(&mut self, a: &ITy, b: &ITy) -> Result<ITy, ()> {
        match (a, b) {
            (ITy::Never, x) | (x, ITy::Never) => Ok(x.clone()),
            (ITy::Unit, ITy::Unit) => Ok(ITy::Unit),
            (ITy::S(x), ITy::S(y)) => self.vars.unify(*x, *y).map(|_| a.clone()).map_err(|_| ()),
            (ITy::Tuple(xs), ITy::Tuple(ys)) if xs.len() == ys.len() => {
                for (x, y) in xs.iter().zip(ys) {
                    self.vars.unify(*x, *y).map_err(|_| ())?;
                }
                Ok(a.clone())
            }
            _ => Err(()),
        }
    }

    fn expr(&mut self, e: &Expr, result_pos: bool) -> ITy {
        let slot = self.slots.len();
        self.slots.push((ITy::Unit, e.range));
        let t = self.expr_inner(e, result_pos);
        if let Some(s) = self.slots.get_mut(slot) {
            s.0 = t.clone();
        }
        t
    }

    fn expr_inner(&mut self, e: &Expr, result_pos: bool) -> ITy {
        let span = e.range;
        match &e.kind {
            ExprKind::Lit(Lit::Int(value, suffix)) => {
                let v = match suffix {
                    Some(t) => self.known(*t),
                    None => self.vars.fresh(Class::IntLit),
                };
                let value = *value;
                self.defer(v, span, move |t| {
                    let max: u128 =
                        match t {
                            ScalarType::I8 => 1 << 7,
                            ScalarType::I16 => 1 << 15,
                            ScalarType::I32 => 1 << 31,
                            ScalarType::I64 => 1 << 63,
                            ScalarType::U8 => u8::MAX as u128,
                            ScalarType::U16 => u16::MAX as u128,
                            ScalarType::U32 => u32::MAX as u128,
                            ScalarType::U64 | ScalarType::Usize => u64::MAX as u128,
                            ScalarType::Bool => return Some(
                                "an integer literal cannot be a `bool`; write `true` or `false`"
                                    .to_string(),
                            ),
                            ScalarType::F32 | ScalarType::F64 => return None,
                        };
                    (value > max).then(|| {
                        format!("the literal `{value}` does not fit in `{t}`; use a wider type")
                    })
                });
                ITy::S(v)
            }
            ExprKind::Lit(Lit::Float(_, suffix)) => ITy::S(match suffix {
                Some(t) => self.known(*t),
                None => self.vars.fresh(Class::FloatLit),
            }),
            ExprKind::Lit(Lit::Bool(_)) => ITy::S(self.known(ScalarType::Bool)),
            ExprKind::Var(id) => {
                let name = id.to_string();
                if let Some((var, unassigned)) = self.lookup(&name).map(|b| (b.var, b.unassigned)) {
                    if unassigned {
                        self.errs.push(
                            id.span(),
                            format!("`{name}` is used before it has a value; assign it first (`{name} = ...;` directly in the block of its `let`), or give it a value where it is declared: `let {name} = ...;`"),
                        );
                    }
                    return ITy::S(var);
                }
                let msg = if self
                    .k
                    .inputs
                    .iter()
                    .chain(&self.k.outputs)
                    .any(|b| b.name == name)
                {
                    format!("unknown name `{name}`: buffers cannot be used directly; the scalar function receives input elements through its parameters (one per input access in inp_view) and returns output elements")
                } else {
                    format!("unknown name `{name}`: it is not a closure parameter, a `let` binding, a param or a size parameter; declare it with `let`, or add `params({name}: TYPE)` to the kernel")
                };
                self.errs.push(id.span(), msg);
                ITy::S(self.vars.fresh(Class::Any))
            }
            ExprKind::Unary(op, a) => {
                let ta = self.expr(a, false);
                let v = self.scalar(ta, a.range, "this operator");
                match op {
                    UnOp::Not => {
                        let b = self.known(ScalarType::Bool);
                        self.unify_or(v, b, span, |x, _| {
                            format!("`!` needs a `bool`, but this is {x}; compare with `==` / `!=` to get a `bool`")
                        });
                        ITy::S(v)
                    }
                    UnOp::Neg => {
                        self.defer(v, span, |t| {
                            (!t.is_signed()).then(|| {
                                if t == ScalarType::Bool {
                                    "cannot negate a `bool` with `-`; use `!` instead".to_string()
                                } else {
                                    format!("cannot negate a value of unsigned type `{t}`; cast it to a signed type first, e.g. `-(x as i64)`")
                                }
                            })
                        });
                        ITy::S(v)
                    }
                }
            }
            ExprKind::Binary(op, a, b) => {
                let ta = self.expr(a, false);
                let tb = self.expr(b, false);
                let sym = op.symbol();
                let va = self.scalar(ta, a.range, &format!("`{sym}`"));
                let vb = self.scalar(tb, b.range, &format!("`{sym}`"));
                if op.is_logical() {
                    for (v, s) in [(va, a.range), (vb, b.range)] {
                        let t = self.known(ScalarType::Bool);
                        self.unify_or(v, t, s, |x, _| {
                            format!("`{sym}` needs `bool` operands, but this is {x}; compare with `==` / `!=` to get a `bool`")
                        });
                    }
                    return ITy::S(self.known(ScalarType::Bool));
                }
                // A literal that does not fit the other side is the culprit.
                let at = match (is_literal(a), is_literal(b)) {
                    (false, true) => b.range,
                    (true, false) => a.range,
                    _ => span,
                };
                let ok = self.unify_or(va, vb, at, |x, y| {
                    format!("`{sym}` needs both operands of the same type, but the left is {x} and the right is {y}; convert one side with `as`")
                });
                if ok && matches!(op, BinOp::Div | BinOp::Rem) && is_zero_int_literal(b) {
                    self.defer_zero_divisor(va, span, *op);
                }
                if op.is_comparison() {
                    return ITy::S(self.known(ScalarType::Bool));
                }
                if ok {
                    self.defer(va, span, move |t| {
                        (t == ScalarType::Bool).then(|| {
                            format!("`{sym}` needs numbers, but both operands are `bool`; use `&&`, `||` or `!=` for booleans")
                        })
                    });
                }
                ITy::S(va)
            }
            ExprKind::Cast(a, target) => {
                let ta = self.expr(a, false);
                let v = self.scalar(ta, a.range, "`as`");
                let target = *target;
                if target == ScalarType::Bool {
                    self.errs.push(
                        span,
                        "cannot cast to `bool` with `as`; compare instead, e.g. `x != 0`",
                    );
                } else if target.is_float() {
                    self.defer(v, span, move |t| {
                        (t == ScalarType::Bool).then(|| {
                            format!("cannot cast a `bool` to `{target}`; cast it to an integer first or use `if b {{ 1.0 }} else {{ 0.0 }}`")
                        })
                    });
                }
                ITy::S(self.known(target))
            }
            ExprKind::MethodCall(recv, m, args) => {
                let tr = self.expr(recv, false);
                let arg_tys: Vec<(ITy, SpanRange)> = args
                    .iter()
                    .map(|a| (self.expr(a, false), a.range))
                    .collect();
                let name = m.name();
                let v = self.scalar(tr, recv.range, &format!("`.{name}()`"));
                if args.len() != m.arity() {
                    self.errs.push(
                        span,
                        format!(
                            "`.{name}()` takes {} but {} given",
                            plural(m.arity(), "argument", "arguments"),
                            if args.len() == 1 {
                                "1 was".to_string()
                            } else {
                                format!("{} were", args.len())
                            }
                        ),
                    );
                }
                if m.float_only() {
                    if self.vars.constrain(v, Class::FloatLit).is_err() {
                        let c = class_text(self.vars.class(v));
                        self.errs.push(
                            recv.range,
                            format!("`.{name}()` is only defined on `f32` and `f64`, but this is {c}; convert it with `as f32` or `as f64`"),
                        );
                    }
                } else {
                    let is_abs = *m == Method::Abs;
                    self.defer(v, span, move |t| {
                        if t == ScalarType::Bool {
                            Some(format!("`.{name}()` needs a number, but this is a `bool`"))
                        } else if is_abs && !t.is_signed() {
                            Some(format!("`.abs()` on unsigned type `{t}` is meaningless; remove it or cast to a signed type first"))
                        } else {
                            None
                        }
                    });
                }
                for (ta, s) in arg_tys {
                    let va = self.scalar(ta, s, &format!("an argument of `.{name}()`"));
                    let want = if *m == Method::Powi {
                        self.known(ScalarType::I32)
                    } else {
                        v
                    };
                    self.unify_or(va, want, s, |x, y| {
                        format!("this argument of `.{name}()` is {x}, but it must be {y}; convert it with `as`")
                    });
                }
                ITy::S(v)
            }
            ExprKind::If(c, then, els) => {
                let tc = self.expr(c, false);
                let vc = self.scalar(tc, c.range, "an `if` condition");
                let b = self.known(ScalarType::Bool);
                self.unify_or(vc, b, c.range, |x, _| {
                    format!("an `if` condition must be a `bool`, but this is {x}; compare it, e.g. `x != 0`")
                });
                let tt = self.block(then, result_pos);
                match els {
                    None => {
                        if !matches!(tt, ITy::Unit | ITy::Never) {
                            let d = describe_ity(&mut self.vars, &tt);
                            self.errs.push(
                                then.span,
                                format!("an `if` without `else` cannot produce a value, but this block gives {d}; add an `else` branch or end the value with `;`"),
                            );
                        }
                        ITy::Unit
                    }
                    Some(els) => {
                        let te = self.expr(els, result_pos);
                        match self.unify_ity(&tt, &te) {
                            Ok(t) => t,
                            Err(()) => {
                                let (x, y) = (
                                    describe_ity(&mut self.vars, &tt),
                                    describe_ity(&mut self.vars, &te),
                                );
                                self.errs.push(
                                    els.range,
                                    format!("the branches of this `if` have different types ({x} and {y}); make both branches produce the same type"),
                                );
                                tt
                            }
                        }
                    }
                }
            }
            ExprKind::Block(b) => self.block(b, result_pos),
            ExprKind::Tuple(es) => {
                if !result_pos {
                    self.errs.push(
                        span,
                        "a tuple can only be the final value of the scalar function (one element per output access); compute the elements with `let` and return them together at the end",
                    );
                }
                let mut vs = Vec::new();
                for el in es {
                    let t = self.expr(el, false);
                    vs.push(self.scalar(t, el.range, "a tuple element"));
                }
                ITy::Tuple(vs)
            }
            ExprKind::Assign(id, op, rhs) => {
                let init = std::mem::take(&mut self.init_assign) && op.is_none();
                let tr = self.expr(rhs, false);
                let vr = self.scalar(tr, rhs.range, "an assignment");
                let name = id.to_string();
                if let Some(i) = self.lookup_index(&name) {
                    if let Some(b) = self.scope.get_mut(i) {
                        if b.unassigned {
                            let var = b.var;
                            if init {
                                // Deferred initialization `let x; x = e;`.
                                b.unassigned = false;
                                let n2 = name.clone();
                                self.unify_or(vr, var, rhs.range, |x, y| {
                                    format!("cannot assign {x} to `{n2}`, which is {y}; convert the value with `as`")
                                });
                            } else {
                                // Reported once; later uses are not errors.
                                b.unassigned = false;
                                b.kind = BKind::Let { mutable: true };
                                self.errs.push(
                                    span,
                                    format!("`{name}` is declared without a value, and such a binding can only be initialized by a plain assignment `{name} = ...;` directly in the block of its `let`, before any other use; give it a value where it is declared instead, e.g. `let mut {name} = ...;`"),
                                );
                            }
                            return ITy::Unit;
                        }
                    }
                }
                let Some(b) = self.lookup(&name) else {
                    self.errs.push(
                        id.span(),
                        format!(
                            "unknown name `{name}`: declare it first with `let mut {name} = ...;`"
                        ),
                    );
                    return ITy::Unit;
                };
                let (var, kind) = (b.var, b.kind);
                let why = match kind {
                    BKind::Let { mutable: true } => None,
                    BKind::Let { mutable: false } => Some(format!("`{name}` is not mutable, so it can be assigned only once; declare it with `let mut {name}`")),
                    BKind::ClosureParam | BKind::OpParam => Some(format!("cannot assign to `{name}`, a closure parameter; bind a copy with `let mut {name} = {name};` first")),
                    BKind::LoopVar => Some(format!("cannot assign to the loop variable `{name}`; use a separate `let mut` binding")),
                    BKind::IndexName => Some(format!("cannot assign to the index `{name}`; bind a copy with `let mut {name} = {name};` first")),
                    BKind::Param | BKind::SizeParam => Some(format!("cannot assign to `{name}`, a kernel parameter; bind a copy with `let mut {name} = {name};` first")),
                };
                if let Some(why) = why {
                    self.errs.push(id.span(), why);
                }
                if let Some(op) = op {
                    if matches!(op, BinOp::Div | BinOp::Rem) && is_zero_int_literal(rhs) {
                        self.defer_zero_divisor(var, span, *op);
                    }
                    if op.is_comparison() || op.is_logical() {
                        self.errs.push(span, format!("`{}=` is not an assignment operator; write `{name} = {name} {} ...`", op.symbol(), op.symbol()));
                    } else {
                        let sym = op.symbol();
                        self.defer(var, span, move |t| {
                            (t == ScalarType::Bool).then(|| {
                                format!("`{sym}=` needs a number, but `{name}` is a `bool`")
                            })
                        });
                    }
                }
                let n2 = id.to_string();
                self.unify_or(vr, var, rhs.range, |x, y| {
                    format!(
                        "cannot assign {x} to `{n2}`, which is {y}; convert the value with `as`"
                    )
                });
                ITy::Unit
            }
            ExprKind::For(v, lo, hi, body) => {
                let tl = self.expr(lo, false);
                let th = self.expr(hi, false);
                let vl = self.scalar(tl, lo.range, "a loop bound");
                let vh = self.scalar(th, hi.range, "a loop bound");
                let bounds = lo.range.to(hi.range);
                self.unify_or(vl, vh, bounds, |x, y| {
                    format!("the bounds of this loop have different types ({x} and {y}); convert one with `as`")
                });
                self.defer(vl, bounds, |t| {
                    (!t.is_int()).then(|| format!("loop bounds must be integers, but these are `{t}`; cast them with `as usize`"))
                });
                let mark = self.scope.len();
                if let Some(v) = v {
                    self.bind(v.to_string(), vl, BKind::LoopVar);
                }
                self.loop_depth += 1;
                let tb = self.block(body, false);
                self.loop_depth -= 1;
                self.scope.truncate(mark);
                if !matches!(tb, ITy::Unit | ITy::Never) {
                    let d = describe_ity(&mut self.vars, &tb);
                    self.errs.push(
                        body.span,
                        format!("the body of a `for` loop cannot produce a value, but it gives {d}; end its last expression with `;`"),
                    );
                }
                ITy::Unit
            }
            ExprKind::Break => {
                if self.loop_depth == 0 {
                    self.errs.push(
                        span,
                        "`break` outside of a `for` loop; `break` can only leave a loop, so remove it and choose the value with `if`/`else` instead (e.g. `if c { a } else { b }`)",
                    );
                }
                ITy::Never
            }
        }
    }

    fn block(&mut self, b: &Block, result_pos: bool) -> ITy {
        let mark = self.scope.len();
        let mut diverges = false;
        for s in &b.stmts {
            match s {
                Stmt::Let {
                    name,
                    mutable,
                    ty,
                    init,
                    ..
                } => {
                    let var = match init {
                        Some(init) => {
                            let t = self.expr(init, false);
                            let v = self.scalar(t, init.range, "a `let` binding");
                            if let Some(ann) = ty {
                                let a = self.known(*ann);
                                self.unify_or(v, a, init.range, |x, y| {
                                    format!("`{name}` is declared as {y} but initialized with {x}; convert the value with `as` or change the annotation")
                                });
                            }
                            v
                        }
                        // Deferred initialization: the type comes from the
                        // assignment if there is no annotation.
                        None => match ty {
                            Some(ann) => self.known(*ann),
                            None => self.vars.fresh(Class::Any),
                        },
                    };
                    self.bind(name.to_string(), var, BKind::Let { mutable: *mutable });
                    if init.is_none() {
                        if let Some(b) = self.scope.last_mut() {
                            b.unassigned = true;
                        }
                    }
                }
                Stmt::Expr(e) => {
                    // `x = e;` directly in the block of `let x;` initializes it.
                    if let ExprKind::Assign(id, None, _) = &e.kind {
                        let name = id.to_string();
                        self.init_assign = self
                            .lookup_index(&name)
                            .is_some_and(|i| i >= mark && self.scope[i].unassigned);
                    }
                    let t = self.expr(e, false);
                    self.init_assign = false;
                    if matches!(t, ITy::Never) {
                        diverges = true;
                    }
                }
            }
        }
        let t = match &b.tail {
            Some(tail) => self.expr(tail, result_pos),
            None if diverges => ITy::Never,
            None => ITy::Unit,
        };
        // A `let x;` without a type that is never assigned has no type.
        for s in &b.stmts {
            if let Stmt::Let {
                name,
                ty: None,
                init: None,
                range,
                ..
            } = s
            {
                let n = name.to_string();
                let never = self
                    .scope
                    .iter()
                    .skip(mark)
                    .any(|bd| bd.name == n && bd.unassigned);
                if never {
                    self.errs.push(
                        *range,
                        format!("`{n}` is declared without a value and never assigned; remove it, or give it a value: `let {n} = ...;`"),
                    );
                }
            }
        }
        self.scope.truncate(mark);
        t
    }

    fn take_slots(&mut self) -> Vec<(ITy, SpanRange)> {
        std::mem::take(&mut self.slots)
    }
}

/// Whether `e` is a literal, possibly negated (`1.5`, `-2`).
fn is_literal(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_) => true,
        ExprKind::Unary(UnOp::Neg, x) => is_literal(x),
        _ => false,
    }
}

/// Whether `e` is the integer literal `0` (any suffix, possibly negated).
fn is_zero_int_literal(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(Lit::Int(0, _)) => true,
        ExprKind::Unary(UnOp::Neg, x) => is_zero_int_literal(x),
        _ => false,
    }
}

/// The expressions that give the value of `e` (through block tails and
/// `if` / `else` branches).
fn result_exprs<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match &e.kind {
        ExprKind::Block(b) => match &b.tail {
            Some(t) => result_exprs(t, out),
            None => out.push(e),
        },
        ExprKind::If(_, then, Some(els)) => {
            if let Some(t) = &then.tail {
                result_exprs(t, out);
            }
            result_exprs(els, out);
        }
        _ => out.push(e),
    }
}

fn infer_types(k: &Kernel, views: ViewsOk, errs: &mut Errors) -> Option<Typed> {
    let mut inf = Infer::new(k);
    let outs = output_access_info(k);

    // The scalar function.
    let f = &k.scalar_fn;
    let mark = inf.scope.len();
    for name in f.index_params.iter().flatten() {
        let v = inf.known(ScalarType::Usize);
        inf.bind(name.to_string(), v, BKind::IndexName);
    }
    let inputs = input_access_info(k);
    for (i, p) in f.params.iter().enumerate() {
        let v = match inputs.get(i) {
            Some((_, t)) => inf.known(*t),
            None => inf.vars.fresh(Class::Any),
        };
        inf.bind(p.to_string(), v, BKind::ClosureParam);
    }
    let body_t = inf.expr(&f.body, true);
    inf.scope.truncate(mark);
    // After an error in out_view the output accesses are unknown.
    if views.out {
        check_result(&mut inf, &f.body, &body_t, &outs);
    }
    let scalar_slots = inf.take_slots();

    // User-defined operators.
    let mut closure_slots = Vec::new();
    for (d, op) in k.ops.iter().enumerate() {
        let (CombineOp::Pw(ops, _) | CombineOp::Ps(ops, _)) = op else {
            continue;
        };
        for (j, r) in ops.iter().enumerate() {
            let ReduceOp::Closure(c) = r else { continue };
            // The outputs this operator combines.
            let applies: Vec<&(String, ScalarType)> = if ops.len() == 1 {
                outs.iter().collect()
            } else {
                outs.get(j).into_iter().collect()
            };
            let ty = match applies.first() {
                Some((_, t0)) => {
                    if let Some((n, t)) = applies.iter().find(|(_, t)| t != t0) {
                        let n0 = &applies[0].0;
                        inf.errs.push(
                            c.range,
                            format!(
                                "this operator combines outputs `{n0}` (`{t0}`) and `{n}` (`{t}`) of different types; give one operator per output access, e.g. `{}(op1, op2)`",
                                combine_name(op)
                            ),
                        );
                    }
                    Some(*t0)
                }
                None => None,
            };
            let mark = inf.scope.len();
            let var = match ty {
                Some(t) => inf.known(t),
                None => inf.vars.fresh(Class::Any),
            };
            inf.bind(c.lhs.to_string(), var, BKind::OpParam);
            inf.bind(c.rhs.to_string(), var, BKind::OpParam);
            let t = inf.expr(&c.body, false);
            inf.scope.truncate(mark);
            match t {
                ITy::S(v) => {
                    if let Some(ty) = ty {
                        let out_name = applies.first().map(|(n, _)| n.clone()).unwrap_or_default();
                        let want = inf.known(ty);
                        inf.unify_or(v, want, c.body.range, |x, _| {
                            format!("this operator returns {x}, but it combines values of output `{out_name}`, which is `{ty}`; make it return `{ty}` (e.g. with `as {ty}`)")
                        });
                    }
                }
                ITy::Never => {}
                other => {
                    let dsc = describe_ity(&mut inf.vars, &other);
                    inf.errs.push(
                        c.body.range,
                        format!("an operator must return one value, but this gives {dsc}"),
                    );
                }
            }
            closure_slots.push(((d, j), inf.take_slots()));
        }
    }

    if !inf.errs.is_empty() || !errs.is_empty() {
        if let Some(e) = inf.errs.0.take() {
            match &mut errs.0 {
                Some(all) => all.combine(e),
                None => errs.0 = Some(e),
            }
        }
        return None;
    }

    // Default literals, then run the deferred checks on the final types.
    let resolve_all = |inf: &mut Infer,
                       slots: Vec<(ITy, SpanRange)>,
                       errs: &mut Errors|
     -> Vec<Type> {
        let mut out = Vec::with_capacity(slots.len());
        for (t, span) in slots {
            let mut res = |v: usize, errs: &mut Errors| -> ScalarType {
                match inf.vars.resolve(v) {
                    Some(t) => {
                        inf.vars.set(v, Class::Known(t));
                        t
                    }
                    None => {
                        errs.push(span, "cannot infer the type of this expression; add a type annotation or a cast with `as`");
                        inf.vars.set(v, Class::Known(ScalarType::I32));
                        ScalarType::I32
                    }
                }
            };
            out.push(match t {
                ITy::S(v) => Type::Scalar(res(v, errs)),
                ITy::Unit => Type::Unit,
                ITy::Never => Type::Never,
                ITy::Tuple(vs) => Type::Tuple(vs.into_iter().map(|v| res(v, errs)).collect()),
            });
        }
        out
    };
    let scalar_fn = resolve_all(&mut inf, scalar_slots, errs);
    let closures: Vec<((usize, usize), Vec<Type>)> = closure_slots
        .into_iter()
        .map(|(key, s)| (key, resolve_all(&mut inf, s, errs)))
        .collect();
    let checks = std::mem::take(&mut inf.checks);
    for (v, span, f) in checks {
        if let Some(t) = inf.vars.resolve(v) {
            if let Some(msg) = f(t) {
                errs.push(span, msg);
            }
        }
    }
    if !errs.is_empty() {
        return None;
    }
    Some(Typed {
        scalar_fn,
        closures,
    })
}

/// Checks the scalar function's result against the output accesses: arity,
/// then element types (unifying, so that literals take the output types).
fn check_result(inf: &mut Infer, body: &Expr, t: &ITy, outs: &[(String, ScalarType)]) {
    let n = outs.len();
    if n == 0 {
        return;
    }
    let mut rs = Vec::new();
    result_exprs(body, &mut rs);
    let span = match rs.as_slice() {
        [one] => one.range,
        _ => body.range,
    };
    let names = quoted_list(outs.iter().map(|(n, _)| n.clone()));
    let mismatch = |inf: &mut Infer, v: usize, k: usize, span: SpanRange| {
        let Some((name, ty)) = outs.get(k) else {
            return;
        };
        let want = inf.known(*ty);
        let (name, ty) = (name.clone(), *ty);
        inf.unify_or(v, want, span, |x, _| {
            format!("the scalar function returns {x} for output `{name}`, which is `{ty}`; add `as {ty}` or change the buffer type")
        });
    };
    match t {
        ITy::Never => {}
        ITy::Unit => inf.errs.push(
            span,
            format!("the scalar function returns no value, but it must return {} ({names}); end the body with the result expression (without `;`)",
                if n == 1 { "one value".to_string() } else { format!("a tuple of {n} values") }),
        ),
        ITy::S(v) => {
            if n == 1 {
                mismatch(inf, *v, 0, span);
            } else {
                inf.errs.push(
                    span,
                    format!("the scalar function returns a single value but there are {n} output accesses ({names}); return a tuple with one value per output access, in out_view order"),
                );
            }
        }
        ITy::Tuple(vs) => {
            if n == 1 {
                inf.errs.push(
                    span,
                    format!("the scalar function returns a tuple of {} values but there is one output access ({names}); return a single value", vs.len()),
                );
            } else if vs.len() != n {
                inf.errs.push(
                    span,
                    format!("the scalar function returns {} values but there are {n} output accesses ({names}); return one value per output access, in out_view order", vs.len()),
                );
            } else {
                for (k, v) in vs.iter().enumerate() {
                    let el_span = match rs.as_slice() {
                        [Expr { kind: ExprKind::Tuple(es), .. }] => es.get(k).map(|e| e.range).unwrap_or(span),
                        _ => span,
                    };
                    mismatch(inf, *v, k, el_span);
                }
            }
        }
    }
}

// ----------------------------------------------------------------------------
// Writing the inferred types back (same pre-order as `Infer::expr`).

fn apply_types(k: &mut Kernel, typed: Typed) {
    let mut i = 0;
    fill(&mut k.scalar_fn.body, &typed.scalar_fn, &mut i);
    for ((d, j), tys) in typed.closures {
        let Some(CombineOp::Pw(ops, _) | CombineOp::Ps(ops, _)) = k.ops.get_mut(d) else {
            continue;
        };
        if let Some(ReduceOp::Closure(c)) = ops.get_mut(j) {
            let mut i = 0;
            fill(&mut c.body, &tys, &mut i);
        }
    }
}

fn fill(e: &mut Expr, tys: &[Type], i: &mut usize) {
    e.ty = tys.get(*i).cloned();
    *i += 1;
    match &mut e.kind {
        ExprKind::Lit(_) | ExprKind::Var(_) | ExprKind::Break => {}
        ExprKind::Unary(_, a) | ExprKind::Cast(a, _) => fill(a, tys, i),
        ExprKind::Binary(_, a, b) => {
            fill(a, tys, i);
            fill(b, tys, i);
        }
        ExprKind::MethodCall(r, _, args) => {
            fill(r, tys, i);
            for a in args {
                fill(a, tys, i);
            }
        }
        ExprKind::If(c, then, els) => {
            fill(c, tys, i);
            fill_block(then, tys, i);
            if let Some(e) = els {
                fill(e, tys, i);
            }
        }
        ExprKind::Block(b) => fill_block(b, tys, i),
        ExprKind::Tuple(es) => {
            for e in es {
                fill(e, tys, i);
            }
        }
        ExprKind::Assign(_, _, r) => fill(r, tys, i),
        ExprKind::For(_, lo, hi, body) => {
            fill(lo, tys, i);
            fill(hi, tys, i);
            fill_block(body, tys, i);
        }
    }
}

fn fill_block(b: &mut Block, tys: &[Type], i: &mut usize) {
    for s in &mut b.stmts {
        match s {
            Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => fill(e, tys, i),
            Stmt::Let { init: None, .. } => {}
        }
    }
    if let Some(t) = &mut b.tail {
        fill(t, tys, i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn walk(e: &Expr, f: &mut dyn FnMut(&Expr)) {
        f(e);
        match &e.kind {
            ExprKind::Lit(_) | ExprKind::Var(_) | ExprKind::Break => {}
            ExprKind::Unary(_, a) | ExprKind::Cast(a, _) | ExprKind::Assign(_, _, a) => walk(a, f),
            ExprKind::Binary(_, a, b) => {
                walk(a, f);
                walk(b, f);
            }
            ExprKind::MethodCall(r, _, args) => {
                walk(r, f);
                for a in args {
                    walk(a, f);
                }
            }
            ExprKind::If(c, t, e) => {
                walk(c, f);
                walk_block(t, f);
                if let Some(e) = e {
                    walk(e, f);
                }
            }
            ExprKind::Block(b) => walk_block(b, f),
            ExprKind::Tuple(es) => {
                for e in es {
                    walk(e, f);
                }
            }
            ExprKind::For(_, lo, hi, b) => {
                walk(lo, f);
                walk(hi, f);
                walk_block(b, f);
            }
        }
    }

    fn walk_block(b: &Block, f: &mut dyn FnMut(&Expr)) {
        for s in &b.stmts {
            match s {
                Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => walk(e, f),
                Stmt::Let { init: None, .. } => {}
            }
        }
        if let Some(t) = &b.tail {
            walk(t, f);
        }
    }

    /// All expression trees of a kernel (scalar fn, then operator closures).
    fn trees(k: &Kernel) -> Vec<&Expr> {
        let mut v = vec![&k.scalar_fn.body];
        for op in &k.ops {
            if let CombineOp::Pw(ops, _) | CombineOp::Ps(ops, _) = op {
                for r in ops {
                    if let ReduceOp::Closure(c) = r {
                        v.push(&c.body);
                    }
                }
            }
        }
        v
    }

    fn ok(tokens: proc_macro2::TokenStream) -> Kernel {
        let k = match crate::compile(tokens) {
            Ok(k) => k,
            Err(e) => panic!("unexpected error: {}", msgs(e)),
        };
        for t in trees(&k) {
            walk(t, &mut |e| {
                assert!(e.ty.is_some(), "untyped node: {:?}", e.kind)
            });
        }
        k
    }

    fn msgs(e: syn::Error) -> String {
        e.into_iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn err(tokens: proc_macro2::TokenStream) -> String {
        match crate::compile(tokens) {
            Ok(_) => panic!("expected an error"),
            Err(e) => msgs(e),
        }
    }

    fn assert_err(tokens: proc_macro2::TokenStream, needle: &str) {
        let m = err(tokens);
        assert!(m.contains(needle), "expected `{needle}` in:\n{m}");
    }

    /// Types of all nodes of a tree (pre-order) whose node is a `Var` named `name`.
    fn var_types(e: &Expr, name: &str) -> Vec<Type> {
        let mut v = Vec::new();
        walk(e, &mut |e| {
            if let ExprKind::Var(id) = &e.kind {
                if id == name {
                    v.extend(e.ty.clone());
                }
            }
        });
        v
    }

    fn lit_types(e: &Expr) -> Vec<Type> {
        let mut v = Vec::new();
        walk(e, &mut |e| {
            if let ExprKind::Lit(_) = &e.kind {
                v.extend(e.ty.clone());
            }
        });
        v
    }

    fn matvec_with(
        out_ty: proc_macro2::TokenStream,
        f: proc_macro2::TokenStream,
        ops: proc_macro2::TokenStream,
    ) -> proc_macro2::TokenStream {
        quote! {
            kernel matvec {
                inp(M: f32[I, K], v: f32[K]),
                out(w: #out_ty[I]),
                out_view(w: |i, k| (i)),
                md_hom[I, K](#f, #ops),
                inp_view(M: |i, k| (i, k), v: |i, k| (k)),
            }
        }
    }

    #[test]
    fn rank_is_exact() {
        assert_eq!(rank(vec![vec![1, 0], vec![0, 1]], 2), Some(2));
        assert_eq!(rank(vec![vec![1, 1], vec![2, 2]], 2), Some(1));
        assert_eq!(rank(vec![vec![1, 1]], 2), Some(1));
        assert_eq!(rank(vec![], 0), Some(0));
        assert_eq!(
            rank(vec![vec![2, 3, 0], vec![4, 6, 1], vec![0, 0, 5]], 3),
            Some(2)
        );
        assert_eq!(
            rank(
                vec![vec![i64::MAX as i128, 1], vec![1, i64::MAX as i128]],
                2
            ),
            Some(2)
        );
    }

    #[test]
    fn unify_literal_classes() {
        let mut v = Vars::default();
        let a = v.fresh(Class::IntLit);
        let b = v.fresh(Class::Known(ScalarType::F32));
        assert!(v.unify(a, b).is_ok());
        assert_eq!(v.resolve(a), Some(ScalarType::F32));
        let c = v.fresh(Class::FloatLit);
        let d = v.fresh(Class::Known(ScalarType::I32));
        assert!(v.unify(c, d).is_err());
        let e = v.fresh(Class::IntLit);
        assert_eq!(v.resolve(e), Some(ScalarType::I32));
        let f = v.fresh(Class::Known(ScalarType::Bool));
        assert!(v.unify(e, f).is_err());
    }

    #[test]
    fn parser_available() {
        // Reports whether the parser has landed (the other tests need it).
        let r = crate::compile(matvec_with(
            quote!(f32),
            quote!(|m, x| m * x),
            quote!((CC, PW(+))),
        ));
        if let Err(e) = &r {
            assert!(
                !e.to_string().contains("parser not written"),
                "parser not written yet"
            );
        }
    }

    #[test]
    fn matvec_ok() {
        let k = ok(matvec_with(
            quote!(f32),
            quote!(|m, x| m * x),
            quote!((CC, PW(+))),
        ));
        assert_eq!(k.scalar_fn.body.ty, Some(Type::Scalar(ScalarType::F32)));
    }

    #[test]
    fn matmul_ok() {
        let k = ok(quote! {
            pub kernel matmul {
                inp(A: f64[I, K], B: f64[K, J]),
                out(C: f64[I, J]),
                out_view(C: |i, j, k| (i, j)),
                md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
                inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
            }
        });
        assert_eq!(k.scalar_fn.body.ty, Some(Type::Scalar(ScalarType::F64)));
    }

    #[test]
    fn jacobi1d_ok() {
        let k = ok(quote! {
            kernel jacobi1d {
                inp(u: f32[N + 2]),
                out(w: f32[N]),
                out_view(w: |i| (i)),
                md_hom[N](|l, c, r| 0.33333 * (l + c + r), (CC)),
                inp_view(u: [|i| (i), |i| (i + 1), |i| (i + 2)]),
            }
        });
        // The unsuffixed float literal takes the type of the buffer.
        assert_eq!(
            lit_types(&k.scalar_fn.body),
            vec![Type::Scalar(ScalarType::F32)]
        );
    }

    #[test]
    fn mandelbrot_ok() {
        let k = ok(quote! {
            kernel mandelbrot {
                inp(),
                out(img: u32[H, W]),
                params(max_iter: u32),
                out_view(img: |y, x| (y, x)),
                md_hom[H, W](|[y, x]| {
                    let cr = x as f32 * 3.0 / W as f32 - 2.0;
                    let ci = y as f32 * 2.0 / H as f32 - 1.0;
                    let mut zr = 0.0f32;
                    let mut zi: f32 = 0.0;
                    let mut n = 0;
                    for _ in 0..max_iter {
                        if zr * zr + zi * zi > 4.0 {
                            break;
                        }
                        let t = zr * zr - zi * zi + cr;
                        zi = 2 * zr * zi + ci;
                        zr = t;
                        n += 1;
                    }
                    n
                }, (CC, CC)),
                inp_view(),
            }
        });
        assert_eq!(k.scalar_fn.body.ty, Some(Type::Scalar(ScalarType::U32)));
        assert!(var_types(&k.scalar_fn.body, "x")
            .iter()
            .all(|t| *t == Type::Scalar(ScalarType::Usize)));
        assert!(var_types(&k.scalar_fn.body, "W")
            .iter()
            .all(|t| *t == Type::Scalar(ScalarType::Usize)));
        assert!(var_types(&k.scalar_fn.body, "zi")
            .iter()
            .all(|t| *t == Type::Scalar(ScalarType::F32)));
        // `n` is inferred from the output type, the `2` in `2 * zr` becomes f32.
        assert!(var_types(&k.scalar_fn.body, "n")
            .iter()
            .all(|t| *t == Type::Scalar(ScalarType::U32)));
        let lits = lit_types(&k.scalar_fn.body);
        assert!(
            lits.iter()
                .all(|t| matches!(t, Type::Scalar(ScalarType::F32 | ScalarType::U32))),
            "{lits:?}"
        );
    }

    #[test]
    fn reduce2_ok() {
        let k = ok(quote! {
            kernel reduce2 {
                inp(x: f32[N]),
                out(s: f32[], m: f32[]),
                out_view(s: |i| (), m: |i| ()),
                md_hom[N](|a| (a, a), (PW(+, max))),
                inp_view(x: |i| (i)),
            }
        });
        assert_eq!(
            k.scalar_fn.body.ty,
            Some(Type::Tuple(vec![ScalarType::F32, ScalarType::F32]))
        );
    }

    #[test]
    fn reduce2_mixed_types_ok() {
        let k = ok(quote! {
            kernel sum_count {
                inp(x: f64[N]),
                out(s: f64[], c: u64[]),
                out_view(s: |i| (), c: |i| ()),
                md_hom[N](|a| if a > 0.0 { (a, 1) } else { (0.0, 0) }, (PW(+))),
                inp_view(x: |i| (i)),
            }
        });
        assert_eq!(
            k.scalar_fn.body.ty,
            Some(Type::Tuple(vec![ScalarType::F64, ScalarType::U64]))
        );
    }

    #[test]
    fn scan_ok() {
        ok(quote! {
            kernel scan {
                inp(x: i64[N]),
                out(y: i64[N]),
                out_view(y: |i| (i)),
                md_hom[N](|a| a, (PS(+))),
                inp_view(x: |i| (i)),
            }
        });
    }

    #[test]
    fn prl_custom_closure_ok() {
        let k = ok(quote! {
            kernel prl {
                inp(a: f64[N, M], b: f64[M]),
                out(best: f64[N]),
                params(eps: f64),
                out_view(best: |n, m| (n)),
                md_hom[N, M](|x, y| {
                    let d = (x - y).abs();
                    if d < eps { d * 2.0 } else { d.sqrt().mul_add(2.0, eps) + M as f64 }
                }, (CC, PW(|p, q| if p > q { p } else { q - eps * 0.0 }))),
                inp_view(a: |n, m| (n, m), b: |n, m| (m)),
            }
        });
        let CombineOp::Pw(ops, _) = &k.ops[1] else {
            panic!()
        };
        let ReduceOp::Closure(c) = &ops[0] else {
            panic!()
        };
        assert_eq!(c.body.ty, Some(Type::Scalar(ScalarType::F64)));
        assert_eq!(
            var_types(&k.scalar_fn.body, "eps"),
            vec![Type::Scalar(ScalarType::F64); 2]
        );
    }

    #[test]
    fn params_and_methods_ok() {
        ok(quote! {
            kernel saxpy {
                inp(x: f32[N], y: f32[N]),
                out(z: f32[N]),
                params(alpha: f32, p: i32),
                out_view(z: |i| (i)),
                md_hom[N](|a, b| {
                    let q = a.powi(p).max(0.5).min(b.powf(2.0));
                    let r = (-a).abs() + q.exp().ln().sin().cos().tanh().floor().ceil();
                    alpha * r + b - (p as f32) % 3.0
                }, (CC)),
                inp_view(x: |i| (i), y: |i| (i)),
            }
        });
    }

    #[test]
    fn integer_defaults_and_bool_logic_ok() {
        let k = ok(quote! {
            kernel count {
                inp(x: i32[N]),
                out(c: i32[]),
                out_view(c: |i| ()),
                md_hom[N](|a| {
                    let t = 5;
                    let f = 2.5;
                    if a > t && !(f < 1.0) || a == -1 { 1 } else { 0 }
                }, (PW(+))),
                inp_view(x: |i| (i)),
            }
        });
        let lits = lit_types(&k.scalar_fn.body);
        assert!(lits.contains(&Type::Scalar(ScalarType::F64)), "{lits:?}");
    }

    // --- structural errors ---------------------------------------------------

    #[test]
    fn duplicate_names() {
        assert_err(
            quote! {
                kernel k {
                    inp(a: f32[N], a: f32[N]), out(w: f32[N]),
                    out_view(w: |i| (i)), md_hom[N](|x, y| x + y, (CC)),
                    inp_view(a: [|i| (i), |i| (i)]),
                }
            },
            "the name `a` is declared twice as an input buffer; rename one of them",
        );
        assert_err(
            quote! {
                kernel k {
                    inp(a: f32[N]), out(w: f32[N]), params(a: f32),
                    out_view(w: |i| (i)), md_hom[N](|x| x, (CC)), inp_view(a: |i| (i)),
                }
            },
            "declared twice (as an input buffer and as a param)",
        );
        assert_err(
            quote! {
                kernel k {
                    inp(a: f32[N]), out(w: f32[N]), params(N: f32),
                    out_view(w: |i| (i)), md_hom[N](|x| x, (CC)), inp_view(a: |i| (i)),
                }
            },
            "`N` is a size parameter (used in a shape or in md_hom[...]) and cannot also be a param",
        );
        assert_err(
            quote! {
                kernel k {
                    inp(a: f32[N]), out(N: f32[N]),
                    out_view(N: |i| (i)), md_hom[N](|x| x, (CC)), inp_view(a: |i| (i)),
                }
            },
            "cannot also name an output buffer: the generated `cpu` function takes the buffers and the size parameters as arguments by name, so the two would clash; rename the size parameter (e.g. `NUM_N`) or the buffer",
        );
    }

    #[test]
    fn op_count() {
        assert_err(
            matvec_with(quote!(f32), quote!(|m, x| m * x), quote!((CC, PW(+), CC))),
            "md_hom has 2 dimensions [I, K] but 3 combine operators; give exactly one operator",
        );
    }

    #[test]
    fn index_fn_arity_and_rank() {
        assert_err(
            quote! {
                kernel matvec {
                    inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                    out_view(w: |i, k| (i)),
                    md_hom[I, K](|m, x| m * x, (CC, PW(+))),
                    inp_view(M: |i, k| (i, k), v: |k| (k)),
                }
            },
            "this index function has 1 parameter but md_hom has 2 dimensions [I, K]; write one parameter per dimension, e.g. `|i, j|`",
        );
        assert_err(
            quote! {
                kernel matvec {
                    inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                    out_view(w: |i, k| (i)),
                    md_hom[I, K](|m, x| m * x, (CC, PW(+))),
                    inp_view(M: |i, k| (i), v: |i, k| (k)),
                }
            },
            "this index function gives 1 index but `M` (f32[I, K]) has rank 2; return one index per buffer dimension",
        );
    }

    #[test]
    fn views() {
        assert_err(
            quote! {
                kernel matvec {
                    inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                    out_view(w: |i, k| (i)),
                    md_hom[I, K](|m, x| m * x, (CC, PW(+))),
                    inp_view(M: |i, k| (i, k), u: |i, k| (k)),
                }
            },
            "unknown buffer `u` in inp_view; the declared input buffers are `M`, `v`",
        );
        let m = err(quote! {
            kernel matvec {
                inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                out_view(w: |i, k| (i)),
                md_hom[I, K](|m| m, (CC, PW(+))),
                inp_view(M: |i, k| (i, k)),
            }
        });
        assert!(
            m.contains("the input buffer `v` has no entry in inp_view"),
            "{m}"
        );
        assert_err(
            quote! {
                kernel matvec {
                    inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                    out_view(w: |i, k| (i)),
                    md_hom[I, K](|m, x, y| m * x, (CC, PW(+))),
                    inp_view(M: |i, k| (i, k), v: |i, k| (k), v: |i, k| (k)),
                }
            },
            "`v` is listed twice in inp_view",
        );
        assert_err(
            quote! {
                kernel matvec {
                    inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                    out_view(w: |i, k| (i)),
                    md_hom[I, K](|m, x, y| m * x, (CC, PW(+))),
                    inp_view(M: |i, k| (i, k), v: |i, k| (k), w: |i, k| (i)),
                }
            },
            "`w` is not an input buffer; list its index functions in out_view, not in inp_view",
        );
        assert_err(
            quote! {
                kernel nothing {
                    inp(v: f32[K]), out(),
                    out_view(),
                    md_hom[K](|x| x, (CC)),
                    inp_view(v: |k| (k)),
                }
            },
            "this kernel declares no output buffer",
        );
    }

    #[test]
    fn scalar_fn_arity() {
        assert_err(
            quote! {
                kernel jacobi1d {
                    inp(u: f32[N + 2]), out(w: f32[N]),
                    out_view(w: |i| (i)),
                    md_hom[N](|l, c| l + c, (CC)),
                    inp_view(u: [|i| (i), |i| (i + 1), |i| (i + 2)]),
                }
            },
            "the scalar function has 2 parameters but inp_view has 3 input accesses (`u`, `u`, `u`); write one parameter per input access",
        );
        assert_err(
            quote! {
                kernel g {
                    inp(), out(img: u32[H, W]),
                    out_view(img: |y, x| (y, x)),
                    md_hom[H, W](|[y]| y as u32, (CC, CC)),
                    inp_view(),
                }
            },
            "the index pattern binds 1 name but md_hom has 2 dimensions [H, W]",
        );
    }

    #[test]
    fn result_arity() {
        let two = |f: proc_macro2::TokenStream| {
            quote! {
                kernel reduce2 {
                    inp(x: f32[N]), out(s: f32[], m: f32[]),
                    out_view(s: |i| (), m: |i| ()),
                    md_hom[N](#f, (PW(+, max))),
                    inp_view(x: |i| (i)),
                }
            }
        };
        assert_err(
            two(quote!(|a| a)),
            "the scalar function returns a single value but there are 2 output accesses (`s`, `m`)",
        );
        assert_err(
            two(quote!(|a| (a, a, a))),
            "the scalar function returns 3 values but there are 2 output accesses (`s`, `m`)",
        );
        assert_err(
            matvec_with(quote!(f32), quote!(|m, x| (m, x)), quote!((CC, PW(+)))),
            "the scalar function returns a tuple of 2 values but there is one output access (`w`); return a single value",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    m * x;
                }),
                quote!((CC, PW(+))),
            ),
            "the scalar function returns no value",
        );
    }

    #[test]
    fn pw_operator_count() {
        assert_err(
            quote! {
                kernel reduce3 {
                    inp(x: f32[N]), out(s: f32[], m: f32[]),
                    out_view(s: |i| (), m: |i| ()),
                    md_hom[N](|a| (a, a), (PW(+, max, min))),
                    inp_view(x: |i| (i)),
                }
            },
            "PW has 3 operators but there are 2 output accesses (`s`, `m`)",
        );
    }

    #[test]
    fn lemma1() {
        assert_err(
            quote! {
                kernel k {
                    inp(A: f32[I, J]), out(s: f32[]),
                    out_view(s: |i, j| ()),
                    md_hom[I, J](|a| a, (PW(+), PW(max))),
                    inp_view(A: |i, j| (i, j)),
                }
            },
            "dimension 2 combines with `max` but dimension 1 with `+`: a combination of dimensions is only well-defined when all reduced dimensions use one associative, commutative operator",
        );
        assert_err(
            quote! {
                kernel k {
                    inp(A: f32[I, J]), out(s: f32[I]),
                    out_view(s: |i, j| (i)),
                    md_hom[I, J](|a| a, (PS(+), PW(max))),
                    inp_view(A: |i, j| (i, j)),
                }
            },
            "is only well-defined when all reduced dimensions use one associative, commutative operator",
        );
        // Same operator everywhere is fine.
        ok(quote! {
            kernel k {
                inp(A: f32[I, J]), out(s: f32[]),
                out_view(s: |i, j| ()),
                md_hom[I, J](|a| a, (PW(max), PW(max))),
                inp_view(A: |i, j| (i, j)),
            }
        });
    }

    #[test]
    fn bool_outputs() {
        assert_err(
            quote! {
                kernel any {
                    inp(x: f32[N]), out(b: bool[]),
                    out_view(b: |i| ()),
                    md_hom[N](|a| a > 0.0, (PW(+))),
                    inp_view(x: |i| (i)),
                }
            },
            "`PW(+)` cannot combine the `bool` values of output `b`; use a closure such as `PW(|a, b| a || b)`",
        );
        ok(quote! {
            kernel any {
                inp(x: f32[N]), out(b: bool[]),
                out_view(b: |i| ()),
                md_hom[N](|a| a > 0.0, (PW(|p, q| p || q))),
                inp_view(x: |i| (i)),
            }
        });
    }

    #[test]
    fn output_index_functions() {
        assert_err(
            matvec_with(quote!(f32), quote!(|m, x| m * x), quote!((PW(+), CC))),
            "this output index uses `i` (dimension 1), which is reduced by PW",
        );
        assert_err(
            quote! {
                kernel k {
                    inp(A: f32[I, J]), out(s: f32[I]),
                    out_view(s: |i, j| (i)),
                    md_hom[I, J](|a| a, (CC, CC)),
                    inp_view(A: |i, j| (i, j)),
                }
            },
            "this output index function is not injective over the kept (CC and PS) dimensions (it does not use `j` (dimension 2)), so two points of the index space would write the same element of `s`; add the missing dimension to the output index function or make that dimension PW",
        );
        assert_err(
            quote! {
                kernel k {
                    inp(A: f32[I, J]), out(s: f32[I + J]),
                    out_view(s: |i, j| (i + j)),
                    md_hom[I, J](|a| a, (CC, CC)),
                    inp_view(A: |i, j| (i, j)),
                }
            },
            "its kept dimensions are combined so that different points map to the same index",
        );
        ok(quote! {
            kernel k {
                inp(A: f32[I, J]), out(s: f32[I + J, J]),
                out_view(s: |i, j| (i + j, J - 1 - j)),
                md_hom[I, J](|a| a, (CC, CC)),
                inp_view(A: |i, j| (i, j)),
            }
        });
    }

    // --- type errors -----------------------------------------------------------

    #[test]
    fn unknown_name() {
        assert_err(
            matvec_with(quote!(f32), quote!(|m, x| m * y), quote!((CC, PW(+)))),
            "unknown name `y`: ",
        );
        assert_err(
            matvec_with(quote!(f32), quote!(|m, x| m * v), quote!((CC, PW(+)))),
            "unknown name `v`: buffers cannot be used directly",
        );
    }

    #[test]
    fn result_type_mismatch() {
        assert_err(
            matvec_with(quote!(f32), quote!(|m, x| (m * x) as f64), quote!((CC, PW(+)))),
            "the scalar function returns `f64` for output `w`, which is `f32`; add `as f32` or change the buffer type",
        );
        assert_err(
            matvec_with(quote!(i32), quote!(|m, x| m * x), quote!((CC, PW(+)))),
            "the scalar function returns `f32` for output `w`, which is `i32`",
        );
    }

    #[test]
    fn arithmetic_and_logic_errors() {
        assert_err(
            matvec_with(quote!(f32), quote!(|m, x| m * (x as f64)), quote!((CC, PW(+)))),
            "`*` needs both operands of the same type, but the left is `f32` and the right is `f64`",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| if m { x } else { 0.0 }),
                quote!((CC, PW(+))),
            ),
            "an `if` condition must be a `bool`, but this is `f32`",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| if m > 0.0 && x { x } else { 0.0 }),
                quote!((CC, PW(+))),
            ),
            "`&&` needs `bool` operands, but this is `f32`",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| if m > 0.0 { x } else { 0 as f64 }),
                quote!((CC, PW(+))),
            ),
            "the branches of this `if` have different types",
        );
        assert_err(
            matvec_with(quote!(u32), quote!(|m, x| -(m as u32)), quote!((CC, PW(+)))),
            "cannot negate a value of unsigned type `u32`",
        );
        assert_err(
            matvec_with(
                quote!(bool),
                quote!(|m, x| m as bool),
                quote!((CC, PW(|a, b| a || b))),
            ),
            "cannot cast to `bool` with `as`",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| (m > x) as f32),
                quote!((CC, PW(+))),
            ),
            "cannot cast a `bool` to `f32`",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    let b = m > x;
                    (b + b) as f32
                }),
                quote!((CC, PW(+))),
            ),
            "`+` needs numbers, but both operands are `bool`",
        );
    }

    #[test]
    fn method_errors() {
        assert_err(
            matvec_with(
                quote!(i32),
                quote!(|m, x| (m as i32).sqrt()),
                quote!((CC, PW(+))),
            ),
            "`.sqrt()` is only defined on `f32` and `f64`, but this is `i32`",
        );
        assert_err(
            matvec_with(
                quote!(u32),
                quote!(|m, x| (m as u32).abs()),
                quote!((CC, PW(+))),
            ),
            "`.abs()` on unsigned type `u32`",
        );
        assert_err(
            matvec_with(quote!(f32), quote!(|m, x| m.powi(x)), quote!((CC, PW(+)))),
            "this argument of `.powi()` is `f32`, but it must be `i32`",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| m.max(x as f64)),
                quote!((CC, PW(+))),
            ),
            "this argument of `.max()` is `f64`, but it must be `f32`",
        );
    }

    #[test]
    fn binding_errors() {
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    m = x;
                    m
                }),
                quote!((CC, PW(+))),
            ),
            "cannot assign to `m`, a closure parameter; bind a copy with `let mut m = m;` first",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    let t = m;
                    t = x;
                    t
                }),
                quote!((CC, PW(+))),
            ),
            "`t` is not mutable, so it can be assigned only once; declare it with `let mut t`",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    let t;
                    m
                }),
                quote!((CC, PW(+))),
            ),
            "`t` is declared without a value and never assigned",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    let t: f64 = m;
                    m
                }),
                quote!((CC, PW(+))),
            ),
            "`t` is declared as `f64` but initialized with `f32`",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    let mut t = true;
                    t += true;
                    m
                }),
                quote!((CC, PW(+))),
            ),
            "`+=` needs a number, but `t` is a `bool`",
        );
        // Blocks scope their bindings.
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    {
                        let t = m;
                    }
                    t
                }),
                quote!((CC, PW(+))),
            ),
            "unknown name `t`",
        );
    }

    /// Rust's deferred initialization `let a; a = x;`: one plain assignment
    /// directly in the block of the `let`, before any use.
    #[test]
    fn deferred_initialization() {
        for f in [
            quote!(|m, x| {
                let a;
                a = m * x;
                a
            }),
            quote!(|m, x| {
                let a: f32;
                a = m;
                a * x
            }),
            quote!(|m, x| {
                let mut a;
                a = m;
                a += x;
                a
            }),
            quote!(|m, x| {
                let a;
                let b;
                a = m;
                b = x;
                a * b
            }),
            quote!(|m, x| {
                for _ in 0..2 {
                    let a;
                    a = m;
                    let _c = a;
                }
                m * x
            }),
        ] {
            let k = crate::compile(matvec_with(quote!(f32), f.clone(), quote!((CC, PW(+)))))
                .unwrap_or_else(|e| panic!("{f}: {}", msgs(e)));
            // The deferred binding gets the assigned value's type.
            assert!(var_types(&k.scalar_fn.body, "a")
                .iter()
                .all(|t| *t == Type::Scalar(ScalarType::F32)));
        }
        // The interpreter (the oracle) evaluates it like Rust.
        let k = crate::compile(matvec_with(
            quote!(f32),
            quote!(|m, x| {
                let a;
                a = m * x;
                let b: f32;
                b = a + 1.0;
                b
            }),
            quote!((CC, PW(+))),
        ))
        .unwrap_or_else(|e| panic!("{}", msgs(e)));
        use crate::interp::{run, Buffer};
        let inputs = [
            Buffer::from(vec![1.0f32, 2.0, 3.0, 4.0]),
            Buffer::from(vec![10.0f32, 100.0]),
        ];
        let mut outputs = [Buffer::zeros(ScalarType::F32, 2)];
        run(&k, &[2, 2], &inputs, &mut outputs, &[]).expect("runs");
        assert_eq!(outputs[0], Buffer::from(vec![212.0f32, 432.0]));
        for (f, needle) in [
            (
                quote!(|m, x| { let a; let b = a; a = m; b * x }),
                "`a` is used before it has a value",
            ),
            (
                quote!(|m, x| { let a; if m > x { a = m; } else { a = x; } a }),
                "`a` is declared without a value, and such a binding can only be initialized by a plain assignment `a = ...;` directly in the block of its `let`",
            ),
            (
                quote!(|m, x| { let a; a += m; a }),
                "can only be initialized by a plain assignment",
            ),
            (
                quote!(|m, x| { let a; a = m; a = x; a }),
                "`a` is not mutable, so it can be assigned only once; declare it with `let mut a`",
            ),
            (
                quote!(|m, x| { let a; { a = m; } a }),
                "directly in the block of its `let`",
            ),
            (
                quote!(|m, x| { let a: i32; a = m; x }),
                "cannot assign `f32` to `a`, which is `i32`",
            ),
        ] {
            let m = err(matvec_with(quote!(f32), f.clone(), quote!((CC, PW(+)))));
            assert!(m.contains(needle), "{f}: expected `{needle}` in:\n{m}");
        }
    }

    /// One error for a binding assigned in branches, no follow-ups.
    #[test]
    fn deferred_initialization_single_error() {
        let m = err(matvec_with(
            quote!(f32),
            quote!(|m, x| {
                let a;
                if m > x {
                    a = m;
                } else {
                    a = x;
                }
                a
            }),
            quote!((CC, PW(+))),
        ));
        assert_eq!(m.lines().count(), 1, "{m}");
    }

    #[test]
    fn division_by_literal_zero() {
        for (f, needle) in [
            (quote!(|m, x| (m as i32) / 0), "integer division by zero"),
            (
                quote!(|m, x| (m as i32) % 0i32),
                "integer remainder by zero",
            ),
            (
                quote!(|m, x| {
                    let mut a = m as i64;
                    a /= 0;
                    a as i32
                }),
                "integer division by zero",
            ),
        ] {
            let m = err(matvec_with(quote!(i32), f.clone(), quote!((CC, PW(+)))));
            assert!(m.contains(needle), "{f}: expected `{needle}` in:\n{m}");
        }
        // Floats divide by zero without panicking; `x / 1` is fine.
        for f in [
            quote!(|m, x| m / 0),
            quote!(|m, x| m / 0.0),
            quote!(|m, x| m / 1 + x),
        ] {
            if let Err(e) = crate::compile(matvec_with(quote!(f32), f.clone(), quote!((CC, PW(+)))))
            {
                panic!("{f}: {}", msgs(e));
            }
        }
    }

    #[test]
    fn identical_output_index_functions() {
        let k = |views: proc_macro2::TokenStream| {
            quote! {
                kernel twice {
                    inp(a: f32[N]), out(b: f32[M]),
                    out_view(b: #views),
                    md_hom[N](|x| (x, x + 1.0), (CC)),
                    inp_view(a: |i| (i)),
                }
            }
        };
        assert_err(
            k(quote!([|i| (i), |j| (j)])),
            "both index functions of `b` write the same elements",
        );
        assert!(crate::compile(k(quote!([|i| (i), |i| (i + N)]))).is_ok());
    }

    /// An error in a view clause is not followed by errors that only count
    /// the accesses.
    #[test]
    fn no_cascades_after_view_errors() {
        for (t, needle) in [
            (
                quote! { kernel k {
                    inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                    out_view(w: |i, k| (i)),
                    md_hom[I, K](|m, x, y| m * x * y, (CC, PW(+))),
                    inp_view(M: |i, k| (i, k), v: |i, k| (k), u: |i, k| (k)),
                } },
                "unknown buffer `u` in inp_view",
            ),
            (
                quote! { kernel k {
                    inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                    out_view(w: |i, k| (i)),
                    md_hom[I, K](|m, x, y| m * x * y, (CC, PW(+))),
                    inp_view(M: |i, k| (i, k), v: |i, k| (k), w: |i, k| (i)),
                } },
                "`w` is not an input buffer",
            ),
            (
                quote! { kernel k {
                    inp(a: f32[N]), out(b: f32[N]),
                    out_view(b: |i| (i)),
                    md_hom[N](|x| x, (CC)),
                } },
                "the input buffer `a` has no entry in inp_view",
            ),
            (
                quote! { kernel k {
                    inp(a: f32[N]), out(b: f32[N], c: f32[N]),
                    out_view(b: |i| (i), d: |i| (i)),
                    md_hom[N](|x| (x, x), (CC)),
                    inp_view(a: |i| (i)),
                } },
                "unknown buffer `d` in out_view",
            ),
        ] {
            let m = err(t);
            assert!(m.starts_with(needle), "expected `{needle}` in:\n{m}");
            // (The last case also reports the missing entry of `c`.)
            assert!(m.lines().count() <= 2, "follow-up errors:\n{m}");
            assert!(!m.contains("scalar function"), "follow-up errors:\n{m}");
        }
    }

    #[test]
    fn buffer_named_like_size_parameter() {
        assert_err(
            quote! { kernel bmm {
                inp(A: f32[B, I, K], B: f32[B, K, J]), out(C: f32[B, I, J]),
                out_view(C: |b, i, j, k| (b, i, j)),
                md_hom[B, I, J, K](|a, b| a * b, (CC, CC, CC, PW(+))),
                inp_view(A: |b, i, j, k| (b, i, k), B: |b, i, j, k| (b, k, j)),
            } },
            "`B` is a size parameter (used in a shape or in md_hom[...]) and cannot also name an input buffer: the generated `cpu` function takes the buffers and the size parameters as arguments by name, so the two would clash; rename the size parameter (e.g. `NB`) or the buffer",
        );
    }

    #[test]
    fn loop_errors() {
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    if m > x {
                        break;
                    }
                    m
                }),
                quote!((CC, PW(+))),
            ),
            "`break` outside of a `for` loop",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    for i in 0.0..x {}
                    m
                }),
                quote!((CC, PW(+))),
            ),
            "loop bounds must be integers, but these are `f32`",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    for i in 0u8..K {}
                    m
                }),
                quote!((CC, PW(+))),
            ),
            "the bounds of this loop have different types (`u8` and `usize`)",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| {
                    let t = (m, x);
                    m
                }),
                quote!((CC, PW(+))),
            ),
            "a tuple can only be the final value of the scalar function",
        );
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| if m > x {
                    m
                }),
                quote!((CC, PW(+))),
            ),
            "an `if` without `else` cannot produce a value",
        );
    }

    #[test]
    fn closure_operator_errors() {
        assert_err(
            matvec_with(
                quote!(f32),
                quote!(|m, x| m * x),
                quote!((CC, PW(|a, b| (a + b) as f64))),
            ),
            "this operator returns `f64`, but it combines values of output `w`, which is `f32`",
        );
        assert_err(
            quote! {
                kernel sum_count {
                    inp(x: f64[N]), out(s: f64[], c: u64[]),
                    out_view(s: |i| (), c: |i| ()),
                    md_hom[N](|a| (a, 1), (PW(|p, q| p + q))),
                    inp_view(x: |i| (i)),
                }
            },
            "this operator combines outputs `s` (`f64`) and `c` (`u64`) of different types; give one operator per output access",
        );
    }

    #[test]
    fn several_errors_at_once() {
        let m = err(quote! {
            kernel k {
                inp(a: f32[N]), out(w: f32[N]),
                out_view(w: |i, j| (i)),
                md_hom[N](|x| x + y, (CC)),
                inp_view(a: |i| (i)),
            }
        });
        assert!(m.contains("this index function has 2 parameters"), "{m}");
        assert!(m.contains("unknown name `y`"), "{m}");
    }
    #[test]
    fn never_panics_on_mutated_kernels() {
        let kernels = [
            "kernel matvec { inp(M: f32[I, K], v: f32[K]), out(w: f32[I]), out_view(w: |i, k| (i)), md_hom[I, K](|m, x| m * x, (CC, PW(+))), inp_view(M: |i, k| (i, k), v: |i, k| (k)), }",
            "kernel r { inp(x: f32[N]), out(s: f32[], m: f32[]), out_view(s: |i| (), m: |i| ()), md_hom[N](|a| (a, a), (PW(+, max))), inp_view(x: |i| (i)), }",
            "kernel g { inp(), out(img: u32[H, W]), params(it: u32), out_view(img: |y, x| (y, x)), md_hom[H, W](|[y, x]| { let mut n = 0; let c = x as f32 / W as f32; for _ in 0..it { if c > 4.0 { break; } n += 1; } n }, (CC, CC)), inp_view(), }",
            "kernel p { inp(a: f64[N, M]), out(b: f64[N]), params(e: f64), out_view(b: |n, m| (n)), md_hom[N, M](|x| x.abs().max(e), (CC, PW(|p, q| if p > q { p } else { q }))), inp_view(a: |n, m| (n, m)), }",
        ];
        for src in kernels {
            let words: Vec<&str> = src.split(' ').collect();
            let mut variants = Vec::new();
            for i in 0..words.len() {
                // Drop one word; duplicate one word; swap two neighbours.
                let mut v = words.clone();
                v.remove(i);
                variants.push(v.join(" "));
                let mut v = words.clone();
                v.insert(i, words[i]);
                variants.push(v.join(" "));
                if i + 1 < words.len() {
                    let mut v = words.clone();
                    v.swap(i, i + 1);
                    variants.push(v.join(" "));
                }
            }
            for v in variants {
                let r = std::panic::catch_unwind(|| {
                    let _ = crate::compile_str(&v);
                });
                assert!(r.is_ok(), "panicked on: {v}");
            }
        }
    }
}
