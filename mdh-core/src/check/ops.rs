//! Combine operators: one per dimension, Lemma 1, no built-in on `bool`.

use super::messages::{combine_name, dims_text, op_for, output_access_info, quoted_list};
use super::views::ViewsOk;
use crate::diagnostics::Diagnostics;
use crate::spec::parsed::{CombineOp, Kernel, ReduceOp};
use crate::spec::ScalarType;
use std::collections::HashSet;

pub(super) fn check_op_count(k: &Kernel, errs: &mut Diagnostics) -> bool {
    if k.ops.len() != k.dims.len() {
        errs.error(
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

pub(super) fn check_combine_ops(k: &Kernel, ops_ok: bool, views: ViewsOk, errs: &mut Diagnostics) {
    let outs = output_access_info(k);
    let n_out = outs.len();
    let mut counts_ok = true;
    for op in &k.ops {
        if let CombineOp::Pw(ops, span) | CombineOp::Ps(ops, span) = op {
            let name = combine_name(op);
            if ops.is_empty() {
                counts_ok = false;
                errs.error(
                    *span,
                    format!("{name} needs an operator, e.g. `{name}(+)` or `{name}(|a, b| a + b)`"),
                );
            } else if ops.len() > 1 && ops.len() != n_out && views.out {
                counts_ok = false;
                errs.error(
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
                        errs.error(c.rhs.span(), format!("`{}` is bound twice in this operator; write `|a, b| ...` with two names", c.rhs));
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
                    errs.error(
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
                        errs.error(
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
