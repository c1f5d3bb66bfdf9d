//! Code generators: the module a kernel expands to, and its back ends.

pub mod c_expr;
pub mod cpu;
pub mod gpu;
pub mod gpu_api;
mod host_args;
pub mod mpi;
pub mod rust_expr;
pub mod rust_simd;
pub mod stages;

use proc_macro2::TokenStream;
use quote::quote;

use std::path::Path;

use crate::analysis::Checked;
use crate::config::Entries;
use crate::desc::{AffineDesc, BufDesc, KernelDesc, SizeOp};
use crate::spec::DimKind;

/// The module `NAME` with `Sizes`, `SPEC`, `desc()` and the back ends, for
/// the plans `entries` read from the config file at `config` (if any).
pub fn module(k: &Checked, entries: &Entries, config: Option<&Path>) -> TokenStream {
    let name = &k.name;
    let vis = &k.vis;
    let attrs = &k.attrs;
    let sizes_struct = sizes_struct(&k.size_params);
    let spec = &k.source;
    let desc = desc_tokens(&KernelDesc::from_kernel(k));
    let cpu = cpu::cpu_fn(k, &entries.cpu);
    let cpu_dyn = host_args::run_dyn(
        k,
        host_args::DynEntry {
            name: quote::format_ident!("cpu_dyn"),
            callee: quote!(self::cpu),
            sizes: quote!(self::Sizes),
        },
        quote!(),
        quote!(),
        quote!(),
    );
    let gpu = crate::backend::Backend::ALL.map(|b| gpu_api::gpu_module(k, b, entries.gpu(b)));
    let mpi = mpi::mpi_module(k, &entries.cpu);
    // Rebuild when the config file or the variables that locate it change.
    let tracked_file = config.and_then(|p| p.to_str()).map(|p| {
        quote!(
            const _: &[u8] = include_bytes!(#p);
        )
    });
    let env_vars = [
        crate::config::DIR_ENV_VAR.to_string(),
        crate::config::kernel_env_var(&k.name.to_string()),
    ];
    quote! {
        #(#attrs)*
        #[allow(non_snake_case, non_camel_case_types, unused, clippy::all)]
        #vis mod #name {
            #sizes_struct

            /// The kernel's source: the tuner and the reference interpreter
            /// (`mdh::reference::kernel(SPEC)`) read the kernel from it.
            pub const SPEC: &str = #spec;

            /// The run-time description of the index space and the views.
            pub fn desc() -> &'static ::mdh::__rt::KernelDesc {
                static DESC: ::mdh::__rt::OnceLock<::mdh::__rt::KernelDesc> = ::mdh::__rt::OnceLock::new();
                DESC.get_or_init(|| #desc)
            }

            #tracked_file
            #(const _: ::core::option::Option<&str> = ::core::option_env!(#env_vars);)*

            #cpu

            #cpu_dyn

            #(#gpu)*

            #mpi
        }
    }
}

/// The module of a stage with its epilogue fused into its stores (see
/// [`crate::fusion`]): its `Sizes`, `desc()`, a `cpu` that also takes
/// the epilogue's other inputs and sizes (`cpu::fused_cpu_fn`), the same
/// on MPI (`mpi::fused_mpi_module`) and, where the GPU fuses it
/// ([`crate::fusion::fuses_on_gpu`]), `opencl::launch` and `cuda::launch`
/// on device buffers (`gpu_api::fused_gpu_module`).
pub fn fused_module(
    k: &Checked,
    entries: &Entries,
    epilogue: cpu::FusedEpilogue<'_>,
) -> TokenStream {
    let name = &k.name;
    let sizes_struct = sizes_struct(&k.size_params);
    let desc = desc_tokens(&KernelDesc::from_kernel(k));
    let mpi = mpi::fused_mpi_module(k, epilogue.clone());
    let gpu: Vec<TokenStream> = if crate::fusion::fuses_on_gpu(k) {
        let gpu = |b| gpu_api::fused_gpu_module(k, b, entries.gpu(b), &epilogue);
        crate::backend::Backend::ALL.map(gpu).into()
    } else {
        Vec::new()
    };
    let cpu = cpu::fused_cpu_fn(k, &entries.cpu, epilogue);
    quote! {
        #[allow(non_snake_case, non_camel_case_types, unused, clippy::all)]
        pub mod #name {
            #sizes_struct

            /// The run-time description of the producing stage.
            pub fn desc() -> &'static ::mdh::__rt::KernelDesc {
                static DESC: ::mdh::__rt::OnceLock<::mdh::__rt::KernelDesc> = ::mdh::__rt::OnceLock::new();
                DESC.get_or_init(|| #desc)
            }

            #cpu

            #(#gpu)*

            #mpi
        }
    }
}

/// `Sizes`: one `usize` field per size parameter.
fn sizes_struct(sizes: &[proc_macro2::Ident]) -> TokenStream {
    let ns = sizes.len();
    let size_strs: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
    quote! {
            /// The values of the kernel's size parameters for one call.
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
            pub struct Sizes {
                #(pub #sizes: usize,)*
            }

            impl Sizes {
                /// The size parameters' names, in the order of [`Sizes::values`].
                pub const NAMES: [&'static str; #ns] = [#(#size_strs),*];

                /// The size parameters' values, in declaration order.
                pub fn values(&self) -> [usize; #ns] {
                    [#(self.#sizes),*]
                }
            }
    }
}

/// The path of a `DimKind` value in generated code.
pub(crate) fn dim_kind(k: DimKind) -> TokenStream {
    match k {
        DimKind::Cc => quote!(::mdh::__rt::DimKind::Cc),
        DimKind::Pw => quote!(::mdh::__rt::DimKind::Pw),
        DimKind::Ps => quote!(::mdh::__rt::DimKind::Ps),
    }
}

fn cow_slice(items: Vec<TokenStream>) -> TokenStream {
    quote!(::mdh::__rt::Cow::Owned(::std::vec![#(#items),*]))
}

fn size_code(code: &[SizeOp]) -> TokenStream {
    cow_slice(
        code.iter()
            .map(|op| match op {
                SizeOp::Const(c) => quote!(::mdh::__rt::SizeOp::Const(#c)),
                SizeOp::Param(p) => quote!(::mdh::__rt::SizeOp::Param(#p)),
                SizeOp::Add => quote!(::mdh::__rt::SizeOp::Add),
                SizeOp::Sub => quote!(::mdh::__rt::SizeOp::Sub),
                SizeOp::Mul => quote!(::mdh::__rt::SizeOp::Mul),
            })
            .collect(),
    )
}

fn affine(a: &AffineDesc) -> TokenStream {
    let dims = cow_slice(a.dims.iter().map(|c| quote!(#c)).collect());
    let sizes = cow_slice(a.sizes.iter().map(|c| quote!(#c)).collect());
    let c = a.constant;
    quote!(::mdh::__rt::AffineDesc { dims: #dims, sizes: #sizes, constant: #c })
}

fn buf(b: &BufDesc) -> TokenStream {
    let name = b.name.as_ref();
    let shape = cow_slice(b.shape.iter().map(|s| size_code(s)).collect());
    let accesses = cow_slice(
        b.accesses
            .iter()
            .map(|a| {
                let comps = cow_slice(a.components.iter().map(affine).collect());
                quote!(::mdh::__rt::AccessDesc { components: #comps })
            })
            .collect(),
    );
    let ty = quote::format_ident!("{}", format!("{:?}", b.ty));
    quote!(::mdh::__rt::BufDesc { name: ::mdh::__rt::Cow::Borrowed(#name), ty: ::mdh::__rt::ScalarType::#ty, shape: #shape, accesses: #accesses })
}

/// The tokens that rebuild `d` at run time in the generated module.
fn desc_tokens(d: &KernelDesc) -> TokenStream {
    let name = d.name.as_ref();
    let sp = cow_slice(
        d.size_params
            .iter()
            .map(|s| {
                let s = s.as_ref();
                quote!(::mdh::__rt::Cow::Borrowed(#s))
            })
            .collect(),
    );
    let dims = cow_slice(d.dims.iter().map(|c| size_code(c)).collect());
    let kinds = cow_slice(d.kinds.iter().map(|k| dim_kind(*k)).collect());
    let inputs = cow_slice(d.inputs.iter().map(buf).collect());
    let outputs = cow_slice(d.outputs.iter().map(buf).collect());
    let contraction = d.contraction;
    quote! {
        ::mdh::__rt::KernelDesc {
            name: ::mdh::__rt::Cow::Borrowed(#name),
            size_params: #sp,
            dims: #dims,
            kinds: #kinds,
            inputs: #inputs,
            outputs: #outputs,
            contraction: #contraction,
        }
    }
}
