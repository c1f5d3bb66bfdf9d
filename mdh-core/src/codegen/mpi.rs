//! The `mpi` module of a kernel (the facade's `mpi` feature): the node
//! layer (NOD) over MPI. Each rank runs the CPU kernel (`__cpu_in`) on its
//! box of the index space; the runtime (`mdh::__rt::mpi`) agrees on the
//! arguments and re-composes the parts with one collective per combine
//! operator, whose MPI operations are generated here.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::analysis::Checked;
use crate::codegen::cpu::{cpu_in_fn, mpi_parts, plan_choice, FusedEpilogue};
use crate::codegen::host_args;
use crate::codegen::rust_expr::{self, ty};
use crate::config::CpuEntry;
use crate::spec::{BuiltinOp, DimKind, ReduceOp, ScalarType};

/// The MPI operation of output access `o`: a `Combine` type for its
/// operator and the `Op` value built from it.
fn access_op(k: &Checked, o: usize, t: ScalarType) -> (TokenStream, TokenStream) {
    let name = format_ident!("__Combine{}", o);
    let tt = ty(t);
    let (body, builtin, commutative) = match k.op(o) {
        Some(op) => {
            let builtin = match op {
                // MPI's operations know neither `bool` nor the 16-bit
                // floats (moved as their bits): user operations for those.
                ReduceOp::Builtin(b, _) if t != ScalarType::Bool && !t.is_half() => {
                    let v = match b {
                        BuiltinOp::Add => quote!(Sum),
                        BuiltinOp::Mul => quote!(Product),
                        BuiltinOp::Max => quote!(Max),
                        BuiltinOp::Min => quote!(Min),
                    };
                    quote!(::core::option::Option::Some(::mdh::__rt::mpi::Builtin::#v))
                }
                _ => quote!(::core::option::Option::None),
            };
            // The operator comes from the first PW or PS dimension; a PS
            // one only promises associativity to MPI.
            let kinds = &k.analysis().kinds;
            let pw = kinds.iter().find(|&&x| x != DimKind::Cc) == Some(&DimKind::Pw);
            (
                rust_expr::combine(op, t, &quote!(__x), &quote!(__y)),
                builtin,
                pw,
            )
        }
        // CC only: parts are never combined.
        None => (quote!(__y), quote!(::core::option::Option::None), true),
    };
    let def = quote! {
        struct #name;
        impl ::mdh::__rt::mpi::Combine<#tt> for #name {
            #[inline]
            fn combine(__x: #tt, __y: #tt) -> #tt { #body }
        }
    };
    let op = quote!(::mdh::__rt::mpi::Op::new::<#name>(#builtin, #commutative));
    (def, op)
}

/// The gated module `mpi` with `run`, `run_with`, `run_dyn`, `plan` and
/// `plan_with`, over the CPU kernel of the plans `entries` on a box.
pub fn mpi_module(k: &Checked, entries: &[CpuEntry]) -> TokenStream {
    let cpu_in = cpu_in_fn(k, entries);
    let d = k.dims.len();
    let in_names: Vec<_> = k.inputs.iter().map(|b| &b.name).collect();
    let out_names: Vec<_> = k.outputs.iter().map(|b| &b.name).collect();
    let mut defs = TokenStream::new();
    let mut ops: Vec<Vec<TokenStream>> = vec![Vec::new(); k.outputs.len()];
    for (o, a) in k.analysis().outputs.iter().enumerate() {
        let (def, op) = access_op(k, o, a.ty);
        defs.extend(def);
        ops[a.buffer].push(op);
    }
    let out_vars: Vec<_> = (0..out_names.len())
        .map(|b| format_ident!("__parts{}", b))
        .collect();
    let outs = out_names.iter().zip(&ops).zip(&out_vars).map(|((name, ops), var)| {
        quote!(let mut #var = ::mdh::__rt::mpi::Output::new(#name, ::std::vec![#(#ops),*]);)
    });
    let out_tys = k.outputs.iter().map(|b| ty(b.ty));
    let (args, forward) = (
        host_args::params(k, quote!(sizes: Sizes,)),
        host_args::forward(k),
    );
    let run_dyn = host_args::run_dyn(
        k,
        host_args::DynEntry::run_with(),
        quote!(<C: Communicator>),
        quote!(__comm: &C, __plan: ::core::option::Option<&Plan>, __in_mode: Inputs, __placement: Placement,),
        quote!(__comm, __plan, __in_mode, __placement,),
    );
    let ns = k.size_params.len();
    let plan_choice = plan_choice(k);
    let nods = entries.iter().map(|e| {
        let n = &e.plan.nod;
        quote!([#(#n),*])
    });
    let doc = format!(
        "The kernel `{}` on the ranks of an MPI communicator (the facade's `mpi` feature): the node layer (NOD) of the MDH abstract system model.",
        k.name
    );
    quote! {
        ::mdh::__if_mpi! {
            #[doc = #doc]
            pub mod mpi {
                use super::*;
                use ::mdh::mpi::{Communicator, Inputs, Placement, Plan};

                #cpu_in

                #defs

                /// The `nod` of the CPU entry a call with `__sizes` takes, if
                /// it is set for `__ranks` ranks.
                fn __configured_nod(__ranks: usize, __sizes: [usize; #ns]) -> ::core::option::Option<&'static [usize]> {
                    const __NOD: &[[usize; #d]] = &[#(#nods),*];
                    ::mdh::__rt::mpi::configured_nod(&__NOD[#plan_choice], __ranks)
                }

                /// The NOD plan of a call on this rank of `__comm`: the
                /// parts per dimension of the config entry for these sizes
                /// and this many ranks, else the default for these sizes.
                pub fn plan<C: Communicator>(__comm: &C, sizes: Sizes) -> ::core::result::Result<Plan, ::mdh::Error> {
                    let __nod = __configured_nod(__comm.size() as usize, sizes.values());
                    ::mdh::__rt::mpi::plan(__comm, desc(), __nod, &sizes.values())
                }

                /// The NOD plan with `nod` parts per md_hom dimension (their
                /// product is the number of ranks).
                pub fn plan_with<C: Communicator>(__comm: &C, nod: &[usize], sizes: Sizes) -> ::core::result::Result<Plan, ::mdh::Error> {
                    ::mdh::__rt::mpi::plan(__comm, desc(), ::core::option::Option::Some(nod), &sizes.values())
                }

                /// Runs the kernel on every rank of `__comm`: the `cpu`
                /// signature, every rank passing the whole inputs and
                /// receiving the whole outputs. Call it on every rank with
                /// the same sizes; an argument that does not fit on any
                /// rank is an `Err` on every rank.
                pub fn run<C: Communicator>(__comm: &C, #args) -> ::core::result::Result<(), ::mdh::Error> {
                    run_with(__comm, ::core::option::Option::None, Inputs::Replicated, Placement::All, #forward sizes)
                }

                /// [`run`] with a plan (`None`: [`plan`]'s), inputs
                /// replicated or distributed (each rank passes the parts
                /// [`Plan::input_part`] names) and the results where
                /// `__placement` says.
                #[allow(clippy::too_many_arguments)]
                pub fn run_with<C: Communicator>(
                    __comm: &C,
                    __plan: ::core::option::Option<&Plan>,
                    __inputs: Inputs,
                    __placement: Placement,
                    #args
                ) -> ::core::result::Result<(), ::mdh::Error> {
                    __run_then(__comm, __plan, __inputs, __placement, #forward sizes, ::core::result::Result::Ok(()), ::core::option::Option::None)
                }

                /// [`run_with`], `__then` applied to this rank's box of the
                /// outputs once their parts are combined, before they are
                /// placed (where a fused epilogue maps the final values);
                /// `__check` (the epilogue's own arguments) fails the call
                /// on every rank, as this rank's part would.
                #[doc(hidden)]
                #[allow(clippy::too_many_arguments)]
                pub fn __run_then<C: Communicator>(
                    __comm: &C,
                    __plan: ::core::option::Option<&Plan>,
                    __inputs: Inputs,
                    __placement: Placement,
                    #args
                    __check: ::core::result::Result<(), ::mdh::Error>,
                    __then: ::core::option::Option<&mut dyn FnMut(&::mdh::__rt::Region<#d>, &::mdh::__rt::Bound, #(&mut [#out_tys]),*)>,
                ) -> ::core::result::Result<(), ::mdh::Error> {
                    let __job = ::mdh::__rt::mpi::Job::new(
                        __comm,
                        desc(),
                        __plan.map(|__p| &__p.nod[..]).or_else(|| __configured_nod(__comm.size() as usize, sizes.values())),
                        __inputs,
                        __placement,
                        ::mdh::__rt::ArgSizes {
                            sizes: &sizes.values(),
                            in_lens: &[#(#in_names.len()),*],
                            out_lens: &[#(#out_names.len()),*],
                        },
                    )?;
                    let __done = __check.and_then(|()| match __job.region::<#d>() {
                        // SAFETY: the job checked these slices' lengths
                        // against its bound, whose accesses over this
                        // rank's box stay inside them.
                        ::core::option::Option::Some(__r) => unsafe {
                            __cpu_in(__job.bound(), __r, #forward sizes)
                        },
                        ::core::option::Option::None => ::core::result::Result::Ok(()),
                    });
                    __job.agree(__done)?;
                    #(#outs)*
                    __job.combine(&mut [#(&mut #out_vars),*]);
                    if let (::core::option::Option::Some(__then), ::core::option::Option::Some(__r)) = (__then, __job.region::<#d>()) {
                        __then(&__r, __job.bound(), #(#out_vars.data_mut()),*);
                    }
                    __job.place(&mut [#(&mut #out_vars),*])
                }

                #run_dyn
            }
        }
    }
}

/// The gated module `mpi` of a stage with its epilogue fused (a kernel of
/// stages' `fused::STAGE`): `run`, with the fused `cpu`'s signature, runs
/// the stage's own `mpi::__run_then` into the epilogue's output, and the
/// epilogue maps each rank's part of it in place once the collectives have
/// combined the parts (after the all-reduce of a split PW dimension, before
/// the gather): no intermediate, no second collective.
pub fn fused_mpi_module(k: &Checked, epilogue: FusedEpilogue<'_>) -> TokenStream {
    // Paths from `mpi`, one module below the fused one.
    let (m, p) = (&epilogue.module, &epilogue.producer);
    let (m, p) = (quote!(super::#m), quote!(super::#p));
    let epilogue = FusedEpilogue {
        module: m,
        producer: p.clone(),
        ..epilogue
    };
    let [eparams, ebind, pass] = mpi_parts(k, epilogue);
    let args = host_args::params(k, quote!(sizes: Sizes, #eparams));
    let forward = host_args::forward(k);
    let sizes = &k.size_params;
    let doc = format!(
        "The stage `{}` with its epilogue on the ranks of an MPI communicator: `cpu`'s \
         arguments, every rank passing the whole inputs and receiving the whole outputs.",
        k.name
    );
    quote! {
        ::mdh::__if_mpi! {
            pub mod mpi {
                use super::*;
                use ::mdh::mpi::{Communicator, Inputs, Placement};

                #[doc = #doc]
                #[allow(clippy::too_many_arguments)]
                pub fn run<C: Communicator>(__comm: &C, #args) -> ::core::result::Result<(), ::mdh::Error> {
                    // The epilogue's arguments, checked here and failed on
                    // every rank with the call (a rank returning alone
                    // would leave the others in a collective).
                    let __ebinding = (|| -> ::core::result::Result<_, ::mdh::Error> {
                        #ebind
                        ::core::result::Result::Ok((__esz, __ebound))
                    })();
                    let (__check, __ebinding) = match __ebinding {
                        ::core::result::Result::Ok(__b) => (::core::result::Result::Ok(()), ::core::option::Option::Some(__b)),
                        ::core::result::Result::Err(__e) => (::core::result::Result::Err(__e), ::core::option::Option::None),
                    };
                    #p::mpi::__run_then(
                        __comm,
                        ::core::option::Option::None,
                        Inputs::Replicated,
                        Placement::All,
                        #forward
                        #p::Sizes { #(#sizes: sizes.#sizes),* },
                        __check,
                        ::core::option::Option::Some(&mut #pass),
                    )
                }
            }
        }
    }
}
