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

use crate::spec::parsed::Kernel;
use crate::spec::Program;
use build::build;
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::parse::Parser;
use syn::Ident;
use syntax::parse_raw;

/// Parses the tokens of one `mdh!` invocation into a [`Kernel`].
///
/// Never panics; every error carries the span of the offending tokens.
/// `Kernel::source` is `tokens.to_string()`, and re-parsing that string (e.g.
/// with [`crate::compile_str`]) yields the same kernel.
pub fn parse_kernel(tokens: TokenStream) -> syn::Result<Kernel> {
    match parse_program(tokens)? {
        Program::Single(k) => Ok(k),
        Program::Staged(k) => Err(syn::Error::new(
            k.name.span(),
            format!(
                "kernel `{}` has stages; read it with `mdh_core::compile_program` (or \
                 `mdh::reference::program`), which takes kernels of stages",
                k.name
            ),
        )),
    }
}

/// Parses the tokens of one `mdh!` invocation: a kernel of one md_hom, or
/// a kernel of stages (`tmp(...)`, `stage NAME { ... }`).
pub fn parse_program(tokens: TokenStream) -> syn::Result<Program<Kernel>> {
    let source = tokens.to_string();
    let raw = parse_raw.parse2(tokens)?;
    if raw.stages.is_empty() && raw.tmps.is_empty() {
        build(raw, source).map(Program::Single)
    } else {
        stages::build_staged(raw, source).map(|k| Program::Staged(Box::new(k)))
    }
}

mod affine;
mod build;
mod closure;
mod expr;
mod stages;
mod syntax;

#[cfg(test)]
mod tests;

fn err<T: ToTokens>(tokens: T, msg: impl std::fmt::Display) -> syn::Error {
    syn::Error::new_spanned(tokens, msg)
}

fn tokens_text<T: ToTokens>(t: &T) -> String {
    t.to_token_stream().to_string()
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
