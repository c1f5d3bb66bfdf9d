//! The computations of the MDH paper (its Fig. 16), each written once with
//! [`mdh::mdh!`] in its own file beside this one. The property and GPU tests
//! (`examples/tests/`) and mdh-bench use all of them from here; each binary of
//! `mdh-examples` includes only the file of the kernel it runs, so that
//! `cargo run --release -p mdh-examples --bin matvec` compiles one kernel.
//!
//! Naming: buffers keep the paper's names where they do not clash with size
//! parameters (a kernel's size parameters and buffers share one namespace in
//! the generated `cpu` function), so e.g. the batch size of `bmatmul` is `NB`
//! and the sizes of `ccsdt` are `NA`..`NG`.

// Linear algebra
include!("dot.rs");
include!("matvec.rs");
include!("matmul.rs");
include!("matmul_t.rs");
include!("bmatmul.rs");

// Convolutions
include!("conv2d.rs");
include!("mcc.rs");
include!("mcc_capsule.rs");

// Quantum chemistry
include!("ccsdt.rs");

// Stencils
include!("jacobi1d.rs");
include!("jacobi2d.rs");
include!("jacobi3d.rs");

// Data mining
include!("prl.rs");
include!("histo.rs");
include!("genhisto.rs");

// Map, reduce, scan
include!("map.rs");
include!("reduce.rs");
include!("reduce2.rs");
include!("scan.rs");
include!("mbbs.rs");

// Index-aware generators
include!("mandelbrot.rs");

// Kernels of stages
include!("softmax.rs");
include!("layernorm.rs");
include!("attention.rs");
include!("matmul_bias_relu.rs");
include!("dense_residual.rs");

// 16-bit floats (`f16`, `bf16`): computed in f32, rounded to the type at
// each operation, or widened with `as f32` for f32 sums (mixed precision)
include!("map_half.rs");
include!("matvec_f16.rs");
include!("matmul_bf16.rs");
include!("attention_bf16.rs");

include!("scores_f16.rs");
