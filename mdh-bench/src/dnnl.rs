//! A oneDNN forward convolution through its C API, declared by hand from
//! Debian's oneDNN 2.6 headers (`/usr/include/oneapi/dnnl/dnnl.h`,
//! `dnnl_types.h`); struct sizes are checked against the C `sizeof` below.
//!
//! Source and destination are NHWC, as in the mdh kernel; the weights are
//! given as OHWI (the mdh kernel's `F[K, R, S, C]`) and reordered once, outside
//! the timed region, into the layout oneDNN picks for the convolution
//! (`dnnl_format_tag_any`), as inference code does with constant weights.
//!
//! And, each in its module over a [`Prepared`] primitive: a matmul
//! ([`matmul()`], row-major matrices, f32 or bf16 inputs, an optional bias
//! and ReLU post-op), a softmax ([`softmax()`]) and a layer normalization
//! ([`layer_norm()`]) along the rows of a matrix.

use std::os::raw::{c_char, c_int, c_uint, c_void};
use std::ptr::{null, null_mut};

const MAX_NDIMS: usize = 12; // DNNL_MAX_NDIMS
type Dims = [i64; MAX_NDIMS]; // dnnl_dims_t

// Enum values (C enums are `int` here), from dnnl_types.h.
const SUCCESS: c_int = 0; // dnnl_success
const F32: c_int = 3; // dnnl_f32
const BF16: c_int = 2; // dnnl_bf16
const UNIMPLEMENTED: c_int = 3; // dnnl_unimplemented
const AB: c_int = 3; // dnnl_ab (row-major 2-D)
const FORMAT_TAG_ANY: c_int = 1; // dnnl_format_tag_any
const ACDB: c_int = 20; // dnnl_acdb = dnnl_nhwc = dnnl_ohwi
const FORWARD_INFERENCE: c_int = 96; // dnnl_forward_inference
const CONVOLUTION_DIRECT: c_int = 1; // dnnl_convolution_direct
const ENGINE_CPU: c_int = 1; // dnnl_cpu
const STREAM_DEFAULT_FLAGS: c_uint = 1; // dnnl_stream_default_flags = dnnl_stream_in_order
const QUERY_WEIGHTS_MD: c_int = 131; // dnnl_query_weights_md
const ARG_SRC: c_int = 1; // DNNL_ARG_SRC = DNNL_ARG_FROM
const ARG_DST: c_int = 17; // DNNL_ARG_DST = DNNL_ARG_TO
const ARG_WEIGHTS: c_int = 33; // DNNL_ARG_WEIGHTS
const MEMORY_ALLOCATE: *mut c_void = usize::MAX as *mut c_void; // DNNL_MEMORY_ALLOCATE

/// `dnnl_memory_desc_t`. The `format_desc` union (blocking, Winograd and RNN
/// descriptions, 296 bytes, 8-aligned) and `extra` (80 bytes) are opaque here.
#[repr(C)]
#[derive(Clone, Copy)]
struct MemoryDesc {
    ndims: c_int,
    dims: Dims,
    data_type: c_int,
    padded_dims: Dims,
    padded_offsets: Dims,
    offset0: i64,
    format_kind: c_int,
    format_desc: [u64; 37],
    extra: [u64; 10],
}

/// `dnnl_convolution_desc_t`.
#[repr(C)]
struct ConvolutionDesc {
    primitive_kind: c_int,
    prop_kind: c_int,
    alg_kind: c_int,
    src_desc: MemoryDesc,
    diff_src_desc: MemoryDesc,
    weights_desc: MemoryDesc,
    diff_weights_desc: MemoryDesc,
    bias_desc: MemoryDesc,
    diff_bias_desc: MemoryDesc,
    dst_desc: MemoryDesc,
    diff_dst_desc: MemoryDesc,
    strides: Dims,
    dilates: Dims,
    padding: [Dims; 2],
    accum_data_type: c_int,
}

// sizeof/alignof printed by a C program against the installed headers.
const _: () = assert!(std::mem::size_of::<MemoryDesc>() == 696);
const _: () = assert!(std::mem::align_of::<MemoryDesc>() == 8);
const _: () = assert!(std::mem::size_of::<ConvolutionDesc>() == 5976);

/// `dnnl_exec_arg_t`.
#[repr(C)]
struct ExecArg {
    arg: c_int,
    memory: Memory,
}

/// `dnnl_version_t`.
#[repr(C)]
struct Version {
    major: c_int,
    minor: c_int,
    patch: c_int,
    hash: *const c_char,
    cpu_runtime: c_uint,
    gpu_runtime: c_uint,
}

#[repr(C)]
struct Opaque {
    _p: [u8; 0],
}
type Engine = *mut Opaque; // dnnl_engine_t
type Stream = *mut Opaque; // dnnl_stream_t
type Memory = *mut Opaque; // dnnl_memory_t
type PrimitiveDesc = *mut Opaque; // dnnl_primitive_desc_t
type Primitive = *mut Opaque; // dnnl_primitive_t

extern "C" {
    fn dnnl_version() -> *const Version;
    fn dnnl_engine_create(engine: *mut Engine, kind: c_int, index: usize) -> c_int;
    fn dnnl_engine_destroy(engine: Engine) -> c_int;
    fn dnnl_stream_create(stream: *mut Stream, engine: Engine, flags: c_uint) -> c_int;
    fn dnnl_stream_wait(stream: Stream) -> c_int;
    fn dnnl_stream_destroy(stream: Stream) -> c_int;
    fn dnnl_memory_desc_init_by_tag(
        md: *mut MemoryDesc,
        ndims: c_int,
        dims: *const i64,
        data_type: c_int,
        tag: c_int,
    ) -> c_int;
    fn dnnl_memory_desc_equal(lhs: *const MemoryDesc, rhs: *const MemoryDesc) -> c_int;
    fn dnnl_convolution_forward_desc_init(
        conv_desc: *mut ConvolutionDesc,
        prop_kind: c_int,
        alg_kind: c_int,
        src_desc: *const MemoryDesc,
        weights_desc: *const MemoryDesc,
        bias_desc: *const MemoryDesc,
        dst_desc: *const MemoryDesc,
        strides: *const i64,
        padding_l: *const i64,
        padding_r: *const i64,
    ) -> c_int;
    fn dnnl_primitive_desc_create(
        pd: *mut PrimitiveDesc,
        op_desc: *const c_void,
        attr: *const c_void,
        engine: Engine,
        hint_forward_pd: *const c_void,
    ) -> c_int;
    fn dnnl_reorder_primitive_desc_create(
        pd: *mut PrimitiveDesc,
        src_desc: *const MemoryDesc,
        src_engine: Engine,
        dst_desc: *const MemoryDesc,
        dst_engine: Engine,
        attr: *const c_void,
    ) -> c_int;
    fn dnnl_primitive_desc_query_md(
        pd: PrimitiveDesc,
        what: c_int,
        index: c_int,
    ) -> *const MemoryDesc;
    fn dnnl_primitive_desc_destroy(pd: PrimitiveDesc) -> c_int;
    fn dnnl_primitive_create(primitive: *mut Primitive, pd: PrimitiveDesc) -> c_int;
    fn dnnl_primitive_execute(
        primitive: Primitive,
        stream: Stream,
        nargs: c_int,
        args: *const ExecArg,
    ) -> c_int;
    fn dnnl_primitive_destroy(primitive: Primitive) -> c_int;
    fn dnnl_memory_create(
        memory: *mut Memory,
        md: *const MemoryDesc,
        engine: Engine,
        handle: *mut c_void,
    ) -> c_int;
    fn dnnl_memory_destroy(memory: Memory) -> c_int;
}

mod layer_norm;
mod matmul;
mod prepared;
mod softmax;
pub use layer_norm::layer_norm;
pub use matmul::{matmul, MatmulShape};
pub use prepared::{Prepared, Values};
pub use softmax::softmax;

fn check(status: c_int, what: &str) -> Result<(), String> {
    if status == SUCCESS {
        Ok(())
    } else {
        Err(format!("oneDNN: {what} failed with status {status}"))
    }
}

/// `"2.6.3"`.
pub fn version() -> String {
    // SAFETY: dnnl_version returns a pointer to a static struct.
    unsafe {
        let v = &*dnnl_version();
        format!("{}.{}.{}", v.major, v.minor, v.patch)
    }
}

fn dims(xs: &[i64]) -> Dims {
    let mut d = [0; MAX_NDIMS];
    d[..xs.len()].copy_from_slice(xs);
    d
}

fn md(shape: &[i64], tag: c_int) -> Result<MemoryDesc, String> {
    md_of(shape, F32, tag)
}

fn md_of(shape: &[i64], data_type: c_int, tag: c_int) -> Result<MemoryDesc, String> {
    // SAFETY: an all-zero MemoryDesc is a valid (plain-data) value to be
    // overwritten; `dims` holds MAX_NDIMS entries.
    unsafe {
        let mut m: MemoryDesc = std::mem::zeroed();
        let d = dims(shape);
        check(
            dnnl_memory_desc_init_by_tag(&mut m, shape.len() as c_int, d.as_ptr(), data_type, tag),
            "memory_desc_init_by_tag",
        )?;
        Ok(m)
    }
}

/// Shape of a 2-D convolution in oneDNN's terms (NCHW logical dims).
#[derive(Clone, Copy, Debug)]
pub struct ConvShape {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub k: usize,
    pub r: usize,
    pub s: usize,
    pub stride: usize,
    pub p: usize,
    pub q: usize,
}

/// A ready-to-run oneDNN convolution that owns its NHWC source and
/// destination buffers; the weights live in oneDNN's chosen layout.
pub struct Conv {
    engine: Engine,
    stream: Stream,
    prim: Primitive,
    src_mem: Memory,
    wei_mem: Memory,
    dst_mem: Memory,
    _src: Vec<f32>,
    dst: Vec<f32>,
    /// Whether oneDNN chose a weights layout other than OHWI.
    pub weights_reordered: bool,
}

/// Reorders the weights in `user` (laid out as `from`) into `conv.wei_mem`
/// (laid out as `to`) on `conv`'s engine and stream.
fn reorder(conv: &Conv, user: Memory, from: &MemoryDesc, to: &MemoryDesc) -> Result<(), String> {
    // SAFETY: `conv`'s engine, stream and weights memory were created by
    // oneDNN and live as long as `conv`; `user` is a memory object over the
    // caller's weights, alive during this call; the reorder primitive and
    // its descriptor are destroyed here after their last use.
    unsafe {
        let mut rpd: PrimitiveDesc = null_mut();
        check(
            dnnl_reorder_primitive_desc_create(
                &mut rpd,
                from,
                conv.engine,
                to,
                conv.engine,
                null(),
            ),
            "reorder primitive_desc_create",
        )?;
        let mut reorder: Primitive = null_mut();
        let made = dnnl_primitive_create(&mut reorder, rpd);
        dnnl_primitive_desc_destroy(rpd);
        check(made, "reorder primitive_create")?;
        let args = [
            ExecArg {
                arg: ARG_SRC,
                memory: user,
            },
            ExecArg {
                arg: ARG_DST,
                memory: conv.wei_mem,
            },
        ];
        let ran = check(
            dnnl_primitive_execute(reorder, conv.stream, 2, args.as_ptr()),
            "reorder execute",
        )
        .and_then(|()| check(dnnl_stream_wait(conv.stream), "stream_wait"));
        dnnl_primitive_destroy(reorder);
        ran
    }
}

impl Conv {
    /// Sets up the convolution for `src` (NHWC) and `weights` (OHWI); the
    /// weights are reordered here, once. Padding is zero on both sides.
    pub fn new(sh: ConvShape, src: Vec<f32>, weights: &[f32]) -> Result<Conv, String> {
        let i = |x: usize| x as i64;
        assert_eq!(src.len(), sh.n * sh.h * sh.w * sh.c);
        assert_eq!(weights.len(), sh.k * sh.r * sh.s * sh.c);
        let src_md = md(&[i(sh.n), i(sh.c), i(sh.h), i(sh.w)], ACDB)?;
        let user_wei_md = md(&[i(sh.k), i(sh.c), i(sh.r), i(sh.s)], ACDB)?;
        let any_wei_md = md(&[i(sh.k), i(sh.c), i(sh.r), i(sh.s)], FORMAT_TAG_ANY)?;
        let dst_md = md(&[i(sh.n), i(sh.k), i(sh.p), i(sh.q)], ACDB)?;
        let strides = dims(&[i(sh.stride), i(sh.stride)]);
        // oneDNN requires dst = (src - ker + pad_l + pad_r) / stride + 1 with
        // integer division, which holds with zero padding for ResNet's
        // 230 = 224 + 2·3 (the last input row and column are not read).
        let fits =
            |src: usize, ker: usize, dst: usize| src >= ker && (src - ker) / sh.stride + 1 == dst;
        if !fits(sh.h, sh.r, sh.p) || !fits(sh.w, sh.s, sh.q) {
            return Err(format!(
                "oneDNN convolution: {sh:?} is not a valid unpadded convolution"
            ));
        }
        let pad_l = dims(&[0, 0]);
        let pad_r = dims(&[0, 0]);
        let mut dst = vec![f32::NAN; sh.n * sh.p * sh.q * sh.k];
        let mut conv = Conv {
            engine: null_mut(),
            stream: null_mut(),
            prim: null_mut(),
            src_mem: null_mut(),
            wei_mem: null_mut(),
            dst_mem: null_mut(),
            _src: src,
            dst: Vec::new(),
            weights_reordered: false,
        };
        // SAFETY: every out-pointer is valid; all descriptors are initialised
        // by oneDNN before use; memory handles point into `conv._src`,
        // `weights` (used only during this function) and `dst`, whose heap
        // buffers outlive the memory objects (destroyed in Drop first).
        unsafe {
            check(
                dnnl_engine_create(&mut conv.engine, ENGINE_CPU, 0),
                "engine_create",
            )?;
            check(
                dnnl_stream_create(&mut conv.stream, conv.engine, STREAM_DEFAULT_FLAGS),
                "stream_create",
            )?;
            let mut cd: ConvolutionDesc = std::mem::zeroed();
            check(
                dnnl_convolution_forward_desc_init(
                    &mut cd,
                    FORWARD_INFERENCE,
                    CONVOLUTION_DIRECT,
                    &src_md,
                    &any_wei_md,
                    null(),
                    &dst_md,
                    strides.as_ptr(),
                    pad_l.as_ptr(),
                    pad_r.as_ptr(),
                ),
                "convolution_forward_desc_init",
            )?;
            let mut pd: PrimitiveDesc = null_mut();
            check(
                dnnl_primitive_desc_create(
                    &mut pd,
                    &cd as *const ConvolutionDesc as *const c_void,
                    null(),
                    conv.engine,
                    null(),
                ),
                "convolution primitive_desc_create",
            )?;
            let wei_md: MemoryDesc = *dnnl_primitive_desc_query_md(pd, QUERY_WEIGHTS_MD, 0);
            let made = dnnl_primitive_create(&mut conv.prim, pd);
            dnnl_primitive_desc_destroy(pd);
            check(made, "convolution primitive_create")?;

            check(
                dnnl_memory_create(
                    &mut conv.src_mem,
                    &src_md,
                    conv.engine,
                    conv._src.as_mut_ptr().cast(),
                ),
                "memory_create src",
            )?;
            check(
                dnnl_memory_create(
                    &mut conv.dst_mem,
                    &dst_md,
                    conv.engine,
                    dst.as_mut_ptr().cast(),
                ),
                "memory_create dst",
            )?;
            conv.dst = dst;
            check(
                dnnl_memory_create(&mut conv.wei_mem, &wei_md, conv.engine, MEMORY_ALLOCATE),
                "memory_create weights",
            )?;
            // Reorder the user's OHWI weights into oneDNN's layout (a plain copy
            // when it chose OHWI itself).
            let mut user_wei: Memory = null_mut();
            check(
                dnnl_memory_create(
                    &mut user_wei,
                    &user_wei_md,
                    conv.engine,
                    weights.as_ptr() as *mut c_void,
                ),
                "memory_create user weights",
            )?;
            let reordered = reorder(&conv, user_wei, &user_wei_md, &wei_md);
            dnnl_memory_destroy(user_wei);
            reordered?;
            conv.weights_reordered = dnnl_memory_desc_equal(&wei_md, &user_wei_md) == 0;
        }
        Ok(conv)
    }

    /// Runs the convolution primitive once and waits for it.
    pub fn run(&mut self) -> Result<(), String> {
        let args = [
            ExecArg {
                arg: ARG_SRC,
                memory: self.src_mem,
            },
            ExecArg {
                arg: ARG_WEIGHTS,
                memory: self.wei_mem,
            },
            ExecArg {
                arg: ARG_DST,
                memory: self.dst_mem,
            },
        ];
        // SAFETY: the primitive and memory objects were created in `new` and
        // live until Drop; `&mut self` excludes concurrent use of `dst`.
        unsafe {
            check(
                dnnl_primitive_execute(self.prim, self.stream, 3, args.as_ptr()),
                "convolution execute",
            )?;
            check(dnnl_stream_wait(self.stream), "stream_wait")
        }
    }

    /// The NHWC (NPQK) output of the last run.
    pub fn dst(&self) -> &[f32] {
        &self.dst
    }
}

impl Drop for Conv {
    fn drop(&mut self) {
        // SAFETY: each handle was created by oneDNN (or is null, which the
        // destroy functions accept) and is destroyed exactly once.
        unsafe {
            dnnl_primitive_destroy(self.prim);
            dnnl_memory_destroy(self.src_mem);
            dnnl_memory_destroy(self.wei_mem);
            dnnl_memory_destroy(self.dst_mem);
            dnnl_stream_destroy(self.stream);
            dnnl_engine_destroy(self.engine);
        }
    }
}
