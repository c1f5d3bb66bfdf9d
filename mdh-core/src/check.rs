//! Checker. (Being written.)
use crate::spec::Kernel;

pub fn check(_kernel: &mut Kernel) -> syn::Result<()> {
    Ok(())
}
