//! Packed L1 tiles of input accesses (the paper's memory regions D3/D4).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::names::{dim_var, l1_tile};
use super::tiles::l1_loops;
use super::widen::widen;
use super::{offset, Gen};
use crate::codegen::rust_expr::ty;
use crate::plan::CpuPlan;

impl<'k> Gen<'k> {
    /// The offset of the current point in the packed L1 tile of input
    /// access `j`, and the offset's coefficient per dimension: the layout's
    /// last dimension has stride 1, the others the run-time strides
    /// `__pks{j}` set when the tile is packed.
    /// Where the access may be read in place instead (see
    /// [`Gen::in_place_ok`]), the tile's origin `__pko{j}` is added: 0 in
    /// a packed tile, the access's offset at the tile's first point in
    /// place.
    /// A tile packed as pairs ([`Gen::pair_offset`]) has no stride per
    /// dimension (its reads are the pairs' own).
    pub(super) fn packed_offset(&self, j: usize) -> (TokenStream, Vec<TokenStream>) {
        if let Some(p) = self.pairs_of(j) {
            return (self.pair_offset(p), vec![quote!(0isize); self.d]);
        }
        let layout = &self.pack[j];
        let strides = format_ident!("__pks{}", j);
        let mut stride: Vec<TokenStream> = vec![quote!(0isize); self.d];
        for (q, &x) in layout.iter().enumerate() {
            stride[x] = if q + 1 == layout.len() {
                quote!(1isize)
            } else {
                quote!(#strides[#q])
            };
        }
        let terms = layout.iter().map(|&x| {
            let (i, lo, st) = (dim_var(x), format_ident!("__t1_{}", x), &stride[x]);
            quote!(+ (#i - #lo) as isize * #st)
        });
        let origin = if self.in_place_ok(j) {
            let o = format_ident!("__pko{}", j);
            quote!(#o)
        } else {
            quote!(0isize)
        };
        (quote!((#origin #(#terms)*) as usize), stride)
    }

    /// Whether packed input access `j` can also be read in place with the
    /// same code: its layout's last dimension has stride 1 in the input
    /// too (whole vectors load from both), so a tile read too few times to
    /// repay its copy is not packed (see [`Gen::packing`]). Not a widened
    /// 16-bit input: its tile holds f32, the input 16-bit values; nor a
    /// tile of pairs.
    pub(super) fn in_place_ok(&self, j: usize) -> bool {
        let a = &self.k.analysis().inputs[j];
        self.w.from[j].is_none()
            && self.pairs_of(j).is_none()
            && self.pack[j]
                .last()
                .is_some_and(|&last| a.static_coefs[last] == Some(1))
    }

    /// The packing of the plan's packed input accesses (the paper's memory
    /// regions D3/D4): taking each access's packed tile from the thread at
    /// the start of a task (`mdh::cpu::PackedTile`), the code at the start
    /// of each L1 tile that refills it when the tile's range of the
    /// dimensions its access uses has changed and binds `__pk{j}` to it,
    /// and parking it again at the end of the task. Rows of the layout's
    /// last dimension start 64-byte aligned.
    pub(super) fn packing(&self, plan: &CpuPlan) -> (TokenStream, TokenStream, TokenStream) {
        let (mut setup, mut refill, mut park) =
            (TokenStream::new(), TokenStream::new(), TokenStream::new());
        for (j, a) in self.k.analysis().inputs.iter().enumerate() {
            let layout = &self.pack[j];
            let m = layout.len();
            if m == 0 {
                continue;
            }
            let t = ty(self.w.read_ty(j, a.ty));
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
            let (lo, hi): (Vec<Ident>, Vec<Ident>) = layout.iter().map(|&x| l1_tile(x)).unzip();
            let src_off = offset(
                a,
                &format_ident!("__ia{}_b", j),
                &format_ident!("__ia{}_c", j),
            );
            let src = format_ident!("__in{}", a.buffer);
            let (strides, len, copy) = match self.pairs_of(j) {
                Some(p) => self.pair_layout(p, &src, &src_off),
                None => {
                    let strides = (0..outer).rev().map(|q| {
                        if q + 1 == outer {
                            let pad = quote!((64 / ::core::mem::size_of::<#t>()));
                            quote!(#st[#q] = __e[#q + 1].next_multiple_of(#pad) as isize;)
                        } else {
                            quote!(#st[#q] = #st[#q + 1] * __e[#q + 1] as isize;)
                        }
                    });
                    let len = if outer == 0 {
                        quote!(__e[0])
                    } else {
                        quote!(#st[0] as usize * __e[0])
                    };
                    let (dst_off, _) = self.packed_offset(j);
                    // SAFETY: the position is inside the buffer of `__len`
                    // elements laid out above, and `bind` checked that the
                    // access stays inside its input over the whole index
                    // space, which holds the tile. A widened 16-bit input
                    // is converted here, once per element of the tile, not
                    // in the register tiles.
                    let x = widen(self.w.from[j], quote!(*#src.get_unchecked(#src_off)));
                    let copy = l1_loops(
                        quote! {
                            unsafe { *__dst.get_unchecked_mut(#dst_off) = #x };
                        },
                        layout,
                    );
                    (quote!(#(#strides)*), len, copy)
                }
            };
            // The strides follow from the tile's extents: set for every
            // tile, also one this thread packed in an earlier part.
            let pack = quote! {
                let __tile: [usize; #m2] = [#(#lo, #hi),*];
                let __e: [usize; #m] = [#(#hi - #lo),*];
                #strides
                if __tile != #tile.last {
                    #tile.last = __tile;
                    let __dst: &mut [#t] = #tile.buf.resize(#len);
                    #copy
                }
            };
            if !self.in_place_ok(j) {
                refill.extend(quote! {
                    let mut #st: [isize; #outer] = [0; #outer];
                    #pack
                    let #pk: &[#t] = #tile.buf.as_slice();
                });
                continue;
            }
            // Read in place where the register tiles of this L1 tile read
            // the packed tile fewer than 8 times (the kept dimensions the
            // access does not use, in register tiles) and the input stays
            // in the last level cache (`mdh::machine::read_in_place` has the
            // rule and its measurements).
            let reuse = self.kept.iter().filter(|x| !layout.contains(x)).map(|&x| {
                let ((lo, hi), r) = (l1_tile(x), plan.reg[x]);
                quote!(* (#hi - #lo).div_ceil(#r))
            });
            let coefs = layout[..outer].iter().enumerate().map(|(q, &x)| {
                let c = self.in_place_stride(j, x);
                quote!(#st[#q] = #c;)
            });
            let (ia_b, o) = (format_ident!("__ia{}_b", j), format_ident!("__pko{}", j));
            let origin = layout.iter().map(|&x| {
                let (c, lo) = (self.in_place_stride(j, x), format_ident!("__t1_{}", x));
                quote!(+ #c * #lo as isize)
            });
            refill.extend(quote! {
                let mut #st: [isize; #outer] = [0; #outer];
                let (#pk, #o): (&[#t], isize) = if ::mdh::machine::read_in_place(1usize #(#reuse)*, ::core::mem::size_of_val(#src)) {
                    #(#coefs)*
                    (#src, #ia_b #(#origin)*)
                } else {
                    let #o: isize = 0;
                    #pack
                    (#tile.buf.as_slice(), #o)
                };
            });
        }
        (setup, refill, park)
    }
}
