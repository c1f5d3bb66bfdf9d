//! A register tile on SIMD lanes: the register tile's other kept
//! coordinates and its vectors are unrolled, so every accumulator is a
//! vector that stays in a register.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::names::{dim_var, l1_tile, stream_writer};
use super::pairs::Pairs;
use super::simd::{vcombine, Simd};
use super::store::Lanes;
use super::tiles::l1_loops;
use super::Gen;
use crate::codegen::rust_expr::{self, ty};
use crate::codegen::rust_simd;
use crate::plan::CpuPlan;
use crate::spec::{BuiltinOp, Expr, ExprKind, ReduceOp};

/// A coordinate combination: a value per kept dimension enumerated at
/// compile time.
type Combo = Vec<(usize, usize)>;

/// The fewest coordinate combinations (rows) for which an edge tile runs
/// as smaller tiles ([`VectorTile::split_edge`]): a tile one vector wide
/// holds one accumulator per row, and with fewer than about the FMA latency
/// × ports its reduction is latency-bound (a one-row plan of 8 vectors,
/// matmul 1 × 1000 × 2048's `*` entry, would run its 104-column edge on one
/// accumulator at a time); such tiles compute their whole width and store
/// the points that exist.
const SPLIT_ROWS: usize = 4;

impl<'k> Gen<'k> {
    /// A register tile on SIMD lanes. `edge`: the tile is cut by the end of
    /// its L1 tile (`__n{d}` below the register tile in some kept
    /// dimension): coordinates and vectors past `__n{d}` are skipped, and
    /// the last vector of a kept SIMD dimension has `__cnt` lanes of points
    /// (partial loads and stores).
    pub(super) fn vector_tile(&self, plan: &CpuPlan, simd: &Simd, edge: bool) -> TokenStream {
        VectorTile::new(self, plan, simd, edge).emit()
    }
}

/// The state of one vector register tile's emission.
struct VectorTile<'g, 'k> {
    g: &'g Gen<'k>,
    plan: &'g CpuPlan,
    simd: &'g Simd,
    edge: bool,
    /// Whether the last vector of a kept SIMD dimension may hold fewer
    /// than `N` points (an edge tile whose lanes are kept points).
    part: bool,
    /// The kept coordinates enumerated at compile time (the lane
    /// dimension, if kept, is covered by the vectors instead).
    combos: Vec<Combo>,
    /// The lane dimension's index variable, its register tile's base
    /// `__b{s}` and its extent `__n{s}` in this tile.
    i_s: Ident,
    b_s: Ident,
    n_s: Ident,
    /// Whether an edge of this tile may run as smaller tiles (the plan's
    /// tile; the smaller tiles run as they are).
    split: bool,
}

impl<'g, 'k> VectorTile<'g, 'k> {
    fn new(g: &'g Gen<'k>, plan: &'g CpuPlan, simd: &'g Simd, edge: bool) -> Self {
        let s = simd.dim;
        let outer = g.kept.iter().copied().filter(|&d| simd.reduced || d != s);
        let mut combos: Vec<Combo> = vec![Vec::new()];
        for d in outer {
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
        VectorTile {
            g,
            plan,
            simd,
            edge,
            part: edge && !simd.reduced,
            split: true,
            combos,
            i_s: dim_var(s),
            b_s: format_ident!("__b{}", s),
            n_s: format_ident!("__n{}", s),
        }
    }

    /// The tile's code: its values stored directly without a reduction,
    /// else accumulators, reduction loops and the stores of the folded or
    /// spread lanes (an edge tile several vectors wide as smaller tiles,
    /// [`VectorTile::split_edge`]).
    fn emit(&self) -> TokenStream {
        if self.g.reduced.is_empty() {
            return self.values();
        }
        if self.split && self.part && self.combos.len() >= SPLIT_ROWS {
            return self.split_edge();
        }
        self.whole()
    }

    /// The tile as it is: accumulators, reduction loops, stores.
    fn whole(&self) -> TokenStream {
        let loops = match self.g.pairs {
            Some(p) => self.pair_loops(p),
            None => self.loops(self.step()),
        };
        let (init, store) = (self.init(), self.store());
        let origins = self.coordinate_origins();
        quote! { #init #origins #loops #store }
    }

    /// Each kept coordinate of the combinations (clamped at an edge) as a
    /// value opaque to LLVM (`mdh::simd::tile_origin`), before the
    /// reduction loop. Seen through, the rows of a matmul tile were one
    /// pointer stepped by the row stride, six integer adds among the 12
    /// FMAs of each step (30 instructions a step, near the 6-wide
    /// dispatch); opaque, each row is a register and the rows share one
    /// index (24 instructions). AVX2 matmul 1024³ on the 2-core AMD EPYC
    /// (Zen 3): 4-7 % faster in four interleaved runs.
    fn coordinate_origins(&self) -> TokenStream {
        let mut seen = std::collections::BTreeSet::new();
        let mut out = TokenStream::new();
        for &(d, v) in self.combos.iter().flatten() {
            if seen.insert((d, v)) {
                let (name, x) = (format_ident!("__ko{}_{}", d, v), self.clamped(d, v));
                out.extend(quote!(let #name: usize = ::mdh::__rt::tile_origin(#x);));
            }
        }
        out
    }

    /// The kept indices of `combo` in the reduction loop, from
    /// [`Self::coordinate_origins`].
    fn origin_binds(&self, combo: &[(usize, usize)]) -> TokenStream {
        let b = combo.iter().map(|&(d, v)| {
            let (i, name) = (dim_var(d), format_ident!("__ko{}_{}", d, v));
            quote!(let #i: usize = #name;)
        });
        quote!(#(#b)*)
    }

    /// An edge tile of a reduction several vectors wide along its kept SIMD
    /// dimension, as smaller tiles over the points that exist. Where that
    /// dimension is cut: tiles one vector wide across it, the other kept
    /// coordinates clamped as in any edge tile (at an extent of one vector
    /// the whole tile computed its other vectors for nothing: ccsdt at
    /// extents 16 with a 6-row, 4-vector tile ran 4.2× slower on the
    /// 2-core AMD EPYC than one vector wide). Where only other kept
    /// dimensions are cut: the full width over two coordinates of the
    /// innermost of them (enough accumulators to keep both FMA pipes busy)
    /// and one of each other (a matmul with one row computed the tile's
    /// six rows). Both hold fewer accumulators than the full tile, so the
    /// edge code is smaller than one full tile.
    ///
    /// A tile one vector wide splits only its rows: cut along the SIMD
    /// dimension it runs as it is (AVX2's 6-row, one-vector matmul tile
    /// with one row: 0.24 ms at 1×1000×2048 as a variable-trip tile, whose
    /// vectors LLVM assembled lane by lane, 0.07 in row pairs).
    fn split_edge(&self) -> TokenStream {
        let (n_s, width) = (&self.n_s, self.simd.chunks * self.n());
        // The other kept dimensions the tile spans, innermost last.
        let outer: Vec<usize> = self.combos[0]
            .iter()
            .map(|&(d, _)| d)
            .filter(|&d| self.plan.reg[d] > 1)
            .collect();
        let narrow = if self.simd.chunks > 1 {
            self.single_vectors(&outer)
        } else {
            self.whole()
        };
        let rows = self.row_pairs(&outer);
        quote! {
            if #n_s < #width { #narrow } else { #rows }
        }
    }

    /// The code of a smaller tile of this one's plan and dimensions: the
    /// SIMD mapping `simd`, the coordinates `combos`, and `part` / `edge`
    /// as in [`VectorTile`].
    fn smaller(&self, simd: &Simd, combos: Vec<Combo>, part: bool, edge: bool) -> TokenStream {
        VectorTile {
            g: self.g,
            plan: self.plan,
            simd,
            edge,
            part,
            combos,
            i_s: self.i_s.clone(),
            b_s: self.b_s.clone(),
            n_s: self.n_s.clone(),
            split: false,
        }
        .emit()
    }

    /// The vectors of a cut SIMD dimension one at a time (see
    /// [`VectorTile::split_edge`]).
    fn single_vectors(&self, outer: &[usize]) -> TokenStream {
        let (n, b_s, n_s) = (self.n(), &self.b_s, &self.n_s);
        let one = Simd {
            chunks: 1,
            ..*self.simd
        };
        let tile = |part: bool, edge: bool| self.smaller(&one, self.combos.clone(), part, edge);
        // Whole vectors load and store whole, the last partial one masked
        // (through memory). Unclamped coordinates where the other
        // dimensions are whole: they address inputs at constant offsets
        // from one base, clamped ones each from its own (six rows: six
        // pointers and strides spilled in the reduction loop).
        let whole_rows = outer.iter().map(|&d| {
            let (nd, r) = (format_ident!("__n{}", d), self.plan.reg[d]);
            quote!(&& #nd == #r)
        });
        let (whole, clamped, last) = (tile(false, false), tile(false, true), tile(true, true));
        quote! {
            let (__es, __m): (usize, usize) = (#b_s, #n_s);
            let mut __c: usize = 0;
            while __c + #n <= __m {
                let #b_s: usize = __es + __c;
                if true #(#whole_rows)* { #whole } else { #clamped }
                __c += #n;
            }
            if __c < __m {
                let #b_s: usize = __es + __c;
                let #n_s: usize = __m - __c;
                #last
            }
        }
    }

    /// The full width over two coordinates at a time of the innermost of
    /// the cut dimensions `outer`, one of each other (see
    /// [`VectorTile::split_edge`]).
    fn row_pairs(&self, outer: &[usize]) -> TokenStream {
        let Some((&o, others)) = outer.split_last() else {
            return quote!();
        };
        let pair: Vec<Combo> = (0..2)
            .map(|v| {
                let mut c = self.combos[0].clone();
                c.iter_mut().filter(|x| x.0 == o).for_each(|x| x.1 = v);
                c
            })
            .collect();
        let tile = self.smaller(self.simd, pair, false, self.edge);
        let names = |d: usize| {
            (
                format_ident!("__b{}", d),
                format_ident!("__n{}", d),
                format_ident!("__e{}", d),
            )
        };
        let (b, nd, b0) = names(o);
        let pairs = quote! {
            let (#b0, __m): (usize, usize) = (#b, #nd);
            let mut __c: usize = 0;
            while __c < __m {
                let #b: usize = #b0 + __c;
                let #nd: usize = ::core::cmp::min(2, __m - __c);
                #tile
                __c += 2;
            }
        };
        others.iter().rev().fold(pairs, |inner, &d| {
            let (b, nd, b0) = names(d);
            quote! {
                let #b0: usize = #b;
                for __c in 0..#nd {
                    let #b: usize = #b0 + __c;
                    let #nd: usize = 1;
                    let _ = #nd;
                    #inner
                }
            }
        })
    }

    /// The lanes per vector.
    fn n(&self) -> usize {
        self.simd.lanes
    }

    /// The lanes of a vector that are stored: `N`, or `__cnt` at an edge.
    fn stored(&self) -> TokenStream {
        if self.part {
            quote!(__cnt)
        } else {
            let n = self.n();
            quote!(#n)
        }
    }

    /// The kept indices of coordinate combination `combo`.
    fn binds(&self, combo: &[(usize, usize)]) -> TokenStream {
        let b = combo.iter().map(|&(d, v)| {
            let (i, base) = (dim_var(d), format_ident!("__b{}", d));
            quote!(let #i: usize = #base + #v;)
        });
        quote!(#(#b)*)
    }

    /// The kept indices of `combo` in the reduction loop. At an edge,
    /// coordinates past it compute the last point again instead of being
    /// skipped: the loop has no branches (per coordinate and vector they
    /// made it several times slower than a full tile's), and what they
    /// compute is never stored (stores stay guarded).
    fn clamped_binds(&self, combo: &[(usize, usize)]) -> TokenStream {
        let b = combo.iter().map(|&(d, v)| {
            let (i, x) = (dim_var(d), self.clamped(d, v));
            quote!(let #i: usize = #x;)
        });
        quote!(#(#b)*)
    }

    /// Coordinate `v` of kept dimension `d` in this tile, clamped to the
    /// last point at an edge (see [`Self::clamped_binds`]).
    fn clamped(&self, d: usize, v: usize) -> TokenStream {
        let (base, nd) = (format_ident!("__b{}", d), format_ident!("__n{}", d));
        if v == 0 || !self.edge {
            quote!(#base + #v)
        } else {
            quote!(#base + ::core::cmp::min(#v, #nd - 1))
        }
    }

    /// The accumulator of output `o` for vector `v` of combination `c`. The
    /// accumulators of an output are one array of vectors, indexed by
    /// combination and vector. Named vectors (one `let` each) made LLVM
    /// rotate them through registers and spill one every step of the
    /// reduction loop (a 6×64 f32 tile: ~40 moves per 24 FMAs); an array,
    /// scalar-replaced, keeps each in one register.
    fn acc(&self, o: usize, c: usize, v: usize) -> TokenStream {
        let (a, i) = (acc_array(o), c * self.simd.chunks + v);
        quote!(#a[#i])
    }

    /// `body`, the code of vector `v` of combination `combo`, skipped at an
    /// edge when the combination or the vector is past the edge.
    fn guarded(
        &self,
        combo: &[(usize, usize)],
        v: Option<usize>,
        body: TokenStream,
    ) -> TokenStream {
        let (n, n_s) = (self.n(), &self.n_s);
        let mut conds: Vec<TokenStream> = Vec::new();
        if self.edge {
            for &(d, c) in combo.iter().filter(|&&(_, c)| c > 0) {
                let nd = format_ident!("__n{}", d);
                conds.push(quote!(#c < #nd));
            }
        }
        let cnt = match v {
            Some(v) if self.part => {
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
    }

    /// Without a reduction: each vector of values goes straight to the
    /// task's results. In a whole tile every vector is computed before any
    /// is stored, so that what the vectors share (an operand read along
    /// another dimension, `s[i]` of softmax's `e[i, j] * (1.0 / s[i])`,
    /// and what the scalar function makes of it) is read and computed once
    /// per tile: between a store and the next vector's read LLVM cannot
    /// tell that the output is not that operand, and read and divided again
    /// per vector (softmax's normalization on the 2-core AMD EPYC, Zen 3:
    /// four `vdivss` per four vectors, a quarter of the stage's time).
    /// Not where the scalar function calls a long method (`exp`): a tile of
    /// its vectors at once spills their temporaries (softmax's exponentials
    /// ran 6 % slower held).
    fn values(&self) -> TokenStream {
        let (g, s, n) = (self.g, self.simd.dim, self.n());
        let (i_s, b_s) = (&self.i_s, &self.b_s);
        let long = |e: &Expr| matches!(e.kind, ExprKind::MethodCall(_, m, _, _) if rust_simd::long_lane(m));
        let hold = !self.edge && !g.w.body.any(&long);
        let vals: Vec<Ident> = (0..g.n_out()).map(|o| format_ident!("__v{}", o)).collect();
        let mut computed = TokenStream::new();
        let mut body = TokenStream::new();
        for (c, combo) in self.combos.iter().enumerate() {
            let b = self.binds(combo);
            for v in 0..self.simd.chunks {
                let point = g.vector_point(s, n, self.part);
                let store = self.value_store(v);
                let at = quote!(#b let #i_s: usize = #b_s + #v * #n;);
                if !hold {
                    body.extend(self.guarded(combo, Some(v), quote!(#at #point #store)));
                    continue;
                }
                let held = format_ident!("__vals{}_{}", c, v);
                computed.extend(quote!(let #held = { #at #point (#(#vals,)*) };));
                body.extend(quote!({ #at let (#(#vals,)*) = #held; #store }));
            }
        }
        quote!(#computed #body)
    }

    /// The store of vector `v`'s values `__v{o}` without a reduction: whole
    /// vectors where the outputs are written directly and contiguous along
    /// `s`, else lane by lane.
    fn value_store(&self, v: usize) -> TokenStream {
        let (g, s, n) = (self.g, self.simd.dim, self.n());
        let (i_s, b_s, stored) = (&self.i_s, &self.b_s, self.stored());
        let lanes: Vec<TokenStream> = (0..g.n_out())
            .map(|o| {
                let val = format_ident!("__v{}", o);
                quote!(#val.0[__l])
            })
            .collect();
        let contiguous =
            g.k.analysis()
                .outputs
                .iter()
                .all(|a| a.static_coefs[s] == Some(1));
        if g.direct() && contiguous {
            // Whole vectors: the lanes are consecutive elements.
            let vals: Vec<TokenStream> = (0..g.n_out())
                .map(|o| {
                    let val = format_ident!("__v{}", o);
                    quote!(#val.0)
                })
                .collect();
            let lanes = match (self.part, self.plan.stream) {
                (true, _) => Lanes::First(n),
                (false, true) => Lanes::Stream(n),
                (false, false) => Lanes::All,
            };
            g.direct_writes(&vals, lanes)
        } else if g.direct() {
            let w = g.direct_writes(&lanes, Lanes::One);
            quote! { for __l in 0..#stored { let #i_s: usize = #b_s + #v * #n + __l; #w } }
        } else {
            let pidx = g.partial_index();
            quote! { for __l in 0..#stored { let #i_s: usize = #b_s + #v * #n + __l; #pidx __o[__pidx] = (#(#lanes,)*); } }
        }
    }

    /// The accumulators at the operators' identities (and, with lanes of
    /// partial results, the scalar accumulators of the tail), and at an
    /// edge the first lane and the lane count of each vector, outside the
    /// reduction loop: a vector past the edge computes the last point again
    /// (one lane, repeated).
    fn init(&self) -> TokenStream {
        let (g, n, n_s) = (self.g, self.n(), &self.n_s);
        let mut init = TokenStream::new();
        for o in 0..g.n_out() {
            let Some(ReduceOp::Builtin(op, _)) = g.ops[o] else {
                continue;
            };
            let t = g.out_tys[o];
            let id = rust_simd::splat(rust_expr::identity(*op, t), t, n);
            let vt = rust_simd::vty(t, n);
            let (a, len) = (acc_array(o), self.combos.len() * self.simd.chunks);
            init.extend(quote!(let mut #a: [#vt; #len] = [#id; #len];));
            if self.simd.reduced {
                for c in 0..self.combos.len() {
                    let (ta, tt) = (tail_acc(o, c), ty(t));
                    let sid = rust_expr::identity(*op, t);
                    init.extend(quote!(let mut #ta: #tt = #sid;));
                }
            }
        }
        if self.part {
            for v in 0..self.simd.chunks {
                let (sv, cv) = (format_ident!("__sv{}", v), format_ident!("__cntv{}", v));
                init.extend(quote! {
                    let #sv: usize = ::core::cmp::min(#v * #n, #n_s - 1);
                    let #cv: usize = ::core::cmp::min(#n, #n_s - #sv);
                });
            }
        }
        init
    }

    /// One step of the innermost loop: every vector of the tile.
    fn step(&self) -> TokenStream {
        let (g, s, n) = (self.g, self.simd.dim, self.n());
        let i_s = &self.i_s;
        let mut step = TokenStream::new();
        let pin = self.simd.reduced && self.combos.len() > 1;
        for (c, combo) in self.combos.iter().enumerate() {
            let b = self.origin_binds(combo);
            for v in 0..self.simd.chunks {
                let acc = |o: usize| self.acc(o, c, v);
                let upd = g.vector_accumulate(s, n, self.part, pin, &acc);
                let lane0 = if self.simd.reduced {
                    quote!(__j + #v * #n)
                } else {
                    self.lane0(v)
                };
                let cnt = if self.part {
                    let cv = format_ident!("__cntv{}", v);
                    quote!(let __cnt: usize = #cv;)
                } else {
                    quote!()
                };
                step.extend(quote! {{ #b let #i_s: usize = #lane0; #cnt #upd }});
            }
        }
        step
    }

    /// The reduction loops of a pair body ([`Gen::pairs`]): the points of
    /// the innermost one two at a time, an odd last one alone.
    fn pair_loops(&self, p: Pairs) -> TokenStream {
        let (i, (lo, hi)) = (dim_var(p.kr), l1_tile(p.kr));
        let (step, last) = (self.pair_step(p, false), self.pair_step(p, true));
        let inner = quote! {
            let mut __k: usize = #lo;
            while __k + 2 <= #hi {
                let #i: usize = __k;
                #step
                __k += 2;
            }
            if __k < #hi {
                let #i: usize = __k;
                #last
            }
        };
        let reduced = &self.g.reduced;
        l1_loops(inner, &reduced[..reduced.len() - 1])
    }

    /// One step of a pair body: every vector of the tile gains the
    /// products of the points `i_kr` and `i_kr + 1` (`last`: of `i_kr`
    /// alone, its partner's `x` zero). `x`'s pair is read once per
    /// coordinate combination; `y`'s pairs of a vector's 16 lanes are 32
    /// consecutive elements of its packed tile, whose length has a vector
    /// to spare past the last point (see `Gen::pair_layout`).
    fn pair_step(&self, p: Pairs, last: bool) -> TokenStream {
        let (accesses, k) = (self.g.accesses(), dim_var(p.kr));
        let (xs, xo) = (&accesses[p.x].slice, &accesses[p.x].off);
        let (ys, yo) = (&accesses[p.y].slice, &accesses[p.y].off);
        // SAFETY: `bind` checked that the access stays inside its buffer
        // over the index space; `i_kr + 1` is a point of it in a pair.
        let second = if last {
            quote!(0u32)
        } else {
            quote!({ let #k: usize = #k + 1; unsafe { #xs.get_unchecked(#xo) }.to_bits() as u32 })
        };
        let mut step = TokenStream::new();
        for (c, combo) in self.combos.iter().enumerate() {
            let b = self.origin_binds(combo);
            let vectors = (0..self.simd.chunks).map(|v| {
                let a = self.acc(0, c, v);
                let lane0 = self.lane0(v);
                let i_s = &self.i_s;
                // SAFETY: the 32 elements from the vector's first pair are
                // inside the packed tile (see above); the pair bodies are
                // compiled with AVX-512 BF16 where `NATIVE`.
                quote!({ let #i_s: usize = #lane0; #a = unsafe { #a.dot_pairs::<NATIVE>(__xb, #ys, #yo) }; })
            });
            step.extend(quote!({
                #b
                let __xb: u32 = unsafe { #xs.get_unchecked(#xo) }.to_bits() as u32 | (#second << 16);
                #(#vectors)*
            }));
        }
        step
    }

    /// The index of lane 0 of vector `v` of a step along a kept SIMD
    /// dimension: at an edge, a vector past it repeats the last point.
    fn lane0(&self, v: usize) -> TokenStream {
        let (b_s, n) = (&self.b_s, self.n());
        if self.part {
            let sv = format_ident!("__sv{}", v);
            quote!(#b_s + #sv)
        } else {
            quote!(#b_s + #v * #n)
        }
    }

    /// The reduction loops around `step`.
    fn loops(&self, step: TokenStream) -> TokenStream {
        let reduced = &self.g.reduced;
        if self.simd.reduced {
            let inner = self.lane_loop(step);
            l1_loops(inner, &reduced[..reduced.len() - 1])
        } else if let Some((d1, d2, fusable)) = self.g.fusable_reduction() {
            let [(i1, (lo1, hi1)), (i2, (lo2, hi2))] = [d1, d2].map(|d| (dim_var(d), l1_tile(d)));
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
            let nest = l1_loops(pair, &reduced[..reduced.len() - 2]);
            quote! { let __fuse: bool = #fusable; #nest }
        } else {
            l1_loops(step, reduced)
        }
    }

    /// The loop over the lane dimension when it is the innermost PW one:
    /// whole steps of `chunks` vectors, then the points past the last
    /// whole step one by one into the scalar accumulators.
    fn lane_loop(&self, step: TokenStream) -> TokenStream {
        let g = self.g;
        let (lo, hi) = l1_tile(self.simd.dim);
        let width = self.simd.chunks * self.n();
        let i_s = &self.i_s;
        let mut tail = TokenStream::new();
        for (c, combo) in self.combos.iter().enumerate() {
            let point = g.point();
            let upd = (0..g.n_out()).filter_map(|o| {
                let t = tail_acc(o, c);
                let v = format_ident!("__v{}", o);
                g.ops[o].map(|_| {
                    let cmb = g.combine_values(o, &quote!(#t), &quote!(#v));
                    quote!(#t = #cmb;)
                })
            });
            let b = self.clamped_binds(combo);
            tail.extend(quote! {{ #b let #i_s: usize = __j; #point #(#upd)* }});
        }
        quote! {
            let mut __j: usize = #lo;
            while __j + #width <= #hi {
                #step
                ::mdh::__rt::vector_step();
                __j += #width;
            }
            while __j < #hi {
                #tail
                __j += 1;
            }
        }
    }

    /// Fold lanes (reduced) or spread them (kept), then re-compose with
    /// the task's partial results.
    fn store(&self) -> TokenStream {
        let mut store = TokenStream::new();
        let (vector_store, edge_store) = (self.vector_store(), self.edge_store());
        for (c, combo) in self.combos.iter().enumerate() {
            if self.simd.reduced {
                store.extend(self.fold_store(c, combo));
            } else {
                for v in 0..self.simd.chunks {
                    let body = self.lanes_store(c, combo, v, &vector_store, &edge_store);
                    store.extend(body);
                }
            }
        }
        store
    }

    /// The lanes of combination `c`'s vectors and its tail accumulators
    /// folded into one value per output, re-composed with the partial
    /// results.
    fn fold_store(&self, c: usize, combo: &[(usize, usize)]) -> TokenStream {
        let (g, n) = (self.g, self.n());
        let b = self.binds(combo);
        let folds = (0..g.n_out()).map(|o| {
            let (t, f) = (tail_acc(o, c), format_ident!("__f{}", o));
            let accs = (0..self.simd.chunks).map(|v| self.acc(o, c, v));
            let cmb = g.combine_values(o, &quote!(#f), &quote!(__x.0[__l]));
            quote! {
                let mut #f = #t;
                for __x in [#(#accs),*] {
                    for __l in 0..#n { #f = #cmb; }
                }
            }
        });
        let fs = (0..g.n_out()).map(|o| format_ident!("__f{}", o));
        let write = g.partial_store();
        self.guarded(
            combo,
            None,
            quote! { #b #(#folds)* let __new = (#(#fs,)*); #write },
        )
    }

    /// The lanes of vector `v` of combination `c` (kept points) stored: as
    /// a vector where `vector_store` (full tiles) or `edge_store` (edge
    /// tiles, writing directly) applies, else lane by lane.
    fn lanes_store(
        &self,
        c: usize,
        combo: &[(usize, usize)],
        v: usize,
        vector_store: &Option<TokenStream>,
        edge_store: &Option<TokenStream>,
    ) -> TokenStream {
        let (g, n) = (self.g, self.n());
        let (i_s, b_s, stored) = (&self.i_s, &self.b_s, self.stored());
        let b = self.binds(combo);
        let write = g.partial_store();
        // Lanes are read from a copy of the vector: indexing the
        // accumulator array itself at a run-time lane would keep the whole
        // array in memory during the reduction.
        let copies = (0..g.n_out()).map(|o| {
            let (a, x) = (self.acc(o, c, v), format_ident!("__lanes{}", o));
            quote!(let #x = #a;)
        });
        let lanes = (0..g.n_out()).map(|o| {
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
        let a = self.acc(0, c, v);
        let body = match (vector_store, edge_store) {
            (Some(vs), _) if !self.part => {
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
        self.guarded(combo, Some(v), quote!(#b #body))
    }

    /// The single output's operator, where its lanes are consecutive
    /// task-local partial results (the SIMD dimension is the innermost kept
    /// one) and so re-composed as a vector.
    fn vector_op(&self) -> Option<BuiltinOp> {
        let g = self.g;
        match g.ops.first() {
            Some(Some(ReduceOp::Builtin(op, _)))
                if g.n_out() == 1 && g.kept.last() == Some(&self.simd.dim) =>
            {
                Some(*op)
            }
            _ => None,
        }
    }

    /// Whether the single output is contiguous along the SIMD dimension.
    fn contiguous_out(&self) -> bool {
        self.g.k.analysis().outputs[0].static_coefs[self.simd.dim] == Some(1)
    }

    /// The store of an edge tile's vector `__new` written directly, where
    /// the output is contiguous along `s`.
    fn edge_store(&self) -> Option<TokenStream> {
        let op = self.vector_op()?;
        (self.part && self.contiguous_out()).then(|| self.contiguous_store(op, true))
    }

    /// The store of a full tile's vector `__new`: in the output when it is
    /// written directly (contiguous along `s`, else lane by lane there),
    /// else in the task-local partial results.
    fn vector_store(&self) -> Option<TokenStream> {
        let op = self.vector_op()?;
        let (g, n, i_s) = (self.g, self.n(), &self.i_s);
        let (t, vt) = (ty(g.out_tys[0]), rust_simd::vty(g.out_tys[0], n));
        let merged = vcombine(op, &quote!(__slot), &quote!(__new));
        let direct = if self.contiguous_out() {
            self.contiguous_store(op, false)
        } else {
            let write = g.partial_store();
            quote! {
                for __l in 0..#n {
                    let #i_s: usize = #i_s + __l;
                    let __new = (__new.0[__l],);
                    #write
                }
            }
        };
        let pidx = g.partial_index();
        // SAFETY: `flat` views the partial results as plain elements; the
        // `N` lanes from `__pidx` are the kept points `__i{s} .. __i{s} + N`
        // of the task's region (a full register tile), consecutive there
        // (`s` is the innermost kept dimension), and no other reference to
        // `__o` is live.
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

    /// The lanes `__new` of the single output re-composed with the output's
    /// earlier partial results at the current point, where it is contiguous
    /// along `s`: all `N` lanes of a full tile, or the first `__cnt` of an
    /// edge tile's vector (masked loads and stores).
    /// SAFETY (of the generated reads and writes): as in `partial_store`,
    /// for the points of the lanes, consecutive in the output.
    fn contiguous_store(&self, op: BuiltinOp, edge: bool) -> TokenStream {
        let (g, n) = (self.g, self.n());
        let vt = rust_simd::vty(g.out_tys[0], n);
        let merged = vcombine(op, &quote!(__slot), &quote!(__new));
        let (ptr, off) = g.out_at(0);
        let cnt = if edge { quote!(__cnt) } else { quote!(#n) };
        let finished = g.finish_lanes(0, quote!(__new), &self.i_s, cnt);
        let last = g
            .has_epilogue(0)
            .then(|| quote!(let __new: #vt = if __last { #finished } else { __new };));
        let (read, write) = if edge {
            (
                quote!(#ptr.read_part::<ISA, #n>(__at, __cnt)),
                quote!(#ptr.write_part::<ISA, #n>(__at, __new.0, __cnt)),
            )
        } else {
            (
                quote!(#ptr.read_lanes(__at)),
                if self.plan.stream {
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
            #last
            unsafe { #write };
        }
    }
}

/// The array of vector accumulators of output `o`.
fn acc_array(o: usize) -> Ident {
    format_ident!("__vacc{}", o)
}

/// The scalar accumulator of output `o` for the tail points of
/// combination `c` (lanes of partial results only).
fn tail_acc(o: usize, c: usize) -> Ident {
    format_ident!("__tacc{}_{}", o, c)
}
