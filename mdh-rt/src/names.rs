//! The names of the GPU source template. The emitter (mdh-core's
//! `codegen::gpu`) writes one source per kernel over these preprocessor
//! names; [`defines`](crate::gpu_plan::defines) gives them their values for
//! one call. Both sides take the names from here.

/// The value of size parameter `name`.
pub fn size(name: &str) -> String {
    format!("MDH_SIZE_{name}")
}

/// The extent of md_hom dimension `x`.
pub fn extent(x: usize) -> String {
    format!("N{x}")
}

/// The work-groups along dimension `x` (#PRT(WG, x)).
pub fn groups(x: usize) -> String {
    format!("G{x}")
}

/// The work-items of a work-group along dimension `x` (#PRT(WI, x)).
pub fn items(x: usize) -> String {
    format!("W{x}")
}

/// The indices of one local-memory tile along dimension `x`.
pub fn tile(x: usize) -> String {
    format!("T{x}")
}

/// The indices of one work-group's block along dimension `x`.
pub fn block(x: usize) -> String {
    format!("B{x}")
}

/// The indices of one work-item per tile along dimension `x` (the PM tile).
pub fn private(x: usize) -> String {
    format!("P{x}")
}

/// The warps of a work-group along dimension `x` (the warp layer; 1
/// without it).
pub fn warps(x: usize) -> String {
    format!("WP{x}")
}

/// The lanes of a warp along dimension `x` (`W{x} / WP{x}`).
pub fn lanes(x: usize) -> String {
    format!("LN{x}")
}

/// The lanes of one warp of the warp layer (all work-items of a
/// work-group without one).
pub const LANES: &str = "MDH_LANES";

/// Work-items per work-group.
pub const WG_ITEMS: &str = "WG_ITEMS";
/// 1 when work-items take consecutive indices of a tile, 0 when strided.
pub const BLOCKED: &str = "MDH_BLOCKED";
/// Work-groups that split PW dimensions (more than 1: a second pass).
pub const PW_GROUPS: &str = "PW_GROUPS";
/// Points of the kept (CC and PS) dimensions.
pub const KEPT_POINTS: &str = "KEPT_POINTS";
/// Work-items of a work-group along PW dimensions.
pub const PW_ITEMS: &str = "PW_ITEMS";
/// The C type of every index and offset of the kernels: `int` when every
/// value the kernels compute with fits in it, `long` else (see
/// [`index_type`](crate::gpu_plan::index_type)).
pub const IDX: &str = "MDH_IDX";

/// The prefix of the linear offset of access `a` of input `b`: see [`base`], [`coef`].
pub fn input_access(b: usize, a: usize) -> String {
    format!("IN{b}_{a}")
}

/// The prefix of the linear offset of access `a` of output `b`.
pub fn output_access(b: usize, a: usize) -> String {
    format!("OUT{b}_{a}")
}

/// The prefix of the linear offset of access `a` of input `b` of a fused
/// epilogue (over the epilogue's own dimensions, see
/// [`epilogue_defines`](crate::gpu_plan::epilogue_defines)).
pub fn epilogue_access(b: usize, a: usize) -> String {
    format!("EIN{b}_{a}")
}

/// The value of size parameter `name` of a fused epilogue.
pub fn epilogue_size(name: &str) -> String {
    format!("MDH_ESIZE_{name}")
}

/// The constant part of the linear offset of access `access` (a prefix).
pub fn base(access: &str) -> String {
    format!("{access}_BASE")
}

/// The coefficient of index `x` in the linear offset of access `access`.
pub fn coef(access: &str, x: usize) -> String {
    format!("{access}_C{x}")
}

/// 1 when input `b`'s tiles are cached in local memory.
pub fn local(b: usize) -> String {
    format!("LOCAL{b}")
}

/// The row-major stride of component `c` of locally cached input `b`.
pub fn input_stride(b: usize, c: usize) -> String {
    format!("IN{b}_S{c}")
}

/// The constant offset of access `a` of locally cached input `b` in component `c`.
pub fn local_offset(b: usize, a: usize, c: usize) -> String {
    format!("IN{b}_{a}_O{c}")
}

/// The least of the offsets [`local_offset`] of input `b` in component `c`.
pub fn offset_min(b: usize, c: usize) -> String {
    format!("IN{b}_OMIN{c}")
}

/// The greatest of the offsets [`local_offset`] of input `b` in component `c`.
pub fn offset_max(b: usize, c: usize) -> String {
    format!("IN{b}_OMAX{c}")
}

/// The extent of component `c` of input `b`'s box in local memory.
pub fn local_extent(b: usize, c: usize) -> String {
    format!("L{b}_E{c}")
}

/// The stride of component `c` of input `b`'s box in local memory.
pub fn local_stride(b: usize, c: usize) -> String {
    format!("L{b}_S{c}")
}

/// The elements of input `b`'s box in local memory.
pub fn local_size(b: usize) -> String {
    format!("L{b}_SIZE")
}

/// 0, or how a contraction's full tiles run on tensor cores: the TF32
/// mmas per product, 1 (TF32) or 3 (3xTF32), or 16 (m16n8k16 on the
/// inputs' 16-bit bits); see `GpuPlan::mma`.
pub const MMA: &str = "MDH_MMA";

/// The pipeline stages of the local tiles (see `GpuPlan::stages`).
pub const STAGES: &str = "MDH_STAGES";

/// 1 when `mdh_main` takes the tiles of locally cached inputs from
/// dynamic shared memory (CUDA: their bytes exceed the 48 KiB a block may
/// declare statically), 0 when they are static arrays.
pub const DYN_SHARED: &str = "MDH_DYN_SHARED";

/// The byte offset of input `b`'s tiles in dynamic shared memory (see
/// [`DYN_SHARED`]).
pub fn dyn_offset(b: usize) -> String {
    format!("L{b}_DOFF")
}

/// The elements from one pipeline stage of input `b`'s tile in local
/// memory to the next (at least [`local_size`], aligned).
pub fn local_stage(b: usize) -> String {
    format!("L{b}_STAGE")
}

/// The elements of input `b`'s box (unpadded; [`local_size`] counts the
/// padding the layout adds).
pub fn local_box(b: usize) -> String {
    format!("L{b}_BOX")
}

/// The vector width of the copies of input `b`'s tiles into local memory
/// (1: scalar copies).
pub fn copy_vector(b: usize) -> String {
    format!("L{b}_VEC")
}

/// The vector width of the register fragment loads of access `a` of input
/// `b` from local memory (1: scalar loads).
pub fn fragment_vector(b: usize, a: usize) -> String {
    format!("FV{b}_{a}")
}

/// The md_hom dimension along which access `a` of input `b` loads vectors
/// into its fragment (-1: none).
pub fn fragment_vector_dim(b: usize, a: usize) -> String {
    format!("FVX{b}_{a}")
}

/// The run of consecutive indices a work-item takes along dimension `x`
/// between the strides of strided work-items (1: plain strides; larger
/// where fragments load vectors along `x`).
pub fn vector_group(x: usize) -> String {
    format!("VG{x}")
}
