//! `mdh-tune`: finds the fastest plan of an `mdh!` kernel for a backend, a
//! device and sizes, by measuring real runs of the generated code, and
//! writes it where the macro reads it (`configs/<kernel>.yaml`).
//!
//! ```text
//! mdh-tune --manifest-path CRATE/Cargo.toml --kernel NAME --backend cpu|opencl|cuda \
//!          --size I=1024,K=4096 [--device NAME_OR_INDEX] [--budget 5m | --evaluations N] \
//!          [--out configs/] [--resume]
//! mdh-tune ... --backend cpu --ranks N    # the node layer (`nod`) under mpirun
//! ```
//!
//! The search space is the paper's Table 1 parameters of the backend's ASM
//! ([`space`], [`mdh::gpu::space`]); an ensemble of search techniques picked by an
//! AUC bandit proposes candidates ([`search`]). Candidates that an analytic
//! lower bound shows cannot beat the best are pruned ([`bound`]); the
//! engine that runs the search and writes the entry is [`tuning`]. CPU
//! candidates are built in batches into a scratch crate and timed there
//! ([`cpu`], [`scratch`]). GPU candidates need no build: their source is
//! completed, compiled by the runtime and timed in this process ([`gpu`]).
//! Every result is checked before it is timed. The default plan is always
//! the first candidate, so the result is never slower than it. This file is
//! the command line: it parses the flags and hands over to a driver.

mod bound;
mod cpu;
mod gpu;
mod gpu_model;
mod log;
mod nod;
mod plot;
mod reference;
mod scratch;
mod source;
mod space;
mod tuning;

use mdh::search;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use mdh_core::Checked;

use tuning::{Budget, Options, Target};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Backend {
    Cpu,
    Opencl,
    Cuda,
}

/// Auto-tunes an mdh kernel: searches the space of its plans, measures real
/// runs, and merges the best plan into `<out>/<kernel>.yaml`.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The Cargo.toml of the crate that defines the kernel with `mdh!`.
    #[arg(long, default_value = "Cargo.toml")]
    manifest_path: PathBuf,
    /// The kernel to tune; without it, the crate's kernels are listed.
    #[arg(long)]
    kernel: Option<String>,
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Backend,
    /// Every size parameter's value, e.g. `I=1024,K=4096`.
    #[arg(long)]
    size: Option<String>,
    /// Tuning time, e.g. `90s`, `5m`, `1h` (the one-time build of the
    /// scratch crate's dependencies is not counted).
    #[arg(long, conflicts_with = "evaluations")]
    budget: Option<String>,
    /// Number of candidates to measure instead of a time budget.
    #[arg(long)]
    evaluations: Option<usize>,
    /// The directory of the config files (default: where the macro finds
    /// the kernel's config now, else the nearest existing `configs/` from
    /// the crate up to its workspace root, else `configs/` in the crate).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Continue the tuning log of an interrupted run with the same kernel,
    /// backend, device and sizes.
    #[arg(long)]
    resume: bool,
    /// Candidates built and timed together (CPU: one build per batch).
    #[arg(long, default_value_t = 8)]
    batch: usize,
    /// Seed of the search.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The GPU to tune for (`opencl`, `cuda`): a part of its name or its
    /// index (default: the first).
    #[arg(long)]
    device: Option<String>,
    /// Tune nothing if the config in `--out` already has an entry for the
    /// backend, this device (or `*`) and exactly these sizes.
    #[arg(long)]
    skip_tuned: bool,
    /// Tune the node layer (`nod`, the `mpi` feature) for this many MPI
    /// ranks instead of the CPU plan: every split is run under `mpirun -np
    /// RANKS` (which must be on PATH) with the CPU plan that runs today.
    #[arg(long)]
    ranks: Option<usize>,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `90s`, `5m`, `1h`, or plain seconds.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| c.is_alphabetic()).unwrap_or(s.len()));
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("--budget `{s}` is not a duration; write e.g. 90s, 5m or 1h"))?;
    let secs = match unit {
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => {
            return Err(format!(
                "--budget `{s}`: unknown unit `{unit}`; use s, m or h"
            ))
        }
    };
    Duration::try_from_secs_f64(secs)
        .map_err(|_| format!("--budget `{s}` must be a positive duration"))
}

/// `I=1024,K=4096` in the kernel's size-parameter order.
fn parse_sizes(k: &Checked, s: Option<&str>) -> Result<Vec<usize>, String> {
    let names: Vec<String> = k.size_params.iter().map(|p| p.to_string()).collect();
    let example = names
        .iter()
        .map(|n| format!("{n}=1024"))
        .collect::<Vec<_>>()
        .join(",");
    let s = s.ok_or_else(|| format!("give the sizes to tune for, e.g. --size {example}"))?;
    let mut given = HashMap::new();
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (n, v) = part
            .split_once('=')
            .ok_or_else(|| format!("--size: `{part}` is not NAME=VALUE; write e.g. {example}"))?;
        let v: usize = v
            .trim()
            .parse()
            .map_err(|_| format!("--size: `{part}`: the value must be a non-negative integer"))?;
        if !names.iter().any(|x| x == n.trim()) {
            return Err(format!(
                "--size: `{}` is not a size parameter of `{}`; they are {}",
                n.trim(),
                k.name,
                names.join(", ")
            ));
        }
        given.insert(n.trim().to_string(), v);
    }
    names
        .iter()
        .map(|n| {
            given
                .get(n)
                .copied()
                .ok_or_else(|| format!("--size lacks `{n}`; give every size parameter: {example}"))
        })
        .collect()
}

fn run(args: Args) -> Result<(), String> {
    let manifest = std::fs::canonicalize(&args.manifest_path).map_err(|e| {
        format!("--manifest-path {}: {e}; point it at the Cargo.toml of the crate that defines the kernel", args.manifest_path.display())
    })?;
    let crate_dir = manifest.parent().unwrap_or(Path::new(".")).to_path_buf();
    let found = source::find(&crate_dir, args.kernel.as_deref())?;
    let k = &found.kernel;
    let sizes = parse_sizes(k, args.size.as_deref())?;
    let opts = options(&args)?;
    let out_dir = match &args.out {
        Some(d) => d.clone(),
        None => default_out(&k.name.to_string(), &crate_dir)?,
    };
    let backend = match args.backend {
        Backend::Cpu => "cpu",
        Backend::Opencl => "opencl",
        Backend::Cuda => "cuda",
    };
    let mut target = Target {
        source: Some(found.file.clone()),
        ..Target::new(k, &sizes, backend, out_dir)
    };
    // Logs and plots of GPU runs go where the CPU's scratch crate is; GPU
    // tuning builds nothing, so it does not need cargo to find the place.
    let work = || -> Result<PathBuf, String> {
        let target = match std::env::var_os("CARGO_TARGET_DIR") {
            Some(d) => PathBuf::from(d),
            None => crate_dir
                .ancestors()
                .find(|d| mdh_core::config::is_workspace_root(d))
                .unwrap_or(&crate_dir)
                .join("target"),
        };
        Ok(target.join("mdh-tune").join(k.name.to_string()))
    };
    match (args.backend, args.ranks) {
        (Backend::Cpu, Some(ranks)) => nod::tune(&manifest, &found, &mut target, ranks),
        (Backend::Cpu, None) => cpu::tune(&opts, &manifest, &found, &mut target),
        (_, Some(_)) => {
            Err("--ranks tunes the node layer of CPU kernels; use it with --backend cpu".into())
        }
        (Backend::Opencl, None) => {
            let dev = gpu::open_opencl(args.device.as_deref())?;
            gpu::tune(&opts, &found, &mut target, &dev, &work()?)
        }
        (Backend::Cuda, None) => {
            let dev = gpu::open_cuda(args.device.as_deref())?;
            gpu::tune(&opts, &found, &mut target, &dev, &work()?)
        }
    }
}

/// The engine's options from the command line.
fn options(args: &Args) -> Result<Options, String> {
    let budget = match (&args.budget, args.evaluations) {
        (_, Some(0)) => return Err("--evaluations must be at least 1 (the default plan)".into()),
        (_, Some(n)) => Budget::Evaluations(n),
        (Some(b), None) => Budget::Time(parse_duration(b)?),
        (None, None) => Budget::Time(Duration::from_secs(300)),
    };
    Ok(Options {
        budget,
        batch: args.batch,
        seed: args.seed,
        resume: args.resume,
        skip_tuned: args.skip_tuned,
    })
}

/// Where the tuned entry goes without `--out`: next to the config the
/// macro reads now (so the new entry joins it instead of shadowing it).
fn default_out(kernel: &str, crate_dir: &Path) -> Result<PathBuf, String> {
    if let Some(file) = mdh_core::config::find(kernel, Some(crate_dir)).map_err(|e| e.0)? {
        return Ok(file.parent().unwrap_or(Path::new(".")).to_path_buf());
    }
    let root = crate_dir
        .ancestors()
        .find(|d| mdh_core::config::is_workspace_root(d))
        .unwrap_or(crate_dir);
    Ok(crate_dir
        .ancestors()
        .take_while(|d| d.starts_with(root))
        .map(|d| d.join("configs"))
        .find(|d| d.is_dir())
        .unwrap_or_else(|| crate_dir.join("configs")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_parse_with_helpful_errors() {
        assert_eq!(parse_duration("60s").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("5 parsecs")
            .unwrap_err()
            .contains("unknown unit"));
        let k = mdh_core::fixtures::matvec();
        assert_eq!(parse_sizes(&k, Some("K=8,I=4")).unwrap(), vec![4, 8]);
        assert!(parse_sizes(&k, Some("I=4"))
            .unwrap_err()
            .contains("lacks `K`"));
        assert!(parse_sizes(&k, Some("I=4,K=8,J=2"))
            .unwrap_err()
            .contains("not a size parameter"));
        assert!(parse_sizes(&k, None)
            .unwrap_err()
            .contains("--size I=1024,K=1024"));
    }

    #[test]
    fn the_options_are_the_flags() {
        let opts = |flags: &[&str]| options(&Args::parse_from([&["mdh-tune"], flags].concat()));
        let o = opts(&["--skip-tuned", "--evaluations", "3", "--batch", "2"]).unwrap();
        assert!(o.skip_tuned && !o.resume && o.batch == 2 && o.seed == 1);
        assert!(matches!(o.budget, Budget::Evaluations(3)));
        let o = opts(&["--budget", "90s", "--resume", "--seed", "7"]).unwrap();
        assert!(!o.skip_tuned && o.resume && o.batch == 8 && o.seed == 7);
        assert!(matches!(o.budget, Budget::Time(d) if d == Duration::from_secs(90)));
        assert!(matches!(opts(&[]).unwrap().budget, Budget::Time(d) if d.as_secs() == 300));
        assert!(opts(&["--evaluations", "0"]).is_err());
    }
}
