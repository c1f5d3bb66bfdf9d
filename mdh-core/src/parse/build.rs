//! Phase 2: the clauses converted into the data model, errors combined.

use super::affine::index_fn;
use super::closure::{check_distinct, closure_params_range, plain_closure, plain_param};
use super::expr::expr;
use super::syntax::{
    ClauseKind, RawBody, RawBuf, RawClause, RawKernel, RawOp, RawParam, RawReduce, TYPE_LIST,
};
use super::{err, single_ident, tokens_text};
use crate::diagnostics::Diagnostics;
use crate::spec::parsed::{Closure2, CombineOp, Kernel, ReduceOp, ScalarFn};
use crate::spec::{BufferDecl, Dim, ParamDecl, ScalarType, SizeExpr, SpanRange, View};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{ExprClosure, Ident, Pat};

pub(super) fn build(raw: RawKernel, source: String) -> syn::Result<Kernel> {
    let mut errs = Diagnostics::default();
    let name = raw.name;
    let [inp, out, params, out_view, md_hom, inp_view] =
        clause_slots(raw.clauses, &name, &mut errs);

    // Buffers, params and md_hom sizes.
    let inputs = buffer_list(inp, &mut errs);
    let outputs = buffer_list(out, &mut errs);
    let param_decls = param_list(params, &mut errs);
    let mut md = None;
    let mut md_hom_span = name.span();
    let mut dims = Vec::new();
    if let Some(RawClause {
        name: kw,
        body: RawBody::MdHom(m),
        ..
    }) = md_hom
    {
        md_hom_span = kw.span();
        for e in &m.sizes {
            if let Some(size) = errs.take(size_expr(e)) {
                dims.push(Dim {
                    size,
                    span: e.span(),
                });
            }
        }
        md = Some(m);
    }
    let sizes_ok = errs.is_empty();
    let mut size_params: Vec<Ident> = Vec::new();
    for s in inputs
        .iter()
        .chain(outputs.iter())
        .flat_map(|b| b.shape.iter())
        .chain(dims.iter().map(|d| &d.size))
    {
        collect_size_params(s, &mut size_params);
    }

    // Views (only when the size parameters are known, to avoid follow-up errors).
    let param_names: Vec<Ident> = param_decls.iter().map(|p| p.name.clone()).collect();
    let (inp_view, out_view) = if sizes_ok {
        (
            view_list(inp_view, &size_params, &param_names, &mut errs),
            view_list(out_view, &size_params, &param_names, &mut errs),
        )
    } else {
        (Vec::new(), Vec::new())
    };

    // Scalar function and operators.
    let mut scalar_fn = None;
    let mut ops = Vec::new();
    let mut ops_span = md_hom_span;
    if let Some(m) = md {
        scalar_fn = errs.take(scalar_fn_of(&m.scalar));
        ops_span = m.ops_span;
        for op in m.ops {
            if let Some(op) = errs.take(combine_op(op)) {
                ops.push(op);
            }
        }
    }

    errs.finish()?;
    let Some(scalar_fn) = scalar_fn else {
        return Err(syn::Error::new(
            name.span(),
            format!("kernel `{name}` has no `md_hom` clause; add one, e.g. `md_hom[I, K](|m, x| m * x, (CC, PW(+)))`"),
        ));
    };
    Ok(Kernel {
        attrs: raw.attrs,
        vis: raw.vis,
        name,
        inputs,
        outputs,
        params: param_decls,
        size_params,
        dims,
        scalar_fn,
        ops,
        ops_span,
        md_hom_span,
        inp_view,
        out_view,
        source,
    })
}

/// The clauses in the order of [`ClauseKind::index`]; duplicates and missing
/// required clauses are reported.
fn clause_slots(
    clauses: Vec<RawClause>,
    name: &Ident,
    errs: &mut Diagnostics,
) -> [Option<RawClause>; 6] {
    let mut slots: [Option<RawClause>; 6] = Default::default();
    for c in clauses {
        let i = c.kind.index();
        match slots.get_mut(i) {
            Some(slot @ None) => *slot = Some(c),
            _ => errs.push(syn::Error::new(
                c.name.span(),
                format!(
                    "duplicate `{}` clause; each clause may appear only once, so merge the two",
                    c.kind.name()
                ),
            )),
        }
    }
    let [_, out, _, out_view, md_hom, _] = &slots;
    for (slot, kind, example) in [
        (out, ClauseKind::Out, "out(w: f32[I])"),
        (out_view, ClauseKind::OutView, "out_view(w: |i, k| (i))"),
        (
            md_hom,
            ClauseKind::MdHom,
            "md_hom[I, K](|m, x| m * x, (CC, PW(+)))",
        ),
    ] {
        if slot.is_none() {
            errs.push(syn::Error::new(
                name.span(),
                format!(
                    "kernel `{name}` has no `{}` clause; add one, e.g. `{example}`",
                    kind.name()
                ),
            ));
        }
    }
    slots
}

fn buffer_list(c: Option<RawClause>, errs: &mut Diagnostics) -> Vec<BufferDecl> {
    let mut v = Vec::new();
    if let Some(RawClause {
        body: RawBody::Bufs(list),
        ..
    }) = c
    {
        for b in list {
            if let Some(d) = errs.take(buffer_decl(b)) {
                v.push(d);
            }
        }
    }
    v
}

fn param_list(c: Option<RawClause>, errs: &mut Diagnostics) -> Vec<ParamDecl> {
    let mut v = Vec::new();
    if let Some(RawClause {
        body: RawBody::Params(list),
        ..
    }) = c
    {
        for p in list {
            if let Some(d) = errs.take(param_decl(p)) {
                v.push(d);
            }
        }
    }
    v
}

fn view_list(
    c: Option<RawClause>,
    size_params: &[Ident],
    param_names: &[Ident],
    errs: &mut Diagnostics,
) -> Vec<View> {
    let mut v = Vec::new();
    if let Some(RawClause {
        body: RawBody::Views(list),
        ..
    }) = c
    {
        for rv in list {
            let mut accesses = Vec::new();
            for f in &rv.fns {
                if let Some(a) = errs.take(index_fn(f, size_params, param_names)) {
                    accesses.push(a);
                }
            }
            v.push(View {
                buffer: rv.buffer,
                accesses,
            });
        }
    }
    v
}

pub(super) fn buffer_decl(b: RawBuf) -> syn::Result<BufferDecl> {
    let ty_name = b.ty.to_string();
    let ty = match ScalarType::from_name(&ty_name) {
        Some(ScalarType::Usize) => {
            return Err(syn::Error::new(
                b.ty.span(),
                format!(
                    "`usize` is not a buffer element type; use one of {TYPE_LIST} for buffer `{}`",
                    b.name
                ),
            ))
        }
        Some(t) => t,
        None => {
            return Err(syn::Error::new(
                b.ty.span(),
                format!(
                    "unknown element type `{ty_name}` of buffer `{}`; use one of {TYPE_LIST}",
                    b.name
                ),
            ))
        }
    };
    let mut errs = Diagnostics::default();
    let mut shape = Vec::new();
    for e in &b.shape {
        if let Some(s) = errs.take(size_expr(e)) {
            shape.push(s);
        }
    }
    errs.finish()?;
    let span = b.name.span();
    Ok(BufferDecl {
        name: b.name,
        ty,
        ty_span: b.ty.span(),
        shape,
        span,
    })
}

pub(super) fn param_decl(p: RawParam) -> syn::Result<ParamDecl> {
    let ty_name = p.ty.to_string();
    match ScalarType::from_name(&ty_name) {
        Some(ScalarType::Usize) => Err(syn::Error::new(
            p.ty.span(),
            format!(
                "`usize` is not a param type (size parameters are already usable as `usize` \
                 values); give param `{}` one of the types {TYPE_LIST}",
                p.name
            ),
        )),
        Some(ty) => Ok(ParamDecl {
            name: p.name,
            ty,
            ty_span: p.ty.span(),
        }),
        None => Err(syn::Error::new(
            p.ty.span(),
            format!(
                "unknown type `{ty_name}` of param `{}`; use one of {TYPE_LIST}",
                p.name
            ),
        )),
    }
}

fn size_expr(e: &syn::Expr) -> syn::Result<SizeExpr> {
    let unsupported = || {
        err(
            e,
            format!(
                "unsupported size expression `{}`; sizes are integer literals and size parameters \
                 combined with `+`, `-`, `*` and parentheses, e.g. `P + R - 1`",
                tokens_text(e)
            ),
        )
    };
    match e {
        syn::Expr::Paren(p) if p.attrs.is_empty() => size_expr(&p.expr),
        syn::Expr::Group(g) if g.attrs.is_empty() => size_expr(&g.expr),
        syn::Expr::Lit(syn::ExprLit {
            attrs,
            lit: syn::Lit::Int(l),
        }) if attrs.is_empty() => {
            if !matches!(l.suffix(), "" | "usize") {
                return Err(err(
                    l,
                    format!(
                        "size literal `{l}` has a suffix; sizes are `usize`, so write it without a suffix"
                    ),
                ));
            }
            let v = l.base10_parse::<u64>().map_err(|_| {
                err(
                    l,
                    format!("size literal `{l}` is too large; sizes must fit in 64 bits"),
                )
            })?;
            Ok(SizeExpr::Const(v, l.span()))
        }
        syn::Expr::Path(_) => match single_ident(e) {
            Some(id) if !matches!(id.to_string().as_str(), "self" | "Self" | "super" | "crate") => {
                Ok(SizeExpr::Param(id.clone()))
            }
            _ => Err(unsupported()),
        },
        syn::Expr::Binary(b) if b.attrs.is_empty() => {
            let l = Box::new(size_expr(&b.left)?);
            let r = Box::new(size_expr(&b.right)?);
            match b.op {
                syn::BinOp::Add(_) => Ok(SizeExpr::Add(l, r)),
                syn::BinOp::Sub(_) => Ok(SizeExpr::Sub(l, r)),
                syn::BinOp::Mul(_) => Ok(SizeExpr::Mul(l, r)),
                _ => Err(unsupported()),
            }
        }
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => Err(err(
            e,
            format!(
                "negative size expression `{}`; sizes are non-negative, so use `+`, `-` and `*` \
                 between terms, e.g. `P + R - 1`",
                tokens_text(e)
            ),
        )),
        _ => Err(unsupported()),
    }
}

pub(super) fn collect_size_params(s: &SizeExpr, out: &mut Vec<Ident>) {
    match s {
        SizeExpr::Const(..) => {}
        SizeExpr::Param(id) => {
            if !out.iter().any(|x| x == id) {
                out.push(id.clone());
            }
        }
        SizeExpr::Add(a, b) | SizeExpr::Sub(a, b) | SizeExpr::Mul(a, b) => {
            collect_size_params(a, out);
            collect_size_params(b, out);
        }
    }
}

fn scalar_fn_of(c: &ExprClosure) -> syn::Result<ScalarFn> {
    plain_closure(c, "the scalar function", "|m, x| m * x")?;
    let mut unused = 0;
    let mut index_params = None;
    let mut index_pattern_range = None;
    let mut params = Vec::new();
    for (i, p) in c.inputs.iter().enumerate() {
        match p {
            Pat::Slice(s) if s.attrs.is_empty() => {
                if i != 0 {
                    return Err(err(
                        s,
                        "the index pattern `[y, x]` must be the first parameter of the scalar \
                         function; move it to the front",
                    ));
                }
                let mut names = Vec::new();
                for e in &s.elems {
                    names.push(plain_param(e, &mut unused, "index pattern")?);
                }
                index_params = Some(names);
                index_pattern_range = Some(SpanRange::of(s));
            }
            _ => params.push(plain_param(p, &mut unused, "scalar function")?),
        }
    }
    let mut all: Vec<Ident> = index_params.clone().unwrap_or_default();
    all.extend(params.iter().cloned());
    check_distinct(&all, "scalar function")?;
    let body = expr(&c.body)?;
    Ok(ScalarFn {
        index_params,
        params,
        body,
        span: c.span(),
        params_range: closure_params_range(c),
        index_pattern_range,
    })
}

fn combine_op(op: RawOp) -> syn::Result<CombineOp> {
    match op {
        RawOp::Cc(s) => Ok(CombineOp::Cc(s)),
        RawOp::Pw(ops, s, id) | RawOp::Ps(ops, s, id) => {
            if ops.is_empty() {
                return Err(syn::Error::new(
                    id.span(),
                    format!(
                        "`{id}()` has no operator; write one, e.g. `{id}(+)`, or one per output, e.g. `{id}(+, max)`"
                    ),
                ));
            }
            let mut out = Vec::new();
            for r in ops {
                out.push(match r {
                    RawReduce::Builtin(b, sp) => ReduceOp::Builtin(b, sp),
                    RawReduce::Closure(c) => ReduceOp::Closure(closure2(&c)?),
                });
            }
            Ok(if id == "PW" {
                CombineOp::Pw(out, s)
            } else {
                CombineOp::Ps(out, s)
            })
        }
    }
}

fn closure2(c: &ExprClosure) -> syn::Result<Closure2> {
    plain_closure(c, "combine operators", "|a, b| a + b")?;
    if c.inputs.len() != 2 {
        return Err(err(
            c,
            format!(
                "a combine operator closure takes exactly two parameters, found {}; write it as `|a, b| expr`",
                c.inputs.len()
            ),
        ));
    }
    let mut unused = 0;
    let mut names = Vec::new();
    for p in &c.inputs {
        names.push(plain_param(p, &mut unused, "combine operator")?);
    }
    check_distinct(&names, "combine operator")?;
    let body = expr(&c.body)?;
    let text: String = c
        .to_token_stream()
        .to_string()
        .chars()
        .filter(|ch| !ch.is_whitespace())
        .collect();
    let mut it = names.into_iter();
    let (Some(lhs), Some(rhs)) = (it.next(), it.next()) else {
        return Err(err(
            c,
            "a combine operator closure takes exactly two parameters; write it as `|a, b| expr`",
        ));
    };
    Ok(Closure2 {
        lhs,
        rhs,
        body,
        text,
        span: c.span(),
        range: SpanRange::of(c),
        params_range: closure_params_range(c),
    })
}
