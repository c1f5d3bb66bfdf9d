//! Measuring GPU plans on a device, each checked before its time counts:
//! what the tuner (`mdh-tune`) and run-time tuning (`gpu::tune`)
//! measure candidates with. A candidate runs once on deterministic inputs
//! ([`crate::search::check::data`]) and its outputs are compared with the
//! expected ones under the tuner's tolerance; the first plan measured gives
//! them where nothing else does (the plan that runs today). Then
//! repetitions until ≥ [`MIN_RUNS`] runs and ≥ [`MIN_TIME_S`] of device
//! time (at most [`MAX_RUNS`]), the median of the device's event times
//! (summed over the job's launches).

use std::time::Duration;

use mdh_rt::desc::{Bound, KernelDesc};
use mdh_rt::gpu_plan::GpuPlan;
use mdh_rt::value::{Buffer, Value};
use mdh_rt::Error;

use super::{bind_sizes, job, KernelInfo, Loaded, MainResources, RawDevice};
use crate::search::check;

/// Repetitions of a candidate: at least this many, and more while their
/// time is below `MIN_TIME_S` (at most `MAX_RUNS`).
pub const MIN_RUNS: usize = 3;
pub const MIN_TIME_S: f64 = 0.2;
pub const MAX_RUNS: usize = 100;
/// The shortest sample of an interleaved re-timing (as the CPU harness's).
pub const MIN_SAMPLE_S: f64 = 5e-3;

/// What a candidate is measured on: the device, the call's sizes, its data
/// and the results to compare with.
pub struct Bench<'a, D: RawDevice> {
    pub dev: &'a D,
    pub desc: &'static KernelDesc,
    pub bound: Bound,
    pub info: &'static KernelInfo,
    pub inputs: Vec<Buffer>,
    pub init: Vec<Buffer>,
    pub params: Vec<Value>,
    /// The expected outputs (`None` until the first plan measured gave
    /// them).
    pub want: Option<Vec<Buffer>>,
    pub tol: check::Tol,
}

/// How a measured candidate fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Correct; timed.
    Ok,
    /// Its result differs from the expected one: never a winner.
    Wrong,
    /// It failed to build or to run.
    Failed,
}

/// One candidate's outcome.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub status: Status,
    /// The median time (`Status::Ok` only).
    pub time_s: Option<f64>,
    pub error: Option<String>,
    /// What the compiler reported of its `mdh_main`, where the runtime
    /// tells (CUDA).
    pub resources: Option<MainResources>,
}

impl Outcome {
    fn failed(e: impl ToString) -> Outcome {
        Outcome {
            status: Status::Failed,
            time_s: None,
            error: Some(e.to_string()),
            resources: None,
        }
    }
}

impl<'a, D: RawDevice> Bench<'a, D> {
    /// The bench of the kernel of `desc` and `info` at `sizes` on `dev`:
    /// deterministic data, nothing expected yet.
    pub fn new(
        dev: &'a D,
        desc: &'static KernelDesc,
        info: &'static KernelInfo,
        sizes: &[usize],
    ) -> Result<Self, Error> {
        let bound = bind_sizes(desc, sizes)?;
        let (inputs, init) = check::data(desc, info.in_types, info.out_types, sizes);
        Ok(Bench {
            dev,
            desc,
            bound,
            info,
            inputs,
            init,
            params: info.param_types.iter().map(|&t| check::param(t)).collect(),
            want: None,
            tol: check::tolerance(desc, sizes),
        })
    }

    /// Compiles and runs `plan` once and checks its result: the loaded
    /// plan and the checked run's time, or why it failed.
    pub fn checked(&mut self, plan: &GpuPlan) -> Result<(Loaded<D>, Duration), Outcome> {
        let lim = self.dev.limits();
        let job = match job(
            self.desc,
            &self.bound,
            self.info,
            &[],
            Some(plan),
            self.dev.device_name(),
            lim,
        ) {
            Ok(Some(j)) => j,
            Ok(None) => return Err(Outcome::failed("nothing to compute at these sizes")),
            Err(e) => return Err(Outcome::failed(e)),
        };
        let loaded = match Loaded::new(
            self.dev,
            &job,
            self.info.acc_bytes,
            &self.inputs,
            &self.init,
            &self.params,
        ) {
            Ok(l) => l,
            Err(e) => return Err(Outcome::failed(e)),
        };
        let first = loaded.run(self.dev).map_err(Outcome::failed)?;
        let mut got = self.init.clone();
        loaded.read(self.dev, &mut got).map_err(Outcome::failed)?;
        match &self.want {
            Some(want) => {
                if let Some(m) = check::mismatch(&got, want, self.tol) {
                    return Err(Outcome {
                        status: Status::Wrong,
                        time_s: None,
                        error: Some(m),
                        resources: loaded.resources(self.dev),
                    });
                }
            }
            // The first plan's result becomes the expected one.
            None => self.want = Some(got),
        }
        Ok((loaded, first))
    }

    /// Compiles and runs `plan` once, checks its result, then times it:
    /// the checked run is the warm-up; repetitions give the median of the
    /// device's own times (events). A checked run slower than `slow_s` is
    /// not repeated: it cannot win.
    pub fn measure(&mut self, plan: &GpuPlan, slow_s: f64) -> Outcome {
        let (loaded, first) = match self.checked(plan) {
            Ok(l) => l,
            Err(o) => return o,
        };
        let mut times = vec![first];
        if first.as_secs_f64() <= slow_s {
            times.clear();
            let mut total = Duration::ZERO;
            while times.len() < MIN_RUNS
                || (total.as_secs_f64() < MIN_TIME_S && times.len() < MAX_RUNS)
            {
                match loaded.run(self.dev) {
                    Ok(t) => {
                        total += t;
                        times.push(t);
                    }
                    Err(e) => return Outcome::failed(e),
                }
            }
        }
        times.sort();
        Outcome {
            status: Status::Ok,
            time_s: Some(times[times.len() / 2].as_secs_f64()),
            error: None,
            resources: loaded.resources(self.dev),
        }
    }

    /// `plans` re-timed in turns (the check of a winner against the plan
    /// that runs today): each checked, then `rounds` rounds of one sample
    /// each (the mean device time of the same number of launches for all,
    /// at least [`MIN_SAMPLE_S`] for the slowest), the order reversed every
    /// other round so that a drift falls on all alike.
    pub fn interleave(
        &mut self,
        plans: &[&GpuPlan],
        rounds: usize,
    ) -> Result<Vec<Vec<f64>>, String> {
        let mut loaded = Vec::with_capacity(plans.len());
        for p in plans {
            let (l, first) = self.checked(p).map_err(|o| {
                format!(
                    "re-timing: plan {p:?} no longer runs correctly: {}",
                    o.error.unwrap_or_default()
                )
            })?;
            loaded.push((l, first.as_secs_f64()));
        }
        let slowest = loaded.iter().map(|l| l.1).fold(1e-9, f64::max);
        let reps = (MIN_SAMPLE_S / slowest).ceil().max(1.0) as usize;
        let mut samples = vec![Vec::with_capacity(rounds); plans.len()];
        let mut order: Vec<usize> = (0..plans.len()).collect();
        for _ in 0..rounds {
            for &i in &order {
                let mut total = Duration::ZERO;
                for _ in 0..reps {
                    total += loaded[i]
                        .0
                        .run(self.dev)
                        .map_err(|e| format!("re-timing: {e}"))?;
                }
                samples[i].push(total.as_secs_f64() / reps as f64);
            }
            order.reverse();
        }
        Ok(samples)
    }
}
