//! The task body of a plan: L2 and L1 tile loops around register tiles.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::names::{dim_var, l1_tile, stream_writer};
use super::Gen;
use crate::desc::Bound;
use crate::plan::CpuPlan;
use crate::spec::DimKind;

impl<'k> Gen<'k> {
    /// The task body of one plan: tile loops of L2 and L1, register tiles.
    /// `exact`: the call's binding when its sizes are the ones the plan was
    /// tuned for (see [`Gen::exact_binds`]).
    pub(super) fn compute_fn(
        &self,
        plan: &CpuPlan,
        index: usize,
        exact: Option<&Bound>,
    ) -> TokenStream {
        self.for_plan(plan).plan_body(plan, index, exact)
    }

    /// `__compute_{index}_pairs`, the pair body of `plan` (see
    /// [`Gen::pairs_for`]), where it has one.
    pub(super) fn pair_fn(&self, plan: &CpuPlan, index: usize) -> Option<TokenStream> {
        Some(self.with_pairs(plan)?.plan_body(plan, index, None))
    }

    pub(super) fn plan_body(
        &self,
        plan: &CpuPlan,
        index: usize,
        exact: Option<&Bound>,
    ) -> TokenStream {
        let (d, a_ty) = (self.d, &self.a_ty);
        let (name, generics) = match (exact, self.pairs) {
            (_, Some(_)) => (
                format_ident!("__compute_{}_pairs", index),
                quote!(<const ISA: u8, const NATIVE: bool>),
            ),
            (Some(_), None) => (
                format_ident!("__compute_{}_exact", index),
                quote!(<const ISA: u8>),
            ),
            (None, None) => (
                format_ident!("__compute_{}", index),
                quote!(<const ISA: u8>),
            ),
        };
        let exact_binds = exact.map(|b| self.exact_binds(plan, b));
        let first = self.reduced.iter().map(|&k| {
            let lo = format_ident!("__t1_{}", k);
            quote!(&& #lo == __r[#k].0)
        });
        let full: Vec<TokenStream> = self
            .kept
            .iter()
            .filter(|&&x| plan.reg[x] > 1)
            .map(|&x| {
                let (n, r) = (format_ident!("__n{}", x), plan.reg[x]);
                quote!(&& #n == #r)
            })
            .collect();
        let edge_tile = self.register_tile(plan, false);
        // The tile's origin is opaque to LLVM (see `mdh::simd::tile_origin`).
        let origins: Vec<TokenStream> = self
            .kept
            .iter()
            .map(|&x| {
                let b = format_ident!("__b{}", x);
                quote!(let #b: usize = ::mdh::__rt::tile_origin(#b);)
            })
            .collect();
        // Register tiles are visited in the plan's loop order too.
        let kept_in_order: Vec<usize> = plan
            .order
            .iter()
            .copied()
            .filter(|&x| self.kinds[x].is_kept())
            .collect();
        let reg_loops = |full_tile: TokenStream| {
            let tile = quote! {{
                #(#origins)*
                if true #(#full)* { #full_tile } else { #edge_tile }
            }};
            kept_in_order.iter().rev().fold(tile, |inner, &x| {
                let (b, n, (lo, hi), r) = (
                    format_ident!("__b{}", x),
                    format_ident!("__n{}", x),
                    l1_tile(x),
                    plan.reg[x],
                );
                quote! {
                    let mut #b: usize = #lo;
                    while #b < #hi {
                        let #n: usize = ::core::cmp::min(#r, #hi - #b);
                        #inner
                        #b += #r;
                    }
                }
            })
        };
        // A plan streams its final results only where the call's outputs
        // outgrow the caches (`__stream`). Direct results (no PW or PS
        // dimension) are final as they are computed: their register-tile
        // loops come twice, streaming and writing, chosen once per L1 tile
        // (a branch per vector kept the stream writer's state live in the
        // loop: jacobi3d 3.4-4.0 ms instead of 3.0-3.1 on the 2-core AMD
        // EPYC, in builds compared across files, whose placement alone
        // moves jacobi3d by up to 1.5× there: mdh-bench/README.md, EPYC tables).
        // Accumulated results branch per vector, at their one store after
        // the reduction.
        let reg_loops = if plan.stream && self.direct() {
            let written = CpuPlan {
                stream: false,
                ..plan.clone()
            };
            let written = reg_loops(self.register_tile(&written, true));
            let streamed = reg_loops(self.register_tile(plan, true));
            quote!(if __stream { #streamed } else { #written })
        } else {
            reg_loops(self.register_tile(plan, true))
        };
        let (pack_setup, pack, pack_park) = self.packing(plan);
        // Results are final where this L1 tile spans the task's whole PW
        // range: first and last along every PW dimension; they stream
        // where the call's outputs are too large for the caches to keep
        // (`__stream_ok`, see `mdh::stream::pays`).
        let stream = plan.stream.then(|| {
            let last = self.reduced.iter().map(|&k| {
                let hi = format_ident!("__t1e_{}", k);
                quote!(&& #hi == __r[#k].1)
            });
            quote!(let __stream: bool = __stream_ok && __first #(#last)*;)
        });
        let last = self.last_tile();
        let micro = quote! {
            #pack
            let __first: bool = true #(#first)*;
            #last
            #stream
            #reg_loops
        };
        let body = self.tile_loops(plan, 2, self.tile_loops(plan, 1, micro));
        let ps = self.kept.iter().map(|&x| {
            let p = format_ident!("__ps{}", x);
            let later = self
                .kept
                .iter()
                .filter(|&&e| e > x)
                .map(|&e| quote!(* (__r[#e].1 - __r[#e].0)));
            quote!(let #p: usize = 1 #(#later)*;)
        });
        let n_kept = self.kept.iter().map(|&e| quote!(* (__r[#e].1 - __r[#e].0)));
        let binds = self.ctx_binds();
        let partials = if self.direct() {
            quote!()
        } else {
            quote! {
                if !__direct {
                    __o.clear();
                    __o.resize(1usize #(#n_kept)*, ::core::default::Default::default());
                }
            }
        };
        // One writer per output access for streamed results; dropped at the
        // end of the task, it writes what it holds and fences, before the
        // part counter's release hands the results to the caller.
        let writers = if plan.stream {
            (0..self.n_out())
                .map(|o| {
                    let (w, (ptr, _)) = (stream_writer(o), self.out_at(o));
                    quote!(#[allow(unused_mut)] let mut #w = ::mdh::__rt::StreamWriter::new(#ptr);)
                })
                .collect()
        } else {
            TokenStream::new()
        };
        quote! {
            #[inline(always)]
            fn #name #generics(__c: &__Ctx<'_>, __r: &::mdh::__rt::Region<#d>, __o: &mut ::std::vec::Vec<#a_ty>, __direct: bool) {
                #binds
                #exact_binds
                let _ = __direct;
                #(#ps)*
                #partials
                #pack_setup
                #writers
                #body
                #pack_park
            }
        }
    }

    /// Loops over the tiles of one layer, in the plan's order, inside the
    /// tiles of the parent layer (`None`: the task's region).
    pub(super) fn tile_loops(&self, plan: &CpuPlan, layer: u8, inner: TokenStream) -> TokenStream {
        let sizes = if layer == 2 { &plan.l2 } else { &plan.l1 };
        plan.order.iter().rev().fold(inner, |inner, &d| {
            let (lo, hi) = (
                format_ident!("__t{}_{}", layer, d),
                format_ident!("__t{}e_{}", layer, d),
            );
            let (plo, phi) = if layer == 2 {
                (quote!(__r[#d].0), quote!(__r[#d].1))
            } else {
                let (a, b) = (format_ident!("__t2_{}", d), format_ident!("__t2e_{}", d));
                (quote!(#a), quote!(#b))
            };
            let t = sizes[d];
            quote! {
                let mut #lo: usize = #plo;
                while #lo < #phi {
                    let #hi: usize = ::core::cmp::min(#lo.saturating_add(#t), #phi);
                    #inner
                    #lo = #hi;
                }
            }
        })
    }

    /// Loops over the kept coordinates `__c{d}` of a register tile (bounded
    /// by the constant tile extent, or by `__n{d}` at the edges), binding the
    /// point's kept indices and the tile slot `__kc`.
    pub(super) fn kept_coords(
        &self,
        plan: &CpuPlan,
        full: bool,
        inner: TokenStream,
    ) -> TokenStream {
        let slot_terms = self.kept.iter().map(|&d| {
            let c = format_ident!("__c{}", d);
            let stride: usize = self
                .kept
                .iter()
                .filter(|&&e| e > d)
                .map(|&e| plan.reg[e])
                .product();
            quote!(+ #c * #stride)
        });
        let binds = self.kept.iter().map(|&d| {
            let (i, b, c) = (
                dim_var(d),
                format_ident!("__b{}", d),
                format_ident!("__c{}", d),
            );
            quote!(let #i: usize = #b + #c;)
        });
        let body = quote! { let __kc: usize = 0 #(#slot_terms)*; #(#binds)* #inner };
        self.kept.iter().rev().fold(body, |inner, &d| {
            let c = format_ident!("__c{}", d);
            let bound = if full {
                let r = plan.reg[d];
                quote!(#r)
            } else {
                let n = format_ident!("__n{}", d);
                quote!(#n)
            };
            quote!(for #c in 0..#bound { #inner })
        })
    }

    /// The two innermost reduction loops of a register tile as one loop,
    /// when that reads the same elements: the outer PW dimension `d1`
    /// advances every access by exactly the extent of the inner one `d2`
    /// times `d2`'s step (a convolution's filter columns and channels over
    /// an NHWC image: one contiguous run of `S·C` elements instead of `S`
    /// runs of `C`, whose loop overhead cost ~10 % of mcc's time). Whether
    /// it holds depends on run-time strides and tile extents: the result is
    /// the pair and the condition, `None` where it cannot hold (fewer than
    /// two PW dimensions, or a scalar function that reads its indices).
    pub(super) fn fusable_reduction(&self) -> Option<(usize, usize, TokenStream)> {
        let [.., d1, d2] = self.reduced[..] else {
            return None;
        };
        if self.k.scalar_fn.index_params.is_some() || self.kinds[d2] != DimKind::Pw {
            return None;
        }
        let e2 = {
            let (lo, hi) = l1_tile(d2);
            quote!(((#hi - #lo) as isize))
        };
        let conds = self.accesses().into_iter().map(|a| {
            let (s1, s2) = (&a.stride[d1], &a.stride[d2]);
            quote!(&& (#s1 as isize) == #e2 * (#s2 as isize))
        });
        Some((d1, d2, quote!(true #(#conds)*)))
    }
}

/// Loops over the current L1 tile of each of `dims` (outermost first)
/// around `inner`: the reduction loops of a register tile, the copy of a
/// packed tile.
pub(super) fn l1_loops(inner: TokenStream, dims: &[usize]) -> TokenStream {
    dims.iter().rev().fold(inner, |inner, &d| {
        let (i, (lo, hi)) = (dim_var(d), l1_tile(d));
        quote!(for #i in #lo..#hi { #inner })
    })
}
