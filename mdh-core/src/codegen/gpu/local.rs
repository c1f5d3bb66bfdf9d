//! Local memory of the main kernel: the cooperative copies of input tiles
//! into it (scalar or in vectors) and the vector loads of register
//! fragments from it.
//!
//! The layout of a tile (row-major or transposed, its innermost extent
//! padded) is all in the definitions' strides `L{b}_S{c}`; the vector
//! widths (`L{b}_VEC` for copies, `FV{b}_{a}` for fragment loads) are
//! definitions too, 1 unless the call's sizes prove every vector aligned
//! (see `gpu_plan::copy_vector` and `gpu_plan::fragment_vector`). A width
//! is a preprocessor name, so the code of each width is emitted under
//! `#if`: CUDA loads and stores whole aligned structs (`mdh_vec_f32_4`,
//! 16 bytes: `LDG.E.128`, `LDS.128`), OpenCL calls `vload4` / `vstore4`.

use std::fmt::Write;

use super::{item_index, private_loop, Emit};
use crate::codegen::c_expr::{from_storage, Dialect, Lowering};
use crate::spec::ScalarType;
use mdh_rt::names::{self, IDX, WG_ITEMS};

/// The index into a register fragment of the point whose private index
/// along each dimension `x` is the given function's C expression for `x`.
pub(super) type FragmentIndex<'a> = dyn Fn(&dyn Fn(usize) -> String) -> String + 'a;

/// The vector widths the emitter writes code for (a plan's widths above 1).
pub(super) const WIDTHS: [usize; 2] = [4, 2];

/// The bytes local memory arrays are aligned to (see
/// `gpu_plan::local_align`, which places them in dynamic shared memory).
pub(super) fn local_align(t: ScalarType) -> usize {
    mdh_rt::gpu_plan::local_align(mdh_rt::types::elem_bytes(t))
}

/// The CUDA struct of `w` elements of `t` (aligned to its size, so that it
/// is loaded and stored by one instruction up to 16 bytes).
fn cuda_vec(t: ScalarType, w: usize) -> String {
    format!("mdh_vec_{}_{w}", t.name())
}

/// The CUDA definitions of the structs of [`cuda_vec`] for element types
/// `types`.
pub(super) fn cuda_vec_types(types: &[ScalarType]) -> String {
    let mut s = String::new();
    for &t in types {
        for w in WIDTHS {
            let bytes = w * mdh_rt::types::elem_bytes(t);
            let _ = writeln!(
                s,
                "typedef struct __attribute__((aligned({bytes}))) {{ {} v[{w}]; }} {};",
                Dialect::Cuda.storage_ty(t),
                cuda_vec(t, w)
            );
        }
    }
    s
}

/// Emits `v = ` the `w` elements of `t` at `ptr` as one vector; returns
/// the C expression of element `r` of it.
fn vec_load(
    l: &mut Lowering,
    d: Dialect,
    t: ScalarType,
    w: usize,
    v: &str,
    ptr: &str,
) -> Vec<String> {
    match d {
        Dialect::Cuda => {
            let vt = cuda_vec(t, w);
            l.line(&format!("const {vt} {v} = *(const {vt}*)({ptr});"));
            (0..w).map(|r| format!("{v}.v[{r}]")).collect()
        }
        Dialect::OpenCl => {
            let st = d.storage_ty(t);
            l.line(&format!("const {st}{w} {v} = vload{w}(0, {ptr});"));
            (0..w).map(|r| format!("{v}.s{r}")).collect()
        }
    }
}

/// Stores vector `v` (of [`vec_load`]) whole at `ptr`.
fn vec_store(l: &mut Lowering, d: Dialect, t: ScalarType, w: usize, v: &str, ptr: &str) {
    match d {
        Dialect::Cuda => {
            let vt = cuda_vec(t, w);
            l.line(&format!("*({vt}*)({ptr}) = {v};"));
        }
        Dialect::OpenCl => l.line(&format!("vstore{w}({v}, 0, {ptr});")),
    }
}

/// Opens `#if {width} == w` / `#elif` for each width of [`WIDTHS`] in turn
/// and calls `body` with it; closes with `#endif`.
fn per_width(l: &mut Lowering, width: &str, mut body: impl FnMut(&mut Lowering, usize)) {
    for (i, w) in WIDTHS.into_iter().enumerate() {
        l.line(&format!(
            "#{} {width} == {w}",
            if i == 0 { "if" } else { "elif" }
        ));
        body(l, w);
    }
    l.line("#endif");
}

/// Where a copy of tiles goes: the tile being computed (`lmem{b}`, its box
/// starting at `lo{b}_{c}`) or, with two pipeline stages, the next one
/// (`lnext{b}`, `lon{b}_{c}`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    Current,
    Next,
}

impl Stage {
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Stage::Current => ("lmem", "lo"),
            Stage::Next => ("lnext", "lon"),
        }
    }
}

/// The sizes in bytes `cp.async` copies (`mdh_cp_async{n}`).
const ASYNC_BYTES: [usize; 3] = [4, 8, 16];

/// The CUDA helpers of `cp.async` (global → shared copies that bypass the
/// registers and run beside the computation; sm_80 and later: `LDGSTS`):
/// a copy of 4, 8 or 16 bytes, the commit of the copies issued so far as
/// one group, the wait for all groups. Inline PTX, as NVRTC has no
/// `cuda_pipeline` header for certain. The CPU execution of CUDA
/// (`MDH_CUDA_SIM`) copies at once, which satisfies every wait. Elsewhere
/// `MDH_CP_ASYNC` is 0 and copies are plain stores.
pub(super) fn cuda_cp_async() -> String {
    let mut s = String::from(
        "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n#define MDH_CP_ASYNC 1\n",
    );
    for n in ASYNC_BYTES {
        // `.cg` (L2 only) takes 16 bytes alone.
        let cache = if n == 16 { "cg" } else { "ca" };
        let _ = writeln!(
            s,
            "__device__ __forceinline__ void mdh_cp_async{n}(void* s, const void* g) {{ asm volatile(\"cp.async.{cache}.shared.global [%0], [%1], {n};\\n\" :: \"r\"((unsigned)__cvta_generic_to_shared(s)), \"l\"(g) : \"memory\"); }}"
        );
    }
    s.push_str("__device__ __forceinline__ void mdh_cp_async_commit() { asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\"); }\n");
    s.push_str("__device__ __forceinline__ void mdh_cp_async_wait() { asm volatile(\"cp.async.wait_group 0;\\n\" ::: \"memory\"); }\n");
    s.push_str("#elif defined(MDH_CUDA_SIM)\n#define MDH_CP_ASYNC 1\n");
    for n in ASYNC_BYTES {
        let _ = writeln!(
            s,
            "inline void mdh_cp_async{n}(void* s, const void* g) {{ memcpy(s, g, {n}); }}"
        );
    }
    s.push_str("inline void mdh_cp_async_commit() {}\ninline void mdh_cp_async_wait() {}\n");
    s.push_str("#else\n#define MDH_CP_ASYNC 0\n#endif\n");
    s
}

impl Emit<'_> {
    /// Cooperative copies of the current tile of locally cached inputs,
    /// then the barrier (see [`Self::copy_tiles`]).
    pub(super) fn local_copies(&self, l: &mut Lowering) {
        self.copy_tiles(l, Stage::Current, false);
        l.line("#if ANY_LOCAL");
        l.line(self.w.barrier);
        l.line("#endif");
    }

    /// Stores `bytes` bytes from `src` to `dst` (C lvalues of local and
    /// global memory): with `pipelined` on CUDA, where `cp.async` copies
    /// that many bytes, by `mdh_cp_async{bytes}` (`#if MDH_CP_ASYNC`), else
    /// by `plain`.
    fn store(
        &self,
        l: &mut Lowering,
        pipelined: bool,
        bytes: usize,
        (dst, src): (&str, &str),
        plain: &mut dyn FnMut(&mut Lowering),
    ) {
        let async_ok = self.copies_async(pipelined, bytes);
        if async_ok {
            l.line("#if MDH_CP_ASYNC");
            l.line(&format!("mdh_cp_async{bytes}(&{dst}, &{src});"));
            l.line("#else");
        }
        plain(l);
        if async_ok {
            l.line("#endif");
        }
    }

    /// Whether a pipelined copy of `bytes` bytes may be a `cp.async`.
    fn copies_async(&self, pipelined: bool, bytes: usize) -> bool {
        pipelined && self.d == Dialect::Cuda && ASYNC_BYTES.contains(&bytes)
    }

    /// Cooperative copies of a tile of locally cached inputs into `stage`
    /// (nothing for an empty tile, whose box would be meaningless), by
    /// `cp.async` where `pipelined` (see [`Self::store`]).
    ///
    /// The elements are numbered over the box of a full tile, whose extents
    /// `L{b}_E{c}` are constants (the compiler decodes them by
    /// multiplications and shifts, not division calls), the last component
    /// (contiguous in global memory) fastest and in runs of `L{b}_VEC`
    /// elements: a run inside the tile's box is copied as one vector (the
    /// last component is then innermost in local memory too, see
    /// `gpu_plan::copy_vector`), a run cut by an edge tile's smaller box
    /// (`ext{c}`) element by element.
    pub(super) fn copy_tiles(&self, l: &mut Lowering, stage: Stage, pipelined: bool) {
        let (dst, lo_) = stage.names();
        let mut nonempty = String::from("1");
        for x in 0..self.dims {
            let _ = write!(nonempty, " && t{x} < e{x}");
        }
        for (b, buf) in self.k.inputs.iter().enumerate() {
            let f = self.access(b, 0);
            let rank = buf.shape.len();
            let Some(last) = rank.checked_sub(1) else {
                // A scalar input (`f32[]`): its one element, no runs.
                l.line(&format!("#if {}", names::local(b)));
                l.line(&format!(
                    "if ({nonempty} && lid == 0) {dst}{b}[0] = in{b}[0];"
                ));
                l.line("#endif");
                continue;
            };
            let eb = mdh_rt::types::elem_bytes(buf.ty);
            let vec = names::copy_vector(b);
            l.line(&format!("#if {}", names::local(b)));
            l.line(&format!("if ({nonempty}) {{"));
            // The box of the tile: per component, the least and greatest
            // value over the tile (coefficients are the same for every
            // access of the buffer; offsets differ by constants).
            for (c, comp) in f.components.iter().enumerate() {
                let (mut lo, mut hi) = (names::offset_min(b, c), names::offset_max(b, c));
                for (x, &cf) in comp.dims.iter().enumerate() {
                    if cf > 0 {
                        let _ = write!(lo, " + (({IDX}){cf}L) * t{x}");
                        let _ = write!(hi, " + (({IDX}){cf}L) * (e{x} - 1)");
                    } else if cf < 0 {
                        let _ = write!(lo, " + (({IDX}){cf}L) * (e{x} - 1)");
                        let _ = write!(hi, " + (({IDX}){cf}L) * t{x}");
                    }
                }
                l.line(&format!("{lo_}{b}_{c} = {lo};"));
                l.line(&format!("const {IDX} ext{c} = {hi} - {lo_}{b}_{c} + 1;"));
            }
            l.line(&format!(
                "for ({IDX} e = lid; e < {} / {vec}; e += {WG_ITEMS}) {{",
                names::local_box(b)
            ));
            l.line(&format!("{IDX} rest = e;"));
            let mut inside = String::from("1");
            let (mut lidx, mut gidx) = (String::from("0"), String::from("0"));
            for c in (0..rank).rev() {
                let ext = names::local_extent(b, c);
                let runs = if c == last {
                    format!("({ext} / {vec})")
                } else {
                    ext
                };
                let scale = if c == last {
                    format!(" * {vec}")
                } else {
                    String::new()
                };
                if c == 0 {
                    l.line(&format!("const {IDX} x0 = rest{scale};"));
                } else {
                    l.line(&format!(
                        "const {IDX} x{c} = (rest % {runs}){scale}; rest /= {runs};"
                    ));
                }
                if c != last {
                    let _ = write!(inside, " && x{c} < ext{c}");
                }
                let _ = write!(lidx, " + x{c} * {}", names::local_stride(b, c));
                let _ = write!(
                    gidx,
                    " + ({lo_}{b}_{c} + x{c}) * {}",
                    names::input_stride(b, c)
                );
            }
            l.line(&format!("const {IDX} li = {lidx};"));
            l.line(&format!("const {IDX} gi = {gidx};"));
            let t = buf.ty;
            let lstride = names::local_stride(b, last);
            l.line(&format!("#if {vec} > 1"));
            l.line(&format!("if ({inside} && x{last} + {vec} <= ext{last}) {{"));
            per_width(l, &vec, |l, w| {
                let (to, from) = (format!("{dst}{b}[li]"), format!("in{b}[gi]"));
                self.store(l, pipelined, w * eb, (&to, &from), &mut |l| {
                    let v = l.fresh("v");
                    vec_load(l, self.d, t, w, &v, &format!("&{from}"));
                    vec_store(l, self.d, t, w, &v, &format!("&{to}"));
                });
            });
            l.line("} else");
            l.line("#endif");
            l.line(&format!("for ({IDX} r = 0; r < {vec}; r++) {{"));
            l.line(&format!("if ({inside} && x{last} + r < ext{last}) {{"));
            let (to, from) = (
                format!("{dst}{b}[li + r * {lstride}]"),
                format!("in{b}[gi + r]"),
            );
            self.store(l, pipelined, eb, (&to, &from), &mut |l| {
                l.line(&format!("{to} = {from};"));
            });
            // The element, the run, the box's loop, the tile.
            for _ in 0..4 {
                l.line("}");
            }
            l.line("#endif");
        }
    }

    /// The loads of access `(b, a)`'s register fragment `frag` (indexed by
    /// `at` over the fragment's dimensions `dims`, whose private loops this
    /// emits): in vectors along dimension `x` where the definitions say so
    /// (`FVX{b}_{a} == x`, for each `x` the layout may make contiguous),
    /// else one element per point.
    pub(super) fn fragment_loads(
        &self,
        l: &mut Lowering,
        (b, a): (usize, usize),
        dims: &[usize],
        frag: &str,
        at: &FragmentIndex,
    ) {
        let desc = crate::desc::KernelDesc::from_kernel(self.k);
        let rank = self.k.inputs[b].shape.len();
        // A scalar input has no component: no candidate.
        let mut candidates: Vec<usize> = [0, rank.saturating_sub(1)]
            .into_iter()
            .filter_map(|c| mdh_rt::gpu_plan::fragment_dim(&desc, b, a, c))
            .filter(|x| dims.contains(x))
            .collect();
        candidates.dedup();
        let (fv, fvx) = (
            names::fragment_vector(b, a),
            names::fragment_vector_dim(b, a),
        );
        let t = self.k.inputs[b].ty;
        for (i, &x) in candidates.iter().enumerate() {
            let kw = if i == 0 { "if" } else { "elif" };
            l.line(&format!("#{kw} {fv} > 1 && {fvx} == {x}"));
            for &y in dims {
                if y == x {
                    l.line(&format!(
                        "for ({IDX} p{x} = 0; p{x} < {}; p{x} += {fv}) {{",
                        names::private(x)
                    ));
                } else {
                    private_loop(l, y);
                }
                l.line(&format!("const {IDX} i{y} = {};", item_index(y)));
            }
            let (local, _) = self.load_parts(b, a);
            per_width(l, &fv, |l, w| {
                let v = l.fresh("v");
                let elems = vec_load(l, self.d, t, w, &v, &format!("&lmem{b}[{local}]"));
                for (r, e) in elems.iter().enumerate() {
                    let idx = at(&|y| {
                        if y == x {
                            format!("(p{y} + {r})")
                        } else {
                            format!("p{y}")
                        }
                    });
                    l.line(&format!("{frag}[{idx}] = {};", from_storage(t, e)));
                }
            });
            for _ in dims {
                l.line("}");
            }
        }
        if !candidates.is_empty() {
            l.line("#else");
        }
        for &x in dims {
            private_loop(l, x);
            l.line(&format!("const {IDX} i{x} = {};", item_index(x)));
        }
        l.line(&format!(
            "{frag}[{}] = {};",
            at(&|y| format!("p{y}")),
            self.load(b, a)
        ));
        for _ in dims {
            l.line("}");
        }
        if !candidates.is_empty() {
            l.line("#endif");
        }
    }
}
