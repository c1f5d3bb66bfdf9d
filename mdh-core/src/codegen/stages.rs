//! The module of a kernel of stages: `Sizes`, `SPEC`, the stages (each the
//! module of a kernel of one md_hom, in `stages`) and the entry points
//! `cpu`, `opencl::run`, `cuda::run` and `mpi::run`, which run the stages'
//! own entry points in order on the caller's buffers and on intermediates
//! they allocate for the call (on the device for the GPUs). On the CPU, a
//! stage with an epilogue ([`crate::fusion`]) runs its module in `fused`
//! instead, the epilogue in its stores; `cpu_unfused` runs every stage.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::analysis::Checked;
use crate::backend::Backend;
use crate::codegen::cpu::FusedEpilogue;
use crate::codegen::gpu_api::{backend_module, device_ty, download, upload};
use crate::codegen::host_args;
use crate::codegen::rust_expr::ty;
use crate::fusion::{Epilogue, Fusion, GroupBuffer, Named, RowGroup, Rows};
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
    let fusion = Fusion::of(k);
    let fused_modules = fusion.epilogues.iter().map(|e| {
        let epilogue = FusedEpilogue {
            kernel: &k.stages[e.stage].kernel,
            fact: e,
            module: stage_path(&k.stages[e.stage], &quote!(super::super)),
            producer: stage_path(&k.stages[e.producer], &quote!(super::super)),
        };
        fused_module(&k.stages[e.producer].kernel, epilogue)
    });
    let cpu = cpu_fn(k, &fusion);
    let gpus = Backend::ALL.map(|b| gpu_module(k, b, &fusion));
    let mpi = mpi_module(k, &fusion);
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
    sizes_with(k, s, path, None)
}

/// [`sizes_at`], with `rows` (a size parameter of the kernel and its
/// value) in place of that parameter's value.
fn sizes_with(
    k: &Staged<Checked>,
    s: &Stage<Checked>,
    path: &TokenStream,
    rows: Option<(usize, &TokenStream)>,
) -> TokenStream {
    let fields = s.sizes.iter().map(|&i| {
        let name = &k.size_params[i];
        match rows {
            Some((r, value)) if r == i => quote!(#name: #value),
            _ => quote!(#name: sizes.#name),
        }
    });
    quote!(#path::Sizes { #(#fields),* })
}

/// The module of stage `s`, where the kernel's module is `root`.
fn stage_path(s: &Stage<Checked>, root: &TokenStream) -> TokenStream {
    let m = &s.kernel.name;
    quote!(#root::stages::#m)
}

/// `NAME::opencl::run` / `NAME::cuda::run`: the inputs and outputs copied
/// to the device, the stages' `launch` in order on them and on device
/// intermediates, the outputs copied back. A producer of an epilogue that
/// the GPU fuses ([`crate::fusion::fuses_on_gpu`]) runs its `fused`
/// module's `launch` instead, into the epilogue's output: its intermediate
/// is never allocated and its epilogue's stage does not run.
fn gpu_module(k: &Staged<Checked>, backend: Backend, fusion: &Fusion) -> TokenStream {
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
    let epilogues: Vec<&Epilogue> = (fusion.epilogues.iter())
        .filter(|e| crate::fusion::fuses_on_gpu(&k.stages[e.producer].kernel))
        .collect();
    let tmps = k
        .tmps
        .iter()
        .enumerate()
        .filter(|(t, _)| !epilogues.iter().any(|e| e.tmp == *t));
    let tmps = tmps.map(|(t, decl)| {
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
    let launches = k.stages.iter().enumerate().map(|(i, s)| {
        if epilogues.iter().any(|e| e.stage == i) {
            return quote!();
        }
        let reads = s.reads.iter().map(|&b| dev(b));
        let Some(e) = epilogues.iter().find(|e| e.producer == i) else {
            let path = stage_path(s, &root);
            let sizes = stage_sizes(k, s, &root);
            let writes = s.writes.iter().map(|&b| dev(b));
            return quote!(#path::#module::launch(__dev, #(&#reads,)* #(&mut #writes,)* #(#param_names,)* #sizes)?;);
        };
        let es = &k.stages[e.stage];
        let out = es.writes[0];
        let writes = (s.writes.iter()).map(|&b| dev(if b == BufRef::Tmp(e.tmp) { out } else { b }));
        let others = (es.reads.iter())
            .filter(|&&b| b != BufRef::Tmp(e.tmp))
            .map(|&b| dev(b));
        let esizes = stage_sizes(k, es, &root);
        let m = &s.kernel.name;
        let sizes = sizes_at(k, s, &quote!(#root::fused::#m));
        quote! {
            #root::fused::#m::#module::launch(__dev, #(&#reads,)* #(&mut #writes,)* #(#param_names,)* #sizes, #(&#others,)* #esizes)?;
        }
    });
    let downloads =
        (0..k.outputs.len()).map(|i| download(k.decl(BufRef::Output(i)), &dev(BufRef::Output(i))));
    let doc = format!(
        "Runs `{}` on `device` over host slices: copies the inputs and outputs in, launches \
         its stages in order (each stage's `launch`, a stage with an epilogue fused into its \
         stores with it) on them and on intermediates allocated on the device for the call, \
         copies the outputs back. A call with an empty buffer runs `cpu` instead.",
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
/// buffers. Where `fusion` (the CPU's) has them, a producer of an epilogue
/// runs its `fused` module's `entry` instead, with its epilogue's output
/// for the intermediate, which is never allocated, and its epilogue's
/// stage does not run; and a row group runs tile by tile (`row_group`).
fn host_chain(
    k: &Staged<Checked>,
    root: &TokenStream,
    entry: &TokenStream,
    lead: &TokenStream,
    fusion: &Fusion,
) -> TokenStream {
    let not_whole = |t: usize| {
        fusion.epilogues.iter().any(|e| e.tmp == t)
            || fusion.rows.iter().any(|g| g.local.contains(&t))
    };
    let tmps = (0..k.tmps.len())
        .filter(|&t| !not_whole(t))
        .map(|t| alloc_tmp(k, t, root, None));
    let calls = (0..k.stages.len()).map(|i| {
        if let Some(g) = fusion.rows.iter().find(|g| g.stages.contains(&i)) {
            return if g.stages.start == i {
                row_group(k, g, root, entry)
            } else {
                quote!()
            };
        }
        if fusion.epilogues.iter().any(|e| e.stage == i) {
            return quote!();
        }
        match fusion.epilogues.iter().find(|e| e.producer == i) {
            Some(e) => fused_call(k, e, root, entry, lead),
            None => stage_call(k, i, root, entry, lead, None),
        }
    });
    quote! {
        #(#tmps)*
        #(#calls)*
        ::core::result::Result::Ok(())
    }
}

/// `let mut NAME = ...;`: intermediate `t`, all of it, in the buffer this
/// entry point keeps for it between calls (`mdh::__rt::Kept`; refilled
/// with zeros unless its stage writes all of it), or (with
/// `len`, a tile's rows) that many elements in a new `Vec`: a tile's rows
/// are few, and tiles run at the same time.
fn alloc_tmp(
    k: &Staged<Checked>,
    t: usize,
    root: &TokenStream,
    len: Option<TokenStream>,
) -> TokenStream {
    let d = &k.tmps[t];
    let (name, ty) = (&d.name, ty(d.ty));
    if let Some(len) = len {
        return quote! {
            let mut #name: ::std::vec::Vec<#ty> =
                ::std::vec![<#ty as ::core::default::Default>::default(); #len];
        };
    }
    let Some(len) = tmp_len(k, t, root) else {
        return quote!();
    };
    let zero = !crate::check::stages::written_whole(k, t);
    quote! {
        let mut #name = {
            static __KEPT: ::mdh::__rt::Kept<#ty> = ::mdh::__rt::Kept::new();
            __KEPT.take(#len, #zero)
        };
    }
}

/// Stage `i`'s `entry` on the kernel's buffers; with `rows` (the rows'
/// size parameter and its value) at that count of rows.
fn stage_call(
    k: &Staged<Checked>,
    i: usize,
    root: &TokenStream,
    entry: &TokenStream,
    lead: &TokenStream,
    rows: Option<(usize, &TokenStream)>,
) -> TokenStream {
    let s = &k.stages[i];
    let param_names = k.params.iter().map(|p| &p.name);
    let path = stage_path(s, root);
    let sizes = sizes_with(k, s, &path, rows);
    let reads = s.reads.iter().map(|&b| arg(k, b, false));
    let writes = s.writes.iter().map(|&b| arg(k, b, true));
    quote!(#path::#entry(#lead #(#reads,)* #(#writes,)* #(#param_names,)* #sizes)?;)
}

/// The producer of epilogue `e` run with it (its `fused` module's `entry`).
fn fused_call(
    k: &Staged<Checked>,
    e: &Epilogue,
    root: &TokenStream,
    entry: &TokenStream,
    lead: &TokenStream,
) -> TokenStream {
    let (s, es) = (&k.stages[e.producer], &k.stages[e.stage]);
    let param_names = k.params.iter().map(|p| &p.name);
    let reads = s.reads.iter().map(|&b| arg(k, b, false));
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
}

/// The stages of row group `g` run tile by tile of rows ([`fusion::rows`]):
/// in parallel over the tiles, each tile's stages in order on its rows of
/// the sliced buffers (and its own rows of the group's local
/// intermediates), each through its own `entry` at the tile's count of
/// rows. Where a sliced buffer's length is not its shape's, or a row is
/// empty, the stages run one after the other on the whole buffers, as
/// unfused, and report what is wrong as they would.
fn row_group(
    k: &Staged<Checked>,
    g: &RowGroup,
    root: &TokenStream,
    entry: &TokenStream,
) -> TokenStream {
    let rows_name = &k.size_params[g.rows];
    let tile = quote!((__hi - __lo));
    let sliced_named: Vec<&GroupBuffer> = (g.buffers.iter())
        .filter(|x| x.rows == Rows::Sliced)
        .collect();
    let sliced: Vec<BufRef> = sliced_named.iter().map(|x| x.buf).collect();
    let local = |b: BufRef| matches!(b, BufRef::Tmp(t) if g.local.contains(&t));
    // The elements of each sliced buffer at the call's sizes, as the first
    // stage that names it has them.
    let count = |b: BufRef| format_ident!("__n_{}", k.decl(b).name);
    let per_row = |b: BufRef| format_ident!("__row_{}", k.decl(b).name);
    let counts = sliced_named.iter().map(|x| {
        let (n, len) = (count(x.buf), elements(k, x.named, root));
        quote!(let #n: usize = #len;)
    });
    let shaped = sliced.iter().filter(|&&b| !local(b)).map(|&b| {
        let (n, name) = (count(b), &k.decl(b).name);
        quote!(&& #name.len() == #n)
    });
    let nonempty = sliced.iter().map(|&b| {
        let n = count(b);
        quote!(&& #n > 0)
    });
    let unfused_tmps = g.local.iter().map(|&t| alloc_tmp(k, t, root, None));
    let unfused_calls = g
        .stages
        .clone()
        .map(|i| stage_call(k, i, root, entry, &quote!(), None));
    let per_rows = sliced.iter().map(|&b| {
        let (r, n) = (per_row(b), count(b));
        quote!(let #r: usize = #n / __rows;)
    });
    let row_bytes = sliced.iter().map(|&b| {
        let (r, t) = (per_row(b), ty(k.decl(b).ty));
        quote!(+ #r * ::core::mem::size_of::<#t>())
    });
    // Sliced buffers the group writes (outputs, intermediates of the
    // call): one `&mut` part per tile, handed to the tile's closure.
    let parted: Vec<BufRef> = (sliced.iter().copied())
        .filter(|&b| !local(b) && g.writes(k, b))
        .collect();
    let part_iters = parted.iter().map(|&b| {
        let (name, r) = (&k.decl(b).name, per_row(b));
        let it = format_ident!("__parts_{}", name);
        quote!(let mut #it = #name.chunks_mut(__tile * #r);)
    });
    let part_next = parted.iter().map(|&b| {
        let it = format_ident!("__parts_{}", k.decl(b).name);
        quote!(#it.next().unwrap_or_default())
    });
    let part_names: Vec<_> = parted.iter().map(|&b| &k.decl(b).name).collect();
    // What the group only reads, shared by every tile (outputs and
    // intermediates as `&[T]`).
    let shared = (g.buffers.iter())
        .map(|x| x.buf)
        .filter(|&b| !matches!(b, BufRef::Input(_)) && !local(b) && !g.writes(k, b))
        .map(|b| {
            let name = &k.decl(b).name;
            quote!(let #name = &#name[..];)
        });
    let tile_reads = sliced
        .iter()
        .filter(|&&b| !local(b) && !parted.contains(&b))
        .map(|&b| {
            let (name, r) = (&k.decl(b).name, per_row(b));
            quote!(let #name = &#name[__lo * #r..__hi * #r];)
        });
    let tile_tmps = g.local.iter().map(|&t| {
        let r = per_row(BufRef::Tmp(t));
        alloc_tmp(k, t, root, Some(quote!(#r * #tile)))
    });
    // A stage that writes only outputs of the kernel streams its rows
    // where the whole call's outputs would (`mdh::stream::within_call`).
    let finals = (parted.iter()).filter(|b| matches!(b, BufRef::Output(_)));
    let final_bytes = finals.map(|&b| {
        let name = &k.decl(b).name;
        quote!(+ ::core::mem::size_of_val(&*#name))
    });
    let writes_finals =
        |i: usize| (k.stages[i].writes.iter()).all(|b| matches!(b, BufRef::Output(_)));
    let final_bytes = (g.stages.clone().any(writes_finals))
        .then(|| quote!(let __final_bytes: usize = 0usize #(#final_bytes)*;));
    let tile_calls = g.stages.clone().map(|i| {
        let call = stage_call(k, i, root, entry, &quote!(), Some((g.rows, &tile)));
        if writes_finals(i) {
            quote! {
                ::mdh::__rt::stream_within_call(__final_bytes, || {
                    #call
                    ::core::result::Result::<(), ::mdh::Error>::Ok(())
                })?;
            }
        } else {
            call
        }
    });
    quote! {
        {
            let __rows: usize = sizes.#rows_name;
            #(#counts)*
            if !(__rows > 0 #(#nonempty)* #(#shaped)*) {
                #(#unfused_tmps)*
                #(#unfused_calls)*
            } else {
                #(#per_rows)*
                let __tile: usize = ::mdh::__rt::row_tile(__rows, 0usize #(#row_bytes)*);
                #final_bytes
                #(#part_iters)*
                let __work: ::std::vec::Vec<_> = (0..__rows.div_ceil(__tile))
                    .map(|__t| (__t * __tile, ((__t + 1) * __tile).min(__rows), #(#part_next,)*))
                    .collect();
                #(#shared)*
                ::mdh::__rt::for_each_tile(__work, |(__lo, __hi, #(#part_names,)*)| {
                    #(#tile_reads)*
                    #(#tile_tmps)*
                    #(#tile_calls)*
                    ::core::result::Result::Ok(())
                })?;
            }
        }
    }
}

/// The elements of the buffer `named` names at the call's sizes, as its
/// stage has them (an `Err` where it overflows).
fn elements(k: &Staged<Checked>, named: Named, root: &TokenStream) -> TokenStream {
    let s = &k.stages[named.stage];
    let (j, list) = (
        named.at,
        if named.output {
            quote!(outputs)
        } else {
            quote!(inputs)
        },
    );
    let (path, sizes) = (stage_path(s, root), stage_sizes(k, s, root));
    quote!({
        let __desc = #path::desc();
        __desc.elements(&__desc.#list[#j], &#sizes.values())?
    })
}

/// `NAME::mpi::run`: each stage's `mpi::run` in order on every rank, the
/// intermediates whole on every rank; a producer of an epilogue runs its
/// `fused` module's `mpi::run`, the epilogue applied after the collectives
/// that combine its parts.
fn mpi_module(k: &Staged<Checked>, fusion: &Fusion) -> TokenStream {
    let params = host_args::declarations(
        &k.inputs,
        &k.outputs,
        &k.params,
        quote!(sizes: super::Sizes,),
    );
    let epilogues = Fusion {
        epilogues: fusion.epilogues.clone(),
        rows: Vec::new(),
    };
    let body = host_chain(
        k,
        &quote!(super),
        &quote!(mpi::run),
        &quote!(__comm,),
        &epilogues,
    );
    let doc = format!(
        "Runs `{}` on every rank of `__comm`: its stages in order, each through its own \
         `mpi::run` (every rank passing the whole inputs and receiving the whole outputs), \
         the intermediates whole on every rank; an epilogue maps its producer's results \
         on each rank's part once the collectives have combined them. Call it on every \
         rank with the same sizes.",
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
/// stores and each row group run tile by tile; `cpu_unfused`: every stage
/// on its own, through memory.
fn cpu_fn(k: &Staged<Checked>, fusion: &Fusion) -> TokenStream {
    let params = host_args::declarations(&k.inputs, &k.outputs, &k.params, quote!(sizes: Sizes,));
    let body = host_chain(k, &quote!(self), &quote!(cpu), &quote!(), fusion);
    let unfused = host_chain(
        k,
        &quote!(self),
        &quote!(cpu),
        &quote!(),
        &Fusion::default(),
    );
    let names = |stages: &mut dyn Iterator<Item = usize>| -> Vec<String> {
        stages.map(|s| format!("`{}`", k.stages[s].name)).collect()
    };
    let mut fused: Vec<String> = (fusion.epilogues.iter())
        .map(|e| {
            format!(
                "epilogue `{}` in `{}`'s stores",
                k.stages[e.stage].name, k.stages[e.producer].name
            )
        })
        .collect();
    fused.extend(fusion.rows.iter().map(|g| {
        format!(
            "{} along the rows of `{}`, tile by tile",
            names(&mut g.stages.clone()).join(", "),
            k.size_params[g.rows]
        )
    }));
    let fused_doc = if fused.is_empty() {
        "No stages fuse: every stage runs on its own.".to_string()
    } else {
        format!("Fused: {}.", fused.join("; "))
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
         through memory (what `cpu` runs where no stages fuse).",
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
