//! trybuild UI tests of the `mdh!` macro.
//!
//! - `ui/fail/*.rs`: one class of mistake each (DESIGN.md §2 and the parser);
//!   each must be rejected with one error, spanned at the offending tokens,
//!   whose text is recorded in the matching `.stderr`.
//! - `ui/pass/*.rs`: corners of the grammar; each is compiled *and run*, and
//!   its `main` asserts the result of the generated `cpu` function.
//! - `ui/configs/*.yaml`: configs of the `config_*` fail cases, found through
//!   `MDH_CONFIG_DIR`.
//!
//! Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p mdh-ui-tests`, then read every one.

#[test]
fn ui() {
    // Kernels of the config cases find their YAML here (the paths in the
    // .stderr files are relative to this crate).
    std::env::set_var(
        "MDH_CONFIG_DIR",
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ui/configs"),
    );
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
