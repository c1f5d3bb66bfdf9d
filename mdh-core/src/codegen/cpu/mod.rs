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
use quote::quote;

use crate::codegen::rust_expr::{self, ty};
use crate::plan::{static_coef, used_dims};
use crate::spec::{DimKind, IndexFn, Kernel, ReduceOp, ScalarType};
use names::dim_var;

mod driver;
mod names;
mod packing;
mod point;
mod register;
mod simd;
mod store;
mod tiles;
mod vector_tile;

pub use driver::cpu_fn;

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

    fn n_out(&self) -> usize {
        self.out_tys.len()
    }

    fn has_identity(&self, o: usize) -> bool {
        matches!(self.ops[o], Some(ReduceOp::Builtin(..)))
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
}

#[cfg(test)]
mod tests;
