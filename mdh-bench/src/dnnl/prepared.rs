//! What the matmul, softmax and layer normalization bindings share: a
//! primitive on its own CPU engine and stream, its arguments' memory
//! objects over buffers it owns, run and read back. (The convolution also
//! reorders its weights once, into a layout oneDNN allocates: it keeps its
//! own.)

use std::os::raw::{c_int, c_void};
use std::ptr::{null, null_mut};

use super::{
    check, dnnl_engine_create, dnnl_engine_destroy, dnnl_memory_create, dnnl_memory_destroy,
    dnnl_primitive_create, dnnl_primitive_desc_create, dnnl_primitive_desc_destroy,
    dnnl_primitive_destroy, dnnl_primitive_execute, dnnl_stream_create, dnnl_stream_destroy,
    dnnl_stream_wait, version, Engine, ExecArg, Memory, MemoryDesc, Primitive, PrimitiveDesc,
    Stream, ARG_DST, BF16, ENGINE_CPU, F32, STREAM_DEFAULT_FLAGS, UNIMPLEMENTED,
};

/// An input's values: f32, or bf16 as their bits.
pub enum Values {
    F32(Vec<f32>),
    Bf16(Vec<u16>),
}

impl Values {
    pub(super) fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::Bf16(v) => v.len(),
        }
    }

    /// oneDNN's data type of the values.
    pub(super) fn data_type(&self) -> c_int {
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

/// An input of a primitive: its argument kind (`DNNL_ARG_*`), its memory
/// descriptor and its values.
pub(super) struct Input {
    pub arg: c_int,
    pub md: MemoryDesc,
    pub values: Values,
}

/// A ready-to-run oneDNN primitive that owns its buffers, the destination
/// an f32 tensor.
pub struct Prepared {
    /// The primitive's name in error messages ("matmul").
    what: &'static str,
    engine: Engine,
    stream: Stream,
    prim: Primitive,
    /// The execution arguments: the inputs in order, then the destination.
    args: Vec<ExecArg>,
    /// Where the inputs' memory objects point (heap buffers: they stay in
    /// place when `Prepared` moves).
    _inputs: Vec<Values>,
    dst: Vec<f32>,
}

impl Prepared {
    /// Makes the primitive of the operation descriptor `desc` with the
    /// attributes `attr` (null: none) over `inputs` into a destination of
    /// `dst_md` (`dst_len` elements). `Ok(Err(why))` where oneDNN has no
    /// implementation of it for this CPU (`dnnl_unimplemented`).
    ///
    /// # Safety
    ///
    /// `desc` points to an operation descriptor that oneDNN initialised,
    /// and `attr` is null or a live primitive attribute; both need to live
    /// only during this call (the primitive descriptor copies them).
    pub(super) unsafe fn new(
        what: &'static str,
        desc: *const c_void,
        attr: *const c_void,
        inputs: Vec<Input>,
        dst_md: MemoryDesc,
        dst_len: usize,
    ) -> Result<Result<Prepared, String>, String> {
        let (kinds, mds): (Vec<c_int>, Vec<MemoryDesc>) =
            inputs.iter().map(|input| (input.arg, input.md)).unzip();
        let mut p = Prepared {
            what,
            engine: null_mut(),
            stream: null_mut(),
            prim: null_mut(),
            args: Vec::new(),
            _inputs: inputs.into_iter().map(|input| input.values).collect(),
            dst: vec![f32::NAN; dst_len],
        };
        // SAFETY: every out-pointer is valid; `desc` and `attr` are as the
        // caller promises; the memory handles point into `p`'s heap
        // buffers, which outlive them (destroyed in Drop first); a handle
        // that failed stays null, which Drop accepts.
        unsafe {
            check(
                dnnl_engine_create(&mut p.engine, ENGINE_CPU, 0),
                "engine_create",
            )?;
            check(
                dnnl_stream_create(&mut p.stream, p.engine, STREAM_DEFAULT_FLAGS),
                "stream_create",
            )?;
            let mut pd: PrimitiveDesc = null_mut();
            match dnnl_primitive_desc_create(&mut pd, desc, attr, p.engine, null()) {
                UNIMPLEMENTED => {
                    return Ok(Err(format!(
                        "oneDNN {} has no such {what} for this CPU (dnnl_unimplemented)",
                        version()
                    )))
                }
                status => check(status, &format!("{what} primitive_desc_create"))?,
            }
            let made = dnnl_primitive_create(&mut p.prim, pd);
            dnnl_primitive_desc_destroy(pd);
            check(made, &format!("{what} primitive_create"))?;
            let dst = p.dst.as_mut_ptr().cast();
            let handles = p._inputs.iter_mut().map(|v| v.as_mut_ptr()).chain([dst]);
            let descs = mds.iter().chain([&dst_md]);
            for ((arg, md), handle) in kinds.into_iter().chain([ARG_DST]).zip(descs).zip(handles) {
                let mut memory: Memory = null_mut();
                // Pushed before the check, so that Drop destroys it.
                let made = dnnl_memory_create(&mut memory, md, p.engine, handle);
                p.args.push(ExecArg { arg, memory });
                check(made, "memory_create")?;
            }
        }
        Ok(Ok(p))
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
                &format!("{} execute", self.what),
            )?;
            check(dnnl_stream_wait(self.stream), "stream_wait")
        }
    }

    /// The output of the last run.
    pub fn dst(&self) -> &[f32] {
        &self.dst
    }
}

impl Drop for Prepared {
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
