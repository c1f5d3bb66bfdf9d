//! Names of the generated code shared by several emitters.

use proc_macro2::Ident;
use quote::format_ident;

/// The index variable of dimension `d`.
pub(super) fn dim_var(d: usize) -> Ident {
    format_ident!("__i{}", d)
}

/// The name of the task's [`StreamWriter`](mdh::__rt::StreamWriter) of
/// output access `o` (a streaming plan's).
pub(super) fn stream_writer(o: usize) -> Ident {
    format_ident!("__sw{}", o)
}

/// The bounds `__t1_{d}`, `__t1e_{d}` of the current L1 tile in dimension `d`.
pub(super) fn l1_tile(d: usize) -> (Ident, Ident) {
    (format_ident!("__t1_{}", d), format_ident!("__t1e_{}", d))
}
