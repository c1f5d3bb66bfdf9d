//! The plan run-time tuning keeps for a prepared call ([`tuned_plan`]),
//! where the device is a runtime's ([`GpuDevice::with_raw`]): what the
//! generated wrappers hand the call path ([`super::calls::call`]). Here,
//! above both the prepared calls and run-time tuning ([`super::tune`]), so
//! that neither imports the other.

use mdh_gpu::device::{GpuDevice, RawDevice, WithRaw};
use mdh_rt::gpu_plan::GpuPlan;

use super::calls::CallKernel;

/// The plan run-time tuning keeps for a call of `k` on `dev`
/// ([`super::tune::tuned_plan`]); `None` (the configured choice runs) on
/// devices that are not a runtime's (the tests').
pub fn tuned_plan<D: GpuDevice>(dev: &D, k: &CallKernel<'_>) -> Option<GpuPlan> {
    dev.with_raw(TunedPlan(k)).flatten()
}

/// [`super::tune::tuned_plan`] of a call's kernel, on a raw device.
struct TunedPlan<'k, 'a>(&'k CallKernel<'a>);

impl WithRaw for TunedPlan<'_, '_> {
    type Output = Option<GpuPlan>;

    fn call<D: RawDevice>(self, dev: &D) -> Option<GpuPlan> {
        super::tune::tuned_plan(dev, self.0)
    }
}
