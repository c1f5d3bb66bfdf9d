//! The SIMD mapping of a plan's register tiles, and the scalar function on
//! vectors over their lanes.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::widen::{widen, Widened};
use super::Gen;
use crate::analysis::Checked;
use crate::codegen::rust_simd;
use crate::plan::CpuPlan;
use crate::spec::{BuiltinOp, ReduceOp, ScalarType};

/// The SIMD mapping of one plan's full register tiles.
#[derive(Clone, Copy)]
pub(super) struct Simd {
    /// The dimension whose points are the lanes.
    pub(super) dim: usize,
    pub(super) lanes: usize,
    /// Vectors per register tile along `dim`.
    pub(super) chunks: usize,
    /// Whether `dim` is the innermost PW dimension (lanes hold partial results).
    pub(super) reduced: bool,
}

/// `x ⊕ y` lane-wise for a built-in operator.
pub(super) fn vcombine(op: BuiltinOp, x: &TokenStream, y: &TokenStream) -> TokenStream {
    match op {
        BuiltinOp::Add => quote!((#x + #y)),
        BuiltinOp::Mul => quote!((#x * #y)),
        BuiltinOp::Max => quote!((#x).max(#y)),
        BuiltinOp::Min => quote!((#x).min(#y)),
    }
}

/// Whether register tiles of `k` can run on SIMD lanes at all: its scalar
/// function (its 16-bit inputs widened, [`Widened`]) is pure and every
/// combine operator runs as a built-in one ([`Checked::cpu_op`]; lanes
/// start at its identity, a closure has none).
pub fn lanes_apply(k: &Checked) -> bool {
    rust_simd::vectorizable(&Widened::new(k).body)
        && (0..k.analysis().outputs.len())
            .all(|o| !matches!(k.cpu_op(o), Some(ReduceOp::Closure(_))))
}

impl<'k> Gen<'k> {
    /// How a plan's full register tiles map onto SIMD lanes, if they do: the
    /// kernel is pure and its operators have neutral elements, and the
    /// register tile of the innermost PW dimension (lanes of partial results)
    /// or of the most contiguous kept dimension is a multiple of the lanes
    /// of one 64-byte vector: of the narrowest element type for lanes of
    /// partial results ([`crate::plan::reduction_lanes`]), of the widest
    /// for lanes of a kept dimension.
    pub(super) fn simd(&self, plan: &CpuPlan) -> Option<Simd> {
        if !lanes_apply(self.k) {
            return None;
        }
        let fits = |d: usize, n: usize| plan.reg[d] >= n && plan.reg[d].is_multiple_of(n);
        if let Some(&kr) = self.reduced.last() {
            let lanes = crate::plan::reduction_lanes(self.k);
            if fits(kr, lanes) {
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
        for (j, a) in self.k.analysis().inputs.iter().enumerate() {
            if let Some(&last) = self.pack[j].last() {
                for (x, sc) in score.iter_mut().enumerate() {
                    let was = a.static_coefs[x] == Some(1);
                    *sc = *sc + usize::from(x == last) - usize::from(was);
                }
            }
        }
        let lanes = crate::plan::kept_lanes(self.k);
        let s = self
            .kept
            .iter()
            .copied()
            .filter(|&x| fits(x, lanes) && score[x] > 0)
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
    pub(super) fn vector_reads(&self, s: usize, n: usize, part: bool) -> TokenStream {
        self.input_reads(|a| {
            let (slice, off) = (&a.slice, &a.off);
            let vt = rust_simd::vty(a.ty, n);
            let elem = |x: TokenStream| widen(a.widen, x);
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
                let x = elem(quote!(unsafe { *#slice.get_unchecked(#off) }));
                quote!(<#vt>::splat(#x))
            } else if a.widen.is_some() {
                // Widened lane by lane: an in-place 16-bit access (packed
                // ones are widened while packing).
                let stride = &a.stride[s];
                let x = elem(quote!(unsafe { *#slice.get_unchecked((__o0 + #lane as isize * #stride) as usize) }));
                quote!({
                    let __o0 = #off as isize;
                    <#vt>::from_fn(|__l| #x)
                })
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
    pub(super) fn vector_point(&self, s: usize, n: usize, part: bool) -> TokenStream {
        self.vector_point_with(s, n, part, rust_simd::expr(&self.w.body, n))
    }

    /// As `vector_point`, with `body` in place of the scalar function's body.
    pub(super) fn vector_point_with(
        &self,
        s: usize,
        n: usize,
        part: bool,
        body: TokenStream,
    ) -> TokenStream {
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
    /// float `a * b` summed with `+` into one `mul_add`. `pin`: each updated
    /// accumulator passes through `mdh::__rt::V::opaque`, for tiles
    /// of several rows of partial-result lanes, whose loop-carried lanes
    /// LLVM's SLP vectorizer otherwise left in scalar registers, rebuilt
    /// into vectors every step (prl with 2 rows × 16 lanes: 165 ms against
    /// 68 ms pinned, 71 ms with one row; a one-row sum ran 16 % slower
    /// pinned and a histogram's kept lanes 22× slower, so only there).
    pub(super) fn vector_accumulate(
        &self,
        s: usize,
        n: usize,
        part: bool,
        pin: bool,
        acc: &dyn Fn(usize) -> TokenStream,
    ) -> TokenStream {
        let mut upd = TokenStream::new();
        for o in 0..self.n_out() {
            let (a, v) = (acc(o), format_ident!("__v{}", o));
            if let Some(ReduceOp::Builtin(b, _)) = self.ops[o] {
                let c = vcombine(*b, &quote!(#a), &quote!(#v));
                let c = if pin { quote!((#c).opaque::<ISA>()) } else { c };
                upd.extend(quote!(#a = #c;));
            }
        }
        // `fma::<ISA>` is two operations on the baseline, which is what
        // `point; acc ⊕ v` computes there: one body serves every ISA.
        match self.fusable_product() {
            Some((x, y)) => {
                let (x, y, a) = (rust_simd::expr(x, n), rust_simd::expr(y, n), acc(0));
                let point = self.vector_point_with(s, n, part, quote!((#x).fma::<ISA>(#y, #a)));
                quote! { #point #a = __v0; }
            }
            None => {
                let point = self.vector_point(s, n, part);
                quote! { #point #upd }
            }
        }
    }
}
