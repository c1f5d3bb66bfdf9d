//! The CUDA device as every backend's device ([`crate::device`]): its
//! limits, untyped buffers, compiling and timed launches.

use crate::device::{
    raw_device_io, with_scalar, DeviceCompute, DeviceLimits, GpuDevice, MainResources, RawArg,
    RawDevice,
};
use mdh_rt::Error;

impl GpuDevice for super::Device {
    fn limits(&self) -> DeviceLimits {
        DeviceLimits {
            max_items: self.max_threads_per_block(),
            local_bytes: self.shared_mem_per_block_optin(),
            cuda_arch: mdh_rt::gpu_plan::cuda_arch_number(self.arch()),
            compute: DeviceCompute {
                compute_units: self.sm_count(),
                clock_hz: self.clock_khz().map(|k| k as f64 * 1e3),
                unit_threads: self.sm_threads(),
                unit_registers: self.sm_registers(),
                unit_shared: self.sm_shared_bytes(),
                cpu: false,
            },
        }
    }
}

impl RawDevice for super::Device {
    type Buffer = super::cudarc::driver::CudaSlice<u8>;
    type Program = std::sync::Arc<super::Module>;

    // CUDA's `read` copies whole buffers; outputs are uploaded at their size.
    raw_device_io!();

    fn compile(&self, source: &str) -> Result<Self::Program, Error> {
        self.module(source)
    }

    fn resources(&self, prog: &Self::Program) -> Option<MainResources> {
        let k = prog.resources().iter().find(|k| k.name == "mdh_main")?;
        Some(MainResources {
            registers: k.registers,
            spill_bytes: k.spill_bytes(),
            shared_bytes: k.shared_bytes,
        })
    }

    fn launch(
        &self,
        prog: &Self::Program,
        l: &crate::device::Launch,
        args: &[RawArg<'_, Self::Buffer>],
    ) -> Result<std::time::Duration, Error> {
        // On this handle's stream (see `Device::on_stream`).
        let mut k = prog.kernel_on(self.stream(), &l.kernel)?;
        for a in args {
            // CUDA pointers have no element type: `elem` matters to OpenCL's
            // argument check only.
            k = match a {
                RawArg::Buffer { buf, .. } => k.arg_slice(*buf),
                RawArg::Scalar(v) => with_scalar!(*v, |x| k.arg_scalar(x)),
            };
        }
        let (grid, block) = l.grid_block()?;
        k.run(grid, block, l.shared_bytes)
    }
}
