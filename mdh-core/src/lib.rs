//! `mdh-core`: the mdh compiler as a library.
//!
//! Data flows one way: tokens → [`spec::Kernel`] ([`parse`]) → [`Checked`]
//! kernel with its [`analysis`] ([`check`]) → plans ([`plan`], [`config`]) →
//! code ([`codegen`]). The proc macro (`mdh-macros`) and the tuner
//! call the same functions. [`interp`] evaluates a kernel's high-level
//! definition directly and is the oracle of every test.

pub mod analysis;
pub mod backend;
pub mod check;
pub mod codegen;
pub mod config;
pub mod default_plan;
pub mod desc;
mod diagnostics;
pub mod error;
#[doc(hidden)]
pub mod fixtures;
pub mod fusion;
pub mod gpu_plan;
pub mod interp;
pub mod parse;
pub mod plan;
pub mod spec;

pub use analysis::Checked;
pub use error::{Error, PlanError};
pub use spec::{Kernel, Program, Staged};

use proc_macro2::TokenStream;

/// Parses and checks a kernel from its tokens (what `mdh!` receives).
pub fn compile(tokens: TokenStream) -> syn::Result<Checked> {
    check::check(parse::parse_kernel(tokens)?)
}

/// Parses and checks a kernel of one md_hom or of stages from its tokens.
pub fn compile_program(tokens: TokenStream) -> syn::Result<Program<Checked>> {
    Ok(match parse::parse_program(tokens)? {
        Program::Single(k) => Program::Single(check::check(k)?),
        Program::Staged(k) => Program::Staged(Box::new(check::check_staged(*k)?)),
    })
}

/// Parses and checks a kernel from source text, e.g. a generated module's
/// `SPEC` constant. Errors are rendered as text, one line per error (a
/// `syn::Error`'s `to_string` would keep only the first).
pub fn compile_str(source: &str) -> Result<Checked, Error> {
    from_str(source, compile)
}

/// [`compile_str`] for a kernel of one md_hom or of stages.
pub fn compile_program_str(source: &str) -> Result<Program<Checked>, Error> {
    from_str(source, compile_program)
}

fn from_str<T>(source: &str, f: impl FnOnce(TokenStream) -> syn::Result<T>) -> Result<T, Error> {
    let tokens: TokenStream = source
        .parse()
        .map_err(|e| Error::Spec(format!("cannot tokenize kernel source: {e}")))?;
    f(tokens).map_err(|errors| {
        let lines: Vec<String> = errors.into_iter().map(|e| e.to_string()).collect();
        Error::Spec(lines.join("\n"))
    })
}

/// The whole expansion of `mdh! { ... }`: a module with the kernel's API, or
/// `compile_error!`s with the spans of the offending tokens.
///
/// The CPU and GPU plans come from the kernel's YAML config (see [`config`]), looked
/// up from the calling crate's `CARGO_MANIFEST_DIR`.
pub fn expand(tokens: TokenStream) -> TokenStream {
    match compile_program(tokens) {
        Ok(Program::Single(kernel)) => expand_kernel(&kernel),
        Ok(Program::Staged(kernel)) => {
            codegen::stages::module(&kernel, expand_kernel, expand_fused)
        }
        Err(e) => e.to_compile_error(),
    }
}

/// The module of a checked kernel of one md_hom, with its configs' plans.
fn expand_kernel(kernel: &Checked) -> TokenStream {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from);
    match config::plans(kernel, manifest_dir.as_deref()) {
        Ok((entries, path)) => codegen::module(kernel, &entries, path.as_deref()),
        Err(e) => syn::Error::new(kernel.name.span(), e.to_string()).to_compile_error(),
    }
}

/// The module of a stage with its epilogue fused, with the stage's
/// configs' CPU plans.
fn expand_fused(kernel: &Checked, epilogue: codegen::cpu::FusedEpilogue<'_>) -> TokenStream {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from);
    match config::plans(kernel, manifest_dir.as_deref()) {
        Ok((entries, _)) => codegen::fused_module(kernel, &entries, epilogue),
        Err(e) => syn::Error::new(kernel.name.span(), e.to_string()).to_compile_error(),
    }
}

#[cfg(test)]
mod tests {
    use crate::Error;

    #[test]
    fn compile_str_keeps_every_error() {
        // Two independent mistakes: an unknown element type and a clause given twice.
        let source = "kernel k { inp(v: f33[I]), out(w: f32[I]), out(w: f32[I]), \
                      inp_view(v: |i| (i)), out_view(w: |i| (i)), md_hom[I](|x| x, (CC)) }";
        let Err(Error::Spec(text)) = crate::compile_str(source) else {
            panic!("expected a spec error");
        };
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines.iter().any(|l| l.contains("duplicate `out` clause")),
            "{text}"
        );
        assert!(lines.iter().any(|l| l.contains("f33")), "{text}");
    }
}
