//! Run-time tuning of GPU plans: `NAME::opencl::tune` and `NAME::cuda::tune`
//! (and `MDH_AUTOTUNE=1`) search the tuner's space ([`GpuSpace`]) with the
//! tuner's techniques ([`Ensemble`](crate::search::Ensemble)) in the
//! tuner's loop ([`Search`](crate::search::driver::Search)) on the user's
//! device, at the call's sizes, and keep the result in a per-user cache
//! that later calls and later processes dispatch to before the configured
//! entries.
//!
//! What is checked: the reference interpreter is not in a user's binary, so
//! the plan that runs today (a cached plan, else the configured entry or
//! the default the wrappers choose) runs first on deterministic
//! pseudo-random data ([`crate::search::check::data`], not the user's
//! buffers: most kernels' run times do not depend on the values), and its
//! outputs are what every candidate's must equal under the tuner's
//! tolerance ([`Bench`]); a candidate that computes other results or fails
//! is skipped, never kept. The best plan is re-timed in turns with today's
//! and kept only where it wins beyond the noise (the tuner's
//! [`verdict`]); else today's plan is kept, so that the call is not tuned
//! again.
//!
//! The cache: one small text file per (kernel, device name, driver
//! version, kernel identity, size bucket: [`bucket`], each extent's next
//! power of two, so that a kernel called with many sizes is tuned once per
//! bucket) in [`cache_dir`], written atomically
//! (a temporary file of its own per writer, renamed: of concurrent writers,
//! threads or processes, one complete file wins, and a reader sees a whole
//! file or none). The kernel identity is a hash of the generated source
//! template, the configured entries and the search space's parameters, so
//! a changed kernel, config or space never reuses a stale plan; the file
//! also names the mdh version that wrote it (how a point decodes is its
//! code's), and a file of another version is ignored and replaced by the
//! next tuning. The plan is stored as its point in the space (or `today`:
//! the configured choice stays); an `end` line closes the file, so that a
//! truncated one does not count. A file that cannot be read or does not
//! match its call is ignored with a `log` warning. Without a cache folder
//! (no `HOME`), or where it cannot be written, `MDH_AUTOTUNE` still tunes
//! and runs the plan found, for this process only, and says so once.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mdh_rt::desc::{Bound, KernelDesc};
use mdh_rt::gpu_plan::GpuPlan;
use mdh_rt::Error;

use super::bench::{Bench, Outcome, Status};
use super::calls::{self, CallKernel};
use super::space::GpuSpace;
use super::{CallDesc, GpuDevice, GpuEntry, KernelInfo, RawDevice};
use crate::machine::sizes_text;
use crate::search::driver::{Budget, Measure, Proposal, Search, Stop};
use crate::search::space::Space;
use crate::search::verdict::{ms, verdict, RETIME_ROUNDS};
use crate::search::Point;

/// The search budget of a call tuned under `MDH_AUTOTUNE=1`, unless
/// `MDH_AUTOTUNE_BUDGET` gives one (seconds).
pub const AUTOTUNE_BUDGET: Duration = Duration::from_secs(10);
/// The model's best candidates a search measures before its techniques
/// propose (see [`super::defaults::ranked`]).
const MODEL_FIRST: usize = 8;
/// The searches are reproducible (one seed for all).
const SEED: u64 = 0x7E57_0001;
/// A candidate whose checked run is this many times slower than the best
/// is not repeated: it cannot win.
const SLOW: f64 = 3.0;
/// The first line of a cache file (its format's version).
const HEADER: &str = "# mdh run-time tuning cache, format 2 (delete the file to tune again)";
/// The version of mdh, the line of a cache file that names it, and its last line.
const VERSION: &str = env!("CARGO_PKG_VERSION");
const VERSION_LINE: &str = "mdh ";
const END: &str = "end";

/// What [`tune`] found and kept.
#[derive(Clone, Debug)]
pub struct TuneReport {
    /// The plan kept in the cache, which later calls run: the best plan
    /// found where it beats `before` beyond the noise, else `before`.
    pub plan: GpuPlan,
    /// The plan that ran before: a cached plan, else the configured
    /// entry or the default plan that the wrappers choose.
    pub before: GpuPlan,
    /// The median times of the best plan found and of `before`, in
    /// seconds (device time).
    pub best_s: f64,
    pub before_s: f64,
    /// Candidates measured, `before` included.
    pub measured: usize,
    /// Candidates skipped for wrong results or failures.
    pub rejected: usize,
    /// Why `plan` was kept (the re-timing's verdict, or that `before` was
    /// the best found).
    pub why: String,
    /// The cache file written.
    pub file: PathBuf,
}

/// The folder of the cache: `$MDH_TUNE_CACHE`, else `$XDG_CACHE_HOME/mdh`,
/// else `$HOME/.cache/mdh` (`None` without any of them).
pub fn cache_dir() -> Option<PathBuf> {
    let var = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    var("MDH_TUNE_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("mdh")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("mdh")))
}

/// `MDH_AUTOTUNE`, read once.
fn autotuning() -> bool {
    static FLAG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FLAG.get_or_init(|| crate::machine::env_flag("MDH_AUTOTUNE"))
}

/// `MDH_AUTOTUNE_BUDGET` (seconds), else [`AUTOTUNE_BUDGET`].
fn autotune_budget() -> Duration {
    let Ok(v) = std::env::var("MDH_AUTOTUNE_BUDGET") else {
        return AUTOTUNE_BUDGET;
    };
    match v
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
    {
        Some(d) => d,
        None => {
            eprintln!(
                "mdh: MDH_AUTOTUNE_BUDGET={v:?} is not a number of seconds; {} s instead",
                AUTOTUNE_BUDGET.as_secs()
            );
            AUTOTUNE_BUDGET
        }
    }
}

/// 64-bit FNV-1a: stable across processes and Rust versions (the cache
/// outlives both), unlike the standard library's hasher.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01B3);
    }
    h
}

const FNV_START: u64 = 0xCBF2_9CE4_8422_2325;

/// What one cache file is for; its lines, in order, as written (after the
/// line of the mdh version).
#[derive(Debug, PartialEq, Eq)]
struct Key {
    kernel: String,
    device: String,
    driver: String,
    identity: u64,
    /// The size bucket: per md_hom dimension its extent's next power of
    /// two ([`bucket`]).
    bucket: Vec<usize>,
}

/// The size bucket of a call at `extents`: per md_hom dimension the next
/// power of two of its extent. Calls whose extents share it share a tuned
/// plan (a plan is valid at every size, and the search space's
/// parameters, which a cache file's point indexes, are the same for
/// them): a kernel called with many sizes is tuned once per bucket, not
/// per size.
pub fn bucket(extents: &[usize]) -> Vec<usize> {
    extents
        .iter()
        .map(|e| e.max(&1).next_power_of_two())
        .collect()
}

impl Key {
    /// The key of a call of `k` on a device called `device` with driver
    /// `driver`, whose space is `space`.
    fn new(k: &CallKernel<'_>, device: &str, driver: &str, space: &GpuSpace) -> Key {
        // Not mdh's version: a file of another version keeps its name,
        // so that the next tuning replaces it (its `mdh` line refuses it).
        let mut id = fnv(FNV_START, k.info.template.as_bytes());
        for e in k.entries {
            id = fnv(
                id,
                format!("{:?}|{}|{:?}|{:?};", e.plan, e.device, e.arch, e.sizes).as_bytes(),
            );
        }
        id = fnv(id, format!("{:?}", space.params).as_bytes());
        Key {
            kernel: k.desc.name.to_string(),
            device: device.to_string(),
            driver: driver.to_string(),
            identity: id,
            bucket: bucket(&k.bound.extents),
        }
    }

    fn lines(&self) -> String {
        let bucket: Vec<String> = self.bucket.iter().map(usize::to_string).collect();
        format!(
            "kernel {}\ndevice {}\ndriver {}\nidentity {:016x}\nextents up to {}\n",
            self.kernel,
            self.device,
            self.driver,
            self.identity,
            bucket.join(" ")
        )
    }

    /// The file in `dir`: the kernel's name and a hash of the whole key.
    fn file(&self, dir: &Path) -> PathBuf {
        let name: String = self
            .kernel
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        dir.join(format!(
            "{name}-{:016x}.txt",
            fnv(FNV_START, self.lines().as_bytes())
        ))
    }
}

/// What a cache file says runs.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kept {
    /// The configured choice (entry or default) is the best found.
    Today,
    /// This point of the space.
    Point(Point),
}

/// The text of the cache file of `key` keeping `kept`, with a note.
fn text(key: &Key, kept: &Kept, note: &str) -> String {
    let point = match kept {
        Kept::Today => "today".to_string(),
        Kept::Point(p) => p.iter().map(usize::to_string).collect::<Vec<_>>().join(" "),
    };
    format!(
        "{HEADER}\n{VERSION_LINE}{VERSION}\n{}point {point}\n# {note}\n{END}\n",
        key.lines()
    )
}

/// The plan a cache file keeps for `key`, or why the file does not count.
fn parse(text: &str, key: &Key, space: &GpuSpace) -> Result<Kept, String> {
    let expected = key.lines();
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Err("not a cache file of this format".into());
    }
    match lines.next().and_then(|l| l.strip_prefix(VERSION_LINE)) {
        Some(VERSION) => {}
        Some(v) => return Err(format!("it was written by mdh {v}, this is mdh {VERSION}")),
        None => return Err("its `mdh` line is missing".into()),
    }
    for want in expected.lines() {
        if lines.next() != Some(want) {
            return Err(format!("it is not for this call (expected `{want}`)"));
        }
    }
    let point = lines
        .next()
        .and_then(|l| l.strip_prefix("point "))
        .ok_or("its `point` line is missing")?;
    // A file cut short ends before its last line: the rename is atomic,
    // but after a power loss the renamed file may lack its unsynced data,
    // and a copy of the folder can be cut short.
    if lines.find(|l| !l.starts_with('#')) != Some(END) || lines.next().is_some() {
        return Err(format!(
            "it does not end with its `{END}` line (truncated?)"
        ));
    }
    if point == "today" {
        return Ok(Kept::Today);
    }
    let p = point
        .split(' ')
        .map(str::parse)
        .collect::<Result<Point, _>>()
        .map_err(|e| format!("its point is not a list of numbers: {e}"))?;
    let cards = space.cards();
    if p.len() != cards.len() || p.iter().zip(&cards).any(|(i, c)| i >= c) {
        return Err("its point is not a point of the search space".into());
    }
    Ok(Kept::Point(p))
}

/// The cache file of `key` in `dir` and what it keeps, if it exists and
/// counts (a warning says why one that exists does not).
fn load(dir: &Path, key: &Key, space: &GpuSpace) -> Option<(PathBuf, Kept)> {
    let file = key.file(dir);
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            log::warn!(
                "mdh: ignoring the tuning cache file {}: {e}",
                file.display()
            );
            return None;
        }
    };
    match parse(&text, key, space) {
        Ok(kept) => Some((file, kept)),
        Err(why) => {
            log::warn!(
                "mdh: ignoring the tuning cache file {}: {why}",
                file.display()
            );
            None
        }
    }
}

/// [`cache_dir`], or the error that says how to give one.
fn require_cache_dir() -> Result<PathBuf, Error> {
    cache_dir().ok_or_else(|| {
        Error::Argument(
            "no folder for the tuning cache: set MDH_TUNE_CACHE (or XDG_CACHE_HOME or HOME)".into(),
        )
    })
}

/// Writes the cache file of `key` in `dir` atomically: a temporary file
/// beside it, of this writer alone, renamed (a reader sees the old file or
/// the new one, never a part; of concurrent writers, the last rename wins).
fn store(dir: &Path, key: &Key, kept: &Kept, note: &str) -> Result<PathBuf, Error> {
    let file = key.file(dir);
    let io = |e: std::io::Error| {
        Error::Argument(format!(
            "cannot write the tuning cache file {}: {e}",
            file.display()
        ))
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let text = text(key, kept, note);
    // Unique per process and write: writers of one key never share it.
    static WRITES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = file.with_extension(format!("tmp{}-{n}", std::process::id()));
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, &file).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })?;
    Ok(file)
}

/// The space of a call of `k` on `dev`.
fn space_of<D: GpuDevice>(k: &CallKernel<'_>, dev: &D) -> GpuSpace {
    GpuSpace::new(k.desc, k.bound.clone(), k.info, dev.limits())
}

/// The plan the tuning cache keeps for a call of `k` on `dev` (`None`: the
/// configured choice runs), tuned first under `MDH_AUTOTUNE=1` where the
/// cache has nothing: what the prepared calls of the real devices ask once
/// per kernel, sizes and device ([`super::tuned_plan`]). Errors of
/// the tuning are warnings: the configured choice runs.
pub fn tuned_plan<D: RawDevice>(dev: &D, k: &CallKernel<'_>) -> Option<GpuPlan> {
    let driver = dev.driver();
    let space = space_of(k, dev);
    let key = Key::new(k, dev.device_name(), driver, &space);
    let explain = crate::machine::explaining();
    let dir = cache_dir();
    let (file, kept) = match dir.as_deref().and_then(|d| load(d, &key, &space)) {
        Some(found) => found,
        None if autotuning() => {
            let budget = autotune_budget();
            eprintln!(
                "mdh: MDH_AUTOTUNE: tuning {} at {} on {} for about {:.1} s",
                key.kernel,
                sizes_text(&k.desc.size_params, &k.bound.sizes),
                key.device,
                budget.as_secs_f64()
            );
            // The plan kept runs (today's plan, where nothing beat it, is
            // the configured choice itself).
            return match search(dev, k, &space, key, budget, true, Keep::IfPossible) {
                Ok(r) => Some(r.plan),
                Err(e) => {
                    log::warn!("mdh: MDH_AUTOTUNE: tuning {} failed: {e}", k.desc.name);
                    None
                }
            };
        }
        None => return None,
    };
    let plan = match kept {
        Kept::Today => None,
        Kept::Point(p) => Some(space.decode(&p)),
    };
    if explain {
        eprintln!(
            "mdh: {} at {}: the plan of the run-time tuning cache ({}), before the configured entries: {}",
            key.kernel,
            sizes_text(&k.desc.size_params, &k.bound.sizes),
            file.display(),
            plan.as_ref()
                .map_or("the configured choice".to_string(), |p| format!("{p:?}"))
        );
    }
    plan
}

/// The plan the configured entries choose for a call of `k` on `dev`.
fn today<D: GpuDevice>(dev: &D, k: &CallKernel<'_>) -> GpuPlan {
    CallDesc {
        desc: k.desc,
        bound: k.bound,
        info: k.info,
        entries: k.entries,
        device: dev.device_name(),
        lim: dev.limits(),
    }
    .chosen_plan()
}

/// `NAME::{opencl,cuda}::tune`: searches plans of the kernel of `info` and
/// `desc` (configured `entries`) at `sizes` on `dev` for `budget`, keeps
/// the result in the tuning cache (see the module documentation) and
/// forgets the device's prepared call of these sizes, so that the next
/// call runs the kept plan.
pub fn tune<D: RawDevice>(
    dev: &D,
    info: &'static KernelInfo,
    desc: &'static KernelDesc,
    entries: &[GpuEntry],
    sizes: &[usize],
    budget: Duration,
) -> Result<TuneReport, Error> {
    let bound: Bound = super::bind_sizes(desc, sizes)?;
    let k = CallKernel {
        info,
        desc,
        entries,
        bound: &bound,
    };
    let driver = dev.driver();
    // Before the search: its result is to be kept.
    require_cache_dir()?;
    let space = space_of(&k, dev);
    let key = Key::new(&k, dev.device_name(), driver, &space);
    let progress = crate::machine::explaining();
    search(dev, &k, &space, key, budget, progress, Keep::Required)
}

/// Whether a search without a cache to keep its result in fails.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// [`tune`]: the caller asked for the result to be kept.
    Required,
    /// `MDH_AUTOTUNE`: the call runs the plan found all the same (and the
    /// process says once that the cache cannot keep it).
    IfPossible,
}

/// Says once per process why the tuning cache cannot keep what
/// `MDH_AUTOTUNE` found (each call tuned would say it again otherwise).
fn cannot_keep(e: &Error) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!("mdh: MDH_AUTOTUNE: {e}; the plans found run in this process only");
    }
}

/// The search of [`tune`] for the call of `key`; `progress`: one line on
/// stderr per improvement.
fn search<D: RawDevice>(
    dev: &D,
    k: &CallKernel<'_>,
    space: &GpuSpace,
    key: Key,
    budget: Duration,
    progress: bool,
    keep: Keep,
) -> Result<TuneReport, Error> {
    let started = Instant::now();
    let mut bench = Bench::new(dev, k.desc, k.info, &k.bound.sizes)?;
    let dir = cache_dir();
    // What runs today: the cached plan, else the configured choice.
    let (kept_before, before) = match dir.as_deref().and_then(|d| load(d, &key, space)) {
        Some((_, Kept::Point(p))) => (Kept::Point(p.clone()), space.decode(&p)),
        _ => (Kept::Today, today(dev, k)),
    };
    let (kinds, extents) = (&k.desc.kinds, &k.bound.extents);
    let first = bench.measure(&before, f64::INFINITY);
    let before_s = match (first.status, first.time_s) {
        (Status::Ok, Some(t)) => t,
        _ => {
            return Err(Error::Backend(format!(
                "tuning `{}`: the plan that runs today ({before:?}) fails: {}",
                key.kernel,
                first.error.unwrap_or_default()
            )))
        }
    };
    let say = |msg: String| {
        if progress {
            eprintln!("mdh: tuning {}: {msg}", key.kernel);
        }
    };
    say(format!("today's plan takes {}", ms(before_s)));
    // Plans that run alike at these sizes are one (their resolved plans).
    let (kinds, extents) = (kinds.clone(), extents.clone());
    let mut search = Search::new(space.clone(), &before, SEED, move |plan: &GpuPlan| {
        plan.resolve(&kinds, &extents)
    });
    search.spent_before(started.elapsed().as_secs_f64());
    search.absorb(None, Some(space.nearest(&before)), &before, before_s, true);
    // The model's best candidates first (the analytical default's ranking,
    // at their nearest points of the space), then the techniques.
    let seeds = super::defaults::ranked(k.desc, k.bound, k.info, dev.device_name(), dev.limits())
        .into_iter()
        .take(MODEL_FIRST)
        .map(|c| space.decode(&space.nearest(&c.plan)))
        .collect();
    let mut measure = OneByOne {
        bench: &mut bench,
        say: &say,
        started,
        before_s,
    };
    if search.run(&Budget::Time(budget), 1, seeds, &mut measure)? == Stop::Exhausted {
        say("every plan of the space was measured".into());
    }
    let measured = search.costs.len();
    let rejected = search.costs.iter().filter(|c| c.is_infinite()).count();
    let best_s = search.best_s();
    let best = search
        .best
        .take()
        .filter(|b| b.cost < before_s)
        .and_then(|b| b.point);
    let (kept, why) = match best {
        None => (
            kept_before,
            "no plan found was faster than the plan that runs today".to_string(),
        ),
        Some(p) => {
            let winner = space.decode(&p);
            let samples = bench
                .interleave(&[&winner, &before], RETIME_ROUNDS)
                .map_err(Error::Backend)?;
            let v = verdict(&samples[0], &samples[1]);
            say(v.why.clone());
            (if v.write { Kept::Point(p) } else { kept_before }, v.why)
        }
    };
    let plan = match &kept {
        Kept::Point(p) => space.decode(p),
        Kept::Today => before.clone(),
    };
    let note = format!(
        "tuned at {}: {} candidates in {:.1} s: {why}",
        sizes_text(&k.desc.size_params, &k.bound.sizes),
        measured,
        started.elapsed().as_secs_f64()
    );
    let stored = require_cache_dir().and_then(|d| store(&d, &key, &kept, &note));
    let file = match (stored, keep) {
        (Ok(file), _) => {
            say(format!("kept in {}", file.display()));
            file
        }
        (Err(e), Keep::Required) => return Err(e),
        // No file: the report goes no further than the call, which runs
        // `plan`.
        (Err(e), Keep::IfPossible) => {
            cannot_keep(&e);
            PathBuf::new()
        }
    };
    calls::forget(dev, k.info, &k.bound.sizes);
    Ok(TuneReport {
        plan,
        before,
        best_s,
        before_s,
        measured,
        rejected,
        why,
        file,
    })
}

/// Run-time tuning's measurements: one candidate at a time on the
/// call's bench, each cut off at [`SLOW`] times the best.
struct OneByOne<'b, 'a, D: RawDevice, F: Fn(String)> {
    bench: &'b mut Bench<'a, D>,
    say: &'b F,
    started: Instant,
    before_s: f64,
}

impl<D: RawDevice, F: Fn(String)> Measure<GpuPlan> for OneByOne<'_, '_, D, F> {
    type Error = Error;

    fn measure(&mut self, batch: &[Proposal<GpuPlan>], best_s: f64) -> Result<Vec<f64>, Error> {
        Ok(batch
            .iter()
            .map(|c| match self.bench.measure(&c.plan, SLOW * best_s) {
                Outcome {
                    status: Status::Ok,
                    time_s: Some(time),
                    ..
                } => time,
                _ => f64::INFINITY,
            })
            .collect())
    }

    fn improved(&mut self, c: &Proposal<GpuPlan>, cost: f64) {
        (self.say)(format!(
            "{} ({:.2}x today's) after {:.1} s: {:?}",
            ms(cost),
            self.before_s / cost,
            self.started.elapsed().as_secs_f64(),
            c.plan
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_the_reference_fnv1a() {
        // The published test vector of FNV-1a 64 for "a".
        assert_eq!(fnv(FNV_START, b"a"), 0xAF63_DC4C_8601_EC8C);
    }

    #[cfg(feature = "reference")]
    mod with_a_kernel {
        use super::*;
        use crate::gpu::{bind_sizes, cuda_arch_limits, DeviceLimits};

        struct Call {
            info: &'static KernelInfo,
            desc: &'static KernelDesc,
            entries: Vec<GpuEntry>,
            bound: Bound,
        }

        impl Call {
            fn matmul(dialect: mdh_core::codegen::c_expr::Dialect, sizes: &[usize]) -> Call {
                let k = mdh_core::fixtures::matmul();
                let desc: &'static KernelDesc = Box::leak(Box::new(KernelDesc::from_kernel(&k)));
                Call {
                    info: crate::reference::kernel_info(&k, dialect),
                    desc,
                    entries: Vec::new(),
                    bound: bind_sizes(desc, sizes).unwrap(),
                }
            }

            fn kernel(&self) -> CallKernel<'_> {
                CallKernel {
                    info: self.info,
                    desc: self.desc,
                    entries: &self.entries,
                    bound: &self.bound,
                }
            }

            fn space(&self, lim: DeviceLimits) -> GpuSpace {
                GpuSpace::new(self.desc, self.bound.clone(), self.info, lim)
            }

            fn key(&self, device: &str, driver: &str, lim: DeviceLimits) -> Key {
                Key::new(&self.kernel(), device, driver, &self.space(lim))
            }
        }

        const H100: &str = "NVIDIA H100 80GB HBM3";

        #[test]
        fn the_cache_file_changes_with_kernel_entries_driver_device_and_sizes() {
            use mdh_core::codegen::c_expr::Dialect;
            let lim = cuda_arch_limits("sm_90");
            let cuda = Call::matmul(Dialect::Cuda, &[64, 64, 64]);
            let dir = Path::new("/cache");
            let file = |c: &Call, device: &str, driver: &str| c.key(device, driver, lim).file(dir);
            let base = file(&cuda, H100, "CUDA 13.0");
            assert_eq!(base, file(&cuda, H100, "CUDA 13.0"), "stable");
            // Sizes of the same bucket (J = 33: its extent's next power of
            // two is 64 too) share the file.
            assert_eq!(
                base,
                file(
                    &Call::matmul(Dialect::Cuda, &[64, 64, 33]),
                    H100,
                    "CUDA 13.0"
                ),
                "same bucket"
            );
            assert!(base.to_string_lossy().starts_with("/cache/matmul-"));
            let mut others = vec![
                file(&cuda, H100, "CUDA 12.8"),
                file(&cuda, "NVIDIA A100-SXM4-40GB", "CUDA 13.0"),
                // Another template: the OpenCL dialect of the same kernel.
                file(
                    &Call::matmul(Dialect::OpenCl, &[64, 64, 64]),
                    H100,
                    "CUDA 13.0",
                ),
                file(
                    &Call::matmul(Dialect::Cuda, &[64, 64, 128]),
                    H100,
                    "CUDA 13.0",
                ),
            ];
            // A configured entry more.
            let mut configured = Call::matmul(Dialect::Cuda, &[64, 64, 64]);
            configured.entries.push(GpuEntry {
                plan: GpuPlan::default_for(configured.desc),
                device: "*",
                arch: None,
                sizes: None,
            });
            others.push(file(&configured, H100, "CUDA 13.0"));
            // The same entry, tuned on an architecture (it may now be
            // what runs today on another device).
            let mut with_arch = Call::matmul(Dialect::Cuda, &[64, 64, 64]);
            with_arch.entries.push(GpuEntry {
                plan: GpuPlan::default_for(with_arch.desc),
                device: "*",
                arch: Some(90),
                sizes: None,
            });
            others.push(file(&with_arch, H100, "CUDA 13.0"));
            // Another space (a device allowing fewer work-items than the
            // extents).
            let small = DeviceLimits {
                max_items: 32,
                ..lim
            };
            others.push(cuda.key(H100, "CUDA 13.0", small).file(dir));
            for (i, o) in others.iter().enumerate() {
                assert_ne!(*o, base, "variant {i}");
            }
        }

        #[test]
        fn cache_files_are_read_back_and_others_refused() {
            use mdh_core::codegen::c_expr::Dialect;
            let lim = cuda_arch_limits("sm_90");
            let call = Call::matmul(Dialect::Cuda, &[64, 64, 64]);
            let space = call.space(lim);
            let key = call.key(H100, "CUDA 13.0", lim);
            let text = |point: &str| {
                format!(
                    "{HEADER}\n{VERSION_LINE}{VERSION}\n{}point {point}\n# note\n{END}\n",
                    key.lines()
                )
            };
            let p = space.sample(&mut crate::search::Rng::new(3));
            let line = p.iter().map(usize::to_string).collect::<Vec<_>>().join(" ");
            assert_eq!(
                parse(&text(&line), &key, &space),
                Ok(Kept::Point(p.clone()))
            );
            assert_eq!(parse(&text("today"), &key, &space), Ok(Kept::Today));
            assert_eq!(text(&line), super::text(&key, &Kept::Point(p), "note"));
            // Garbage, another call's file, a point off the space.
            assert!(parse("\u{0}\u{1}garbage", &key, &space).is_err());
            let other = call.key(H100, "CUDA 12.8", lim);
            let theirs = super::text(&other, &Kept::Today, "");
            assert!(parse(&theirs, &key, &space).is_err_and(|e| e.contains("not for this call")));
            assert!(parse(&text("1 2"), &key, &space).is_err());
            assert!(parse(&text("x"), &key, &space).is_err());
            let far = vec![usize::MAX / 2; space.cards().len()];
            let far = far
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(" ");
            assert!(parse(&text(&far), &key, &space).is_err());
        }

        #[test]
        fn a_truncated_file_or_one_of_another_mdh_is_refused() {
            use mdh_core::codegen::c_expr::Dialect;
            let lim = cuda_arch_limits("sm_90");
            let call = Call::matmul(Dialect::Cuda, &[64, 64, 64]);
            let (space, key) = (call.space(lim), call.key(H100, "CUDA 13.0", lim));
            let p = space.sample(&mut crate::search::Rng::new(5));
            let whole = super::text(&key, &Kept::Point(p.clone()), "a note");
            assert_eq!(parse(&whole, &key, &space), Ok(Kept::Point(p)));
            // Every cut but the last newline's: a point cut inside a number
            // could decode to another plan.
            for cut in 0..whole.len() - 1 {
                let r = parse(&whole[..cut], &key, &space);
                assert!(r.is_err(), "cut at {cut}: {r:?}");
            }
            let older = whole.replace(&format!("\nmdh {VERSION}\n"), "\nmdh 0.0.1\n");
            let r = parse(&older, &key, &space);
            assert!(
                r.as_ref()
                    .is_err_and(|e| e.contains("written by mdh 0.0.1")),
                "{r:?}"
            );
        }

        #[test]
        fn concurrent_writers_leave_one_whole_file_and_readers_see_whole_ones() {
            use mdh_core::codegen::c_expr::Dialect;
            let lim = cuda_arch_limits("sm_90");
            let call = Call::matmul(Dialect::Cuda, &[64, 64, 64]);
            let (space, key) = (call.space(lim), call.key(H100, "CUDA 13.0", lim));
            let dir = std::env::temp_dir().join(format!("mdh-tune-race-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let points: Vec<Point> = (0..4)
                .map(|w| space.sample(&mut crate::search::Rng::new(w)))
                .collect();
            let done = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s| {
                let writers: Vec<_> = points
                    .iter()
                    .map(|p| {
                        let (dir, key, p) = (&dir, &key, p.clone());
                        s.spawn(move || {
                            for _ in 0..200 {
                                store(dir, key, &Kept::Point(p.clone()), "race").unwrap();
                            }
                        })
                    })
                    .collect();
                let reader = s.spawn(|| {
                    let mut seen = 0;
                    while !done.load(std::sync::atomic::Ordering::Relaxed) {
                        if let Some((_, kept)) = load(&dir, &key, &space) {
                            assert!(
                                points.iter().any(|p| kept == Kept::Point(p.clone())),
                                "{kept:?}"
                            );
                            seen += 1;
                        }
                    }
                    seen
                });
                for w in writers {
                    w.join().unwrap();
                }
                done.store(true, std::sync::atomic::Ordering::Relaxed);
                assert!(reader.join().unwrap() > 0, "the reader never saw a file");
            });
            let files: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|f| f.unwrap().path())
                .collect();
            assert_eq!(
                files,
                vec![key.file(&dir)],
                "one file, no temporary ones left"
            );
            assert!(load(&dir, &key, &space).is_some());
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
