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
    // The entry is written unless the best plan is the one that runs now
    // (without a config the default, after a written entry that entry), or
    // re-timed in turns with it, it does not win beyond the noise.
    let written = |stdout: &str, evaluations: usize, running: &str| {
        if stdout.contains("config unchanged") {
            assert!(
                stdout.contains(running) || stdout.contains("does not win beyond the noise"),
                "{stdout}"
            );
            return None;
        }
        let yaml = std::fs::read_to_string(out.join("matvec.yaml")).expect("the entry");
        assert!(
            yaml.contains("sizes: { I: 256, K: 512 }")
                && yaml.contains(&format!("evaluations: {evaluations}")),
            "{yaml}"
        );
        Some(yaml)
    };
    let (first, err) = run(&["--evaluations", "3"]);
    assert!(speedup(&first) >= 1.0, "{first}");
    assert!(err.contains("3 candidates measured"), "{err}");
    let before = written(&first, 3, "the default plan (");
    // Resuming goes on from the 3 measured candidates to 6.
    let (second, err) = run(&["--evaluations", "6", "--resume"]);
    assert!(err.contains("6 candidates measured"), "{err}");
    let running = match before {
        Some(_) => "the configured plan is already the best found: config unchanged",
        None => "the default plan (",
    };
    if let Some(yaml) = written(&second, 6, running) {
        assert_eq!(
            yaml.matches("- backend: cpu").count(),
            1,
            "replaced, not appended: {yaml}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}
