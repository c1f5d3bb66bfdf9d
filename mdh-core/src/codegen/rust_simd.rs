//! Emission of checked scalar-function expressions as lane-wise vector code
//! (`mdh::__rt::V<T, N>`, one lane per point of the SIMD dimension).
//!
//! Only pure expressions are vectorized: no loops, `break`, assignment or
//! mutable bindings, and no integer division under an `if` (both branches of
//! a vectorized `if` are evaluated, which must not trap where the scalar code
//! would not); and no value of a 16-bit float type (`V` has no lanes of
//! `f16` or `bf16`). Other kernels use the scalar register tile.

use proc_macro2::TokenStream;
use quote::quote;

use crate::codegen::rust_expr::{self, ty};
use crate::spec::{BinOp, Block, Expr, ExprKind, Lit, Method, ScalarType, Stmt, Type, UnOp};

/// Whether `e` can be evaluated lane-wise.
pub fn vectorizable(e: &Expr) -> bool {
    let is_if = |x: &Expr| matches!(x.kind, ExprKind::If(..));
    let is_int_div = |x: &Expr| match &x.kind {
        ExprKind::Binary(BinOp::Div | BinOp::Rem, _, _, t) => !t.is_float(),
        _ => false,
    };
    let is_half = |x: &Expr| match &x.ty {
        Type::Scalar(t) => t.is_half(),
        Type::Tuple(ts) => ts.iter().any(|t| t.is_half()),
        Type::Unit | Type::Never => false,
    };
    pure(e) && !(e.any(&is_if) && e.any(&is_int_div)) && !e.any(&is_half)
}

/// No loops, `break`, assignments or mutable or deferred bindings; every
/// block has a value.
fn pure(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_, _) | ExprKind::Var(_) => true,
        ExprKind::Unary(_, a, _) | ExprKind::Cast(a, _, _) => pure(a),
        ExprKind::Binary(_, a, b, _) => pure(a) && pure(b),
        ExprKind::MethodCall(r, _, args, _) => pure(r) && args.iter().all(pure),
        ExprKind::If(c, then, els) => {
            pure(c) && pure_block(then) && els.as_deref().is_some_and(pure)
        }
        ExprKind::Block(b) => pure_block(b),
        ExprKind::Tuple(items) => items.iter().all(pure),
        ExprKind::Assign(..) | ExprKind::For(..) | ExprKind::Break => false,
    }
}

fn pure_block(b: &Block) -> bool {
    let lets = b.stmts.iter().all(|s| match s {
        Stmt::Let {
            mutable: false,
            init: Some(i),
            ..
        } => pure(i),
        _ => false,
    });
    lets && b.tail.as_deref().is_some_and(pure)
}

/// The vector type of `t` with `n` lanes.
pub fn vty(t: ScalarType, n: usize) -> TokenStream {
    let t = ty(t);
    quote!(::mdh::__rt::V<#t, #n>)
}

/// `x` broadcast to all lanes.
pub fn splat(x: TokenStream, t: ScalarType, n: usize) -> TokenStream {
    let v = vty(t, n);
    quote!(<#v>::splat(#x))
}

/// Whether a lane of method `m` is a sequence of many instructions (a
/// polynomial, `V::exp`, or a call of the C library per lane), not one or
/// two.
pub fn long_lane(m: Method) -> bool {
    matches!(
        m,
        Method::Exp
            | Method::Ln
            | Method::Powi
            | Method::Powf
            | Method::Sin
            | Method::Cos
            | Method::Tanh
    )
}

/// The lane-wise evaluation of a vectorizable expression with `n` lanes.
pub fn expr(e: &Expr, n: usize) -> TokenStream {
    match &e.kind {
        ExprKind::Lit(Lit::Bool(b), _) => splat(quote!(#b), ScalarType::Bool, n),
        ExprKind::Lit(_, t) => splat(rust_expr::expr(e), *t, n),
        ExprKind::Var(id) => quote!(#id),
        ExprKind::Unary(UnOp::Not, a, _) => {
            let a = expr(a, n);
            quote!((!#a))
        }
        ExprKind::Unary(UnOp::Neg, a, _) => {
            let a = expr(a, n);
            quote!((-#a))
        }
        ExprKind::Binary(op, a, b, _) => {
            let (x, y) = (expr(a, n), expr(b, n));
            match op {
                BinOp::Add => quote!((#x + #y)),
                BinOp::Sub => quote!((#x - #y)),
                BinOp::Mul => quote!((#x * #y)),
                BinOp::Div => quote!((#x / #y)),
                BinOp::Rem => quote!((#x % #y)),
                BinOp::Eq => quote!((#x).eq(#y)),
                BinOp::Ne => quote!((#x).ne(#y)),
                BinOp::Lt => quote!((#x).lt(#y)),
                BinOp::Le => quote!((#x).le(#y)),
                BinOp::Gt => quote!((#x).gt(#y)),
                BinOp::Ge => quote!((#x).ge(#y)),
                BinOp::And => quote!((#x).and(#y)),
                BinOp::Or => quote!((#x).or(#y)),
            }
        }
        ExprKind::Cast(a, t, _) => {
            let a = expr(a, n);
            let t = ty(*t);
            quote!((#a).cast::<ISA, #t>())
        }
        ExprKind::MethodCall(r, m, args, _) => {
            let r = expr(r, n);
            let args = args.iter().map(|a| expr(a, n));
            // Fused where the instruction set has FMA (`ISA` is the task
            // body's const parameter): the multiply-add itself, and those
            // of the vector `exp`.
            match m {
                Method::MulAdd => return quote!((#r).fma::<ISA>(#(#args),*)),
                Method::Exp => return quote!((#r).exp::<ISA>()),
                _ => {}
            }
            let name = quote::format_ident!("{}", m.name());
            quote!((#r).#name(#(#args),*))
        }
        ExprKind::If(c, then, els) => {
            let c = expr(c, n);
            let then = block(then, n);
            let els = els.as_ref().map(|x| expr(x, n)).unwrap_or_default();
            match &e.ty {
                Type::Tuple(ts) => {
                    let (a, b): (Vec<_>, Vec<_>) = (0..ts.len())
                        .map(|i| {
                            (
                                quote::format_ident!("__ta{}", i),
                                quote::format_ident!("__tb{}", i),
                            )
                        })
                        .unzip();
                    quote!({
                        let __m = #c;
                        let (#(#a,)*) = #then;
                        let (#(#b,)*) = #els;
                        (#(::mdh::__rt::V::select(__m, #a, #b),)*)
                    })
                }
                _ => quote!(::mdh::__rt::V::select(#c, #then, #els)),
            }
        }
        ExprKind::Block(b) => block(b, n),
        ExprKind::Tuple(items) => {
            let items = items.iter().map(|x| expr(x, n));
            quote!((#(#items,)*))
        }
        // Not vectorizable: callers check `vectorizable` first.
        ExprKind::Assign(..) | ExprKind::For(..) | ExprKind::Break => {
            quote!(::core::unreachable!())
        }
    }
}

fn block(b: &Block, n: usize) -> TokenStream {
    let stmts = b.stmts.iter().map(|s| match s {
        Stmt::Let {
            name,
            init: Some(i),
            ..
        } => {
            let i = expr(i, n);
            quote!(let #name = #i;)
        }
        _ => quote!(),
    });
    let tail = b.tail.as_ref().map(|t| expr(t, n));
    quote!({ #(#stmts)* #tail })
}
