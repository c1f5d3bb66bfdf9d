//! The generated Rust wrappers of the GPU kernels: `NAME::opencl::{run, tune,
//! launch, source}` and `NAME::cuda::{run, tune, launch, source}` over the
//! facade's runtimes, from one generator ([`gpu_module`]): the same tokens
//! for every [`Backend`] but its name and documentation (the runtimes'
//! APIs are behind the device traits of `mdh-gpu`: one generic launch,
//! `mdh::gpu::calls::launch`, and typed buffers `mdh::gpu::Buf<Device, T>`).
//! The wrappers validate their
//! arguments with the kernel's `desc()`, let the facade choose the plan and
//! complete the source template (`mdh::__rt::gpu`), and run the launches of
//! its job: `mdh_main`, then the second pass and the scans when the kernel
//! needs them.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::analysis::Checked;
use crate::backend::Backend;
use crate::codegen::cpu::FusedEpilogue;
use crate::codegen::gpu::{fused_template, template};
use crate::codegen::host_args;
use crate::codegen::rust_expr::ty;
use crate::config::GpuEntryCfg;
use crate::gpu_plan::{GpuPlan, PlanValue};
use crate::plan::elem_bytes;
use crate::spec::{BufferDecl, ScalarType};

/// The element type of a device buffer holding values of type `t` (bool is
/// stored as bytes 0 / 1).
pub(crate) fn device_ty(t: ScalarType) -> TokenStream {
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
    let info = info_static(k, &template(k, backend.dialect()), entries);
    let host = host_fns(k);
    let run_dyn = host_args::run_dyn(
        k,
        host_args::DynEntry::run_with(),
        quote!(),
        quote!(__dev: &Device, __plan: ::core::option::Option<&::mdh::__rt::GpuPlan>,),
        quote!(__dev, __plan,),
    );
    let device = device_fns(k, backend, None);
    backend_module(
        backend,
        backend.doc(),
        quote! {
                    #info

                    /// The complete source compiled for `sizes` (on a device
                    /// without particular limits).
                    pub fn source(sizes: &super::Sizes) -> ::std::string::String {
                        ::mdh::__rt::gpu::source(super::desc(), &INFO, &__entries(), &sizes.values())
                    }

                    #host

                    #run_dyn

                    #device
        },
    )
}

/// The backend module of a producing stage with its epilogue fused into
/// its stores ([`crate::codegen::gpu::fused_template`]): `launch` on device
/// buffers, which takes the epilogue's other inputs and sizes after the
/// stage's own sizes and writes the epilogue's output where the stage's
/// own would be; what the kernel of stages' `run` launches.
pub fn fused_gpu_module(
    k: &Checked,
    backend: Backend,
    entries: &[GpuEntryCfg],
    epilogue: &FusedEpilogue<'_>,
) -> TokenStream {
    let src = fused_template(k, epilogue.kernel, epilogue.fact, backend.dialect());
    let info = info_static(k, &src, entries);
    let device = device_fns(k, backend, Some(epilogue));
    backend_module(
        backend,
        "The stage with its epilogue fused on this backend's devices.",
        quote! {
            #info

            #device
        },
    )
}

/// `TEMPLATE`, `INFO` and `__entries` of a backend module whose kernel `k`
/// has the source template `src`.
fn info_static(k: &Checked, src: &str, entries: &[GpuEntryCfg]) -> TokenStream {
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
    quote! {
        /// The kernel source template; the definitions of a call
        /// complete it.
        pub const TEMPLATE: &str = #src;

        // A static: its address names the kernel in the cache of
        // prepared calls (`mdh::__rt::gpu::call`) and run-time tuning's.
        #[doc(hidden)]
        pub static INFO: ::mdh::__rt::gpu::KernelInfo = ::mdh::__rt::gpu::KernelInfo {
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
    }
}

/// `pub mod NAME { use ::mdh::NAME::Device; body }` documented by `doc`,
/// kept or dropped by the facade's feature of the back end's name.
pub(crate) fn backend_module(backend: Backend, doc: &str, body: TokenStream) -> TokenStream {
    let module = format_ident!("{}", backend.name());
    let gate = format_ident!("__if_{}", backend.name());
    quote! {
        ::mdh::#gate! {
            #[doc = #doc]
            pub mod #module {
                use ::mdh::#module::Device;

                #body
            }
        }
    }
}

/// The names of the device buffers of host slices `names` in `run_with`.
fn device_copies(names: &[&Ident]) -> Vec<Ident> {
    names.iter().map(|n| format_ident!("__d_{}", n)).collect()
}

/// `let [mut] d = __dev.buffer_from(b)?;`: host buffer `b` copied to the
/// device (bool as bytes 0 / 1).
pub(crate) fn upload(b: &BufferDecl, d: &Ident, mutable: bool) -> TokenStream {
    let n = &b.name;
    let host = if b.ty == ScalarType::Bool {
        quote!(&#n.iter().map(|&x| u8::from(x)).collect::<::std::vec::Vec<u8>>())
    } else {
        quote!(#n)
    };
    let m = mutable.then(|| quote!(mut));
    quote!(let #m #d = __dev.buffer_from(#host)?;)
}

/// Device buffer `d` read back into host buffer `b` (bool from bytes).
pub(crate) fn download(b: &BufferDecl, d: &Ident) -> TokenStream {
    let n = &b.name;
    if b.ty == ScalarType::Bool {
        quote! {
            let mut __bytes = ::std::vec![0u8; #n.len()];
            __dev.read(&#d, &mut __bytes)?;
            for (__o, __b) in #n.iter_mut().zip(__bytes) { *__o = __b != 0; }
        }
    } else {
        quote!(__dev.read(&#d, #n)?;)
    }
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
    let upload_in = k.inputs.iter().zip(&d_in).map(|(b, d)| upload(b, d, false));
    let upload_out = k
        .outputs
        .iter()
        .zip(&d_out)
        .map(|(b, d)| upload(b, d, true));
    let download = k.outputs.iter().zip(&d_out).map(|(b, d)| download(b, d));
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

/// `launch`, `call`, `job` and `__launch`: the kernel on device buffers
/// of the backend's kind; with `epilogue` (a fused module's), `launch`
/// also takes the epilogue's other inputs and sizes, `launch_with` a plan,
/// `call` and `job` the epilogue's part of the call (`epilogue`).
fn device_fns(k: &Checked, backend: Backend, epilogue: Option<&FusedEpilogue<'_>>) -> TokenStream {
    let in_names: Vec<&Ident> = k.inputs.iter().map(|b| &b.name).collect();
    let out_names: Vec<&Ident> = k.outputs.iter().map(|b| &b.name).collect();
    let param_names: Vec<&Ident> = k.params.iter().map(|p| &p.name).collect();
    let param_tys: Vec<TokenStream> = k.params.iter().map(|p| ty(p.ty)).collect();
    let buffer = |t: ScalarType| {
        let t = device_ty(t);
        quote!(::mdh::__rt::gpu::Buf<Device, #t>)
    };
    let in_bufs: Vec<TokenStream> = k.inputs.iter().map(|b| buffer(b.ty)).collect();
    let out_bufs: Vec<TokenStream> = k.outputs.iter().map(|b| buffer(b.ty)).collect();
    let launch_doc = backend.launch_doc();
    let elements = |b: &Ident| quote!(::mdh::__rt::gpu::BufArg::elements(&*#b, __dev)?);
    let in_lens = in_names.iter().map(|b| elements(b));
    let out_lens: Vec<TokenStream> = out_names.iter().map(|b| elements(b)).collect();
    let e = epilogue.map(|e| EpilogueArgs::new(k, backend, e));
    let (e_bufs, e_params, e_names) = match &e {
        Some(e) => {
            let (names, bufs) = (&e.names, e.tys.iter().map(|&t| buffer(t)));
            let m = &e.module;
            let bufs = quote!(#(#names: &#bufs,)*);
            (
                bufs.clone(),
                quote!(#bufs __esizes: #m::Sizes,),
                quote!(#(#names,)*),
            )
        }
        None => (quote!(), quote!(), quote!()),
    };
    let e_binding = e.as_ref().map(|e| e.binding(&elements));
    let e_fns = e.as_ref().map(|e| e.fns());
    // `call` and `job` of a fused module take the epilogue's part.
    let (e_param, e_call_arg) = match e {
        Some(_) => (
            quote!(epilogue: &::mdh::__rt::gpu::Epilogue<'_>,),
            quote!(::core::option::Option::Some(epilogue)),
        ),
        None => (quote!(), quote!(::core::option::Option::None)),
    };
    let job_body = quote!(::mdh::__rt::gpu::job(
        super::desc(),
        bound,
        &INFO,
        &__entries(),
        plan,
        device,
        limits
    ));
    let job_body = match epilogue {
        Some(_) => quote!(epilogue.job(#job_body?)),
        None => job_body,
    };
    let launch_params = quote! {
        #(#in_names: &#in_bufs,)*
        #(#out_names: &mut #out_bufs,)*
        #(#param_names: #param_tys,)*
        __sizes: super::Sizes,
        #e_params
    };
    let launch_args =
        quote!(#(#in_names,)* #(#out_names,)* #(#param_names,)* __sizes, #e_names __esizes);
    // Without an epilogue, `launch` prepares the call itself; with one, it
    // is `launch_with` the configured plans (tests force plans).
    let launch_body = match epilogue {
        Some(_) => quote!(launch_with(__dev, ::core::option::Option::None, #launch_args)),
        None => quote! {
            let __call = call(
                __dev,
                ::core::option::Option::None,
                &__sizes.values(),
                &[#(#in_lens),*],
                &[#(#out_lens),*],
            )?;
            __launch(__dev, &__call, #(#in_names,)* #(#out_names,)* #(#param_names,)*)
        },
    };
    let launch_with = epilogue.map(|_| {
        let in_lens = in_names.iter().map(|b| elements(b));
        quote! {
            /// [`launch`] with a given plan instead of the configured
            /// ones (for tests); an invalid plan, or one the device
            /// cannot run, is an `Err`.
            #[doc(hidden)]
            pub fn launch_with(
                __dev: &Device,
                __plan: ::core::option::Option<&::mdh::__rt::GpuPlan>,
                #launch_params
            ) -> ::core::result::Result<(), ::mdh::Error> {
                #e_binding
                let __call = call(
                    __dev,
                    __plan,
                    &__sizes.values(),
                    &[#(#in_lens),*],
                    &[#(#out_lens),*],
                    &__epilogue,
                )?;
                __launch(__dev, &__call, #(#in_names,)* #(#out_names,)* #(#param_names,)* #e_names)
            }
        }
    });
    quote! {
        /// Runs the kernel on device buffers (bool buffers hold bytes
        /// 0 / 1).
        #[doc = #launch_doc]
        pub fn launch(
            __dev: &Device,
            #launch_params
        ) -> ::core::result::Result<(), ::mdh::Error> {
            #launch_body
        }

        #launch_with

        #e_fns

        /// The prepared call of these sizes (`sizes`: their values) and
        /// plan (`None`: the configured ones) on `device`, for buffers of
        /// `in_lens` and `out_lens` elements: kept on the device, so that
        /// a repeated call finds its job, compiled program and buffers of
        /// partial results (see `mdh::gpu::calls`). What [`launch`] and
        /// [`run`] run, for tests and benchmarks.
        #[doc(hidden)]
        pub fn call<D: ::mdh::__rt::gpu::GpuDevice>(
            device: &D,
            plan: ::core::option::Option<&::mdh::__rt::GpuPlan>,
            sizes: &[usize],
            in_lens: &[usize],
            out_lens: &[usize],
            #e_param
        ) -> ::core::result::Result<::std::sync::Arc<::mdh::__rt::gpu::Call<D>>, ::mdh::Error> {
            let __args = ::mdh::__rt::ArgSizes { sizes, in_lens, out_lens };
            let __kernel = ::mdh::__rt::gpu::Wrapped { info: &INFO, desc: super::desc(), entries: __entries };
            ::mdh::__rt::gpu::call(device, __kernel, plan, __args, ::mdh::__rt::gpu::tuned_plan, #e_call_arg)
        }

        /// The source and launches of one call on a device named
        /// `device` with limits `limits` (`None`: nothing to
        /// compute); `plan` replaces the configured plans. What
        /// [`launch`] runs, for tests and the tuner.
        #[doc(hidden)]
        pub fn job(
            bound: &::mdh::__rt::Bound,
            #e_param
            plan: ::core::option::Option<&::mdh::__rt::GpuPlan>,
            device: &str,
            limits: ::mdh::__rt::gpu::DeviceLimits,
        ) -> ::core::result::Result<::core::option::Option<::mdh::__rt::gpu::Job>, ::mdh::Error> {
            #job_body
        }

        fn __launch(
            __dev: &Device,
            __call: &::mdh::__rt::gpu::Call<Device>,
            #(#in_names: &#in_bufs,)*
            #(#out_names: &mut #out_bufs,)*
            #(#param_names: #param_tys,)*
            #e_bufs
        ) -> ::core::result::Result<(), ::mdh::Error> {
            ::mdh::__rt::gpu::launch(
                __dev,
                __call,
                &[#(#in_names),*],
                &mut [#(#out_names),*],
                &[#(::mdh::__rt::Value::from(#param_names)),*],
                &[#e_names],
            )
        }
    }
}

/// What a fused module's backend functions know of its epilogue.
struct EpilogueArgs {
    /// The parameters of the epilogue's other inputs (`__ein{b}`) and
    /// their element types.
    names: Vec<Ident>,
    tys: Vec<ScalarType>,
    /// The epilogue stage's module, from the backend module.
    module: TokenStream,
    /// The producing stage's own backend module, from the backend module.
    producer: TokenStream,
    /// The epilogue's input that is the intermediate, and the producer's
    /// output buffer that stands for it (their shape is one).
    tmp: usize,
    output: Ident,
    /// Per epilogue input: its parameter (`None` for the intermediate).
    inputs: Vec<Option<Ident>>,
}

impl EpilogueArgs {
    fn new(k: &Checked, backend: Backend, e: &FusedEpilogue<'_>) -> Self {
        let ek = e.kernel;
        let tmp = ek.input_accesses()[e.fact.input].0;
        let inputs: Vec<Option<Ident>> = (0..ek.inputs.len())
            .map(|b| (b != tmp).then(|| format_ident!("__ein{}", b)))
            .collect();
        let (m, p, b) = (&e.module, &e.producer, format_ident!("{}", backend.name()));
        EpilogueArgs {
            names: inputs.iter().flatten().cloned().collect(),
            tys: (0..ek.inputs.len())
                .filter(|&b| b != tmp)
                .map(|b| ek.inputs[b].ty)
                .collect(),
            module: quote!(super::#m),
            producer: quote!(super::#p::#b),
            tmp,
            output: k.outputs[k.analysis().outputs[e.fact.output].buffer]
                .name
                .clone(),
            inputs,
        }
    }

    /// `__epilogue`: the epilogue's part of a call, from its inputs
    /// (`__ein{b}`), the producer's output and `__esizes`.
    fn binding(&self, elements: &dyn Fn(&Ident) -> TokenStream) -> TokenStream {
        let out = elements(&self.output);
        let lens = self.inputs.iter().map(|n| match n {
            Some(n) => elements(n),
            None => out.clone(),
        });
        quote! {
            let __esz = __esizes.values();
            let __ein_lens = [#(#lens),*];
            let __eout_lens = [#out];
            let __epilogue = epilogue(::mdh::__rt::ArgSizes {
                sizes: &__esz,
                in_lens: &__ein_lens,
                out_lens: &__eout_lens,
            });
        }
    }

    /// `epilogue`: the epilogue's part of a call of these sizes and
    /// lengths.
    fn fns(&self) -> TokenStream {
        let (m, p, tmp) = (&self.module, &self.producer, self.tmp);
        quote! {
            /// The epilogue's part of a call whose epilogue has the sizes
            /// and buffer lengths `args` (for `call` and `job`).
            #[doc(hidden)]
            pub fn epilogue(args: ::mdh::__rt::ArgSizes<'_>) -> ::mdh::__rt::gpu::Epilogue<'_> {
                ::mdh::__rt::gpu::Epilogue {
                    desc: #m::desc(),
                    producer: &#p::INFO,
                    tmp: #tmp,
                    args,
                }
            }
        }
    }
}
