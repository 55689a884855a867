//! Compile-fail (`tests/ui`) and must-compile (`tests/pass`) cases of the macros.
//!
//! rustc's messages change between releases, so this runs on the pinned toolchain only.
//! Regenerate the `.stderr` files with `TRYBUILD=overwrite cargo test --test compiletest`
//! and review the diff.

#[rustversion::attr(not(stable(1.95)), ignore)]
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/pass/*.rs");
}
