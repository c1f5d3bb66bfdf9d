//! The test kernels that several test modules share (this crate's and the
//! tuner's), each written once. Not part of the API: test support only.

use crate::gpu_plan::{GpuPlan, Mma};
use crate::Checked;

/// Matrix-vector multiplication: w = M · v.
pub const MATVEC: &str = "
    kernel matvec {
        inp(M: f32[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| m * x, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k)),
    }";

/// Matrix multiplication: C = A · B.
pub const MATMUL: &str = "
    kernel matmul {
        inp(A: f32[I, K], B: f32[K, J]),
        out(C: f32[I, J]),
        out_view(C: |i, j, k| (i, j)),
        md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
        inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
    }";

/// A kernel of stages whose second stage is an epilogue of the first
/// (`crate::fusion`): a product stored transposed, then scaled by a param
/// and shifted by a bias along its rows, read at the same point.
pub const DENSE: &str = "
    kernel dense {
        inp(A: f32[I, K], B: f32[K, J], bias: f32[I]),
        out(y: f32[J, I]),
        params(alpha: f32),
        tmp(t: f32[J, I]),
        stage product {
            out_view(t: |i, j, k| (j, i)),
            md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
            inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
        },
        stage epilogue {
            out_view(y: |p, q| (p, q)),
            md_hom[J, I](|v, b| alpha * v + b, (CC, CC)),
            inp_view(t: |p, q| (p, q), bias: |p, q| (q)),
        },
    }";

/// A kernel of stages that fuse along their rows (`crate::fusion::rows`):
/// softmax with one exponential per point, kept in the intermediate `e`
/// (a map, then its row sum, then a map of both); the row maximum, the
/// exponentials and the sums local to each tile.
pub const SOFTMAX: &str = "
    kernel softmax {
        inp(x: f32[I, J]),
        out(y: f32[I, J]),
        tmp(m: f32[I], e: f32[I, J], s: f32[I]),
        stage rowmax {
            out_view(m: |i, j| (i)),
            md_hom[I, J](|a| a, (CC, PW(max))),
            inp_view(x: |i, j| (i, j)),
        },
        stage exps {
            out_view(e: |i, j| (i, j)),
            md_hom[I, J](|a, mx| (a - mx).exp(), (CC, CC)),
            inp_view(x: |i, j| (i, j), m: |i, j| (i)),
        },
        stage rowsum {
            out_view(s: |i, j| (i)),
            md_hom[I, J](|v| v, (CC, PW(+))),
            inp_view(e: |i, j| (i, j)),
        },
        stage normalize {
            out_view(y: |i, j| (i, j)),
            md_hom[I, J](|v, sum| v / sum, (CC, CC)),
            inp_view(e: |i, j| (i, j), s: |i, j| (i)),
        },
    }";

/// A 1-D Jacobi stencil: three neighbouring accesses of one buffer.
pub const JACOBI1D: &str = "
    kernel jacobi1d {
        inp(v: f32[N + 2]),
        out(w: f32[N]),
        out_view(w: |i| (i)),
        md_hom[N](|a, b, c| (a + b + c) / 3.0, (CC)),
        inp_view(v: [|i| (i), |i| (i + 1), |i| (i + 2)]),
    }";

/// [`MATVEC`], compiled.
pub fn matvec() -> Checked {
    compiled(MATVEC)
}

/// [`MATMUL`], compiled.
pub fn matmul() -> Checked {
    compiled(MATMUL)
}

/// The source of the example kernel `name` (in `examples/kernels/src/NAME.rs`), for
/// the tests that want an example family as its users see it.
pub fn example(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../examples/kernels/src/{name}.rs"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let start = text
        .find(&format!("kernel {name} {{"))
        .unwrap_or_else(|| panic!("no kernel `{name}` in {}", path.display()));
    let mut depth = 0;
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => return text[start..=start + i].to_string(),
            '}' => depth -= 1,
            _ => {}
        }
    }
    panic!("kernel `{name}` in {} is not closed", path.display())
}

/// `source` with its `f32` element types made `f64`.
pub fn in_f64(source: &str) -> String {
    in_type(source, "f64")
}

/// `source` with its `f32` element types made `ty` (e.g. an integer type,
/// for exact results or wrapping).
pub fn in_type(source: &str, ty: &str) -> String {
    source.replace("f32", ty)
}

/// The tokens of `source` (for the functions that take what `mdh!` receives).
pub fn tokens(source: &str) -> proc_macro2::TokenStream {
    source
        .parse()
        .unwrap_or_else(|e| panic!("the test kernel does not tokenize: {e}"))
}

/// The register-tiled GPU plan of matmul (issue 21): blocks of 16 × 16
/// threads, each 8 × 8 results of a 128 × 128 tile, 8 steps of k per tile
/// of A and B in shared memory (8 KiB).
pub fn matmul_register_tiled() -> GpuPlan {
    GpuPlan {
        groups: vec![0, 0, 1],
        items: vec![16, 16, 1],
        tile: vec![128, 128, 8],
        local: vec![true, true],
        ..GpuPlan::base(3, 2)
    }
}

/// The register-tiled plan with vectors of 4 (`float4`): A's tile
/// transposed in local memory (k outer, i inner), so that a work-item's 8
/// values of A per step of k are two aligned runs of 4, as its 8 values
/// of B are; strided work-items then take their points in runs of 4.
pub fn matmul_register_tiled_vectors() -> GpuPlan {
    GpuPlan {
        vector: vec![4, 4],
        transpose: vec![true, false],
        ..matmul_register_tiled()
    }
}

/// Matmul on tensor cores (`mma`): blocks of 4 warps, each lane 8 rows
/// group × column pair of the mma tiles (`items` 32 × 4), each thread
/// 4 × 16 results (2 × 8 tiles of 16 × 8 per warp and step of 8 along k) of
/// a 128 × 64 tile, 16 steps of k per tile of A and B in shared memory.
pub fn matmul_tensor_cores(mma: Mma) -> GpuPlan {
    GpuPlan {
        items: vec![32, 4, 1],
        tile: vec![128, 64, 16],
        mma,
        ..matmul_register_tiled()
    }
}

/// `source`, parsed and checked.
pub fn compiled(source: &str) -> Checked {
    crate::compile_str(source).unwrap_or_else(|e| panic!("the test kernel does not compile: {e}"))
}
