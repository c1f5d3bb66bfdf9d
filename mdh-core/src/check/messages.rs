//! Small text helpers for messages.

use crate::spec::parsed::{CombineOp, Kernel, ReduceOp};
use crate::spec::{BufferDecl, ScalarType, SizeExpr};
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

pub(super) fn dims_text(k: &Kernel) -> String {
    let v: Vec<String> = k.dims.iter().map(|d| size_text(&d.size)).collect();
    format!("[{}]", v.join(", "))
}

pub(super) fn shape_text(b: &BufferDecl) -> String {
    let v: Vec<String> = b.shape.iter().map(size_text).collect();
    format!("{}[{}]", b.ty, v.join(", "))
}

pub(super) fn quoted_list<I: IntoIterator<Item = String>>(names: I) -> String {
    let v: Vec<String> = names.into_iter().map(|n| format!("`{n}`")).collect();
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

pub(super) fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

pub(super) fn example_params(n: usize) -> String {
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
pub(super) fn output_access_info(k: &Kernel) -> Vec<(String, ScalarType)> {
    k.output_accesses()
        .into_iter()
        .filter_map(|(b, _)| k.outputs.get(b).map(|d| (d.name.to_string(), d.ty)))
        .collect()
}

pub(super) fn input_access_info(k: &Kernel) -> Vec<(String, ScalarType)> {
    k.input_accesses()
        .into_iter()
        .filter_map(|(b, _)| k.inputs.get(b).map(|d| (d.name.to_string(), d.ty)))
        .collect()
}

/// The operator of a PW/PS dimension for output access `k`, without panicking.
pub(super) fn op_for(op: &CombineOp, k: usize) -> Option<&ReduceOp> {
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

pub(super) fn combine_name(op: &CombineOp) -> &'static str {
    match op {
        CombineOp::Cc(_) => "CC",
        CombineOp::Pw(..) => "PW",
        CombineOp::Ps(..) => "PS",
    }
}
