//! Writes `$OUT_DIR/kernels.rs`: `MDH_RANDOM_KERNELS` (default 50) random
//! `mdh!` kernels drawn from the seed `MDH_RANDOM_SEED` (default
//! [`DEFAULT_SEED`]), each checked by the compiler before it is written,
//! then the kernels that once failed (`regressions/NAME.rs`, one kernel
//! `NAME` each), and `with_kernels!`, which lists them all.

#[path = "gen/body.rs"]
mod body;
#[path = "gen/kernel.rs"]
mod kernel;
#[path = "gen/rng.rs"]
mod rng;
#[path = "gen/scalar.rs"]
mod scalar;
#[path = "gen/types.rs"]
mod types;
#[path = "gen/views.rs"]
mod views;

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

/// The seed of a plain `cargo test` (scripts/test-all.sh draws a new one
/// per run).
const DEFAULT_SEED: u64 = 37;
const DEFAULT_COUNT: usize = 50;
/// The most points of a kernel's index space in one test case.
const BUDGET: usize = 4096;

fn env_number<T: std::str::FromStr>(var: &str, default: T) -> Result<T, String> {
    println!("cargo:rerun-if-env-changed={var}");
    match std::env::var(var) {
        Ok(s) if !s.trim().is_empty() => s
            .trim()
            .parse()
            .map_err(|_| format!("{var}={s:?} is not a number")),
        _ => Ok(default),
    }
}

/// Kernel `n` of `seed`: its own PRNG, so that it does not depend on the
/// count.
fn random_kernel(seed: u64, n: usize) -> Result<(String, String), String> {
    let name = format!("rk{n:02}");
    let mut rng = rng::Rng::new(seed.wrapping_add((n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    let source = kernel::kernel(&mut rng, &name);
    // A kernel the compiler rejects is a bug of the generator or of the
    // checker: either way the build says which and stops.
    mdh_core::compile_str(&source).map_err(|e| {
        format!("random kernel {name} of seed {seed} is rejected by mdh:\n{e}\n\n{source}")
    })?;
    Ok((name, source))
}

/// The regression kernels: `(NAME, path)` per `regressions/NAME.rs`, sorted.
fn regressions(dir: &Path) -> Result<Vec<(String, String)>, String> {
    println!("cargo:rerun-if-changed={}", dir.display());
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut found = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|x| x == "rs") {
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            // The tests name the kernel by its file.
            if !text.contains(&format!("kernel {name} {{")) {
                return Err(format!(
                    "{} must hold one kernel named `{name}` (`pub kernel {name} {{ … }}`)",
                    path.display()
                ));
            }
            found.push((name.to_string(), path.display().to_string()));
        }
    }
    found.sort();
    Ok(found)
}

fn generate() -> Result<(), String> {
    println!("cargo:rerun-if-changed=gen");
    let seed: u64 = env_number("MDH_RANDOM_SEED", DEFAULT_SEED)?;
    let count: usize = env_number("MDH_RANDOM_KERNELS", DEFAULT_COUNT)?;
    let mut out = format!(
        "/// The seed the random kernels were drawn from (`MDH_RANDOM_SEED`).\npub const SEED: u64 = {seed};\n\n"
    );
    let mut list = String::new();
    for n in 0..count {
        let (name, source) = random_kernel(seed, n)?;
        let _ = write!(
            out,
            "mdh::mdh! {{\n    /// Random kernel {n} of seed {seed}.\n    {source}\n}}\n\n"
        );
        let _ = write!(list, "{name}: {BUDGET}; ");
    }
    let dir = std::env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?;
    for (name, path) in regressions(&Path::new(&dir).join("regressions"))? {
        let _ = writeln!(out, "include!({path:?});");
        let _ = write!(list, "{name}: {BUDGET}; ");
    }
    let _ = write!(
        out,
        "\n/// Calls `$m! {{ kernel: budget; … }}` with every kernel of the crate and\n/// the most points of its index space a test case may have.\n#[macro_export]\nmacro_rules! with_kernels {{\n    ($m:ident) => {{\n        $m! {{ {list}}}\n    }};\n}}\n"
    );
    let out_dir = std::env::var("OUT_DIR").map_err(|e| e.to_string())?;
    let file = Path::new(&out_dir).join("kernels.rs");
    std::fs::write(&file, out).map_err(|e| format!("{}: {e}", file.display()))
}

fn main() -> ExitCode {
    match generate() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mdh-random-kernels: {e}");
            ExitCode::FAILURE
        }
    }
}
