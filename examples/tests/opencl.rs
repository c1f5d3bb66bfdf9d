//! Every example family through OpenCL (on the CPU through PoCL in CI),
//! against the reference interpreter, over random sizes (1, primes, 0
//! sometimes) and random valid OpenCL plans: work-groups and work-items per
//! dimension, tiles, strided or blocked work-items, inputs cached in local
//! memory, PW dimensions split across work-items (tree) and work-groups
//! (second pass).
//!
//! Without an OpenCL device the tests print why and pass, unless
//! `MDH_REQUIRE_OPENCL=1` (set by `scripts/test-all.sh`), where a missing
//! device is a failure.

#[macro_use]
mod gpu;

use std::sync::OnceLock;

use mdh::opencl::Device;
use mdh_examples::*;

fn device() -> Option<&'static Device> {
    static DEV: OnceLock<Option<Device>> = OnceLock::new();
    DEV.get_or_init(|| match Device::first() {
        Ok(d) => Some(d),
        Err(e) => {
            gpu::skip_or_fail(
                "MDH_REQUIRE_OPENCL",
                format!("there is no OpenCL device: {e}"),
            );
            None
        }
    })
    .as_ref()
}

const CASES: usize = 24;

macro_rules! opencl_tests {
    ($($name:ident: $budget:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let Some(dev) = device() else { return };
                let max_items = dev.max_work_group_size().min(256);
                gpu::family($name::SPEC, CASES, $budget, gpu::seed(stringify!($name)), max_items,
                    |plan, i, o, p, s| $name::opencl::run_dyn(dev, plan, i, o, p, s));
            }
        )*
    };
}

with_families!(opencl_tests);
