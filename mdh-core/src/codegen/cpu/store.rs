//! Stores of results: direct writes through the output views and the
//! re-composition of partial results with earlier PW tiles'.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::names::{dim_var, stream_writer};
use super::{offset, Gen};

/// How many lanes of a vector a store writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Lanes {
    /// A single value.
    One,
    /// Every lane.
    All,
    /// The first `__cnt` lanes (the lanes of an edge tile that are points).
    First(usize),
    /// Every lane of an `N`-lane vector, through the task's stream writer
    /// (the plan's `stream`).
    Stream(usize),
}

impl<'k> Gen<'k> {
    /// Writes of value `vals[o]` of every output access `o` at the current
    /// point, through the output views (direct mode).
    /// `lanes`: write whole vectors (`vals` are lane arrays of consecutive
    /// elements) instead of single values, or their first `__cnt` lanes.
    pub(super) fn direct_writes(&self, vals: &[TokenStream], lanes: Lanes) -> TokenStream {
        let (write, cnt) = match lanes {
            Lanes::One => (quote!(write), quote!()),
            Lanes::All => (quote!(write_lanes), quote!()),
            Lanes::First(n) => (quote!(write_part::<ISA, #n>), quote!(, __cnt)),
            Lanes::Stream(n) => (quote!(write::<ISA, #n>), quote!()),
        };
        let mut w = TokenStream::new();
        for (o, v) in vals.iter().enumerate() {
            let (ptr, off) = self.out_at(o);
            let to = match lanes {
                Lanes::Stream(_) => stream_writer(o),
                _ => ptr,
            };
            // SAFETY: `bind` checked bounds and disjointness of accesses; the
            // output view is injective over the kept dimensions (checked at
            // compile time) and each point belongs to one task.
            w.extend(quote! { unsafe { #to.#write(#off, #v #cnt) }; });
        }
        w
    }

    /// The pointer to the buffer of output access `o` and the access's
    /// offset at the current point.
    pub(super) fn out_at(&self, o: usize) -> (Ident, TokenStream) {
        let a = &self.k.analysis().outputs[o];
        let (base, coef) = (format_ident!("__oa{}_b", o), format_ident!("__oa{}_c", o));
        (format_ident!("__out{}", a.buffer), offset(a, &base, &coef))
    }

    /// `let __pidx = …;`: the position of the current kept point in the
    /// task-local partial results (row-major over the task's region).
    pub(super) fn partial_index(&self) -> TokenStream {
        let terms = self.kept.iter().map(|&d| {
            let (i, ps) = (dim_var(d), format_ident!("__ps{}", d));
            quote!(+ (#i - __r[#d].0) * #ps)
        });
        quote!(let __pidx: usize = 0 #(#terms)*;)
    }

    /// Re-composes the values `__new` (a tuple, one per output access) of
    /// the current kept point with the earlier PW tiles' partial results
    /// (`__first`: there are none): in the output itself when the task
    /// holds the whole PW range (`__direct`: the results are final after its
    /// last PW tile), else in the task-local buffer `__o`.
    pub(super) fn partial_store(&self) -> TokenStream {
        let pidx = self.partial_index();
        let merged = (0..self.n_out()).map(|o| {
            let idx = syn::Index::from(o);
            self.combine_values(o, &quote!(__slot.#idx), &quote!(__new.#idx))
        });
        let mut direct = TokenStream::new();
        for o in 0..self.n_out() {
            let (ptr, off) = self.out_at(o);
            let idx = syn::Index::from(o);
            let cmb = self.combine_values(o, &quote!(unsafe { #ptr.read(__at) }), &quote!(__v));
            // Final after the task's last PW tile (`__last`): the epilogue.
            let last = self.has_epilogue(o).then(|| {
                let v = self.finish(o, quote!(__v));
                quote!(let __v = if __last { #v } else { __v };)
            });
            // SAFETY: `bind` checked bounds and disjointness of accesses; the
            // output view is injective over the kept dimensions (checked at
            // compile time) and each kept point belongs to one task, which
            // wrote it at its first PW tile.
            direct.extend(quote! {{
                let __at: usize = #off;
                let __v = __new.#idx;
                let __v = if __first { __v } else { #cmb };
                #last
                unsafe { #ptr.write(__at, __v) };
            }});
        }
        quote! {
            if __direct {
                #direct
            } else {
                #pidx
                let __slot = __o[__pidx];
                __o[__pidx] = if __first { __new } else { (#(#merged,)*) };
            }
        }
    }
}
