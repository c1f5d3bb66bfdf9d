//! The Rust/rayon CPU kernel of a checked kernel, generated from one or more
//! [`CpuPlan`]s.
//!
//! The generated `cpu` function validates its arguments with the kernel's
//! [`KernelDesc`](crate::desc::KernelDesc), picks the plan tuned for the
//! nearest sizes, and hands three closures to the facade's parallel driver
//! (`mdh::cpu::execute`, the COR layer): `compute` (the tiled loop nest of
//! one task: L2 and L1 tile loops, register tiles with constant trip
//! counts, partial results of PW dimensions in registers and in a
//! task-local buffer), `combine` (the combine operators on partial results)
//! and `write` (the output views). `compute` is compiled three times, for
//! AVX-512, AVX2+FMA and baseline x86-64 (or once elsewhere), and chosen at
//! run time, so users need no RUSTFLAGS.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::codegen::rust_expr::{self, ty};
use crate::codegen::rust_simd;
use crate::config::CpuEntry;
use crate::desc::{Bound, KernelDesc, Linear};
use crate::plan::{static_coef, used_dims, CpuPlan};
use crate::spec::{
    BinOp, BuiltinOp, DimKind, Expr, ExprKind, IndexFn, Kernel, ReduceOp, ScalarType, Type,
};

fn dim_var(d: usize) -> Ident {
    format_ident!("__i{}", d)
}

/// `(base + Σ coef[d] · i_d) as usize` for the dimensions the access uses.
fn offset(f: &IndexFn, dims: usize, base: &Ident, coef: &Ident) -> TokenStream {
    let terms = used_dims(f, dims).into_iter().map(|d| {
        let i = dim_var(d);
        match static_coef(f, d) {
            Some(c) => {
                let c = c as isize;
                quote!(+ #c * #i as isize)
            }
            None => quote!(+ #coef[#d] * #i as isize),
        }
    });
    quote!((#base #(#terms)*) as usize)
}

/// The operator of output access `k` (the same in every reduced dimension,
/// by the checker's Lemma 1 check), if any dimension is PW or PS.
fn reduce_op(k: &Kernel, access: usize) -> Option<&ReduceOp> {
    k.ops.iter().find_map(|op| op.op_for(access))
}

/// What the generator needs to know about one kernel (and, inside the task
/// body of a plan, the plan's packed input layouts).
#[derive(Clone)]
struct Gen<'k> {
    k: &'k Kernel,
    d: usize,
    kinds: Vec<DimKind>,
    kept: Vec<usize>,
    reduced: Vec<usize>,
    out_tys: Vec<ScalarType>,
    ops: Vec<Option<&'k ReduceOp>>,
    a_ty: TokenStream,
    /// Per input access: the layout of its packed L1 tile (empty: read in
    /// place); see [`CpuPlan::pack`].
    pack: Vec<Vec<usize>>,
}

impl<'k> Gen<'k> {
    fn new(k: &'k Kernel) -> Self {
        let d = k.dims.len();
        let kinds = k.dim_kinds();
        let out_tys: Vec<ScalarType> = k
            .output_accesses()
            .iter()
            .map(|(b, _)| k.outputs[*b].ty)
            .collect();
        let ops = (0..out_tys.len()).map(|o| reduce_op(k, o)).collect();
        let tys: Vec<TokenStream> = out_tys.iter().map(|t| ty(*t)).collect();
        Gen {
            k,
            d,
            kept: (0..d).filter(|&i| kinds[i].is_kept()).collect(),
            reduced: (0..d).filter(|&i| !kinds[i].is_kept()).collect(),
            kinds,
            out_tys,
            ops,
            a_ty: quote!((#(#tys,)*)),
            pack: vec![Vec::new(); k.input_accesses().len()],
        }
    }

    /// Whether task bodies write outputs directly (no PW and no PS
    /// dimension: every point is a final result).
    fn direct(&self) -> bool {
        self.reduced.is_empty() && !self.kinds.contains(&DimKind::Ps)
    }

    /// Writes of value `vals[o]` of every output access `o` at the current
    /// point, through the output views (direct mode).
    /// `lanes`: write whole vectors (`vals` are lane arrays of consecutive
    /// elements) instead of single values, or their first `__cnt` lanes.
    fn direct_writes(&self, vals: &[TokenStream], lanes: Lanes) -> TokenStream {
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
    fn out_at(&self, o: usize) -> (Ident, TokenStream) {
        let (b, f) = self.k.output_accesses()[o];
        let (base, coef) = (format_ident!("__oa{}_b", o), format_ident!("__oa{}_c", o));
        (format_ident!("__out{}", b), offset(f, self.d, &base, &coef))
    }

    fn n_out(&self) -> usize {
        self.out_tys.len()
    }

    fn has_identity(&self, o: usize) -> bool {
        matches!(self.ops[o], Some(ReduceOp::Builtin(..)))
    }

    /// `let __pJ: TYPE = READ;` for every input access `J` (one per
    /// scalar-function parameter), where `read` gives the type and the read
    /// expression of one access.
    fn input_reads(
        &self,
        read: impl Fn(&InputAccess) -> (TokenStream, TokenStream),
    ) -> TokenStream {
        let mut reads = TokenStream::new();
        for (j, access) in self.accesses().iter().enumerate() {
            let var = format_ident!("__p{}", j);
            let (t, r) = read(access);
            reads.extend(quote!(let #var: #t = #r;));
        }
        reads
    }

    /// The input accesses (one per scalar-function parameter), in place or
    /// packed as the plan says.
    fn accesses(&self) -> Vec<InputAccess> {
        let accesses = self.k.input_accesses().into_iter().enumerate();
        accesses
            .map(|(j, (b, f))| {
                let (base, coef) = (format_ident!("__ia{}_b", j), format_ident!("__ia{}_c", j));
                let layout = &self.pack[j];
                match layout.split_last() {
                    // In place: the access's own offset and strides.
                    None => InputAccess {
                        uses: used_dims(f, self.d),
                        slice: format_ident!("__in{}", b),
                        ty: self.k.inputs[b].ty,
                        off: offset(f, self.d, &base, &coef),
                        stride: (0..self.d)
                            .map(|x| match static_coef(f, x) {
                                Some(c) => {
                                    let c = c as isize;
                                    quote!(#c)
                                }
                                None => quote!(#coef[#x]),
                            })
                            .collect(),
                        unit: (0..self.d).map(|x| static_coef(f, x) == Some(1)).collect(),
                    },
                    // Packed: the position in the tile's buffer, whose last
                    // layout dimension is contiguous.
                    Some((&last, _)) => {
                        let (off, stride) = self.packed_offset(j);
                        InputAccess {
                            uses: layout.clone(),
                            slice: format_ident!("__pk{}", j),
                            ty: self.k.inputs[b].ty,
                            off,
                            stride,
                            unit: (0..self.d).map(|x| x == last).collect(),
                        }
                    }
                }
            })
            .collect()
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
    fn fusable_reduction(&self) -> Option<(usize, usize, TokenStream)> {
        let [.., d1, d2] = self.reduced[..] else {
            return None;
        };
        if self.k.scalar_fn.index_params.is_some() || self.kinds[d2] != DimKind::Pw {
            return None;
        }
        let e2 = {
            let (lo, hi) = (format_ident!("__t1_{}", d2), format_ident!("__t1e_{}", d2));
            quote!(((#hi - #lo) as isize))
        };
        let conds = self.accesses().into_iter().map(|a| {
            let (s1, s2) = (&a.stride[d1], &a.stride[d2]);
            quote!(&& (#s1 as isize) == #e2 * (#s2 as isize))
        });
        Some((d1, d2, quote!(true #(#conds)*)))
    }

    /// Re-composes the values `__new` (a tuple, one per output access) of
    /// the current kept point with the earlier PW tiles' partial results
    /// (`__first`: there are none): in the output itself when the task
    /// holds the whole PW range (`__direct`: the results are final after its
    /// last PW tile), else in the task-local buffer `__o`.
    fn partial_store(&self) -> TokenStream {
        let pidx = self.kept.iter().map(|&d| {
            let (i, ps) = (dim_var(d), format_ident!("__ps{}", d));
            quote!(+ (#i - __r[#d].0) * #ps)
        });
        let merged = (0..self.n_out()).map(|o| {
            let idx = syn::Index::from(o);
            self.combine_values(o, &quote!(__slot.#idx), &quote!(__new.#idx))
        });
        let mut direct = TokenStream::new();
        for o in 0..self.n_out() {
            let (ptr, off) = self.out_at(o);
            let idx = syn::Index::from(o);
            let cmb = self.combine_values(o, &quote!(unsafe { #ptr.read(__at) }), &quote!(__v));
            // SAFETY: `bind` checked bounds and disjointness of accesses; the
            // output view is injective over the kept dimensions (checked at
            // compile time) and each kept point belongs to one task, which
            // wrote it at its first PW tile.
            direct.extend(quote! {{
                let __at: usize = #off;
                let __v = __new.#idx;
                let __v = if __first { __v } else { #cmb };
                unsafe { #ptr.write(__at, __v) };
            }});
        }
        quote! {
            if __direct {
                #direct
            } else {
                let __pidx: usize = 0 #(#pidx)*;
                let __slot = __o[__pidx];
                __o[__pidx] = if __first { __new } else { (#(#merged,)*) };
            }
        }
    }

    /// The offset of the current point in the packed L1 tile of input
    /// access `j`, and the offset's coefficient per dimension: the layout's
    /// last dimension has stride 1, the others the run-time strides
    /// `__pks{j}` set when the tile is packed.
    fn packed_offset(&self, j: usize) -> (TokenStream, Vec<TokenStream>) {
        let layout = &self.pack[j];
        let strides = format_ident!("__pks{}", j);
        let mut stride: Vec<TokenStream> = vec![quote!(0isize); self.d];
        for (q, &x) in layout.iter().enumerate() {
            stride[x] = if q + 1 == layout.len() {
                quote!(1isize)
            } else {
                quote!((#strides[#q] as isize))
            };
        }
        let terms = layout.iter().map(|&x| {
            let (i, lo, st) = (dim_var(x), format_ident!("__t1_{}", x), &stride[x]);
            quote!(+ (#i - #lo) as isize * #st)
        });
        (quote!((0isize #(#terms)*) as usize), stride)
    }

    /// The packing of the plan's packed input accesses (the paper's memory
    /// regions D3/D4): taking each access's packed tile from the thread at
    /// the start of a task (`mdh::cpu::PackedTile`), the code at the start
    /// of each L1 tile that refills it when the tile's range of the
    /// dimensions its access uses has changed and binds `__pk{j}` to it,
    /// and parking it again at the end of the task. Rows of the layout's
    /// last dimension start 64-byte aligned.
    fn packing(&self) -> (TokenStream, TokenStream, TokenStream) {
        let (mut setup, mut refill, mut park) =
            (TokenStream::new(), TokenStream::new(), TokenStream::new());
        for (j, (b, f)) in self.k.input_accesses().into_iter().enumerate() {
            let layout = &self.pack[j];
            let m = layout.len();
            if m == 0 {
                continue;
            }
            let t = ty(self.k.inputs[b].ty);
            let (slot, tile, st, pk) = (
                format_ident!("__PKSLOT{}", j),
                format_ident!("__pkt{}", j),
                format_ident!("__pks{}", j),
                format_ident!("__pk{}", j),
            );
            let (outer, m2) = (m - 1, 2 * m);
            setup.extend(quote! {
                ::std::thread_local! {
                    static #slot: ::mdh::cpu::PackSlot<#t, #m2> = const { ::core::cell::Cell::new(::core::option::Option::None) };
                }
                let mut #tile = ::mdh::cpu::PackedTile::resume(&#slot, __call_id);
            });
            park.extend(quote!(#tile.park(&#slot);));
            let (lo, hi): (Vec<Ident>, Vec<Ident>) = layout
                .iter()
                .map(|&x| (format_ident!("__t1_{}", x), format_ident!("__t1e_{}", x)))
                .unzip();
            let strides = (0..outer).rev().map(|q| {
                if q + 1 == outer {
                    let pad = quote!((64 / ::core::mem::size_of::<#t>()));
                    quote!(#st[#q] = __e[#q + 1].next_multiple_of(#pad);)
                } else {
                    quote!(#st[#q] = #st[#q + 1] * __e[#q + 1];)
                }
            });
            let len = if outer == 0 {
                quote!(__e[0])
            } else {
                quote!(#st[0] * __e[0])
            };
            let (dst_off, _) = self.packed_offset(j);
            let src_off = offset(
                f,
                self.d,
                &format_ident!("__ia{}_b", j),
                &format_ident!("__ia{}_c", j),
            );
            let src = format_ident!("__in{}", b);
            // SAFETY: the position is inside the buffer of `__len` elements
            // laid out above, and `bind` checked that the access stays inside
            // its input over the whole index space, which holds the tile.
            let copy = layout.iter().rev().fold(
                quote! {
                    unsafe { *__dst.get_unchecked_mut(#dst_off) = *#src.get_unchecked(#src_off) };
                },
                |inner, &x| {
                    let (i, lo, hi) = (
                        dim_var(x),
                        format_ident!("__t1_{}", x),
                        format_ident!("__t1e_{}", x),
                    );
                    quote!(for #i in #lo..#hi { #inner })
                },
            );
            // The strides follow from the tile's extents: set for every
            // tile, also one this thread packed in an earlier part.
            refill.extend(quote! {
                let __tile: [usize; #m2] = [#(#lo, #hi),*];
                let __e: [usize; #m] = [#(#hi - #lo),*];
                let mut #st: [usize; #outer] = [0; #outer];
                #(#strides)*
                if __tile != #tile.last {
                    #tile.last = __tile;
                    let __dst: &mut [#t] = #tile.buf.resize(#len);
                    #copy
                }
                let #pk: &[#t] = #tile.buf.as_slice();
            });
        }
        (setup, refill, park)
    }

    /// Reads of the input accesses at the point `__i0, __i1, …` into
    /// `__p0, __p1, …`.
    fn reads(&self) -> TokenStream {
        self.input_reads(|a| {
            let (slice, off) = (&a.slice, &a.off);
            // SAFETY: `bind` checked that this access stays inside the buffer
            // over the whole index space, and every point is inside it.
            (ty(a.ty), quote!(unsafe { *#slice.get_unchecked(#off) }))
        })
    }

    /// The scalar function's body with its parameters bound to the reads.
    fn scalar_fn_block(&self, body: TokenStream) -> TokenStream {
        let index_binds = self.index_binds(|_, name, i| quote!(let #name: usize = #i;));
        let param_binds = self.param_binds();
        quote!({ #(#index_binds)* #(#param_binds)* #body })
    }

    /// `bind(d, name, i)` for each index parameter `name` of the scalar
    /// function, bound to dimension `d` whose index variable is `i`.
    fn index_binds<'s>(
        &'s self,
        bind: impl Fn(usize, &Ident, &Ident) -> TokenStream + 's,
    ) -> impl Iterator<Item = TokenStream> + 's {
        let names = self.k.scalar_fn.index_params.iter().flatten();
        names
            .enumerate()
            .map(move |(d, name)| bind(d, name, &dim_var(d)))
    }

    /// The scalar function's value parameters bound to the reads `__p{j}`.
    fn param_binds(&self) -> impl Iterator<Item = TokenStream> + '_ {
        self.k.scalar_fn.params.iter().enumerate().map(|(j, p)| {
            let v = format_ident!("__p{}", j);
            quote!(let #p = #v;)
        })
    }

    /// The scalar function's values `__v0, __v1, …` at the current point.
    fn point(&self) -> TokenStream {
        let vals: Vec<Ident> = (0..self.n_out())
            .map(|o| format_ident!("__v{}", o))
            .collect();
        let body = self.scalar_fn_block(rust_expr::expr(&self.k.scalar_fn.body));
        let result_ty = match &self.k.scalar_fn.body.ty {
            Some(t @ Type::Tuple(_)) => rust_expr::type_of(t),
            _ => ty(self.out_tys.first().copied().unwrap_or(ScalarType::F32)),
        };
        let pat = if vals.len() == 1 {
            let v = &vals[0];
            quote!(#v)
        } else {
            quote!((#(#vals,)*))
        };
        let reads = self.reads();
        quote! { #reads let #pat: #result_ty = #body; }
    }

    /// `acc[slot] = acc[slot] ⊕ f(point)` for every output. With an FMA ISA, a
    /// float `a * b` summed with `+` becomes one `mul_add` (a contraction:
    /// one rounding instead of two).
    fn accumulate(&self, slot: &TokenStream) -> TokenStream {
        let mut upd = TokenStream::new();
        for o in 0..self.n_out() {
            let Some(op) = self.ops[o] else { continue };
            let (acc, v, t) = (
                format_ident!("__acc{}", o),
                format_ident!("__v{}", o),
                self.out_tys[o],
            );
            if self.has_identity(o) {
                let c = rust_expr::combine(op, t, &quote!(#acc[#slot]), &quote!(#v));
                upd.extend(quote!(#acc[#slot] = #c;));
            } else {
                let c = rust_expr::combine(op, t, &quote!(__a), &quote!(#v));
                upd.extend(quote! {
                    #acc[#slot] = ::core::option::Option::Some(match #acc[#slot] {
                        ::core::option::Option::Some(__a) => #c,
                        ::core::option::Option::None => #v,
                    });
                });
            }
        }
        let point = self.point();
        match self.fused_mul_add(slot) {
            Some(fused) => quote! { if ISA > 0 { #fused } else { #point #upd } },
            None => quote! { #point #upd },
        }
    }

    /// The factors `a`, `b` of a kernel whose scalar function is a float
    /// product `a * b` combined by `PW(+)`: a multiply-add to fuse.
    fn fusable_product(&self) -> Option<(&Expr, &Expr)> {
        let single_float_sum = self.n_out() == 1
            && self.out_tys[0].is_float()
            && matches!(self.ops[0], Some(ReduceOp::Builtin(BuiltinOp::Add, _)));
        match &self.k.scalar_fn.body.kind {
            ExprKind::Binary(BinOp::Mul, a, b) if single_float_sum => Some((a, b)),
            _ => None,
        }
    }

    fn fused_mul_add(&self, slot: &TokenStream) -> Option<TokenStream> {
        let (a, b) = self.fusable_product()?;
        let (a, b) = (rust_expr::expr(a), rust_expr::expr(b));
        let reads = self.reads();
        let body = self.scalar_fn_block(quote!((#a).mul_add(#b, __acc0[#slot])));
        Some(quote! { #reads __acc0[#slot] = #body; })
    }

    /// `combine(x, y)` of two values of output `o`.
    fn combine_values(&self, o: usize, x: &TokenStream, y: &TokenStream) -> TokenStream {
        match self.ops[o] {
            Some(op) => rust_expr::combine(op, self.out_tys[o], x, y),
            None => quote!(#y),
        }
    }

    /// The identity of every operator, if all have one (for empty PW dimensions).
    fn identity(&self) -> TokenStream {
        let ids: Option<Vec<TokenStream>> = (0..self.n_out())
            .map(|o| match self.ops[o] {
                Some(ReduceOp::Builtin(b, _)) => Some(rust_expr::identity(*b, self.out_tys[o])),
                _ => None,
            })
            .collect();
        match ids {
            Some(ids) if !self.reduced.is_empty() => {
                quote!(::core::option::Option::Some((#(#ids,)*)))
            }
            _ => quote!(::core::option::Option::None),
        }
    }

    /// Loops over the tiles of one layer, in the plan's order, inside the
    /// tiles of the parent layer (`None`: the task's region).
    fn tile_loops(&self, plan: &CpuPlan, layer: u8, inner: TokenStream) -> TokenStream {
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
    fn kept_coords(&self, plan: &CpuPlan, full: bool, inner: TokenStream) -> TokenStream {
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

    /// The work of one register tile (full: constant trip counts).
    fn register_tile(&self, plan: &CpuPlan, full: bool) -> TokenStream {
        if let Some(simd) = self.simd(plan) {
            return self.vector_tile(plan, &simd, !full);
        }
        let pidx = self.kept.iter().map(|&d| {
            let (i, ps) = (dim_var(d), format_ident!("__ps{}", d));
            quote!(+ (#i - __r[#d].0) * #ps)
        });
        let pidx = quote!(let __pidx: usize = 0 #(#pidx)*;);
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
        let (i_kr, lo_kr, hi_kr) = (
            dim_var(kr),
            format_ident!("__t1_{}", kr),
            format_ident!("__t1e_{}", kr),
        );
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
        let red_loops =
            self.reduced[..self.reduced.len() - 1]
                .iter()
                .rev()
                .fold(innermost, |inner, &d| {
                    let (i, lo, hi) = (
                        dim_var(d),
                        format_ident!("__t1_{}", d),
                        format_ident!("__t1e_{}", d),
                    );
                    quote!(for #i in #lo..#hi { #inner })
                });
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

    /// How a plan's full register tiles map onto SIMD lanes, if they do: the
    /// kernel is pure and its operators have neutral elements, and the
    /// register tile of the innermost PW dimension (lanes of partial results)
    /// or of the most contiguous kept dimension is a multiple of the lanes
    /// of one 64-byte vector of the widest element type.
    fn simd(&self, plan: &CpuPlan) -> Option<Simd> {
        let sf = &self.k.scalar_fn;
        if !rust_simd::vectorizable(&sf.body)
            || !(0..self.n_out()).all(|o| self.ops[o].is_none() || self.has_identity(o))
        {
            return None;
        }
        let bytes = self
            .k
            .inputs
            .iter()
            .map(|b| b.ty)
            .chain(self.out_tys.iter().copied())
            .map(crate::plan::elem_bytes)
            .max()
            .unwrap_or(4);
        let lanes = (crate::plan::VECTOR_BYTES / bytes).max(1);
        let fits = |d: usize| plan.reg[d] >= lanes && plan.reg[d].is_multiple_of(lanes);
        if let Some(&kr) = self.reduced.last() {
            if fits(kr) {
                return Some(Simd {
                    dim: kr,
                    lanes,
                    chunks: plan.reg[kr] / lanes,
                    reduced: true,
                });
            }
            if plan.reg[kr] > 1 {
                return None;
            }
        }
        // The kept dimension whose register tile fits the lanes, contiguous
        // in the most accesses (packed ones counting with their layout's
        // last dimension), the innermost among the best.
        let mut score = crate::plan::contiguity(self.k);
        for (j, (_, f)) in self.k.input_accesses().into_iter().enumerate() {
            if let Some(&last) = self.pack[j].last() {
                for (x, sc) in score.iter_mut().enumerate() {
                    let was = static_coef(f, x) == Some(1);
                    *sc = *sc + usize::from(x == last) - usize::from(was);
                }
            }
        }
        let s = self
            .kept
            .iter()
            .copied()
            .filter(|&x| fits(x) && score[x] > 0)
            .max_by_key(|&x| (score[x], x))?;
        Some(Simd {
            dim: s,
            lanes,
            chunks: plan.reg[s] / lanes,
            reduced: false,
        })
    }

    /// Reads of the input accesses as vectors over the lanes of dimension
    /// `s` (whose index variable holds lane 0): contiguous loads, gathers,
    /// or broadcasts of accesses that do not depend on `s`. `part`: only the
    /// first `__cnt` lanes are points of the index space (an edge tile); the
    /// others read the last of them again.
    fn vector_reads(&self, s: usize, n: usize, part: bool) -> TokenStream {
        self.input_reads(|a| {
            let (slice, off) = (&a.slice, &a.off);
            let vt = rust_simd::vty(a.ty, n);
            // SAFETY (all forms): `bind` checked that this access stays
            // inside the buffer over the whole index space, and every lane
            // read is a point of the register tile inside the index space
            // (all lanes of a full tile, the first `__cnt` of an edge tile).
            let lane = if part {
                quote!(::core::cmp::min(__l, __cnt - 1))
            } else {
                quote!(__l)
            };
            let read = if !a.uses.contains(&s) {
                quote!(<#vt>::splat(unsafe { *#slice.get_unchecked(#off) }))
            } else if a.unit[s] && part {
                quote!(unsafe { <#vt>::load_part::<ISA>(#slice, #off, __cnt) })
            } else if a.unit[s] {
                quote!(unsafe { <#vt>::load(#slice, #off) })
            } else {
                let stride = &a.stride[s];
                quote!({
                    let __o0 = #off as isize;
                    <#vt>::from_fn(|__l| unsafe { *#slice.get_unchecked((__o0 + #lane as isize * #stride) as usize) })
                })
            };
            (vt, read)
        })
    }

    /// The scalar function's values `__v0, …` as vectors over the lanes of `s`.
    /// `part`: as in [`Gen::vector_reads`].
    fn vector_point(&self, s: usize, n: usize, part: bool) -> TokenStream {
        self.vector_point_with(s, n, part, rust_simd::expr(&self.k.scalar_fn.body, n))
    }

    /// As `vector_point`, with `body` in place of the scalar function's body.
    fn vector_point_with(&self, s: usize, n: usize, part: bool, body: TokenStream) -> TokenStream {
        let k = self.k;
        let usize_v = rust_simd::vty(ScalarType::Usize, n);
        let sizes = k
            .size_params
            .iter()
            .map(|p| quote!(let #p: #usize_v = <#usize_v>::splat(#p);));
        let params = k.params.iter().map(|p| {
            let (name, vt) = (&p.name, rust_simd::vty(p.ty, n));
            quote!(let #name: #vt = <#vt>::splat(#name);)
        });
        let index = self.index_binds(|d, name, i| {
            if d == s && part {
                quote!(let #name: #usize_v = <#usize_v>::iota_part(#i, __cnt);)
            } else if d == s {
                quote!(let #name: #usize_v = <#usize_v>::iota(#i);)
            } else {
                quote!(let #name: #usize_v = <#usize_v>::splat(#i);)
            }
        });
        let args = self.param_binds();
        let vals: Vec<Ident> = (0..self.n_out())
            .map(|o| format_ident!("__v{}", o))
            .collect();
        let tys: Vec<TokenStream> = self.out_tys.iter().map(|t| rust_simd::vty(*t, n)).collect();
        let reads = self.vector_reads(s, n, part);
        let binds = quote!(#(#sizes)* #(#params)* #(#index)* #(#args)*);
        let (pat, pty) = if vals.len() == 1 {
            let (v, t) = (&vals[0], &tys[0]);
            (quote!(#v), quote!(#t))
        } else {
            (quote!((#(#vals,)*)), quote!((#(#tys,)*)))
        };
        quote! {
            #reads
            let #pat: #pty = { #binds #body };
        }
    }

    /// `acc = acc ⊕ v` on vectors for every output (the operators are
    /// built-ins: `simd` requires neutral elements), with an FMA ISA fusing a
    /// float `a * b` summed with `+` into one `mul_add`.
    fn vector_accumulate(
        &self,
        s: usize,
        n: usize,
        part: bool,
        acc: &dyn Fn(usize) -> TokenStream,
    ) -> TokenStream {
        let mut upd = TokenStream::new();
        for o in 0..self.n_out() {
            let (a, v) = (acc(o), format_ident!("__v{}", o));
            if let Some(ReduceOp::Builtin(b, _)) = self.ops[o] {
                let c = vcombine(*b, &quote!(#a), &quote!(#v));
                upd.extend(quote!(#a = #c;));
            }
        }
        let point = self.vector_point(s, n, part);
        let plain = quote! { #point #upd };
        match self.fusable_product() {
            Some((x, y)) => {
                let (x, y, a) = (rust_simd::expr(x, n), rust_simd::expr(y, n), acc(0));
                let point = self.vector_point_with(s, n, part, quote!((#x).fma::<ISA>(#y, #a)));
                quote! { if ISA > 0 { #point #a = __v0; } else { #plain } }
            }
            None => plain,
        }
    }
}

impl<'k> Gen<'k> {
    /// A register tile on SIMD lanes: the register tile's other kept
    /// coordinates and its vectors are unrolled, so every accumulator is a
    /// named vector that stays in registers. `edge`: the tile is cut by the
    /// end of its L1 tile (`__n{d}` below the register tile in some kept
    /// dimension): coordinates and vectors past `__n{d}` are skipped, and
    /// the last vector of a kept SIMD dimension has `__cnt` lanes of points
    /// (partial loads and stores).
    fn vector_tile(&self, plan: &CpuPlan, simd: &Simd, edge: bool) -> TokenStream {
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

/// The name of the task's [`StreamWriter`](mdh::__rt::StreamWriter) of
/// output access `o` (a streaming plan's).
fn stream_writer(o: usize) -> Ident {
    format_ident!("__sw{}", o)
}

/// How many lanes of a vector a store writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lanes {
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

/// `x ⊕ y` lane-wise for a built-in operator.
fn vcombine(op: BuiltinOp, x: &TokenStream, y: &TokenStream) -> TokenStream {
    match op {
        BuiltinOp::Add => quote!((#x + #y)),
        BuiltinOp::Mul => quote!((#x * #y)),
        BuiltinOp::Max => quote!((#x).max(#y)),
        BuiltinOp::Min => quote!((#x).min(#y)),
    }
}

/// One input access as the read emitters see it: in place or packed.
struct InputAccess {
    /// The dimensions it depends on.
    uses: Vec<usize>,
    /// The slice it reads, its element type, and its offset at the current
    /// point.
    slice: Ident,
    ty: ScalarType,
    off: TokenStream,
    /// Per dimension: the offset's coefficient, and whether it is 1 at
    /// compile time (consecutive indices are consecutive elements).
    stride: Vec<TokenStream>,
    unit: Vec<bool>,
}

/// The SIMD mapping of one plan's full register tiles.
struct Simd {
    /// The dimension whose points are the lanes.
    dim: usize,
    lanes: usize,
    /// Vectors per register tile along `dim`.
    chunks: usize,
    /// Whether `dim` is the innermost PW dimension (lanes hold partial results).
    reduced: bool,
}

impl<'k> Gen<'k> {
    /// The task body of one plan: tile loops of L2 and L1, register tiles.
    /// `exact`: the call's binding when its sizes are the ones the plan was
    /// tuned for (see [`Gen::exact_binds`]).
    fn compute_fn(&self, plan: &CpuPlan, index: usize, exact: Option<&Bound>) -> TokenStream {
        let planned = Gen {
            pack: plan.pack.clone(),
            ..self.clone()
        };
        planned.plan_body(plan, index, exact)
    }

    /// The sizes, access offsets and coefficients of a call at the sizes a
    /// plan was tuned for, and the task region's bounds in the dimensions
    /// the plan does not split across cores, as constants shadowing the
    /// run-time values: LLVM then folds the strides into address
    /// displacements and knows the trip counts of the reduction loops (the
    /// way oneDNN JIT-compiles a convolution for one shape).
    fn exact_binds(&self, plan: &CpuPlan, b: &Bound) -> TokenStream {
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

    fn plan_body(&self, plan: &CpuPlan, index: usize, exact: Option<&Bound>) -> TokenStream {
        let (d, a_ty) = (self.d, &self.a_ty);
        let name = match exact {
            Some(_) => format_ident!("__compute_{}_exact", index),
            None => format_ident!("__compute_{}", index),
        };
        let exact_binds = exact.map(|b| self.exact_binds(plan, b));
        let first = self.reduced.iter().map(|&k| {
            let lo = format_ident!("__t1_{}", k);
            quote!(&& #lo == __r[#k].0)
        });
        let full = self.kept.iter().filter(|&&x| plan.reg[x] > 1).map(|&x| {
            let (n, r) = (format_ident!("__n{}", x), plan.reg[x]);
            quote!(&& #n == #r)
        });
        let full_tile = self.register_tile(plan, true);
        let edge_tile = self.register_tile(plan, false);
        let tile = quote! {
            if true #(#full)* { #full_tile } else { #edge_tile }
        };
        // Register tiles are visited in the plan's loop order too.
        let kept_in_order: Vec<usize> = plan
            .order
            .iter()
            .copied()
            .filter(|&x| self.kinds[x].is_kept())
            .collect();
        let reg_loops = kept_in_order.iter().rev().fold(tile, |inner, &x| {
            let (b, n, lo, hi, r) = (
                format_ident!("__b{}", x),
                format_ident!("__n{}", x),
                format_ident!("__t1_{}", x),
                format_ident!("__t1e_{}", x),
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
        });
        let (pack_setup, pack, pack_park) = self.packing();
        // Results are final where this L1 tile spans the task's whole PW
        // range: first and last along every PW dimension.
        let stream = plan.stream.then(|| {
            let last = self.reduced.iter().map(|&k| {
                let hi = format_ident!("__t1e_{}", k);
                quote!(&& #hi == __r[#k].1)
            });
            quote!(let __stream: bool = __first #(#last)*;)
        });
        let micro = quote! {
            #pack
            let __first: bool = true #(#first)*;
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
            fn #name<const ISA: u8>(__c: &__Ctx<'_>, __r: &::mdh::__rt::Region<#d>, __o: &mut ::std::vec::Vec<#a_ty>, __direct: bool) {
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

    /// The names a task body uses, bound from the context.
    fn ctx_binds(&self) -> TokenStream {
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
    fn ctx_fields(&self) -> Vec<(TokenStream, TokenStream)> {
        let k = self.k;
        let (d, ns) = (self.d, k.size_params.len());
        let mut f = Vec::new();
        for (b, buf) in k.inputs.iter().enumerate() {
            let (n, t) = (format_ident!("__in{}", b), ty(buf.ty));
            f.push((quote!(#n), quote!(&'a [#t])));
        }
        f.push((quote!(__sz), quote!([usize; #ns])));
        f.push((quote!(__call_id), quote!(u64)));
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
        f
    }
}

/// Where each access (in the order of `accesses`) is in a [`Bound`]'s
/// `in_linear` / `out_linear`: its buffer, and its rank among that
/// buffer's accesses.
fn linear_slots(accesses: &[(usize, &IndexFn)]) -> Vec<(usize, usize)> {
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
/// one), dispatched at run time by device and nearest tuned sizes.
pub fn cpu_fn(k: &Kernel, entries: &[CpuEntry]) -> TokenStream {
    let g = Gen::new(k);
    let (d, a_ty) = (g.d, &g.a_ty);
    let name_str = k.name.to_string();
    let in_names: Vec<&Ident> = k.inputs.iter().map(|b| &b.name).collect();
    let in_tys: Vec<TokenStream> = k.inputs.iter().map(|b| ty(b.ty)).collect();
    let out_names: Vec<&Ident> = k.outputs.iter().map(|b| &b.name).collect();
    let out_tys: Vec<TokenStream> = k.outputs.iter().map(|b| ty(b.ty)).collect();
    let param_names: Vec<&Ident> = k.params.iter().map(|p| &p.name).collect();
    let param_tys: Vec<TokenStream> = k.params.iter().map(|p| ty(p.ty)).collect();
    let ns = k.size_params.len();
    let in_slices: Vec<Ident> = (0..k.inputs.len())
        .map(|b| format_ident!("__in{}", b))
        .collect();
    let out_ptrs: Vec<Ident> = (0..k.outputs.len())
        .map(|b| format_ident!("__out{}", b))
        .collect();

    // The context: inputs, sizes, flattened input accesses, params.
    let (field_names, field_tys): (Vec<_>, Vec<_>) = g.ctx_fields().into_iter().unzip();
    let mut ctx_init = TokenStream::new();
    for (j, (b, a)) in linear_slots(&k.input_accesses()).into_iter().enumerate() {
        let (base, coef) = (format_ident!("__ia{}_b", j), format_ident!("__ia{}_c", j));
        ctx_init.extend(quote! {
            #base: __bound.in_linear[#b][#a].base,
            #coef: ::core::array::from_fn(|__d| __bound.in_linear[#b][#a].coefs[__d]),
        });
    }

    // Writes through the output views.
    let mut out_setup = TokenStream::new();
    let mut writes = TokenStream::new();
    let slots = linear_slots(&k.output_accesses());
    for (o, ((b, a), (_, f))) in slots.into_iter().zip(k.output_accesses()).enumerate() {
        let (base, coef) = (format_ident!("__oa{}_b", o), format_ident!("__oa{}_c", o));
        out_setup.extend(quote! {
            let #base: isize = __bound.out_linear[#b][#a].base;
            let #coef: [isize; #d] = ::core::array::from_fn(|__d| __bound.out_linear[#b][#a].coefs[__d]);
        });
        let off = offset(f, d, &base, &coef);
        let ptr = &out_ptrs[b];
        let idx = syn::Index::from(o);
        // SAFETY: `bind` checked bounds and disjointness of accesses; the
        // output view is injective over the kept dimensions (checked at
        // compile time) and each kept point is written by one task.
        writes.extend(quote! { unsafe { #ptr.write(#off, __v.#idx) }; });
    }
    let write_body = g.kept.iter().rev().fold(
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

    let out_fields = (0..k.output_accesses().len()).map(|o| {
        let (b, c) = (format_ident!("__oa{}_b", o), format_ident!("__oa{}_c", o));
        quote!(#b, #c,)
    });
    let out_fields = quote!(#(#out_fields)*);
    let combine_parts = (0..g.n_out()).map(|o| {
        let idx = syn::Index::from(o);
        g.combine_values(o, &quote!(__x.#idx), &quote!(__y.#idx))
    });
    let identity = g.identity();
    let kind_toks = g.kinds.iter().map(|kd| super::dim_kind(*kd));

    // Plans: one task body each, chosen by the nearest tuned sizes.
    // A plan tuned for sizes also gets a body for exactly those sizes,
    // taken when a call has them (unless they are not valid sizes). On
    // x86-64, for AVX-512 and AVX2 only: it costs compile time, and the
    // baseline body is a fallback for old CPUs there (elsewhere it is the
    // only body).
    let desc = KernelDesc::from_kernel(k);
    let exact: Vec<Option<Bound>> = entries
        .iter()
        .map(|e| e.sizes.as_ref().and_then(|s| desc.bind_sizes(s).ok()))
        .collect();
    let compute_fns = entries.iter().enumerate().map(|(i, e)| {
        let general = g.compute_fn(&e.plan, i, None);
        let exact = exact[i].as_ref().map(|b| g.compute_fn(&e.plan, i, Some(b)));
        quote!(#general #exact)
    });
    let calls = |isa: u8| {
        let arms = exact.iter().enumerate().map(move |(i, b)| {
            let f = format_ident!("__compute_{}", i);
            match b {
                Some(_) => {
                    let fx = format_ident!("__compute_{}_exact", i);
                    let only = (isa == 0).then(|| quote!(#[cfg(not(target_arch = "x86_64"))]));
                    quote! {
                        #only
                        #i if __exact => #fx::<#isa>(__c, __r, __o, __direct),
                        #i => #f::<#isa>(__c, __r, __o, __direct),
                    }
                }
                None => quote!(#i => #f::<#isa>(__c, __r, __o, __direct),),
            }
        });
        quote!(match __plan { #(#arms)* _ => __compute_0::<#isa>(__c, __r, __o, __direct), })
    };
    let exact_sizes = exact.iter().map(|b| match b {
        Some(b) => {
            let s = &b.sizes;
            quote!(::core::option::Option::Some([#(#s),*]))
        }
        None => quote!(::core::option::Option::None),
    });
    let (avx512, avx2, baseline) = (calls(2), calls(1), calls(0));
    let tuned = entries.iter().map(|e| {
        let dev = &e.device;
        match &e.sizes {
            Some(s) => quote!((#dev, ::core::option::Option::Some(&[#(#s),*][..]))),
            None => quote!((#dev, ::core::option::Option::None)),
        }
    });
    let cors = entries.iter().map(|e| {
        let c = &e.plan.cor;
        quote!([#(#c),*])
    });
    let regs = entries.iter().map(|e| {
        let r = &e.plan.reg;
        quote!([#(#r),*])
    });
    let size_idx = 0..k.size_params.len();
    let n_key = k.size_params.len() + k.inputs.len() + k.outputs.len();
    let doc = format!(
        "Runs `{name_str}` on the CPU (rayon). Arguments: the inputs, the outputs (overwritten where the output view writes), the params, then the sizes. Returns an error if a slice length does not match its shape for these sizes, if a size expression overflows, or if an index function leaves its buffer."
    );
    quote! {
        #[derive(Clone, Copy)]
        struct __Ctx<'a> {
            #(#field_names: #field_tys,)*
            __lifetime: ::core::marker::PhantomData<&'a ()>,
        }

        #(#compute_fns)*

        /// One task: the body of plan `__plan`, compiled for the best
        /// instruction set this CPU has.
        fn __compute(__plan: usize, __exact: bool, __c: &__Ctx<'_>, __r: &::mdh::__rt::Region<#d>, __o: &mut ::std::vec::Vec<#a_ty>, __direct: bool) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                unsafe fn __avx512(__plan: usize, __exact: bool, __c: &__Ctx<'_>, __r: &::mdh::__rt::Region<#d>, __o: &mut ::std::vec::Vec<#a_ty>, __direct: bool) {
                    #avx512
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn __avx2(__plan: usize, __exact: bool, __c: &__Ctx<'_>, __r: &::mdh::__rt::Region<#d>, __o: &mut ::std::vec::Vec<#a_ty>, __direct: bool) {
                    #avx2
                }
                match ::mdh::__rt::isa() {
                    // SAFETY: the CPU has these features (detected at run time).
                    ::mdh::__rt::Isa::Avx512 => return unsafe { __avx512(__plan, __exact, __c, __r, __o, __direct) },
                    ::mdh::__rt::Isa::Avx2 => return unsafe { __avx2(__plan, __exact, __c, __r, __o, __direct) },
                    ::mdh::__rt::Isa::Baseline => {}
                }
            }
            #baseline
        }

        #[doc = #doc]
        pub fn cpu(
            #(#in_names: &[#in_tys],)*
            #(#out_names: &mut [#out_tys],)*
            #(#param_names: #param_tys,)*
            sizes: Sizes,
        ) -> ::core::result::Result<(), ::mdh::Error> {
            let __sizes: [usize; #ns] = sizes.values();
            static __CALLS: ::mdh::__rt::BindCache<#n_key> = ::mdh::__rt::BindCache::new();
            let __call = __CALLS.get(
                [#(__sizes[#size_idx],)* #(#in_names.len(),)* #(#out_names.len(),)*],
                || ::core::result::Result::Ok(::mdh::__rt::Binding {
                    bound: desc().bind(&__sizes, &[#(#in_names.len()),*], &[#(#out_names.len()),*])?,
                    plan: ::mdh::__rt::nearest_plan(&[#(#tuned),*], &__sizes),
                }),
            )?;
            let (__bound, __plan): (&::mdh::__rt::Bound, usize) = (&__call.bound, __call.plan);
            const __EXACT: &[::core::option::Option<[usize; #ns]>] = &[#(#exact_sizes),*];
            let __exact: bool = __EXACT[__plan] == ::core::option::Option::Some(__sizes);
            #(let #out_ptrs = ::mdh::__rt::SyncPtr::new(#out_names);)*
            #out_setup
            let __ctx = __Ctx {
                #(#in_slices: #in_names,)*
                __sz: __sizes,
                __call_id: ::mdh::cpu::next_call(),
                #ctx_init
                #(#param_names,)*
                #(#out_ptrs,)*
                #out_fields
                __lifetime: ::core::marker::PhantomData,
            };
            const __COR: &[[usize; #d]] = &[#(#cors),*];
            const __REG: &[[usize; #d]] = &[#(#regs),*];
            let __ext: [usize; #d] = ::core::array::from_fn(|__d| __bound.extents[__d]);
            ::mdh::__rt::execute::<#a_ty, #d>(
                #name_str,
                __ext,
                [#(#kind_toks),*],
                __COR[__plan],
                __REG[__plan],
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(src: TokenStream) -> Kernel {
        crate::compile(src).expect("valid kernel")
    }

    fn entry(k: &Kernel, sizes: Option<Vec<usize>>) -> CpuEntry {
        CpuEntry {
            plan: CpuPlan::default_for(k),
            device: "*".into(),
            sizes,
        }
    }

    fn conv() -> Kernel {
        kernel(quote! {
            kernel conv {
                inp(I: f32[2 * P + R - 2, C], F: f32[R, C]),
                out(O: f32[P]),
                out_view(O: |p, r, c| (p)),
                md_hom[P, R, C](|x, w| x * w, (CC, PW(+), PW(+))),
                inp_view(I: |p, r, c| (2 * p + r, c), F: |p, r, c| (r, c)),
            }
        })
    }

    #[test]
    fn accesses_find_their_linearization_per_buffer() {
        let k = conv();
        let f = k.input_accesses()[0].1;
        let accesses = [(0, f), (1, f), (0, f), (1, f), (0, f)];
        assert_eq!(
            linear_slots(&accesses),
            vec![(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]
        );
    }

    #[test]
    fn streaming_plans_write_final_vectors_past_the_caches() {
        let k = crate::config::tests::matmul();
        let mut e = entry(&k, None);
        let code = cpu_fn(&k, std::slice::from_ref(&e)).to_string();
        assert!(!code.contains("StreamWriter"), "{code}");
        assert!(!code.contains("__sw0"), "{code}");
        e.plan.stream = true;
        let code = cpu_fn(&k, &[e]).to_string();
        // Streamed only where the L1 tile spans the task's PW range (the
        // results are final), through a writer that lives for the task
        // (its drop writes what it holds and fences).
        let writer = quote!(let mut __sw0 = ::mdh::__rt::StreamWriter::new(__out0););
        assert!(code.contains(&writer.to_string()), "{code}");
        let last = quote!(let __stream: bool = __first && __t1e_2 == __r[2usize].1;);
        assert!(code.contains(&last.to_string()), "{code}");
        let write = quote!(if __stream {
            __sw0.write::<ISA, 16usize>(__at, __new.0)
        });
        assert!(code.contains(&write.to_string()), "{code}");
    }

    #[test]
    fn sized_entries_get_an_exact_body_with_constant_strides() {
        let k = conv();
        let code = cpu_fn(&k, &[entry(&k, Some(vec![5, 3, 4])), entry(&k, None)]).to_string();
        // Entry 0 (P 5, R 3, C 4) has an exact body, entry 1 does not.
        assert!(code.contains("fn __compute_0_exact"), "{code}");
        assert!(!code.contains("__compute_1_exact"), "{code}");
        // Its image access strides: p by 2·C = 8, r by C = 4, c by 1.
        let ia0 = quote!(let __ia0_c: [isize; 3usize] = [8isize, 4isize, 1isize];).to_string();
        assert!(code.contains(&ia0), "{code}");
        // Sizes the entry cannot bind (the filter's R would not fit) give
        // no exact body.
        let code = cpu_fn(&k, &[entry(&k, Some(vec![0, usize::MAX, 1]))]).to_string();
        assert!(!code.contains("__compute_0_exact"), "{code}");
    }
}
