//! A kernel of stages: the top-level declarations (`inp`, `out`, `tmp`,
//! `params`) and one `stage NAME { out_view, md_hom, inp_view }` block per
//! md_hom. Each stage becomes a kernel of one md_hom of its own, written as
//! tokens (`kernel KERNEL_STAGE { inp(what it reads), out(what it writes),
//! params(...), CLAUSES }`, the user's tokens and spans) and parsed by the
//! parser of single kernels, so that the checker and every generator treat
//! it as any other kernel.

use super::build::{buffer_decl, collect_size_params, param_decl};
use super::syntax::{ClauseKind, RawBody, RawBuf, RawClause, RawKernel, RawParam, RawStage};
use crate::diagnostics::Diagnostics;
use crate::spec::parsed::Kernel;
use crate::spec::{BufRef, BufferDecl, Stage, Staged};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

/// The top-level buffers by name, for the stages' views.
struct Buffers<'a> {
    inputs: &'a [RawBuf],
    outputs: &'a [RawBuf],
    tmps: &'a [RawBuf],
}

impl Buffers<'_> {
    fn find(&self, name: &Ident) -> Option<(BufRef, &RawBuf)> {
        let at = |list: &[RawBuf]| list.iter().position(|b| &b.name == name);
        if let Some(i) = at(self.inputs) {
            Some((BufRef::Input(i), &self.inputs[i]))
        } else if let Some(i) = at(self.outputs) {
            Some((BufRef::Output(i), &self.outputs[i]))
        } else {
            at(self.tmps).map(|i| (BufRef::Tmp(i), &self.tmps[i]))
        }
    }
}

fn buf_tokens(b: &RawBuf) -> TokenStream {
    let RawBuf { name, ty, shape } = b;
    quote!(#name: #ty[#(#shape),*])
}

fn param_tokens(p: &RawParam) -> TokenStream {
    let RawParam { name, ty } = p;
    quote!(#name: #ty)
}

pub(super) fn build_staged(raw: RawKernel, source: String) -> syn::Result<Staged<Kernel>> {
    let mut errs = Diagnostics::default();
    let name = raw.name;
    let mut slots: [Option<RawClause>; 3] = Default::default();
    for c in raw.clauses {
        let slot = match c.kind {
            ClauseKind::Inp => &mut slots[0],
            ClauseKind::Out => &mut slots[1],
            ClauseKind::Params => &mut slots[2],
            kind => {
                errs.error(
                    c.name.span(),
                    format!(
                        "kernel `{name}` has stages, so its `{}` clause belongs in a stage; move it \
                         into the `stage NAME {{ ... }}` block that computes with it",
                        kind.name()
                    ),
                );
                continue;
            }
        };
        if slot.is_some() {
            errs.error(
                c.name.span(),
                format!(
                    "duplicate `{}` clause; each clause may appear only once, so merge the two",
                    c.kind.name()
                ),
            );
        } else {
            *slot = Some(c);
        }
    }
    let mut tmps = raw.tmps.into_iter();
    let tmp = tmps.next().map(|t| t.bufs).unwrap_or_default();
    for t in tmps {
        errs.error(
            t.kw.span(),
            "duplicate `tmp` clause; each clause may appear only once, so merge the two",
        );
    }
    let [inp, out, params] = slots;
    let bufs_of = |c: Option<RawClause>| match c {
        Some(RawClause {
            body: RawBody::Bufs(list),
            ..
        }) => list,
        _ => Vec::new(),
    };
    let (inp, out) = (bufs_of(inp), bufs_of(out));
    let params = match params {
        Some(RawClause {
            body: RawBody::Params(list),
            ..
        }) => list,
        _ => Vec::new(),
    };
    if out.is_empty() {
        errs.error(
            name.span(),
            format!(
                "kernel `{name}` has no output; declare what its stages compute for the caller \
                 in an `out(...)` clause, e.g. `out(y: f32[I, J])`"
            ),
        );
    }
    if raw.stages.is_empty() {
        errs.error(
            name.span(),
            format!(
                "kernel `{name}` declares `tmp(...)` but has no stage; compute its buffers in \
                 `stage NAME {{ out_view(...), md_hom[...](...), inp_view(...) }}` blocks"
            ),
        );
    }

    // The top-level declarations, checked once (the stages repeat them).
    let mut decls = |list: &[RawBuf]| -> Vec<BufferDecl> {
        list.iter()
            .filter_map(|b| errs.take(buffer_decl(b.clone())))
            .collect()
    };
    let (inputs, outputs, tmp_decls) = (decls(&inp), decls(&out), decls(&tmp));
    let param_decls: Vec<_> = params
        .iter()
        .filter_map(|p| errs.take(param_decl(p.clone())))
        .collect();
    errs.finish()?;

    let all = Buffers {
        inputs: &inp,
        outputs: &out,
        tmps: &tmp,
    };
    let params_tokens: Vec<TokenStream> = params.iter().map(param_tokens).collect();
    let mut errs = Diagnostics::default();
    let mut stages = Vec::new();
    for s in raw.stages {
        if let Some(stage) = errs.take(stage(&name, s, &all, &params_tokens)) {
            stages.push(stage);
        }
    }
    errs.finish()?;

    let mut size_params = Vec::new();
    for s in inputs.iter().chain(&outputs).chain(&tmp_decls) {
        for e in &s.shape {
            collect_size_params(e, &mut size_params);
        }
    }
    for s in &stages {
        for p in &s.kernel.size_params {
            if !size_params.contains(p) {
                size_params.push(p.clone());
            }
        }
    }
    for s in &mut stages {
        s.sizes = (s.kernel.size_params.iter())
            .filter_map(|p| size_params.iter().position(|q| q == p))
            .collect();
    }
    Ok(Staged {
        attrs: raw.attrs,
        vis: raw.vis,
        name,
        inputs,
        outputs,
        tmps: tmp_decls,
        params: param_decls,
        size_params,
        stages,
        source,
    })
}

/// One stage as a kernel of its own (see the module documentation).
fn stage(
    kernel: &Ident,
    s: RawStage,
    all: &Buffers,
    params: &[TokenStream],
) -> syn::Result<Stage<Kernel>> {
    let mut errs = Diagnostics::default();
    let sname = &s.name;
    // The buffers a view clause names, each once, in order.
    let mut named = |kind: ClauseKind| -> Vec<(BufRef, &RawBuf)> {
        let mut found: Vec<(BufRef, &RawBuf)> = Vec::new();
        for c in s.clauses.iter().filter(|c| c.kind == kind) {
            let RawBody::Views(views) = &c.body else {
                continue;
            };
            for v in views {
                match all.find(&v.buffer) {
                    Some(b) if found.iter().any(|f| f.0 == b.0) => {}
                    Some(b) => found.push(b),
                    None => errs.error(
                        v.buffer.span(),
                        format!(
                            "stage `{sname}` names `{}`, which no `inp(...)`, `out(...)` or \
                             `tmp(...)` clause of kernel `{kernel}` declares; declare it there",
                            v.buffer
                        ),
                    ),
                }
            }
        }
        found
    };
    let reads = named(ClauseKind::InpView);
    let writes = named(ClauseKind::OutView);
    for c in &s.clauses {
        if !matches!(
            c.kind,
            ClauseKind::OutView | ClauseKind::MdHom | ClauseKind::InpView
        ) {
            errs.error(
                c.name.span(),
                format!(
                    "a stage holds only `out_view`, `md_hom` and `inp_view`; declare `{}` at the \
                     top of kernel `{kernel}`, beside its other declarations",
                    c.kind.name()
                ),
            );
        }
    }
    errs.finish()?;
    let vis = quote!(pub);
    let kname = format_ident!("{}_{}", kernel, sname, span = sname.span());
    let kw = Ident::new("kernel", s.kw.span());
    let inp = reads.iter().map(|(_, b)| buf_tokens(b));
    let out = writes.iter().map(|(_, b)| buf_tokens(b));
    let params = (!params.is_empty()).then(|| quote!(params(#(#params),*),));
    let body = s.body;
    let tokens = quote! {
        #vis #kw #kname { inp(#(#inp),*), out(#(#out),*), #params #body }
    };
    Ok(Stage {
        name: s.name,
        kernel: super::parse_kernel(tokens)?,
        reads: reads.into_iter().map(|(r, _)| r).collect(),
        writes: writes.into_iter().map(|(r, _)| r).collect(),
        sizes: Vec::new(),
    })
}
