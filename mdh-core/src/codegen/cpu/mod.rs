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

use crate::analysis::{Access, Checked};
use crate::codegen::rust_expr::{self, ty};
use crate::plan::CpuPlan;
use crate::spec::{DimKind, ReduceOp, ScalarType};
use names::dim_var;

mod driver;
mod epilogue;
pub use epilogue::{mpi_parts, FusedEpilogue};
mod names;
mod packing;
mod pairs;
mod point;
mod register;
mod simd;
pub(crate) use simd::lanes_apply;
pub(crate) use widen::widened;
mod store;
mod tiles;
mod vector_tile;
mod widen;

pub(crate) use driver::plan_choice;
pub use driver::{cpu_fn, cpu_in_fn, fused_cpu_fn};

/// Whether `plan`'s task bodies of `k` have pair bodies (a bf16 product
/// two reduction points per `vdpbf16ps`, see `pairs.rs`), which hosts with
/// AVX-512 BF16 run.
pub fn runs_pairs(k: &Checked, plan: &CpuPlan) -> bool {
    Gen::new(k).pairs_for(plan).is_some()
}

/// `(base + Σ coef[d] · i_d) as usize` for the dimensions the access uses.
fn offset(a: &Access, base: &Ident, coef: &Ident) -> TokenStream {
    offset_at(a, base, coef, dim_var)
}

/// [`offset`] with `index(d)` the index variable of the access's dimension
/// `d` (a fused epilogue's dimensions are its producer's).
fn offset_at(
    a: &Access,
    base: &Ident,
    coef: &Ident,
    index: impl Fn(usize) -> Ident,
) -> TokenStream {
    let terms = a.uses.iter().map(|&d| {
        let i = index(d);
        match a.static_coefs[d] {
            Some(c) => {
                let c = c as isize;
                quote!(+ #c * #i as isize)
            }
            None => quote!(+ #coef[#d] * #i as isize),
        }
    });
    quote!((#base #(#terms)*) as usize)
}

/// What the generator needs to know about one kernel (and, inside the task
/// body of a plan, the plan's packed input layouts).
#[derive(Clone)]
struct Gen<'k> {
    k: &'k Checked,
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
    /// The scalar function as the CPU code runs it (16-bit inputs widened
    /// to f32 where they are read).
    w: widen::Widened,
    /// The epilogue fused into the stores (a kernel of stages' producer).
    epilogue: Option<FusedEpilogue<'k>>,
    /// Inside a pair body of a bf16 product: its pairs.
    pairs: Option<pairs::Pairs>,
}

impl<'k> Gen<'k> {
    fn new(k: &'k Checked) -> Self {
        let a = k.analysis();
        let out_tys = a.output_types();
        let tys: Vec<TokenStream> = out_tys.iter().map(|t| ty(*t)).collect();
        Gen {
            k,
            d: a.kinds.len(),
            kinds: a.kinds.clone(),
            kept: a.kept.clone(),
            reduced: a.reduced.clone(),
            ops: (0..out_tys.len()).map(|o| k.cpu_op(o)).collect(),
            out_tys,
            a_ty: quote!((#(#tys,)*)),
            pack: vec![Vec::new(); a.inputs.len()],
            w: widen::Widened::new(k),
            epilogue: None,
            pairs: None,
        }
    }

    /// The generator inside the task body of `plan` (its packed layouts).
    fn for_plan(&self, plan: &CpuPlan) -> Self {
        Gen {
            pack: plan.pack.clone(),
            ..self.clone()
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

    /// Whether output `o`'s partial results start at the operator's
    /// identity (a built-in operator) rather than as `None` (a closure).
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

    /// The identity of every operator, if all have one (for empty PW
    /// dimensions): a closure that runs as a built-in still has none, an
    /// empty reduction with it stays an error (`Checked::has_identity`).
    fn identity(&self) -> TokenStream {
        let ids: Option<Vec<TokenStream>> = (0..self.n_out())
            .map(|o| match self.ops[o] {
                Some(ReduceOp::Builtin(b, _)) if self.k.has_identity(o) => {
                    Some(rust_expr::identity(*b, self.out_tys[o]))
                }
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
