//! The OpenCL device as every backend's device ([`crate::device`]): its
//! limits, untyped buffers, compiling and timed launches.

use crate::device::{
    raw_device_io, with_scalar, DeviceCompute, DeviceLimits, GpuDevice, RawArg, RawDevice,
};
use mdh_rt::Error;

impl GpuDevice for super::Device {
    fn limits(&self) -> DeviceLimits {
        DeviceLimits {
            max_items: self.max_work_group_size(),
            local_bytes: self.local_mem_bytes(),
            cuda_arch: None,
            compute: DeviceCompute {
                compute_units: self.compute_units(),
                clock_hz: self.max_clock_mhz().map(|m| m as f64 * 1e6),
                cpu: self.is_cpu(),
                ..DeviceCompute::default()
            },
        }
    }
}

impl RawDevice for super::Device {
    type Buffer = super::Buffer<u8>;
    type Program = std::sync::Arc<super::Program>;

    raw_device_io!();

    fn compile(&self, source: &str) -> Result<Self::Program, Error> {
        self.program(source, "")
    }

    fn launch(
        &self,
        prog: &Self::Program,
        l: &crate::device::Launch,
        args: &[RawArg<'_, Self::Buffer>],
    ) -> Result<std::time::Duration, Error> {
        let mut k = prog.kernel(&l.kernel)?;
        for a in args {
            k = match a {
                RawArg::Buffer { buf, elem } => k.arg_buffer_as(buf, *elem),
                RawArg::Scalar(v) => with_scalar!(*v, |x| k.arg_scalar(x)),
            };
        }
        k.run(&[l.global], &[l.local])
    }
}
