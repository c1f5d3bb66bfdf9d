//! The generated Rust wrappers of the GPU kernels: `NAME::opencl::{run,
//! launch, source}` over the facade's OpenCL runtime. They validate their
//! arguments with the kernel's `desc()`, let the facade choose the plan and
//! complete the source template (`mdh::__rt::gpu`), and launch `mdh_main`,
//! then the second pass and the scans when the kernel needs them.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::codegen::c_expr::Dialect;
use crate::codegen::gpu::{has_identity, template};
use crate::codegen::rust_expr::ty;
use crate::gpu_plan::GpuPlan;
use crate::plan::elem_bytes;
use crate::spec::{Kernel, ScalarType};

/// One tuned GPU entry, as read from the config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuEntryCfg {
    pub plan: GpuPlan,
    pub device: String,
    pub sizes: Option<Vec<usize>>,
}

/// The element type of a device buffer holding values of type `t` (bool is
/// stored as bytes 0 / 1).
fn device_ty(t: ScalarType) -> TokenStream {
    if t == ScalarType::Bool {
        quote!(u8)
    } else {
        ty(t)
    }
}

fn entries_tokens(entries: &[GpuEntryCfg]) -> TokenStream {
    let items = entries.iter().map(|e| {
        let GpuPlan {
            groups,
            items,
            tile,
            local,
            blocked,
        } = &e.plan;
        let device = &e.device;
        let sizes = match &e.sizes {
            Some(s) => quote!(::core::option::Option::Some(&[#(#s),*])),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            ::mdh::__rt::gpu::GpuEntry {
                plan: ::mdh::__rt::GpuPlan {
                    groups: ::std::vec![#(#groups),*],
                    items: ::std::vec![#(#items),*],
                    tile: ::std::vec![#(#tile),*],
                    local: ::std::vec![#(#local),*],
                    blocked: #blocked,
                },
                device: #device,
                sizes: #sizes,
            }
        }
    });
    quote!(::std::vec![#(#items),*])
}

/// `pub mod opencl { … }`, kept or dropped by the facade's `opencl` feature.
pub fn opencl_module(k: &Kernel, entries: &[GpuEntryCfg]) -> TokenStream {
    let src = template(k, Dialect::OpenCl);
    let in_names: Vec<&Ident> = k.inputs.iter().map(|b| &b.name).collect();
    let out_names: Vec<&Ident> = k.outputs.iter().map(|b| &b.name).collect();
    let in_tys: Vec<TokenStream> = k.inputs.iter().map(|b| ty(b.ty)).collect();
    let out_tys: Vec<TokenStream> = k.outputs.iter().map(|b| ty(b.ty)).collect();
    let in_dev: Vec<TokenStream> = k.inputs.iter().map(|b| device_ty(b.ty)).collect();
    let out_dev: Vec<TokenStream> = k.outputs.iter().map(|b| device_ty(b.ty)).collect();
    let param_names: Vec<&Ident> = k.params.iter().map(|p| &p.name).collect();
    let param_tys: Vec<TokenStream> = k.params.iter().map(|p| ty(p.ty)).collect();
    let param_args: Vec<TokenStream> = k
        .params
        .iter()
        .map(|p| {
            let n = &p.name;
            if p.ty == ScalarType::Bool {
                quote!(u8::from(#n))
            } else {
                quote!(#n)
            }
        })
        .collect();
    let in_bytes: Vec<usize> = k.inputs.iter().map(|b| elem_bytes(b.ty)).collect();
    let out_access_tys: Vec<ScalarType> = k
        .output_accesses()
        .iter()
        .map(|(b, _)| k.outputs[*b].ty)
        .collect();
    let acc_bytes: Vec<usize> = out_access_tys.iter().map(|&t| elem_bytes(t)).collect();
    let identity: Vec<bool> = (0..out_access_tys.len())
        .map(|o| has_identity(k, o))
        .collect();
    let parts: Vec<Ident> = (0..out_access_tys.len())
        .map(|o| format_ident!("__part{}", o))
        .collect();
    let part_tys: Vec<TokenStream> = out_access_tys.iter().map(|&t| device_ty(t)).collect();
    let d_in: Vec<Ident> = in_names
        .iter()
        .map(|n| format_ident!("__d_{}", n))
        .collect();
    let d_out: Vec<Ident> = out_names
        .iter()
        .map(|n| format_ident!("__d_{}", n))
        .collect();
    let upload_in = k.inputs.iter().zip(&in_names).zip(&d_in).map(|((b, n), d)| {
        if b.ty == ScalarType::Bool {
            quote!(let #d = __dev.buffer_from(&#n.iter().map(|&x| u8::from(x)).collect::<::std::vec::Vec<u8>>())?;)
        } else {
            quote!(let #d = __dev.buffer_from(#n)?;)
        }
    });
    let upload_out = k.outputs.iter().zip(&out_names).zip(&d_out).map(|((b, n), d)| {
        if b.ty == ScalarType::Bool {
            quote!(let mut #d = __dev.buffer_from(&#n.iter().map(|&x| u8::from(x)).collect::<::std::vec::Vec<u8>>())?;)
        } else {
            quote!(let mut #d = __dev.buffer_from(#n)?;)
        }
    });
    let download = k
        .outputs
        .iter()
        .zip(&out_names)
        .zip(&d_out)
        .map(|((b, n), d)| {
            if b.ty == ScalarType::Bool {
                quote! {
                    let mut __bytes = ::std::vec![0u8; #n.len()];
                    __dev.read(&#d, &mut __bytes)?;
                    for (__o, __b) in #n.iter_mut().zip(__bytes) { *__o = __b != 0; }
                }
            } else {
                quote!(__dev.read(&#d, #n)?;)
            }
        });
    let entries = entries_tokens(entries);
    let name_str = k.name.to_string();
    let size_names = &k.size_params;
    let in_idx = 0..k.inputs.len();
    let in_as: Vec<Ident> = k
        .inputs
        .iter()
        .map(|b| format_ident!("as_{}", b.ty.name()))
        .collect();
    let out_as_mut: Vec<Ident> = k
        .outputs
        .iter()
        .map(|b| format_ident!("as_{}_mut", b.ty.name()))
        .collect();
    let param_idx = 0..k.params.len();
    let param_variants: Vec<Ident> = k
        .params
        .iter()
        .map(|p| format_ident!("{}", format!("{:?}", p.ty)))
        .collect();
    quote! {
        ::mdh::__if_opencl! {
            /// The kernel on OpenCL devices (the facade's `opencl` feature).
            pub mod opencl {
                use ::mdh::opencl::{Buffer, Device};

                /// The OpenCL C source template; [`source`] completes it for
                /// one call.
                pub const TEMPLATE: &str = #src;

                const INFO: ::mdh::__rt::gpu::KernelInfo = ::mdh::__rt::gpu::KernelInfo {
                    template: TEMPLATE,
                    in_bytes: &[#(#in_bytes),*],
                    acc_bytes: &[#(#acc_bytes),*],
                    identity: &[#(#identity),*],
                };

                fn __entries() -> ::std::vec::Vec<::mdh::__rt::gpu::GpuEntry> {
                    #entries
                }

                /// The complete OpenCL C source compiled for `sizes` (on a
                /// device without particular limits).
                pub fn source(sizes: &super::Sizes) -> ::std::string::String {
                    ::mdh::__rt::gpu::source(super::desc(), &INFO, &__entries(), &sizes.values())
                }

                /// Runs the kernel on `device` over host slices: copies in,
                /// launches, copies the outputs back.
                pub fn run(
                    __dev: &Device,
                    #(#in_names: &[#in_tys],)*
                    #(#out_names: &mut [#out_tys],)*
                    #(#param_names: #param_tys,)*
                    __sizes: super::Sizes,
                ) -> ::core::result::Result<(), ::mdh::Error> {
                    run_with(__dev, ::core::option::Option::None, #(#in_names,)* #(#out_names,)* #(#param_names,)* __sizes)
                }

                /// [`run`] with a given plan instead of the configured ones
                /// (for the tuner and tests); an invalid plan, or one the
                /// device cannot run, is an `Err`.
                #[doc(hidden)]
                pub fn run_with(
                    __dev: &Device,
                    __plan: ::core::option::Option<&::mdh::__rt::GpuPlan>,
                    #(#in_names: &[#in_tys],)*
                    #(#out_names: &mut [#out_tys],)*
                    #(#param_names: #param_tys,)*
                    __sizes: super::Sizes,
                ) -> ::core::result::Result<(), ::mdh::Error> {
                    let __bound = super::desc().bind(
                        &__sizes.values(),
                        &[#(#in_names.len()),*],
                        &[#(#out_names.len()),*],
                    )?;
                    #(#upload_in)*
                    #(#upload_out)*
                    __launch(__dev, &__bound, __plan, #(&#d_in,)* #(&mut #d_out,)* #(#param_names,)*)?;
                    #(#download)*
                    ::core::result::Result::Ok(())
                }

                /// [`run_with`] on the reference interpreter's buffers and
                /// values, so that generic code (tests, the tuner) can run
                /// any kernel.
                #[doc(hidden)]
                pub fn run_dyn(
                    __dev: &Device,
                    __plan: ::core::option::Option<&::mdh::__rt::GpuPlan>,
                    __inputs: &[::mdh::reference::Buffer],
                    __outputs: &mut [::mdh::reference::Buffer],
                    __params: &[::mdh::reference::Value],
                    __sizes: &[usize],
                ) -> ::core::result::Result<(), ::mdh::Error> {
                    let __arg = |what: &str| ::mdh::Error::Argument(::std::format!(
                        "kernel `{}`: {what} does not fit the kernel", #name_str
                    ));
                    let [#(#size_names),*] = __sizes else { return ::core::result::Result::Err(__arg("the number of sizes")) };
                    let __sizes = super::Sizes { #(#size_names: *#size_names),* };
                    #(let #in_names = __inputs.get(#in_idx).and_then(|b| b.#in_as()).ok_or_else(|| __arg("an input buffer"))?;)*
                    let [#(#out_names),*] = __outputs else { return ::core::result::Result::Err(__arg("the number of outputs")) };
                    #(let #out_names = #out_names.#out_as_mut().ok_or_else(|| __arg("an output buffer"))?;)*
                    #(let #param_names = match __params.get(#param_idx) {
                        ::core::option::Option::Some(::mdh::reference::Value::#param_variants(x)) => *x,
                        _ => return ::core::result::Result::Err(__arg("a param")),
                    };)*
                    run_with(__dev, __plan, #(#in_names,)* #(#out_names,)* #(#param_names,)* __sizes)
                }

                /// Runs the kernel on device buffers (bool buffers hold bytes
                /// 0 / 1).
                pub fn launch(
                    __dev: &Device,
                    #(#in_names: &Buffer<#in_dev>,)*
                    #(#out_names: &mut Buffer<#out_dev>,)*
                    #(#param_names: #param_tys,)*
                    __sizes: super::Sizes,
                ) -> ::core::result::Result<(), ::mdh::Error> {
                    let __bound = super::desc().bind(
                        &__sizes.values(),
                        &[#(__dev.buffer_len(#in_names)?),*],
                        &[#(__dev.buffer_len(#out_names)?),*],
                    )?;
                    __launch(__dev, &__bound, ::core::option::Option::None, #(#in_names,)* #(#out_names,)* #(#param_names,)*)
                }

                fn __launch(
                    __dev: &Device,
                    __bound: &::mdh::__rt::Bound,
                    __plan: ::core::option::Option<&::mdh::__rt::GpuPlan>,
                    #(#in_names: &Buffer<#in_dev>,)*
                    #(#out_names: &mut Buffer<#out_dev>,)*
                    #(#param_names: #param_tys,)*
                ) -> ::core::result::Result<(), ::mdh::Error> {
                    let __limits = ::mdh::__rt::gpu::DeviceLimits {
                        max_items: __dev.max_work_group_size(),
                        local_bytes: __dev.local_mem_bytes(),
                    };
                    let ::core::option::Option::Some(__job) = ::mdh::__rt::gpu::job(
                        super::desc(), __bound, &INFO, &__entries(), __plan, __dev.name(), __limits,
                    )? else {
                        return ::core::result::Result::Ok(());
                    };
                    let __prog = __dev.program(&__job.source, "")?;
                    #(let #parts = __dev.buffer::<#part_tys>(__job.partial_len)?;)*
                    __prog
                        .kernel("mdh_main")?
                        #(.arg_buffer(#in_names))*
                        #(.arg_buffer(#out_names))*
                        #(.arg_buffer(&#parts))*
                        #(.arg_scalar(#param_args))*
                        .run(&[__job.main_global], &[__job.main_local])?;
                    if let ::core::option::Option::Some(__global) = __job.combine_global {
                        __prog
                            .kernel("mdh_combine")?
                            #(.arg_buffer(#out_names))*
                            #(.arg_buffer(&#parts))*
                            #(.arg_scalar(#param_args))*
                            .run(&[__global], &[__job.pass_local])?;
                    }
                    for &(__d, __global) in &__job.scans {
                        __prog
                            .kernel(&::std::format!("mdh_scan{}", __d))?
                            #(.arg_buffer(#out_names))*
                            #(.arg_scalar(#param_args))*
                            .run(&[__global], &[__job.pass_local])?;
                    }
                    ::core::result::Result::Ok(())
                }
            }
        }
    }
}
