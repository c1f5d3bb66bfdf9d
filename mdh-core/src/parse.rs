//! Parser: `mdh!` tokens → `spec::Kernel`. (Being written.)
use crate::spec::Kernel;
use proc_macro2::TokenStream;

pub fn parse_kernel(tokens: TokenStream) -> syn::Result<Kernel> {
    Err(syn::Error::new(proc_macro2::Span::call_site(), format!("parser not written yet: {}", tokens)))
}
