//! A bf16 product two reduction points at a time: the task bodies of a
//! mixed-precision contraction `|a, b| (a as f32) * (b as f32)` summed with
//! `PW(+)` whose register tiles take the lanes along a kept dimension `s`
//! and its innermost reduction dimension `kr` one point per step. There,
//! each step adds the products of two points of `kr` to every accumulator
//! vector with one AVX-512 BF16 `vdpbf16ps` (`mdh::__rt::V::dot_pairs`):
//! twice the products of an FMA per instruction, at the FMA's rate on
//! the CPUs that have it (Zen 4: 3.66 G instructions/s on one core for
//! both). The operand read along `s` (`y`) is packed as pairs along `kr`,
//! each lane's two values adjacent, its rows as it is (bf16, not widened);
//! the other (`x`, the broadcast) is read as two bf16 values and broadcast
//! as one 32-bit pair. An odd last point pairs with zero: the packed tile's
//! second value is 0, and so is `x`'s.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::names::{dim_var, l1_tile};
use super::Gen;
use crate::plan::CpuPlan;
use crate::spec::{ExprKind, ScalarType};

/// The input accesses and the reduction dimension of a plan's pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pairs {
    /// The access broadcast across the lanes (not using the SIMD dimension).
    pub(super) x: usize,
    /// The access read along the lanes, packed as pairs.
    pub(super) y: usize,
    /// The innermost reduction dimension, whose points pair.
    pub(super) kr: usize,
}

impl<'k> Gen<'k> {
    /// The pairs of `plan`'s task bodies, where they apply: the scalar
    /// function is the product of two bf16 inputs widened to f32, summed
    /// into an f32 output; the plan's tiles take SIMD lanes of a kept
    /// dimension `s` (16 f32 lanes: one `vdpbf16ps`) and one point of the
    /// innermost reduction dimension `kr` per step; one input uses `s`,
    /// packed with `kr` and `s` innermost, the other does not use `s`.
    pub(super) fn pairs_for(&self, plan: &CpuPlan) -> Option<Pairs> {
        let (a, b) = self.fusable_product()?;
        let params = &self.k.scalar_fn.params;
        let param = |e: &crate::spec::Expr| match &e.kind {
            ExprKind::Var(v) => params.iter().position(|p| p == v),
            _ => None,
        };
        let (ja, jb) = (param(a)?, param(b)?);
        let bf16 = |j: usize| self.w.from[j] == Some(ScalarType::Bf16);
        if ja == jb || !bf16(ja) || !bf16(jb) || self.out_tys[0] != ScalarType::F32 {
            return None;
        }
        let simd = self.for_plan(plan).simd(plan)?;
        let (s, &kr) = (simd.dim, self.reduced.last()?);
        if simd.reduced || simd.lanes != 16 || plan.reg[kr] != 1 {
            return None;
        }
        let uses_s = |j: usize| self.k.analysis().inputs[j].uses.contains(&s);
        let (x, y) = match (uses_s(ja), uses_s(jb)) {
            (false, true) => (ja, jb),
            (true, false) => (jb, ja),
            _ => return None,
        };
        plan.pack[y]
            .ends_with(&[kr, s])
            .then_some(Pairs { x, y, kr })
    }

    /// The generator inside `plan`'s pair bodies, where it has them: both
    /// inputs read as bf16 (packed as they are).
    pub(super) fn with_pairs(&self, plan: &CpuPlan) -> Option<Self> {
        let mut g = self.for_plan(plan);
        let p = g.pairs_for(plan)?;
        g.w.from[p.x] = None;
        g.w.from[p.y] = None;
        g.pairs = Some(p);
        Some(g)
    }

    /// The pairs input access `j` is packed for, if it is packed as pairs.
    pub(super) fn pairs_of(&self, j: usize) -> Option<Pairs> {
        self.pairs.filter(|p| p.y == j)
    }

    /// The offset of the current point in the pair-packed tile of access
    /// `p.y` (layout `[.., kr, s]`, strides `__pks{y}`): the pair's row
    /// `(i_kr - lo) / 2`, two elements per point of `s`, the point's place
    /// in its pair last.
    pub(super) fn pair_offset(&self, p: Pairs) -> TokenStream {
        let layout = &self.pack[p.y];
        let strides = format_ident!("__pks{}", p.y);
        let m = layout.len();
        let terms = layout[..m - 2].iter().enumerate().map(|(q, &x)| {
            let (i, lo) = (dim_var(x), format_ident!("__t1_{}", x));
            quote!(+ (#i - #lo) * #strides[#q] as usize)
        });
        let (k, (lo_k, _)) = (dim_var(p.kr), l1_tile(p.kr));
        let s = layout[m - 1];
        let (i_s, lo_s) = (dim_var(s), format_ident!("__t1_{}", s));
        let row = m - 2;
        quote! {
            (0usize #(#terms)* + ((#k - #lo_k) >> 1) * #strides[#row] as usize
                + (#i_s - #lo_s) * 2 + ((#k - #lo_k) & 1))
        }
    }

    /// The strides `__pks{y}` of the pair-packed tile (extents `__e`, its
    /// rows padded to 64 bytes), its length (one vector more: a register
    /// tile's vectors load whole, also those of the last points), and its
    /// copy from the input `src` (offset `src_off` at the current point):
    /// two rows of `kr` at a time into one row of pairs
    /// (`mdh::__rt::pack_pairs`, an odd last one with zeros).
    pub(super) fn pair_layout(
        &self,
        p: Pairs,
        src: &Ident,
        src_off: &TokenStream,
    ) -> (TokenStream, TokenStream, TokenStream) {
        let layout = &self.pack[p.y];
        let (m, st) = (layout.len(), format_ident!("__pks{}", p.y));
        let row = m - 2;
        let strides = (0..m - 1).rev().map(|q| {
            if q == row {
                quote!(#st[#q] = (2 * __e[#q + 1]).next_multiple_of(32) as isize;)
            } else if q + 1 == row {
                quote!(#st[#q] = #st[#q + 1] * __e[#q + 1].div_ceil(2) as isize;)
            } else {
                quote!(#st[#q] = #st[#q + 1] * __e[#q + 1] as isize;)
            }
        });
        let rows0 = if row == 0 {
            quote!(__e[0].div_ceil(2))
        } else {
            quote!(__e[0])
        };
        let len = quote!(#st[0] as usize * #rows0 + 32);
        let (k, (lo_k, hi_k)) = (dim_var(p.kr), l1_tile(p.kr));
        let s = layout[m - 1];
        let (i_s, (lo_s, _)) = (dim_var(s), l1_tile(s));
        let (at, stride) = (self.pair_offset(p), self.in_place_stride(p.y, s));
        // SAFETY: `bind` checked that the access stays inside its input
        // over the index space, which holds the tile's points; the pairs
        // of a row of the tile are inside the tile laid out above.
        let rows = quote! {
            let mut __k: usize = #lo_k;
            while __k < #hi_k {
                let (#k, #i_s): (usize, usize) = (__k, #lo_s);
                let (__at, __a): (usize, usize) = (#at, #src_off);
                let __b: ::core::option::Option<usize> = if __k + 1 < #hi_k {
                    let #k: usize = __k + 1;
                    ::core::option::Option::Some(#src_off)
                } else {
                    ::core::option::Option::None
                };
                unsafe { ::mdh::__rt::pack_pairs(__dst, __at, #src, __a, __b, #stride, __e[#m - 1]) };
                __k += 2;
            }
        };
        let copy = super::tiles::l1_loops(rows, &layout[..row]);
        (quote!(#(#strides)*), len, copy)
    }
}
