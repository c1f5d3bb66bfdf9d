//! Code generators.
use crate::spec::Kernel;
use proc_macro2::TokenStream;

pub fn module(_kernel: &Kernel) -> TokenStream {
    TokenStream::new()
}
