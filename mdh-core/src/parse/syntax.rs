//! Phase 1: the token structure of the clauses (syntax errors stop here).

use super::{err, tokens_text};
use crate::spec::BuiltinOp;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::{token, ExprClosure, Ident, Token};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum ClauseKind {
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

    pub(super) fn name(self) -> &'static str {
        match self {
            ClauseKind::Inp => "inp",
            ClauseKind::Out => "out",
            ClauseKind::Params => "params",
            ClauseKind::OutView => "out_view",
            ClauseKind::MdHom => "md_hom",
            ClauseKind::InpView => "inp_view",
        }
    }

    pub(super) fn index(self) -> usize {
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

pub(super) const TYPE_LIST: &str =
    "f32, f64, f16, bf16, i8, i16, i32, i64, u8, u16, u32, u64 or bool";

#[derive(Clone)]
pub(super) struct RawBuf {
    pub(super) name: Ident,
    pub(super) ty: Ident,
    pub(super) shape: Vec<syn::Expr>,
}

#[derive(Clone)]
pub(super) struct RawParam {
    pub(super) name: Ident,
    pub(super) ty: Ident,
}

pub(super) struct RawView {
    pub(super) buffer: Ident,
    pub(super) fns: Vec<ExprClosure>,
}

pub(super) enum RawReduce {
    Builtin(BuiltinOp, Span),
    Closure(ExprClosure),
}

pub(super) enum RawOp {
    Cc(Span),
    Pw(Vec<RawReduce>, Span, Ident),
    Ps(Vec<RawReduce>, Span, Ident),
}

pub(super) struct RawMdHom {
    pub(super) sizes: Vec<syn::Expr>,
    pub(super) scalar: ExprClosure,
    pub(super) ops: Vec<RawOp>,
    pub(super) ops_span: Span,
}

pub(super) enum RawBody {
    Bufs(Vec<RawBuf>),
    Params(Vec<RawParam>),
    Views(Vec<RawView>),
    MdHom(Box<RawMdHom>),
}

pub(super) struct RawClause {
    pub(super) kind: ClauseKind,
    pub(super) name: Ident,
    pub(super) body: RawBody,
}

pub(super) struct RawKernel {
    pub(super) attrs: Vec<TokenStream>,
    pub(super) vis: TokenStream,
    pub(super) name: Ident,
    pub(super) clauses: Vec<RawClause>,
    /// `tmp(...)` clauses (a kernel of stages' intermediates).
    pub(super) tmps: Vec<RawTmp>,
    /// `stage NAME { ... }` blocks, in order.
    pub(super) stages: Vec<RawStage>,
}

/// `tmp(BUF: TYPE[SHAPE], ...)`: buffers that stages compute and read,
/// owned by the runtime.
pub(super) struct RawTmp {
    pub(super) kw: Ident,
    pub(super) bufs: Vec<RawBuf>,
}

/// `stage NAME { out_view(...), md_hom[...](...), inp_view(...) }`: one
/// md_hom of a kernel of stages.
pub(super) struct RawStage {
    pub(super) kw: Ident,
    pub(super) name: Ident,
    /// The tokens between the braces (the stage's clauses).
    pub(super) body: TokenStream,
    pub(super) clauses: Vec<RawClause>,
}

pub(super) fn parse_raw(input: ParseStream) -> syn::Result<RawKernel> {
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
    let (mut clauses, mut tmps, mut stages) = (Vec::new(), Vec::new(), Vec::new());
    while !content.is_empty() {
        if peek_keyword(&content, "stage") {
            stages.push(parse_stage(&content)?);
        } else if peek_keyword(&content, "tmp") {
            tmps.push(parse_tmp(&content)?);
        } else {
            clauses.push(parse_clause(&content)?);
        }
        if !separator(&content)? {
            break;
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
        tmps,
        stages,
    })
}

/// The comma after a clause: `false` at the end of the list.
fn separator(content: ParseStream) -> syn::Result<bool> {
    if content.is_empty() {
        return Ok(false);
    }
    if content.peek(Token![,]) {
        content.parse::<Token![,]>()?;
        return Ok(true);
    }
    Err(content.error("expected `,` after the clause; clauses are separated by commas"))
}

/// Whether the next token is the identifier `kw` (a clause of a kernel of
/// stages, not a Rust keyword).
fn peek_keyword(s: ParseStream, kw: &str) -> bool {
    s.fork().call(Ident::parse_any).is_ok_and(|i| i == kw)
}

fn parse_tmp(s: ParseStream) -> syn::Result<RawTmp> {
    let kw = s.call(Ident::parse_any)?;
    if !s.peek(token::Paren) {
        return Err(s.error(
            "expected `(` after `tmp`; it declares the intermediates of the stages, \
             e.g. `tmp(m: f32[I])`",
        ));
    }
    let p;
    syn::parenthesized!(p in s);
    let bufs = Punctuated::<RawBuf, Token![,]>::parse_terminated_with(&p, parse_buf)?;
    Ok(RawTmp {
        kw,
        bufs: bufs.into_iter().collect(),
    })
}

fn parse_stage(s: ParseStream) -> syn::Result<RawStage> {
    let kw = s.call(Ident::parse_any)?;
    let name = parse_name(s, "stage", "stage rowmax { ... }")?;
    if !s.peek(token::Brace) {
        return Err(s.error(format!(
            "expected `{{` after `stage {name}`; a stage's clauses go in braces: \
             `stage {name} {{ out_view(...), md_hom[...](...), inp_view(...) }}`"
        )));
    }
    let body = s.fork().parse::<proc_macro2::Group>()?.stream();
    let content;
    syn::braced!(content in s);
    let mut clauses = Vec::new();
    while !content.is_empty() {
        clauses.push(parse_clause(&content)?);
        if !separator(&content)? {
            break;
        }
    }
    Ok(RawStage {
        kw,
        name,
        body,
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
