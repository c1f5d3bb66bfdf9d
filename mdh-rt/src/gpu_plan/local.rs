//! The memory geometry of locally cached tiles: the box of an input that
//! one tile reads, its layout in local memory, and the vector widths its
//! copies and loads may take.

use super::resolve::Resolved;
use crate::desc::{affine_offset, Bound, KernelDesc};

/// Whether input `b`'s accesses all move alike with the dimensions (differ
/// only in constant offsets), so that one box of local memory holds the
/// tile of all of them.
pub fn can_cache_locally(k: &KernelDesc, b: usize) -> bool {
    let accesses = &k.inputs[b].accesses;
    !accesses.is_empty()
        && accesses.iter().all(|f| {
            f.components
                .iter()
                .zip(accesses[0].components.iter())
                .all(|(x, y)| x.dims == y.dims)
        })
}

/// One component of the box of local memory that holds a tile of an input.
pub(super) struct LocalComponent {
    /// The constant offset of each access of the buffer in this component.
    pub(super) offsets: Vec<i128>,
    pub(super) min: i128,
    pub(super) max: i128,
    /// The values the component takes over one tile (all accesses together).
    pub(super) extent: usize,
}

/// The box of input `b`'s elements that one tile of `tile` indices reads:
/// per component of its index function (coefficients are the same for every
/// access, see [`can_cache_locally`]; offsets differ by constants).
pub(super) fn local_box(
    k: &KernelDesc,
    bound: &Bound,
    tile: &[usize],
    b: usize,
) -> Vec<LocalComponent> {
    let accesses = &k.inputs[b].accesses;
    (0..bound.in_shapes[b].len())
        .map(|c| {
            let offsets: Vec<i128> = accesses
                .iter()
                .map(|a| affine_offset(&a.components[c], &bound.sizes))
                .collect();
            let min = offsets.iter().copied().min().unwrap_or(0);
            let max = offsets.iter().copied().max().unwrap_or(0);
            let extent = accesses[0].components[c]
                .dims
                .iter()
                .zip(tile)
                .map(|(&cf, &t)| cf.unsigned_abs() as usize * (t - 1))
                .sum::<usize>()
                + (max - min) as usize
                + 1;
            LocalComponent {
                offsets,
                min,
                max,
                extent,
            }
        })
        .collect()
}

/// Where the elements of a tile's box lie in local memory: the components
/// in row-major order (the last innermost) or transposed (the first
/// innermost), the innermost extent padded.
pub(super) struct LocalLayout {
    /// Per component: its stride in local memory.
    pub(super) strides: Vec<usize>,
    /// The elements the layout takes (padding included).
    pub(super) size: usize,
    /// The elements of the box.
    pub(super) elems: usize,
}

impl LocalLayout {
    /// The elements from one pipeline stage of the tile to the next: its
    /// size rounded up to the widest vector (4 elements), so that every
    /// stage keeps the alignment of the first.
    pub(super) fn stage(&self) -> usize {
        self.size.next_multiple_of(4)
    }

    pub(super) fn new(comps: &[LocalComponent], transpose: bool, pad: usize) -> LocalLayout {
        let rank = comps.len();
        let mut order: Vec<usize> = (0..rank).collect();
        if !transpose {
            order.reverse();
        }
        // `order`: innermost first.
        let mut strides = vec![0; rank];
        let mut size = 1usize;
        for (i, &c) in order.iter().enumerate() {
            strides[c] = size;
            size *= comps[c].extent + if i == 0 { pad } else { 0 };
        }
        LocalLayout {
            strides,
            size,
            elems: comps.iter().map(|c| c.extent).product(),
        }
    }
}

/// Per input buffer: the elements of local memory its tiles take under `r`
/// (0 when it is not cached there), padding and every pipeline stage
/// included: the definitions' `L{b}_SIZE` for the last stage, `L{b}_STAGE`
/// for each one before it; what plan fitting weighs against a device's
/// local (shared) memory.
pub fn local_elems(k: &KernelDesc, bound: &Bound, r: &Resolved) -> Vec<usize> {
    (0..k.inputs.len())
        .map(|b| {
            if r.local.get(b).copied().unwrap_or(false) {
                let comps = local_box(k, bound, &r.tile, b);
                let layout = LocalLayout::new(&comps, r.transpose[b], r.pad[b]);
                layout.stage() * (r.stages - 1) + layout.size
            } else {
                0
            }
        })
        .collect()
}

/// The bytes a local-memory tile of elements of `elem_bytes` bytes is
/// aligned to: a vector of the widest width (4), and at least 16 (CUDA's
/// 16-byte loads and stores, `cp.async`'s 16-byte copies).
pub fn local_align(elem_bytes: usize) -> usize {
    (4 * elem_bytes).max(16)
}

/// The component of input `b`'s tile that is innermost in local memory.
fn innermost(k: &KernelDesc, r: &Resolved, b: usize) -> usize {
    if r.transpose[b] {
        0
    } else {
        k.inputs[b].shape.len().saturating_sub(1)
    }
}

/// The vector width of the copies of input `b`'s tiles into local memory:
/// the plan's width where every vector of the copy is aligned in global
/// and local memory, else 1. The copy walks the box row by row of its last
/// component (contiguous in global memory), in vectors of that width: the
/// rows' extent and the buffer's row length must be multiples of it, and
/// the first element of a tile's row too, for every tile (its box's least
/// value in the last component moves with the tiles' starts, by the
/// coefficients times the blocks and tiles; a negative coefficient moves
/// it with a tile's end, which the sizes do not align). The vectors are
/// stored whole, so the last component must be innermost in local memory
/// (a transposed tile of rank 2 and more is copied element by element: its
/// vectors would be stored element by element anyway, and PoCL 3 turned
/// that path into an endless loop, `bmatmul_split_kept_vector_tiles` in
/// tests/opencl.rs) and its padded extent a multiple of the width.
pub fn copy_vector(k: &KernelDesc, bound: &Bound, r: &Resolved, b: usize) -> usize {
    let v = r.vector[b];
    let shape = &bound.in_shapes[b];
    if v == 1 || !r.local[b] || shape.is_empty() {
        return 1;
    }
    let last = shape.len() - 1;
    let comps = local_box(k, bound, &r.tile, b);
    let comp = &k.inputs[b].accesses[0].components[last];
    let aligned = |n: i128| n.rem_euclid(v as i128) == 0;
    let rows = last == 0 || shape[last].is_multiple_of(v);
    let extent = comps[last].extent.is_multiple_of(v);
    let starts = aligned(comps[last].min)
        && comp.dims.iter().enumerate().all(|(x, &cf)| {
            cf >= 0
                && aligned(cf as i128 * r.block[x] as i128)
                && aligned(cf as i128 * r.tile[x] as i128)
        });
    let store = last == 0
        || (innermost(k, r, b) == last && (comps[last].extent + r.pad[b]).is_multiple_of(v));
    if rows && extent && starts && store {
        v
    } else {
        1
    }
}

/// The dimension whose index alone makes component `c` of access `a` of
/// input `b` (coefficient 1, no other dimension; constants aside) when
/// that dimension is kept and no other component depends on it: a
/// work-item's consecutive points along it read consecutive elements of
/// the component. Register fragments load vectors only along such a
/// dimension.
pub fn fragment_dim(k: &KernelDesc, b: usize, a: usize, c: usize) -> Option<usize> {
    let comps = &k.inputs[b].accesses[a].components;
    let dims = &comps.get(c)?.dims;
    let x = dims.iter().position(|&cf| cf != 0)?;
    let alone = dims[x] == 1 && dims.iter().filter(|&&cf| cf != 0).count() == 1;
    let only_here = comps
        .iter()
        .enumerate()
        .all(|(c2, comp)| c2 == c || comp.dims[x] == 0);
    (alone && only_here && k.kinds[x].is_kept()).then_some(x)
}

/// The dimension and width of the vector loads of access `a` of input
/// `b`'s register fragments from local memory, or `None` (scalar loads):
/// the plan's width where the tile is cached, its innermost component in
/// local memory is one kept dimension's index alone ([`fragment_dim`]),
/// a work-item's points along that dimension come in runs of the width
/// (its points per tile a multiple of it; strided work-items take runs of
/// [`names::vector_group`](crate::names::vector_group)), the access's offset from the box's least
/// value a multiple of it, and so the padded innermost extent (the stride
/// of the next component).
pub fn fragment_vector(
    k: &KernelDesc,
    bound: &Bound,
    r: &Resolved,
    b: usize,
    a: usize,
) -> Option<(usize, usize)> {
    let v = r.vector[b];
    if v == 1 || !r.local[b] {
        return None;
    }
    let c = innermost(k, r, b);
    let x = fragment_dim(k, b, a, c)?;
    let comps = local_box(k, bound, &r.tile, b);
    let offset = comps[c].offsets[a] - comps[c].min;
    let next = comps.len() == 1 || (comps[c].extent + r.pad[b]).is_multiple_of(v);
    (r.private[x].is_multiple_of(v) && offset % v as i128 == 0 && next).then_some((x, v))
}
