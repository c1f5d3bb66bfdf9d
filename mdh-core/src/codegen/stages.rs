//! The module of a kernel of stages: `Sizes`, `SPEC`, the stages (each the
//! module of a kernel of one md_hom, in `stages`) and `cpu`, which runs
//! the stages' `cpu` in order on the caller's buffers and on intermediates
//! it allocates for the call.

use proc_macro2::TokenStream;
use quote::quote;

use crate::analysis::Checked;
use crate::codegen::host_args;
use crate::codegen::rust_expr::ty;
use crate::spec::{BufRef, Stage, Staged};

/// The module `NAME` of a kernel of stages; `stage_module` expands one
/// stage's kernel (with its configs' plans).
pub fn module(k: &Staged<Checked>, stage_module: impl Fn(&Checked) -> TokenStream) -> TokenStream {
    let name = &k.name;
    let vis = &k.vis;
    let attrs = &k.attrs;
    let sizes_struct = super::sizes_struct(&k.size_params);
    let spec = &k.source;
    let stage_modules = k.stages.iter().map(|s| stage_module(&s.kernel));
    let cpu = cpu_fn(k);
    quote! {
        #(#attrs)*
        #[allow(non_snake_case, non_camel_case_types, unused, clippy::all)]
        #vis mod #name {
            #sizes_struct

            /// The kernel's source: the reference interpreter
            /// (`mdh::reference::program(SPEC)`) reads the kernel from it.
            pub const SPEC: &str = #spec;

            /// The stages, each a kernel of one md_hom named
            /// `KERNEL_STAGE`, which `cpu` runs in order.
            pub mod stages {
                #(#stage_modules)*
            }

            #cpu
        }
    }
}

/// The sizes of stage `s`, from the kernel's `sizes`.
fn stage_sizes(k: &Staged<Checked>, s: &Stage<Checked>) -> TokenStream {
    let path = stage_path(s);
    let names = s.sizes.iter().map(|&i| &k.size_params[i]);
    let names2 = names.clone();
    quote!(#path::Sizes { #(#names: sizes.#names2),* })
}

fn stage_path(s: &Stage<Checked>) -> TokenStream {
    let m = &s.kernel.name;
    quote!(self::stages::#m)
}

/// A buffer as a stage's argument: read (`&[T]`) or written (`&mut [T]`).
fn arg(k: &Staged<Checked>, b: BufRef, write: bool) -> TokenStream {
    let name = &k.decl(b).name;
    match (b, write) {
        (BufRef::Input(_), _) => quote!(#name),
        (_, false) => quote!(&#name[..]),
        (_, true) => quote!(&mut #name[..]),
    }
}

fn cpu_fn(k: &Staged<Checked>) -> TokenStream {
    let params = host_args::declarations(&k.inputs, &k.outputs, &k.params, quote!(sizes: Sizes,));
    let param_names: Vec<_> = k.params.iter().map(|p| &p.name).collect();
    // Each intermediate, as long as the stage that computes it needs it.
    let tmps = k.tmps.iter().enumerate().filter_map(|(t, d)| {
        let s = k.stages.iter().find(|s| s.writes.contains(&BufRef::Tmp(t)))?;
        let j = s.writes.iter().position(|&w| w == BufRef::Tmp(t))?;
        let (path, sizes) = (stage_path(s), stage_sizes(k, s));
        let (name, t) = (&d.name, ty(d.ty));
        Some(quote! {
            let mut #name: ::std::vec::Vec<#t> = {
                let __desc = #path::desc();
                ::std::vec![<#t as ::core::default::Default>::default();
                    __desc.buffer_len(&__desc.outputs[#j], &#sizes.values())?]
            };
        })
    });
    let calls = k.stages.iter().map(|s| {
        let path = stage_path(s);
        let sizes = stage_sizes(k, s);
        let reads = s.reads.iter().map(|&b| arg(k, b, false));
        let writes = s.writes.iter().map(|&b| arg(k, b, true));
        quote!(#path::cpu(#(#reads,)* #(#writes,)* #(#param_names,)* #sizes)?;)
    });
    let stage_names: Vec<String> = k.stages.iter().map(|s| format!("`{}`", s.name)).collect();
    let doc = format!(
        "Runs `{}` on the CPU (rayon): its stages {} in order, each a kernel of one md_hom, on \
         intermediates allocated for the call. Arguments: the inputs, the outputs (overwritten \
         where the stages write them), the params, then the sizes. Returns an error if a slice \
         length does not match its shape for these sizes, if a size expression overflows, or \
         if an index function leaves its buffer.",
        k.name,
        stage_names.join(", ")
    );
    quote! {
        #[doc = #doc]
        pub fn cpu(#params) -> ::core::result::Result<(), ::mdh::Error> {
            #(#tmps)*
            #(#calls)*
            ::core::result::Result::Ok(())
        }
    }
}
