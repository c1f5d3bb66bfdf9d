//! `mdh-tune`: finds the fastest plan of an `mdh!` kernel for a backend, a
//! device and sizes, by measuring real runs of the generated code, and
//! writes it where the macro reads it (`configs/<kernel>.yaml`).
//!
//! ```text
//! mdh-tune --manifest-path CRATE/Cargo.toml --kernel NAME --backend cpu \
//!          --size I=1024,K=4096 [--budget 5m | --evaluations N] [--out configs/] [--resume]
//! ```
//!
//! The search space is the paper's Table 1 parameters of the backend's ASM
//! ([`space`]); an ensemble of search techniques picked by an AUC bandit
//! proposes candidates ([`search`]); candidates that an analytic lower bound
//! shows cannot beat the best are pruned ([`bound`]); the others are built
//! in batches into a scratch crate and timed there, each checked against
//! the reference interpreter ([`scratch`]). The default plan is always the
//! first candidate, so the result is never slower than it.

mod bound;
mod log;
mod plot;
mod scratch;
mod search;
mod source;
mod space;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use mdh_core::config::{cpu_entry_yaml, merge_cpu_entry, yaml_string};
use mdh_core::desc::KernelDesc;
use mdh_core::plan::{elem_bytes, CpuPlan};
use mdh_core::Kernel;

use log::{Candidate, Log, Record, Start, Status};
use search::{Ensemble, Point};
use space::CpuSpace;

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
    /// Candidates built and timed together (one build per batch).
    #[arg(long, default_value_t = 8)]
    batch: usize,
    /// Seed of the search.
    #[arg(long, default_value_t = 1)]
    seed: u64,
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
fn parse_sizes(k: &Kernel, s: Option<&str>) -> Result<Vec<usize>, String> {
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

/// When to stop.
enum Budget {
    Time(Duration),
    Evaluations(usize),
}

impl Budget {
    fn describe(&self) -> String {
        match self {
            Budget::Time(d) => format!("{}s", d.as_secs_f64()),
            Budget::Evaluations(n) => format!("{n} evaluations"),
        }
    }
}

fn run(args: Args) -> Result<(), String> {
    let manifest = std::fs::canonicalize(&args.manifest_path).map_err(|e| {
        format!("--manifest-path {}: {e}; point it at the Cargo.toml of the crate that defines the kernel", args.manifest_path.display())
    })?;
    let crate_dir = manifest.parent().unwrap_or(Path::new(".")).to_path_buf();
    let found = source::find(&crate_dir, args.kernel.as_deref())?;
    let k = &found.kernel;
    let sizes = parse_sizes(k, args.size.as_deref())?;
    if args.backend != Backend::Cpu {
        let name = args
            .backend
            .to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string());
        return Err(format!(
            "--backend {name}: this version of mdh-tune tunes CPU plans only; use --backend cpu (GPU plans are written by hand in configs/<kernel>.yaml for now)"
        ));
    }
    let budget = match (&args.budget, args.evaluations) {
        (_, Some(0)) => return Err("--evaluations must be at least 1 (the default plan)".into()),
        (_, Some(n)) => Budget::Evaluations(n),
        (Some(b), None) => Budget::Time(parse_duration(b)?),
        (None, None) => Budget::Time(Duration::from_secs(300)),
    };
    let out_dir = match &args.out {
        Some(d) => d.clone(),
        None => default_out(&k.name.to_string(), &crate_dir)?,
    };
    tune_cpu(&args, &manifest, &found, &sizes, &budget, &out_dir)
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

/// Candidates in the first batch under a time budget (the default plan and
/// its first competitors), before the cost of one is known.
const FIRST_BATCH: usize = 4;

/// A candidate ready to measure.
struct Pending {
    /// The technique that proposed it (`None`: the default plan).
    technique: Option<&'static str>,
    point: Option<Point>,
    plan: CpuPlan,
    bound: f64,
}

/// The tuning state: the search, what was measured, the log.
struct Tuning<'a> {
    k: &'a Kernel,
    space: CpuSpace,
    ensemble: Ensemble,
    /// Every plan seen, with its cost (`INFINITY` unless it ran correctly).
    seen: HashMap<CpuPlan, f64>,
    /// Measured candidates in order: (time or INFINITY), for the plot.
    costs: Vec<f64>,
    best: Option<(CpuPlan, f64)>,
    default_time: Option<f64>,
    log: Log,
    input_bytes: f64,
    machine: bound::Machine,
}

impl Tuning<'_> {
    fn lower_bound(&self, plan: &CpuPlan) -> f64 {
        bound::lower_bound(
            self.k,
            plan,
            &self.space.extents,
            self.input_bytes,
            &self.machine,
        )
    }

    /// Records a finished candidate: log, search, best.
    fn record(&mut self, c: Candidate) -> Result<(), String> {
        self.log.append(&Record::Candidate(c.clone()))?;
        self.absorb(&c);
        Ok(())
    }

    /// Takes a candidate (new or from a resumed log) into the state.
    fn absorb(&mut self, c: &Candidate) {
        let cost = match c.status {
            Status::Ok => c.time_s.unwrap_or(f64::INFINITY),
            // Never measured: as good as its bound, which lost already.
            Status::Pruned => c.lower_bound_s,
            Status::Wrong | Status::Failed => f64::INFINITY,
        };
        self.seen.insert(c.plan.clone(), cost);
        if c.status != Status::Pruned {
            self.costs.push(cost);
        }
        if let Some(p) = &c.point {
            let t = c
                .technique
                .as_deref()
                .and_then(|t| self.ensemble.technique(t));
            self.ensemble.observe(t, p.clone(), cost);
        }
        if c.status == Status::Ok {
            if c.technique.is_none() {
                self.default_time = Some(cost);
            }
            if self.best.as_ref().is_none_or(|b| cost < b.1) {
                self.best = Some((c.plan.clone(), cost));
            }
        }
    }

    /// The next `n` new candidates: proposed, repaired to valid plans,
    /// deduplicated; hopeless ones are logged as pruned.
    fn propose(&mut self, n: usize, elapsed: f64) -> Result<Vec<Pending>, String> {
        let mut out: Vec<Pending> = Vec::new();
        // A small space may run out of new plans.
        for _ in 0..50 * n {
            if out.len() == n {
                break;
            }
            let (t, p) = self.ensemble.propose();
            let p = self.space.repair(p);
            let plan = self.space.decode(&p);
            if let Some(&cost) = self.seen.get(&plan) {
                // Known: the technique learns its cost again, nothing runs.
                self.ensemble.observe(Some(t), p, cost);
                continue;
            }
            if out.iter().any(|q| q.plan == plan) {
                continue;
            }
            debug_assert_eq!(plan.validate(self.k), Ok(()));
            let bound = self.lower_bound(&plan);
            if self.best.as_ref().is_some_and(|b| bound >= b.1) {
                self.record(Candidate {
                    technique: Some(self.ensemble.techniques[t].name().into()),
                    point: Some(p),
                    plan,
                    status: Status::Pruned,
                    time_s: None,
                    lower_bound_s: bound,
                    error: None,
                    elapsed_s: elapsed,
                })?;
                continue;
            }
            out.push(Pending {
                technique: Some(self.ensemble.techniques[t].name()),
                point: Some(p),
                plan,
                bound,
            });
        }
        Ok(out)
    }
}

fn ms(t: f64) -> String {
    format!("{:.3} ms", t * 1e3)
}

fn tune_cpu(
    args: &Args,
    manifest: &Path,
    found: &source::Found,
    sizes: &[usize],
    budget: &Budget,
    out_dir: &Path,
) -> Result<(), String> {
    let k = &found.kernel;
    let device = mdh::cpu::cpu_name().to_string();
    let space = CpuSpace::new(k, sizes)?;
    let desc = KernelDesc::from_kernel(k);
    let input_bytes: f64 = k
        .inputs
        .iter()
        .zip(desc.inputs.iter())
        .map(|(b, d)| {
            let n: f64 = d
                .shape
                .iter()
                .map(|c| KernelDesc::eval_size(c, sizes).unwrap_or(0) as f64)
                .product();
            n * elem_bytes(b.ty) as f64
        })
        .sum();
    let at = k
        .size_params
        .iter()
        .zip(sizes)
        .map(|(p, v)| format!("{p}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    eprintln!(
        "tuning `{}` ({}) for {at} on {device}: {} parameters, ≈{:.2e} configurations",
        k.name,
        found.file.display(),
        space.params.len(),
        space.size()
    );
    let ws = scratch::Workspace::of(manifest)?;
    let scratch = scratch::Scratch::new(&ws, k, &found.tokens, sizes)?;
    let tag: String = k
        .size_params
        .iter()
        .zip(sizes)
        .map(|(p, v)| format!("-{p}{v}"))
        .collect();
    let log_path = scratch.dir().join(format!("tune-cpu{tag}.jsonl"));
    let reference = scratch.dir().join(format!("reference{tag}.txt"));
    let start = Start {
        kernel: k.name.to_string(),
        backend: "cpu".into(),
        device: device.clone(),
        sizes: sizes.to_vec(),
    };
    let (log, done) = Log::open(&log_path, &start, args.resume)?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut ensemble = Ensemble::new(space.cards(), args.seed);
    let sampler = space.clone();
    ensemble.history.sampler = Some(Box::new(move |rng| sampler.sample(rng)));
    ensemble.history.start = space.encode(&CpuPlan::default_for(k));
    let mut t = Tuning {
        k,
        ensemble,
        space,
        seen: HashMap::new(),
        costs: Vec::new(),
        best: None,
        default_time: None,
        log,
        input_bytes,
        machine: bound::Machine { threads },
    };
    let spent_before = done.iter().map(|c| c.elapsed_s).fold(0.0, f64::max);
    for c in &done {
        t.absorb(c);
    }
    if !done.is_empty() {
        eprintln!(
            "resumed {} candidates from {}",
            done.len(),
            log_path.display()
        );
    }

    // The dependencies build once, before the clock starts.
    eprintln!(
        "building the scratch crate's dependencies in {} (once; not counted in the budget)",
        ws.target_dir.join("mdh-tune").display()
    );
    scratch.build(&[])?;

    let clock = Instant::now();
    let elapsed = || spent_before + clock.elapsed().as_secs_f64();
    let bar = match budget {
        Budget::Time(d) => ProgressBar::new(d.as_secs()),
        Budget::Evaluations(n) => ProgressBar::new(*n as u64),
    };
    let unit = match budget {
        Budget::Time(_) => "s",
        Budget::Evaluations(_) => "evaluations",
    };
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} [{{elapsed_precise}}] [{{bar:30}}] {{pos}}/{{len}} {unit} ETA {{eta}} | {{msg}}"
        ))
        .map_err(|e| e.to_string())?
        .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let update = |bar: &ProgressBar, t: &Tuning| {
        match budget {
            Budget::Time(d) => bar.set_position((elapsed() as u64).min(d.as_secs())),
            Budget::Evaluations(_) => bar.set_position(t.costs.len() as u64),
        }
        let best = t.best.as_ref().map_or("none yet".into(), |b| ms(b.1));
        bar.set_message(format!("{} measured, best {best}", t.costs.len()));
    };
    update(&bar, &t);

    // Seconds per candidate (build and run) in the last batch: sizes the
    // next batch to what the time budget has left.
    let mut per_candidate_s: Option<f64> = None;
    loop {
        let left = match budget {
            Budget::Time(d) => {
                let left = d.as_secs_f64() - elapsed();
                let fit = match per_candidate_s {
                    // A first, small batch measures the cost of one.
                    None => FIRST_BATCH,
                    // Rounded: a batch may overrun the budget by half a candidate.
                    Some(c) => ((left / c).round().max(0.0)) as usize,
                };
                if left <= 0.0 || fit == 0 {
                    break;
                }
                fit.min(args.batch)
            }
            Budget::Evaluations(n) => match n.saturating_sub(t.costs.len()) {
                0 => break,
                left => left.min(args.batch),
            },
        };
        let mut batch = Vec::new();
        if t.default_time.is_none() && !t.seen.contains_key(&CpuPlan::default_for(k)) {
            let plan = CpuPlan::default_for(k);
            batch.push(Pending {
                technique: None,
                // On the grid, the default seeds the local searches.
                point: t.space.encode(&plan),
                bound: t.lower_bound(&plan),
                plan,
            });
        }
        let more = left - batch.len();
        batch.extend(t.propose(more, elapsed())?);
        if batch.is_empty() {
            bar.println("the search space is exhausted");
            break;
        }
        let began = Instant::now();
        let plans: Vec<CpuPlan> = batch.iter().map(|p| p.plan.clone()).collect();
        let candidate = |p: &Pending, status, time_s, error, elapsed_s| Candidate {
            technique: p.technique.map(str::to_string),
            point: p.point.clone(),
            plan: p.plan.clone(),
            status,
            time_s,
            lower_bound_s: p.bound,
            error,
            elapsed_s,
        };
        match scratch.build(&plans) {
            Err(e) => {
                if batch[0].technique.is_none() {
                    return Err(e);
                }
                bar.println(format!(
                    "a batch failed to build; its candidates are recorded as failed:\n{e}"
                ));
                let failed: Vec<Candidate> = batch
                    .iter()
                    .map(|p| candidate(p, Status::Failed, None, Some(e.clone()), elapsed()))
                    .collect();
                for c in failed {
                    t.record(c)?;
                }
            }
            Ok(binary) => {
                // A candidate 3× slower than the best in its checked run is
                // not repeated.
                let slow = t.best.as_ref().map_or(f64::INFINITY, |b| 3.0 * b.1);
                let mut results = Vec::new();
                scratch.run(&binary, slow, &reference, |m| {
                    results.push(m);
                    Ok(())
                })?;
                let mut measured = vec![false; batch.len()];
                for m in results {
                    let i: usize = m.kernel.trim_start_matches('c').parse().map_err(|_| {
                        format!("the harness reported an unknown kernel `{}`", m.kernel)
                    })?;
                    let status = match m.status.as_str() {
                        "ok" => Status::Ok,
                        "wrong" => Status::Wrong,
                        _ => Status::Failed,
                    };
                    if status == Status::Wrong {
                        bar.println(format!(
                            "candidate {:?} computes wrong results: {}",
                            batch[i].plan,
                            m.error.as_deref().unwrap_or("")
                        ));
                    }
                    measured[i] = true;
                    let c = candidate(&batch[i], status, m.time_s, m.error, elapsed());
                    t.record(c)?;
                    update(&bar, &t);
                }
                if let Some(i) = measured.iter().position(|m| !m) {
                    return Err(format!(
                        "the harness did not report candidate c{i}; see {}",
                        scratch.dir().display()
                    ));
                }
            }
        }
        let took = began.elapsed().as_secs_f64();
        per_candidate_s = Some(took / batch.len() as f64);
        bar.println(format!(
            "batch of {}: built and measured in {took:.0}s",
            batch.len()
        ));
        update(&bar, &t);
        if t.default_time.is_none() {
            return Err(
                "the default plan did not run correctly at these sizes; see the tuning log".into(),
            );
        }
    }
    bar.finish_and_clear();

    let (best, best_time) = t
        .best
        .clone()
        .ok_or("no candidate ran correctly; see the tuning log")?;
    let default_time = t.default_time.ok_or("the default plan was not measured")?;
    let speedup = default_time / best_time;
    let measured = t.costs.len();
    let date = utc_date();
    let provenance = [
        ("tuner", yaml_string("mdh-tune")),
        ("device", yaml_string(&device)),
        ("date", yaml_string(&date)),
        ("budget", yaml_string(&budget.describe())),
        ("evaluations", measured.to_string()),
        ("time_s", format!("{best_time:e}")),
        ("default_time_s", format!("{default_time:e}")),
        ("speedup_over_default", format!("{speedup:.3}")),
    ];
    let entry = cpu_entry_yaml(k, &device, Some(sizes), &best, &provenance);
    let path = out_dir.join(format!("{}.yaml", k.name));
    let old = match std::fs::read_to_string(&path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let text =
        merge_cpu_entry(k, &path, old.as_deref(), &device, sizes, &entry).map_err(|e| e.0)?;
    std::fs::create_dir_all(out_dir)
        .map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;

    let mut best_so_far = Vec::with_capacity(measured);
    let mut b = f64::INFINITY;
    for &c in &t.costs {
        b = b.min(c);
        best_so_far.push(b);
    }
    let png = scratch.dir().join(format!("tune-cpu{tag}.png"));
    plot::best_over_evaluations(
        &png,
        &format!("mdh-tune: {} on the CPU ({device}) at {at}", k.name),
        &best_so_far,
    )?;
    let uses: Vec<String> = t
        .ensemble
        .techniques
        .iter()
        .zip(t.ensemble.bandit.uses())
        .map(|(tq, u)| format!("{} {u}", tq.name()))
        .collect();
    eprintln!(
        "{measured} candidates measured in {:.0}s (proposals by technique: {}); log: {}; plot: {}",
        elapsed(),
        uses.join(", "),
        t.log.path().display(),
        png.display()
    );
    eprintln!(
        "default {}, best {}: wrote {}",
        ms(default_time),
        ms(best_time),
        path.display()
    );
    println!("speedup over default: {speedup:.3}");
    Ok(())
}

/// Today's date (UTC) as `YYYY-MM-DD`.
fn utc_date() -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
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
        let k = crate::space::tests::matvec();
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
    fn utc_dates_are_civil_dates() {
        let d = utc_date();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"), "{d}");
    }
}
