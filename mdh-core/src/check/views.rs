//! Views: index functions, view lists and the scalar function's shape.

use super::messages::{
    dims_text, example_params, input_access_info, plural, quoted_list, shape_text,
};
use super::names::check_distinct_idents;
use crate::diagnostics::Diagnostics;
use crate::spec::parsed::Kernel;
use crate::spec::{BufferDecl, IndexFn, View};
use std::collections::HashSet;

fn check_index_fn(k: &Kernel, buf: &BufferDecl, f: &IndexFn, errs: &mut Diagnostics) {
    let nd = k.dims.len();
    if f.params.len() != nd {
        errs.error(
            f.params_range,
            format!(
                "this index function has {} but md_hom has {} {}; write one parameter per dimension, e.g. `{}`",
                plural(f.params.len(), "parameter", "parameters"),
                plural(nd, "dimension", "dimensions"),
                dims_text(k),
                example_params(nd),
            ),
        );
    }
    check_distinct_idents(&f.params, "index function", errs);
    if f.components.len() != buf.shape.len() {
        errs.error(
            f.body_range,
            format!(
                "this index function gives {} but `{}` ({}) has rank {}; return one index per buffer dimension",
                plural(f.components.len(), "index", "indices"),
                buf.name,
                shape_text(buf),
                buf.shape.len(),
            ),
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn check_view_list(
    k: &Kernel,
    views: &[View],
    decls: &[BufferDecl],
    others: &[BufferDecl],
    clause: &str,
    other_clause: &str,
    kind: &str,
    errs: &mut Diagnostics,
) -> bool {
    let mut ok = true;
    let mut seen: HashSet<String> = HashSet::new();
    for v in views {
        let name = v.buffer.to_string();
        let Some(decl) = decls.iter().find(|b| b.name == name) else {
            ok = false;
            if others.iter().any(|b| b.name == name) {
                errs.error(
                    v.buffer.span(),
                    format!(
                        "`{name}` is not an {kind} buffer; list its index functions in {other_clause}, not in {clause}"
                    ),
                );
            } else {
                errs.error(
                    v.buffer.span(),
                    format!(
                        "unknown buffer `{name}` in {clause}; the declared {kind} buffers are {}",
                        quoted_list(decls.iter().map(|b| b.name.to_string()))
                    ),
                );
            }
            continue;
        };
        if !seen.insert(name.clone()) {
            ok = false;
            errs.error(
                v.buffer.span(),
                format!(
                    "`{name}` is listed twice in {clause}; give all of its index functions in one entry: `{name}: [|..| (..), |..| (..)]`"
                ),
            );
            continue;
        }
        if v.accesses.is_empty() {
            ok = false;
            errs.error(
                v.buffer.span(),
                format!("`{name}` has no index function in {clause}; give at least one, e.g. `{name}: {} (...)`", example_params(k.dims.len())),
            );
        }
        for f in &v.accesses {
            check_index_fn(k, decl, f, errs);
        }
    }
    for d in decls {
        if !views.iter().any(|v| v.buffer == d.name) {
            ok = false;
            errs.error(
                d.span,
                format!(
                    "the {kind} buffer `{}` has no entry in {clause}; add `{}: {} (...)` to {clause} or remove the buffer",
                    d.name,
                    d.name,
                    example_params(k.dims.len())
                ),
            );
        }
    }
    ok
}

/// Whether each view clause lists exactly the declared buffers of its kind
/// (so that the accesses can be counted without follow-up errors).
#[derive(Clone, Copy)]
pub(super) struct ViewsOk {
    pub(super) inp: bool,
    pub(super) out: bool,
}

pub(super) fn check_views(k: &Kernel, errs: &mut Diagnostics) -> ViewsOk {
    let inp = check_view_list(
        k,
        &k.inp_view,
        &k.inputs,
        &k.outputs,
        "inp_view",
        "out_view",
        "input",
        errs,
    );
    let out = check_view_list(
        k,
        &k.out_view,
        &k.outputs,
        &k.inputs,
        "out_view",
        "inp_view",
        "output",
        errs,
    );
    if k.outputs.is_empty() {
        errs.error(
            k.name.span(),
            "this kernel declares no output buffer; add `out(NAME: TYPE[SHAPE])` and its `out_view` entry",
        );
    }
    ViewsOk { inp, out }
}

pub(super) fn check_scalar_fn_shape(k: &Kernel, views: ViewsOk, errs: &mut Diagnostics) {
    let f = &k.scalar_fn;
    let inputs = input_access_info(k);
    // After an error in inp_view the accesses cannot be counted reliably.
    if views.inp && f.params.len() != inputs.len() {
        errs.error(
            f.params_range,
            format!(
                "the scalar function has {} but inp_view has {} ({}); write one parameter per input access, in inp_view order",
                plural(f.params.len(), "parameter", "parameters"),
                plural(inputs.len(), "input access", "input accesses"),
                quoted_list(inputs.iter().map(|(n, _)| n.clone())),
            ),
        );
    }
    if let Some(idx) = &f.index_params {
        if idx.len() != k.dims.len() {
            let span = f.index_pattern_range.unwrap_or(f.params_range);
            errs.error(
                span,
                format!(
                    "the index pattern binds {} but md_hom has {} {}; write one name per dimension, e.g. `|[{}], ...|`",
                    plural(idx.len(), "name", "names"),
                    plural(k.dims.len(), "dimension", "dimensions"),
                    dims_text(k),
                    example_params(k.dims.len()).trim_matches('|'),
                ),
            );
        }
    }
    let all = f.index_params.iter().flatten().chain(f.params.iter());
    check_distinct_idents(all, "scalar function", errs);
}
