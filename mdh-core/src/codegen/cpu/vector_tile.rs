//! A register tile on SIMD lanes.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::names::{dim_var, stream_writer};
use super::simd::{vcombine, Simd};
use super::store::Lanes;
use super::Gen;
use crate::codegen::rust_expr::{self, ty};
use crate::codegen::rust_simd;
use crate::plan::{static_coef, CpuPlan};
use crate::spec::{BuiltinOp, ReduceOp};

impl<'k> Gen<'k> {
    /// A register tile on SIMD lanes: the register tile's other kept
    /// coordinates and its vectors are unrolled, so every accumulator is a
    /// named vector that stays in registers. `edge`: the tile is cut by the
    /// end of its L1 tile (`__n{d}` below the register tile in some kept
    /// dimension): coordinates and vectors past `__n{d}` are skipped, and
    /// the last vector of a kept SIMD dimension has `__cnt` lanes of points
    /// (partial loads and stores).
    pub(super) fn vector_tile(&self, plan: &CpuPlan, simd: &Simd, edge: bool) -> TokenStream {
        let (s, n) = (simd.dim, simd.lanes);
        let part = edge && !simd.reduced;
        // Kept coordinates enumerated at compile time (the lane dimension,
        // if kept, is covered by the vectors instead).
        let outer: Vec<usize> = self
            .kept
            .iter()
            .copied()
            .filter(|&d| simd.reduced || d != s)
            .collect();
        let mut combos: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
        for &d in &outer {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    (0..plan.reg[d]).map(move |v| {
                        let mut c = c.clone();
                        c.push((d, v));
                        c
                    })
                })
                .collect();
        }
        let binds = |combo: &[(usize, usize)]| {
            let b = combo.iter().map(|&(d, v)| {
                let (i, base) = (dim_var(d), format_ident!("__b{}", d));
                quote!(let #i: usize = #base + #v;)
            });
            quote!(#(#b)*)
        };
        // In the reduction loop of an edge tile, coordinates past the edge
        // compute the last point again instead of being skipped: the loop
        // has no branches (per coordinate and vector they made it several
        // times slower than a full tile's), and what they compute is never
        // stored (stores stay guarded).
        let clamped_binds = |combo: &[(usize, usize)]| {
            if !edge {
                return binds(combo);
            }
            let b = combo.iter().map(|&(d, v)| {
                let (i, base, nd) = (
                    dim_var(d),
                    format_ident!("__b{}", d),
                    format_ident!("__n{}", d),
                );
                if v == 0 {
                    quote!(let #i: usize = #base;)
                } else {
                    quote!(let #i: usize = #base + ::core::cmp::min(#v, #nd - 1);)
                }
            });
            quote!(#(#b)*)
        };
        // The accumulators of output `o`: one array of vectors, indexed by
        // coordinate combination and vector. Named vectors (one `let` each)
        // made LLVM rotate them through registers and spill one every step
        // of the reduction loop (a 6×64 f32 tile: ~40 moves per 24 FMAs);
        // an array, scalar-replaced, keeps each in one register.
        let chunks = simd.chunks;
        let acc_arr = |o: usize| format_ident!("__vacc{}", o);
        let acc_name = |o: usize, c: usize, v: usize| {
            let (a, i) = (acc_arr(o), c * chunks + v);
            quote!(#a[#i])
        };
        let pidx = {
            let terms = self.kept.iter().map(|&d| {
                let (i, ps) = (dim_var(d), format_ident!("__ps{}", d));
                quote!(+ (#i - __r[#d].0) * #ps)
            });
            quote!(let __pidx: usize = 0 #(#terms)*;)
        };
        let i_s = dim_var(s);
        let b_s = format_ident!("__b{}", s);
        // The code of vector `v` of coordinate combination `combo`, skipped
        // at an edge when the combination or the vector is past the edge.
        let n_s = format_ident!("__n{}", s);
        let guarded = |combo: &[(usize, usize)], v: Option<usize>, body: TokenStream| {
            let mut conds: Vec<TokenStream> = Vec::new();
            if edge {
                for &(d, c) in combo.iter().filter(|&&(_, c)| c > 0) {
                    let nd = format_ident!("__n{}", d);
                    conds.push(quote!(#c < #nd));
                }
            }
            let cnt = match v {
                Some(v) if part => {
                    if v > 0 {
                        conds.push(quote!(#v * #n < #n_s));
                    }
                    quote!(let __cnt: usize = ::core::cmp::min(#n, #n_s - #v * #n);)
                }
                _ => quote!(),
            };
            if conds.is_empty() {
                quote!({ #cnt #body })
            } else {
                quote!(if #(#conds)&&* { #cnt #body })
            }
        };
        let stored = if part { quote!(__cnt) } else { quote!(#n) };

        if self.reduced.is_empty() {
            // No reduction: each vector of values goes straight to the task's results.
            let mut body = TokenStream::new();
            for combo in &combos {
                let b = binds(combo);
                for v in 0..simd.chunks {
                    let point = self.vector_point(s, n, part);
                    let lanes: Vec<TokenStream> = (0..self.n_out())
                        .map(|o| {
                            let val = format_ident!("__v{}", o);
                            quote!(#val.0[__l])
                        })
                        .collect();
                    let contiguous = self
                        .k
                        .output_accesses()
                        .iter()
                        .all(|(_, f)| static_coef(f, s) == Some(1));
                    let store = if self.direct() && contiguous {
                        // Whole vectors: the lanes are consecutive elements.
                        let vals: Vec<TokenStream> = (0..self.n_out())
                            .map(|o| {
                                let val = format_ident!("__v{}", o);
                                quote!(#val.0)
                            })
                            .collect();
                        let lanes = match (part, plan.stream) {
                            (true, _) => Lanes::First(n),
                            (false, true) => Lanes::Stream(n),
                            (false, false) => Lanes::All,
                        };
                        self.direct_writes(&vals, lanes)
                    } else if self.direct() {
                        let w = self.direct_writes(&lanes, Lanes::One);
                        quote! { for __l in 0..#stored { let #i_s: usize = #b_s + #v * #n + __l; #w } }
                    } else {
                        quote! { for __l in 0..#stored { let #i_s: usize = #b_s + #v * #n + __l; #pidx __o[__pidx] = (#(#lanes,)*); } }
                    };
                    body.extend(guarded(
                        combo,
                        Some(v),
                        quote! {
                            #b
                            let #i_s: usize = #b_s + #v * #n;
                            #point
                            #store
                        },
                    ));
                }
            }
            return body;
        }

        let mut init = TokenStream::new();
        for o in 0..self.n_out() {
            let Some(ReduceOp::Builtin(op, _)) = self.ops[o] else {
                continue;
            };
            let id = rust_simd::splat(
                rust_expr::identity(*op, self.out_tys[o]),
                self.out_tys[o],
                n,
            );
            let vt = rust_simd::vty(self.out_tys[o], n);
            let (a, len) = (acc_arr(o), combos.len() * chunks);
            init.extend(quote!(let mut #a: [#vt; #len] = [#id; #len];));
            for c in 0..combos.len() {
                if simd.reduced {
                    let (t, tt) = (format_ident!("__tacc{}_{}", o, c), ty(self.out_tys[o]));
                    let sid = rust_expr::identity(*op, self.out_tys[o]);
                    init.extend(quote!(let mut #t: #tt = #sid;));
                }
            }
        }
        // The first lane and the lane count of each vector of an edge tile,
        // outside the reduction loop: a vector past the edge computes the
        // last point again (one lane, repeated).
        if part {
            for v in 0..simd.chunks {
                let (sv, cv) = (format_ident!("__sv{}", v), format_ident!("__cntv{}", v));
                init.extend(quote! {
                    let #sv: usize = ::core::cmp::min(#v * #n, #n_s - 1);
                    let #cv: usize = ::core::cmp::min(#n, #n_s - #sv);
                });
            }
        }
        // One step of the innermost loop: every vector of the tile.
        let mut step = TokenStream::new();
        for (c, combo) in combos.iter().enumerate() {
            let b = clamped_binds(combo);
            for v in 0..simd.chunks {
                let acc = |o: usize| acc_name(o, c, v);
                let upd = self.vector_accumulate(s, n, part, &acc);
                let lane0 = if simd.reduced {
                    quote!(__j + #v * #n)
                } else if part {
                    let sv = format_ident!("__sv{}", v);
                    quote!(#b_s + #sv)
                } else {
                    quote!(#b_s + #v * #n)
                };
                let cnt = if part {
                    let cv = format_ident!("__cntv{}", v);
                    quote!(let __cnt: usize = #cv;)
                } else {
                    quote!()
                };
                step.extend(quote! {{ #b let #i_s: usize = #lane0; #cnt #upd }});
            }
        }
        let red_loops = |inner: TokenStream, dims: &[usize]| {
            dims.iter().rev().fold(inner, |inner, &d| {
                let (i, lo, hi) = (
                    dim_var(d),
                    format_ident!("__t1_{}", d),
                    format_ident!("__t1e_{}", d),
                );
                quote!(for #i in #lo..#hi { #inner })
            })
        };
        let loops = if simd.reduced {
            let (lo, hi) = (format_ident!("__t1_{}", s), format_ident!("__t1e_{}", s));
            let width = simd.chunks * n;
            let mut tail = TokenStream::new();
            for (c, combo) in combos.iter().enumerate() {
                let point = self.point();
                let upd = (0..self.n_out()).filter_map(|o| {
                    let t = format_ident!("__tacc{}_{}", o, c);
                    let v = format_ident!("__v{}", o);
                    self.ops[o].map(|_| {
                        let cmb = self.combine_values(o, &quote!(#t), &quote!(#v));
                        quote!(#t = #cmb;)
                    })
                });
                let b = clamped_binds(combo);
                tail.extend(quote! {{ #b let #i_s: usize = __j; #point #(#upd)* }});
            }
            let inner = quote! {
                let mut __j: usize = #lo;
                while __j + #width <= #hi {
                    #step
                    __j += #width;
                }
                while __j < #hi {
                    #tail
                    __j += 1;
                }
            };
            red_loops(inner, &self.reduced[..self.reduced.len() - 1])
        } else if let Some((d1, d2, fusable)) = self.fusable_reduction() {
            let [(i1, lo1, hi1), (i2, lo2, hi2)] = [d1, d2].map(|d| {
                (
                    dim_var(d),
                    format_ident!("__t1_{}", d),
                    format_ident!("__t1e_{}", d),
                )
            });
            // Fused, `d2`'s index runs past its tile while `d1`'s stays at
            // its first value: every access's offset is the one of the
            // pair it stands for (see `fusable_reduction`).
            let pair = quote! {
                if __fuse {
                    let #i1: usize = #lo1;
                    for #i2 in #lo2..#lo2 + (#hi1 - #lo1) * (#hi2 - #lo2) { #step }
                } else {
                    for #i1 in #lo1..#hi1 { for #i2 in #lo2..#hi2 { #step } }
                }
            };
            let nest = red_loops(pair, &self.reduced[..self.reduced.len() - 2]);
            quote! { let __fuse: bool = #fusable; #nest }
        } else {
            red_loops(step, &self.reduced)
        };
        // Fold lanes (reduced) or spread them (kept), then re-compose with
        // the task's partial results.
        let mut store = TokenStream::new();
        let write = self.partial_store();
        // A single output whose SIMD dimension is the innermost kept one:
        // its lanes are consecutive task-local partial results, re-composed
        // as a vector.
        let innermost_kept = self.kept.last() == Some(&s);
        let contiguous_out = static_coef(self.k.output_accesses()[0].1, s) == Some(1);
        // The lanes `__new` of the single output re-composed with the
        // output's earlier partial results at the current point, where it
        // is contiguous along `s`: all `N` lanes of a full tile, or the
        // first `__cnt` of an edge tile's vector (masked loads and stores).
        // SAFETY (of the generated reads and writes): as in `partial_store`,
        // for the points of the lanes, consecutive in the output.
        let contiguous_store = |op: &BuiltinOp, edge: bool| {
            let vt = rust_simd::vty(self.out_tys[0], n);
            let merged = vcombine(*op, &quote!(__slot), &quote!(__new));
            let (ptr, off) = self.out_at(0);
            let (read, write) = if edge {
                (
                    quote!(#ptr.read_part::<ISA, #n>(__at, __cnt)),
                    quote!(#ptr.write_part::<ISA, #n>(__at, __new.0, __cnt)),
                )
            } else {
                (
                    quote!(#ptr.read_lanes(__at)),
                    if plan.stream {
                        // Past the caches only where final (`__stream`).
                        let sw = stream_writer(0);
                        quote!(if __stream { #sw.write::<ISA, #n>(__at, __new.0) } else { #ptr.write_lanes(__at, __new.0) })
                    } else {
                        quote!(#ptr.write_lanes(__at, __new.0))
                    },
                )
            };
            quote! {
                let __at: usize = #off;
                let __new: #vt = if __first { __new } else {
                    let __slot: #vt = ::mdh::__rt::V(unsafe { #read });
                    #merged
                };
                unsafe { #write };
            }
        };
        let edge_store = match self.ops.first() {
            Some(Some(ReduceOp::Builtin(op, _)))
                if part && self.n_out() == 1 && innermost_kept && contiguous_out =>
            {
                Some(contiguous_store(op, true))
            }
            _ => None,
        };
        let vector_store = match self.ops.first() {
            Some(Some(ReduceOp::Builtin(op, _))) if self.n_out() == 1 && innermost_kept => {
                let (t, vt) = (ty(self.out_tys[0]), rust_simd::vty(self.out_tys[0], n));
                let merged = vcombine(*op, &quote!(__slot), &quote!(__new));
                // In the output when it is contiguous along `s`, else lane by
                // lane there.
                let direct = if contiguous_out {
                    contiguous_store(op, false)
                } else {
                    let write = self.partial_store();
                    quote! {
                        for __l in 0..#n {
                            let #i_s: usize = #i_s + __l;
                            let __new = (__new.0[__l],);
                            #write
                        }
                    }
                };
                // SAFETY: `flat` views the partial results as plain
                // elements; the `N` lanes from `__pidx` are the kept points
                // `__i{s} .. __i{s} + N` of the task's region (a full
                // register tile), consecutive there (`s` is the innermost
                // kept dimension), and no other reference to `__o` is live.
                Some(quote! {
                    if __direct {
                        #direct
                    } else {
                        #pidx
                        let __op: *mut #t = ::mdh::cpu::flat(__o).as_mut_ptr();
                        unsafe {
                            let __at = __op.add(__pidx);
                            let __new: #vt = if __first { __new } else {
                                let __slot: #vt = <#vt>::read(__at);
                                #merged
                            };
                            __new.write(__at);
                        }
                    }
                })
            }
            _ => None,
        };
        for (c, combo) in combos.iter().enumerate() {
            let b = binds(combo);
            if simd.reduced {
                let folds = (0..self.n_out()).map(|o| {
                    let (t, f) = (
                        format_ident!("__tacc{}_{}", o, c),
                        format_ident!("__f{}", o),
                    );
                    let accs = (0..simd.chunks).map(|v| acc_name(o, c, v));
                    let cmb = self.combine_values(o, &quote!(#f), &quote!(__x.0[__l]));
                    quote! {
                        let mut #f = #t;
                        for __x in [#(#accs),*] {
                            for __l in 0..#n { #f = #cmb; }
                        }
                    }
                });
                let fs = (0..self.n_out()).map(|o| format_ident!("__f{}", o));
                store.extend(guarded(
                    combo,
                    None,
                    quote! { #b #(#folds)* let __new = (#(#fs,)*); #write },
                ));
            } else {
                for v in 0..simd.chunks {
                    // Lanes are read from a copy of the vector: indexing the
                    // accumulator array itself at a run-time lane would keep
                    // the whole array in memory during the reduction.
                    let copies = (0..self.n_out()).map(|o| {
                        let (a, x) = (acc_name(o, c, v), format_ident!("__lanes{}", o));
                        quote!(let #x = #a;)
                    });
                    let lanes = (0..self.n_out()).map(|o| {
                        let x = format_ident!("__lanes{}", o);
                        quote!(#x.0[__l])
                    });
                    let per_lane = quote! {
                        #(#copies)*
                        for __l in 0..#stored {
                            let #i_s: usize = #b_s + #v * #n + __l;
                            let __new = (#(#lanes,)*);
                            #write
                        }
                    };
                    let a = acc_name(0, c, v);
                    let body = match (&vector_store, &edge_store) {
                        (Some(vs), _) if !part => {
                            quote!(let #i_s: usize = #b_s + #v * #n; let __new = #a; #vs)
                        }
                        (_, Some(es)) => quote! {
                            if __direct {
                                let #i_s: usize = #b_s + #v * #n;
                                let __new = #a;
                                #es
                            } else {
                                #per_lane
                            }
                        },
                        _ => per_lane,
                    };
                    store.extend(guarded(combo, Some(v), quote!(#b #body)));
                }
            }
        }
        quote! { #init #loops #store }
    }
}
