//! Packed L1 tiles of input accesses (the paper's memory regions D3/D4).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::names::{dim_var, l1_tile};
use super::tiles::l1_loops;
use super::{offset, Gen};
use crate::codegen::rust_expr::ty;

impl<'k> Gen<'k> {
    /// The offset of the current point in the packed L1 tile of input
    /// access `j`, and the offset's coefficient per dimension: the layout's
    /// last dimension has stride 1, the others the run-time strides
    /// `__pks{j}` set when the tile is packed.
    pub(super) fn packed_offset(&self, j: usize) -> (TokenStream, Vec<TokenStream>) {
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
    pub(super) fn packing(&self) -> (TokenStream, TokenStream, TokenStream) {
        let (mut setup, mut refill, mut park) =
            (TokenStream::new(), TokenStream::new(), TokenStream::new());
        for (j, a) in self.k.analysis().inputs.iter().enumerate() {
            let layout = &self.pack[j];
            let m = layout.len();
            if m == 0 {
                continue;
            }
            let t = ty(a.ty);
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
                a,
                &format_ident!("__ia{}_b", j),
                &format_ident!("__ia{}_c", j),
            );
            let src = format_ident!("__in{}", a.buffer);
            // SAFETY: the position is inside the buffer of `__len` elements
            // laid out above, and `bind` checked that the access stays inside
            // its input over the whole index space, which holds the tile.
            let copy = l1_loops(
                quote! {
                    unsafe { *__dst.get_unchecked_mut(#dst_off) = *#src.get_unchecked(#src_off) };
                },
                layout,
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
}
