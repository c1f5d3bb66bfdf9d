//! The OpenCL device as every backend's device ([`crate::device`]): its
//! limits, programs, buffers and launches.

use crate::device::{
    runtime_device, with_scalar, BufArg, DeviceCompute, DeviceLimits, GpuDevice, KernelArgs,
    Launch, RawDevice,
};
use mdh_rt::value::Value;
use mdh_rt::Error;

use super::{Buffer, Device, Program};

runtime_device!(Device, gpu {
    type Program = std::sync::Arc<Program>;
    type Buffer = Buffer<u8>;

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

    fn compile(&self, source: &str) -> Result<Self::Program, Error> {
        self.program(source, "")
    }
} raw {
    type Buf<T> = Buffer<T>;
    type Kernel<'a> = super::Launch<'a>;

    fn kernel<'a>(&'a self, prog: &'a Self::Program, name: &str) -> Result<super::Launch<'a>, Error> {
        prog.kernel(name)
    }
});

impl<'a> KernelArgs<'a, Device> for super::Launch<'a> {
    fn bytes(self, b: &'a Buffer<u8>, elem: usize) -> Self {
        self.arg_buffer_as(b, elem)
    }

    fn bytes_mut(self, b: &'a mut Buffer<u8>, elem: usize) -> Self {
        self.arg_buffer_as(b, elem)
    }

    fn scalar(self, v: Value) -> Self {
        with_scalar!(v, |x| self.arg_scalar(x))
    }

    fn issue(self, l: &Launch) -> Result<(), Error> {
        self.timed(l).map(drop)
    }

    fn timed(self, l: &Launch) -> Result<std::time::Duration, Error> {
        self.run(&[l.global], &[l.local])
    }
}

impl<T> BufArg<Device> for Buffer<T> {
    fn elements(&self, dev: &Device) -> Result<usize, Error> {
        dev.buffer_len(self)
    }

    fn pass<'a>(&'a self, k: super::Launch<'a>) -> super::Launch<'a> {
        k.arg_buffer(self)
    }

    fn pass_mut<'a>(&'a mut self, k: super::Launch<'a>) -> super::Launch<'a> {
        k.arg_buffer(self)
    }
}
