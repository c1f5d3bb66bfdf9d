//! The `#define`s that complete a kernel's template for one call.

use super::local::{copy_vector, fragment_vector, local_box, local_elems, LocalLayout};
use super::resolve::Resolved;
use super::{PASS_ITEMS, SCAN_CHUNK};
use crate::desc::{Bound, KernelDesc, Linear};
use crate::names;
use crate::types::DimKind;

/// The C preprocessor definitions that specialize a kernel's source for one
/// call: extents, the resolved plan, linear offsets of every access, the
/// strides and local boxes of locally cached inputs. Prepended to the
/// generated source; the source refers only to these names ([`names`]).
pub fn defines(k: &KernelDesc, bound: &Bound, r: &Resolved) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let d = bound.extents.len();
    let idx = index_type(k, bound, r);
    let mut def = |name: String, v: String| {
        let _ = writeln!(s, "#define {name} {v}");
    };
    // Index values typed as MDH_IDX: an `L` suffix would widen `int`
    // arithmetic to 64 bits.
    let suffix = if idx == IndexType::Int { "" } else { "L" };
    let num = |v: &dyn std::fmt::Display| format!("{v}{suffix}");
    def(names::IDX.into(), idx.c_name().into());
    for (name, v) in k.size_params.iter().zip(&bound.sizes) {
        def(names::size(name), format!("{v}UL"));
    }
    for x in 0..d {
        def(names::extent(x), num(&bound.extents[x]));
        def(names::groups(x), num(&r.groups[x]));
        def(names::items(x), num(&r.items[x]));
        def(names::tile(x), num(&r.tile[x]));
        def(names::block(x), num(&r.block[x]));
        def(names::private(x), num(&r.private[x]));
        def(names::warps(x), num(&r.warps[x]));
        def(names::lanes(x), num(&(r.items[x] / r.warps[x])));
    }
    let lanes: usize = r.lanes().iter().product();
    def(names::LANES.into(), num(&lanes));
    def(names::WG_ITEMS.into(), num(&r.threads_per_group()));
    def(names::BLOCKED.into(), u8::from(r.blocked).to_string());
    def(names::STAGES.into(), r.stages.to_string());
    let mma = if r.tensor_cores(k) { r.mma.define() } else { 0 };
    def(names::MMA.into(), mma.to_string());
    let kinds = &k.kinds;
    def(names::PW_GROUPS.into(), num(&r.pw_groups(kinds)));
    def(
        names::KEPT_POINTS.into(),
        num(&DimKind::kept_points(&k.kinds, &bound.extents)),
    );
    let pw_items: usize = (0..d)
        .filter(|&x| kinds[x] == DimKind::Pw)
        .map(|x| r.items[x])
        .product();
    def(names::PW_ITEMS.into(), num(&pw_items));
    let lin = |def: &mut dyn FnMut(String, String), access: &str, l: &Linear| {
        def(names::base(access), num(&l.base));
        for (x, c) in l.coefs.iter().enumerate() {
            def(names::coef(access, x), num(c));
        }
    };
    for (b, accs) in bound.in_linear.iter().enumerate() {
        for (a, l) in accs.iter().enumerate() {
            lin(&mut def, &names::input_access(b, a), l);
        }
    }
    for (b, accs) in bound.out_linear.iter().enumerate() {
        for (a, l) in accs.iter().enumerate() {
            lin(&mut def, &names::output_access(b, a), l);
        }
    }
    // Locally cached inputs: row-major strides, per-access component
    // offsets, the box of one tile and its layout in local memory.
    for (b, shape) in bound.in_shapes.iter().enumerate() {
        if !r.local.get(b).copied().unwrap_or(false) {
            continue;
        }
        let mut stride = 1usize;
        for c in (0..shape.len()).rev() {
            def(names::input_stride(b, c), num(&stride));
            stride *= shape[c];
        }
        def(names::local(b), "1".into());
        let comps = local_box(k, bound, &r.tile, b);
        let layout = LocalLayout::new(&comps, r.transpose[b], r.pad[b]);
        for (c, comp) in comps.iter().enumerate() {
            for (a, o) in comp.offsets.iter().enumerate() {
                def(names::local_offset(b, a, c), num(o));
            }
            def(names::offset_min(b, c), num(&comp.min));
            def(names::offset_max(b, c), num(&comp.max));
            def(names::local_extent(b, c), num(&comp.extent));
            def(names::local_stride(b, c), num(&layout.strides[c]));
        }
        def(names::local_size(b), format!("{}", layout.size));
        def(names::local_stage(b), format!("{}", layout.stage()));
        def(names::local_box(b), num(&layout.elems));
        def(
            names::copy_vector(b),
            copy_vector(k, bound, r, b).to_string(),
        );
    }
    let mut group = vec![1; d];
    for (b, buf) in k.inputs.iter().enumerate() {
        for a in 0..buf.accesses.len() {
            let (x, v) = match fragment_vector(k, bound, r, b, a) {
                Some((x, v)) => (x as i64, v),
                None => (-1, 1),
            };
            if x >= 0 && !r.blocked {
                group[x as usize] = group[x as usize].max(v);
            }
            def(names::fragment_vector(b, a), v.to_string());
            def(names::fragment_vector_dim(b, a), x.to_string());
        }
    }
    for (x, g) in group.iter().enumerate() {
        def(names::vector_group(x), num(g));
    }
    s
}

/// The definitions of a fused epilogue (mdh-core's `fusion`) for one call,
/// where `bound` binds the epilogue stage's own `k`: its size parameters
/// and the linear offsets of the accesses of its inputs but `tmp` (the
/// intermediate, whose values the producing kernel hands it), over the
/// epilogue's dimensions. In 64 bits, whatever the call's [`IndexType`]:
/// the epilogue computes them once per result, after the hot loop, and
/// `bound` (not the producer's) bounds them.
pub fn epilogue_defines(k: &KernelDesc, bound: &Bound, tmp: usize) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for (name, v) in k.size_params.iter().zip(&bound.sizes) {
        let _ = writeln!(s, "#define {} {v}UL", names::epilogue_size(name));
    }
    for (b, accs) in bound.in_linear.iter().enumerate() {
        for (a, l) in accs.iter().enumerate().filter(|_| b != tmp) {
            let access = names::epilogue_access(b, a);
            let _ = writeln!(s, "#define {} {}L", names::base(&access), l.base);
            for (m, c) in l.coefs.iter().enumerate() {
                let _ = writeln!(s, "#define {} {c}L", names::coef(&access, m));
            }
        }
    }
    s
}

/// The C type of the kernels' indices and offsets for one call
/// ([`names::IDX`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexType {
    Int,
    Long,
}

impl IndexType {
    pub fn c_name(self) -> &'static str {
        match self {
            IndexType::Int => "int",
            IndexType::Long => "long",
        }
    }
}

/// `int` when every index value the kernels compute fits in 31 bits with a
/// factor 2 to spare, `long` else. 32-bit indices halve the registers of
/// index arithmetic and keep it off the GPUs' emulated 64-bit multiplies.
/// The values bounded: every partial sum of every access's linear offset
/// (`|base| + Σ |coef| · (N - 1)`), the buffers' lengths (the copies into
/// local memory index them by shape), extents plus tiles and blocks (a tile
/// loop steps past its block once), the work-items of the launches (the
/// second pass and the scans take one per kept point), the partial
/// results, and the local boxes plus a work-group (their copy loops).
pub fn index_type(k: &KernelDesc, bound: &Bound, r: &Resolved) -> IndexType {
    let n = &bound.extents;
    let linear = |l: &Linear| {
        l.coefs
            .iter()
            .zip(n)
            .fold(l.base.unsigned_abs() as u128, |a, (&c, &e)| {
                a + c.unsigned_abs() as u128 * e.saturating_sub(1) as u128
            })
    };
    let offsets = bound
        .in_linear
        .iter()
        .chain(&bound.out_linear)
        .flatten()
        .map(linear);
    let lens = bound
        .in_shapes
        .iter()
        .chain(&bound.out_shapes)
        .map(|s| s.iter().map(|&e| e as u128).product::<u128>());
    let dims = (0..n.len()).map(|x| n[x] as u128 + r.tile[x] as u128 + r.block[x] as u128);
    let items = r.threads_per_group() as u128;
    let kept = DimKind::kept_points(&k.kinds, &bound.extents) as u128;
    let launches = [
        r.group_count() as u128 * items,
        kept * r.pw_groups(&k.kinds) as u128,
        kept + (PASS_ITEMS + SCAN_CHUNK) as u128,
    ];
    let boxes = local_elems(k, bound, r)
        .into_iter()
        .map(|e| e as u128 + items);
    let most = offsets
        .chain(lens)
        .chain(dims)
        .chain(launches)
        .chain(boxes)
        .max()
        .unwrap_or(0);
    if most.saturating_mul(2) <= i32::MAX as u128 {
        IndexType::Int
    } else {
        IndexType::Long
    }
}
