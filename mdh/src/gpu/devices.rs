//! The prepared call of the generated wrappers on any device ([`call`]):
//! the call path ([`super::calls`]) asks run-time tuning
//! ([`super::tune`]) for the plan it keeps, where the device is a
//! runtime's ([`GpuDevice::with_raw`]). Here, above both, so that neither
//! imports the other.

use std::sync::Arc;

use mdh_gpu::device::{GpuDevice, RawDevice, WithRaw};
use mdh_rt::desc::{ArgSizes, KernelDesc};
use mdh_rt::gpu_plan::GpuPlan;
use mdh_rt::Error;

use super::calls::{call_with, Call, CallKernel};
use super::{GpuEntry, KernelInfo};

/// The prepared call of the kernel of `info` and `desc` with the sizes and
/// buffer lengths `args` and `plan` on `dev` (see [`call_with`]); `None`:
/// the plan run-time tuning keeps for the call, on a runtime's device, else
/// the configured plans, `entries`.
pub fn call<D: GpuDevice>(
    dev: &D,
    info: &'static KernelInfo,
    desc: &'static KernelDesc,
    entries: fn() -> Vec<GpuEntry>,
    plan: Option<&GpuPlan>,
    args: ArgSizes<'_>,
) -> Result<Arc<Call<D>>, Error> {
    call_with(dev, info, desc, entries, plan, args, |k| {
        dev.with_raw(TunedPlan(k)).flatten()
    })
}

/// [`super::tune::tuned_plan`] of a call's kernel, on a raw device.
struct TunedPlan<'k, 'a>(&'k CallKernel<'a>);

impl WithRaw for TunedPlan<'_, '_> {
    type Output = Option<GpuPlan>;

    fn call<D: RawDevice>(self, dev: &D) -> Option<GpuPlan> {
        super::tune::tuned_plan(dev, self.0)
    }
}
