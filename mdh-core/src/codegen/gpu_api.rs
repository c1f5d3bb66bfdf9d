//! The generated Rust wrappers of the GPU kernels: `NAME::opencl::{run, tune,
//! launch, source}` and `NAME::cuda::{run, tune, launch, source}` over the
//! facade's runtimes, from one generator ([`gpu_module`]) whose backend
//! differences are the methods of [`Backend`]. The wrappers validate their
//! arguments with the kernel's `desc()`, let the facade choose the plan and
//! complete the source template (`mdh::__rt::gpu`), and run the launches of
//! its job: `mdh_main`, then the second pass and the scans when the kernel
//! needs them.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::analysis::Checked;
use crate::codegen::c_expr::Dialect;
use crate::codegen::gpu::template;
use crate::codegen::host_args;
use crate::codegen::rust_expr::ty;
use crate::config::GpuEntryCfg;
use crate::gpu_plan::{GpuPlan, PlanValue};
use crate::plan::elem_bytes;
use crate::spec::ScalarType;

/// A GPU back end of the generated module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    OpenCl,
    Cuda,
}

/// Everything the wrappers of the two back ends do differently.
impl Backend {
    pub fn dialect(self) -> Dialect {
        match self {
            Backend::OpenCl => Dialect::OpenCl,
            Backend::Cuda => Dialect::Cuda,
        }
    }

    /// The name of the backend in configs and of the generated module.
    pub fn name(self) -> &'static str {
        match self {
            Backend::OpenCl => "opencl",
            Backend::Cuda => "cuda",
        }
    }

    /// The facade macro that keeps the module when its feature is on.
    fn gate(self) -> TokenStream {
        match self {
            Backend::OpenCl => quote!(::mdh::__if_opencl!),
            Backend::Cuda => quote!(::mdh::__if_cuda!),
        }
    }

    fn doc(self) -> &'static str {
        match self {
            Backend::OpenCl => "The kernel on OpenCL devices (the facade's `opencl` feature): OpenCL C compiled by the device's driver.",
            Backend::Cuda => "The kernel on CUDA devices (the facade's `cuda` feature): CUDA C compiled by NVRTC for the device's architecture.",
        }
    }

    /// The runtime's types the wrappers name.
    fn uses(self) -> TokenStream {
        match self {
            Backend::OpenCl => quote!(
                use ::mdh::opencl::{Buffer, Device};
            ),
            Backend::Cuda => quote!(
                use ::mdh::cuda::{CudaSlice, Device};
            ),
        }
    }

    /// A device buffer of elements `t`.
    fn buffer(self, t: &TokenStream) -> TokenStream {
        match self {
            Backend::OpenCl => quote!(Buffer<#t>),
            Backend::Cuda => quote!(CudaSlice<#t>),
        }
    }

    /// The elements of device buffer `b`.
    fn buffer_len(self, b: &Ident) -> TokenStream {
        match self {
            Backend::OpenCl => quote!(__dev.buffer_len(#b)?),
            Backend::Cuda => quote!(#b.len()),
        }
    }

    /// When `launch`'s work is done, for its documentation.
    fn launch_doc(self) -> &'static str {
        match self {
            Backend::OpenCl => "It returns when the kernel has finished.",
            Backend::Cuda => {
                "It issues the kernel asynchronously on the device handle's stream \
                (`Device::on_stream` picks another) and returns; reading a buffer or \
                `Device::synchronize` waits for it."
            }
        }
    }

    /// Launch `__l.kernel` of program `__prog` on `__dev` (CUDA: on the
    /// device handle's stream, see `Device::on_stream`).
    fn kernel(self) -> TokenStream {
        match self {
            Backend::OpenCl => quote!(__prog.kernel(&__l.kernel)?),
            Backend::Cuda => quote!(__prog.kernel_on(__dev.stream(), &__l.kernel)?),
        }
    }

    /// Adds read-only device buffer `b` (a `&` binding) to launch `__k`.
    fn arg_in(self, b: &TokenStream) -> TokenStream {
        match self {
            Backend::OpenCl => quote!(__k = __k.arg_buffer(#b);),
            Backend::Cuda => quote!(__k = __k.arg_slice(#b);),
        }
    }

    /// Adds device buffer `b` (a `&mut` binding) that the kernel writes.
    fn arg_out(self, b: &TokenStream) -> TokenStream {
        match self {
            Backend::OpenCl => quote!(__k = __k.arg_buffer(&*#b);),
            Backend::Cuda => quote!(__k = __k.arg_slice_mut(&mut *#b);),
        }
    }

    /// Adds the buffers of partial results of `__parts` (bytes on the
    /// device) to launch `__k`.
    fn args_partial(self) -> TokenStream {
        match self {
            Backend::OpenCl => quote! {
                for (__p, __eb) in __parts.iter_mut() {
                    __k = __k.arg_buffer_as(&*__p, __eb);
                }
            },
            // CUDA pointers have no element type.
            Backend::Cuda => quote! {
                for (__p, _) in __parts.iter_mut() {
                    __k = __k.arg_slice_mut(__p);
                }
            },
        }
    }

    /// Runs launch `__k` with the geometry of `__l`.
    fn run(self) -> TokenStream {
        match self {
            Backend::OpenCl => quote!(__k.run(&[__l.global], &[__l.local])?;),
            // Asynchronous on the device's stream: reads wait for it.
            Backend::Cuda => quote! {
                let (__grid, __block) = __l.grid_block()?;
                __k.launch(__grid, __block, __l.shared_bytes)?;
            },
        }
    }
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
        let plan = plan_literal(&e.plan);
        let device = &e.device;
        let sizes = match &e.sizes {
            Some(s) => quote!(::core::option::Option::Some(&[#(#s),*])),
            None => quote!(::core::option::Option::None),
        };
        let arch = match e.arch {
            Some(a) => quote!(::core::option::Option::Some(#a)),
            None => quote!(::core::option::Option::None),
        };
        quote! {
            ::mdh::__rt::gpu::GpuEntry {
                plan: #plan,
                device: #device,
                arch: #arch,
                sizes: #sizes,
            }
        }
    });
    quote!(::std::vec![#(#items),*])
}

/// A compiled-in entry's plan as a struct literal, field by field.
fn plan_literal(plan: &GpuPlan) -> TokenStream {
    let fields = plan.fields().map(|f| {
        let name = format_ident!("{}", f.name);
        let value = match f.value {
            PlanValue::Counts(v) => quote!(::std::vec![#(#v),*]),
            PlanValue::Flags(v) => quote!(::std::vec![#(#v),*]),
            PlanValue::Count(n) => quote!(#n),
            PlanValue::Flag(b) => quote!(#b),
            PlanValue::Mma(m) => {
                let m = format_ident!("{m:?}");
                quote!(::mdh::__rt::Mma::#m)
            }
        };
        quote!(#name: #value)
    });
    quote!(::mdh::__rt::GpuPlan { #(#fields,)* })
}

/// What `mdh::gpu::KernelInfo` holds besides the template: computed here
/// once for the generated wrappers (as constants) and for the tuner (which
/// builds a `KernelInfo` at run time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelTables {
    /// Bytes of one element of each input buffer.
    pub in_bytes: Vec<usize>,
    /// Bytes of one partial result of each output access.
    pub acc_bytes: Vec<usize>,
    /// Whether each output access's operator has a neutral element.
    pub identity: Vec<bool>,
    /// The element types of the inputs, the outputs and the params.
    pub in_types: Vec<ScalarType>,
    pub out_types: Vec<ScalarType>,
    pub param_types: Vec<ScalarType>,
}

impl KernelTables {
    pub fn of(k: &Checked) -> KernelTables {
        let out = k.analysis().output_types();
        KernelTables {
            in_bytes: k.inputs.iter().map(|b| elem_bytes(b.ty)).collect(),
            acc_bytes: out.iter().map(|&t| elem_bytes(t)).collect(),
            identity: (0..out.len()).map(|o| k.has_identity(o)).collect(),
            in_types: k.inputs.iter().map(|b| b.ty).collect(),
            out_types: k.outputs.iter().map(|b| b.ty).collect(),
            param_types: k.params.iter().map(|p| p.ty).collect(),
        }
    }
}

/// `pub mod opencl { … }` or `pub mod cuda { … }`, kept or dropped by the
/// facade's feature of that name.
pub fn gpu_module(k: &Checked, backend: Backend, entries: &[GpuEntryCfg]) -> TokenStream {
    let src = template(k, backend.dialect());
    let KernelTables {
        in_bytes,
        acc_bytes,
        identity,
        in_types,
        out_types,
        param_types,
    } = KernelTables::of(k);
    let types = |ts: Vec<ScalarType>| {
        let ts = ts.into_iter().map(|t| format_ident!("{t:?}"));
        quote!(&[#(::mdh::__rt::ScalarType::#ts),*])
    };
    let (in_types, out_types, param_types) =
        (types(in_types), types(out_types), types(param_types));
    let entries = entries_tokens(entries);
    let module = format_ident!("{}", backend.name());
    let gate = backend.gate();
    let doc = backend.doc();
    let uses = backend.uses();
    let host = host_fns(k);
    let run_dyn = host_args::run_dyn(
        k,
        host_args::DynEntry::run_with(),
        quote!(),
        quote!(__dev: &Device, __plan: ::core::option::Option<&::mdh::__rt::GpuPlan>,),
        quote!(__dev, __plan,),
    );
    let device = device_fns(k, backend);
    quote! {
        #gate {
            #[doc = #doc]
            pub mod #module {
                #uses

                /// The kernel source template; [`source`] completes it for
                /// one call.
                pub const TEMPLATE: &str = #src;

                // A static: its address names the kernel in the cache of
                // prepared calls (`mdh::__rt::gpu::call`).
                static INFO: ::mdh::__rt::gpu::KernelInfo = ::mdh::__rt::gpu::KernelInfo {
                    template: TEMPLATE,
                    in_bytes: &[#(#in_bytes),*],
                    acc_bytes: &[#(#acc_bytes),*],
                    identity: &[#(#identity),*],
                    in_types: #in_types,
                    out_types: #out_types,
                    param_types: #param_types,
                };

                fn __entries() -> ::std::vec::Vec<::mdh::__rt::gpu::GpuEntry> {
                    #entries
                }

                /// The complete source compiled for `sizes` (on a device
                /// without particular limits).
                pub fn source(sizes: &super::Sizes) -> ::std::string::String {
                    ::mdh::__rt::gpu::source(super::desc(), &INFO, &__entries(), &sizes.values())
                }

                #host

                #run_dyn

                #device
            }
        }
    }
}

/// The names of the device buffers of host slices `names` in `run_with`.
fn device_copies(names: &[&Ident]) -> Vec<Ident> {
    names.iter().map(|n| format_ident!("__d_{}", n)).collect()
}

/// `run` and `run_with`: the kernel over host slices, copied to the device
/// and the outputs back (bool buffers as bytes 0 / 1).
fn host_fns(k: &Checked) -> TokenStream {
    let in_names: Vec<&Ident> = k.inputs.iter().map(|b| &b.name).collect();
    let out_names: Vec<&Ident> = k.outputs.iter().map(|b| &b.name).collect();
    let param_names: Vec<&Ident> = k.params.iter().map(|p| &p.name).collect();
    let (params, forward) = (
        host_args::params(k, quote!(__sizes: super::Sizes,)),
        host_args::forward(k),
    );
    let (d_in, d_out) = (device_copies(&in_names), device_copies(&out_names));
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
    quote! {
        /// Runs the kernel on `device` over host slices: copies in,
        /// launches, copies the outputs back.
        pub fn run(
            __dev: &Device,
            #params
        ) -> ::core::result::Result<(), ::mdh::Error> {
            run_with(__dev, ::core::option::Option::None, #forward __sizes)
        }

        /// Searches plans of the kernel at `sizes` on `device` for about
        /// `budget` (run-time tuning: the tuner's search space and result
        /// checks, on deterministic pseudo-random data) and keeps the best
        /// in the per-user tuning cache, which later calls and later
        /// processes on this device run before the configured entries
        /// (see `mdh::gpu::tune`).
        pub fn tune(
            __dev: &Device,
            __sizes: super::Sizes,
            __budget: ::core::time::Duration,
        ) -> ::core::result::Result<::mdh::TuneReport, ::mdh::Error> {
            ::mdh::__rt::gpu::tune(__dev, &INFO, super::desc(), &__entries(), &__sizes.values(), __budget)
        }

        /// [`run`] with a given plan instead of the configured ones
        /// (for the tuner and tests); an invalid plan, or one the
        /// device cannot run, is an `Err`.
        #[doc(hidden)]
        pub fn run_with(
            __dev: &Device,
            __plan: ::core::option::Option<&::mdh::__rt::GpuPlan>,
            #params
        ) -> ::core::result::Result<(), ::mdh::Error> {
            let __call = call(
                __dev,
                __plan,
                &__sizes.values(),
                &[#(#in_names.len()),*],
                &[#(#out_names.len()),*],
            )?;
            #(#upload_in)*
            #(#upload_out)*
            __launch(__dev, &__call, #(&#d_in,)* #(&mut #d_out,)* #(#param_names,)*)?;
            #(#download)*
            ::core::result::Result::Ok(())
        }
    }
}

/// `launch`, `job` and `__launch`: the kernel on device buffers of the
/// backend's kind.
fn device_fns(k: &Checked, backend: Backend) -> TokenStream {
    let in_names: Vec<&Ident> = k.inputs.iter().map(|b| &b.name).collect();
    let out_names: Vec<&Ident> = k.outputs.iter().map(|b| &b.name).collect();
    let param_names: Vec<&Ident> = k.params.iter().map(|p| &p.name).collect();
    let param_tys: Vec<TokenStream> = k.params.iter().map(|p| ty(p.ty)).collect();
    let param_args: Vec<TokenStream> = k
        .params
        .iter()
        .map(|p| {
            let n = &p.name;
            if p.ty == ScalarType::Bool {
                quote!(u8::from(#n))
            } else if p.ty.is_half() {
                // Kernels take 16-bit floats as their bits (`ushort`).
                quote!(#n.to_bits())
            } else {
                quote!(#n)
            }
        })
        .collect();
    let in_bufs: Vec<TokenStream> = k
        .inputs
        .iter()
        .map(|b| backend.buffer(&device_ty(b.ty)))
        .collect();
    let out_bufs: Vec<TokenStream> = k
        .outputs
        .iter()
        .map(|b| backend.buffer(&device_ty(b.ty)))
        .collect();
    let in_lens = in_names.iter().map(|b| backend.buffer_len(b));
    let out_lens = out_names.iter().map(|b| backend.buffer_len(b));
    let args_in = in_names.iter().map(|b| backend.arg_in(&quote!(#b)));
    let args_out = out_names.iter().map(|b| backend.arg_out(&quote!(#b)));
    let args_part = backend.args_partial();
    let run = backend.run();
    let kernel = backend.kernel();
    let launch_doc = backend.launch_doc();
    quote! {
        /// Runs the kernel on device buffers (bool buffers hold bytes
        /// 0 / 1).
        #[doc = #launch_doc]
        pub fn launch(
            __dev: &Device,
            #(#in_names: &#in_bufs,)*
            #(#out_names: &mut #out_bufs,)*
            #(#param_names: #param_tys,)*
            __sizes: super::Sizes,
        ) -> ::core::result::Result<(), ::mdh::Error> {
            let __call = call(
                __dev,
                ::core::option::Option::None,
                &__sizes.values(),
                &[#(#in_lens),*],
                &[#(#out_lens),*],
            )?;
            __launch(__dev, &__call, #(#in_names,)* #(#out_names,)* #(#param_names,)*)
        }

        /// The prepared call of these sizes (`sizes`: their values) and
        /// plan (`None`: the configured ones) on `device`, for buffers of
        /// `in_lens` and `out_lens` elements: kept on the device, so that
        /// a repeated call finds its job, compiled program and buffers of
        /// partial results (see `mdh::gpu::calls`). What [`launch`] and
        /// [`run`] run, for tests and benchmarks.
        #[doc(hidden)]
        pub fn call<D: ::mdh::__rt::gpu::CallDevice>(
            device: &D,
            plan: ::core::option::Option<&::mdh::__rt::GpuPlan>,
            sizes: &[usize],
            in_lens: &[usize],
            out_lens: &[usize],
        ) -> ::core::result::Result<::std::sync::Arc<::mdh::__rt::gpu::Call<D>>, ::mdh::Error> {
            let __args = ::mdh::__rt::ArgSizes { sizes, in_lens, out_lens };
            ::mdh::__rt::gpu::call(device, &INFO, super::desc(), __entries, plan, __args)
        }

        /// The source and launches of one call on a device named
        /// `device` with limits `limits` (`None`: nothing to
        /// compute); `plan` replaces the configured plans. What
        /// [`launch`] runs, for tests and the tuner.
        #[doc(hidden)]
        pub fn job(
            bound: &::mdh::__rt::Bound,
            plan: ::core::option::Option<&::mdh::__rt::GpuPlan>,
            device: &str,
            limits: ::mdh::__rt::gpu::DeviceLimits,
        ) -> ::core::result::Result<::core::option::Option<::mdh::__rt::gpu::Job>, ::mdh::Error> {
            ::mdh::__rt::gpu::job(super::desc(), bound, &INFO, &__entries(), plan, device, limits)
        }

        fn __launch(
            __dev: &Device,
            __call: &::mdh::__rt::gpu::Call<Device>,
            #(#in_names: &#in_bufs,)*
            #(#out_names: &mut #out_bufs,)*
            #(#param_names: #param_tys,)*
        ) -> ::core::result::Result<(), ::mdh::Error> {
            let ::core::option::Option::Some(__ready) = __call.ready() else {
                return ::core::result::Result::Ok(());
            };
            let __prog = __ready.program();
            let mut __parts = __ready.partials(__dev)?;
            for __l in __ready.launches() {
                let mut __k = #kernel;
                if __l.inputs {
                    #(#args_in)*
                }
                #(#args_out)*
                if __l.partials {
                    #args_part
                }
                #(__k = __k.arg_scalar(#param_args);)*
                #run
            }
            ::core::result::Result::Ok(())
        }
    }
}
