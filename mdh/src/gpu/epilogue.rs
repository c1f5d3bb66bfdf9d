//! A fused epilogue's part of a GPU call: a producing stage of a kernel of
//! stages run with its epilogue in its stores (mdh-core's `fusion`; the
//! kernel of stages' `run` calls the fused module's `launch`). The fused
//! template applies the epilogue's scalar function where the producer
//! writes a final result (after the work-group's combine, or in the second
//! pass); this module binds the epilogue's own arguments for one call and
//! completes the source with their definitions.

use mdh_rt::desc::{ArgSizes, KernelDesc};
use mdh_rt::gpu_plan::epilogue_defines;
use mdh_rt::Error;

use super::{Job, KernelInfo};

/// A fused epilogue's part of one call.
#[derive(Clone, Copy)]
pub struct Epilogue<'a> {
    /// The epilogue stage's description: its binding checks the
    /// epilogue's own buffers (lengths, accesses in bounds).
    pub desc: &'static KernelDesc,
    /// The producing stage's own kernel: the plan run-time tuning keeps
    /// for it runs the fused kernel too.
    pub producer: &'static KernelInfo,
    /// The epilogue's input buffer that is the intermediate (the
    /// producer's results, never stored).
    pub tmp: usize,
    /// The epilogue's sizes and buffer lengths (the intermediate's: the
    /// output's, whose shape it has).
    pub args: ArgSizes<'a>,
}

impl Epilogue<'_> {
    /// What names the epilogue's part of a prepared call: its sizes and
    /// buffer lengths.
    pub(super) fn key(&self) -> Vec<usize> {
        let a = self.args;
        (a.sizes.iter().chain(a.in_lens).chain(a.out_lens))
            .copied()
            .collect()
    }

    /// The epilogue's definitions for this call; an `Err` where its
    /// arguments do not fit its sizes.
    pub fn defines(&self) -> Result<String, Error> {
        let a = self.args;
        let bound = self.desc.bind(a.sizes, a.in_lens, a.out_lens)?;
        Ok(epilogue_defines(self.desc, &bound, self.tmp))
    }

    /// The producer's job of a call (`None`: nothing to compute) with the
    /// epilogue's definitions: what the fused module's `job` returns for
    /// tests.
    pub fn job(&self, job: Option<Job>) -> Result<Option<Job>, Error> {
        let defines = self.defines()?;
        Ok(job.map(|j| with_defines(j, Some(&defines))))
    }
}

/// `job` with `defines` (an epilogue's) before its source.
pub(super) fn with_defines(mut job: Job, defines: Option<&str>) -> Job {
    if let Some(d) = defines {
        job.source = format!("{d}{}", job.source);
    }
    job
}
