//! Parser: `mdh!` tokens → [`spec::Kernel`](crate::spec::Kernel).
//!
//! The grammar is DESIGN.md §1:
//!
//! ```text
//! DOC* VIS? kernel NAME { CLAUSE, ... }
//! ```
//!
//! with the clauses `inp(...)`, `out(...)`, `params(...)`, `out_view(...)`,
//! `md_hom[...](...)` and `inp_view(...)` in any order, each at most once
//! (`out`, `out_view` and `md_hom` are required).
//!
//! Parsing runs in two phases: first the token structure of every clause is
//! parsed into syntax trees (syntax errors stop there, first error wins), then
//! the clauses are converted into the data model in a fixed order (buffer
//! declarations and `md_hom` sizes first, since they define the size
//! parameters that index functions may use). Errors of the second phase are
//! combined, so one compilation reports every independent problem.
//!
//! Conventions the rest of the compiler can rely on:
//!
//! - A `_` parameter of a closure (index function, scalar function, slice
//!   pattern of the scalar function, or user-defined operator) is stored as
//!   the identifier `__unused<N>`, `N` counting the `_` parameters of that
//!   closure from 0. No expression can refer to it.
//! - Type annotations on closure parameters and return types are rejected:
//!   the types come from the buffer and param declarations.
//! - Only `///` doc comments (`#[doc = ...]` attributes) may precede `kernel`.
//! - `Affine::dims` has one entry per closure parameter (by position), and
//!   `Affine::sizes` one entry per size parameter; the checker compares the
//!   closure's arity with the number of md_hom dimensions.

use crate::spec::{
    Affine, BinOp, Block, BufferDecl, BuiltinOp, Closure2, CombineOp, Dim, Expr, ExprKind, IndexFn,
    Kernel, Lit, Method, ParamDecl, ReduceOp, ScalarFn, ScalarType, SizeExpr, SpanRange, Stmt,
    UnOp, View,
};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{token, ExprClosure, Ident, Pat, Token};

/// Parses the tokens of one `mdh!` invocation into a [`Kernel`].
///
/// Never panics; every error carries the span of the offending tokens.
/// `Kernel::source` is `tokens.to_string()`, and re-parsing that string (e.g.
/// with [`crate::compile_str`]) yields the same kernel.
pub fn parse_kernel(tokens: TokenStream) -> syn::Result<Kernel> {
    let source = tokens.to_string();
    let raw = parse_raw.parse2(tokens)?;
    build(raw, source)
}

// ----------------------------------------------------------------------------
// Phase 1: syntax.

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ClauseKind {
    Inp,
    Out,
    Params,
    OutView,
    MdHom,
    InpView,
}

impl ClauseKind {
    const ALL: [ClauseKind; 6] = [
        ClauseKind::Inp,
        ClauseKind::Out,
        ClauseKind::Params,
        ClauseKind::OutView,
        ClauseKind::MdHom,
        ClauseKind::InpView,
    ];

    fn name(self) -> &'static str {
        match self {
            ClauseKind::Inp => "inp",
            ClauseKind::Out => "out",
            ClauseKind::Params => "params",
            ClauseKind::OutView => "out_view",
            ClauseKind::MdHom => "md_hom",
            ClauseKind::InpView => "inp_view",
        }
    }

    fn index(self) -> usize {
        match self {
            ClauseKind::Inp => 0,
            ClauseKind::Out => 1,
            ClauseKind::Params => 2,
            ClauseKind::OutView => 3,
            ClauseKind::MdHom => 4,
            ClauseKind::InpView => 5,
        }
    }

    fn from_name(s: &str) -> Option<ClauseKind> {
        ClauseKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// Levenshtein distance between two short strings.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// The clause whose name is closest to a misspelled `name`, if any is close
/// (edit distance at most 2, or at most a third of the name; or a prefix).
fn closest_clause(name: &str) -> Option<ClauseKind> {
    let lower = name.to_lowercase();
    ClauseKind::ALL
        .into_iter()
        .map(|k| {
            let d = edit_distance(&lower, k.name());
            let prefix = lower.starts_with(k.name()) || k.name().starts_with(lower.as_str());
            (k, d, prefix)
        })
        .filter(|&(_, d, prefix)| d <= 2.max(name.len() / 3) || prefix)
        .min_by_key(|&(_, d, prefix)| (d, !prefix))
        .map(|(k, _, _)| k)
}

const CLAUSE_LIST: &str = "`inp(...)`, `out(...)`, `params(...)`, `out_view(...)`, \
                           `md_hom[...](...)` and `inp_view(...)`";

const TYPE_LIST: &str = "f32, f64, i8, i16, i32, i64, u8, u16, u32, u64 or bool";

struct RawBuf {
    name: Ident,
    ty: Ident,
    shape: Vec<syn::Expr>,
}

struct RawParam {
    name: Ident,
    ty: Ident,
}

struct RawView {
    buffer: Ident,
    fns: Vec<ExprClosure>,
}

enum RawReduce {
    Builtin(BuiltinOp, Span),
    Closure(ExprClosure),
}

enum RawOp {
    Cc(Span),
    Pw(Vec<RawReduce>, Span, Ident),
    Ps(Vec<RawReduce>, Span, Ident),
}

struct RawMdHom {
    sizes: Vec<syn::Expr>,
    scalar: ExprClosure,
    ops: Vec<RawOp>,
    ops_span: Span,
}

enum RawBody {
    Bufs(Vec<RawBuf>),
    Params(Vec<RawParam>),
    Views(Vec<RawView>),
    MdHom(Box<RawMdHom>),
}

struct RawClause {
    kind: ClauseKind,
    name: Ident,
    body: RawBody,
}

struct RawKernel {
    attrs: Vec<TokenStream>,
    vis: TokenStream,
    name: Ident,
    clauses: Vec<RawClause>,
}

fn err<T: ToTokens>(tokens: T, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new_spanned(tokens, msg)
}

fn tokens_text<T: ToTokens>(t: &T) -> String {
    t.to_token_stream().to_string()
}

fn parse_raw(input: ParseStream) -> syn::Result<RawKernel> {
    let attrs = input.call(syn::Attribute::parse_outer)?;
    for a in &attrs {
        if !a.path().is_ident("doc") {
            return Err(err(
                a,
                "only doc comments (`///`) may precede `kernel`; remove this attribute",
            ));
        }
    }
    let vis: syn::Visibility = input.parse()?;
    if !input.peek(Ident::peek_any) {
        return Err(input.error(
            "expected `kernel NAME { ... }`: an mdh! invocation holds `kernel`, the kernel's name \
             and a braced list of clauses",
        ));
    }
    let kw = input.call(Ident::parse_any)?;
    if kw != "kernel" {
        return Err(syn::Error::new(
            kw.span(),
            format!("expected `kernel`, found `{kw}`; write `kernel NAME {{ ... }}`"),
        ));
    }
    if !input.peek(Ident) {
        if input.peek(Ident::peek_any) {
            let k = input.call(Ident::parse_any)?;
            return Err(syn::Error::new(
                k.span(),
                format!("`{k}` is a Rust keyword and cannot name a kernel; choose another name"),
            ));
        }
        return Err(
            input.error("expected the kernel's name after `kernel`, e.g. `kernel matvec { ... }`")
        );
    }
    let name: Ident = input.parse()?;
    if !input.peek(token::Brace) {
        return Err(input.error(format!(
            "expected `{{` after `kernel {name}`; the clauses go in braces: `kernel {name} {{ inp(...), out(...), ... }}`"
        )));
    }
    let content;
    syn::braced!(content in input);
    let mut clauses = Vec::new();
    while !content.is_empty() {
        clauses.push(parse_clause(&content)?);
        if content.is_empty() {
            break;
        }
        if content.peek(Token![,]) {
            content.parse::<Token![,]>()?;
        } else {
            return Err(
                content.error("expected `,` after the clause; clauses are separated by commas")
            );
        }
    }
    if !input.is_empty() {
        return Err(input.error(format!(
            "unexpected tokens after the body of kernel `{name}`; an mdh! invocation holds exactly one kernel"
        )));
    }
    let attrs = attrs.iter().map(ToTokens::to_token_stream).collect();
    Ok(RawKernel {
        attrs,
        vis: vis.to_token_stream(),
        name,
        clauses,
    })
}

fn parse_clause(s: ParseStream) -> syn::Result<RawClause> {
    if !s.peek(Ident::peek_any) {
        return Err(s.error(format!("expected a clause; the clauses are {CLAUSE_LIST}")));
    }
    let name = s.call(Ident::parse_any)?;
    let Some(kind) = ClauseKind::from_name(&name.to_string()) else {
        let hint = match closest_clause(&name.to_string()) {
            Some(k) => format!(" (did you mean `{}`?)", k.name()),
            None => String::new(),
        };
        return Err(syn::Error::new(
            name.span(),
            format!("unknown clause `{name}`{hint}; the clauses are {CLAUSE_LIST}"),
        ));
    };
    let body = if kind == ClauseKind::MdHom {
        if !s.peek(token::Bracket) {
            return Err(s.error(
                "expected `[` after `md_hom`; it takes one size per dimension in brackets, \
                 e.g. `md_hom[I, K](|m, x| m * x, (CC, PW(+)))`",
            ));
        }
        let b;
        syn::bracketed!(b in s);
        let sizes = Punctuated::<syn::Expr, Token![,]>::parse_terminated(&b)?;
        if !s.peek(token::Paren) {
            return Err(s.error(
                "expected `(` after `md_hom[...]`; it takes the scalar function and the combine \
                 operators, e.g. `md_hom[I, K](|m, x| m * x, (CC, PW(+)))`",
            ));
        }
        let p;
        syn::parenthesized!(p in s);
        RawBody::MdHom(Box::new(parse_md_hom_args(
            &p,
            sizes.into_iter().collect(),
        )?))
    } else {
        if !s.peek(token::Paren) {
            return Err(s.error(format!("expected `(` after `{name}`; write `{name}(...)`")));
        }
        let p;
        syn::parenthesized!(p in s);
        match kind {
            ClauseKind::Inp | ClauseKind::Out => RawBody::Bufs(
                Punctuated::<RawBuf, Token![,]>::parse_terminated_with(&p, parse_buf)?
                    .into_iter()
                    .collect(),
            ),
            ClauseKind::Params => RawBody::Params(
                Punctuated::<RawParam, Token![,]>::parse_terminated_with(&p, parse_param)?
                    .into_iter()
                    .collect(),
            ),
            _ => RawBody::Views(
                Punctuated::<RawView, Token![,]>::parse_terminated_with(&p, parse_view)?
                    .into_iter()
                    .collect(),
            ),
        }
    };
    Ok(RawClause { kind, name, body })
}

fn parse_name(s: ParseStream, what: &str, example: &str) -> syn::Result<Ident> {
    if s.peek(Ident) {
        return s.parse();
    }
    if s.peek(Ident::peek_any) {
        let k = s.call(Ident::parse_any)?;
        return Err(syn::Error::new(
            k.span(),
            format!("`{k}` is a Rust keyword and cannot name a {what}; choose another name"),
        ));
    }
    Err(s.error(format!("expected a {what} name, e.g. `{example}`")))
}

fn parse_buf(s: ParseStream) -> syn::Result<RawBuf> {
    let name = parse_name(s, "buffer", "M: f32[I, K]")?;
    if !s.peek(Token![:]) {
        return Err(s.error(format!(
            "expected `:` and an element type after buffer `{name}`, e.g. `{name}: f32[I, K]`"
        )));
    }
    s.parse::<Token![:]>()?;
    if !s.peek(Ident::peek_any) {
        return Err(s.error(format!(
            "expected the element type of buffer `{name}` ({TYPE_LIST}), e.g. `{name}: f32[I, K]`"
        )));
    }
    let ty = s.call(Ident::parse_any)?;
    if !s.peek(token::Bracket) {
        return Err(s.error(format!(
            "expected the shape of buffer `{name}` in brackets after its type, e.g. \
             `{name}: {ty}[I, K]`, or `{name}: {ty}[]` for a scalar"
        )));
    }
    let b;
    syn::bracketed!(b in s);
    let shape = Punctuated::<syn::Expr, Token![,]>::parse_terminated(&b)?;
    Ok(RawBuf {
        name,
        ty,
        shape: shape.into_iter().collect(),
    })
}

fn parse_param(s: ParseStream) -> syn::Result<RawParam> {
    let name = parse_name(s, "param", "alpha: f32")?;
    if !s.peek(Token![:]) {
        return Err(s.error(format!(
            "expected `:` and a type after param `{name}`, e.g. `{name}: f32`"
        )));
    }
    s.parse::<Token![:]>()?;
    if !s.peek(Ident::peek_any) {
        return Err(s.error(format!(
            "expected the type of param `{name}` ({TYPE_LIST}), e.g. `{name}: f32`"
        )));
    }
    let ty = s.call(Ident::parse_any)?;
    Ok(RawParam { name, ty })
}

fn peek_closure(s: ParseStream) -> bool {
    s.peek(Token![|])
        || s.peek(Token![||])
        || s.peek(Token![move])
        || s.peek(Token![async])
        || s.peek(Token![static])
        || s.peek(Token![for])
        || s.peek(Token![const])
}

fn parse_view(s: ParseStream) -> syn::Result<RawView> {
    let buffer = parse_name(s, "buffer", "M: |i, k| (i, k)")?;
    if !s.peek(Token![:]) {
        return Err(s.error(format!(
            "expected `:` and an index function after buffer `{buffer}`, e.g. `{buffer}: |i, k| (i, k)`"
        )));
    }
    s.parse::<Token![:]>()?;
    let fns = if s.peek(token::Bracket) {
        let b;
        syn::bracketed!(b in s);
        let mut fns = Vec::new();
        while !b.is_empty() {
            if !peek_closure(&b) {
                return Err(b.error(format!(
                    "expected an index function such as `|i| (i + 1)` in the list of buffer `{buffer}`"
                )));
            }
            fns.push(b.parse::<ExprClosure>()?);
            if b.is_empty() {
                break;
            }
            if !b.peek(Token![,]) {
                return Err(b.error("expected `,` between index functions"));
            }
            b.parse::<Token![,]>()?;
        }
        fns
    } else if peek_closure(s) {
        vec![s.parse::<ExprClosure>()?]
    } else {
        return Err(s.error(format!(
            "expected an index function such as `|i, k| (i, k)`, or a list `[|i| (i), |i| (i + 1)]`, \
             after `{buffer}:`"
        )));
    };
    Ok(RawView { buffer, fns })
}

fn parse_md_hom_args(s: ParseStream, sizes: Vec<syn::Expr>) -> syn::Result<RawMdHom> {
    if !peek_closure(s) {
        return Err(s.error(
            "expected the scalar function, a closure such as `|m, x| m * x`, as the first \
             argument of `md_hom[...](...)`",
        ));
    }
    let scalar: ExprClosure = s.parse()?;
    if !s.peek(Token![,]) {
        return Err(s.error(
            "expected `,` and the combine operators after the scalar function, \
             e.g. `md_hom[I, K](|m, x| m * x, (CC, PW(+)))`",
        ));
    }
    s.parse::<Token![,]>()?;
    let (ops, ops_span) = if s.peek(token::Paren) {
        let p;
        let paren = syn::parenthesized!(p in s);
        let ops = Punctuated::<RawOp, Token![,]>::parse_terminated_with(&p, parse_op)?;
        (ops.into_iter().collect(), paren.span.join())
    } else if s.peek(Ident::peek_any) {
        let op = parse_op(s)?;
        let span = match &op {
            RawOp::Cc(sp) | RawOp::Pw(_, sp, _) | RawOp::Ps(_, sp, _) => *sp,
        };
        (vec![op], span)
    } else {
        return Err(
            s.error("expected the combine operators, one per dimension, e.g. `(CC, PW(+))`")
        );
    };
    if s.peek(Token![,]) {
        s.parse::<Token![,]>()?;
    }
    if !s.is_empty() {
        return Err(s.error(
            "unexpected tokens after the combine operators; `md_hom[...]` takes exactly \
             `(scalar function, (operators))`",
        ));
    }
    Ok(RawMdHom {
        sizes,
        scalar,
        ops,
        ops_span,
    })
}

fn parse_op(s: ParseStream) -> syn::Result<RawOp> {
    if !s.peek(Ident::peek_any) {
        return Err(
            s.error("expected a combine operator: `CC`, `PW(op)` or `PS(op)`, e.g. `(CC, PW(+))`")
        );
    }
    let id = s.call(Ident::parse_any)?;
    let name = id.to_string();
    match name.as_str() {
        "CC" => {
            if s.peek(token::Paren) {
                return Err(s.error("`CC` takes no arguments; write just `CC`"));
            }
            Ok(RawOp::Cc(id.span()))
        }
        "PW" | "PS" => {
            if !s.peek(token::Paren) {
                return Err(s.error(format!(
                    "expected `(` after `{name}`; write the operator in parentheses, e.g. `{name}(+)`"
                )));
            }
            let p;
            let paren = syn::parenthesized!(p in s);
            let ops = Punctuated::<RawReduce, Token![,]>::parse_terminated_with(&p, parse_reduce)?;
            let span = id.span().join(paren.span.join()).unwrap_or(id.span());
            let ops = ops.into_iter().collect();
            Ok(if name == "PW" {
                RawOp::Pw(ops, span, id)
            } else {
                RawOp::Ps(ops, span, id)
            })
        }
        _ => Err(syn::Error::new(
            id.span(),
            format!(
                "unknown combine operator `{name}`; use `CC` (concatenation), `PW(op)` (point-wise \
                 reduction) or `PS(op)` (prefix sum), e.g. `(CC, PW(+))`"
            ),
        )),
    }
}

fn parse_reduce(s: ParseStream) -> syn::Result<RawReduce> {
    if s.peek(Token![+]) {
        let t: Token![+] = s.parse()?;
        return Ok(RawReduce::Builtin(BuiltinOp::Add, t.span));
    }
    if s.peek(Token![*]) {
        let t: Token![*] = s.parse()?;
        return Ok(RawReduce::Builtin(BuiltinOp::Mul, t.span));
    }
    if peek_closure(s) {
        return Ok(RawReduce::Closure(s.parse()?));
    }
    if s.peek(Ident::peek_any) {
        let id = s.call(Ident::parse_any)?;
        if id == "max" {
            return Ok(RawReduce::Builtin(BuiltinOp::Max, id.span()));
        }
        if id == "min" {
            return Ok(RawReduce::Builtin(BuiltinOp::Min, id.span()));
        }
        return Err(syn::Error::new(
            id.span(),
            format!(
                "unknown operator `{id}`; use `+`, `*`, `max`, `min` or a closure `|a, b| expr`"
            ),
        ));
    }
    if let Ok(op) = s.fork().parse::<syn::BinOp>() {
        let sym = tokens_text(&op).replace(' ', "");
        let msg = match sym.as_str() {
            "-" | "/" | "%" => format!(
                "`{sym}` is not associative and commutative, so it cannot combine the values of \
                 a dimension; use `+`, `*`, `max`, `min`, or a closure `|a, b| expr` that is \
                 associative (and commutative for PW)"
            ),
            "&&" | "||" | "&" | "|" | "^" => format!(
                "`{sym}` is not a built-in combine operator; write it as a closure \
                 `|a, b| a {sym} b`, or use `+`, `*`, `max` or `min`"
            ),
            _ => format!(
                "`{sym}` cannot be a combine operator; use `+`, `*`, `max`, `min`, or a closure \
                 `|a, b| expr` that is associative (and commutative for PW)"
            ),
        };
        return Err(err(op, msg));
    }
    Err(s.error("expected an operator: `+`, `*`, `max`, `min` or a closure `|a, b| expr`"))
}

// ----------------------------------------------------------------------------
// Phase 2: semantics.

#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    fn take<T>(&mut self, r: syn::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.push(e);
                None
            }
        }
    }

    fn any(&self) -> bool {
        self.0.is_some()
    }
}

fn build(raw: RawKernel, source: String) -> syn::Result<Kernel> {
    let mut errs = Errors::default();
    let mut slots: [Option<RawClause>; 6] = Default::default();
    for c in raw.clauses {
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
    let [inp, out, params, out_view, md_hom, inp_view] = slots;
    let name = raw.name;
    for (slot, kind, example) in [
        (&out, ClauseKind::Out, "out(w: f32[I])"),
        (&out_view, ClauseKind::OutView, "out_view(w: |i, k| (i))"),
        (
            &md_hom,
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

    // Buffers, params and md_hom sizes.
    let mut bufs = |c: Option<RawClause>| -> Vec<BufferDecl> {
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
    };
    let inputs = bufs(inp);
    let outputs = bufs(out);
    let mut param_decls = Vec::new();
    if let Some(RawClause {
        body: RawBody::Params(list),
        ..
    }) = params
    {
        for p in list {
            if let Some(d) = errs.take(param_decl(p)) {
                param_decls.push(d);
            }
        }
    }
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
    let sizes_ok = !errs.any();
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
    let mut views = |c: Option<RawClause>| -> Vec<View> {
        let mut v = Vec::new();
        if !sizes_ok {
            return v;
        }
        if let Some(RawClause {
            body: RawBody::Views(list),
            ..
        }) = c
        {
            for rv in list {
                let mut accesses = Vec::new();
                for f in &rv.fns {
                    if let Some(a) = errs.take(index_fn(f, &size_params, &param_names)) {
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
    };
    let inp_view = views(inp_view);
    let out_view = views(out_view);

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

    if let Some(e) = errs.0 {
        return Err(e);
    }
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

fn buffer_decl(b: RawBuf) -> syn::Result<BufferDecl> {
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
    let mut errs = Errors::default();
    let mut shape = Vec::new();
    for e in &b.shape {
        if let Some(s) = errs.take(size_expr(e)) {
            shape.push(s);
        }
    }
    if let Some(e) = errs.0 {
        return Err(e);
    }
    let span = b.name.span();
    Ok(BufferDecl {
        name: b.name,
        ty,
        ty_span: b.ty.span(),
        shape,
        span,
    })
}

fn param_decl(p: RawParam) -> syn::Result<ParamDecl> {
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

fn unparen(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) if p.attrs.is_empty() => unparen(&p.expr),
        syn::Expr::Group(g) if g.attrs.is_empty() => unparen(&g.expr),
        _ => e,
    }
}

/// The identifier of a path expression that is a single plain identifier.
fn single_ident(e: &syn::Expr) -> Option<&Ident> {
    match e {
        syn::Expr::Path(p) if p.attrs.is_empty() && p.qself.is_none() => p.path.get_ident(),
        _ => None,
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

fn collect_size_params(s: &SizeExpr, out: &mut Vec<Ident>) {
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

/// Rejects closure modifiers and return types: `what` names the closure kind.
fn plain_closure(c: &ExprClosure, what: &str, example: &str) -> syn::Result<()> {
    if let Some(a) = c.attrs.first() {
        return Err(err(
            a,
            format!(
                "attributes are not allowed on {what}; write a plain closure such as `{example}`"
            ),
        ));
    }
    let modifier: Option<TokenStream> = c
        .lifetimes
        .as_ref()
        .map(ToTokens::to_token_stream)
        .or_else(|| c.constness.map(|t| t.to_token_stream()))
        .or_else(|| c.movability.map(|t| t.to_token_stream()))
        .or_else(|| c.asyncness.map(|t| t.to_token_stream()))
        .or_else(|| c.capture.map(|t| t.to_token_stream()));
    if let Some(m) = modifier {
        return Err(err(
            &m,
            format!("`{m}` is not allowed on {what}; write a plain closure such as `{example}`"),
        ));
    }
    if let syn::ReturnType::Type(arrow, ty) = &c.output {
        let mut ts = arrow.to_token_stream();
        ty.to_tokens(&mut ts);
        return Err(err(
            &ts,
            format!(
                "return type annotations are not allowed on {what} (the types come from the \
                 kernel's declarations); remove `-> {}`",
                tokens_text(ty)
            ),
        ));
    }
    Ok(())
}

/// A closure parameter that must be a plain name or `_`.
fn plain_param(pat: &Pat, unused: &mut usize, what: &str) -> syn::Result<Ident> {
    match pat {
        Pat::Ident(p)
            if p.attrs.is_empty()
                && p.by_ref.is_none()
                && p.mutability.is_none()
                && p.subpat.is_none() =>
        {
            Ok(p.ident.clone())
        }
        Pat::Wild(w) if w.attrs.is_empty() => {
            let id = Ident::new(&format!("__unused{}", *unused), w.underscore_token.span);
            *unused += 1;
            Ok(id)
        }
        Pat::Type(t) => Err(err(
            t,
            format!(
                "type annotations are not allowed on {what} parameters (the types come from the \
                 kernel's declarations); remove `: {}`",
                tokens_text(&t.ty)
            ),
        )),
        _ => Err(err(
            pat,
            format!(
                "{what} parameters must be plain names such as `a` or `_`, found `{}`; \
                 replace it by a name",
                tokens_text(pat)
            ),
        )),
    }
}

fn check_distinct(ids: &[Ident], what: &str) -> syn::Result<()> {
    for (i, a) in ids.iter().enumerate() {
        if ids[..i].iter().any(|b| b == a) {
            return Err(syn::Error::new(
                a.span(),
                format!("parameter `{a}` of the {what} is bound twice; give each parameter its own name"),
            ));
        }
    }
    Ok(())
}

fn index_fn(
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
    let mut errs = Errors::default();
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
    if let Some(e) = errs.0 {
        return Err(e);
    }
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

/// The parameter list `|a, b|` of a closure.
fn closure_params_range(c: &ExprClosure) -> SpanRange {
    SpanRange::new(c.or1_token.span, c.or2_token.span)
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

// ----------------------------------------------------------------------------
// Scalar-function expressions.

fn unsupported<T: ToTokens>(t: T, what: &str) -> syn::Error {
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
            "`{}` is not a scalar type; {what} must be one of f32, f64, i8, i16, i32, i64, u8, \
             u16, u32, u64, usize or bool",
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
    let e = Expr::with_range(ExprKind::Lit(lit), span);
    Ok(if neg {
        Expr::with_range(ExprKind::Unary(UnOp::Neg, Box::new(e)), span)
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
        s => {
            return Err(err(
                l,
                format!("unsupported float literal suffix `{s}`; use `f32`, `f64` or no suffix"),
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
    let e = Expr::with_range(ExprKind::Lit(Lit::Float(v, ty)), span);
    Ok(if neg {
        Expr::with_range(ExprKind::Unary(UnOp::Neg, Box::new(e)), span)
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
fn expr(e: &syn::Expr) -> syn::Result<Expr> {
    use syn::Expr as E;
    let range = SpanRange::of(e);
    let mk = |k: ExprKind| Ok(Expr::with_range(k, range));
    match e {
        E::Lit(l) => {
            no_attrs(&l.attrs)?;
            match &l.lit {
                syn::Lit::Int(i) => int_lit(i),
                syn::Lit::Float(f) => float_lit(f),
                syn::Lit::Bool(b) => mk(ExprKind::Lit(Lit::Bool(b.value))),
                syn::Lit::Str(_) | syn::Lit::ByteStr(_) | syn::Lit::CStr(_) => {
                    Err(unsupported(e, "string literals"))
                }
                syn::Lit::Char(_) | syn::Lit::Byte(_) => Err(unsupported(e, "character literals")),
                _ => Err(unsupported(e, "this kind of literal")),
            }
        }
        E::Path(p) => {
            no_attrs(&p.attrs)?;
            match single_ident(e) {
                Some(id) => mk(ExprKind::Var(id.clone())),
                None => Err(unsupported(
                    e,
                    &format!(
                        "the path `{}` (only plain names are allowed; write constants as literals)",
                        tokens_text(e)
                    ),
                )),
            }
        }
        E::Paren(p) => {
            no_attrs(&p.attrs)?;
            expr(&p.expr)
        }
        E::Group(g) => {
            no_attrs(&g.attrs)?;
            expr(&g.expr)
        }
        E::Unary(u) => {
            no_attrs(&u.attrs)?;
            let op = match u.op {
                syn::UnOp::Neg(_) => UnOp::Neg,
                syn::UnOp::Not(_) => UnOp::Not,
                syn::UnOp::Deref(_) => return Err(unsupported(e, "dereferencing with `*`")),
                _ => return Err(unsupported(e, "this unary operator")),
            };
            mk(ExprKind::Unary(op, Box::new(expr(&u.expr)?)))
        }
        E::Binary(b) => {
            no_attrs(&b.attrs)?;
            match bin_op(&b.op) {
                Some((op, false)) => mk(ExprKind::Binary(
                    op,
                    Box::new(expr(&b.left)?),
                    Box::new(expr(&b.right)?),
                )),
                Some((op, true)) => {
                    let target = assign_target(&b.left)?;
                    mk(ExprKind::Assign(
                        target,
                        Some(op),
                        Box::new(expr(&b.right)?),
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
        E::Assign(a) => {
            no_attrs(&a.attrs)?;
            let target = assign_target(&a.left)?;
            mk(ExprKind::Assign(target, None, Box::new(expr(&a.right)?)))
        }
        E::Cast(c) => {
            no_attrs(&c.attrs)?;
            let Some(ty) = scalar_type_of(&c.ty) else {
                return Err(bad_type(&c.ty, "the target of `as`"));
            };
            mk(ExprKind::Cast(Box::new(expr(&c.expr)?), ty))
        }
        E::Tuple(t) => {
            no_attrs(&t.attrs)?;
            let elems = t.elems.iter().map(expr).collect::<syn::Result<Vec<_>>>()?;
            mk(ExprKind::Tuple(elems))
        }
        E::Block(b) => {
            no_attrs(&b.attrs)?;
            if let Some(l) = &b.label {
                return Err(unsupported(l, "labeled blocks"));
            }
            mk(ExprKind::Block(block(&b.block)?))
        }
        E::If(i) => {
            no_attrs(&i.attrs)?;
            if let E::Let(l) = unparen(&i.cond) {
                return Err(unsupported(l, "`if let`"));
            }
            let cond = expr(&i.cond)?;
            let then = block(&i.then_branch)?;
            let els = match &i.else_branch {
                Some((_, e)) => Some(Box::new(expr(e)?)),
                None => None,
            };
            mk(ExprKind::If(Box::new(cond), then, els))
        }
        E::ForLoop(f) => {
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
                E::Range(r) if r.attrs.is_empty() => r,
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
            mk(ExprKind::For(var, Box::new(lo), Box::new(hi), body))
        }
        E::Break(b) => {
            no_attrs(&b.attrs)?;
            if let Some(l) = &b.label {
                return Err(unsupported(l, "labeled `break`"));
            }
            if let Some(v) = &b.expr {
                return Err(unsupported(v, "`break` with a value"));
            }
            mk(ExprKind::Break)
        }
        E::MethodCall(m) => {
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
            mk(ExprKind::MethodCall(Box::new(recv), method, args))
        }
        E::Call(c) if matches!(unparen(&c.func), E::Closure(_)) => Err(unsupported(
            e,
            "closures (calling a closure written in place; compute the value with `let` instead)",
        )),
        E::Call(_) => Err(unsupported(e, "function calls")),
        E::Macro(_) => Err(unsupported(e, "macros")),
        E::Index(_) => Err(unsupported(e, "indexing with `[...]`")),
        E::Field(_) => Err(unsupported(e, "field access")),
        E::Reference(_) => Err(unsupported(e, "references")),
        E::Closure(_) => Err(unsupported(e, "closures")),
        E::While(_) => Err(unsupported(
            e,
            "`while` loops (use `for _ in lo..hi` with `break`)",
        )),
        E::Loop(_) => Err(unsupported(
            e,
            "`loop` (use `for _ in lo..hi` with `break`)",
        )),
        E::Return(_) => Err(unsupported(e, "`return`")),
        E::Continue(_) => Err(unsupported(e, "`continue`")),
        E::Match(_) => Err(unsupported(e, "`match` (use `if`/`else`)")),
        E::Try(_) => Err(unsupported(e, "the `?` operator")),
        E::Array(_) | E::Repeat(_) => Err(unsupported(e, "arrays")),
        E::Struct(_) => Err(unsupported(e, "struct literals")),
        E::Range(_) => Err(unsupported(e, "ranges outside `for` loops")),
        E::Let(_) => Err(unsupported(e, "`let` in expression position")),
        E::Unsafe(_) => Err(unsupported(e, "`unsafe` blocks")),
        E::Async(_) | E::Await(_) => Err(unsupported(e, "`async`/`.await`")),
        E::Const(_) => Err(unsupported(e, "`const` blocks")),
        _ => Err(unsupported(e, &format!("`{}`", tokens_text(e)))),
    }
}

fn block(b: &syn::Block) -> syn::Result<Block> {
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
    })
}

// ----------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use proc_macro2::{Delimiter, Group, Literal, Punct, Spacing, TokenTree};
    use quote::quote;

    fn parse(ts: TokenStream) -> Kernel {
        match parse_kernel(ts) {
            Ok(k) => k,
            Err(e) => panic!("parse failed: {e}"),
        }
    }

    fn parse_err(ts: TokenStream) -> String {
        match parse_kernel(ts) {
            Ok(k) => panic!("expected an error, parsed kernel `{}`", k.name),
            Err(e) => e
                .into_iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    fn names(ids: &[Ident]) -> Vec<String> {
        ids.iter().map(ToString::to_string).collect()
    }

    fn aff(dims: &[i64], sizes: &[i64], c: i64) -> Affine {
        Affine {
            dims: dims.to_vec(),
            sizes: sizes.to_vec(),
            constant: c,
        }
    }

    fn components(k: &Kernel, views: &[View], buf: &str, access: usize) -> Vec<Affine> {
        let _ = k;
        views
            .iter()
            .find(|v| v.buffer == buf)
            .expect("view")
            .accesses[access]
            .components
            .clone()
    }

    /// Debug output with spans normalized away (span-locations may be on).
    fn strip_spans(s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find("bytes(") {
            let (head, tail) = rest.split_at(i);
            let Some(j) = tail.find(')') else { break };
            let mut head = head.to_string();
            if head.ends_with(", span: ") {
                head.truncate(head.len() - ", span: ".len());
                out.push_str(&head);
            } else {
                out.push_str(&head);
                out.push_str("Span");
            }
            rest = &tail[j + 1..];
        }
        out.push_str(rest);
        out
    }

    fn roundtrip(ts: TokenStream) {
        let k = parse(ts);
        let again = parse(k.source.parse().expect("source tokenizes"));
        assert_eq!(
            strip_spans(&format!("{k:?}")),
            strip_spans(&format!("{again:?}"))
        );
        assert_eq!(k.source, again.source);
    }

    fn matvec() -> TokenStream {
        quote! {
            /// Matrix-vector multiplication: w = M · v
            pub kernel matvec {
                inp(M: f32[I, K], v: f32[K]),
                out(w: f32[I]),
                out_view(w: |i, k| (i)),
                md_hom[I, K](|m, x| m * x, (CC, PW(+))),
                inp_view(M: |i, k| (i, k), v: |i, k| (k)),
            }
        }
    }

    #[test]
    fn parse_matvec() {
        let k = parse(matvec());
        assert_eq!(k.name, "matvec");
        assert_eq!(k.vis.to_string(), "pub");
        assert_eq!(k.attrs.len(), 1);
        assert!(k.attrs[0].to_string().contains("doc"));
        assert_eq!(names(&k.size_params), ["I", "K"]);
        assert_eq!(k.inputs.len(), 2);
        assert_eq!(k.inputs[0].ty, ScalarType::F32);
        assert_eq!(k.inputs[0].shape.len(), 2);
        assert_eq!(k.outputs[0].name, "w");
        assert_eq!(k.dims.len(), 2);
        assert!(matches!(k.dims[0].size, SizeExpr::Param(ref p) if p == "I"));
        assert_eq!(k.ops.len(), 2);
        assert!(matches!(k.ops[0], CombineOp::Cc(_)));
        assert!(matches!(&k.ops[1], CombineOp::Pw(v, _) if v.len() == 1
            && matches!(v[0], ReduceOp::Builtin(BuiltinOp::Add, _))));
        assert_eq!(names(&k.scalar_fn.params), ["m", "x"]);
        assert!(k.scalar_fn.index_params.is_none());
        assert!(
            matches!(&k.scalar_fn.body.kind, ExprKind::Binary(BinOp::Mul, a, b)
            if matches!(&a.kind, ExprKind::Var(v) if v == "m")
            && matches!(&b.kind, ExprKind::Var(v) if v == "x"))
        );
        assert_eq!(
            components(&k, &k.inp_view, "M", 0),
            vec![aff(&[1, 0], &[0, 0], 0), aff(&[0, 1], &[0, 0], 0)]
        );
        assert_eq!(
            components(&k, &k.inp_view, "v", 0),
            vec![aff(&[0, 1], &[0, 0], 0)]
        );
        assert_eq!(
            components(&k, &k.out_view, "w", 0),
            vec![aff(&[1, 0], &[0, 0], 0)]
        );
        assert_eq!(k.input_accesses().len(), 2);
        assert_eq!(k.output_accesses().len(), 1);
        assert_eq!(
            k.dim_kinds(),
            vec![crate::spec::DimKind::Cc, crate::spec::DimKind::Pw]
        );
    }

    #[test]
    fn parse_clauses_any_order_and_vis() {
        let k = parse(quote! {
            pub(crate) kernel mv {
                md_hom[I, K](|m, x| m * x, (CC, PW(+))),
                inp_view(M: |i, k| (i, k), v: |i, k| (k)),
                out_view(w: |i, k| (i)),
                out(w: f32[I]),
                inp(M: f32[I, K], v: f32[K])
            }
        });
        assert_eq!(k.vis.to_string(), "pub (crate)");
        assert!(k.attrs.is_empty());
        assert_eq!(names(&k.size_params), ["I", "K"]);
        let k = parse(quote! {
            kernel mv {
                inp(M: f32[I, K], v: f32[K]), out(w: f32[I]), out_view(w: |i, k| (i)),
                md_hom[I, K](|m, x| m * x, (CC, PW(+))), inp_view(M: |i, k| (i, k), v: |i, k| k),
            }
        });
        assert!(k.vis.is_empty());
        assert_eq!(
            components(&k, &k.inp_view, "v", 0),
            vec![aff(&[0, 1], &[0, 0], 0)]
        );
    }

    #[test]
    fn parse_jacobi1d() {
        let k = parse(quote! {
            kernel jacobi1d {
                inp(v: f64[N + 2]),
                out(w: f64[N]),
                out_view(w: |i| (i)),
                md_hom[N](|a, b, c| (a + b + c) / 3.0, (CC)),
                inp_view(v: [|i| (i), |i| (i + 1), |i| (i + 2),]),
            }
        });
        assert_eq!(names(&k.size_params), ["N"]);
        let v = &k.inp_view[0];
        assert_eq!(v.accesses.len(), 3);
        assert_eq!(v.accesses[2].components, vec![aff(&[1], &[0], 2)]);
        assert_eq!(names(&k.scalar_fn.params), ["a", "b", "c"]);
        assert_eq!(k.ops.len(), 1);
        assert_eq!(k.input_accesses().len(), 3);
    }

    #[test]
    fn parse_conv2d_and_strided_mcc() {
        let k = parse(quote! {
            kernel conv2d {
                inp(I: f32[P + R - 1, Q + S - 1], F: f32[R, S]),
                out(O: f32[P, Q]),
                out_view(O: |p, q, r, s| (p, q)),
                md_hom[P, Q, R, S](|i, f| i * f, (CC, CC, PW(+), PW(+))),
                inp_view(I: |p, q, r, s| (p + r, q + s), F: |p, q, r, s| (r, s)),
            }
        });
        assert_eq!(names(&k.size_params), ["P", "R", "Q", "S"]);
        assert_eq!(
            components(&k, &k.inp_view, "I", 0),
            vec![
                aff(&[1, 0, 1, 0], &[0; 4], 0),
                aff(&[0, 1, 0, 1], &[0; 4], 0)
            ]
        );
        let k = parse(quote! {
            kernel mcc {
                inp(I: f32[N, 2 * P + R - 1, 2 * Q + S - 1, C], F: f32[K, R, S, C]),
                out(O: f32[N, P, Q, K]),
                out_view(O: |n, p, q, k, r, s, c| (n, p, q, k)),
                md_hom[N, P, Q, K, R, S, C](|i, f| i * f, (CC, CC, CC, CC, PW(+), PW(+), PW(+))),
                inp_view(
                    I: |n, p, q, k, r, s, c| (n, 2 * p + r, 2 * q + s, c),
                    F: |n, p, q, k, r, s, c| (k, (K - 1 - r) * 1, -s + S - 1, c),
                ),
            }
        });
        assert_eq!(names(&k.size_params), ["N", "P", "R", "Q", "S", "C", "K"]);
        let i = components(&k, &k.inp_view, "I", 0);
        assert_eq!(i[1], aff(&[0, 2, 0, 0, 1, 0, 0], &[0; 7], 0));
        let f = components(&k, &k.inp_view, "F", 0);
        // K is size param index 6, S index 4.
        assert_eq!(
            f[1],
            aff(&[0, 0, 0, 0, -1, 0, 0], &[0, 0, 0, 0, 0, 0, 1], -1)
        );
        assert_eq!(
            f[2],
            aff(&[0, 0, 0, 0, 0, -1, 0], &[0, 0, 0, 0, 1, 0, 0], -1)
        );
        assert!(matches!(&k.inputs[0].shape[1], SizeExpr::Sub(..)));
    }

    #[test]
    fn parse_generator_mandelbrot() {
        let k = parse(quote! {
            kernel mandelbrot {
                out(img: u32[H, W]),
                params(scale: f32),
                out_view(img: |y, x| (y, x)),
                md_hom[H, W](|[y, x]| {
                    let cr = x as f32 * scale - 2.;
                    let ci: f32 = y as f32 * scale - 1e-3;
                    let mut zr = 0.0f32;
                    let mut zi = 0.0;
                    let mut n = 0u32;
                    for _ in 0..100 {
                        if zr * zr + zi * zi > 4.0 { break; }
                        let t = zr * zr - zi * zi + cr;
                        zi = 2.0 * zr * zi + ci;
                        zr = t;
                        n += 1;
                    }
                    n
                }, (CC, CC)),
                inp_view(),
            }
        });
        assert!(k.inputs.is_empty());
        assert!(k.inp_view.is_empty());
        assert_eq!(k.params.len(), 1);
        assert_eq!(k.params[0].ty, ScalarType::F32);
        assert_eq!(
            names(k.scalar_fn.index_params.as_deref().unwrap()),
            ["y", "x"]
        );
        assert!(k.scalar_fn.params.is_empty());
        let ExprKind::Block(b) = &k.scalar_fn.body.kind else {
            panic!("block")
        };
        assert_eq!(b.stmts.len(), 6);
        assert!(matches!(&b.tail.as_ref().unwrap().kind, ExprKind::Var(v) if v == "n"));
        assert!(matches!(
            &b.stmts[1],
            Stmt::Let {
                ty: Some(ScalarType::F32),
                mutable: false,
                ..
            }
        ));
        assert!(matches!(&b.stmts[2], Stmt::Let { mutable: true,
            init: Some(Expr { kind: ExprKind::Lit(Lit::Float(v, Some(ScalarType::F32))), .. }), .. } if *v == 0.0));
        let Stmt::Expr(Expr {
            kind: ExprKind::For(None, lo, hi, body),
            ..
        }) = &b.stmts[5]
        else {
            panic!("for loop")
        };
        assert!(matches!(lo.kind, ExprKind::Lit(Lit::Int(0, None))));
        assert!(matches!(hi.kind, ExprKind::Lit(Lit::Int(100, None))));
        assert_eq!(body.stmts.len(), 5);
        let Stmt::Expr(Expr {
            kind: ExprKind::If(_, then, None),
            ..
        }) = &body.stmts[0]
        else {
            panic!("if")
        };
        assert!(matches!(
            then.stmts[0],
            Stmt::Expr(Expr {
                kind: ExprKind::Break,
                ..
            })
        ));
        assert!(
            matches!(&body.stmts[4], Stmt::Expr(Expr { kind: ExprKind::Assign(n, Some(BinOp::Add), _), .. }) if n == "n")
        );
        assert!(
            matches!(&body.stmts[2], Stmt::Expr(Expr { kind: ExprKind::Assign(n, None, _), .. }) if n == "zi")
        );
        // `2.` and `1e-3` float literals.
        let Stmt::Let {
            init: Some(init), ..
        } = &b.stmts[0]
        else {
            panic!("let")
        };
        let ExprKind::Binary(BinOp::Sub, _, two) = &init.kind else {
            panic!("sub")
        };
        assert!(matches!(two.kind, ExprKind::Lit(Lit::Float(v, None)) if v == 2.0));
        // Missing inp/inp_view clauses entirely is fine too.
        let k = parse(quote! {
            kernel gen { out(o: i32[N]), out_view(o: |i| i), md_hom[N](|[i]| i as i32, CC) }
        });
        assert!(k.inputs.is_empty());
        assert!(matches!(
            &k.scalar_fn.body.kind,
            ExprKind::Cast(_, ScalarType::I32)
        ));
    }

    #[test]
    fn parse_reduce2_prl_scan() {
        let k = parse(quote! {
            kernel reduce2 {
                inp(x: f32[N]),
                out(s: f32[], m: f32[]),
                out_view(s: |i| (), m: |i| ()),
                md_hom[N](|a| (a, a.abs()), (PW(+, max),)),
                inp_view(x: |i| (i)),
            }
        });
        assert!(k.outputs[0].shape.is_empty());
        assert!(k.out_view[0].accesses[0].components.is_empty());
        let CombineOp::Pw(ops, _) = &k.ops[0] else {
            panic!("pw")
        };
        assert!(matches!(
            ops[..],
            [
                ReduceOp::Builtin(BuiltinOp::Add, _),
                ReduceOp::Builtin(BuiltinOp::Max, _)
            ]
        ));
        assert!(
            matches!(&k.scalar_fn.body.kind, ExprKind::Tuple(v) if v.len() == 2
            && matches!(&v[1].kind, ExprKind::MethodCall(_, Method::Abs, a) if a.is_empty()))
        );

        let k = parse(quote! {
            kernel prl {
                inp(a: f64[N, M]),
                out(b: f64[N]),
                out_view(b: |i, j| (i)),
                md_hom[N, M](|a| a, (CC, PW(|a, b| if a > b { a } else { b }))),
                inp_view(a: |i, j| (i, j)),
            }
        });
        let CombineOp::Pw(ops, _) = &k.ops[1] else {
            panic!("pw")
        };
        let ReduceOp::Closure(c) = &ops[0] else {
            panic!("closure")
        };
        assert_eq!(c.text, "|a,b|ifa>b{a}else{b}");
        assert_eq!(
            (c.lhs.to_string(), c.rhs.to_string()),
            ("a".into(), "b".into())
        );
        assert!(matches!(&c.body.kind, ExprKind::If(..)));

        for ops in [quote!(PS(+)), quote!((PS(+))), quote!((PS(+),))] {
            let k = parse(quote! {
                kernel scan {
                    inp(x: i64[N]), out(y: i64[N]), out_view(y: |i| (i)),
                    md_hom[N](|a| a, #ops), inp_view(x: |i| (i)),
                }
            });
            assert_eq!(k.ops.len(), 1);
            assert!(matches!(&k.ops[0], CombineOp::Ps(v, _) if v.len() == 1));
        }
    }

    #[test]
    fn parse_params_and_expressions() {
        let k = parse(quote! {
            kernel saxpy {
                inp(x: f32[N], y: f32[N]),
                out(z: f32[N]),
                params(alpha: f32, shift: i32, on: bool),
                out_view(z: |i| (i)),
                md_hom[N](|x, y| {
                    let t = alpha.mul_add(x, y);
                    if on && !(shift >= 0 || N == 0) { -t } else if shift % 2 != 0 { t.max(0.0) } else { (t as f64).sqrt() as f32 }
                }, (CC)),
                inp_view(x: |i| (i), y: |_| (0)),
            }
        });
        assert_eq!(k.params.len(), 3);
        assert_eq!(k.params[2].ty, ScalarType::Bool);
        assert_eq!(names(&k.inp_view[1].accesses[0].params), ["__unused0"]);
        assert_eq!(
            k.inp_view[1].accesses[0].components,
            vec![aff(&[0], &[0], 0)]
        );
    }

    #[test]
    fn errors() {
        let e = parse_err(quote! {
            kernel bad {
                inp(A: f32[I, K], B: f32[K, J]), out(C: f32[I, J]),
                out_view(C: |i, j, k| (i, j)),
                md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
                inp_view(A: |i, j, k| (i * k, k), B: |i, j, k| (k / 2, j)),
            }
        });
        assert!(e.contains("non-affine index expression `i * k`"), "{e}");
        assert!(e.contains("non-affine index expression `k / 2`"), "{e}");
        assert!(e.contains("must be affine"), "{e}");

        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I, K]), out(C: f32[I]), out_view(C: |i, k| (i)),
                md_hom[I, K](|a| a, (CC, PW(+))), inp_view(A: |i, k| (i * K, k)) }
        });
        assert!(e.contains("non-affine index expression `i * K`"), "{e}");

        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
                md_hom[I](|a| a, (CC)), inp_view(A: |i| (x)) }
        });
        assert!(e.contains("unknown name `x` in index function"), "{e}");

        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I]), out(C: f32[I]), foo(x), out_view(C: |i| (i)),
                md_hom[I](|a| a, (CC)), inp_view(A: |i| (i)) }
        });
        assert!(e.contains("unknown clause `foo`"), "{e}");
        assert!(e.contains("md_hom[...](...)"), "{e}");
        assert!(!e.contains("did you mean"), "{e}");

        for (typo, want) in [
            ("input", "inp"),
            ("outview", "out_view"),
            ("param", "params"),
            ("mdhom", "md_hom"),
            ("Inp_View", "inp_view"),
        ] {
            let typo = Ident::new(typo, Span::call_site());
            let e = parse_err(quote! {
                kernel bad { inp(A: f32[I]), out(C: f32[I]), #typo(x), out_view(C: |i| (i)),
                    md_hom[I](|a| a, (CC)), inp_view(A: |i| (i)) }
            });
            assert!(
                e.contains(&format!("(did you mean `{want}`?); the clauses are")),
                "{e}"
            );
        }

        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I]), out(C: f32[I]), params(s: i64), out_view(C: |i| (i)),
                md_hom[I](|a| a, (CC)), inp_view(A: |i| (i + s)) }
        });
        assert!(
            e.contains("`s` is a param, and params cannot be used in index functions; an index function may use only the closure's parameters (`i`) and size parameters (`I`)"),
            "{e}"
        );

        for (op, sym) in [(quote!(-), "-"), (quote!(/), "/"), (quote!(%), "%")] {
            let e = parse_err(quote! {
                kernel bad { inp(A: f32[I]), out(C: f32[]), out_view(C: |i| ()),
                    md_hom[I](|a| a, (PW(#op))), inp_view(A: |i| (i)) }
            });
            assert!(
                e.contains(&format!("`{sym}` is not associative and commutative"))
                    && e.contains("`+`, `*`, `max`, `min`"),
                "{e}"
            );
        }
        let e = parse_err(quote! {
            kernel bad { inp(A: bool[I]), out(C: bool[]), out_view(C: |i| ()),
                md_hom[I](|a| a, (PW(&&))), inp_view(A: |i| (i)) }
        });
        assert!(e.contains("write it as a closure `|a, b| a && b`"), "{e}");

        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
                md_hom[I](|a| (|z: f32| z)(a), (CC)), inp_view(A: |i| (i)) }
        });
        assert!(
            e.contains("unsupported syntax in the scalar function: closures"),
            "{e}"
        );

        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
                md_hom[I](|a| foo(a), (CC)), inp_view(A: |i| (i)) }
        });
        assert!(
            e.contains("unsupported syntax in the scalar function: function calls"),
            "{e}"
        );

        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
                md_hom[I](|a| a, (CC)), inp_view(A: |i| (i)), inp(B: f32[I]) }
        });
        assert!(e.contains("duplicate `inp` clause"), "{e}");

        let e = parse_err(quote! {
            kernel bad { inp(A: usize[I]), out(C: f32[I]), out_view(C: |i| (i)),
                md_hom[I](|a| a, (XX)), inp_view(A: |i| (i)) }
        });
        assert!(e.contains("unknown combine operator `XX`"), "{e}");

        let e = parse_err(quote! {
            kernel bad { inp(A: usize[I]), out(C: f32[I]), out_view(C: |i| (i)),
                md_hom[I](|a| a.frob() + v[0] + s.0 + f32::MAX, (CC)), inp_view(A: |i| (i)) }
        });
        assert!(e.contains("`usize` is not a buffer element type"), "{e}");
        assert!(e.contains("the method `frob`"), "{e}");

        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)), inp_view(A: |i| (i)) }
        });
        assert!(e.contains("has no `md_hom` clause"), "{e}");

        let cases: Vec<(TokenStream, &str)> = vec![
            (quote!(|a| a.powi()), "takes 1 argument"),
            (
                quote!(|a| {
                    while a > 0.0 {}
                    a
                }),
                "`while` loops",
            ),
            (
                quote!(|a| match a {
                    _ => a,
                }),
                "`match`",
            ),
            (quote!(|a| "s"), "string literals"),
            (quote!(|a| v[0]), "indexing"),
            (quote!(|a| &a), "references"),
            (quote!(|a| a?), "`?` operator"),
            (
                quote!(|a| {
                    for i in 0..=3 {}
                    a
                }),
                "inclusive ranges",
            ),
            (
                quote!(|a| {
                    return a;
                }),
                "`return`",
            ),
            (quote!(|a| println!("x")), "macros"),
            (quote!(|a: f32| a), "type annotations"),
            (quote!(|a| a << 1), "bitwise"),
            (
                quote!(|a| {
                    let (x, y) = a;
                    x
                }),
                "`let` pattern",
            ),
            (quote!(|a| a as String), "not a scalar type"),
        ];
        for (f, msg) in cases {
            let e = parse_err(quote! {
                kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
                    md_hom[I](#f, (CC)), inp_view(A: |i| (i)) }
            });
            assert!(e.contains(msg), "{f}: {e}");
        }

        for (src, msg) in [
            (quote!(kernel), "expected the kernel's name"),
            (quote!(fn foo {}), "expected `kernel`"),
            (quote!(kernel fn {}), "Rust keyword"),
            (
                quote!(kernel k { inp(A: f32[I]) } extra),
                "unexpected tokens",
            ),
            (
                quote!(kernel k { inp(A: f32[I]); out(B: f32[I]) }),
                "expected `,`",
            ),
            (quote!(#[inline] kernel k {}), "only doc comments"),
            (quote!(kernel k {}), "has no `out` clause"),
            (quote!(), "expected `kernel NAME"),
        ] {
            let e = parse_err(src.clone());
            assert!(e.contains(msg), "{src}: {e}");
        }
    }

    #[test]
    fn affine_overflow_is_an_error() {
        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
                md_hom[I](|a| a, (CC)), inp_view(A: |i| (9223372036854775807 * 2 * i)) }
        });
        assert!(e.contains("overflows"), "{e}");
    }

    #[test]
    fn roundtrip_source() {
        roundtrip(matvec());
        roundtrip(quote! {
            /// Doc line one.
            /// Doc line "two".
            pub(crate) kernel gen {
                out(o: f32[H, W]),
                params(s: f32),
                out_view(o: |y, x| (y, x)),
                md_hom[H, W](|[y, x]| { let mut a = 2.; for _ in 0..10 { a *= 1e-3; if a < 0.5f32 { break; } } a * s }, (CC, CC)),
            }
        });
        roundtrip(quote! {
            kernel r2 { inp(x: f32[N]), out(s: f32[], m: f32[]), out_view(s: |i| (), m: |i| ()),
                md_hom[N](|a| (a, a), (PW(+, |a, b| if a > b { a } else { b }))), inp_view(x: |i| i) }
        });
        // Doc comments written as `///` in source text.
        let src = "/// Hello\npub kernel k { out(o: f32[N]), out_view(o: |i| (i)), md_hom[N](|[i]| 1.0, (CC)) }";
        let k = parse(src.parse().unwrap());
        assert_eq!(k.attrs.len(), 1);
        roundtrip(src.parse().unwrap());
    }

    // ------------------------------------------------------------------------
    // Fuzzing: the parser never panics.

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            // xorshift64*
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    const IDENTS: &[&str] = &[
        "kernel", "inp", "out", "params", "out_view", "inp_view", "md_hom", "CC", "PW", "PS",
        "f32", "f64", "usize", "bool", "i", "k", "I", "K", "a", "b", "max", "min", "pub", "let",
        "mut", "for", "in", "if", "else", "break", "as", "sqrt", "mul_add", "crate", "self", "fn",
        "_", "true", "while", "move",
    ];
    const PUNCTS: &[char] = &[
        '+', '-', '*', '/', '%', '=', '<', '>', '!', '&', '|', ',', ';', ':', '.', '#', '?', '@',
        '^', '~',
    ];
    const LITERALS: &[&str] = &[
        "0",
        "1",
        "2.",
        "1e-3",
        "3f32",
        "7u8",
        "0xFF",
        "1.5f64",
        "\"s\"",
        "'c'",
        "340282366920938463463374607431768211456",
        "9223372036854775808",
        "1e999",
        "2usize",
    ];

    fn random_tree(rng: &mut Rng, depth: usize) -> TokenStream {
        let n = rng.below(10);
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(random_token(rng, depth));
        }
        out.into_iter().collect()
    }

    fn random_token(rng: &mut Rng, depth: usize) -> TokenTree {
        match rng.below(if depth >= 4 { 3 } else { 4 }) {
            0 => {
                let s = IDENTS[rng.below(IDENTS.len())];
                TokenTree::Ident(if s == "_" {
                    Ident::new("a_", Span::call_site())
                } else {
                    Ident::new(s, Span::call_site())
                })
            }
            1 => {
                let spacing = if rng.below(3) == 0 {
                    Spacing::Joint
                } else {
                    Spacing::Alone
                };
                TokenTree::Punct(Punct::new(PUNCTS[rng.below(PUNCTS.len())], spacing))
            }
            2 => {
                let l: Literal = LITERALS[rng.below(LITERALS.len())]
                    .parse()
                    .unwrap_or_else(|_| Literal::u8_unsuffixed(1));
                TokenTree::Literal(l)
            }
            _ => {
                let d = [
                    Delimiter::Parenthesis,
                    Delimiter::Bracket,
                    Delimiter::Brace,
                    Delimiter::None,
                ][rng.below(4)];
                TokenTree::Group(Group::new(d, random_tree(rng, depth + 1)))
            }
        }
    }

    fn mutate(ts: TokenStream, rng: &mut Rng, rate: usize) -> TokenStream {
        let mut v: Vec<TokenTree> = ts.into_iter().collect();
        let mut i = 0;
        while i < v.len() {
            if rng.below(rate) == 0 {
                match rng.below(5) {
                    0 => {
                        v.remove(i);
                        continue;
                    }
                    1 => {
                        let t = v[i].clone();
                        v.insert(i, t);
                        i += 1;
                    }
                    2 => {
                        let j = rng.below(v.len());
                        v.swap(i, j);
                    }
                    3 => v[i] = random_token(rng, 3),
                    _ => v.insert(i, random_token(rng, 3)),
                }
            }
            if let Some(TokenTree::Group(g)) = v.get(i) {
                let ng = Group::new(g.delimiter(), mutate(g.stream(), rng, rate));
                v[i] = TokenTree::Group(ng);
            }
            i += 1;
        }
        v.into_iter().collect()
    }

    fn no_panic(ts: TokenStream) -> bool {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _ = parse_kernel(ts);
        }))
        .is_ok()
    }

    #[test]
    fn fuzz_random_token_trees_never_panic() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut panics = 0;
        for round in 0..4000 {
            let body = random_tree(&mut rng, 0);
            let ts = match round % 4 {
                0 => body,
                1 => quote!(kernel k { #body }),
                2 => {
                    quote!(kernel k { inp(#body), out(o: f32[N]), out_view(o: |i| (i)), md_hom[N](|a| a, (CC)) })
                }
                _ => quote!(kernel k { out(o: f32[N]), out_view(o: |i| (i)), md_hom[N](#body) }),
            };
            if !no_panic(ts) {
                panics += 1;
            }
        }
        assert_eq!(panics, 0);
    }

    #[test]
    fn fuzz_mutated_kernels_never_panic() {
        let seeds = [
            matvec(),
            quote! {
                kernel mcc {
                    inp(I: f32[N, 2 * P + R - 1, 2 * Q + S - 1, C], F: f32[K, R, S, C]),
                    out(O: f32[N, P, Q, K]),
                    params(alpha: f32),
                    out_view(O: |n, p, q, k, r, s, c| (n, p, q, k)),
                    md_hom[N, P, Q, K, R, S, C](|i, f| i * f * alpha, (CC, CC, CC, CC, PW(+), PW(+), PW(|a, b| a + b))),
                    inp_view(I: |n, p, q, k, r, s, c| (n, 2 * p + r, 2 * q + s, c), F: [|n, p, q, k, r, s, c| (K - 1 - k, r, s, c)]),
                }
            },
            quote! {
                kernel gen {
                    out(o: u32[H, W]),
                    out_view(o: |y, x| (y, x)),
                    md_hom[H, W](|[y, x]| { let mut n = 0u32; for _ in 0..100 { if n > 3 { break; } n += 1; } (n as f32).sqrt() as u32 }, (CC, PS(+, max))),
                    inp_view(),
                }
            },
        ];
        let mut rng = Rng(12345);
        let mut panics = 0;
        let mut ok = 0;
        for round in 0..6000 {
            let seed = seeds[round % seeds.len()].clone();
            let rate = 2 + rng.below(30);
            let ts = mutate(seed, &mut rng, rate);
            let ts2 = ts.clone();
            if !no_panic(ts) {
                panics += 1;
            } else if parse_kernel(ts2).is_ok() {
                ok += 1;
            }
        }
        assert_eq!(panics, 0);
        // Light mutations leave some kernels valid.
        assert!(ok > 0);
    }
}
