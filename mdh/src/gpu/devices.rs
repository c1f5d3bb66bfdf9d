//! What the real devices, OpenCL's and CUDA's, offer the prepared calls
//! ([`CallDevice`]: programs, partial results, and the plans run-time
//! tuning keeps; their limits, buffers and launches are the device traits
//! of `mdh-gpu`, implemented in each runtime's module). Here, above both
//! the prepared calls and run-time tuning, so that the call path reaches
//! the tuned plans without the two importing each other.

use std::sync::Arc;

use mdh_gpu::memo::Memo;
use mdh_rt::gpu_plan::GpuPlan;
use mdh_rt::Error;

use super::calls::{bytes, CallDevice, CallKernel};

/// The plans run-time tuning keeps, which the real devices' prepared calls
/// run ([`super::tune::tuned_plan`]).
macro_rules! tuning_device {
    () => {
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
    type Program = Arc<mdh_gpu::opencl::Program>;
    type Partial = mdh_gpu::opencl::Buffer<u8>;

    fn call_device_name(&self) -> &str {
        self.name()
    }

    fn memo(&self) -> &Memo {
        mdh_gpu::opencl::Device::memo(self)
    }

    fn compile(&self, source: &str) -> Result<Self::Program, Error> {
        self.program(source, "")
    }

    fn partial(&self, len: usize, elem: usize, _: usize) -> Result<Self::Partial, Error> {
        self.buffer::<u8>(bytes(len, elem)?)
    }

    tuning_device!();
}

#[cfg(feature = "cuda")]
impl CallDevice for mdh_gpu::cuda::Device {
    type Program = Arc<mdh_gpu::cuda::Module>;
    type Partial = mdh_gpu::cuda::cudarc::driver::CudaSlice<u8>;

    fn call_device_name(&self) -> &str {
        self.name()
    }

    fn memo(&self) -> &Memo {
        mdh_gpu::cuda::Device::memo(self)
    }

    fn compile(&self, source: &str) -> Result<Self::Program, Error> {
        self.module(source)
    }

    fn partial(&self, len: usize, elem: usize, _: usize) -> Result<Self::Partial, Error> {
        self.buffer::<u8>(bytes(len, elem)?)
    }

    fn queue_id(&self) -> usize {
        self.stream().cu_stream() as usize
    }

    tuning_device!();
}
