//! Closures as the language takes them (index functions, scalar functions,
//! user-defined operators): no modifiers or annotations, plain parameter
//! names, each bound once.

use super::{err, tokens_text};
use crate::spec::SpanRange;
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{ExprClosure, Ident, Pat};

/// Rejects closure modifiers and return types: `what` names the closure kind.
pub(super) fn plain_closure(c: &ExprClosure, what: &str, example: &str) -> syn::Result<()> {
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
pub(super) fn plain_param(pat: &Pat, unused: &mut usize, what: &str) -> syn::Result<Ident> {
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

/// `Err` at the second of two parameters with the same name.
pub(super) fn check_distinct(ids: &[Ident], what: &str) -> syn::Result<()> {
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

/// The parameter list `|a, b|` of a closure.
pub(super) fn closure_params_range(c: &ExprClosure) -> SpanRange {
    SpanRange::new(c.or1_token.span, c.or2_token.span)
}
