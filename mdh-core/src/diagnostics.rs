//! One error context for the front end (parser and checker), after
//! serde_derive's `Ctxt`: independent errors are collected and combined, so
//! one compilation reports every problem at once. Every error carries the
//! span of the offending tokens and a sentence telling the user how to fix it.

use crate::spec::SpanRange;

/// The errors found so far, combined into one `syn::Error`.
#[derive(Default)]
pub(crate) struct Diagnostics(Option<syn::Error>);

impl Diagnostics {
    /// Records an error at `at` with the message `msg`.
    pub(crate) fn error(&mut self, at: impl Into<SpanRange>, msg: impl std::fmt::Display) {
        self.push(at.into().error(msg));
    }

    /// Records an error built elsewhere (e.g. by a `syn` parser).
    pub(crate) fn push(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }

    /// Records every error of `other`.
    pub(crate) fn append(&mut self, other: Diagnostics) {
        if let Some(e) = other.0 {
            self.push(e);
        }
    }

    /// The value of `r`, or `None` after recording its error.
    pub(crate) fn take<T>(&mut self, r: syn::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.push(e);
                None
            }
        }
    }

    /// Whether no error has been recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// All recorded errors, combined.
    pub(crate) fn finish(self) -> syn::Result<()> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
