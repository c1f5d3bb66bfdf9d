//! The `cpu` function: argument binding, the context of a call, the
//! dispatch by instruction set and tuned sizes, and the parallel driver's
//! closures.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::names::dim_var;
use super::{offset, Gen};
use crate::analysis::Checked;
use crate::codegen::host_args;
use crate::codegen::rust_expr::ty;
use crate::config::CpuEntry;
use crate::desc::{Bound, KernelDesc, Linear};
use crate::plan::CpuPlan;
use crate::spec::IndexFn;
use mdh_rt::machine::{Isa, Machine, PlanEntry, DEFAULT_LINE};

/// Where each access (in the order of `accesses`) is in a [`Bound`]'s
/// `in_linear` / `out_linear`: its buffer, and its rank among that
/// buffer's accesses.
pub(super) fn linear_slots(accesses: &[(usize, &IndexFn)]) -> Vec<(usize, usize)> {
    let mut per_buffer: Vec<usize> = Vec::new();
    accesses
        .iter()
        .map(|&(b, _)| {
            if per_buffer.len() <= b {
                per_buffer.resize(b + 1, 0);
            }
            per_buffer[b] += 1;
            (b, per_buffer[b] - 1)
        })
        .collect()
}

/// The `cpu` function and its helpers for the plans of `entries` (at least
/// one), dispatched at run time by machine and nearest tuned sizes
/// (`mdh::machine`).
pub fn cpu_fn(k: &Checked, entries: &[CpuEntry]) -> TokenStream {
    cpu_fn_of(Gen::new(k), entries)
}

/// [`cpu_fn`] of a stage with its epilogue fused into its stores: the
/// `cpu` function takes the epilogue's other inputs and sizes after its
/// own sizes, and writes the epilogue's output where the stage's own would
/// be.
pub fn fused_cpu_fn(
    k: &Checked,
    entries: &[CpuEntry],
    epilogue: super::FusedEpilogue<'_>,
) -> TokenStream {
    let mut g = Gen::new(k);
    g.epilogue = Some(epilogue);
    cpu_fn_of(g, entries)
}

fn cpu_fn_of(g: Gen<'_>, entries: &[CpuEntry]) -> TokenStream {
    let k = g.k;
    // Plans: one task body each, chosen by the nearest tuned sizes. A
    // plan that asks for it (`exact`) also gets a body for exactly its
    // entry's sizes, taken when a call has them (unless they are not valid
    // sizes); on x86-64 for AVX-512 and AVX2 only (see `baseline_calls`).
    let desc = KernelDesc::from_kernel(k);
    let exact: Vec<Option<Bound>> = entries
        .iter()
        .map(|e| {
            let sizes = e.sizes.as_ref().filter(|_| e.plan.exact)?;
            desc.bind_sizes(sizes).ok()
        })
        .collect();
    let compute_fns = entries.iter().enumerate().map(|(i, e)| {
        let general = g.compute_fn(&e.plan, i, None);
        let exact = exact[i].as_ref().map(|b| g.compute_fn(&e.plan, i, Some(b)));
        quote!(#general #exact)
    });
    // The baseline body of x86-64 (see `baseline_calls`), numbered after the
    // entries' bodies, and the AVX2 body of the default plan, after it.
    let baseline = g.compute_fn(
        &CpuPlan::default_for_isa(k, Isa::Baseline),
        entries.len(),
        None,
    );
    let default = entries.iter().position(|e| e.line == DEFAULT_LINE);
    let avx2_default_plan = default.map(|_| CpuPlan::default_for_isa(k, Isa::Avx2));
    let avx2_default = avx2_default_plan
        .as_ref()
        .map(|plan| g.compute_fn(plan, entries.len() + 1, None));
    // The AVX2 bodies of entries narrowed to AVX2's registers
    // (`CpuEntry::narrowed_for_avx2`), numbered after the default's.
    let mut next = entries.len() + 2;
    let narrowed: Vec<Option<(usize, CpuPlan)>> = entries
        .iter()
        .map(|e| {
            let plan = e.narrowed_for_avx2(k)?;
            next += 1;
            Some((next - 1, plan))
        })
        .collect();
    let narrowed_fns = narrowed
        .iter()
        .flatten()
        .map(|(n, plan)| g.compute_fn(plan, *n, None));
    // The pair bodies of a bf16 product (`Gen::pair_fn`) of the bodies
    // AVX-512 and AVX2 run, numbered as those.
    let avx_plans = entries.iter().map(|e| &e.plan).enumerate();
    let avx_plans = avx_plans
        .chain(avx2_default_plan.iter().map(|p| (entries.len() + 1, p)))
        .chain(narrowed.iter().flatten().map(|(n, p)| (*n, p)));
    let (paired, pair_fns): (Vec<usize>, Vec<TokenStream>) = avx_plans
        .filter_map(|(n, plan)| Some((n, g.pair_fn(plan, n)?)))
        .unzip();
    let narrowed: Vec<Option<usize>> = narrowed.iter().map(|x| x.as_ref().map(|x| x.0)).collect();
    // The context: inputs, sizes, flattened input accesses, params.
    let (field_names, field_tys): (Vec<_>, Vec<_>) = g.ctx_fields().into_iter().unzip();
    let listed: Vec<PlanEntry<'_>> = entries.iter().map(|e| e.plan_entry(k)).collect();
    let dispatch = g.isa_dispatch(&listed, &exact, default, &narrowed, &paired);
    let entry = g.entry_fn(entries, &exact);
    let entries_static = entries_static(&listed);
    quote! {
        #[derive(Clone, Copy)]
        struct __Ctx<'a> {
            #(#field_names: #field_tys,)*
            __lifetime: ::core::marker::PhantomData<&'a ()>,
        }

        #(#compute_fns)*

        #baseline

        #avx2_default

        #(#narrowed_fns)*

        #(#pair_fns)*

        #dispatch

        #entries_static

        #entry
    }
}

/// `__cpu_in`: the `cpu` kernel over a box of the index space on a call
/// already bound, for the node layer (see `Gen::cpu_in`).
pub fn cpu_in_fn(k: &Checked, entries: &[CpuEntry]) -> TokenStream {
    Gen::new(k).cpu_in(entries)
}

/// The baseline's `match __plan`. On x86-64 the baseline serves only
/// CPUs without AVX2 (made before 2013-2015, and low-end Atom-class
/// parts): there one body runs every task, whichever plan the call chose
/// (a general body is correct for any region), the analytical default plan
/// for such a machine ([`CpuPlan::default_for_isa`]), so that a kernel
/// compiles one small baseline body rather than one per plan. Elsewhere
/// each plan runs its own body.
fn baseline_calls(exact: &[Option<Bound>]) -> TokenStream {
    let own: Vec<usize> = (0..exact.len()).collect();
    let all = plan_arms(&own, exact, |f| quote!(#f::<0u8>(__c, __r, __o, __direct)));
    let f = format_ident!("__compute_{}", exact.len());
    quote! {
        #[cfg(target_arch = "x86_64")]
        { #f::<0>(__c, __r, __o, __direct) }
        #[cfg(not(target_arch = "x86_64"))]
        { #all }
    }
}

/// The task body each entry runs on instruction set `isa` (x86-64's
/// AVX-512 or AVX2), as the number of its `__compute_N`: its own, except
/// that the default entry (`default`, if the entries have one) runs the
/// default for AVX2's register file in the AVX2 body ([`CpuPlan::default_for_isa`],
/// numbered after the baseline one), and an entry that does not suit `isa`
/// ([`PlanEntry::suits`]: the dispatch ranks it after the default plan, so
/// it never runs there) runs the default's body: its own is not compiled
/// for `isa`; an entry narrowed to AVX2's registers (`narrowed[i]`, the
/// number of its narrowed body) runs that body in the AVX2 one.
fn bodies(
    entries: &[PlanEntry<'_>],
    default: Option<usize>,
    isa: Isa,
    narrowed: &[Option<usize>],
) -> Vec<usize> {
    // The default's body on `isa`: AVX2's is its own, numbered after the
    // baseline one.
    let default_body = |d: usize| {
        if isa == Isa::Avx2 {
            entries.len() + 1
        } else {
            d
        }
    };
    (0..entries.len())
        .map(|i| match (narrowed[i], default) {
            (Some(n), _) if isa == Isa::Avx2 => n,
            (_, Some(d)) if i == d || !entries[i].suits(isa) => default_body(d),
            _ => i,
        })
        .collect()
}

/// The `match __plan` over the entries: entry `i` runs body `body[i]`
/// (see [`bodies`]), its exact body where it has one and runs its own;
/// `call(f)` calls the body function `f`.
fn plan_arms(
    body: &[usize],
    exact: &[Option<Bound>],
    call: impl Fn(&Ident) -> TokenStream,
) -> TokenStream {
    let arms = body.iter().enumerate().map(|(i, &n)| {
        let f = call(&format_ident!("__compute_{}", n));
        match &exact[i] {
            Some(_) if n == i => {
                let fx = call(&format_ident!("__compute_{}_exact", i));
                quote! {
                    #i if __exact => #fx,
                    #i => #f,
                }
            }
            _ => quote!(#i => #f,),
        }
    });
    let first = call(&format_ident!("__compute_{}", body[0]));
    quote!(match __plan { #(#arms)* _ => #first, })
}

/// The body functions `body` and `exact` call: each general body an
/// entry runs, and each exact body of an entry that runs its own.
fn called(body: &[usize], exact: &[Option<Bound>]) -> Vec<Ident> {
    let mut fs: Vec<Ident> = Vec::new();
    for (i, &n) in body.iter().enumerate() {
        let f = format_ident!("__compute_{}", n);
        if !fs.contains(&f) {
            fs.push(f);
        }
        if n == i && exact[i].is_some() {
            fs.push(format_ident!("__compute_{}_exact", i));
        }
    }
    fs
}

impl<'k> Gen<'k> {
    /// `__compute`: one task, the body of plan `__plan` compiled for the
    /// best instruction set this CPU has.
    ///
    /// On x86-64 each body an instruction set runs is a function of its
    /// own, compiled with that set's features and never inlined into the
    /// dispatch: LLVM's per-function limits and register allocation then
    /// see one plan's loops at a time, whatever else the kernel's config
    /// holds (prl's AVX2 default ran 161 ms beside one more entry, 132
    /// alone, on the 2-core AMD EPYC), and a kernel's bodies can go to
    /// different codegen units.
    fn isa_dispatch(
        &self,
        entries: &[PlanEntry<'_>],
        exact: &[Option<Bound>],
        default: Option<usize>,
        narrowed: &[Option<usize>],
        paired: &[usize],
    ) -> TokenStream {
        let (d, a_ty) = (self.d, &self.a_ty);
        let params = quote! {
            __c: &__Ctx<'_>, __r: &::mdh::__rt::Region<#d>, __o: &mut ::std::vec::Vec<#a_ty>, __direct: bool
        };
        let mut wrappers = TokenStream::new();
        let mut per_isa = |isa: Isa, code: u8, features: &str| {
            let body = bodies(entries, default, isa, narrowed);
            let name = |f: &Ident| format_ident!("{}_{}", f, isa.name());
            for f in called(&body, exact) {
                let w = name(&f);
                wrappers.extend(quote! {
                    #[target_feature(enable = #features)]
                    #[inline(never)]
                    unsafe fn #w(#params) { #f::<#code>(__c, __r, __o, __direct) }
                });
            }
            // SAFETY: the CPU has these features (detected at run time).
            plan_arms(&body, exact, |f| {
                let w = name(f);
                quote!(unsafe { #w(__c, __r, __o, __direct) })
            })
        };
        const AVX512: &str = "avx512f,avx512vl,avx2,fma,f16c";
        let avx512 = per_isa(Isa::Avx512, 2, AVX512);
        let avx2 = per_isa(Isa::Avx2, 1, "avx2,fma,f16c");
        // A bf16 product's pair bodies (`Gen::pair_fn`) where the process
        // runs them (`mdh::__rt::bf16_pairs`): natively with AVX-512 BF16,
        // emulated in the AVX-512 and AVX2 bodies; an entry without one
        // runs its own body.
        let mut pair_isa = |isa: Isa, code: u8, native: bool, features: &str| {
            let body = bodies(entries, default, isa, narrowed);
            let how = if native { "native" } else { "emulated" };
            let name = |n: usize| format_ident!("__compute_{}_pairs_{}_{}", n, how, isa.name());
            let mut done: Vec<usize> = Vec::new();
            for &n in body.iter().filter(|n| paired.contains(n)) {
                if done.contains(&n) {
                    continue;
                }
                done.push(n);
                let (w, f) = (name(n), format_ident!("__compute_{}_pairs", n));
                wrappers.extend(quote! {
                    #[target_feature(enable = #features)]
                    #[inline(never)]
                    unsafe fn #w(#params) { #f::<#code, #native>(__c, __r, __o, __direct) }
                });
            }
            // SAFETY: the CPU has these features (detected at run time).
            plan_arms(&body, &vec![None; exact.len()], |f| {
                let w = match paired
                    .iter()
                    .find(|&&n| *f == format_ident!("__compute_{}", n))
                {
                    Some(&n) => name(n),
                    None => format_ident!("{}_{}", f, isa.name()),
                };
                quote!(unsafe { #w(__c, __r, __o, __direct) })
            })
        };
        let isa_match = if paired.is_empty() {
            quote! {
                match ::mdh::__rt::isa() {
                    ::mdh::__rt::Isa::Avx512 => return #avx512,
                    ::mdh::__rt::Isa::Avx2 => return #avx2,
                    ::mdh::__rt::Isa::Baseline => {}
                }
            }
        } else {
            let native = pair_isa(Isa::Avx512, 2, true, &format!("{AVX512},avx512bf16"));
            let emulated512 = pair_isa(Isa::Avx512, 2, false, AVX512);
            let emulated2 = pair_isa(Isa::Avx2, 1, false, "avx2,fma,f16c");
            quote! {
                use ::mdh::__rt::Bf16Pairs;
                match ::mdh::__rt::isa() {
                    ::mdh::__rt::Isa::Avx512 => return match ::mdh::__rt::bf16_pairs() {
                        Bf16Pairs::Native => #native,
                        Bf16Pairs::Emulated => #emulated512,
                        Bf16Pairs::Off => #avx512,
                    },
                    ::mdh::__rt::Isa::Avx2 => return match ::mdh::__rt::bf16_pairs() {
                        Bf16Pairs::Emulated => #emulated2,
                        _ => #avx2,
                    },
                    ::mdh::__rt::Isa::Baseline => {}
                }
            }
        };
        let baseline = baseline_calls(exact);
        quote! {
            /// One task: the body of plan `__plan`, compiled for the best
            /// instruction set this CPU has.
            fn __compute(__plan: usize, __exact: bool, #params) {
                #[cfg(target_arch = "x86_64")]
                {
                    #wrappers
                    #isa_match
                }
                #baseline
            }
        }
    }

    /// The public `cpu` function: binds the call's arguments (cached per
    /// sizes and lengths), picks the plan, fills the context and runs the
    /// parallel driver.
    fn entry_fn(&self, entries: &[CpuEntry], exact: &[Option<Bound>]) -> TokenStream {
        let k = self.k;
        let name_str = k.name.to_string();
        let in_names: Vec<&Ident> = k.inputs.iter().map(|b| &b.name).collect();
        let out_names: Vec<&Ident> = k.outputs.iter().map(|b| &b.name).collect();
        let epilogue_params = self.epilogue_params();
        let params = host_args::params(k, quote!(sizes: Sizes, #epilogue_params));
        let ns = k.size_params.len();
        let epilogue_bind = self.epilogue_bind();
        let exact_sizes = exact.iter().map(|b| match b {
            Some(b) => {
                let s = &b.sizes;
                quote!(::core::option::Option::Some([#(#s),*]))
            }
            None => quote!(::core::option::Option::None),
        });
        let plan_choice = plan_choice(k);
        let size_idx = 0..k.size_params.len();
        let n_key = k.size_params.len() + k.inputs.len() + k.outputs.len();
        let doc = format!(
            "Runs `{name_str}` on the CPU (rayon). Arguments: the inputs, the outputs (overwritten where the output view writes), the params, then the sizes. Returns an error if a slice length does not match its shape for these sizes, if a size expression overflows, or if an index function leaves its buffer."
        );
        let run = self.run_bound(
            entries,
            quote!(::core::array::from_fn(|__d| (0, __bound.extents[__d]))),
        );
        quote! {
            #[doc = #doc]
            pub fn cpu(
                #params
            ) -> ::core::result::Result<(), ::mdh::Error> {
                // `cfg!` and `env!` are the crate's that compiles the kernel: the user's.
                if ::core::cfg!(debug_assertions) {
                    ::mdh::__rt::note_debug_build(#name_str, ::core::env!("CARGO_PKG_NAME"));
                }
                let __sizes: [usize; #ns] = sizes.values();
                static __CALLS: ::mdh::__rt::BindCache<#n_key> = ::mdh::__rt::BindCache::new();
                let __call = __CALLS.get(
                    [#(__sizes[#size_idx],)* #(#in_names.len(),)* #(#out_names.len(),)*],
                    || ::core::result::Result::Ok(::mdh::__rt::Binding {
                        bound: desc().bind(&__sizes, &[#(#in_names.len()),*], &[#(#out_names.len()),*])?,
                        plan: #plan_choice,
                    }),
                )?;
                let (__bound, __plan): (&::mdh::__rt::Bound, usize) = (&__call.bound, __call.plan);
                #epilogue_bind
                const __EXACT: &[::core::option::Option<[usize; #ns]>] = &[#(#exact_sizes),*];
                let __exact: bool = __EXACT[__plan] == ::core::option::Option::Some(__sizes);
                #run
            }
        }
    }

    /// `__cpu_in`: [`Self::entry_fn`]'s kernel over a box of the index space
    /// on a call already bound, for the node layer (a kernel's `mpi` module,
    /// whose `use super::*` reaches it and the task bodies).
    fn cpu_in(&self, entries: &[CpuEntry]) -> TokenStream {
        let (k, d) = (self.k, self.d);
        let params = host_args::params(k, quote!(sizes: Sizes,));
        let ns = k.size_params.len();
        let plan_choice = plan_choice(k);
        let run = self.run_bound(entries, quote!(__region));
        quote! {
            /// `cpu` over the box `__region` of the index space, for a call
            /// bound to `__bound` (the plans of `cpu`, never an exact body:
            /// those assume the whole space).
            ///
            /// # Safety
            /// `__bound` is valid for these slices: their lengths, and every
            /// access over `__region` inside its slice (`mdh::__rt::mpi::Job`).
            #[doc(hidden)]
            pub unsafe fn __cpu_in(
                __bound: &::mdh::__rt::Bound,
                __region: ::mdh::__rt::Region<#d>,
                #params
            ) -> ::core::result::Result<(), ::mdh::Error> {
                let __sizes: [usize; #ns] = sizes.values();
                let __plan: usize = #plan_choice;
                let __exact = false;
                #run
            }
        }
    }

    /// The run of a bound call (`__bound`, `__plan`, `__exact` and
    /// `__sizes` in scope): the context, then the parallel driver over the
    /// box `space` of the index space.
    fn run_bound(&self, entries: &[CpuEntry], space: TokenStream) -> TokenStream {
        let (k, d) = (self.k, self.d);
        let in_names: Vec<&Ident> = k.inputs.iter().map(|b| &b.name).collect();
        let out_names: Vec<&Ident> = k.outputs.iter().map(|b| &b.name).collect();
        let param_names: Vec<&Ident> = k.params.iter().map(|p| &p.name).collect();
        let in_slices: Vec<Ident> = (0..k.inputs.len())
            .map(|b| format_ident!("__in{}", b))
            .collect();
        let out_ptrs = out_ptrs(k);
        let ctx_init = self.ctx_init();
        let epilogue_init = self.epilogue_init();
        let out_setup = self.out_setup();
        let out_fields = (0..k.output_accesses().len()).map(|o| {
            let (b, c) = (format_ident!("__oa{}_b", o), format_ident!("__oa{}_c", o));
            quote!(#b, #c,)
        });
        let cors = entries.iter().map(|e| {
            let c = &e.plan.cor;
            quote!([#(#c),*])
        });
        let regs = entries.iter().map(|e| {
            let r = &e.plan.reg;
            quote!([#(#r),*])
        });
        let orders = entries.iter().map(|e| {
            let o = &e.plan.order;
            quote!([#(#o),*])
        });
        let lanes = entries
            .iter()
            .map(|e| self.for_plan(&e.plan).simd(&e.plan).map_or(1, |s| s.lanes));
        let execute = self.execute();
        let results = if self.direct() {
            let starts = linear_slots(&k.output_accesses())
                .into_iter()
                .map(|(b, a)| {
                    let (name, bytes) = (&k.outputs[b].name, mdh_rt::types::elem_bytes(k.outputs[b].ty));
                    quote!(&& ::mdh::__rt::starts_lines(#name.as_ptr() as usize, #bytes, &__bound.out_linear[#b][#a]))
                });
            quote!(::mdh::__rt::StreamedResults::Direct { aligned: true #(#starts)* })
        } else {
            quote!(::mdh::__rt::StreamedResults::Accumulated)
        };
        quote! {
            // Whether streamed results pay at this call's size and
            // alignment (before the outputs are handed to their pointers).
            let __stream_ok: bool = ::mdh::__rt::stream_pays(
                0usize #(+ ::core::mem::size_of_val(&*#out_names))*,
                #results,
            );
            #(let #out_ptrs = ::mdh::__rt::SyncPtr::new(#out_names);)*
            #out_setup
            let __ctx = __Ctx {
                #(#in_slices: #in_names,)*
                __sz: __sizes,
                __call_id: ::mdh::cpu::next_call(),
                __stream_ok,
                #ctx_init
                #epilogue_init
                #(#param_names,)*
                #(#out_ptrs,)*
                #(#out_fields)*
                __lifetime: ::core::marker::PhantomData,
            };
            const __COR: &[[usize; #d]] = &[#(#cors),*];
            const __REG: &[[usize; #d]] = &[#(#regs),*];
            const __ORDER: &[[usize; #d]] = &[#(#orders),*];
            const __LANES: &[usize] = &[#(#lanes),*];
            let __space: ::mdh::__rt::Region<#d> = #space;
            #execute
        }
    }

    /// The context's fields of the flattened input accesses, from the
    /// call's binding.
    fn ctx_init(&self) -> TokenStream {
        let mut ctx_init = TokenStream::new();
        for (j, (b, a)) in linear_slots(&self.k.input_accesses())
            .into_iter()
            .enumerate()
        {
            let (base, coef) = (format_ident!("__ia{}_b", j), format_ident!("__ia{}_c", j));
            ctx_init.extend(quote! {
                #base: __bound.in_linear[#b][#a].base,
                #coef: ::core::array::from_fn(|__d| __bound.in_linear[#b][#a].coefs[__d]),
            });
        }
        ctx_init
    }

    /// The flattened output accesses, from the call's binding.
    fn out_setup(&self) -> TokenStream {
        let d = self.d;
        let mut out_setup = TokenStream::new();
        let slots = linear_slots(&self.k.output_accesses());
        for (o, (b, a)) in slots.into_iter().enumerate() {
            let (base, coef) = (format_ident!("__oa{}_b", o), format_ident!("__oa{}_c", o));
            out_setup.extend(quote! {
                let #base: isize = __bound.out_linear[#b][#a].base;
                let #coef: [isize; #d] = ::core::array::from_fn(|__d| __bound.out_linear[#b][#a].coefs[__d]);
            });
        }
        out_setup
    }

    /// The writes of a task's results `__vals` (one per kept point of the
    /// region `__r`, in row-major order) through the output views.
    fn out_writes(&self) -> TokenStream {
        let k = self.k;
        let out_ptrs = out_ptrs(k);
        let mut writes = TokenStream::new();
        for (o, a) in k.analysis().outputs.iter().enumerate() {
            let (base, coef) = (format_ident!("__oa{}_b", o), format_ident!("__oa{}_c", o));
            let off = offset(a, &base, &coef);
            let ptr = &out_ptrs[a.buffer];
            let idx = syn::Index::from(o);
            // SAFETY: `bind` checked bounds and disjointness of accesses; the
            // output view is injective over the kept dimensions (checked at
            // compile time) and each kept point is written by one task.
            let v = self.finish(o, quote!(__v.#idx));
            writes.extend(quote! { unsafe { #ptr.write(#off, #v) }; });
        }
        // The epilogue's names come from the context.
        let binds = self.epilogue.is_some().then(|| {
            let binds = self.ctx_binds();
            quote!(let __c = &__ctx; #binds)
        });
        let loops = self.kept.iter().rev().fold(
            quote! {
                let __v = __vals[__n];
                __n += 1;
                #writes
            },
            |inner, &x| {
                let i = dim_var(x);
                quote!(for #i in __r[#x].0..__r[#x].1 { #inner })
            },
        );
        quote!(#binds #loops)
    }

    /// The call of the parallel driver (the COR layer) with the three
    /// closures: `compute` (a task), `combine` (the combine operators on
    /// partial results) and `write` (the output views).
    fn execute(&self) -> TokenStream {
        let (d, a_ty) = (self.d, &self.a_ty);
        let name_str = self.k.name.to_string();
        let combine_parts = (0..self.n_out()).map(|o| {
            let idx = syn::Index::from(o);
            self.combine_values(o, &quote!(__x.#idx), &quote!(__y.#idx))
        });
        let identity = self.identity();
        let kind_toks = self.kinds.iter().map(|kd| crate::codegen::dim_kind(*kd));
        let write_body = self.out_writes();
        quote! {
            ::mdh::__rt::execute::<#a_ty, #d>(
                #name_str,
                ::mdh::__rt::IndexBox { full: __space, kinds: [#(#kind_toks),*] },
                ::mdh::__rt::CorLayer {
                    parts: __COR[__plan],
                    align: __REG[__plan],
                    order: __ORDER[__plan],
                    lanes: __LANES[__plan],
                },
                #identity,
                |__r: &::mdh::__rt::Region<#d>, __o: &mut ::std::vec::Vec<#a_ty>, __direct: bool| __compute(__plan, __exact, &__ctx, __r, __o, __direct),
                |__x: #a_ty, __y: #a_ty| -> #a_ty { (#(#combine_parts,)*) },
                |__r: &::mdh::__rt::Region<#d>, __vals: &[#a_ty]| {
                    let mut __n = 0usize;
                    #write_body
                },
            )
        }
    }
}

/// `__CPU_ENTRIES`: the entries as static data for the run-time ranking
/// (`mdh::machine`), once per kernel for `cpu`, `__cpu_in` and the node
/// layer (and for tests that check which entry a call takes).
fn entries_static(entries: &[PlanEntry<'_>]) -> TokenStream {
    let plan_entries = entries.iter().map(|e| {
        let (dev, line, bytes) = (e.device, e.line, e.accumulator_bytes);
        let machine = option(e.machine.as_ref().map(machine_tokens));
        let sizes = option(e.sizes.map(|s| quote!(&[#(#s),*])));
        let narrowed = option(e.narrowed_for.map(isa_tokens));
        let rows = option(e.rows.map(|r| {
            let (param, min, max) = (r.param, r.min, r.max);
            quote!(::mdh::__rt::RowsWithin { param: #param, min: #min, max: #max })
        }));
        let pairs = e.pairs;
        quote! {
            ::mdh::__rt::PlanEntry {
                device: #dev, machine: #machine, sizes: #sizes, line: #line, accumulator_bytes: #bytes,
                narrowed_for: #narrowed, rows: #rows, pairs: #pairs
            }
        }
    });
    quote! {
        /// The CPU config entries, in config file order, the analytical
        /// plans last (of few rows, where the kernel has them, then the
        /// default): what `cpu` ranks at run time.
        #[doc(hidden)]
        pub static __CPU_ENTRIES: &[::mdh::__rt::PlanEntry<'static>] = &[#(#plan_entries),*];
    }
}

/// The plan a call takes (`__sizes` in scope): the entries ranked by the
/// runtime (machine, then nearest tuned sizes).
pub(crate) fn plan_choice(k: &Checked) -> TokenStream {
    let name_str = k.name.to_string();
    quote!(::mdh::__rt::choose_plan(#name_str, &Sizes::NAMES, __CPU_ENTRIES, &__sizes))
}

/// `Some(value)` or `None` in generated code.
fn option(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(v) => quote!(::core::option::Option::Some(#v)),
        None => quote!(::core::option::Option::None),
    }
}

/// A machine description as a constant of generated code.
fn machine_tokens(m: &Machine) -> TokenStream {
    let isa = isa_tokens(m.isa);
    let cores = m.cores;
    let [l1d, l2, l3] = m.caches().map(|c| option(c.map(|b| quote!(#b))));
    quote! {
        ::mdh::__rt::Machine { isa: #isa, cores: #cores, l1d: #l1d, l2: #l2, l3: #l3 }
    }
}

fn isa_tokens(isa: Isa) -> TokenStream {
    let isa = format_ident!("{}", format!("{:?}", isa));
    quote!(::mdh::__rt::Isa::#isa)
}

/// The names of the pointers to the output buffers.
fn out_ptrs(k: &Checked) -> Vec<Ident> {
    (0..k.outputs.len())
        .map(|b| format_ident!("__out{}", b))
        .collect()
}

impl<'k> Gen<'k> {
    /// The sizes, access offsets and coefficients of a call at the sizes a
    /// plan was tuned for, and the task region's bounds in the dimensions
    /// the plan does not split across cores, as constants shadowing the
    /// run-time values: LLVM then folds the strides into address
    /// displacements and knows the trip counts of the reduction loops (the
    /// way oneDNN JIT-compiles a convolution for one shape).
    pub(super) fn exact_binds(&self, plan: &CpuPlan, b: &Bound) -> TokenStream {
        let d = self.d;
        let sizes = self
            .k
            .size_params
            .iter()
            .zip(&b.sizes)
            .map(|(s, v)| quote!(let #s: usize = #v;));
        let linear = |prefix: &str, slots: Vec<(usize, usize)>, bufs: &[Vec<Linear>]| {
            let all = slots.into_iter().enumerate().map(|(j, (buf, a))| {
                let (base, coef) = (
                    format_ident!("__{}{}_b", prefix, j),
                    format_ident!("__{}{}_c", prefix, j),
                );
                let (v, c) = (bufs[buf][a].base, &bufs[buf][a].coefs);
                quote!(let #base: isize = #v; let #coef: [isize; #d] = [#(#c),*];)
            });
            quote!(#(#all)*)
        };
        let ins = linear("ia", linear_slots(&self.k.input_accesses()), &b.in_linear);
        let outs = linear("oa", linear_slots(&self.k.output_accesses()), &b.out_linear);
        let planned = plan.cor.iter().any(|&c| c > 0);
        let region = (0..d).map(|x| {
            let e = b.extents[x];
            if planned && plan.cor[x] <= 1 {
                quote!((0usize, #e))
            } else {
                quote!(__r[#x])
            }
        });
        quote! {
            #(#sizes)*
            #ins
            #outs
            let __exact_region: ::mdh::__rt::Region<#d> = [#(#region),*];
            let __r: &::mdh::__rt::Region<#d> = &__exact_region;
        }
    }

    /// The names a task body uses, bound from the context.
    pub(super) fn ctx_binds(&self) -> TokenStream {
        let k = self.k;
        let fields = self.ctx_fields().into_iter().map(|(n, _)| n);
        let sizes = k
            .size_params
            .iter()
            .enumerate()
            .map(|(i, s)| quote!(let #s: usize = __sz[#i];));
        quote! {
            let __Ctx { #(#fields,)* .. } = *__c;
            #(#sizes)*
        }
    }

    /// Fields of the context struct that carries a call's arguments, sizes
    /// and flattened accesses into the task bodies.
    pub(super) fn ctx_fields(&self) -> Vec<(TokenStream, TokenStream)> {
        let k = self.k;
        let (d, ns) = (self.d, k.size_params.len());
        let mut f = Vec::new();
        for (b, buf) in k.inputs.iter().enumerate() {
            let (n, t) = (format_ident!("__in{}", b), ty(buf.ty));
            f.push((quote!(#n), quote!(&'a [#t])));
        }
        f.push((quote!(__sz), quote!([usize; #ns])));
        f.push((quote!(__call_id), quote!(u64)));
        f.push((quote!(__stream_ok), quote!(bool)));
        for j in 0..k.input_accesses().len() {
            let (b, c) = (format_ident!("__ia{}_b", j), format_ident!("__ia{}_c", j));
            f.push((quote!(#b), quote!(isize)));
            f.push((quote!(#c), quote!([isize; #d])));
        }
        for p in &k.params {
            let (n, t) = (&p.name, ty(p.ty));
            f.push((quote!(#n), t));
        }
        for (b, buf) in k.outputs.iter().enumerate() {
            let (n, t) = (format_ident!("__out{}", b), ty(buf.ty));
            f.push((quote!(#n), quote!(::mdh::__rt::SyncPtr<#t>)));
        }
        for o in 0..k.output_accesses().len() {
            let (b, c) = (format_ident!("__oa{}_b", o), format_ident!("__oa{}_c", o));
            f.push((quote!(#b), quote!(isize)));
            f.push((quote!(#c), quote!([isize; #d])));
        }
        f.extend(self.epilogue_fields());
        f
    }
}
