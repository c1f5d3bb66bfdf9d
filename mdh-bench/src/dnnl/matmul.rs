//! A oneDNN matmul with a bias and a ReLU post-op (`dst = max(src · weights
//! + bias, 0)`), the peer of a fused dense layer: row-major `src[M, K]`,
//! `weights[K, N]`, `bias[1, N]` (broadcast over the rows), `dst[M, N]`.

use std::os::raw::{c_float, c_int, c_void};
use std::ptr::{null, null_mut};

use super::{
    check, dnnl_engine_create, dnnl_engine_destroy, dnnl_memory_create, dnnl_memory_destroy,
    dnnl_primitive_create, dnnl_primitive_desc_create, dnnl_primitive_desc_destroy,
    dnnl_primitive_destroy, dnnl_primitive_execute, dnnl_stream_create, dnnl_stream_destroy,
    dnnl_stream_wait, md, Engine, ExecArg, Memory, MemoryDesc, Opaque, Primitive, PrimitiveDesc,
    Stream, ARG_DST, ARG_SRC, ARG_WEIGHTS, ENGINE_CPU, STREAM_DEFAULT_FLAGS,
};

const AB: c_int = 3; // dnnl_ab: row-major 2-D
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

/// The extents of `dst[m, n] = max(Σ_k src[m, k] · weights[k, n] + bias[n], 0)`.
#[derive(Clone, Copy, Debug)]
pub struct MatmulShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

/// A ready-to-run oneDNN matmul with bias and ReLU that owns its buffers.
pub struct Matmul {
    engine: Engine,
    stream: Stream,
    prim: Primitive,
    mems: [Memory; 4],
    _inputs: [Vec<f32>; 3],
    dst: Vec<f32>,
}

impl Matmul {
    /// Sets up the primitive over copies of `src`, `weights` and `bias`.
    pub fn new(
        sh: MatmulShape,
        src: &[f32],
        weights: &[f32],
        bias: &[f32],
    ) -> Result<Matmul, String> {
        let (m, n, k) = (sh.m as i64, sh.n as i64, sh.k as i64);
        assert_eq!(
            (src.len(), weights.len(), bias.len()),
            (sh.m * sh.k, sh.k * sh.n, sh.n)
        );
        let mds = [
            md(&[m, k], AB)?,
            md(&[k, n], AB)?,
            md(&[1, n], AB)?,
            md(&[m, n], AB)?,
        ];
        let mut mm = Matmul {
            engine: null_mut(),
            stream: null_mut(),
            prim: null_mut(),
            mems: [null_mut(); 4],
            _inputs: [src.to_vec(), weights.to_vec(), bias.to_vec()],
            dst: vec![f32::NAN; sh.m * sh.n],
        };
        // SAFETY: every out-pointer is valid; descriptors are initialised by
        // oneDNN before use; the attribute and post-ops are destroyed after
        // the primitive descriptor (which copies them) is made; the memory
        // handles point into `mm`'s heap buffers, which outlive them
        // (destroyed in Drop first).
        unsafe {
            check(
                dnnl_engine_create(&mut mm.engine, ENGINE_CPU, 0),
                "engine_create",
            )?;
            check(
                dnnl_stream_create(&mut mm.stream, mm.engine, STREAM_DEFAULT_FLAGS),
                "stream_create",
            )?;
            let mut desc: MatmulDesc = std::mem::zeroed();
            check(
                dnnl_matmul_desc_init(&mut desc, &mds[0], &mds[1], &mds[2], &mds[3]),
                "matmul_desc_init",
            )?;
            let (mut attr, mut ops): (Attr, PostOps) = (null_mut(), null_mut());
            check(
                dnnl_primitive_attr_create(&mut attr),
                "primitive_attr_create",
            )?;
            check(dnnl_post_ops_create(&mut ops), "post_ops_create")?;
            let made = check(
                dnnl_post_ops_append_eltwise(ops, 1.0, ELTWISE_RELU, 0.0, 0.0),
                "post_ops_append_eltwise",
            )
            .and_then(|()| check(dnnl_primitive_attr_set_post_ops(attr, ops), "set_post_ops"))
            .and_then(|()| {
                let mut pd: PrimitiveDesc = null_mut();
                check(
                    dnnl_primitive_desc_create(
                        &mut pd,
                        &desc as *const MatmulDesc as *const c_void,
                        attr as *const c_void,
                        mm.engine,
                        null(),
                    ),
                    "matmul primitive_desc_create",
                )?;
                let made = dnnl_primitive_create(&mut mm.prim, pd);
                dnnl_primitive_desc_destroy(pd);
                check(made, "matmul primitive_create")
            });
            dnnl_post_ops_destroy(ops);
            dnnl_primitive_attr_destroy(attr);
            made?;
            let ptrs: [*mut f32; 4] = [
                mm._inputs[0].as_mut_ptr(),
                mm._inputs[1].as_mut_ptr(),
                mm._inputs[2].as_mut_ptr(),
                mm.dst.as_mut_ptr(),
            ];
            for ((mem, md), ptr) in mm.mems.iter_mut().zip(&mds).zip(ptrs) {
                check(
                    dnnl_memory_create(mem, md, mm.engine, ptr.cast()),
                    "memory_create",
                )?;
            }
        }
        Ok(mm)
    }

    /// Runs the primitive once and waits for it.
    pub fn run(&mut self) -> Result<(), String> {
        let arg = |arg, memory| ExecArg { arg, memory };
        let args = [
            arg(ARG_SRC, self.mems[0]),
            arg(ARG_WEIGHTS, self.mems[1]),
            arg(ARG_BIAS, self.mems[2]),
            arg(ARG_DST, self.mems[3]),
        ];
        // SAFETY: the primitive and memory objects were created in `new` and
        // live until Drop; `&mut self` excludes concurrent use of `dst`.
        unsafe {
            check(
                dnnl_primitive_execute(self.prim, self.stream, 4, args.as_ptr()),
                "matmul execute",
            )?;
            check(dnnl_stream_wait(self.stream), "stream_wait")
        }
    }

    /// The output of the last run.
    pub fn dst(&self) -> &[f32] {
        &self.dst
    }
}

impl Drop for Matmul {
    fn drop(&mut self) {
        // SAFETY: each handle was created by oneDNN (or is null, which the
        // destroy functions accept) and is destroyed exactly once.
        unsafe {
            dnnl_primitive_destroy(self.prim);
            for m in self.mems {
                dnnl_memory_destroy(m);
            }
            dnnl_stream_destroy(self.stream);
            dnnl_engine_destroy(self.engine);
        }
    }
}
