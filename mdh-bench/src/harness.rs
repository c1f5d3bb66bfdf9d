//! Timing and verification: every implementation of a case is warmed up,
//! timed (median of several repetitions) and its result compared with mdh's.

use std::time::{Duration, Instant};

/// The result of one implementation, read after its last timed run.
pub enum Output {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

impl Output {
    fn len(&self) -> usize {
        match self {
            Output::F32(v) => v.len(),
            Output::I64(v) => v.len(),
        }
    }
}

/// One implementation of a case: `run` computes the result into state it
/// owns (inputs are shared, outputs its own, initialised to NaN or a
/// sentinel so that a run that writes nothing cannot pass), `output` reads it.
pub struct Impl {
    pub name: &'static str,
    /// The implementation this one's speedup is stated against: `mdh` for
    /// the CPU peers, `mdh-cuda` for the GPU libraries; its own name for a
    /// reference row.
    pub versus: &'static str,
    /// The relative tolerance of this row's comparison with mdh's result,
    /// where it is not the case's (a row of lower output precision).
    rtol: Option<f64>,
    run: Box<dyn FnMut() -> Result<(), String>>,
    output: Box<dyn Fn() -> Output>,
}

struct Owned<S> {
    state: S,
}

/// An implementation over state `S` that `run` mutates and `output` reads.
pub fn imp<S: 'static>(
    name: &'static str,
    state: S,
    mut run: impl FnMut(&mut S) -> Result<(), String> + 'static,
    output: impl Fn(&S) -> Output + 'static,
) -> Impl {
    let cell = std::rc::Rc::new(std::cell::RefCell::new(Owned { state }));
    let c2 = cell.clone();
    Impl {
        name,
        versus: "mdh",
        rtol: None,
        run: Box::new(move || run(&mut cell.borrow_mut().state)),
        output: Box::new(move || output(&c2.borrow().state)),
    }
}

impl Impl {
    /// States this implementation's speedup against `versus` instead of mdh.
    pub fn versus(self, versus: &'static str) -> Impl {
        Impl { versus, ..self }
    }

    /// Compares this implementation's result with mdh's at `rtol` instead
    /// of the case's tolerance.
    pub fn rtol(self, rtol: f64) -> Impl {
        Impl {
            rtol: Some(rtol),
            ..self
        }
    }
}

/// A benchmark case: `impls[0]` is mdh, the others its peers.
pub struct Case {
    pub what: String,
    /// Floating-point operations of one run (for GFLOP/s).
    pub flops: Option<f64>,
    /// Whether the flops are products of bf16 inputs summed in f32: held
    /// against the bf16 pair peak where the CPU has one (`vdpbf16ps`).
    pub bf16_products: bool,
    /// Bytes one run must move at least (for GB/s).
    pub bytes: Option<f64>,
    /// Relative tolerance of the comparison with mdh (0 = exact).
    pub rtol: f64,
    pub impls: Vec<Impl>,
    /// What the reader of the table should know (e.g. a skipped peer).
    pub notes: Vec<String>,
}

/// The shortest timed sample.
const SAMPLE: Duration = Duration::from_millis(2);

/// How many repetitions: enough to fill `budget` per implementation, at
/// least `min`, at most `max`.
#[derive(Clone, Copy)]
pub struct Plan {
    pub budget: Duration,
    pub min: usize,
    pub max: usize,
}

pub struct Timing {
    pub name: &'static str,
    pub versus: &'static str,
    pub median: Duration,
    /// Timed runs (samples × runs per sample).
    pub reps: usize,
    /// `None`: agrees with mdh (or is mdh); `Some(msg)`: does not.
    pub mismatch: Option<String>,
}

/// Rounds in which every implementation is timed in turn (see [`measure`]).
const ROUNDS: usize = 3;

/// Times every implementation of `case` and then compares each result with
/// mdh's.
///
/// The implementations take turns over [`ROUNDS`] rounds, each timed for a
/// share of its samples per round, and the median is taken over all of its
/// samples: a slow drift of the machine's speed (other tenants, clock
/// frequency) then falls on all of them alike instead of on the one that
/// happened to run during it. Before each turn a pause lets OpenBLAS's and
/// OpenMP's spinning worker threads of the previous implementation go to
/// sleep, so that they do not steal the cores of the next.
pub fn measure(case: &mut Case, plan: Plan, log: &dyn Fn(&str)) -> Result<Vec<Timing>, String> {
    // Per implementation: runs per sample, samples per round, samples.
    let mut shapes: Vec<Option<(usize, usize)>> = vec![None; case.impls.len()];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); case.impls.len()];
    for _ in 0..ROUNDS {
        for ((im, shape), times) in case.impls.iter_mut().zip(&mut shapes).zip(&mut times) {
            std::thread::sleep(Duration::from_millis(200));
            let mut run = || (im.run)().map_err(|e| format!("{}: {e}", im.name));
            // Warm-up, first round: at least two runs (the first may build
            // an OpenCL program), and more while they are quick (first-use
            // allocation, page faults, thread-pool start-up, caches); the
            // last one sizes the samples. Later rounds: at least one run
            // (caches after the pause).
            let (first, warm) = match shape {
                None => (true, Duration::from_millis(100)),
                Some(_) => (false, Duration::from_millis(20)),
            };
            let start = Instant::now();
            if first {
                run()?;
            }
            let mut once = None;
            while once.is_none() || start.elapsed() < warm {
                let t = Instant::now();
                run()?;
                once = Some(t.elapsed());
            }
            // One sample = `inner` back-to-back runs lasting at least
            // SAMPLE (so that microsecond kernels are not timed one call at
            // a time).
            let (inner, per_round) = *shape.get_or_insert_with(|| {
                let once = once.unwrap_or_default().as_secs_f64().max(1e-9);
                let inner = ((SAMPLE.as_secs_f64() / once).ceil() as usize).max(1);
                let reps = ((plan.budget.as_secs_f64() / (once * inner as f64)) as usize)
                    .clamp(plan.min, plan.max);
                (inner, reps.div_ceil(ROUNDS))
            });
            for _ in 0..per_round {
                let t = Instant::now();
                for _ in 0..inner {
                    run()?;
                }
                times.push(t.elapsed() / inner as u32);
            }
        }
    }
    let mut timings = Vec::new();
    let mut outputs = Vec::new();
    for ((im, shape), mut times) in case.impls.iter().zip(shapes).zip(times) {
        times.sort();
        let median = times[times.len() / 2];
        let reps = times.len() * shape.map_or(1, |(inner, _)| inner);
        log(&format!(
            "    {:<14} {:>10.3} ms  ({reps} timed runs)",
            im.name,
            median.as_secs_f64() * 1e3
        ));
        timings.push(Timing {
            name: im.name,
            versus: im.versus,
            median,
            reps,
            mismatch: None,
        });
        outputs.push((im.output)());
    }
    let reference = &outputs[0];
    let rows = timings.iter_mut().zip(&outputs).zip(&case.impls).skip(1);
    for ((t, out), im) in rows {
        t.mismatch = compare(reference, out, im.rtol.unwrap_or(case.rtol));
    }
    // mdh itself must have produced finite values everywhere.
    if let Output::F32(v) = reference {
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            timings[0].mismatch = Some(format!("mdh's result is not finite at {i}: {}", v[i]));
        }
    }
    Ok(timings)
}

/// `None` when `got` agrees with `want` (mdh's result): same length and,
/// element-wise, `|got - want| <= rtol · max(|want|, 1e-3 · max_i |want_i|)`
/// (the floor keeps elements near zero from failing on rounding alone;
/// integers must be equal).
pub fn compare(want: &Output, got: &Output, rtol: f64) -> Option<String> {
    if want.len() != got.len() {
        return Some(format!("length {} != mdh's {}", got.len(), want.len()));
    }
    match (want, got) {
        (Output::F32(w), Output::F32(g)) => {
            let scale = w.iter().fold(0.0f64, |m, x| m.max((*x as f64).abs()));
            let mut bad = 0usize;
            let mut worst: Option<(usize, f64)> = None;
            for (i, (&a, &b)) in w.iter().zip(g).enumerate() {
                let (a, b) = (a as f64, b as f64);
                let err = (a - b).abs() / a.abs().max(1e-3 * scale).max(f64::MIN_POSITIVE);
                if err.is_nan() || err > rtol {
                    bad += 1;
                    if worst.is_none() || worst.is_some_and(|(_, e)| err.is_nan() || err > e) {
                        worst = Some((i, err));
                    }
                }
            }
            worst.map(|(i, e)| {
                format!(
                    "{bad} of {} elements differ; worst at {i}: {} vs mdh's {} (relative error {e:.2e} > {rtol:.0e})",
                    w.len(),
                    g[i],
                    w[i]
                )
            })
        }
        (Output::I64(w), Output::I64(g)) => {
            let bad = w.iter().zip(g).filter(|(a, b)| a != b).count();
            let first = w.iter().zip(g).position(|(a, b)| a != b)?;
            Some(format!(
                "{bad} of {} elements differ; first at {first}: {} vs mdh's {}",
                w.len(),
                g[first],
                w[first]
            ))
        }
        _ => Some("result types differ".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_floats() {
        let want = Output::F32(vec![1.0, 100.0, 0.0]);
        assert!(compare(&want, &Output::F32(vec![1.0005, 99.95, 0.00005]), 1e-3).is_none());
        assert!(compare(&want, &Output::F32(vec![1.01, 100.0, 0.0]), 1e-3).is_some());
        assert!(compare(&want, &Output::F32(vec![1.0, 100.0, f32::NAN]), 1e-3).is_some());
        assert!(compare(&want, &Output::F32(vec![1.0, 100.0]), 1e-3).is_some());
    }

    #[test]
    fn compare_integers_exactly() {
        let want = Output::I64(vec![5, -7]);
        assert!(compare(&want, &Output::I64(vec![5, -7]), 0.0).is_none());
        assert!(compare(&want, &Output::I64(vec![5, -6]), 0.0).is_some());
        assert!(compare(&want, &Output::F32(vec![5.0, -7.0]), 0.0).is_some());
    }

    #[test]
    fn a_run_that_writes_nothing_fails() {
        let mut case = Case {
            what: String::new(),
            flops: None,
            bf16_products: false,
            bytes: None,
            rtol: 1e-3,
            impls: vec![
                imp(
                    "mdh",
                    vec![0.0f32; 4],
                    |v| {
                        v.fill(2.0);
                        Ok(())
                    },
                    |v| Output::F32(v.clone()),
                ),
                imp(
                    "lazy",
                    vec![f32::NAN; 4],
                    |_| Ok(()),
                    |v| Output::F32(v.clone()),
                ),
            ],
            notes: Vec::new(),
        };
        let plan = Plan {
            budget: Duration::ZERO,
            min: 1,
            max: 1,
        };
        let t = measure(&mut case, plan, &|_| {}).unwrap();
        assert!(t[0].mismatch.is_none());
        assert!(t[1].mismatch.is_some());
    }
}
