//! Mixed precision on the CPU: 16-bit float inputs (`f16`, `bf16`) that the
//! scalar function only widens (`x as f32`) are read as `f32` by the CPU task
//! bodies, converted where they are packed (or where they are read, for an
//! access a plan does not pack), so that the scalar function computes on
//! `f32` lanes: a widening is exact, so `x as f32` of the 16-bit value and
//! the converted value are the same `f32` (the interpreter's rule).

use proc_macro2::Ident;

use crate::spec::{Block, Expr, ExprKind, ScalarFn, ScalarType, Stmt, Type};

/// Per scalar-function parameter (input access): whether the CPU reads it
/// widened to `f32`. Its element type (`tys[j]`) is a 16-bit float, every
/// use of the parameter in the body is the operand of `as f32`, and no
/// `let`, `for` or assignment of the body rebinds its name.
pub(super) fn widened(f: &ScalarFn, tys: &[ScalarType]) -> Vec<bool> {
    f.params
        .iter()
        .zip(tys)
        .map(|(p, t)| t.is_half() && only_widened(&f.body, p) && !rebound(&f.body, p))
        .collect()
}

/// The scalar function's body as the CPU computes it: `p as f32` of a
/// widened parameter `p` is `p` itself, an `f32`.
pub(super) fn body(f: &ScalarFn, widened: &[bool]) -> Expr {
    let names: Vec<&Ident> = f
        .params
        .iter()
        .zip(widened)
        .filter(|(_, &w)| w)
        .map(|(p, _)| p)
        .collect();
    let mut body = f.body.clone();
    if !names.is_empty() {
        unwrap_casts(&mut body, &names);
    }
    body
}

/// The parameter of a cast `p as f32`, if `e` is one.
fn widening_of(e: &Expr) -> Option<&Ident> {
    match &e.kind {
        ExprKind::Cast(x, ScalarType::F32, from) if from.is_half() => match &x.kind {
            ExprKind::Var(v) => Some(v),
            _ => None,
        },
        _ => None,
    }
}

/// Whether every `Var(p)` in `e` is the operand of a widening `p as f32`.
fn only_widened(e: &Expr, p: &Ident) -> bool {
    if widening_of(e) == Some(p) {
        return true;
    }
    match &e.kind {
        ExprKind::Var(v) => v != p,
        _ => children(e).iter().all(|c| only_widened(c, p)),
    }
}

/// Whether a `let`, `for` or assignment in `e` binds or assigns `p`.
fn rebound(e: &Expr, p: &Ident) -> bool {
    let here = match &e.kind {
        ExprKind::Assign(v, ..) => v == p,
        ExprKind::For(Some(v), ..) => v == p,
        ExprKind::Block(b) | ExprKind::If(_, b, _) => lets(b).any(|v| v == p),
        _ => false,
    };
    here || children(e).iter().any(|c| rebound(c, p))
}

fn lets(b: &Block) -> impl Iterator<Item = &Ident> {
    b.stmts.iter().filter_map(|s| match s {
        Stmt::Let { name, .. } => Some(name),
        Stmt::Expr(_) => None,
    })
}

/// The sub-expressions of `e`, with the statements of its blocks.
fn children(e: &Expr) -> Vec<&Expr> {
    fn block<'e>(b: &'e Block, out: &mut Vec<&'e Expr>) {
        for s in &b.stmts {
            match s {
                Stmt::Let { init: Some(i), .. } => out.push(i),
                Stmt::Let { .. } => {}
                Stmt::Expr(x) => out.push(x),
            }
        }
        out.extend(b.tail.as_deref());
    }
    let mut out: Vec<&Expr> = Vec::new();
    match &e.kind {
        ExprKind::Lit(..) | ExprKind::Var(_) | ExprKind::Break => {}
        ExprKind::Unary(_, a, _) | ExprKind::Cast(a, _, _) | ExprKind::Assign(_, _, a, _) => {
            out.push(a)
        }
        ExprKind::Binary(_, a, b, _) => out.extend([&**a, &**b]),
        ExprKind::MethodCall(r, _, args, _) => {
            out.push(r);
            out.extend(args.iter());
        }
        ExprKind::If(c, then, els) => {
            out.push(c);
            block(then, &mut out);
            out.extend(els.as_deref());
        }
        ExprKind::Block(b) => block(b, &mut out),
        ExprKind::Tuple(items) => out.extend(items.iter()),
        ExprKind::For(_, lo, hi, b, _) => {
            out.extend([&**lo, &**hi]);
            block(b, &mut out);
        }
    }
    out
}

/// Replaces each `p as f32` of a parameter in `names` by `p`, typed `f32`.
fn unwrap_casts(e: &mut Expr, names: &[&Ident]) {
    if let Some(v) = widening_of(e).filter(|v| names.contains(v)) {
        e.kind = ExprKind::Var(v.clone());
        e.ty = Type::Scalar(ScalarType::F32);
        return;
    }
    fn block(b: &mut Block, names: &[&Ident]) {
        for s in &mut b.stmts {
            match s {
                Stmt::Let { init: Some(i), .. } => unwrap_casts(i, names),
                Stmt::Let { .. } => {}
                Stmt::Expr(x) => unwrap_casts(x, names),
            }
        }
        if let Some(t) = b.tail.as_deref_mut() {
            unwrap_casts(t, names);
        }
    }
    match &mut e.kind {
        ExprKind::Lit(..) | ExprKind::Var(_) | ExprKind::Break => {}
        ExprKind::Unary(_, a, _) | ExprKind::Cast(a, _, _) | ExprKind::Assign(_, _, a, _) => {
            unwrap_casts(a, names)
        }
        ExprKind::Binary(_, a, b, _) => {
            unwrap_casts(a, names);
            unwrap_casts(b, names);
        }
        ExprKind::MethodCall(r, _, args, _) => {
            unwrap_casts(r, names);
            args.iter_mut().for_each(|a| unwrap_casts(a, names));
        }
        ExprKind::If(c, then, els) => {
            unwrap_casts(c, names);
            block(then, names);
            if let Some(x) = els.as_deref_mut() {
                unwrap_casts(x, names);
            }
        }
        ExprKind::Block(b) => block(b, names),
        ExprKind::Tuple(items) => items.iter_mut().for_each(|a| unwrap_casts(a, names)),
        ExprKind::For(_, lo, hi, b, _) => {
            unwrap_casts(lo, names);
            unwrap_casts(hi, names);
            block(b, names);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::codegen::cpu::lanes_apply;
    use crate::fixtures::{compiled, example};
    use crate::plan::CpuPlan;
    use crate::spec::{ExprKind, Type};

    /// matmul_bf16 and attention_bf16 widen both inputs: the CPU body has
    /// no 16-bit value (so SIMD lanes apply) and the default packs both.
    #[test]
    fn mixed_precision_inputs_are_widened_and_packed() {
        for name in ["matmul_bf16", "attention_bf16"] {
            let k = compiled(&example(name));
            assert!(k.widened(0) && k.widened(1), "{name}");
            assert!(!matches!(k.cpu_body().ty, Type::Scalar(t) if t.is_half()));
            assert!(lanes_apply(&k), "{name}");
            let plan = CpuPlan::default_for(&k);
            assert!(
                plan.pack.iter().all(|l| !l.is_empty()),
                "{name}: {:?}",
                plan.pack
            );
        }
        // matmul's A (i, k): packed with k, its contiguous dimension, last.
        let plan = CpuPlan::default_for(&compiled(&example("matmul_bf16")));
        assert_eq!(plan.pack[0], vec![0, 2]);
    }

    /// Not widened: a 16-bit value used as itself (map_half, matvec_f16),
    /// or a parameter whose name a `let` rebinds.
    #[test]
    fn only_pure_widenings_count() {
        for name in ["map_half", "matvec_f16"] {
            let k = compiled(&example(name));
            assert!(!k.widened(0) && !k.widened(1), "{name}");
        }
        let k = compiled(
            "kernel shadow { inp(a: bf16[N], b: bf16[N]), out(c: f32[]), out_view(c: |i| ()), \
             md_hom[N](|a, b| { let a = 2.0bf16; (a as f32) * (b as f32) }, (PW(+))), \
             inp_view(a: |i| (i), b: |i| (i)) }",
        );
        assert!(!k.widened(0) && k.widened(1));
        let ExprKind::Block(_) = &k.cpu_body().kind else {
            panic!("the body stays a block");
        };
    }
}
