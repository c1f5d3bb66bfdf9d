//! The CUDA device as every backend's device ([`crate::device`]): its
//! limits, modules, buffers and launches.

use crate::device::{
    runtime_device, with_scalar, BufArg, DeviceCompute, DeviceLimits, GpuDevice, KernelArgs,
    Launch, MainResources, RawDevice,
};
use cudarc::driver::CudaSlice;
use mdh_rt::value::Value;
use mdh_rt::Error;

use super::{Device, Kernel, Module};

runtime_device!(Device, gpu {
    type Program = std::sync::Arc<Module>;
    // CUDA's `read` copies whole buffers; outputs are uploaded at their size.
    type Buffer = CudaSlice<u8>;

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

    fn compile(&self, source: &str) -> Result<Self::Program, Error> {
        self.module(source)
    }

    fn queue_id(&self) -> usize {
        self.stream().cu_stream() as usize
    }
} raw {
    type Buf<T> = CudaSlice<T>;
    type Kernel<'a> = Kernel<'a>;

    fn resources(&self, prog: &Self::Program) -> Option<MainResources> {
        let k = prog.resources().iter().find(|k| k.name == "mdh_main")?;
        Some(MainResources {
            registers: k.registers,
            spill_bytes: k.spill_bytes(),
            shared_bytes: k.shared_bytes,
        })
    }

    fn kernel<'a>(&'a self, prog: &'a Self::Program, name: &str) -> Result<Kernel<'a>, Error> {
        // On this handle's stream (see `Device::on_stream`).
        prog.kernel_on(self.stream(), name)
    }
});

// CUDA pointers have no element type: `elem` matters to OpenCL's argument
// check only.
impl<'a> KernelArgs<'a, Device> for Kernel<'a> {
    fn bytes(self, b: &'a CudaSlice<u8>, _elem: usize) -> Self {
        self.arg_slice(b)
    }

    fn bytes_mut(self, b: &'a mut CudaSlice<u8>, _elem: usize) -> Self {
        self.arg_slice_mut(b)
    }

    fn scalar(self, v: Value) -> Self {
        with_scalar!(v, |x| self.arg_scalar(x))
    }

    fn issue(self, l: &Launch) -> Result<(), Error> {
        let (grid, block) = l.grid_block()?;
        self.launch(grid, block, l.shared_bytes)
    }

    fn timed(self, l: &Launch) -> Result<std::time::Duration, Error> {
        let (grid, block) = l.grid_block()?;
        self.run(grid, block, l.shared_bytes)
    }
}

impl<T> BufArg<Device> for CudaSlice<T> {
    fn elements(&self, _dev: &Device) -> Result<usize, Error> {
        Ok(self.len())
    }

    fn pass<'a>(&'a self, k: Kernel<'a>) -> Kernel<'a> {
        k.arg_slice(self)
    }

    fn pass_mut<'a>(&'a mut self, k: Kernel<'a>) -> Kernel<'a> {
        k.arg_slice_mut(self)
    }
}
