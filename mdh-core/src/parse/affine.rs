//! Index functions: closures whose components are affine in the md_hom
//! indices, the size parameters and the params.

use super::closure::{check_distinct, closure_params_range, plain_closure, plain_param};
use super::{err, single_ident, tokens_text};
use crate::diagnostics::Diagnostics;
use crate::spec::{Affine, IndexFn, ScalarType, SpanRange};
use syn::spanned::Spanned;
use syn::{ExprClosure, Ident};

pub(super) fn index_fn(
    c: &ExprClosure,
    size_params: &[Ident],
    kernel_params: &[Ident],
) -> syn::Result<IndexFn> {
    plain_closure(c, "index functions", "|i, k| (i, k)")?;
    let mut unused = 0;
    let mut params = Vec::new();
    for p in &c.inputs {
        params.push(plain_param(p, &mut unused, "index function")?);
    }
    check_distinct(&params, "index function")?;
    let body = unparen_group(&c.body);
    let comps: Vec<&syn::Expr> = match body {
        syn::Expr::Tuple(t) if t.attrs.is_empty() => t.elems.iter().collect(),
        syn::Expr::Paren(p) if p.attrs.is_empty() => vec![&*p.expr],
        other => vec![other],
    };
    let mut errs = Diagnostics::default();
    let mut components = Vec::new();
    let mut component_spans = Vec::new();
    let mut component_ranges = Vec::new();
    let names = Names {
        params: &params,
        size_params,
        kernel_params,
    };
    for e in comps {
        if let Some(a) = errs.take(affine(e, &names)) {
            components.push(a);
            component_spans.push(e.span());
            component_ranges.push(SpanRange::of(e));
        }
    }
    errs.finish()?;
    Ok(IndexFn {
        params,
        components,
        component_spans,
        span: c.span(),
        range: SpanRange::of(c),
        params_range: closure_params_range(c),
        body_range: SpanRange::of(&c.body),
        component_ranges,
    })
}

/// The names an index expression may mention, and the params it may not.
struct Names<'a> {
    /// The index function's parameters (one per md_hom dimension).
    params: &'a [Ident],
    size_params: &'a [Ident],
    /// The kernel's `params(...)`: not allowed in index functions.
    kernel_params: &'a [Ident],
}

fn unparen_group(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Group(g) if g.attrs.is_empty() => unparen_group(&g.expr),
        _ => e,
    }
}

fn non_affine(e: &syn::Expr) -> syn::Error {
    err(
        e,
        format!(
            "non-affine index expression `{}`; index expressions must be affine (sums of \
             dimensions and size parameters times integer constants), e.g. `2 * p + r` or `K - 1 - k`",
            tokens_text(e)
        ),
    )
}

fn affine(e: &syn::Expr, names: &Names) -> syn::Result<Affine> {
    let (params, size_params) = (names.params, names.size_params);
    let overflow = || {
        err(
            e,
            format!(
                "index expression `{}` overflows 64-bit integers; use smaller constants",
                tokens_text(e)
            ),
        )
    };
    let zero = || Affine {
        dims: vec![0; params.len()],
        sizes: vec![0; size_params.len()],
        constant: 0,
    };
    match e {
        syn::Expr::Paren(p) if p.attrs.is_empty() => affine(&p.expr, names),
        syn::Expr::Group(g) if g.attrs.is_empty() => affine(&g.expr, names),
        syn::Expr::Lit(syn::ExprLit {
            attrs,
            lit: syn::Lit::Int(l),
        }) if attrs.is_empty() => {
            let suffix_ok = match l.suffix() {
                "" => true,
                s => ScalarType::from_name(s).is_some_and(|t| t.is_int()),
            };
            if !suffix_ok {
                return Err(non_affine(e));
            }
            let v = l.base10_parse::<i64>().map_err(|_| {
                err(
                    l,
                    format!("integer literal `{l}` in an index expression does not fit in 64 bits; use a smaller constant"),
                )
            })?;
            Ok(Affine {
                constant: v,
                ..zero()
            })
        }
        syn::Expr::Path(_) => {
            let Some(id) = single_ident(e) else {
                return Err(non_affine(e));
            };
            let mut a = zero();
            if let Some(p) = params.iter().position(|p| p == id) {
                a.dims[p] = 1;
            } else if let Some(s) = size_params.iter().position(|s| s == id) {
                a.sizes[s] = 1;
            } else if names.kernel_params.iter().any(|p| p == id) {
                return Err(syn::Error::new(
                    id.span(),
                    format!(
                        "`{id}` is a param, and params cannot be used in index functions; an \
                         index function may use only the closure's parameters ({}) and size \
                         parameters ({}), so use `{id}` in the scalar function instead",
                        name_list(params),
                        name_list(size_params),
                    ),
                ));
            } else {
                return Err(syn::Error::new(
                    id.span(),
                    format!(
                        "unknown name `{id}` in index function; use one of the closure's \
                         parameters ({}) or a size parameter ({})",
                        name_list(params),
                        name_list(size_params),
                    ),
                ));
            }
            Ok(a)
        }
        syn::Expr::Unary(u) if u.attrs.is_empty() && matches!(u.op, syn::UnOp::Neg(_)) => {
            let a = affine(&u.expr, names)?;
            scale(&a, -1).ok_or_else(overflow)
        }
        syn::Expr::Binary(b) if b.attrs.is_empty() => {
            let (l, r) = match b.op {
                syn::BinOp::Add(_) | syn::BinOp::Sub(_) | syn::BinOp::Mul(_) => {
                    (affine(&b.left, names)?, affine(&b.right, names)?)
                }
                _ => return Err(non_affine(e)),
            };
            match b.op {
                syn::BinOp::Add(_) => add(&l, &r, 1).ok_or_else(overflow),
                syn::BinOp::Sub(_) => add(&l, &r, -1).ok_or_else(overflow),
                _ => {
                    if is_const(&l) {
                        scale(&r, l.constant).ok_or_else(overflow)
                    } else if is_const(&r) {
                        scale(&l, r.constant).ok_or_else(overflow)
                    } else {
                        Err(non_affine(e))
                    }
                }
            }
        }
        _ => Err(non_affine(e)),
    }
}

fn name_list(ids: &[Ident]) -> String {
    let v: Vec<String> = ids
        .iter()
        .filter(|i| !i.to_string().starts_with("__unused"))
        .map(|i| format!("`{i}`"))
        .collect();
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

fn is_const(a: &Affine) -> bool {
    a.dims.iter().chain(a.sizes.iter()).all(|&c| c == 0)
}

fn scale(a: &Affine, k: i64) -> Option<Affine> {
    let f = |v: &Vec<i64>| {
        v.iter()
            .map(|&c| c.checked_mul(k))
            .collect::<Option<Vec<_>>>()
    };
    Some(Affine {
        dims: f(&a.dims)?,
        sizes: f(&a.sizes)?,
        constant: a.constant.checked_mul(k)?,
    })
}

/// `a + sign * b`
fn add(a: &Affine, b: &Affine, sign: i64) -> Option<Affine> {
    let f = |x: &Vec<i64>, y: &Vec<i64>| {
        x.iter()
            .zip(y.iter())
            .map(|(&p, &q)| q.checked_mul(sign).and_then(|q| p.checked_add(q)))
            .collect::<Option<Vec<_>>>()
    };
    Some(Affine {
        dims: f(&a.dims, &b.dims)?,
        sizes: f(&a.sizes, &b.sizes)?,
        constant: b
            .constant
            .checked_mul(sign)
            .and_then(|q| a.constant.checked_add(q))?,
    })
}
