//! Prepared calls: what the generated wrappers' `launch` and `run` keep per
//! (kernel, sizes, plan, device), so that a repeated call does no source
//! work and allocates nothing.
//!
//! The first call with some sizes binds them to the kernel (checking the
//! buffer lengths), chooses the plan, completes the source, compiles it and
//! keeps all of it, with the launches, in the device's
//! [`Memo`](mdh_gpu::memo::Memo); later calls with the same sizes and plan
//! find it by a hash of (kernel, sizes, plan)
//! and only compare the buffer lengths with those the sizes give. Entries
//! live as long as the device (the memo is the device's).
//!
//! The buffers of partial results (one per output access, when PW
//! dimensions are split across work-groups) are kept too: a call takes an
//! idle set, or allocates one (zeroed once, on the device), and gives it
//! back when its launches are issued. A set is only taken again on the
//! queue (CUDA stream) that last used it, so that a kernel still running
//! there finishes first (a queue runs its work in order; OpenCL launches
//! are blocking anyway). The kernels write every partial result that
//! `mdh_combine` reads, so the buffers need no zeroing per call (the CPU
//! execution of CUDA in the tests poisons them to check it).

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use mdh_rt::desc::{ArgSizes, Bound, KernelDesc};
use mdh_rt::gpu_plan::GpuPlan;
use mdh_rt::Error;

use mdh_gpu::device::{BufArg, GpuDevice, KernelArgs, RawDevice};
use mdh_rt::value::Value;

use super::{job, Epilogue, GpuEntry, Job, KernelInfo, Launch};

/// A call's kernel, as the generated wrappers describe it, and its sizes:
/// what run-time tuning works on.
pub struct CallKernel<'a> {
    pub info: &'static KernelInfo,
    pub desc: &'static KernelDesc,
    /// The configured entries.
    pub entries: &'a [GpuEntry],
    pub bound: &'a Bound,
}

/// What a generated wrapper passes of its kernel to [`call`]: its
/// statics and its configured entries.
#[derive(Clone, Copy)]
pub struct Wrapped {
    pub info: &'static KernelInfo,
    pub desc: &'static KernelDesc,
    pub entries: fn() -> Vec<GpuEntry>,
}

/// A prepared call of one kernel with some sizes and plan on one device.
pub struct Call<D: GpuDevice> {
    kernel: usize,
    sizes: Vec<usize>,
    plan: Option<GpuPlan>,
    /// A fused epilogue's sizes and lengths ([`Epilogue::key`]).
    epilogue: Option<Vec<usize>>,
    /// The kernel whose plan run-time tuning keeps this call runs (its
    /// own, or a fused epilogue's producer's), named as `kernel` is.
    tuned_as: usize,
    in_lens: Vec<usize>,
    out_lens: Vec<usize>,
    ready: Option<Ready<D>>,
}

/// A call with something to compute: its job, compiled.
pub struct Ready<D: GpuDevice> {
    job: Job,
    launches: Vec<Launch>,
    program: D::Program,
    acc_bytes: &'static [usize],
    /// Idle sets of partial-result buffers, with the queue that used each.
    idle: Mutex<Vec<(usize, Vec<D::Buffer>)>>,
}

impl<D: GpuDevice> Call<D> {
    /// `None` when there is nothing to compute (a kept dimension is empty).
    pub fn ready(&self) -> Option<&Ready<D>> {
        self.ready.as_ref()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<D: GpuDevice> Ready<D> {
    pub fn job(&self) -> &Job {
        &self.job
    }

    /// The launches of the job, in order.
    pub fn launches(&self) -> &[Launch] {
        &self.launches
    }

    pub fn program(&self) -> &D::Program {
        &self.program
    }

    /// A set of partial-result buffers for one call on `dev`'s queue, given
    /// back when the returned value is dropped.
    pub fn partials(&self, dev: &D) -> Result<Partials<'_, D>, Error> {
        let queue = dev.queue_id();
        let kept = {
            let mut idle = lock(&self.idle);
            idle.iter()
                .position(|(q, _)| *q == queue)
                .map(|i| idle.swap_remove(i).1)
        };
        let bufs = match kept {
            Some(b) => b,
            None => self
                .acc_bytes
                .iter()
                .map(|&eb| dev.scratch(bytes(self.job.partial_len, eb)?))
                .collect::<Result<_, _>>()?,
        };
        Ok(Partials {
            ready: self,
            queue,
            bufs,
        })
    }

    /// The number of idle sets of partial-result buffers (for tests).
    pub fn idle_partials(&self) -> usize {
        lock(&self.idle).len()
    }
}

/// The partial-result buffers of one call (see [`Ready::partials`]).
pub struct Partials<'a, D: GpuDevice> {
    ready: &'a Ready<D>,
    queue: usize,
    bufs: Vec<D::Buffer>,
}

impl<D: GpuDevice> Partials<'_, D> {
    /// The buffers, one per output access, each with its element bytes.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&mut D::Buffer, usize)> {
        self.bufs
            .iter_mut()
            .zip(self.ready.acc_bytes.iter().copied())
    }
}

impl<D: GpuDevice> Drop for Partials<'_, D> {
    fn drop(&mut self) {
        let bufs = std::mem::take(&mut self.bufs);
        lock(&self.ready.idle).push((self.queue, bufs));
    }
}

/// The hash a call is found by.
fn key_hash(
    kernel: usize,
    sizes: &[usize],
    plan: Option<&GpuPlan>,
    epilogue: Option<&[usize]>,
) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    kernel.hash(&mut h);
    sizes.hash(&mut h);
    plan.hash(&mut h);
    epilogue.hash(&mut h);
    h.finish()
}

/// The prepared call of `kernel` with the sizes and buffer lengths `args`
/// and `plan` (`None`: the plan `tuned` gives, which run-time tuning
/// keeps, else the kernel's configured entries) on `dev`:
/// found, or made and kept. An `Err` when the lengths do not fit the sizes,
/// or the plan is invalid or does not fit the device; errors are not kept.
/// `tuned` is [`super::devices::tuned_plan`] (passed by the generated
/// wrappers: this module does not know run-time tuning, which forgets
/// prepared calls). With `epilogue` the kernel is a producing stage with
/// its epilogue fused (its template is the fused one): its arguments
/// are part of the call, and the plan tuning keeps for the producer alone
/// is the fused kernel's (the epilogue adds nothing to the hot loop).
pub fn call<D: GpuDevice>(
    dev: &D,
    kernel: Wrapped,
    plan: Option<&GpuPlan>,
    args: ArgSizes<'_>,
    tuned: fn(&D, &CallKernel<'_>) -> Option<GpuPlan>,
    epilogue: Option<&Epilogue<'_>>,
) -> Result<Arc<Call<D>>, Error> {
    let ArgSizes {
        sizes,
        in_lens,
        out_lens,
    } = args;
    let Wrapped {
        info,
        desc,
        entries,
    } = kernel;
    // The kernel is named by the address of its `KernelInfo` (a static of
    // the generated module).
    let kernel = info as *const KernelInfo as usize;
    let ekey = epilogue.map(Epilogue::key);
    let hash = key_hash(kernel, sizes, plan, ekey.as_deref());
    let is = |c: &Call<D>| {
        c.kernel == kernel && c.sizes == sizes && c.plan.as_ref() == plan && c.epilogue == ekey
    };
    if let Some(c) = dev.memo().find(hash, is) {
        if c.in_lens == in_lens && c.out_lens == out_lens {
            return Ok(c);
        }
    }
    // Checks the lengths (saying which buffer is wrong) and the accesses,
    // the epilogue's too.
    let bound = desc.bind(sizes, in_lens, out_lens)?;
    let epilogue_defines = epilogue.map(Epilogue::defines).transpose()?;
    let entries = entries();
    let tuned = match plan {
        Some(_) => None,
        None => tuned(
            dev,
            &CallKernel {
                info: epilogue.map_or(info, |e| e.producer),
                desc,
                entries: &entries,
                bound: &bound,
            },
        ),
    };
    let made = |forced: Option<&GpuPlan>| {
        job(
            desc,
            &bound,
            info,
            &entries,
            forced,
            dev.device_name(),
            dev.limits(),
        )
    };
    if plan.is_none() && tuned.is_none() && crate::machine::explaining() {
        let why = super::CallDesc {
            desc,
            bound: &bound,
            info,
            entries: &entries,
            device: dev.device_name(),
            lim: dev.limits(),
        }
        .explain_choice();
        eprintln!("mdh: {why}");
    }
    let job = match tuned.as_ref().map(|t| made(Some(t))) {
        Some(Ok(job)) => job,
        Some(Err(e)) => {
            // The key holds the device and the kernel: only a cache file
            // edited by hand gets here.
            log::warn!(
                "mdh: {}: the plan of the tuning cache does not run here ({e}); the configured plans run",
                desc.name
            );
            made(plan)?
        }
        None => made(plan)?,
    };
    let job = job.map(|j| super::epilogue::with_defines(j, epilogue_defines.as_deref()));
    let ready = match job {
        None => None,
        Some(job) => Some(Ready {
            program: dev.compile(&job.source)?,
            launches: job.launches(),
            job,
            acc_bytes: info.acc_bytes,
            idle: Mutex::new(Vec::new()),
        }),
    };
    let made = Arc::new(Call {
        kernel,
        sizes: sizes.to_vec(),
        plan: plan.cloned(),
        epilogue: ekey.clone(),
        tuned_as: epilogue.map_or(kernel, |e| e.producer as *const KernelInfo as usize),
        in_lens: in_lens.to_vec(),
        out_lens: out_lens.to_vec(),
        ready,
    });
    Ok(dev.memo().insert(hash, made, is))
}

/// Runs the launches of `call` on `dev` with its arguments: the typed
/// device buffers `inputs` and `outputs` and the params; the buffers of
/// partial results are the call's (see the module documentation). Each
/// launch takes what its kernel declares, in the order of
/// [`Launch::arg_order`], then a fused epilogue's other inputs
/// (`epilogue`: every kernel of a fused template declares them last).
/// What the generated `launch` and `run` run, the same for every runtime.
pub fn launch<D: RawDevice>(
    dev: &D,
    call: &Call<D>,
    inputs: &[&dyn BufArg<D>],
    outputs: &mut [&mut dyn BufArg<D>],
    params: &[Value],
    epilogue: &[&dyn BufArg<D>],
) -> Result<(), Error> {
    let Some(ready) = call.ready() else {
        return Ok(());
    };
    let mut parts = ready.partials(dev)?;
    for l in ready.launches() {
        let mut k = dev.kernel(ready.program(), &l.kernel)?;
        if l.inputs {
            for b in inputs {
                k = b.pass(k);
            }
        }
        for b in outputs.iter_mut() {
            k = b.pass_mut(k);
        }
        if l.partials {
            for (p, elem) in parts.iter_mut() {
                k = k.bytes_mut(p, elem);
            }
        }
        for &v in params {
            k = k.scalar(v);
        }
        for b in epilogue {
            k = b.pass(k);
        }
        k.issue(l)?;
    }
    Ok(())
}

/// Drops the prepared calls with `sizes` and the configured plans that run
/// the plan run-time tuning keeps for the kernel of `info` (its own, and
/// those of stages fused with it) from `dev`'s memo: the next call chooses
/// its plan again (after tuning).
pub(super) fn forget<D: GpuDevice>(dev: &D, info: &'static KernelInfo, sizes: &[usize]) {
    let kernel = info as *const KernelInfo as usize;
    dev.memo()
        .remove_all(|c: &Call<D>| c.tuned_as == kernel && c.sizes == sizes && c.plan.is_none());
}

/// The bytes of `len` partial results of `elem` bytes.
pub(super) fn bytes(len: usize, elem: usize) -> Result<usize, Error> {
    len.checked_mul(elem).ok_or_else(|| {
        Error::Argument(format!(
            "{len} partial results of {elem} bytes overflow the address space"
        ))
    })
}
