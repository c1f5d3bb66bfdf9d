//! The words that differ between the dialects outside of expressions:
//! kernel heads, address spaces, barriers, ids, warps.

use mdh_rt::names::IDX;

use crate::codegen::c_expr::Dialect;

/// The words that differ between the dialects outside of expressions.
pub(super) struct Words {
    kernel: &'static str,
    /// Declares the work-items per work-group a kernel is launched with, so
    /// that the compiler budgets registers for them (CUDA: a block of 1024
    /// threads fails to launch if each thread takes more than 64 registers).
    launch_bounds: Option<&'static str>,
    /// Lanes of a warp, when partial results may be combined by register
    /// shuffles among them (the paper's WRP layer of ASM_CUDA+WRP).
    pub(super) warp: Option<u32>,
    pub(super) global: &'static str,
    pub(super) restrict: &'static str,
    pub(super) shared: &'static str,
    /// The qualifier of a pointer into local memory (with its space).
    pub(super) local_ptr: &'static str,
    pub(super) barrier: &'static str,
    /// The built-in ids (unsigned), cast to the index type by
    /// [`Words::group_id`] and [`Words::local_id`].
    group: &'static str,
    local: &'static str,
}

impl Words {
    /// The head of kernel `name` launched with `items` work-items per
    /// work-group.
    pub(super) fn head(&self, name: &str, items: &str, params: &str) -> String {
        match self.launch_bounds {
            Some(b) => format!("{} {b}({items}) {name}({params})", self.kernel),
            None => format!("{} {name}({params})", self.kernel),
        }
    }

    /// This work-group's id, as an index (the built-ins are unsigned: mixed
    /// with a signed `int` they would turn its arithmetic unsigned).
    pub(super) fn group_id(&self) -> String {
        format!("(({IDX}){})", self.group)
    }

    /// This work-item's id within its work-group, as an index.
    pub(super) fn local_id(&self) -> String {
        format!("(({IDX}){})", self.local)
    }
}

pub(super) fn words(d: Dialect) -> Words {
    match d {
        Dialect::OpenCl => Words {
            kernel: "__kernel void",
            launch_bounds: None,
            warp: None,
            global: "__global ",
            restrict: "restrict",
            shared: "__local",
            local_ptr: "__local ",
            barrier: "barrier(CLK_LOCAL_MEM_FENCE);",
            group: "get_group_id(0)",
            local: "get_local_id(0)",
        },
        Dialect::Cuda => Words {
            kernel: "extern \"C\" __global__ void",
            launch_bounds: Some("__launch_bounds__"),
            warp: Some(32),
            global: "",
            restrict: "__restrict__",
            shared: "__shared__",
            local_ptr: "",
            barrier: "__syncthreads();",
            group: "blockIdx.x",
            local: "threadIdx.x",
        },
    }
}
