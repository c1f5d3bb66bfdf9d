//! The measurement harness of mdh-tune's scratch crate (copied here by the
//! tuner from mdh-tune/src/scratch/harness.rs; edits are overwritten).
//!
//! One process times one batch of candidates, each a renamed copy of the
//! tuned kernel compiled with its own plan: same inputs for all, each
//! result checked against the reference interpreter before its time counts,
//! one warm-up run (the checked one), then repetitions; the median is
//! reported. One JSON line per candidate on stdout, flushed at once, so the
//! tuner logs each result as soon as it exists.
//!
//! With `--interleave ROUNDS` (the tuner's re-timing of its winner against
//! the plan that runs today) the checked candidates run in turns instead,
//! A B, B A, A B, … (a drift of the machine's load falls on both alike),
//! and each reports its samples.

use std::io::Write as _;
use std::time::Instant;

use mdh::reference::{Buffer, Value};
use mdh_core::config::yaml_string;
use mdh_core::desc::KernelDesc;
use mdh_core::spec::ScalarType;

use mdh::search::check;

pub struct Case {
    pub inputs: Vec<Buffer>,
    init: Vec<Buffer>,
    want: Vec<Buffer>,
    tol: check::Tol,
    /// A candidate whose checked run takes longer than this many seconds
    /// is not repeated (it cannot be the best).
    slow_s: f64,
    min_time_s: f64,
}

/// Every allocation of 4 KiB or more starts at a 64-byte boundary (a cache
/// line; glibc's large blocks start 16 bytes past one), so that candidates
/// are timed on outputs that a plan with `stream` can stream into, as in
/// mdh-bench.
struct LineAligned;

impl LineAligned {
    fn layout(l: std::alloc::Layout) -> std::alloc::Layout {
        if l.size() >= 4096 && l.align() < 64 {
            std::alloc::Layout::from_size_align(l.size(), 64).unwrap_or(l)
        } else {
            l
        }
    }
}

// SAFETY: forwards to the system allocator with a layout that depends only
// on the size and alignment asked for, so `dealloc` gets the layout the
// block was allocated with; a larger alignment is always valid.
unsafe impl std::alloc::GlobalAlloc for LineAligned {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `GlobalAlloc`, with the layout
        // `layout` gives for `l` (see the impl).
        unsafe { std::alloc::System.alloc(Self::layout(l)) }
    }
    unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `GlobalAlloc`, with the layout
        // `layout` gives for `l` (see the impl).
        unsafe { std::alloc::System.alloc_zeroed(Self::layout(l)) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: the caller's contract for `GlobalAlloc`, with the layout
        // `layout` gives for `l` (see the impl).
        unsafe { std::alloc::System.dealloc(p, Self::layout(l)) }
    }
    // `realloc`: the default (allocate, copy, free) goes through `alloc`
    // and `dealloc` above, so the new block gets its own size's layout.
}

#[global_allocator]
static ALLOCATOR: LineAligned = LineAligned;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

pub fn fail(msg: String) -> ! {
    eprintln!("mdh-tune harness: {msg}");
    std::process::exit(2)
}

fn parse(ty: ScalarType, s: &str) -> Option<Value> {
    Some(match ty {
        ScalarType::F32 => Value::F32(s.parse().ok()?),
        ScalarType::F64 => Value::F64(s.parse().ok()?),
        t if t.is_half() => Value::F32(s.parse().ok()?).cast(t)?,
        ScalarType::Bool => Value::Bool(s.parse().ok()?),
        t => Value::I64(s.parse().ok()?).cast(t)?,
    })
}

/// Computes the reference outputs with the default plan's CPU kernel
/// (inputs, outputs).
pub type ByDefault = fn(&[Buffer], &mut [Buffer]) -> Result<(), mdh::Error>;

/// The reference outputs: read from `path` when an earlier batch computed
/// them, else computed by the interpreter (or by `by_default`) and saved
/// there.
fn reference(
    spec: &str,
    sizes: &[usize],
    inputs: &[Buffer],
    init: &[Buffer],
    params: &[Value],
    path: &str,
    by_default: Option<ByDefault>,
) -> Vec<Buffer> {
    if let Ok(text) = std::fs::read_to_string(path) {
        let mut want = init.to_vec();
        let mut lines = text.lines();
        let complete = want.iter_mut().all(|b| {
            (0..b.len()).all(|i| match lines.next().and_then(|l| parse(b.ty(), l)) {
                Some(v) => {
                    b.set(i, v);
                    true
                }
                None => false,
            })
        });
        if complete {
            return want;
        }
    }
    let mut want = init.to_vec();
    if let Some(run) = by_default {
        run(inputs, &mut want)
            .unwrap_or_else(|e| fail(format!("the default plan fails at these sizes: {e}")));
    } else {
        let k = mdh::reference::kernel(spec)
            .unwrap_or_else(|e| fail(format!("the kernel does not parse: {e}")));
        mdh::reference::run(&k, sizes, inputs, &mut want, params).unwrap_or_else(|e| {
            fail(format!(
                "the reference interpreter fails at these sizes: {e}"
            ))
        });
    }
    let mut text = String::new();
    for b in &want {
        for i in 0..b.len() {
            text.push_str(&b.get(i).to_string());
            text.push('\n');
        }
    }
    // A cache only: a failed write costs time, not correctness.
    let _ = std::fs::write(path, text);
    want
}

/// The inputs, initial outputs and reference results of the tuned sizes.
pub fn setup(spec: &str, sizes: &[usize], params: &[Value], by_default: Option<ByDefault>) -> Case {
    let k = mdh::reference::kernel(spec)
        .unwrap_or_else(|e| fail(format!("the kernel does not parse: {e}")));
    let desc = KernelDesc::from_kernel(&k);
    let types = |bufs: &[mdh_core::spec::BufferDecl]| bufs.iter().map(|b| b.ty).collect::<Vec<_>>();
    let (inputs, init) = check::data(&desc, &types(&k.inputs), &types(&k.outputs), sizes);
    let path = arg("--reference").unwrap_or_else(|| fail("--reference PATH is missing".into()));
    let want = reference(spec, sizes, &inputs, &init, params, &path, by_default);
    let num = |name: &str, default: f64| arg(name).and_then(|s| s.parse().ok()).unwrap_or(default);
    Case {
        inputs,
        init,
        want,
        tol: check::tolerance(&desc, sizes),
        slow_s: num("--slow", f64::INFINITY),
        min_time_s: num("--min-time", 0.2),
    }
}

fn report(name: &str, fields: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{{\"kernel\": \"{name}\", {fields}}}");
    let _ = out.flush();
}

/// A candidate's CPU run on the given outputs.
pub type Run<'a> = Box<dyn FnMut(&mut [Buffer]) -> Result<(), mdh::Error> + 'a>;

/// Checks and times the named candidates: one after the other, or in
/// turns with `--interleave ROUNDS`.
pub fn measure_all(case: &Case, candidates: &mut [(&str, Run<'_>)]) {
    let rounds = arg("--interleave").map(|r| {
        r.parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| fail(format!("--interleave {r}: not a number of rounds")))
    });
    match rounds {
        None => {
            for (name, run) in candidates.iter_mut() {
                measure(case, name, run);
            }
        }
        Some(rounds) => interleave(case, candidates, rounds),
    }
}

/// Runs a candidate once and checks its result; its outputs and the
/// run's time, or `None` after reporting why it failed.
fn checked(case: &Case, name: &str, run: &mut Run<'_>) -> Option<(Vec<Buffer>, f64)> {
    let mut outs = case.init.clone();
    let t = Instant::now();
    let r = run(&mut outs);
    let first = t.elapsed().as_secs_f64();
    if let Err(e) = r {
        report(
            name,
            &format!(
                "\"status\": \"failed\", \"error\": {}",
                yaml_string(&e.to_string())
            ),
        );
        return None;
    }
    if let Some(m) = check::mismatch(&outs, &case.want, case.tol) {
        report(
            name,
            &format!("\"status\": \"wrong\", \"error\": {}", yaml_string(&m)),
        );
        return None;
    }
    Some((outs, first))
}

/// The shortest sample of an interleaved run: runs of a kernel faster than
/// this are repeated within one sample (a timer's and a single run's
/// jitter would be the noise otherwise).
const MIN_SAMPLE_S: f64 = 5e-3;

/// The interleaved re-timing: every candidate checked, one more run each
/// to learn its time, then `rounds` rounds in which each takes one sample
/// (the mean of the same number of runs for all), the order reversed every
/// other round.
fn interleave(case: &Case, candidates: &mut [(&str, Run<'_>)], rounds: usize) {
    let mut outs = Vec::new();
    for (name, run) in candidates.iter_mut() {
        match checked(case, name, run) {
            Some((o, _)) => outs.push(o),
            None => return,
        }
    }
    let mut slowest: f64 = 0.0;
    for ((_, run), o) in candidates.iter_mut().zip(&mut outs) {
        let t = Instant::now();
        let _ = run(o);
        slowest = slowest.max(t.elapsed().as_secs_f64());
    }
    let reps = (MIN_SAMPLE_S / slowest.max(1e-9)).ceil().max(1.0) as usize;
    let mut samples = vec![Vec::with_capacity(rounds); candidates.len()];
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    for _ in 0..rounds {
        for &i in &order {
            let t = Instant::now();
            for _ in 0..reps {
                let _ = (candidates[i].1)(&mut outs[i]);
            }
            samples[i].push(t.elapsed().as_secs_f64() / reps as f64);
        }
        order.reverse();
    }
    for ((name, _), mut s) in candidates.iter().zip(samples) {
        let list: Vec<String> = s.iter().map(|t| format!("{t:e}")).collect();
        s.sort_by(f64::total_cmp);
        report(
            name,
            &format!(
                "\"status\": \"ok\", \"time_s\": {:e}, \"runs\": {}, \"samples\": [{}]",
                s[s.len() / 2],
                rounds * reps,
                list.join(", ")
            ),
        );
    }
}

/// Checks and times one candidate.
fn measure(case: &Case, name: &str, run: &mut Run<'_>) {
    let Some((mut outs, first)) = checked(case, name, run) else {
        return;
    };
    let mut times = Vec::new();
    if first > case.slow_s {
        times.push(first);
    } else {
        let start = Instant::now();
        while times.len() < 3
            || (start.elapsed().as_secs_f64() < case.min_time_s && times.len() < 50)
        {
            let t = Instant::now();
            let _ = run(&mut outs);
            times.push(t.elapsed().as_secs_f64());
        }
    }
    times.sort_by(f64::total_cmp);
    report(
        name,
        &format!(
            "\"status\": \"ok\", \"time_s\": {:e}, \"runs\": {}",
            times[times.len() / 2],
            times.len()
        ),
    );
}

/// [`setup`] on every rank of `comm`: rank 0 first (it computes and saves
/// the reference outputs if no earlier batch did), then the others (they
/// read them), so that no two ranks write the file.
#[cfg(feature = "mpi")]
pub fn setup_ranks<C: mdh::mpi::Communicator>(comm: &C, setup: impl Fn() -> Case) -> Case {
    use mdh::mpi::CommunicatorCollectives as _;
    let first = (comm.rank() == 0).then(&setup);
    comm.barrier();
    first.unwrap_or_else(setup)
}

/// Checks and times one NOD candidate on every rank of `comm` (every rank
/// calls it: the runs are collective). A fixed number of runs, each timed
/// by its slowest rank; rank 0 reports the median and the bytes the
/// busiest rank sent per call.
#[cfg(feature = "mpi")]
pub fn measure_ranks<C: mdh::mpi::Communicator>(
    case: &Case,
    name: &str,
    comm: &C,
    mut run: impl FnMut(&mut [Buffer]) -> Result<(), mdh::Error>,
) {
    use mdh::mpi::CommunicatorCollectives as _;
    let root = comm.rank() == 0;
    let mut outs = case.init.clone();
    let t = Instant::now();
    // The ranks agree on a call's verdict: all see `Ok` or all an `Err`.
    if let Err(e) = run(&mut outs) {
        if root {
            report(
                name,
                &format!(
                    "\"status\": \"failed\", \"error\": {}",
                    yaml_string(&e.to_string())
                ),
            );
        }
        return;
    }
    let first = mdh::mpi::slowest(comm, t.elapsed().as_secs_f64());
    // Every rank holds all results (`Placement::All`): any mismatch fails
    // the candidate on every rank.
    let mismatch = check::mismatch(&outs, &case.want, case.tol);
    if mdh::mpi::slowest(comm, if mismatch.is_some() { 1.0 } else { 0.0 }) > 0.0 {
        if root {
            let m = mismatch.unwrap_or_else(|| "another rank's results differ".into());
            report(
                name,
                &format!("\"status\": \"wrong\", \"error\": {}", yaml_string(&m)),
            );
        }
        return;
    }
    let runs = if first > case.slow_s { 1 } else { 5 };
    let sent = mdh::mpi::bytes_sent();
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            comm.barrier();
            let t = Instant::now();
            let _ = run(&mut outs);
            mdh::mpi::slowest(comm, t.elapsed().as_secs_f64())
        })
        .collect();
    let bytes = (mdh::mpi::bytes_sent() - sent) as f64 / runs as f64;
    let busiest = mdh::mpi::slowest(comm, bytes);
    times.sort_by(f64::total_cmp);
    if root {
        report(
            name,
            &format!(
                "\"status\": \"ok\", \"time_s\": {:e}, \"runs\": {runs}, \"bytes_sent\": {}",
                times[times.len() / 2],
                busiest as u64
            ),
        );
    }
}
