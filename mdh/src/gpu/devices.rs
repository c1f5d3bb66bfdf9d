//! What the real devices, OpenCL's and CUDA's, offer the prepared calls
//! ([`CallDevice`]: programs, partial results, and the plans run-time
//! tuning keeps; their limits, buffers and launches are the device traits
//! of `mdh-gpu`, implemented in each runtime's module). Here, above both
//! the prepared calls and run-time tuning, so that the call path reaches
//! the tuned plans without the two importing each other.

use mdh_gpu::memo::Memo;
use mdh_rt::gpu_plan::GpuPlan;
use mdh_rt::Error;

use super::calls::{bytes, CallDevice, CallKernel};
use super::RawDevice;

/// What the prepared calls of both runtimes' devices take alike: the
/// programs and byte buffers of the device traits ([`RawDevice`], each
/// runtime's), and the plans run-time tuning keeps
/// ([`super::tune::tuned_plan`]).
macro_rules! real_device {
    () => {
        type Program = <Self as RawDevice>::Program;
        type Partial = <Self as RawDevice>::Buffer;

        fn call_device_name(&self) -> &str {
            self.name()
        }

        fn memo(&self) -> &Memo {
            Self::memo(self)
        }

        fn compile(&self, source: &str) -> Result<Self::Program, Error> {
            RawDevice::compile(self, source)
        }

        fn partial(&self, len: usize, elem: usize, _: usize) -> Result<Self::Partial, Error> {
            self.buffer::<u8>(bytes(len, elem)?)
        }

        fn driver(&self) -> Option<&str> {
            Some(self.driver_version())
        }

        fn tuned_plan(&self, k: &CallKernel<'_>) -> Option<GpuPlan> {
            super::tune::tuned_plan(self, k)
        }
    };
}

#[cfg(feature = "opencl")]
impl CallDevice for mdh_gpu::opencl::Device {
    real_device!();
}

#[cfg(feature = "cuda")]
impl CallDevice for mdh_gpu::cuda::Device {
    real_device!();

    fn queue_id(&self) -> usize {
        self.stream().cu_stream() as usize
    }
}
