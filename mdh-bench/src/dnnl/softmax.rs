//! oneDNN's softmax forward (the first softmax API of 2.6,
//! `dnnl_softmax_forward_desc_init`: source and destination of one
//! descriptor), the peer of mdh's softmax: along the rows of a row-major f32
//! `src[rows, cols]`.

use std::os::raw::{c_int, c_void};
use std::ptr::null;

use super::prepared::{Input, Prepared, Values};
use super::{check, md, MemoryDesc, AB, ARG_SRC, FORWARD_INFERENCE};

/// `dnnl_softmax_desc_t`.
#[repr(C)]
struct SoftmaxDesc {
    primitive_kind: c_int,
    prop_kind: c_int,
    data_desc: MemoryDesc,
    diff_desc: MemoryDesc,
    softmax_axis: c_int,
}

// sizeof printed by a C program against the installed headers.
const _: () = assert!(std::mem::size_of::<SoftmaxDesc>() == 1408);

extern "C" {
    fn dnnl_softmax_forward_desc_init(
        desc: *mut SoftmaxDesc,
        prop_kind: c_int,
        data_desc: *const MemoryDesc,
        softmax_axis: c_int,
    ) -> c_int;
}

/// The softmax of each row of `src` (`rows × cols`, row-major), ready to
/// run. `Ok(Err(why))` where oneDNN has no implementation of it for this
/// CPU.
pub fn softmax(
    rows: usize,
    cols: usize,
    src: Vec<f32>,
) -> Result<Result<Prepared, String>, String> {
    assert_eq!(src.len(), rows * cols);
    let data_md = md(&[rows as i64, cols as i64], AB)?;
    let input = Input {
        arg: ARG_SRC,
        md: data_md,
        values: Values::F32(src),
    };
    // SAFETY: the descriptor is initialised by oneDNN before use and lives
    // during `Prepared::new`; no attributes.
    unsafe {
        let mut desc: SoftmaxDesc = std::mem::zeroed();
        // Axis 1: the columns, along each row.
        check(
            dnnl_softmax_forward_desc_init(&mut desc, FORWARD_INFERENCE, &data_md, 1),
            "softmax_forward_desc_init",
        )?;
        Prepared::new(
            "softmax",
            &desc as *const SoftmaxDesc as *const c_void,
            null(),
            vec![input],
            data_md,
            rows * cols,
        )
    }
}
