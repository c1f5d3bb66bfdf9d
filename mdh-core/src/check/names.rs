//! Names: no clashes between buffers, params and size parameters.

use crate::diagnostics::Diagnostics;
use crate::spec::parsed::Kernel;
use proc_macro2::Span;
use std::collections::HashSet;

pub(super) fn check_names(k: &Kernel, errs: &mut Diagnostics) {
    let mut entries: Vec<(String, Span, &'static str)> = Vec::new();
    for b in &k.inputs {
        entries.push((b.name.to_string(), b.name.span(), "an input buffer"));
    }
    for b in &k.outputs {
        entries.push((b.name.to_string(), b.name.span(), "an output buffer"));
    }
    for p in &k.params {
        entries.push((p.name.to_string(), p.name.span(), "a param"));
    }
    let sizes: HashSet<String> = k.size_params.iter().map(|s| s.to_string()).collect();
    for (i, (name, span, what)) in entries.iter().enumerate() {
        if let Some((_, _, first)) = entries.iter().take(i).find(|(n, _, _)| n == name) {
            let how = if first == what {
                format!("declared twice as {what}")
            } else {
                format!("declared twice (as {first} and as {what})")
            };
            errs.error(
                *span,
                format!("the name `{name}` is {how}; rename one of them"),
            );
        } else if sizes.contains(name) {
            let renamed = if name.starts_with('N') {
                format!("NUM_{name}")
            } else {
                format!("N{name}")
            };
            let msg = if *what == "a param" {
                format!("`{name}` is a size parameter (used in a shape or in md_hom[...]) and cannot also be a param; size parameters are already available as `usize` values in the scalar function, so drop the param or rename it")
            } else {
                format!("`{name}` is a size parameter (used in a shape or in md_hom[...]) and cannot also name {what}: the generated `cpu` function takes the buffers and the size parameters as arguments by name, so the two would clash; rename the size parameter (e.g. `{renamed}`) or the buffer")
            };
            errs.error(*span, msg);
        }
    }
}

pub(super) fn check_distinct_idents<'a>(
    idents: impl IntoIterator<Item = &'a syn::Ident>,
    what: &str,
    errs: &mut Diagnostics,
) {
    let mut seen: HashSet<String> = HashSet::new();
    for id in idents {
        let s = id.to_string();
        if s == "_" {
            continue;
        }
        if !seen.insert(s.clone()) {
            errs.error(
                id.span(),
                format!("`{s}` is bound twice in this {what}; give each parameter its own name"),
            );
        }
    }
}
