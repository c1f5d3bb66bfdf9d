//! OpenCL calls whose outputs have guards on the device: each output lies
//! in a larger device buffer, between guard bytes that the kernels never
//! compute, passed to the kernel as a sub-buffer; after the launches the
//! whole buffer is read back and a written guard byte is a failure, as
//! `check::Guarded` is for CPU outputs and the canaries are for the CUDA
//! execution on the CPU.

use mdh::gpu::{GpuDevice as _, RawArg, RawDevice as _};
use mdh::opencl::Device;
use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_core::codegen::c_expr::Dialect;
use mdh_core::gpu_plan::GpuPlan;
use mdh_gpu::opencl::opencl3::memory::CL_MEM_READ_WRITE;

use super::cuda_cpu::{bound_job, JobFn};

/// Guard bytes after an output (a vector of the widest type, and more).
const TAIL: usize = 256;
/// What the guard bytes hold.
const PATTERN: u8 = 0xA5;

/// Like `NAME::opencl::run_dyn` (the same job: source, plan, launches),
/// with guards around every output; `Err` naming the output and the
/// guard bytes a kernel wrote.
#[allow(clippy::too_many_arguments)]
pub fn run(
    dev: &Device,
    job: JobFn,
    spec: &str,
    plan: Option<&GpuPlan>,
    inputs: &[Buffer],
    outputs: &mut [Buffer],
    params: &[Value],
    sizes: &[usize],
) -> Result<(), Error> {
    let Some((kernel, job)) = bound_job(
        job,
        spec,
        plan,
        (inputs, outputs, sizes),
        dev.name(),
        dev.limits(),
    )?
    else {
        return Ok(());
    };
    let info = mdh::reference::kernel_info(&kernel, Dialect::OpenCl);
    let program = dev.compile(&job.source)?;
    let front = front_bytes(dev)?;
    let elem = |b: &Buffer| mdh_core::plan::elem_bytes(b.ty());
    let ins = inputs
        .iter()
        .map(|b| dev.upload(&mdh::gpu::to_bytes(b)))
        .collect::<Result<Vec<_>, _>>()?;
    // Each output: guard, the output's bytes, guard, in one device buffer.
    let mut parents = Vec::new();
    let mut subs = Vec::new();
    for b in outputs.iter() {
        let bytes = mdh::gpu::to_bytes(b);
        let mut all = vec![PATTERN; front + bytes.len() + TAIL];
        all[front..front + bytes.len()].copy_from_slice(&bytes);
        let parent = dev.upload(&all)?;
        // An empty output: the kernel gets the guards alone (OpenCL has no
        // empty sub-buffers).
        subs.push(if bytes.is_empty() {
            None
        } else {
            // SAFETY: the region lies inside `parent`, which outlives the
            // sub-buffer (both live to the end of this function), and
            // `front` is a multiple of the device's base address alignment,
            // as OpenCL requires of a sub-buffer's origin.
            Some(
                unsafe { parent.create_sub_buffer(CL_MEM_READ_WRITE, front, bytes.len()) }
                    .map_err(|e| Error::Backend(format!("clCreateSubBuffer: {e}")))?,
            )
        });
        parents.push((parent, all.len(), bytes.len()));
    }
    let partials = info
        .acc_bytes
        .iter()
        .map(|&eb| dev.upload(&vec![0u8; (job.partial_len * eb).max(1)]))
        .collect::<Result<Vec<_>, _>>()?;
    let mut bufs = Vec::new();
    bufs.extend(ins.iter().zip(inputs).map(|(d, b)| (d, elem(b))));
    for ((b, (parent, ..)), sub) in outputs.iter().zip(&parents).zip(&subs) {
        bufs.push((sub.as_ref().unwrap_or(parent), elem(b)));
    }
    bufs.extend(partials.iter().zip(info.acc_bytes).map(|(d, &eb)| (d, eb)));
    let (i, o) = (inputs.len(), outputs.len());
    for l in job.launches() {
        let args: Vec<RawArg<'_, _>> = l
            .arg_order(i, o, bufs.len() - i - o, params.len())
            .into_iter()
            .map(|a| match bufs.get(a) {
                Some(&(buf, elem)) => RawArg::Buffer { buf, elem },
                None => RawArg::Scalar(params[a - bufs.len()]),
            })
            .collect();
        dev.launch(&program, &l, &args)?;
    }
    drop(bufs);
    for (x, (b, (parent, total, len))) in outputs.iter_mut().zip(&parents).enumerate() {
        let mut all = vec![0u8; *total];
        dev.download(parent, &mut all)?;
        let written: Vec<isize> = (0..*total)
            .filter(|&k| (k < front || k >= front + len) && all[k] != PATTERN)
            .map(|k| k as isize - front as isize)
            .collect();
        if !written.is_empty() {
            return Err(Error::Backend(format!(
                "OpenCL: the kernel wrote outside output #{x} ({len} bytes), at byte offsets {written:?} from its start"
            )));
        }
        mdh::gpu::from_bytes(b, &all[front..front + len]);
    }
    Ok(())
}

/// Bytes before an output: a multiple of the device's base address
/// alignment (`CL_DEVICE_MEM_BASE_ADDR_ALIGN`, in bits), at least 256.
fn front_bytes(dev: &Device) -> Result<usize, Error> {
    let cl =
        |e: mdh_gpu::opencl::opencl3::error_codes::ClError| Error::Backend(format!("OpenCL: {e}"));
    let id = *dev
        .context()
        .devices()
        .first()
        .ok_or_else(|| Error::Backend("OpenCL: a context without devices".into()))?;
    let align = mdh_gpu::opencl::opencl3::device::Device::new(id)
        .mem_base_addr_align()
        .map_err(cl)? as usize
        / 8;
    Ok(256usize.div_ceil(align.max(1)) * align.max(1))
}
