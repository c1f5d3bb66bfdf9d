//! trybuild UI tests of the `mdh!` macro.
//!
//! - `ui/fail/*.rs`: one class of mistake each (DESIGN.md §2 and the parser);
//!   each must be rejected with one error, spanned at the offending tokens,
//!   whose text is recorded in the matching `.stderr`.
//! - `ui/pass/*.rs`: corners of the grammar; each is compiled *and run*, and
//!   its `main` asserts the result of the generated `cpu` function.
//! - `ui/pending/*.rs` (not run): mistakes the macro does not yet report well,
//!   each with a hand-written `.stderr` of the wanted diagnostic; see its README.
//!
//! Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p mdh-ui-tests`, then read every one.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
