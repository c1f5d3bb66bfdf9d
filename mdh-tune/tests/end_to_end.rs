//! The whole tuner on the examples' matvec: finds the kernel, builds and
//! times candidates in the scratch crate, writes the config, resumes.
//!
//! Ignored by default: the scratch crate is a release build of mdh and its
//! dependencies (minutes on a 2-core machine the first time, cached in
//! `target/mdh-tune/` afterwards). Run it with
//! `cargo test -p mdh-tune --test end_to_end -- --ignored`.

use std::path::Path;
use std::process::Command;

fn tune(out: &Path, extra: &[&str]) -> String {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/Cargo.toml");
    let o = Command::new(env!("CARGO_BIN_EXE_mdh-tune"))
        .arg("--manifest-path")
        .arg(&examples)
        .args([
            "--kernel",
            "matvec",
            "--backend",
            "cpu",
            "--size",
            "I=256,K=512",
            "--batch",
            "3",
        ])
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .expect("mdh-tune runs");
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

#[test]
#[ignore = "a release build of the scratch crate: minutes the first time"]
fn tunes_matvec_writes_a_config_and_resumes() {
    let out = std::env::temp_dir().join(format!("mdh-tune-e2e-{}", std::process::id()));
    let first = tune(&out, &["--evaluations", "3"]);
    let speedup: f64 = first
        .lines()
        .find_map(|l| l.strip_prefix("speedup over default: "))
        .expect("the summary line")
        .parse()
        .unwrap();
    assert!(speedup >= 1.0, "{first}");
    let yaml = std::fs::read_to_string(out.join("matvec.yaml")).unwrap();
    assert!(
        yaml.contains("sizes: { I: 256, K: 512 }") && yaml.contains("evaluations: 3"),
        "{yaml}"
    );
    // Resuming goes on from the 3 measured candidates to 6.
    tune(&out, &["--evaluations", "6", "--resume"]);
    let yaml = std::fs::read_to_string(out.join("matvec.yaml")).unwrap();
    assert!(yaml.contains("evaluations: 6"), "{yaml}");
    assert_eq!(
        yaml.matches("- backend: cpu").count(),
        1,
        "replaced, not appended: {yaml}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}
