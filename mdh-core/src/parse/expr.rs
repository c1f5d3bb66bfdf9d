//! Scalar-function expressions (also the bodies of user-defined operators).

use super::{err, single_ident, tokens_text, unparen};
use crate::spec::parsed::{Block, Expr, ExprKind, Stmt};
use crate::spec::{BinOp, Lit, Method, ScalarType, SpanRange, UnOp};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Ident, Pat};

pub(super) fn unsupported<T: ToTokens>(t: T, what: &str) -> syn::Error {
    let methods: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
    err(
        t,
        format!(
            "unsupported syntax in the scalar function: {what}; the scalar function may use \
             literals, its parameters, params and size parameters, `+ - * / %`, comparisons, \
             `&& || !`, `as` casts to scalar types, tuples, blocks with `let`/`let mut`, \
             assignments, `if`/`else`, `for _ in lo..hi` with `break`, and the methods {}",
            methods.join(", ")
        ),
    )
}

fn no_attrs(attrs: &[syn::Attribute]) -> syn::Result<()> {
    match attrs.first() {
        Some(a) => Err(unsupported(a, "attributes")),
        None => Ok(()),
    }
}

fn scalar_type_of(ty: &syn::Type) -> Option<ScalarType> {
    match ty {
        syn::Type::Paren(p) => scalar_type_of(&p.elem),
        syn::Type::Group(g) => scalar_type_of(&g.elem),
        syn::Type::Path(p) if p.qself.is_none() => p
            .path
            .get_ident()
            .and_then(|id| ScalarType::from_name(&id.to_string())),
        _ => None,
    }
}

fn bad_type(ty: &syn::Type, what: &str) -> syn::Error {
    err(
        ty,
        format!(
            "`{}` is not a scalar type; {what} must be one of f32, f64, f16, bf16, i8, i16, \
             i32, i64, u8, u16, u32, u64, usize or bool",
            tokens_text(ty)
        ),
    )
}

fn int_lit(l: &syn::LitInt) -> syn::Result<Expr> {
    let span = SpanRange::from(l.span());
    let digits = l.base10_digits();
    let (neg, digits) = match digits.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, digits),
    };
    let suffix = l.suffix();
    let ty = if suffix.is_empty() {
        None
    } else {
        match ScalarType::from_name(suffix) {
            Some(ScalarType::Bool) | None => {
                return Err(err(
                    l,
                    format!(
                        "unsupported literal suffix `{suffix}`; use a scalar type such as `1i32`, `1u64` or `1.0f32`"
                    ),
                ))
            }
            Some(t) => Some(t),
        }
    };
    let lit = if ty.is_some_and(ScalarType::is_float) {
        let v: f64 = digits.parse().map_err(|_| {
            err(
                l,
                format!("invalid float literal `{l}`; write it like `1.0f32`"),
            )
        })?;
        Lit::Float(v, ty)
    } else {
        let v: u128 = digits.parse().map_err(|_| {
            err(
                l,
                format!("integer literal `{l}` is too large; use a smaller constant"),
            )
        })?;
        Lit::Int(v, ty)
    };
    let e = Expr::with_range(ExprKind::Lit(lit, ()), span);
    Ok(if neg {
        Expr::with_range(ExprKind::Unary(UnOp::Neg, Box::new(e), ()), span)
    } else {
        e
    })
}

fn float_lit(l: &syn::LitFloat) -> syn::Result<Expr> {
    let span = SpanRange::from(l.span());
    let digits = l.base10_digits();
    let (neg, digits) = match digits.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, digits),
    };
    let ty = match l.suffix() {
        "" => None,
        "f32" => Some(ScalarType::F32),
        "f64" => Some(ScalarType::F64),
        "f16" => Some(ScalarType::F16),
        "bf16" => Some(ScalarType::Bf16),
        s => {
            return Err(err(
                l,
                format!("unsupported float literal suffix `{s}`; use `f32`, `f64`, `f16`, `bf16` or no suffix"),
            ))
        }
    };
    let v: f64 = digits.parse().map_err(|_| {
        err(
            l,
            format!("invalid float literal `{l}`; write it like `1.5` or `1e-3`"),
        )
    })?;
    if !v.is_finite() {
        return Err(err(
            l,
            format!("float literal `{l}` is out of range; use a smaller constant"),
        ));
    }
    let e = Expr::with_range(ExprKind::Lit(Lit::Float(v, ty), ()), span);
    Ok(if neg {
        Expr::with_range(ExprKind::Unary(UnOp::Neg, Box::new(e), ()), span)
    } else {
        e
    })
}

fn bin_op(op: &syn::BinOp) -> Option<(BinOp, bool)> {
    use syn::BinOp as B;
    Some(match op {
        B::Add(_) => (BinOp::Add, false),
        B::Sub(_) => (BinOp::Sub, false),
        B::Mul(_) => (BinOp::Mul, false),
        B::Div(_) => (BinOp::Div, false),
        B::Rem(_) => (BinOp::Rem, false),
        B::Eq(_) => (BinOp::Eq, false),
        B::Ne(_) => (BinOp::Ne, false),
        B::Lt(_) => (BinOp::Lt, false),
        B::Le(_) => (BinOp::Le, false),
        B::Gt(_) => (BinOp::Gt, false),
        B::Ge(_) => (BinOp::Ge, false),
        B::And(_) => (BinOp::And, false),
        B::Or(_) => (BinOp::Or, false),
        B::AddAssign(_) => (BinOp::Add, true),
        B::SubAssign(_) => (BinOp::Sub, true),
        B::MulAssign(_) => (BinOp::Mul, true),
        B::DivAssign(_) => (BinOp::Div, true),
        B::RemAssign(_) => (BinOp::Rem, true),
        _ => return None,
    })
}

fn assign_target(e: &syn::Expr) -> syn::Result<Ident> {
    match single_ident(unparen(e)) {
        Some(id) => Ok(id.clone()),
        None => Err(unsupported(
            e,
            "assignment to something other than a local variable (write `acc += x` with `acc` \
             bound by `let mut`)",
        )),
    }
}

/// Converts a scalar-function expression (also used for operator closures).
pub(super) fn expr(e: &syn::Expr) -> syn::Result<Expr> {
    use syn::Expr as E;
    let kind = match e {
        E::Lit(l) => return lit(e, l),
        E::Paren(p) => {
            no_attrs(&p.attrs)?;
            return expr(&p.expr);
        }
        E::Group(g) => {
            no_attrs(&g.attrs)?;
            return expr(&g.expr);
        }
        E::Path(p) => path(e, p)?,
        E::Unary(u) => unary(e, u)?,
        E::Binary(b) => binary(e, b)?,
        E::Assign(a) => {
            no_attrs(&a.attrs)?;
            let target = assign_target(&a.left)?;
            ExprKind::Assign(target, None, Box::new(expr(&a.right)?), ())
        }
        E::Cast(c) => {
            no_attrs(&c.attrs)?;
            let Some(ty) = scalar_type_of(&c.ty) else {
                return Err(bad_type(&c.ty, "the target of `as`"));
            };
            ExprKind::Cast(Box::new(expr(&c.expr)?), ty, ())
        }
        E::Tuple(t) => {
            no_attrs(&t.attrs)?;
            ExprKind::Tuple(t.elems.iter().map(expr).collect::<syn::Result<Vec<_>>>()?)
        }
        E::Block(b) => {
            no_attrs(&b.attrs)?;
            if let Some(l) = &b.label {
                return Err(unsupported(l, "labeled blocks"));
            }
            ExprKind::Block(block(&b.block)?)
        }
        E::If(i) => if_else(i)?,
        E::ForLoop(f) => for_loop(f)?,
        E::Break(b) => {
            no_attrs(&b.attrs)?;
            if let Some(l) = &b.label {
                return Err(unsupported(l, "labeled `break`"));
            }
            if let Some(v) = &b.expr {
                return Err(unsupported(v, "`break` with a value"));
            }
            ExprKind::Break
        }
        E::MethodCall(m) => method_call(e, m)?,
        _ => return Err(rejected(e)),
    };
    Ok(Expr::with_range(kind, SpanRange::of(e)))
}

fn lit(e: &syn::Expr, l: &syn::ExprLit) -> syn::Result<Expr> {
    no_attrs(&l.attrs)?;
    match &l.lit {
        syn::Lit::Int(i) => int_lit(i),
        syn::Lit::Float(f) => float_lit(f),
        syn::Lit::Bool(b) => Ok(Expr::with_range(
            ExprKind::Lit(Lit::Bool(b.value), ()),
            SpanRange::of(e),
        )),
        syn::Lit::Str(_) | syn::Lit::ByteStr(_) | syn::Lit::CStr(_) => {
            Err(unsupported(e, "string literals"))
        }
        syn::Lit::Char(_) | syn::Lit::Byte(_) => Err(unsupported(e, "character literals")),
        _ => Err(unsupported(e, "this kind of literal")),
    }
}

fn path(e: &syn::Expr, p: &syn::ExprPath) -> syn::Result<ExprKind> {
    no_attrs(&p.attrs)?;
    match single_ident(e) {
        Some(id) => Ok(ExprKind::Var(id.clone())),
        None => Err(unsupported(
            e,
            &format!(
                "the path `{}` (only plain names are allowed; write constants as literals)",
                tokens_text(e)
            ),
        )),
    }
}

fn unary(e: &syn::Expr, u: &syn::ExprUnary) -> syn::Result<ExprKind> {
    no_attrs(&u.attrs)?;
    let op = match u.op {
        syn::UnOp::Neg(_) => UnOp::Neg,
        syn::UnOp::Not(_) => UnOp::Not,
        syn::UnOp::Deref(_) => return Err(unsupported(e, "dereferencing with `*`")),
        _ => return Err(unsupported(e, "this unary operator")),
    };
    Ok(ExprKind::Unary(op, Box::new(expr(&u.expr)?), ()))
}

/// A binary operator, or a compound assignment such as `acc += x`.
fn binary(e: &syn::Expr, b: &syn::ExprBinary) -> syn::Result<ExprKind> {
    no_attrs(&b.attrs)?;
    match bin_op(&b.op) {
        Some((op, false)) => Ok(ExprKind::Binary(
            op,
            Box::new(expr(&b.left)?),
            Box::new(expr(&b.right)?),
            (),
        )),
        Some((op, true)) => {
            let target = assign_target(&b.left)?;
            Ok(ExprKind::Assign(
                target,
                Some(op),
                Box::new(expr(&b.right)?),
                (),
            ))
        }
        None => Err(unsupported(
            e,
            &format!(
                "the operator `{}` (bitwise operators and shifts)",
                tokens_text(&b.op)
            ),
        )),
    }
}

fn if_else(i: &syn::ExprIf) -> syn::Result<ExprKind> {
    no_attrs(&i.attrs)?;
    if let syn::Expr::Let(l) = unparen(&i.cond) {
        return Err(unsupported(l, "`if let`"));
    }
    let cond = expr(&i.cond)?;
    let then = block(&i.then_branch)?;
    let els = match &i.else_branch {
        Some((_, e)) => Some(Box::new(expr(e)?)),
        None => None,
    };
    Ok(ExprKind::If(Box::new(cond), then, els))
}

/// `for v in lo..hi { ... }`: the only loop, over a half-open range.
fn for_loop(f: &syn::ExprForLoop) -> syn::Result<ExprKind> {
    no_attrs(&f.attrs)?;
    if let Some(l) = &f.label {
        return Err(unsupported(l, "loop labels"));
    }
    let var = match &*f.pat {
        Pat::Wild(w) if w.attrs.is_empty() => None,
        Pat::Ident(p)
            if p.attrs.is_empty()
                && p.by_ref.is_none()
                && p.mutability.is_none()
                && p.subpat.is_none() =>
        {
            Some(p.ident.clone())
        }
        other => {
            return Err(unsupported(
                other,
                "this loop pattern (the loop variable must be `_` or a plain name)",
            ))
        }
    };
    let range = match unparen(&f.expr) {
        syn::Expr::Range(r) if r.attrs.is_empty() => r,
        other => {
            return Err(unsupported(
                other,
                "iterating over something other than a range (write `for i in lo..hi`)",
            ))
        }
    };
    if let syn::RangeLimits::Closed(t) = range.limits {
        return Err(unsupported(
            t,
            "inclusive ranges `..=` (write `lo..hi + 1` instead)",
        ));
    }
    let (Some(lo), Some(hi)) = (&range.start, &range.end) else {
        return Err(unsupported(
            range,
            "ranges without both ends (write `for i in lo..hi`)",
        ));
    };
    let lo = expr(lo)?;
    let hi = expr(hi)?;
    let body = block(&f.body)?;
    Ok(ExprKind::For(var, Box::new(lo), Box::new(hi), body, ()))
}

fn method_call(e: &syn::Expr, m: &syn::ExprMethodCall) -> syn::Result<ExprKind> {
    no_attrs(&m.attrs)?;
    if let Some(t) = &m.turbofish {
        return Err(unsupported(t, "turbofish `::<...>` on method calls"));
    }
    let name = m.method.to_string();
    let Some(method) = Method::from_name(&name) else {
        return Err(unsupported(&m.method, &format!("the method `{name}`")));
    };
    if m.args.len() != method.arity() {
        let example = match method.arity() {
            0 => format!("x.{name}()"),
            1 => format!("x.{name}(y)"),
            _ => format!("x.{name}(y, z)"),
        };
        return Err(err(
            e,
            format!(
                "method `{name}` takes {} argument{} but {} {} given; call it as `{example}`",
                method.arity(),
                if method.arity() == 1 { "" } else { "s" },
                m.args.len(),
                if m.args.len() == 1 { "was" } else { "were" },
            ),
        ));
    }
    let recv = expr(&m.receiver)?;
    let args = m.args.iter().map(expr).collect::<syn::Result<Vec<_>>>()?;
    Ok(ExprKind::MethodCall(Box::new(recv), method, args, ()))
}

/// The error for Rust syntax the scalar function does not support.
fn rejected(e: &syn::Expr) -> syn::Error {
    use syn::Expr as E;
    match e {
        E::Call(c) if matches!(unparen(&c.func), E::Closure(_)) => unsupported(
            e,
            "closures (calling a closure written in place; compute the value with `let` instead)",
        ),
        E::Call(_) => unsupported(e, "function calls"),
        E::Macro(_) => unsupported(e, "macros"),
        E::Index(_) => unsupported(e, "indexing with `[...]`"),
        E::Field(_) => unsupported(e, "field access"),
        E::Reference(_) => unsupported(e, "references"),
        E::Closure(_) => unsupported(e, "closures"),
        E::While(_) => unsupported(e, "`while` loops (use `for _ in lo..hi` with `break`)"),
        E::Loop(_) => unsupported(e, "`loop` (use `for _ in lo..hi` with `break`)"),
        E::Return(_) => unsupported(e, "`return`"),
        E::Continue(_) => unsupported(e, "`continue`"),
        E::Match(_) => unsupported(e, "`match` (use `if`/`else`)"),
        E::Try(_) => unsupported(e, "the `?` operator"),
        E::Array(_) | E::Repeat(_) => unsupported(e, "arrays"),
        E::Struct(_) => unsupported(e, "struct literals"),
        E::Range(_) => unsupported(e, "ranges outside `for` loops"),
        E::Let(_) => unsupported(e, "`let` in expression position"),
        E::Unsafe(_) => unsupported(e, "`unsafe` blocks"),
        E::Async(_) | E::Await(_) => unsupported(e, "`async`/`.await`"),
        E::Const(_) => unsupported(e, "`const` blocks"),
        _ => unsupported(e, &format!("`{}`", tokens_text(e))),
    }
}

pub(super) fn block(b: &syn::Block) -> syn::Result<Block> {
    let n = b.stmts.len();
    let mut stmts = Vec::new();
    let mut tail = None;
    for (i, s) in b.stmts.iter().enumerate() {
        match s {
            syn::Stmt::Local(l) => stmts.push(local(l)?),
            syn::Stmt::Expr(e, None) if i + 1 == n => tail = Some(Box::new(expr(e)?)),
            syn::Stmt::Expr(e, _) => stmts.push(Stmt::Expr(expr(e)?)),
            syn::Stmt::Item(it) => {
                return Err(unsupported(
                    it,
                    "items (`fn`, `struct`, `use`, `const`, ...)",
                ))
            }
            syn::Stmt::Macro(m) => return Err(unsupported(m, "macros")),
        }
    }
    Ok(Block {
        stmts,
        tail,
        span: b.brace_token.span.join(),
    })
}

fn local(l: &syn::Local) -> syn::Result<Stmt> {
    no_attrs(&l.attrs)?;
    let (pat, ty) = match &l.pat {
        Pat::Type(t) if t.attrs.is_empty() => match scalar_type_of(&t.ty) {
            Some(ty) => (&*t.pat, Some(ty)),
            None => return Err(bad_type(&t.ty, "the type of a `let` binding")),
        },
        p => (p, None),
    };
    let (name, mutable) = match pat {
        Pat::Ident(p) if p.attrs.is_empty() && p.by_ref.is_none() && p.subpat.is_none() => {
            (p.ident.clone(), p.mutability.is_some())
        }
        other => {
            return Err(unsupported(
                other,
                "this `let` pattern (`let` must bind a plain name, e.g. `let mut acc = 0.0;`)",
            ))
        }
    };
    let init = match &l.init {
        Some(init) => {
            if let Some((else_tok, _)) = &init.diverge {
                return Err(unsupported(else_tok, "`let ... else`"));
            }
            Some(expr(&init.expr)?)
        }
        None => None,
    };
    Ok(Stmt::Let {
        name,
        mutable,
        ty,
        init,
        span: l.span(),
        range: SpanRange::of(l),
        var_ty: (),
    })
}
