//! The local-memory tiles of the main kernel and their pipeline stages:
//! the tiles' declarations, and with two stages (`MDH_STAGES`) the copy of
//! the next PW tile issued before the current one is computed.

use super::{local, Emit};
use crate::codegen::c_expr::{Dialect, Lowering};
use mdh_rt::names::{self, DYN_SHARED, IDX, STAGES};

impl Emit<'_> {
    /// The local-memory tiles of cached inputs, `MDH_STAGES` of `L{b}_SIZE`
    /// elements each (in `lbuf{b}` with two stages): a static array, or on CUDA, where their
    /// bytes exceed what a block may declare statically (`MDH_DYN_SHARED`),
    /// a pointer into the block's dynamic shared memory at the offset
    /// `L{b}_DOFF` (the launch passes its size and opts in to more than
    /// 48 KiB). `lmem{b}` is the stage computed from; with two stages,
    /// `lnext{b}` the one being filled (and `lon{b}_{c}` where its box
    /// starts).
    pub(super) fn local_tiles(&self, l: &mut Lowering) {
        let (d, w) = (self.d, &self.w);
        let dynamic = d == Dialect::Cuda && !self.k.inputs.is_empty();
        if dynamic {
            let align = self
                .k
                .inputs
                .iter()
                .map(|b| local::local_align(b.ty))
                .max()
                .unwrap_or(16);
            l.line(&format!("#if {DYN_SHARED}"));
            l.line(&format!(
                "extern __shared__ __align__({align}) unsigned char mdh_dyn_shared[];"
            ));
            l.line("#endif");
        }
        for (b, buf) in self.k.inputs.iter().enumerate() {
            let t = d.storage_ty(buf.ty);
            let (size, stage) = (names::local_size(b), names::local_stage(b));
            // The storage of the tiles, named `name`, of `elems` elements.
            let storage = |l: &mut Lowering, name: &str, elems: &str| {
                if dynamic {
                    l.line(&format!("#if {DYN_SHARED}"));
                    l.line(&format!(
                        "{t}* const {name} = ({t}*)(mdh_dyn_shared + {});",
                        names::dyn_offset(b)
                    ));
                    l.line("#else");
                }
                l.line(&format!(
                    "{} {t} {name}[{elems}] __attribute__((aligned({})));",
                    w.shared,
                    local::local_align(buf.ty)
                ));
                if dynamic {
                    l.line("#endif");
                }
            };
            l.line(&format!("#if {}", names::local(b)));
            l.line(&format!("#if {STAGES} > 1"));
            storage(
                l,
                &format!("lbuf{b}"),
                &format!("{stage} * ({STAGES} - 1) + {size}"),
            );
            let ptr = format!("{}{t}*", w.local_ptr);
            l.line(&format!("{ptr} lmem{b} = lbuf{b};"));
            l.line(&format!("{ptr} lnext{b} = lbuf{b} + {stage};"));
            for c in 0..buf.shape.len() {
                l.line(&format!("{IDX} lon{b}_{c} = 0;"));
            }
            l.line("#else");
            // One stage: the tiles are the array itself (as before stages).
            storage(l, &format!("lmem{b}"), &size);
            l.line("#endif");
            l.line("#endif");
        }
    }

    /// Two stages: the copy of the first PW tile of the current kept tile,
    /// complete and visible to the work-group before it is computed.
    pub(super) fn first_tile(&self, l: &mut Lowering) {
        l.line("{");
        self.pw_tile(l, "0");
        self.copy_tiles(l, local::Stage::Current, true);
        l.line("}");
        l.line("#if MDH_CP_ASYNC");
        l.line("mdh_cp_async_commit();");
        l.line("mdh_cp_async_wait();");
        l.line("#endif");
        l.line(self.w.barrier);
    }

    /// Declares the bounds `t{x}`, `e{x}` of the PW tile that starts
    /// `{at}{x}` (or 0 for `at` "0") after this work-group's block start,
    /// as [`tile_loop`](super::tile_loop) does for the current one.
    fn pw_tile(&self, l: &mut Lowering, at: &str) {
        for &x in &self.pw {
            let off = if at == "0" {
                String::new()
            } else {
                format!(" + {at}{x}")
            };
            l.line(&format!("const {IDX} t{x} = blo{x}{off};"));
            l.line(&format!(
                "const {IDX} e{x} = MDH_MIN(t{x} + {}, bhi{x});",
                names::tile(x)
            ));
        }
    }

    /// Two stages: issues the copy of the next PW tile (the tile loops'
    /// order, last PW dimension fastest; none after the last) into the
    /// other stage, before the current one is computed. The next tile's
    /// `t{x}`, `e{x}` shadow the current ones in a block of their own.
    pub(super) fn prefetch(&self, l: &mut Lowering) {
        l.line("{");
        l.line("int mdh_carry = 1;");
        for &x in self.pw.iter().rev() {
            let (tile, block) = (names::tile(x), names::block(x));
            l.line(&format!("{IDX} ntt{x} = tt{x};"));
            l.line(&format!(
                "if (mdh_carry) {{ ntt{x} += {tile}; if (ntt{x} >= {block}) ntt{x} = 0; else mdh_carry = 0; }}"
            ));
        }
        l.line("if (!mdh_carry) {");
        self.pw_tile(l, "ntt");
        self.copy_tiles(l, local::Stage::Next, true);
        l.line("}");
        l.line("}");
        l.line("#if MDH_CP_ASYNC");
        l.line("mdh_cp_async_commit();");
        l.line("#endif");
    }

    /// Two stages, after the barrier that ends a PW tile: the prefetched
    /// stage becomes the one computed from, the other the one filled next.
    pub(super) fn next_stage(&self, l: &mut Lowering) {
        for (b, buf) in self.k.inputs.iter().enumerate() {
            l.line(&format!("#if {}", names::local(b)));
            l.line(&format!(
                "{{ {}{}* const s = lmem{b}; lmem{b} = lnext{b}; lnext{b} = s; }}",
                self.w.local_ptr,
                self.d.storage_ty(buf.ty)
            ));
            for c in 0..buf.shape.len() {
                l.line(&format!("lo{b}_{c} = lon{b}_{c};"));
            }
            l.line("#endif");
        }
    }
}
