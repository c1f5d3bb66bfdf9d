//! The `mdh-opencl` rows: the same mdh kernels through OpenCL
//! (`NAME::opencl::run`, host slices in and out, so copies are timed too) on
//! the first OpenCL device (PoCL on the CPU here). Without a device the rows
//! are skipped with the reason printed once.

use std::sync::OnceLock;

use mdh::opencl::Device;

/// The first OpenCL device, or why there is none (printed on first use).
pub fn device() -> Option<&'static Device> {
    static DEV: OnceLock<Option<Device>> = OnceLock::new();
    DEV.get_or_init(|| match Device::first() {
        Ok(d) => {
            eprintln!("mdh-opencl rows on {}", d.name());
            Some(d)
        }
        Err(e) => {
            eprintln!("mdh-opencl rows skipped: {e}");
            None
        }
    })
    .as_ref()
}
