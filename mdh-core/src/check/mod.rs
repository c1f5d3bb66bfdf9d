//! Checker: the compile-time checks of DESIGN.md §2 on a parsed
//! [`Kernel`], and type inference for the scalar function and for
//! user-defined combine operators.
//!
//! [`check`] runs after the parser (which already rejects unsupported syntax
//! and non-affine index expressions). Every error is a `syn::Error` with the
//! span of the offending tokens and one sentence saying what is wrong and how
//! to fix it; independent errors are combined so the user sees all at once.
//! The checker never panics.
//!
//! # Structural and view checks
//!
//! - Names: no two of inputs, outputs and params share a name; no buffer or
//!   param is named like a size parameter; closures bind no name twice.
//! - One combine operator per md_hom dimension.
//! - Every index function has one parameter per md_hom dimension and one
//!   component per dimension of its buffer (its rank).
//! - Every view names a declared buffer of the right kind (inputs in
//!   `inp_view`, outputs in `out_view`); every buffer has exactly one view
//!   entry with at least one index function; there is at least one output.
//! - The scalar function has one parameter per input access (in `inp_view`
//!   order); its index pattern `|[y, x], …|` has one name per dimension.
//! - `PW(…)` / `PS(…)` have one operator, or one per output access.
//! - Lemma 1 of the MDH paper: all PW and PS dimensions use the same
//!   operator (per output access).
//! - Built-in operators (`+ * max min`) do not combine `bool` outputs.
//! - Output index functions do not use PW (reduced) dimensions and are
//!   injective over the kept (CC and PS) dimensions (full column rank of the
//!   coefficient matrix, computed exactly); no two accesses of one output
//!   buffer have equal index functions.
//! - After an error in a view clause, checks that count its accesses (the
//!   scalar function's parameters, per-output operators, the result's arity)
//!   are skipped, so that one mistake gives one error.
//!
//! # Type inference
//!
//! Unification over type variables that are unknown, an integer literal
//! (any integer type, or — more lenient than Rust — a float type), a float
//! literal (any float type) or a concrete [`ScalarType`](crate::spec::ScalarType). Unconstrained
//! literals default to `i32` / `f64`. Names resolve innermost first: `let`
//! bindings and loop variables, closure parameters (element type of the
//! accessed buffer), index names (`usize`), params, size parameters (`usize`).
//! Rules: arithmetic needs two numbers of one type; comparisons one type and
//! give `bool`; `&& || !` need `bool`; unary `-` needs a signed type; `as`
//! casts between numbers and from `bool` to integers; methods per
//! [`Method`](crate::spec::Method); `if` conditions are `bool` and branches agree; an `if` without
//! `else` and a loop body give `()`; a `let` without a value (Rust's deferred
//! initialization) must be initialized by one plain assignment `x = e;`
//! directly in its own block before any use, and then gets its type from `e`
//! (or its annotation); further assignments only to `let mut` bindings;
//! integer `/` and `%` by a literal `0` are rejected; loop bounds are integers of one
//! type; `break` only in loops; tuples only as the result of the scalar
//! function. The result must match the output element types (in `out_view`
//! access order) and have one value per output access; a user-defined
//! operator `|a, b| e` takes and returns the element type of the output(s)
//! it combines; `break` gives no value, so it is no operand, bound or
//! initial value. After a successful check the [`Checked`] kernel's trees (`Kernel<Typed>`) carry every type:
//! per expression its [`Type`](crate::spec::Type), per operation the scalar
//! type it computes in, per `let` its binding's (module `typed`).

use crate::analysis::Checked;
use crate::diagnostics::Diagnostics;
use crate::spec::parsed::Kernel;
use infer::infer_types;
use injectivity::check_output_index_fns;
use names::check_names;
use ops::{check_combine_ops, check_op_count};
pub use stages::check_staged;
use views::{check_scalar_fn_shape, check_views};

mod infer;
mod injectivity;
mod messages;
mod names;
mod ops;
pub(crate) mod stages;
mod typed;
mod views;

#[cfg(test)]
mod tests;

/// Checks a parsed kernel, types all scalar-function and operator
/// expressions and derives its [`Analysis`](crate::analysis::Analysis).
/// See the module documentation for the list of checks.
pub fn check(kernel: Kernel) -> syn::Result<Checked> {
    let k = &kernel;
    let mut errs = Diagnostics::default();
    check_names(k, &mut errs);
    let ops_ok = check_op_count(k, &mut errs);
    let views = check_views(k, &mut errs);
    check_scalar_fn_shape(k, views, &mut errs);
    check_combine_ops(k, ops_ok, views, &mut errs);
    if ops_ok {
        check_output_index_fns(k, &mut errs);
    }
    let types = infer_types(k, views, &mut errs);
    errs.finish()?;
    // No error means inference typed every tree.
    let types = types.ok_or_else(|| {
        kernel
            .scalar_fn
            .body
            .range
            .error("internal error in mdh: the checker found no error but typed no expression; please report it with the kernel")
    })?;
    Ok(Checked::new(typed::typed_kernel(kernel, types)?))
}
