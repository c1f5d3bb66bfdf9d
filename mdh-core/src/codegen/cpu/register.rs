//! A register tile on scalars (for plans whose tiles do not map onto SIMD
//! lanes).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::names::{dim_var, l1_tile};
use super::store::Lanes;
use super::tiles::l1_loops;
use super::Gen;
use crate::codegen::rust_expr::{self, ty};
use crate::plan::CpuPlan;
use crate::spec::ReduceOp;

impl<'k> Gen<'k> {
    /// The work of one register tile (full: constant trip counts).
    pub(super) fn register_tile(&self, plan: &CpuPlan, full: bool) -> TokenStream {
        if let Some(simd) = self.simd(plan) {
            return self.vector_tile(plan, &simd, !full);
        }
        let pidx = self.partial_index();
        if self.reduced.is_empty() {
            let point = self.point();
            let vals: Vec<TokenStream> = (0..self.n_out())
                .map(|o| {
                    let v = format_ident!("__v{}", o);
                    quote!(#v)
                })
                .collect();
            let store = if self.direct() {
                self.direct_writes(&vals, Lanes::One)
            } else {
                quote! { #pidx __o[__pidx] = (#(#vals,)*); }
            };
            return self.kept_coords(plan, full, quote! { #point #store });
        }
        let n_kept: usize = self.kept.iter().map(|&d| plan.reg[d]).product();
        let kr = *self.reduced.last().unwrap_or(&0);
        let rr = plan.reg[kr];
        let n_acc = n_kept * rr;
        let mut init = TokenStream::new();
        for o in 0..self.n_out() {
            let (acc, t) = (format_ident!("__acc{}", o), ty(self.out_tys[o]));
            match self.ops[o] {
                Some(ReduceOp::Builtin(b, _)) => {
                    let id = rust_expr::identity(*b, self.out_tys[o]);
                    init.extend(quote!(let mut #acc: [#t; #n_acc] = [#id; #n_acc];));
                }
                _ => init.extend(quote! {
                    let mut #acc: [::core::option::Option<#t>; #n_acc] = [::core::option::Option::None; #n_acc];
                }),
            }
        }
        let (i_kr, (lo_kr, hi_kr)) = (dim_var(kr), l1_tile(kr));
        let lanes = self.kept_coords(plan, full, self.accumulate(&quote!(__kc * #rr + __l)));
        let tail = self.kept_coords(plan, full, self.accumulate(&quote!(__kc * #rr)));
        let innermost = quote! {
            let mut __j: usize = #lo_kr;
            while __j + #rr <= #hi_kr {
                for __l in 0..#rr {
                    let #i_kr: usize = __j + __l;
                    #lanes
                }
                __j += #rr;
            }
            while __j < #hi_kr {
                let #i_kr: usize = __j;
                #tail
                __j += 1;
            }
        };
        let red_loops = l1_loops(innermost, &self.reduced[..self.reduced.len() - 1]);
        // Fold the lanes, then re-compose with the task-local partial result.
        let mut fold = TokenStream::new();
        let mut finals = Vec::new();
        for o in 0..self.n_out() {
            let (acc, f) = (format_ident!("__acc{}", o), format_ident!("__f{}", o));
            if self.has_identity(o) {
                let c = self.combine_values(o, &quote!(#f), &quote!(#acc[__kc * #rr + __l]));
                fold.extend(quote! {
                    let mut #f = #acc[__kc * #rr];
                    for __l in 1..#rr { #f = #c; }
                });
            } else {
                let c = self.combine_values(o, &quote!(__x), &quote!(__y));
                fold.extend(quote! {
                    let mut #f = #acc[__kc * #rr];
                    for __l in 1..#rr {
                        #f = match (#f, #acc[__kc * #rr + __l]) {
                            (::core::option::Option::Some(__x), ::core::option::Option::Some(__y)) => ::core::option::Option::Some(#c),
                            (__x, ::core::option::Option::None) => __x,
                            (::core::option::Option::None, __y) => __y,
                        };
                    }
                    let #f = #f.expect("every register-tile lane of a non-empty PW range holds a value");
                });
            }
            finals.push(f);
        }
        let partial = self.partial_store();
        let store = self.kept_coords(
            plan,
            full,
            quote! {
                #fold
                let __new = (#(#finals,)*);
                #partial
            },
        );
        quote! { #init #red_loops #store }
    }
}
