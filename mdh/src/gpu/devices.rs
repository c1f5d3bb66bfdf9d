//! The real devices, OpenCL's and CUDA's: what each offers the generated
//! wrappers ([`GpuDevice`]: its limits), the tuner's measurements
//! ([`RawDevice`]: untyped buffers, compiling, timed launches) and the
//! prepared calls ([`CallDevice`]: programs, partial results, and the plans
//! run-time tuning keeps). Here, above both the prepared calls and
//! run-time tuning, so that the call path reaches the tuned plans without
//! the two importing each other.

use std::sync::Arc;

use mdh_gpu::memo::Memo;
use mdh_rt::gpu_plan::GpuPlan;
use mdh_rt::value::Value;
use mdh_rt::Error;

use super::calls::{bytes, CallDevice, CallKernel};
use super::{DeviceCompute, DeviceLimits, GpuDevice, Launch, RawArg, RawDevice};

#[cfg(feature = "opencl")]
impl GpuDevice for mdh_gpu::opencl::Device {
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

#[cfg(feature = "cuda")]
impl GpuDevice for mdh_gpu::cuda::Device {
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

/// Calls `$f` with a param as the runtime's scalar type (bool as a byte,
/// usize as 64 bits).
macro_rules! with_scalar {
    ($v:expr, $f:expr) => {
        match $v {
            Value::F32(x) => $f(x),
            Value::F64(x) => $f(x),
            Value::I8(x) => $f(x),
            Value::I16(x) => $f(x),
            Value::I32(x) => $f(x),
            Value::I64(x) => $f(x),
            Value::U8(x) => $f(x),
            Value::U16(x) => $f(x),
            Value::U32(x) => $f(x),
            Value::U64(x) => $f(x),
            Value::Usize(x) => $f(x as u64),
            Value::Bool(x) => $f(u8::from(x)),
        }
    };
}

/// The [`RawDevice`] methods both runtimes' devices implement alike (their
/// inherent methods have the same names and meanings).
macro_rules! raw_device_io {
    () => {
        fn device_name(&self) -> &str {
            self.name()
        }

        fn upload(&self, bytes: &[u8]) -> Result<Self::Buffer, Error> {
            self.buffer_from(bytes)
        }

        fn download(&self, buf: &Self::Buffer, out: &mut [u8]) -> Result<(), Error> {
            self.read(buf, out)
        }
    };
}

#[cfg(feature = "opencl")]
impl RawDevice for mdh_gpu::opencl::Device {
    type Buffer = mdh_gpu::opencl::Buffer<u8>;
    type Program = std::sync::Arc<mdh_gpu::opencl::Program>;

    raw_device_io!();

    fn compile(&self, source: &str) -> Result<Self::Program, Error> {
        self.program(source, "")
    }

    fn launch(
        &self,
        prog: &Self::Program,
        l: &Launch,
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

#[cfg(feature = "cuda")]
impl RawDevice for mdh_gpu::cuda::Device {
    type Buffer = mdh_gpu::cuda::cudarc::driver::CudaSlice<u8>;
    type Program = std::sync::Arc<mdh_gpu::cuda::Module>;

    // CUDA's `read` copies whole buffers; outputs are uploaded at their size.
    raw_device_io!();

    fn compile(&self, source: &str) -> Result<Self::Program, Error> {
        self.module(source)
    }

    fn resources(&self, prog: &Self::Program) -> Option<super::MainResources> {
        let k = prog.resources().iter().find(|k| k.name == "mdh_main")?;
        Some(super::MainResources {
            registers: k.registers,
            spill_bytes: k.spill_bytes(),
            shared_bytes: k.shared_bytes,
        })
    }

    fn launch(
        &self,
        prog: &Self::Program,
        l: &Launch,
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
