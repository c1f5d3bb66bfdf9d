//! A fused epilogue ([`crate::fusion::Epilogue`]) in the producer's CPU
//! code: its other inputs and their accesses in the context, bound per call
//! by the epilogue stage's own `desc()`, and its scalar function applied to
//! a final value where it is stored (the direct store after the last PW
//! tile, the `write` closure after the driver's last combine).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::names::dim_var;
use super::{offset_at, Gen};
use crate::analysis::Checked;
use crate::codegen::rust_expr::{self, ty};
use crate::fusion::Epilogue;

/// An epilogue as the producer's generator emits it.
#[derive(Clone)]
pub struct FusedEpilogue<'k> {
    /// The epilogue stage's kernel.
    pub kernel: &'k Checked,
    pub fact: &'k Epilogue,
    /// The path of the epilogue stage's module, from the fused module.
    pub module: TokenStream,
    /// The path of the producing stage's own module, from the fused module.
    pub producer: TokenStream,
}

impl FusedEpilogue<'_> {
    /// The epilogue's input buffer that is the intermediate.
    fn tmp_buffer(&self) -> usize {
        self.kernel.input_accesses()[self.fact.input].0
    }

    /// The epilogue's other input buffers: its index and its parameter
    /// name in the fused `cpu`.
    fn other_inputs(&self) -> impl Iterator<Item = (usize, Ident)> + '_ {
        let t = self.tmp_buffer();
        (0..self.kernel.inputs.len())
            .filter(move |&b| b != t)
            .map(|b| (b, format_ident!("__ein{}", b)))
    }

    /// The epilogue's other input accesses: their index and flattened
    /// access's names (base, coefficients).
    fn other_accesses(&self) -> impl Iterator<Item = (usize, Ident, Ident)> + '_ {
        (0..self.kernel.input_accesses().len())
            .filter(|&j| j != self.fact.input)
            .map(|j| {
                (
                    j,
                    format_ident!("__eia{}_b", j),
                    format_ident!("__eia{}_c", j),
                )
            })
    }
}

/// What the `mpi::run` of a fused stage takes from the CPU generator: the
/// epilogue's parameters after the stage's sizes, their binding, and the
/// pass over a rank's part of the results (`Gen::epilogue_pass`).
pub fn mpi_parts(k: &Checked, epilogue: FusedEpilogue<'_>) -> [TokenStream; 3] {
    let mut g = Gen::new(k);
    g.epilogue = Some(epilogue);
    [g.epilogue_params(), g.epilogue_bind(), g.epilogue_pass()]
}

impl<'k> Gen<'k> {
    /// The context's fields of the epilogue (none without one).
    pub(super) fn epilogue_fields(&self) -> Vec<(TokenStream, TokenStream)> {
        let Some(e) = &self.epilogue else {
            return Vec::new();
        };
        let ns = e.kernel.size_params.len();
        let mut f = Vec::new();
        for (b, name) in e.other_inputs() {
            let t = ty(e.kernel.inputs[b].ty);
            f.push((quote!(#name), quote!(&'a [#t])));
        }
        for (name, t, _) in self.epilogue_accesses() {
            f.push((quote!(#name), t));
        }
        f.push((quote!(__esz), quote!([usize; #ns])));
        f
    }

    /// The fused `cpu`'s parameters after `sizes`: the epilogue's other
    /// inputs, then its sizes.
    pub(super) fn epilogue_params(&self) -> TokenStream {
        let Some(e) = &self.epilogue else {
            return quote!();
        };
        let m = &e.module;
        let ins = e.other_inputs().map(|(b, name)| {
            let t = ty(e.kernel.inputs[b].ty);
            quote!(#name: &[#t],)
        });
        quote!(#(#ins)* __esizes: #m::Sizes,)
    }

    /// `__esz` and `__ebound`: the epilogue's sizes and its binding for this
    /// call (by its own `desc()`: lengths, and every access in bounds over
    /// its index space, which is the producer's kept points).
    pub(super) fn epilogue_bind(&self) -> TokenStream {
        let Some(e) = &self.epilogue else {
            return quote!();
        };
        let m = &e.module;
        // The intermediate and the output have one shape: the output
        // stands for the intermediate's length.
        let o = &self.k.outputs[self.k.analysis().outputs[e.fact.output].buffer].name;
        let t = e.tmp_buffer();
        let lens = (0..e.kernel.inputs.len()).map(|b| {
            if b == t {
                quote!(#o.len())
            } else {
                let name = format_ident!("__ein{}", b);
                quote!(#name.len())
            }
        });
        quote! {
            let __esz = __esizes.values();
            let __ebound: ::mdh::__rt::Bound = #m::desc().bind(&__esz, &[#(#lens),*], &[#o.len()])?;
        }
    }

    /// The context's epilogue fields, from `epilogue_bind`'s names.
    pub(super) fn epilogue_init(&self) -> TokenStream {
        let Some(e) = &self.epilogue else {
            return quote!();
        };
        let ins = e.other_inputs().map(|(_, name)| quote!(#name,));
        let accesses = (self.epilogue_accesses().into_iter()).map(|(n, _, v)| quote!(#n: #v,));
        quote!(#(#ins)* #(#accesses)* __esz,)
    }

    /// The epilogue's other accesses (base, coefficients): their names,
    /// types and values from `__ebound`.
    fn epilogue_accesses(&self) -> Vec<(Ident, TokenStream, TokenStream)> {
        let Some(e) = &self.epilogue else {
            return Vec::new();
        };
        let de = e.fact.dims.len();
        let slots = super::driver::linear_slots(&e.kernel.input_accesses());
        e.other_accesses()
            .flat_map(|(j, base, coef)| {
                let (b, a) = slots[j];
                [
                    (base, quote!(isize), quote!(__ebound.in_linear[#b][#a].base)),
                    (
                        coef,
                        quote!([isize; #de]),
                        quote!(::core::array::from_fn(|__d| __ebound.in_linear[#b][#a].coefs[__d])),
                    ),
                ]
            })
            .collect()
    }

    /// The epilogue under MPI: a closure for the producer's
    /// `mpi::__run_then` that maps the combined final values of a rank's
    /// box (`__r`, every kept point of it) of the output the epilogue
    /// writes, in place, in parallel (`mdh::__rt::mpi::map_part`). In
    /// scope: `__ebinding`, `epilogue_bind`'s names if they bound (the
    /// call fails on every rank before the pass where they did not), and
    /// the epilogue's other inputs (`__ein{b}`).
    fn epilogue_pass(&self) -> TokenStream {
        let Some(e) = &self.epilogue else {
            return quote!();
        };
        let o = e.fact.output;
        let (b, a) = super::driver::linear_slots(&self.k.output_accesses())[o];
        let outs = (0..self.k.outputs.len()).map(|c| format_ident!("__out{}", c));
        let out = format_ident!("__out{}", b);
        let (d, kept) = (self.d, &self.kept);
        let binds = kept.iter().map(|&x| {
            let i = dim_var(x);
            quote!(let #i: usize = __p[#x];)
        });
        let value = self.finish(o, quote!(__v));
        let t = ty(self.out_tys[o]);
        let accesses =
            (self.epilogue_accesses().into_iter()).map(|(n, t, v)| quote!(let #n: #t = #v;));
        quote! {
            |__r: &::mdh::__rt::Region<#d>, __bound: &::mdh::__rt::Bound, #(#outs: &mut [_]),*| {
                let ::core::option::Option::Some((__esz, __ebound)) = __ebinding.as_ref() else {
                    return;
                };
                #(#accesses)*
                ::mdh::__rt::mpi::map_part(
                    __r,
                    &[#(#kept),*],
                    &__bound.out_linear[#b][#a],
                    #out,
                    |__p: &[usize; #d], __v: #t| -> #t {
                        #(#binds)*
                        #value
                    },
                );
            }
        }
    }

    /// Whether output access `o` has the fused epilogue.
    pub(super) fn has_epilogue(&self, o: usize) -> bool {
        self.epilogue.as_ref().is_some_and(|e| e.fact.output == o)
    }

    /// The final value `v` of output access `o` as stored: through the
    /// epilogue's scalar function where `o` has one, at the kept point
    /// whose index variables are in scope (and the context's names).
    pub(super) fn finish(&self, o: usize, v: TokenStream) -> TokenStream {
        let Some(e) = self.epilogue.as_ref().filter(|_| self.has_epilogue(o)) else {
            return v;
        };
        let ek = e.kernel;
        let sizes = ek
            .size_params
            .iter()
            .enumerate()
            .map(|(i, s)| quote!(let #s: usize = __esz[#i];));
        let facts = &ek.analysis().inputs;
        let reads = e.other_accesses().map(|(j, base, coef)| {
            let a = &facts[j];
            let at = offset_at(a, &base, &coef, |m| dim_var(e.fact.dims[m]));
            let (p, t, slice) = (
                format_ident!("__ep{}", j),
                ty(a.ty),
                format_ident!("__ein{}", ek.input_accesses()[j].0),
            );
            // SAFETY: `__ebound` checked that this access stays inside its
            // buffer over the epilogue's index space, which is this
            // kernel's kept points.
            quote!(let #p: #t = unsafe { *#slice.get_unchecked(#at) };)
        });
        let tmp = format_ident!("__ep{}", e.fact.input);
        let index_binds = (ek.scalar_fn.index_params.iter().flatten())
            .zip(&e.fact.dims)
            .map(|(name, &d)| {
                let i = dim_var(d);
                quote!(let #name: usize = #i;)
            });
        let param_binds = ek.scalar_fn.params.iter().enumerate().map(|(j, p)| {
            let v = format_ident!("__ep{}", j);
            quote!(let #p = #v;)
        });
        let body = rust_expr::expr(&ek.scalar_fn.body);
        let t = ty(self.out_tys[o]);
        quote!({
            let #tmp: #t = #v;
            #(#sizes)*
            #(#reads)*
            #(#index_binds)*
            #(#param_binds)*
            let __e: #t = #body;
            __e
        })
    }

    /// The lanes of vector `v` (`V<T, N>`) of output access `o`, consecutive
    /// points along dimension `s` from `i_s` (its first `cnt`, the others
    /// left), through the epilogue where `o` has one.
    pub(super) fn finish_lanes(
        &self,
        o: usize,
        v: TokenStream,
        i_s: &Ident,
        cnt: TokenStream,
    ) -> TokenStream {
        if !self.has_epilogue(o) {
            return v;
        }
        let lane = self.finish(o, quote!(__e.0[__l]));
        quote!({
            let mut __e = #v;
            for __l in 0..#cnt {
                let #i_s: usize = #i_s + __l;
                __e.0[__l] = #lane;
            }
            __e
        })
    }

    /// `let __last = …;` in an L1 tile: whether it is the task's last along
    /// every PW dimension, where results become final (with an epilogue).
    pub(super) fn last_tile(&self) -> TokenStream {
        if self.epilogue.is_none() {
            return quote!();
        }
        let last = self.reduced.iter().map(|&k| {
            let hi = format_ident!("__t1e_{}", k);
            quote!(&& #hi == __r[#k].1)
        });
        quote!(let __last: bool = true #(#last)*;)
    }
}
