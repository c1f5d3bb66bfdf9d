//! A oneDNN matmul, the peer of mdh's contractions: row-major `src[M, K]`,
//! `weights[K, N]` (both f32, or both bf16) into an f32 `dst[M, N]`,
//! optionally with a bias `bias[1, N]` (broadcast over the rows) and a ReLU
//! post-op, the peer of a fused dense layer (`dst = max(src · weights +
//! bias, 0)`). oneDNN 2.6 implements the bf16 matmul only on CPUs with
//! AVX-512 (`avx512_core`; native `vdpbf16ps` with AVX-512 BF16, emulated
//! without); elsewhere it answers `dnnl_unimplemented`, which [`matmul`]
//! returns as the reason the row is skipped.

use std::os::raw::{c_float, c_int, c_void};
use std::ptr::{null, null_mut};

use super::prepared::{Input, Prepared, Values};
use super::{check, md_of, MemoryDesc, Opaque, AB, ARG_SRC, ARG_WEIGHTS, F32};

const ELTWISE_RELU: c_int = 0x1f; // dnnl_eltwise_relu
const ARG_BIAS: c_int = 41; // DNNL_ARG_BIAS

/// `dnnl_matmul_desc_t`.
#[repr(C)]
struct MatmulDesc {
    primitive_kind: c_int,
    src_desc: MemoryDesc,
    weights_desc: MemoryDesc,
    bias_desc: MemoryDesc,
    dst_desc: MemoryDesc,
    accum_data_type: c_int,
}

// sizeof printed by a C program against the installed headers.
const _: () = assert!(std::mem::size_of::<MatmulDesc>() == 2800);

type Attr = *mut Opaque; // dnnl_primitive_attr_t
type PostOps = *mut Opaque; // dnnl_post_ops_t

extern "C" {
    fn dnnl_matmul_desc_init(
        desc: *mut MatmulDesc,
        src: *const MemoryDesc,
        weights: *const MemoryDesc,
        bias: *const MemoryDesc,
        dst: *const MemoryDesc,
    ) -> c_int;
    fn dnnl_primitive_attr_create(attr: *mut Attr) -> c_int;
    fn dnnl_primitive_attr_destroy(attr: Attr) -> c_int;
    fn dnnl_primitive_attr_set_post_ops(attr: Attr, post_ops: PostOps) -> c_int;
    fn dnnl_post_ops_create(post_ops: *mut PostOps) -> c_int;
    fn dnnl_post_ops_destroy(post_ops: PostOps) -> c_int;
    fn dnnl_post_ops_append_eltwise(
        post_ops: PostOps,
        scale: c_float,
        alg_kind: c_int,
        alpha: c_float,
        beta: c_float,
    ) -> c_int;
}

/// The extents of `dst[m, n] = Σ_k src[m, k] · weights[k, n]`.
#[derive(Clone, Copy, Debug)]
pub struct MatmulShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

/// `dst = src · weights`, or `max(src · weights + bias, 0)` with
/// `bias_relu`, ready to run. `Ok(Err(why))` where oneDNN has no
/// implementation of it for this CPU (`dnnl_unimplemented`: a bf16 matmul
/// without AVX-512).
pub fn matmul(
    sh: MatmulShape,
    src: Values,
    weights: Values,
    bias_relu: Option<Vec<f32>>,
) -> Result<Result<Prepared, String>, String> {
    let (m, n, k) = (sh.m as i64, sh.n as i64, sh.k as i64);
    assert_eq!((src.len(), weights.len()), (sh.m * sh.k, sh.k * sh.n));
    let mut inputs = vec![
        Input {
            arg: ARG_SRC,
            md: md_of(&[m, k], src.data_type(), AB)?,
            values: src,
        },
        Input {
            arg: ARG_WEIGHTS,
            md: md_of(&[k, n], weights.data_type(), AB)?,
            values: weights,
        },
    ];
    if let Some(bias) = bias_relu {
        assert_eq!(bias.len(), sh.n);
        inputs.push(Input {
            arg: ARG_BIAS,
            md: md_of(&[1, n], F32, AB)?,
            values: Values::F32(bias),
        });
    }
    let dst_md = md_of(&[m, n], F32, AB)?;
    let with_bias = inputs.len() == 3;
    // SAFETY: every out-pointer is valid; the descriptor is initialised by
    // oneDNN before use; the attribute and post-ops live until
    // `Prepared::new` has made the primitive descriptor (which copies them)
    // and are destroyed once after it.
    unsafe {
        let mut desc: MatmulDesc = std::mem::zeroed();
        let bias_md = match inputs.get(2) {
            Some(bias) => &bias.md as *const MemoryDesc,
            None => null(),
        };
        check(
            dnnl_matmul_desc_init(&mut desc, &inputs[0].md, &inputs[1].md, bias_md, &dst_md),
            "matmul_desc_init",
        )?;
        let (mut attr, mut ops): (Attr, PostOps) = (null_mut(), null_mut());
        check(
            dnnl_primitive_attr_create(&mut attr),
            "primitive_attr_create",
        )?;
        check(dnnl_post_ops_create(&mut ops), "post_ops_create")?;
        let made = if with_bias {
            check(
                dnnl_post_ops_append_eltwise(ops, 1.0, ELTWISE_RELU, 0.0, 0.0),
                "post_ops_append_eltwise",
            )
            .and_then(|()| check(dnnl_primitive_attr_set_post_ops(attr, ops), "set_post_ops"))
        } else {
            Ok(())
        }
        .and_then(|()| {
            Prepared::new(
                "matmul",
                &desc as *const MatmulDesc as *const c_void,
                attr as *const c_void,
                inputs,
                dst_md,
                sh.m * sh.n,
            )
        });
        dnnl_post_ops_destroy(ops);
        dnnl_primitive_attr_destroy(attr);
        Ok(made?.map_err(|why| format!("{why}; bf16 needs AVX-512")))
    }
}
