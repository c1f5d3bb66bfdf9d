//! Tensor cores for contraction-shaped kernels (`GpuPlan::mma`, CUDA
//! only): the full tiles of `mdh_main` as `mma.sync.m16n8k8` on TF32
//! operands or, where both inputs are bf16 (f16) buffers, as
//! `mma.sync.m16n8k16` on their bits, through inline PTX (NVRTC has no
//! `<mma.h>`).
//!
//! A warp's 32 lanes are the mma's 8 row groups × 4 column pairs: lane
//! `4g + t` is the work-item with `wl{n} = t` and `wl{m} % 8 = g` (the
//! plan's warps have 4 lanes along `n`, a multiple of 8 along `m`, 1
//! elsewhere; see `gpu_plan::MmaDims`). Its private points along `m` come in pairs (rows
//! `g` and `g + 8` of one mma tile), along `n` too (columns `2t`, `2t + 1`),
//! so its accumulators are exactly its C fragments, whatever indices the
//! plan gives its points: the result path stays the one of the FP32 path.
//! A lane loads A at its own rows and B at the columns lane `4g' + t'` holds
//! with `t' = g / 2` (the B fragment's column is the lane's row group), in
//! its own warp's part of the tile.
//!
//! The two shapes differ only in the reduction steps a lane holds: TF32
//! (m16n8k8) registers `a0..a3` are rows `g`, `g + 8` at steps `t`, then
//! `t + 4`, `b0`, `b1` steps `t`, `t + 4`; 16-bit (m16n8k16) registers hold
//! two elements each, steps `2t`, `2t + 1` (the lower in the low half),
//! then `2t + 8`, `2t + 9`, in the same order of registers.

use std::fmt::Write;

use super::{item_index, private_loop, Emit};
use crate::codegen::c_expr::{Dialect, Lowering};
use crate::desc::KernelDesc;
use crate::spec::ScalarType;
use mdh_rt::gpu_plan::{mma_dims, MmaDims};
use mdh_rt::names::{self, IDX, MMA};

/// The index of the kept accumulator at the private points given per kept
/// dimension (see `Emit::kept_index`).
pub(super) type KeptIndex<'a> = dyn Fn(&dyn Fn(usize) -> String) -> String + 'a;

/// The CUDA helpers of the tensor-core path: `mdh_tf32` (round to TF32,
/// to nearest with ties away from zero: `cvt.rna`) and `mdh_mma1` (one
/// `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`, D = A·B + D in
/// place). The CPU execution of CUDA (`MDH_CUDA_SIM`) emulates both: the
/// same rounding on the bits, and the mma by warp shuffles that gather each
/// lane's rows of A and columns of B from the lanes that hold them in the
/// PTX fragment layout, read as TF32 (the low 13 bits ignored, as by the
/// tensor cores), products exact in FP32, summed in FP32. With `half`
/// (both inputs of that 16-bit type) also `mdh_mma16`, one
/// `mma.sync.aligned.m16n8k16.row.col.f32.T.T.f32` on registers of two
/// elements' bits each, emulated alike (after `half_helpers`: it reads the
/// bits with `mdh_ld_T`).
pub(super) fn cuda_mma(half: Option<ScalarType>) -> String {
    let mma_args = "float& d0, float& d1, float& d2, float& d3, float a0, float a1, float a2, float a3, float b0, float b1";
    let mma16_args = "float& d0, float& d1, float& d2, float& d3, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0, unsigned b1";
    let mut s = format!("#ifndef {MMA}\n#define {MMA} 0\n#endif\n");
    s.push_str("#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n");
    s.push_str("__device__ __forceinline__ float mdh_tf32(float x) { unsigned r; asm(\"cvt.rna.tf32.f32 %0, %1;\\n\" : \"=r\"(r) : \"f\"(x)); return __uint_as_float(r); }\n");
    let _ = writeln!(
        s,
        "__device__ __forceinline__ void mdh_mma1({mma_args}) {{ asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};\\n\" : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3) : \"r\"(__float_as_uint(a0)), \"r\"(__float_as_uint(a1)), \"r\"(__float_as_uint(a2)), \"r\"(__float_as_uint(a3)), \"r\"(__float_as_uint(b0)), \"r\"(__float_as_uint(b1))); }}"
    );
    if let Some(t) = half {
        let n = t.name();
        let _ = writeln!(
            s,
            "__device__ __forceinline__ void mdh_mma16({mma16_args}) {{ asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.{n}.{n}.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};\\n\" : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3) : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1)); }}"
        );
    }
    s.push_str("#elif defined(MDH_CUDA_SIM)\n");
    // Infinities and NaNs keep their bits.
    s.push_str("inline float mdh_tf32(float x) { unsigned u = __float_as_uint(x); if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u; return __uint_as_float(u); }\n");
    s.push_str("inline float mdh_tf32_operand(float x) { return __uint_as_float(__float_as_uint(x) & 0xffffe000u); }\n");
    let _ = writeln!(s, "inline void mdh_mma1({mma_args}) {{");
    s.push_str(
        "    const int lane = (int)(threadIdx.x % 32), g = lane / 4, t = lane % 4;
    float s0 = d0, s1 = d1, s2 = d2, s3 = d3;
    for (int k = 0; k < 8; k++) {
        const int h = k / 4, c = k % 4;
        const float x0 = mdh_tf32_operand(__shfl_sync(0xffffffffu, h ? a2 : a0, 4 * g + c));
        const float x1 = mdh_tf32_operand(__shfl_sync(0xffffffffu, h ? a3 : a1, 4 * g + c));
        const float y0 = mdh_tf32_operand(__shfl_sync(0xffffffffu, h ? b1 : b0, 4 * (2 * t) + c));
        const float y1 = mdh_tf32_operand(__shfl_sync(0xffffffffu, h ? b1 : b0, 4 * (2 * t + 1) + c));
        s0 += x0 * y0; s1 += x0 * y1; s2 += x1 * y0; s3 += x1 * y1;
    }
    d0 = s0; d1 = s1; d2 = s2; d3 = s3;
}
",
    );
    if let Some(t) = half {
        // Step k of the 16: register pair h = k / 8 (a0/a1 or a2/a3, b0 or
        // b1) of lane 4 · row group + k % 8 / 2, its half k % 2.
        let _ = writeln!(s, "inline void mdh_mma16({mma16_args}) {{");
        let ld = |reg: &str, lane: &str| {
            format!(
                "mdh_ld_{}((ushort)(__shfl_sync(0xffffffffu, {reg}, {lane}) >> sh))",
                t.name()
            )
        };
        let _ = writeln!(
            s,
            "    const int lane = (int)(threadIdx.x % 32), g = lane / 4, t = lane % 4;
    float s0 = d0, s1 = d1, s2 = d2, s3 = d3;
    for (int k = 0; k < 16; k++) {{
        const int h = k / 8, c = k % 8 / 2, sh = 16 * (k % 2);
        const float x0 = {};
        const float x1 = {};
        const float y0 = {};
        const float y1 = {};
        s0 += x0 * y0; s1 += x0 * y1; s2 += x1 * y0; s3 += x1 * y1;
    }}
    d0 = s0; d1 = s1; d2 = s2; d3 = s3;
}}",
            ld("h ? a2 : a0", "4 * g + c"),
            ld("h ? a3 : a1", "4 * g + c"),
            ld("h ? b1 : b0", "4 * (2 * t) + c"),
            ld("h ? b1 : b0", "4 * (2 * t + 1) + c"),
        );
    }
    // Tensor cores are asked for explicitly: no silent FP32 elsewhere.
    let _ = writeln!(
        s,
        "#elif {MMA}\n#error \"mma (tensor cores) needs sm_80 or later\"\n#endif"
    );
    s
}

impl Emit<'_> {
    /// The dimensions of the tensor-core path, where the template has one:
    /// CUDA, a contraction with [`MmaDims`].
    pub(super) fn mma_dims(&self) -> Option<MmaDims> {
        if self.d != Dialect::Cuda {
            return None;
        }
        mma_dims(&KernelDesc::from_kernel(self.k))
    }

    /// The 16-bit type of both contraction inputs, where they have one:
    /// the template then has the m16n8k16 path too (`MDH_MMA == 16`).
    pub(super) fn mma_half(&self) -> Option<ScalarType> {
        let dims = self.mma_dims()?;
        let t = self.k.inputs[dims.a].ty;
        (t.is_half() && self.k.inputs[dims.b].ty == t).then_some(t)
    }

    /// The full tile's points by tensor cores (`#if MDH_MMA`): per step of
    /// 8 along `k` (16 with `half`, the 16-bit operands) and per private
    /// point of every other dimension, each lane loads its A fragment (its
    /// rows `p{m}` at its steps) and B fragment (per pair of columns, the
    /// column of row group `g`), as TF32 (3xTF32: and the remainders) or as
    /// the bits of two steps per register, then one mma per 16 × 8 tile of
    /// the warp (three with 3xTF32: the small terms first) into the
    /// accumulators `acc0[q]`.
    pub(super) fn mma_points(
        &self,
        l: &mut Lowering,
        dims: &MmaDims,
        q: &KeptIndex,
        half: Option<ScalarType>,
    ) {
        let MmaDims { a, b, m, n, k } = *dims;
        let (pm, pn, pk) = (names::private(m), names::private(n), names::private(k));
        let (k_step, reg, mma) = match half {
            Some(_) => (16, "unsigned", "mdh_mma16"),
            None => (8, "float", "mdh_mma1"),
        };
        l.line("{");
        l.line("const int mdh_g = (int)(lid % 32) / 4, mdh_t = (int)(lid % 4);");
        let used = |x: usize| self.ins.iter().any(|&(b, a)| self.used(b, a).contains(&x));
        let others = |pw: bool| {
            (0..self.dims)
                .filter(move |&x| x != m && x != n && x != k && (self.kinds[x].is_kept() != pw))
        };
        let mut open = 0;
        for x in others(true).chain([usize::MAX]).chain(others(false)) {
            if x == usize::MAX {
                // One mma step per trip, whatever the tile's extent along
                // `k`: the code stays small, the fragments in registers.
                l.line("#pragma unroll 1");
                l.line(&format!(
                    "for ({IDX} mdh_k = 0; mdh_k < {pk}; mdh_k += {k_step}) {{"
                ));
            } else {
                private_loop(l, x);
                if used(x) {
                    l.line(&format!("const {IDX} i{x} = {};", item_index(x)));
                }
            }
            open += 1;
        }
        for (frag, len) in [("mdh_a", format!("{pm} * 2")), ("mdh_b", pn.clone())] {
            l.line(&format!("{reg} {frag}[{len}];"));
            if half.is_none() {
                l.line(&format!("#if {MMA} == 3"));
                l.line(&format!("float {frag}s[{len}];"));
                l.line("#endif");
            }
        }
        // The fragments and accumulators are register arrays: the loops
        // over them unroll (a rolled loop indexes them at run time, which
        // keeps them in local memory; the 16-bit operands' longer bodies
        // are past nvcc's own unrolling threshold).
        // A at this lane's rows.
        l.line("#pragma unroll");
        l.line(&format!(
            "for ({IDX} p{m} = 0; p{m} < {pm}; p{m}++) for (int e = 0; e < 2; e++) {{"
        ));
        l.line(&format!("const {IDX} i{m} = {};", item_index(m)));
        self.operand(l, "mdh_a", &format!("p{m} * 2 + e"), a, k, half);
        l.line("}");
        // B at the columns of row group g: those of the lane with wl{n} = g / 2.
        l.line("#pragma unroll");
        l.line(&format!(
            "for ({IDX} s = 0; s < {pn} / 2; s++) for (int e = 0; e < 2; e++) {{"
        ));
        l.line(&format!(
            "const {IDX} wl{n} = mdh_g / 2; const {IDX} p{n} = 2 * s + mdh_g % 2;"
        ));
        l.line(&format!("const {IDX} i{n} = {};", item_index(n)));
        self.operand(l, "mdh_b", "s * 2 + e", b, k, half);
        l.line("}");
        l.line("#pragma unroll");
        l.line(&format!(
            "for ({IDX} r = 0; r < {pm} / 2; r++) for ({IDX} s = 0; s < {pn} / 2; s++) {{"
        ));
        let acc = |h: usize, c: usize| {
            let at = q(&|x| {
                if x == m {
                    format!("(2 * r + {h})")
                } else if x == n {
                    format!("(2 * s + {c})")
                } else {
                    format!("p{x}")
                }
            });
            format!("acc0[{at}]")
        };
        let d = format!("{}, {}, {}, {}", acc(0, 0), acc(0, 1), acc(1, 0), acc(1, 1));
        // a0..a3: rows g, g + 8 at the first steps, then at the second;
        // b0, b1: the first steps, the second.
        let regs = |sa: &str, sb: &str| {
            format!("mdh_a{sa}[4 * r], mdh_a{sa}[4 * r + 2], mdh_a{sa}[4 * r + 1], mdh_a{sa}[4 * r + 3], mdh_b{sb}[2 * s], mdh_b{sb}[2 * s + 1]")
        };
        if half.is_none() {
            l.line(&format!("#if {MMA} == 3"));
            l.line(&format!("mdh_mma1({d}, {});", regs("s", "")));
            l.line(&format!("mdh_mma1({d}, {});", regs("", "s")));
            l.line("#endif");
        }
        l.line(&format!("{mma}({d}, {});", regs("", "")));
        l.line("}");
        for _ in 0..open {
            l.line("}");
        }
        l.line("}");
    }

    /// Stores input `b`'s operand at step pair `e` of this lane into
    /// `{frag}[{at}]`: TF32 (`half` none), the element at step `t + 4e`
    /// rounded (and its remainder into `{frag}s[{at}]` for 3xTF32); 16-bit,
    /// the bits of the elements at steps `2t + 8e` (low half) and
    /// `2t + 8e + 1` (high half), as local memory holds them.
    fn operand(
        &self,
        l: &mut Lowering,
        frag: &str,
        at: &str,
        b: usize,
        k: usize,
        half: Option<ScalarType>,
    ) {
        let at_step = |p: &str| {
            format!(
                "const {IDX} p{k} = {p}; const {IDX} i{k} = {};",
                item_index(k)
            )
        };
        if half.is_none() {
            l.line(&at_step("mdh_k + mdh_t + 4 * e"));
            l.line(&format!(
                "const float v = {}; {frag}[{at}] = mdh_tf32(v);",
                self.load(b, 0)
            ));
            l.line(&format!("#if {MMA} == 3"));
            l.line(&format!("{frag}s[{at}] = mdh_tf32(v - {frag}[{at}]);"));
            l.line("#endif");
            return;
        }
        l.line("unsigned mdh_lo, mdh_hi;");
        for (var, p) in [
            ("mdh_lo", "mdh_k + 2 * mdh_t + 8 * e"),
            ("mdh_hi", "mdh_k + 2 * mdh_t + 8 * e + 1"),
        ] {
            l.line("{");
            l.line(&at_step(p));
            l.line(&format!("{var} = (unsigned){};", self.load_bits(b, 0)));
            l.line("}");
        }
        l.line(&format!("{frag}[{at}] = mdh_lo | (mdh_hi << 16);"));
    }
}
