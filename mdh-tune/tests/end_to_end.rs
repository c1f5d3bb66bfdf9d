//! The whole tuner on the examples' matvec: finds the kernel, builds and
//! times candidates in the scratch crate, writes the config, resumes.
//!
//! Ignored by default: the scratch crate is a release build of mdh and its
//! dependencies (minutes on a 2-core machine the first time, cached in
//! `target/mdh-tune/` afterwards). Run it with
//! `cargo test -p mdh-tune --test end_to_end -- --ignored`.

mod common;

use common::{speedup, tune};

#[test]
#[ignore = "a release build of the scratch crate: minutes the first time"]
fn tunes_matvec_writes_a_config_and_resumes() {
    let out = std::env::temp_dir().join(format!("mdh-tune-e2e-{}", std::process::id()));
    let run = |extra: &[&str]| {
        tune(
            "cpu",
            "I=256,K=512",
            &out,
            &[&["--batch", "3"], extra].concat(),
        )
    };
    let (first, _) = run(&["--evaluations", "3"]);
    assert!(speedup(&first) >= 1.0, "{first}");
    let yaml = std::fs::read_to_string(out.join("matvec.yaml")).unwrap();
    assert!(
        yaml.contains("sizes: { I: 256, K: 512 }") && yaml.contains("evaluations: 3"),
        "{yaml}"
    );
    // Resuming goes on from the 3 measured candidates to 6.
    run(&["--evaluations", "6", "--resume"]);
    let yaml = std::fs::read_to_string(out.join("matvec.yaml")).unwrap();
    assert!(yaml.contains("evaluations: 6"), "{yaml}");
    assert_eq!(
        yaml.matches("- backend: cpu").count(),
        1,
        "replaced, not appended: {yaml}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}
