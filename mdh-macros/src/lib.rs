//! The `mdh!` procedural macro: a thin shell over `mdh_core::expand`, which
//! does all the work (parsing, checking, code generation) so that the tuner
//! can call exactly the same functions.

use proc_macro::TokenStream;

/// Compiles a data-parallel computation written as
/// `out_view ∘ md_hom(f, (⊗1, …, ⊗D)) ∘ inp_view` into a module with the
/// kernel's API. See the `mdh` crate for the syntax.
#[proc_macro]
pub fn mdh(input: TokenStream) -> TokenStream {
    mdh_core::expand(input.into()).into()
}
