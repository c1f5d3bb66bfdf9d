//! The GPU throughput model as the tuner reads it: the runtime's model
//! ([`mdh::gpu::model`], one model for the tuner, run-time tuning and the
//! analytical default plans) over a checked kernel, whose coefficients are
//! those known at compile time.

pub use mdh::gpu::model::*;

use mdh_core::desc::KernelDesc;
use mdh_core::gpu_plan::GpuPlan;
use mdh_core::plan::elem_bytes;
use mdh_core::Checked;

#[cfg(test)]
use mdh::gpu::DeviceCompute;

/// The model's view of a checked kernel.
pub fn model_kernel(k: &Checked) -> ModelKernel {
    let access = |a: &mdh_core::analysis::Access| ModelAccess {
        buffer: a.buffer,
        bytes: elem_bytes(a.ty),
        uses: a.uses.clone(),
        coefs: a.static_coefs.clone(),
    };
    ModelKernel {
        desc: KernelDesc::from_kernel(k),
        inputs: k.analysis().inputs.iter().map(access).collect(),
        outputs: k.analysis().outputs.iter().map(access).collect(),
    }
}

/// The model of `plan` for kernel `k` at `extents` moving `bytes` on `m`
/// (see [`mdh::gpu::model::predict`]).
pub fn predict(
    k: &Checked,
    plan: &GpuPlan,
    extents: &[usize],
    bytes: Bytes,
    m: &GpuModel,
    res: Option<Resources>,
    shared_bytes: u64,
) -> Prediction {
    mdh::gpu::model::predict(&model_kernel(k), plan, extents, bytes, m, res, shared_bytes)
}

#[cfg(test)]
mod tests;
