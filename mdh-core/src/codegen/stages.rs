//! The module of a kernel of stages: `Sizes`, `SPEC`, the stages (each the
//! module of a kernel of one md_hom, in `stages`) and the entry points
//! `cpu`, `opencl::run`, `cuda::run` and `mpi::run`, which run the stages'
//! own entry points in order on the caller's buffers and on intermediates
//! they allocate for the call (on the device for the GPUs). On the CPU, a
//! stage with an epilogue ([`crate::fusion`]) runs its module in `fused`
//! instead, the epilogue in its stores; `cpu_unfused` runs every stage.

use proc_macro2::TokenStream;
use quote::quote;

use crate::analysis::Checked;
use crate::backend::Backend;
use crate::codegen::cpu::FusedEpilogue;
use crate::codegen::gpu_api::{backend_module, device_ty, download, upload};
use crate::codegen::host_args;
use crate::codegen::rust_expr::ty;
use crate::fusion::{self, Epilogue};
use crate::spec::{BufRef, Stage, Staged};

/// The module `NAME` of a kernel of stages; `stage_module` expands one
/// stage's kernel (with its configs' plans), `fused_module` a producing
/// stage with its epilogue.
pub fn module(
    k: &Staged<Checked>,
    stage_module: impl Fn(&Checked) -> TokenStream,
    fused_module: impl Fn(&Checked, FusedEpilogue<'_>) -> TokenStream,
) -> TokenStream {
    let name = &k.name;
    let vis = &k.vis;
    let attrs = &k.attrs;
    let sizes_struct = super::sizes_struct(&k.size_params);
    let spec = &k.source;
    let stage_modules = k.stages.iter().map(|s| stage_module(&s.kernel));
    let epilogues = fusion::epilogues(k);
    let fused_modules = epilogues.iter().map(|e| {
        let module = stage_path(&k.stages[e.stage], &quote!(super::super));
        let epilogue = FusedEpilogue {
            kernel: &k.stages[e.stage].kernel,
            fact: e,
            module,
        };
        fused_module(&k.stages[e.producer].kernel, epilogue)
    });
    let cpu = cpu_fn(k, &epilogues);
    let gpus = Backend::ALL.map(|b| gpu_module(k, b));
    let mpi = mpi_module(k);
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

            /// Each stage whose epilogue `cpu` fuses into its stores,
            /// named as the stage.
            pub mod fused {
                #(#fused_modules)*
            }

            #cpu

            #(#gpus)*

            #mpi
        }
    }
}

/// The sizes of stage `s`, from the kernel's `sizes`.
fn stage_sizes(k: &Staged<Checked>, s: &Stage<Checked>, root: &TokenStream) -> TokenStream {
    sizes_at(k, s, &stage_path(s, root))
}

/// The sizes of stage `s` as the `Sizes` of the module at `path`.
fn sizes_at(k: &Staged<Checked>, s: &Stage<Checked>, path: &TokenStream) -> TokenStream {
    let names = s.sizes.iter().map(|&i| &k.size_params[i]);
    let names2 = names.clone();
    quote!(#path::Sizes { #(#names: sizes.#names2),* })
}

/// The module of stage `s`, where the kernel's module is `root`.
fn stage_path(s: &Stage<Checked>, root: &TokenStream) -> TokenStream {
    let m = &s.kernel.name;
    quote!(#root::stages::#m)
}

/// `NAME::opencl::run` / `NAME::cuda::run`: the inputs and outputs copied
/// to the device, the stages' `launch` in order on them and on device
/// intermediates, the outputs copied back.
fn gpu_module(k: &Staged<Checked>, backend: Backend) -> TokenStream {
    let root = quote!(super);
    let module = quote::format_ident!("{}", backend.name());
    let params = host_args::declarations(
        &k.inputs,
        &k.outputs,
        &k.params,
        quote!(sizes: super::Sizes,),
    );
    let param_names: Vec<_> = k.params.iter().map(|p| &p.name).collect();
    let dev = |b: BufRef| quote::format_ident!("__d_{}", k.decl(b).name);
    let upload = |b: BufRef, mutable| upload(k.decl(b), &dev(b), mutable);
    let inputs = (0..k.inputs.len()).map(|i| upload(BufRef::Input(i), false));
    let outputs = (0..k.outputs.len()).map(|i| upload(BufRef::Output(i), true));
    let tmp_lens: Vec<TokenStream> = (0..k.tmps.len())
        .filter_map(|t| tmp_len(k, t, &root))
        .collect();
    let tmps = k.tmps.iter().enumerate().map(|(t, decl)| {
        let (d, dt) = (dev(BufRef::Tmp(t)), device_ty(decl.ty));
        quote! {
            let mut #d = __dev.buffer_from(
                &::std::vec![<#dt as ::core::default::Default>::default(); __tmp_lens[#t]])?;
        }
    });
    let host_lens = (k.inputs.iter().chain(&k.outputs)).map(|b| {
        let n = &b.name;
        quote!(#n.len())
    });
    let forward =
        (k.inputs.iter().chain(&k.outputs).map(|b| &b.name)).chain(param_names.iter().copied());
    let launches = k.stages.iter().map(|s| {
        let path = stage_path(s, &root);
        let sizes = stage_sizes(k, s, &root);
        let reads = s.reads.iter().map(|&b| dev(b));
        let writes = s.writes.iter().map(|&b| dev(b));
        quote!(#path::#module::launch(__dev, #(&#reads,)* #(&mut #writes,)* #(#param_names,)* #sizes)?;)
    });
    let downloads =
        (0..k.outputs.len()).map(|i| download(k.decl(BufRef::Output(i)), &dev(BufRef::Output(i))));
    let doc = format!(
        "Runs `{}` on `device` over host slices: copies the inputs and outputs in, launches \
         its stages in order (each stage's `launch`) on them and on intermediates allocated \
         on the device for the call, copies the outputs back. A call with an empty buffer runs \
         `cpu` instead.",
        k.name
    );
    backend_module(
        backend,
        "The kernel of stages on this backend's devices.",
        quote! {
                    #[doc = #doc]
                    pub fn run(__dev: &Device, #params) -> ::core::result::Result<(), ::mdh::Error> {
                        let __tmp_lens = [#(#tmp_lens),*];
                        // An empty buffer: nothing for a device to do, and a
                        // stage's `launch` takes no empty device buffer.
                        if [#(#host_lens,)*].contains(&0) || __tmp_lens.contains(&0) {
                            return super::cpu(#(#forward,)* sizes);
                        }
                        #(#inputs)*
                        #(#outputs)*
                        #(#tmps)*
                        #(#launches)*
                        #(#downloads)*
                        ::core::result::Result::Ok(())
                    }
        },
    )
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

/// The number of elements of intermediate `t`, as the stage that computes
/// it has it (an `Err` where it overflows), in code where `sizes` are the
/// kernel's.
fn tmp_len(k: &Staged<Checked>, t: usize, root: &TokenStream) -> Option<TokenStream> {
    let (s, j) = k.writer(BufRef::Tmp(t))?;
    let (path, sizes) = (stage_path(s, root), stage_sizes(k, s, root));
    Some(quote!({
        let __desc = #path::desc();
        __desc.elements(&__desc.outputs[#j], &#sizes.values())?
    }))
}

/// The body of a host entry point (`cpu`, `mpi::run`) where the kernel's
/// module is `root`: intermediates allocated for the call, then each
/// stage's `entry` (e.g. `cpu`, `mpi::run`) in order, `lead` before its
/// buffers; a producer of `epilogues` (the CPU's) runs its `fused` module's
/// `entry` instead, with its epilogue's output for the intermediate,
/// which is never allocated, and its epilogue's stage does not run.
fn host_chain(
    k: &Staged<Checked>,
    root: &TokenStream,
    entry: &TokenStream,
    lead: &TokenStream,
    epilogues: &[Epilogue],
) -> TokenStream {
    let param_names: Vec<_> = k.params.iter().map(|p| &p.name).collect();
    let fused_tmp = |t: usize| epilogues.iter().any(|e| e.tmp == t);
    let tmps = k.tmps.iter().enumerate().filter_map(|(t, d)| {
        if fused_tmp(t) {
            return None;
        }
        let (name, t, len) = (&d.name, ty(d.ty), tmp_len(k, t, root)?);
        Some(quote! {
            let mut #name: ::std::vec::Vec<#t> =
                ::std::vec![<#t as ::core::default::Default>::default(); #len];
        })
    });
    let calls = k.stages.iter().enumerate().map(|(i, s)| {
        if epilogues.iter().any(|e| e.stage == i) {
            return quote!();
        }
        let reads = s.reads.iter().map(|&b| arg(k, b, false));
        let Some(e) = epilogues.iter().find(|e| e.producer == i) else {
            let (path, sizes) = (stage_path(s, root), stage_sizes(k, s, root));
            let writes = s.writes.iter().map(|&b| arg(k, b, true));
            return quote!(#path::#entry(#lead #(#reads,)* #(#writes,)* #(#param_names,)* #sizes)?;);
        };
        let es = &k.stages[e.stage];
        let out = es.writes[0];
        let writes = s.writes.iter().map(|&b| {
            let b = if b == BufRef::Tmp(e.tmp) { out } else { b };
            arg(k, b, true)
        });
        let others = (es.reads.iter())
            .filter(|&&b| b != BufRef::Tmp(e.tmp))
            .map(|&b| arg(k, b, false));
        let esizes = stage_sizes(k, es, root);
        let m = &s.kernel.name;
        let sizes = sizes_at(k, s, &quote!(#root::fused::#m));
        quote! {
            #root::fused::#m::#entry(#lead #(#reads,)* #(#writes,)* #(#param_names,)* #sizes, #(#others,)* #esizes)?;
        }
    });
    quote! {
        #(#tmps)*
        #(#calls)*
        ::core::result::Result::Ok(())
    }
}

/// `NAME::mpi::run`: each stage's `mpi::run` in order on every rank, the
/// intermediates whole on every rank.
fn mpi_module(k: &Staged<Checked>) -> TokenStream {
    let params = host_args::declarations(
        &k.inputs,
        &k.outputs,
        &k.params,
        quote!(sizes: super::Sizes,),
    );
    let body = host_chain(k, &quote!(super), &quote!(mpi::run), &quote!(__comm,), &[]);
    let doc = format!(
        "Runs `{}` on every rank of `__comm`: its stages in order, each through its own \
         `mpi::run` (every rank passing the whole inputs and receiving the whole outputs), \
         the intermediates whole on every rank. Call it on every rank with the same sizes.",
        k.name
    );
    quote! {
        ::mdh::__if_mpi! {
            /// The kernel of stages on the ranks of an MPI communicator.
            pub mod mpi {
                use ::mdh::mpi::Communicator;

                #[doc = #doc]
                pub fn run<C: Communicator>(__comm: &C, #params) -> ::core::result::Result<(), ::mdh::Error> {
                    #body
                }
            }
        }
    }
}

/// `cpu`: the stages in order, each epilogue fused into its producer's
/// stores; `cpu_unfused`: every stage on its own, through memory.
fn cpu_fn(k: &Staged<Checked>, epilogues: &[Epilogue]) -> TokenStream {
    let params = host_args::declarations(&k.inputs, &k.outputs, &k.params, quote!(sizes: Sizes,));
    let body = host_chain(k, &quote!(self), &quote!(cpu), &quote!(), epilogues);
    let unfused = host_chain(k, &quote!(self), &quote!(cpu), &quote!(), &[]);
    let fused: Vec<String> = (epilogues.iter())
        .map(|e| {
            format!(
                "`{}` in `{}`",
                k.stages[e.stage].name, k.stages[e.producer].name
            )
        })
        .collect();
    let fused_doc = if fused.is_empty() {
        "No stage is an epilogue: every stage runs on its own.".to_string()
    } else {
        format!(
            "Epilogues fused into their producer's stores (no intermediate, no pass of their \
             own): {}.",
            fused.join(", ")
        )
    };
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
    let unfused_doc = format!(
        "`cpu` with every stage of `{}` run on its own, in order, each intermediate \
         through memory (what `cpu` runs where no stage is an epilogue).",
        k.name
    );
    quote! {
        #[doc = #doc]
        #[doc = ""]
        #[doc = #fused_doc]
        pub fn cpu(#params) -> ::core::result::Result<(), ::mdh::Error> {
            #body
        }

        #[doc = #unfused_doc]
        pub fn cpu_unfused(#params) -> ::core::result::Result<(), ::mdh::Error> {
            #unfused
        }
    }
}

#[cfg(test)]
mod tests;
