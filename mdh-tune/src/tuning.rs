//! The tuning engine that both drivers ([`crate::cpu`], [`crate::gpu`])
//! share: what a run is for ([`Target`]), the search loop over a
//! [`Space`] that proposes, prunes and records candidates ([`Tuning`]),
//! the config's entries already there (`--skip-tuned`, the configured
//! plan), and writing the best plan's entry once an interleaved re-timing
//! shows that it wins beyond the noise ([`verdict`]). A driver gives it a
//! way to measure a batch of candidates, to re-time two plans in turns,
//! and to render an entry.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use mdh::machine::{Fit, Host, Machine};
use mdh_core::backend::Backend;
use mdh_core::config::{machine_yaml, merge_entry, yaml_string, Entries, EntryKey};
use mdh_core::Checked;

use crate::log::{Candidate, Log, Record, Start, Status};
use crate::plot;
pub use crate::search::driver::Budget;
use crate::search::driver::{Measure, Origin, Proposal, Search, Stop};
use crate::search::space::Space;
use crate::search::verdict::ms;
pub use crate::search::verdict::{verdict, RETIME_ROUNDS};
use crate::search::Point;

/// What the command line asks of a run, whatever the backend.
pub struct Options {
    pub budget: Budget,
    /// Candidates measured together (CPU: one build per batch).
    pub batch: usize,
    pub seed: u64,
    /// Continue the log of an interrupted run.
    pub resume: bool,
    /// Tune nothing where the config already has an entry for the target.
    pub skip_tuned: bool,
}

/// A candidate ready to measure.
pub struct Pending<P> {
    /// The technique that proposed it (`None`: the default plan).
    pub technique: Option<&'static str>,
    /// Its point in the search (for a plan off the grid, the default's or
    /// the config's, the nearest one: the searches learn its cost there).
    point: Option<Point>,
    pub plan: P,
    bound: f64,
}

impl<P: Clone> Pending<P> {
    /// Its log record after measuring.
    pub fn candidate(
        &self,
        status: Status,
        time_s: Option<f64>,
        error: Option<String>,
        elapsed_s: f64,
    ) -> Candidate<P> {
        Candidate {
            technique: self.technique.map(str::to_string),
            point: self.point.clone(),
            plan: self.plan.clone(),
            status,
            time_s,
            lower_bound_s: self.bound,
            error,
            model: None,
            elapsed_s,
        }
    }
}

/// An analytic lower bound of a plan's run time in seconds.
pub type LowerBound<'a, P> = Box<dyn Fn(&P) -> f64 + 'a>;

/// The seeds of a search, by index ([`Origin::Seed`]): the default plan,
/// then the configured one.
const DEFAULT_SEED: usize = 0;

/// The tuning state: the search (shared with run-time tuning,
/// [`Search`]), the log and the progress.
pub struct Tuning<'a, S: Space> {
    pub search: Search<S, S::Plan>,
    rec: Recorder<S::Plan>,
    /// The default plan and the plan the config dispatches to at these
    /// sizes (`None`: the default runs), as given to [`Tuning::search`].
    default_plan: Option<S::Plan>,
    configured: Option<S::Plan>,
    /// An analytic lower bound of a plan's time (0: none).
    bound: LowerBound<'a, S::Plan>,
    budget: &'a Budget,
}

/// What a driver's measurements are recorded into: the log, the progress
/// bar, and the results of the batch being measured.
pub struct Recorder<P> {
    log: Log,
    pub bar: ProgressBar,
    budget: Budget,
    clock: Instant,
    /// Seconds of the budget spent before a resume.
    spent_before: f64,
    /// Candidates measured and the best time (`INFINITY`: none), for the
    /// progress and the drivers' cut-offs.
    measured: usize,
    best_s: f64,
    default_time: Option<f64>,
    /// The batch's results: each candidate recorded, with its cost.
    results: Vec<(P, f64)>,
}

impl<P: Clone + PartialEq + serde::Serialize> Recorder<P> {
    /// Prints a line above the progress bar, or on stderr where there is
    /// no bar (not a terminal: a script's log).
    pub fn say(&self, msg: impl AsRef<str>) {
        if self.bar.is_hidden() {
            eprintln!("{}", msg.as_ref());
        } else {
            self.bar.println(msg);
        }
    }

    /// Seconds of the budget spent.
    pub fn elapsed(&self) -> f64 {
        self.spent_before + self.clock.elapsed().as_secs_f64()
    }

    /// The best time so far (`INFINITY`: none).
    pub fn best_s(&self) -> f64 {
        self.best_s
    }

    fn update(&self) {
        match self.budget {
            Budget::Time(d) => self
                .bar
                .set_position((self.elapsed() as u64).min(d.as_secs())),
            Budget::Evaluations(_) => self.bar.set_position(self.measured as u64),
        }
        let best = match self.best_s {
            b if b.is_finite() => ms(b),
            _ => "none yet".into(),
        };
        self.bar
            .set_message(format!("{} measured, best {best}", self.measured));
    }

    /// Records a finished candidate: log, progress, the batch's results.
    pub fn record(&mut self, c: Candidate<P>) -> Result<(), String> {
        self.log.append(&Record::Candidate(c.clone()))?;
        if c.status != Status::Pruned {
            let cost = cost_of(&c);
            self.measured += 1;
            self.best_s = self.best_s.min(cost);
            if c.technique.is_none() && c.status == Status::Ok {
                self.default_time = Some(cost);
            }
            self.results.push((c.plan, cost));
        }
        self.update();
        Ok(())
    }
}

/// A candidate's cost: its time, `INFINITY` unless it ran correctly, its
/// bound where it was pruned (never measured: as good as its bound, which
/// lost already).
fn cost_of<P>(c: &Candidate<P>) -> f64 {
    match c.status {
        Status::Ok => c.time_s.unwrap_or(f64::INFINITY),
        Status::Pruned => c.lower_bound_s,
        Status::Wrong | Status::Failed => f64::INFINITY,
    }
}

impl<'a, S: Space> Tuning<'a, S>
where
    S::Plan: serde::Serialize + serde::de::DeserializeOwned,
{
    /// Opens the log of `target` in `dir` (resuming it when asked) and
    /// takes in what it holds.
    pub fn new(
        space: S,
        default: &S::Plan,
        target: &Target,
        dir: &Path,
        opts: &'a Options,
        bound: LowerBound<'a, S::Plan>,
    ) -> Result<Tuning<'a, S>, String> {
        let budget = &opts.budget;
        let log_path = target.file(dir, "jsonl");
        let (log, mut done) = Log::open::<S::Plan>(&log_path, &target.start(), opts.resume)?;
        for c in &mut done {
            c.plan = space.complete(c.plan.clone());
        }
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
        let spent_before = done.iter().map(|c| c.elapsed_s).fold(0.0, f64::max);
        let mut search = Search::new(space, default, opts.seed, S::Plan::clone);
        search.spent_before(spent_before);
        let mut default_time = None;
        for c in &done {
            let technique = c
                .technique
                .as_deref()
                .and_then(|t| search.ensemble.technique(t));
            let cost = cost_of(c);
            search.absorb(
                technique,
                c.point.clone(),
                &c.plan,
                cost,
                c.status != Status::Pruned,
            );
            if c.technique.is_none() && c.status == Status::Ok {
                default_time = Some(cost);
            }
        }
        if !done.is_empty() {
            eprintln!(
                "resumed {} candidates from {}",
                done.len(),
                log_path.display()
            );
        }
        let rec = Recorder {
            log,
            bar,
            budget: *budget,
            clock: Instant::now(),
            spent_before,
            measured: search.costs.len(),
            best_s: search.best_s(),
            default_time,
            results: Vec::new(),
        };
        Ok(Tuning {
            search,
            rec,
            default_plan: None,
            configured: None,
            bound,
            budget,
        })
    }

    /// Prints a line above the progress bar (see [`Recorder::say`]).
    pub fn say(&self, msg: impl AsRef<str>) {
        self.rec.say(msg);
    }

    /// The search: the default plan first, and `configured` (the plan the
    /// kernel's config already dispatches to at these sizes, if any, with
    /// technique `config`), so that the search starts from what runs now
    /// and never writes an entry slower than it; then batches of
    /// proposals (at most `batch`, fewer when the time budget is nearly
    /// spent; hopeless ones logged as pruned), each measured by `measure`,
    /// which records every candidate it is given.
    pub fn search(
        &mut self,
        default: S::Plan,
        configured: Option<S::Plan>,
        batch: usize,
        measure: impl FnMut(&mut Recorder<S::Plan>, &[Pending<S::Plan>]) -> Result<(), String>,
    ) -> Result<(), String> {
        self.default_plan = Some(default.clone());
        self.configured.clone_from(&configured);
        let mut seeds = vec![default];
        seeds.extend(configured.filter(|c| *c != seeds[DEFAULT_SEED]));
        self.rec.clock = Instant::now();
        self.rec.bar.enable_steady_tick(Duration::from_millis(200));
        self.rec.update();
        let names = self
            .search
            .ensemble
            .techniques
            .iter()
            .map(|t| t.name())
            .collect();
        let mut batches = Batches {
            rec: &mut self.rec,
            bound: &self.bound,
            names,
            measure,
        };
        if self.search.run(self.budget, batch, seeds, &mut batches)? == Stop::Exhausted {
            self.rec.say("the search space is exhausted");
        }
        self.rec.bar.finish_and_clear();
        Ok(())
    }

    /// Writes the best plan's entry (rendered by `entry` from the plan and
    /// the provenance) into `<out>/<kernel>.yaml`, unless it is the plan
    /// that runs there already ([`already_running`]) or, re-timed in turns
    /// with that plan by `retime` (samples of each, in that order), it
    /// does not win beyond the noise ([`verdict`]); plots the search, and
    /// prints the summary.
    pub fn finish(
        &self,
        target: &Target,
        retime: impl FnOnce(&S::Plan, &S::Plan) -> Result<(Vec<f64>, Vec<f64>), String>,
        entry: impl Fn(&S::Plan, &[(&str, String)]) -> String,
    ) -> Result<(), String> {
        let png = target.file(
            self.rec.log.path().parent().unwrap_or(Path::new(".")),
            "png",
        );
        let (best, best_time) = self
            .search
            .best
            .as_ref()
            .map(|b| (b.plan.clone(), b.cost))
            .ok_or("no candidate ran correctly; see the tuning log")?;
        let default_time = self
            .rec
            .default_time
            .ok_or("the default plan was not measured")?;
        let default_plan = self
            .default_plan
            .as_ref()
            .ok_or("the default plan was not measured")?;
        let speedup = default_time / best_time;
        let measured = self.search.costs.len();
        let date = utc_date();
        let k = target.k;
        let path = target.out_dir.join(format!("{}.yaml", k.name));
        let mut unchanged =
            already_running(&best, self.configured.as_ref(), default_plan, |a, b| {
                self.search.space.runs_alike(a, b)
            })
            .map(|what| format!("{what} is already the best found"));
        if unchanged.is_none() {
            // What runs today: the configured plan, else the default.
            let today = self.configured.as_ref().unwrap_or(default_plan);
            self.say(format!(
                "re-timing the best plan and the plan that runs today in turns ({RETIME_ROUNDS} rounds)"
            ));
            let (winner, now) = retime(&best, today)?;
            let v = verdict(&winner, &now);
            eprintln!("{}", v.why);
            if v.write {
                let mut provenance = vec![
                    ("tuner", yaml_string("mdh-tune")),
                    ("device", yaml_string(&target.device)),
                ];
                if let Some(m) = &target.machine {
                    provenance.push(("machine", machine_yaml(m)));
                }
                provenance.extend([
                    ("date", yaml_string(&date)),
                    ("budget", yaml_string(&self.budget.describe())),
                    ("evaluations", measured.to_string()),
                    ("time_s", format!("{best_time:e}")),
                    ("default_time_s", format!("{default_time:e}")),
                    ("speedup_over_default", format!("{speedup:.3}")),
                    ("retimed_speedup_over_today", format!("{:.3}", v.speedup)),
                ]);
                write_entry(target, &path, &entry(&best, &provenance))?;
            } else {
                unchanged = Some("the best plan does not win beyond the noise".into());
            }
        }

        let mut best_so_far = Vec::with_capacity(measured);
        let mut b = f64::INFINITY;
        for &c in &self.search.costs {
            b = b.min(c);
            best_so_far.push(b);
        }
        plot::best_over_evaluations(
            &png,
            &format!(
                "mdh-tune: {} on {} ({}) at {}",
                k.name, target.backend, target.device, target.at
            ),
            &best_so_far,
        )?;
        let uses: Vec<String> = self
            .search
            .ensemble
            .techniques
            .iter()
            .zip(self.search.ensemble.bandit.uses())
            .map(|(tq, u)| format!("{} {u}", tq.name()))
            .collect();
        eprintln!(
            "{measured} candidates measured in {:.0}s (proposals by technique: {}); log: {}; plot: {}",
            self.rec.elapsed(),
            uses.join(", "),
            self.rec.log.path().display(),
            png.display()
        );
        let times = format!("default {}, best {}", ms(default_time), ms(best_time));
        match unchanged {
            Some(what) => {
                eprintln!("{times}");
                println!("{what}: config unchanged ({} not written)", path.display());
            }
            None => eprintln!("{times}: wrote {}", path.display()),
        }
        println!("speedup over default: {speedup:.3}");
        Ok(())
    }
}

/// The tuner's side of the shared loop: candidates logged with their
/// technique's name and bound, measured in batches by a driver's
/// `measure`, which records each into the [`Recorder`].
struct Batches<'t, 'a, P, F> {
    rec: &'t mut Recorder<P>,
    bound: &'t LowerBound<'a, P>,
    /// The ensemble's techniques' names, by index.
    names: Vec<&'static str>,
    measure: F,
}

impl<P, F> Batches<'_, '_, P, F> {
    fn pending(&self, c: &Proposal<P>, bound: f64) -> Pending<P>
    where
        P: Clone,
    {
        Pending {
            technique: match c.origin {
                Origin::Seed(DEFAULT_SEED) => None,
                Origin::Seed(_) => Some(CONFIGURED),
                Origin::Technique(t) => Some(self.names[t]),
            },
            point: Some(c.point.clone()),
            plan: c.plan.clone(),
            bound,
        }
    }
}

impl<P, F> Measure<P> for Batches<'_, '_, P, F>
where
    P: Clone + PartialEq + serde::Serialize,
    F: FnMut(&mut Recorder<P>, &[Pending<P>]) -> Result<(), String>,
{
    type Error = String;

    fn bound(&mut self, plan: &P) -> f64 {
        (self.bound)(plan)
    }

    fn pruned(&mut self, c: &Proposal<P>, bound: f64) -> Result<(), String> {
        let c = self
            .pending(c, bound)
            .candidate(Status::Pruned, None, None, self.rec.elapsed());
        self.rec.record(c)
    }

    fn measure(&mut self, batch: &[Proposal<P>], best_s: f64) -> Result<Vec<f64>, String> {
        let pending: Vec<_> = batch
            .iter()
            .map(|c| self.pending(c, (self.bound)(&c.plan)))
            .collect();
        self.rec.best_s = best_s;
        self.rec.results.clear();
        (self.measure)(self.rec, &pending)?;
        let costs: Vec<f64> = batch
            .iter()
            .map(|c| {
                let r = self.rec.results.iter().find(|(p, _)| *p == c.plan);
                r.map_or(f64::INFINITY, |r| r.1)
            })
            .collect();
        let default_failed = batch
            .iter()
            .zip(&costs)
            .any(|(c, cost)| c.origin == Origin::Seed(DEFAULT_SEED) && !cost.is_finite());
        if default_failed {
            return Err(
                "the default plan did not run correctly at these sizes; see the tuning log".into(),
            );
        }
        Ok(costs)
    }
}

/// Why the best plan gets no entry, if it gets none: it runs as the plan
/// that already runs at these sizes (`alike`), the configured one
/// (`configured`: the plan the config dispatches to here), or without one
/// the default. An entry like it would change nothing but compile its code
/// twice into the macro's expansion.
fn already_running<P>(
    best: &P,
    configured: Option<&P>,
    default: &P,
    alike: impl Fn(&P, &P) -> bool,
) -> Option<&'static str> {
    match configured {
        Some(c) if alike(best, c) => Some("the configured plan"),
        None if alike(best, default) => Some("the default plan (what runs here now)"),
        _ => None,
    }
}

/// Merges `entry` into the config file at `path` (created if missing),
/// keeping its other entries and comments.
pub(crate) fn write_entry(target: &Target, path: &Path, entry: &str) -> Result<(), String> {
    let old = match std::fs::read_to_string(path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let key = EntryKey {
        backend: target.backend,
        device: &target.device,
        machine: target.machine.as_ref(),
        sizes: target.sizes,
    };
    let text = merge_entry(target.k, path, old.as_deref(), key, entry).map_err(|e| e.0)?;
    std::fs::create_dir_all(&target.out_dir)
        .map_err(|e| format!("cannot create {}: {e}", target.out_dir.display()))?;
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    match (&old, &target.source) {
        (None, Some(source)) => touch(source),
        _ => Ok(()),
    }
}

/// Marks `file` as modified now. The macro makes cargo rebuild a kernel
/// when its config file changes (`include_bytes!` of the file), but it can
/// track no file that did not exist when the kernel was built: a config
/// file created afterwards would go unseen until the kernel's source
/// changed, so the tuner that creates one touches the source.
fn touch(file: &Path) -> Result<(), String> {
    std::fs::File::options()
        .append(true)
        .open(file)
        .and_then(|f| f.set_modified(std::time::SystemTime::now()))
        .map_err(|e| {
            format!(
                "cannot mark {} as modified ({e}): touch it, or cargo will not build the new config into the kernel",
                file.display()
            )
        })
}

/// What one tuning run is for.
pub struct Target<'a> {
    pub k: &'a Checked,
    pub sizes: &'a [usize],
    /// `cpu`, `opencl` or `cuda`: the config's backend name.
    pub backend: &'static str,
    pub device: String,
    /// The CPU's description (the CPU backend only).
    pub machine: Option<Machine>,
    pub out_dir: PathBuf,
    /// The source file of the kernel's `mdh!` invocation, touched when its
    /// config file is created ([`write_entry`]).
    pub source: Option<PathBuf>,
    /// `I=1024,K=4096`, for messages.
    pub at: String,
    /// `-I1024-K4096`, for file names.
    pub tag: String,
    /// What candidates' results are compared with (for the log).
    pub checked_against: String,
}

impl<'a> Target<'a> {
    /// The run of `k` at `sizes` for `backend`, its entry going into
    /// `out_dir`; the driver names the device.
    pub fn new(
        k: &'a Checked,
        sizes: &'a [usize],
        backend: &'static str,
        out_dir: PathBuf,
    ) -> Self {
        let named = || k.size_params.iter().zip(sizes);
        Target {
            k,
            sizes,
            backend,
            device: String::new(),
            machine: None,
            out_dir,
            source: None,
            at: named()
                .map(|(p, v)| format!("{p}={v}"))
                .collect::<Vec<_>>()
                .join(","),
            tag: named().map(|(p, v)| format!("-{p}{v}")).collect(),
            checked_against: "the reference interpreter".into(),
        }
    }

    /// The line that opens a run.
    pub fn announce(&self, file: &Path, params: usize, size: f64, estimated: bool) {
        eprintln!(
            "tuning `{}` ({}) for {} on {} ({}): {params} parameters, {}{size:.2e} configurations",
            self.k.name,
            file.display(),
            self.at,
            self.device,
            self.backend,
            if estimated { "about " } else { "≈" },
        );
    }

    /// `dir/tune-<backend>-<sizes>.<ext>`: the log and the plot.
    pub fn file(&self, dir: &Path, ext: &str) -> PathBuf {
        dir.join(format!("tune-{}{}.{ext}", self.backend, self.tag))
    }

    fn start(&self) -> Start {
        Start {
            kernel: self.k.name.to_string(),
            backend: self.backend.into(),
            device: self.device.clone(),
            sizes: self.sizes.to_vec(),
            checked_against: self.checked_against.clone(),
        }
    }
}

/// The technique name of the configured plan's candidate in the log.
const CONFIGURED: &str = "config";

/// The entries of the kernel's config file in `out_dir` (the file the
/// result is merged into), if it exists.
pub fn configured_entries(k: &Checked, out_dir: &Path) -> Result<Option<Entries>, String> {
    let path = out_dir.join(format!("{}.yaml", k.name));
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    mdh_core::config::entries(k, &path, &text)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Whether `--skip-tuned` skips `target`: the config in its `out_dir` has
/// an entry for its backend and exactly its sizes that is for any device
/// (`*`) or for this one (CPU: tuned on this machine, see
/// [`mdh::machine::PlanEntry::fit`]; GPU: its device name). Says so when it does.
pub fn skip_tuned(opts: &Options, target: &Target) -> Result<bool, String> {
    if !opts.skip_tuned {
        return Ok(false);
    }
    let Some(entries) = configured_entries(target.k, &target.out_dir)? else {
        return Ok(false);
    };
    let found = match target.backend {
        "cpu" => {
            let machine = target
                .machine
                .ok_or("a CPU target without its machine description (a bug of mdh-tune)")?;
            // Whether an entry fits: plans of few rows are never tuned.
            let host = Host {
                model: target.device.clone(),
                machine,
                bf16_pairs: false,
            };
            entries.cpu.iter().any(|e| {
                e.sizes.as_deref() == Some(target.sizes)
                    && matches!(
                        e.plan_entry(target.k).fit(&host),
                        Some(Fit::Exact | Fit::Model | Fit::Any)
                    )
            })
        }
        backend => {
            let list = Backend::named(backend).map_or(&[][..], |b| entries.gpu(b));
            list.iter().any(|e| {
                (e.device == "*" || e.device == target.device)
                    && e.sizes.as_deref() == Some(target.sizes)
            })
        }
    };
    if found {
        println!(
            "`{}` already has a {} entry for {} at {} in {}: skipped (--skip-tuned)",
            target.k.name,
            target.backend,
            target.device,
            target.at,
            target.out_dir.display()
        );
    }
    Ok(found)
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub(crate) fn utc_date() -> String {
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
pub(crate) mod tests {
    use super::*;
    use mdh_core::config::cpu_entry_yaml;
    use mdh_core::plan::CpuPlan;

    #[test]
    fn the_plan_that_runs_already_is_not_written_again() {
        let (default, tuned, other) = (1, 2, 3);
        let unchanged = |best, configured: Option<i32>| {
            already_running(&best, configured.as_ref(), &default, |a, b| a == b)
        };
        // Configured and best: unchanged, whether or not it is the default.
        assert_eq!(unchanged(tuned, Some(tuned)), Some("the configured plan"));
        assert!(unchanged(default, Some(default)).is_some());
        // No entry applies: the default runs, so a default best is no news.
        assert!(unchanged(default, None).is_some_and(|w| w.starts_with("the default plan")));
        // Anything else changes what runs: written.
        assert_eq!(unchanged(tuned, None), None);
        assert_eq!(unchanged(other, Some(tuned)), None);
        // The default beat the configured entry (of other sizes): its entry
        // takes over these sizes.
        assert_eq!(unchanged(default, Some(tuned)), None);
        // Plans that differ but run alike (GPU plans that resolve alike).
        let parity = |a: &i32, b: &i32| a % 2 == b % 2;
        assert!(already_running(&other, Some(&default), &default, parity).is_some());
    }

    /// A scratch directory for config files, removed when dropped.
    pub(crate) struct TempDir(pub PathBuf);

    impl TempDir {
        pub(crate) fn new(name: &str) -> TempDir {
            let d = std::env::temp_dir().join(format!("mdh-tune-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&d).unwrap();
            TempDir(d)
        }

        /// Writes `<kernel>.yaml` with these entries (list items).
        pub(crate) fn config(&self, k: &Checked, entries: &[String]) {
            let text = format!("kernel: {}\nentries:\n{}", k.name, entries.concat());
            std::fs::write(self.0.join(format!("{}.yaml", k.name)), text).unwrap();
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn skip_tuned_skips_an_entry_for_this_device_at_these_sizes() {
        let k = mdh_core::fixtures::matvec();
        let dir = TempDir::new("skip-tuned");
        // A plan whose register tile AVX2's registers hold (this machine's).
        let plan = CpuPlan::default_for_isa(&k, mdh::machine::Isa::Avx2);
        let here = Machine {
            isa: mdh::machine::Isa::Avx2,
            cores: 2,
            l1d: Some(32 << 10),
            l2: Some(512 << 10),
            l3: None,
        };
        let bigger = Machine { cores: 8, ..here };
        dir.config(
            &k,
            &[
                cpu_entry_yaml(&k, "Some CPU", None, Some(&[64, 64]), &plan, &[]),
                cpu_entry_yaml(&k, "*", None, Some(&[128, 64]), &plan, &[]),
                cpu_entry_yaml(&k, "Named", Some(&here), Some(&[32, 32]), &plan, &[]),
                cpu_entry_yaml(&k, "Named", Some(&bigger), Some(&[16, 16]), &plan, &[]),
            ],
        );
        let skips = |asked: bool, sizes: &'static [usize], device: &str| {
            let target = Target {
                device: device.into(),
                machine: Some(here),
                ..Target::new(&k, sizes, "cpu", dir.0.clone())
            };
            let opts = Options {
                budget: Budget::Evaluations(1),
                batch: 1,
                seed: 1,
                resume: false,
                skip_tuned: asked,
            };
            skip_tuned(&opts, &target).unwrap()
        };
        assert!(skips(true, &[64, 64], "Some CPU"));
        assert!(skips(true, &[128, 64], "Other CPU"), "`*` is every CPU");
        assert!(!skips(true, &[64, 64], "Other CPU"));
        assert!(!skips(true, &[64, 128], "Some CPU"));
        assert!(!skips(false, &[64, 64], "Some CPU"), "only when asked");
        assert!(skips(true, &[32, 32], "Other CPU"), "tuned on this machine");
        assert!(
            !skips(true, &[16, 16], "Named"),
            "the same name on another machine"
        );
        // A `*` entry of a tile AVX2 does not hold runs here narrowed to its
        // registers; one that cannot be narrowed does not run here.
        let wide = CpuPlan::default_for(&k);
        assert!(wide.accumulator_bytes(&k) > mdh::machine::Isa::Avx2.accumulator_bytes());
        dir.config(
            &k,
            &[cpu_entry_yaml(&k, "*", None, Some(&[128, 64]), &wide, &[])],
        );
        assert!(skips(true, &[128, 64], "Other CPU"));
        let odd = CpuPlan {
            reg: vec![7, 16],
            l1: vec![7, 16384],
            l2: vec![70, 16384],
            ..wide
        };
        dir.config(
            &k,
            &[cpu_entry_yaml(&k, "*", None, Some(&[128, 64]), &odd, &[])],
        );
        assert!(!skips(true, &[128, 64], "Other CPU"));
    }

    #[test]
    fn creating_a_config_file_touches_the_kernels_source() {
        let k = mdh_core::fixtures::matvec();
        let dir = TempDir::new("touch");
        let source = dir.0.join("lib.rs");
        std::fs::write(&source, "// the kernel\n").unwrap();
        let long_ago = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
        let modified = || std::fs::metadata(&source).unwrap().modified().unwrap();
        let age = |t: std::time::SystemTime| {
            std::fs::File::options()
                .append(true)
                .open(&source)
                .unwrap()
                .set_modified(t)
                .unwrap()
        };
        age(long_ago);
        let target = Target {
            source: Some(source.clone()),
            ..Target::new(&k, &[64, 64], "cpu", dir.0.clone())
        };
        let plan = CpuPlan::default_for(&k);
        let entry = |sizes: &[usize]| cpu_entry_yaml(&k, "*", None, Some(sizes), &plan, &[]);
        let path = dir.0.join(format!("{}.yaml", k.name));
        // Created: the source is newer (cargo rebuilds the kernel with it).
        write_entry(&target, &path, &entry(&[64, 64])).unwrap();
        assert!(modified() > long_ago);
        assert_eq!(std::fs::read_to_string(&source).unwrap(), "// the kernel\n");
        // Merged into an existing file (which the kernel's build tracks):
        // the source is left alone.
        age(long_ago);
        write_entry(&target, &path, &entry(&[128, 64])).unwrap();
        assert_eq!(modified(), long_ago);
        // A source that cannot be touched is an error that says what to do.
        let gone = Target {
            source: Some(dir.0.join("missing.rs")),
            ..Target::new(&k, &[64, 64], "cpu", dir.0.clone())
        };
        std::fs::remove_file(&path).unwrap();
        let e = write_entry(&gone, &path, &entry(&[64, 64])).unwrap_err();
        assert!(e.contains("touch it"), "{e}");
    }

    #[test]
    fn entries_are_written_only_for_wins_beyond_the_noise() {
        let around = |m: f64, spread: f64| -> Vec<f64> {
            (0..9)
                .map(|i| m * (1.0 + spread * (i as f64 - 4.0) / 4.0))
                .collect()
        };
        // 10 % faster, samples 1 % apart: written.
        let v = verdict(&around(0.9, 0.01), &around(1.0, 0.01));
        assert!(v.write, "{v:?}");
        assert!((v.speedup - 1.0 / 0.9).abs() < 1e-9, "{v:?}");
        assert!(
            v.why.contains("10.0 % faster, beyond the noise"),
            "{}",
            v.why
        );
        // 2 % faster, however steady: below the threshold.
        let v = verdict(&around(0.98, 0.001), &around(1.0, 0.001));
        assert!(!v.write && v.why.contains("not the 3 %"), "{}", v.why);
        // 10 % faster by the medians, but samples spread ±20 %: noise.
        let v = verdict(&around(0.9, 0.2), &around(1.0, 0.2));
        assert!(!v.write && v.why.contains("within the noise"), "{}", v.why);
        // Slower when re-timed (the search's time was a lucky one).
        let v = verdict(&around(1.1, 0.01), &around(1.0, 0.01));
        assert!(!v.write && v.speedup < 1.0, "{v:?}");
        assert!(v.why.contains("10.0 % slower"), "{}", v.why);
        // One outlier of today's does not decide.
        let mut today = around(1.0, 0.01);
        today[3] = 0.5;
        assert!(verdict(&around(0.9, 0.01), &today).write);
        // Too few samples.
        assert!(!verdict(&[0.1, 0.1], &[1.0, 1.0]).write);
    }

    #[test]
    fn utc_dates_are_civil_dates() {
        let d = utc_date();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"), "{d}");
    }
}
