//! What the end-to-end tests share: running the tuner on the examples'
//! matvec.

use std::path::Path;
use std::process::Command;

/// Runs `mdh-tune` on the examples' matvec for `backend` at `size`, writing
/// into `out`; returns stdout and stderr (and fails the test if it fails).
pub fn tune(backend: &str, size: &str, out: &Path, extra: &[&str]) -> (String, String) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels/Cargo.toml");
    let o = Command::new(env!("CARGO_BIN_EXE_mdh-tune"))
        .arg("--manifest-path")
        .arg(&examples)
        .args(["--kernel", "matvec", "--backend", backend, "--size", size])
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .expect("mdh-tune runs");
    let stdout = String::from_utf8_lossy(&o.stdout).to_string();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The summary line's speedup over the default plan.
pub fn speedup(stdout: &str) -> f64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("speedup over default: "))
        .expect("the summary line")
        .parse()
        .expect("a number")
}
