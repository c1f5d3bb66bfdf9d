//! The argument lists the host entry points of every backend share (`cpu`,
//! `NAME::{opencl,cuda,mpi}::{run, run_with}`): the inputs as slices, the
//! outputs as mutable slices, the params, the sizes; and `run_dyn`, which
//! binds the reference interpreter's buffers and values to them.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::analysis::Checked;
use crate::codegen::rust_expr::ty;
use crate::spec::{BufferDecl, ParamDecl};

/// `in: &[T], …, out: &mut [T], …, param: T, …,` then `sizes` (the sizes'
/// declaration, e.g. `sizes: Sizes`).
pub(crate) fn params(k: &Checked, sizes: TokenStream) -> TokenStream {
    declarations(&k.inputs, &k.outputs, &k.params, sizes)
}

/// [`params`] of these buffers and params (a kernel of stages' too).
pub(crate) fn declarations(
    inputs: &[BufferDecl],
    outputs: &[BufferDecl],
    params: &[ParamDecl],
    sizes: TokenStream,
) -> TokenStream {
    let in_names = inputs.iter().map(|b| &b.name);
    let in_tys = inputs.iter().map(|b| ty(b.ty));
    let out_names = outputs.iter().map(|b| &b.name);
    let out_tys = outputs.iter().map(|b| ty(b.ty));
    let param_names = params.iter().map(|p| &p.name);
    let param_tys = params.iter().map(|p| ty(p.ty));
    quote! {
        #(#in_names: &[#in_tys],)*
        #(#out_names: &mut [#out_tys],)*
        #(#param_names: #param_tys,)*
        #sizes
    }
}

/// The names of [`params`]' buffers and params, forwarded: `in, …, out,
/// …, param, …,`.
pub(crate) fn forward(k: &Checked) -> TokenStream {
    let names = (k.inputs.iter().chain(&k.outputs))
        .map(|b| &b.name)
        .chain(k.params.iter().map(|p| &p.name));
    quote!(#(#names,)*)
}

/// An entry point on the reference interpreter's buffers and values: its
/// name, the typed entry point it calls and the path of `Sizes` where it
/// stands.
pub(crate) struct DynEntry {
    pub name: Ident,
    pub callee: TokenStream,
    pub sizes: TokenStream,
}

impl DynEntry {
    /// `run_dyn`, calling `run_with`, in a backend's module.
    pub fn run_with() -> DynEntry {
        DynEntry {
            name: format_ident!("run_dyn"),
            callee: quote!(run_with),
            sizes: quote!(super::Sizes),
        }
    }
}

/// `run_dyn` (or `entry.name`): `run_with` (or `entry.callee`) on the
/// reference interpreter's buffers and values, so that generic code (tests,
/// the tuner) can run any kernel; `generics`, `lead` and `lead_args` are
/// what the callee takes before the buffers (declared, and forwarded). A
/// buffer, param or size count that does not fit the kernel is an `Err`.
pub(crate) fn run_dyn(
    k: &Checked,
    entry: DynEntry,
    generics: TokenStream,
    lead: TokenStream,
    lead_args: TokenStream,
) -> TokenStream {
    let DynEntry {
        name: fn_name,
        callee,
        sizes: sizes_ty,
    } = entry;
    let in_names: Vec<&Ident> = k.inputs.iter().map(|b| &b.name).collect();
    let out_names: Vec<&Ident> = k.outputs.iter().map(|b| &b.name).collect();
    let param_names: Vec<&Ident> = k.params.iter().map(|p| &p.name).collect();
    let name_str = k.name.to_string();
    let size_names = &k.size_params;
    let in_idx = 0..k.inputs.len();
    let in_as = k.inputs.iter().map(|b| format_ident!("as_{}", b.ty.name()));
    let out_as_mut = k
        .outputs
        .iter()
        .map(|b| format_ident!("as_{}_mut", b.ty.name()));
    let param_idx = 0..k.params.len();
    let param_variants = k
        .params
        .iter()
        .map(|p| format_ident!("{}", format!("{:?}", p.ty)));
    let forward = forward(k);
    quote! {
        /// The kernel on the reference interpreter's buffers and
        /// values, so that generic code (tests, the tuner) can run
        /// any kernel.
        #[doc(hidden)]
        pub fn #fn_name #generics (
            #lead
            __inputs: &[::mdh::reference::Buffer],
            __outputs: &mut [::mdh::reference::Buffer],
            __params: &[::mdh::reference::Value],
            __sizes: &[usize],
        ) -> ::core::result::Result<(), ::mdh::Error> {
            let __arg = |what: &str| ::mdh::Error::Argument(::std::format!(
                "kernel `{}`: {what} does not fit the kernel", #name_str
            ));
            let [#(#size_names),*] = __sizes else { return ::core::result::Result::Err(__arg("the number of sizes")) };
            let __sizes = #sizes_ty { #(#size_names: *#size_names),* };
            #(let #in_names = __inputs.get(#in_idx).and_then(|b| b.#in_as()).ok_or_else(|| __arg("an input buffer"))?;)*
            let [#(#out_names),*] = __outputs else { return ::core::result::Result::Err(__arg("the number of outputs")) };
            #(let #out_names = #out_names.#out_as_mut().ok_or_else(|| __arg("an output buffer"))?;)*
            #(let #param_names = match __params.get(#param_idx) {
                ::core::option::Option::Some(::mdh::reference::Value::#param_variants(x)) => *x,
                _ => return ::core::result::Result::Err(__arg("a param")),
            };)*
            #callee(#lead_args #forward __sizes)
        }
    }
}
