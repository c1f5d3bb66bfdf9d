//! oneDNN's layer normalization forward inference with a scale and a shift
//! (2.6's `dnnl_use_scale | dnnl_use_shift`: `gamma` and `beta` as two
//! tensors), the peer of mdh's layernorm: along the rows of a row-major f32
//! `src[rows, cols]`, `dst = (src - mean) / √(var + eps) · gamma + beta`,
//! the statistics computed by the primitive.

use std::os::raw::{c_float, c_int, c_uint, c_void};
use std::ptr::null;

use super::prepared::{Input, Prepared, Values};
use super::{check, md, MemoryDesc, AB, ARG_SRC, FORWARD_INFERENCE};

const A: c_int = 2; // dnnl_a (1-D)
const USE_SCALE: c_uint = 0x8; // dnnl_use_scale
const USE_SHIFT: c_uint = 0x10; // dnnl_use_shift
const ARG_SCALE: c_int = 51; // DNNL_ARG_SCALE
const ARG_SHIFT: c_int = 52; // DNNL_ARG_SHIFT

/// `dnnl_layer_normalization_desc_t`.
#[repr(C)]
struct LayerNormDesc {
    primitive_kind: c_int,
    prop_kind: c_int,
    data_desc: MemoryDesc,
    diff_data_desc: MemoryDesc,
    data_scaleshift_desc: MemoryDesc,
    diff_data_scaleshift_desc: MemoryDesc,
    stat_desc: MemoryDesc,
    layer_norm_epsilon: c_float,
    flags: c_uint,
}

// sizeof printed by a C program against the installed headers.
const _: () = assert!(std::mem::size_of::<LayerNormDesc>() == 3496);

extern "C" {
    fn dnnl_layer_normalization_forward_desc_init(
        desc: *mut LayerNormDesc,
        prop_kind: c_int,
        data_desc: *const MemoryDesc,
        stat_desc: *const MemoryDesc,
        epsilon: c_float,
        flags: c_uint,
    ) -> c_int;
}

/// The layer normalization of each row of `src` (`rows × cols`,
/// row-major) with `gamma` and `beta` (`cols` each), ready to run.
/// `Ok(Err(why))` where oneDNN has no implementation of it for this CPU.
pub fn layer_norm(
    rows: usize,
    cols: usize,
    src: Vec<f32>,
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
) -> Result<Result<Prepared, String>, String> {
    assert_eq!(
        (src.len(), gamma.len(), beta.len()),
        (rows * cols, cols, cols)
    );
    let data_md = md(&[rows as i64, cols as i64], AB)?;
    let column = |arg, values| -> Result<Input, String> {
        Ok(Input {
            arg,
            md: md(&[cols as i64], A)?,
            values: Values::F32(values),
        })
    };
    let inputs = vec![
        Input {
            arg: ARG_SRC,
            md: data_md,
            values: Values::F32(src),
        },
        column(ARG_SCALE, gamma)?,
        column(ARG_SHIFT, beta)?,
    ];
    // SAFETY: the descriptor is initialised by oneDNN before use and lives
    // during `Prepared::new`; a null statistics descriptor is derived from
    // the data's (documented); no attributes.
    unsafe {
        let mut desc: LayerNormDesc = std::mem::zeroed();
        check(
            dnnl_layer_normalization_forward_desc_init(
                &mut desc,
                FORWARD_INFERENCE,
                &data_md,
                null(),
                eps,
                USE_SCALE | USE_SHIFT,
            ),
            "layer_normalization_forward_desc_init",
        )?;
        Prepared::new(
            "layer normalization",
            &desc as *const LayerNormDesc as *const c_void,
            null(),
            inputs,
            data_md,
            rows * cols,
        )
    }
}
