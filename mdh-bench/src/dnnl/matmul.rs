//! A oneDNN matmul, the peer of mdh's contractions: row-major `src[M, K]`,
//! `weights[K, N]` (both f32, or both bf16) into an f32 `dst[M, N]`,
//! optionally with a bias `bias[1, N]` (broadcast over the rows) and a ReLU
//! post-op, the peer of a fused dense layer (`dst = max(src · weights +
//! bias, 0)`). oneDNN 2.6 implements the bf16 matmul only on CPUs with
//! AVX-512 (`avx512_core`; native `vdpbf16ps` with AVX-512 BF16, emulated
//! without); elsewhere it answers `dnnl_unimplemented`, which `new` returns
//! as the reason the row is skipped.

use std::os::raw::{c_float, c_int, c_void};
use std::ptr::{null, null_mut};

use super::{
    check, dnnl_engine_create, dnnl_engine_destroy, dnnl_memory_create, dnnl_memory_destroy,
    dnnl_primitive_create, dnnl_primitive_desc_create, dnnl_primitive_desc_destroy,
    dnnl_primitive_destroy, dnnl_primitive_execute, dnnl_stream_create, dnnl_stream_destroy,
    dnnl_stream_wait, md_of, version, Engine, ExecArg, Memory, MemoryDesc, Opaque, Primitive,
    PrimitiveDesc, Stream, AB, ARG_DST, ARG_SRC, ARG_WEIGHTS, BF16, ENGINE_CPU, F32,
    STREAM_DEFAULT_FLAGS, UNIMPLEMENTED,
};

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

/// An input's values: f32, or bf16 as their bits.
pub enum Values {
    F32(Vec<f32>),
    Bf16(Vec<u16>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::Bf16(v) => v.len(),
        }
    }

    /// oneDNN's data type of the values.
    fn data_type(&self) -> c_int {
        match self {
            Values::F32(_) => F32,
            Values::Bf16(_) => BF16,
        }
    }

    fn as_mut_ptr(&mut self) -> *mut c_void {
        match self {
            Values::F32(v) => v.as_mut_ptr().cast(),
            Values::Bf16(v) => v.as_mut_ptr().cast(),
        }
    }
}

/// A ready-to-run oneDNN matmul that owns its buffers.
pub struct Matmul {
    engine: Engine,
    stream: Stream,
    prim: Primitive,
    /// The execution arguments: src, weights, the bias if any, dst.
    args: Vec<ExecArg>,
    _inputs: Vec<Values>,
    dst: Vec<f32>,
}

impl Matmul {
    /// Sets up `dst = src · weights`, or `max(src · weights + bias, 0)`
    /// with `bias_relu`. `Ok(Err(why))` where oneDNN has no implementation
    /// of it for this CPU (`dnnl_unimplemented`: a bf16 matmul without
    /// AVX-512).
    pub fn new(
        sh: MatmulShape,
        src: Values,
        weights: Values,
        bias_relu: Option<Vec<f32>>,
    ) -> Result<Result<Matmul, String>, String> {
        let (m, n, k) = (sh.m as i64, sh.n as i64, sh.k as i64);
        assert_eq!((src.len(), weights.len()), (sh.m * sh.k, sh.k * sh.n));
        let mut mds = vec![
            md_of(&[m, k], src.data_type(), AB)?,
            md_of(&[k, n], weights.data_type(), AB)?,
        ];
        let mut inputs = vec![src, weights];
        let mut kinds = vec![ARG_SRC, ARG_WEIGHTS];
        if let Some(bias) = bias_relu {
            assert_eq!(bias.len(), sh.n);
            mds.push(md_of(&[1, n], F32, AB)?);
            inputs.push(Values::F32(bias));
            kinds.push(ARG_BIAS);
        }
        let dst_md = md_of(&[m, n], F32, AB)?;
        let with_bias = inputs.len() == 3;
        let mut mm = Matmul {
            engine: null_mut(),
            stream: null_mut(),
            prim: null_mut(),
            args: Vec::new(),
            _inputs: inputs,
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
            let bias_md = if with_bias {
                &mds[2] as *const MemoryDesc
            } else {
                null()
            };
            check(
                dnnl_matmul_desc_init(&mut desc, &mds[0], &mds[1], bias_md, &dst_md),
                "matmul_desc_init",
            )?;
            let (mut attr, mut ops): (Attr, PostOps) = (null_mut(), null_mut());
            check(
                dnnl_primitive_attr_create(&mut attr),
                "primitive_attr_create",
            )?;
            check(dnnl_post_ops_create(&mut ops), "post_ops_create")?;
            let mut pd: PrimitiveDesc = null_mut();
            let made = if with_bias {
                check(
                    dnnl_post_ops_append_eltwise(ops, 1.0, ELTWISE_RELU, 0.0, 0.0),
                    "post_ops_append_eltwise",
                )
                .and_then(|()| check(dnnl_primitive_attr_set_post_ops(attr, ops), "set_post_ops"))
            } else {
                Ok(())
            }
            .map(|()| {
                dnnl_primitive_desc_create(
                    &mut pd,
                    &desc as *const MatmulDesc as *const c_void,
                    attr as *const c_void,
                    mm.engine,
                    null(),
                )
            });
            dnnl_post_ops_destroy(ops);
            dnnl_primitive_attr_destroy(attr);
            match made? {
                UNIMPLEMENTED => {
                    return Ok(Err(format!(
                        "oneDNN {} has no such matmul for this CPU (dnnl_unimplemented; bf16 needs AVX-512)",
                        version()
                    )))
                }
                status => check(status, "matmul primitive_desc_create")?,
            }
            let made = dnnl_primitive_create(&mut mm.prim, pd);
            dnnl_primitive_desc_destroy(pd);
            check(made, "matmul primitive_create")?;
            let dst = mm.dst.as_mut_ptr().cast();
            let handles = mm._inputs.iter_mut().map(|v| v.as_mut_ptr()).chain([dst]);
            let descs = mds.iter().chain([&dst_md]);
            for ((arg, md), handle) in kinds.into_iter().chain([ARG_DST]).zip(descs).zip(handles) {
                let mut memory: Memory = null_mut();
                // Pushed before the check, so that Drop destroys it.
                let made = dnnl_memory_create(&mut memory, md, mm.engine, handle);
                mm.args.push(ExecArg { arg, memory });
                check(made, "memory_create")?;
            }
        }
        Ok(Ok(mm))
    }

    /// Runs the primitive once and waits for it.
    pub fn run(&mut self) -> Result<(), String> {
        // SAFETY: the primitive and memory objects were created in `new` and
        // live until Drop; `&mut self` excludes concurrent use of `dst`.
        unsafe {
            check(
                dnnl_primitive_execute(
                    self.prim,
                    self.stream,
                    self.args.len() as c_int,
                    self.args.as_ptr(),
                ),
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
            for a in &self.args {
                dnnl_memory_destroy(a.memory);
            }
            dnnl_stream_destroy(self.stream);
            dnnl_engine_destroy(self.engine);
        }
    }
}
