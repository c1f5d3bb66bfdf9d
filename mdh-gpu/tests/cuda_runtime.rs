//! The CUDA runtime without a GPU: NVRTC compiles kernels (no GPU needed),
//! the CPU executes them through the C++ prelude, and `Device::first()` is an
//! `Err` rather than a panic (the `sim` feature: the CPU execution is test
//! tooling). On a machine with a GPU the kernels also run on
//! the device and must agree.
#![cfg(feature = "sim")]

use mdh_gpu::cuda::{self, Device};
use mdh_gpu::cuda_sim::{run_on_cpu, SimArg};
use std::sync::Arc;

/// A block reduction (grid-stride loads, a shared-memory tree down to one
/// warp, warp shuffles, `atomicAdd` across blocks) and a grid-stride vector
/// add, in the style of generated code: no includes, `extern "C"` kernels.
const SOURCE: &str = r#"
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = warpSize / 2; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void __launch_bounds__(1024) block_sum(const float* __restrict__ x, float* __restrict__ out, int n) {
    __shared__ float s[1024];
    const unsigned int t = threadIdx.x;
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x) v += x[i];
    s[t] = v;
    __syncthreads();
    // tree over shared memory down to 32 partial sums (blockDim.x is a power of two >= 32)
    for (unsigned int k = blockDim.x / 2; k >= 32; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t < 32) {
        v = warp_sum(s[t]);
        if (t == 0) atomicAdd(out, v);
    }
}

extern "C" __global__ void vec_add(const float* __restrict__ a, const float* __restrict__ b,
                                   float* __restrict__ c, unsigned int n) {
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        c[i] = fmaf(a[i], 2.0f, b[i]);
}
"#;

fn nvrtc_or_skip(test: &str) -> bool {
    if cuda::nvrtc_available() {
        return true;
    }
    skip_or_fail(
        test,
        "MDH_REQUIRE_NVRTC",
        "NVRTC is not available (pip install --user nvidia-cuda-nvrtc-cu12 and put its lib folder on LD_LIBRARY_PATH)",
    );
    false
}

/// Says that `test` is skipped because `why`, or fails it where `var` is
/// set (scripts/test-all.sh sets those of what it installs).
fn skip_or_fail(test: &str, var: &str, why: &str) {
    assert!(
        std::env::var_os(var).is_none(),
        "{test}: {var} is set but {why}"
    );
    eprintln!("{test}: skipped, {why} (set {var}=1 to make this a failure)");
}

fn data(n: usize) -> Vec<f32> {
    // small integers: every partial sum is exact in f32
    (0..n).map(|i| ((i * 7919) % 13) as f32 - 6.0).collect()
}

#[test]
fn nvrtc_compiles_for_sm80_and_sm90_without_warnings() {
    if !nvrtc_or_skip("nvrtc_compiles_for_sm80_and_sm90_without_warnings") {
        return;
    }
    eprintln!("NVRTC {:?}", cuda::nvrtc_version());
    for arch in ["sm_80", "sm_90"] {
        let c = cuda::nvrtc_compile(SOURCE, arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert!(c.log.is_empty(), "{arch}: NVRTC warned:\n{}", c.log);
        let target = format!(".target {arch}");
        assert!(c.ptx.contains(&target), "{arch}: no `{target}` in the PTX");
        for k in ["block_sum", "vec_add"] {
            assert!(
                c.ptx.contains(&format!(".entry {k}(")),
                "{arch}: no entry {k}"
            );
        }
        assert!(
            c.ptx.contains("shfl.sync.down"),
            "{arch}: no warp shuffle in the PTX"
        );
        assert!(
            c.ptx.contains("bar.sync") || c.ptx.contains("barrier.sync"),
            "{arch}: no barrier"
        );
        assert!(
            c.ptx.contains("atom.global.add.f32") || c.ptx.contains("red.global.add.f32"),
            "{arch}: no atomic add"
        );
    }
}

#[test]
fn nvrtc_reports_errors_with_its_log() {
    if !nvrtc_or_skip("nvrtc_reports_errors_with_its_log") {
        return;
    }
    let e = cuda::nvrtc_compile(
        "extern \"C\" __global__ void k(float* x) { x[0] = undeclared; }",
        "sm_80",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("undeclared"), "{e}");
    let w = cuda::nvrtc_compile(
        "extern \"C\" __global__ void k(float* x) { int unused = 1; x[0] = 1.0f; }",
        "sm_80",
    )
    .unwrap();
    assert!(
        w.log.contains("unused"),
        "the log should carry the warning: {:?}",
        w.log
    );
    assert!(cuda::nvrtc_compile(SOURCE, "sm80").is_err());
}

fn cpu_block_sum(x: &[f32], grid: u32, block: u32) -> f32 {
    let mut x = x.to_vec();
    let mut out = [0.0f32];
    let n = x.len() as i32;
    run_on_cpu(
        SOURCE,
        "block_sum",
        &mut [
            SimArg::buf(&mut x),
            SimArg::buf(&mut out),
            SimArg::scalar(n),
        ],
        [grid, 1, 1],
        [block, 1, 1],
    )
    .unwrap_or_else(|e| panic!("grid {grid}, block {block}, n {n}: {e}"));
    out[0]
}

#[test]
fn cpu_runs_a_block_reduction_with_shared_memory_shuffles_and_atomics() {
    for (n, grid, block) in [
        (0usize, 1u32, 32u32),
        (1, 1, 32),
        (97, 3, 64),
        (1000, 4, 256),
        (100_003, 13, 1024),
        (65_537, 40, 128),
    ] {
        let x = data(n);
        let want: f32 = x.iter().sum();
        assert_eq!(
            cpu_block_sum(&x, grid, block),
            want,
            "n {n}, grid {grid}, block {block}"
        );
    }
}

#[test]
fn cpu_runs_a_grid_stride_vector_add() {
    for (n, grid, block) in [(1usize, 1u32, 1u32), (1031, 3, 96), (50_000, 7, 1024)] {
        let (mut a, mut b) = (data(n), data(n + 5)[5..].to_vec());
        let mut c = vec![f32::NAN; n];
        run_on_cpu(
            SOURCE,
            "vec_add",
            &mut [
                SimArg::buf(&mut a),
                SimArg::buf(&mut b),
                SimArg::buf(&mut c),
                SimArg::scalar(n as u32),
            ],
            [grid, 1, 1],
            [block, 1, 1],
        )
        .unwrap();
        for i in 0..n {
            assert_eq!(c[i], a[i].mul_add(2.0, b[i]), "element {i}");
        }
    }
}

const WARP_SOURCE: &str = r#"
// 3-D blocks, partial last warp, every shuffle flavour, votes, int atomics.
extern "C" __global__ void warps(int* out, int* counters) {
    const unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned int nt = blockDim.x * blockDim.y * blockDim.z;
    const unsigned int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const int lane = t % 32;
    int* o = out + 8 * (b * nt + t);
    o[0] = __shfl_down_sync(0xffffffffu, lane, 3);
    o[1] = __shfl_up_sync(0xffffffffu, lane, 2);
    o[2] = __shfl_xor_sync(0xffffffffu, lane, 5);
    o[3] = __shfl_sync(0xffffffffu, lane, 7);
    o[4] = __shfl_xor_sync(0xffffffffu, lane, 1, 8);
    o[5] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
    __shared__ int s[1];
    if (t == 0) s[0] = 0;
    __syncthreads();
    atomicAdd(&s[0], 1);
    __syncthreads();
    o[6] = s[0];
    o[7] = (int)t;
    atomicMax(&counters[0], (int)(b * nt + t));
    atomicMin(&counters[1], -(int)t);
    atomicAdd((unsigned int*)&counters[2], 1);
}
"#;

#[test]
fn cpu_runs_shuffles_votes_and_atomics_like_a_gpu() {
    let (grid, block) = ([2u32, 2, 1], [6u32, 4, 2]); // 48 threads: one full warp, one of 16
    let nt = 48usize;
    let nb = 4usize;
    let mut out = vec![-1i32; 8 * nt * nb];
    let mut counters = [i32::MIN, 0, 0];
    run_on_cpu(
        WARP_SOURCE,
        "warps",
        &mut [SimArg::buf(&mut out), SimArg::buf(&mut counters)],
        grid,
        block,
    )
    .unwrap();
    for b in 0..nb {
        for t in 0..nt {
            let o = &out[8 * (b * nt + t)..][..8];
            let lane = (t % 32) as i32;
            let warp_len = if t < 32 { 32 } else { 16 };
            let down = if lane + 3 < warp_len { lane + 3 } else { lane };
            let up = if lane >= 2 { lane - 2 } else { lane };
            let xor = if (lane ^ 5) < warp_len {
                lane ^ 5
            } else {
                lane
            };
            let idx = if 7 < warp_len { 7 } else { lane };
            let ballot = (0..warp_len)
                .filter(|l| l % 3 == 0)
                .fold(0u32, |m, l| m | 1 << l);
            assert_eq!(
                o,
                [
                    down,
                    up,
                    xor,
                    idx,
                    lane ^ 1,
                    ballot as i32,
                    nt as i32,
                    t as i32
                ],
                "block {b}, thread {t}"
            );
        }
    }
    assert_eq!(
        counters,
        [(nt * nb - 1) as i32, -(nt as i32 - 1), (nt * nb) as i32]
    );
}

/// A shared-memory tiled matrix multiplication with guarded edges, 2-D
/// blocks and grids, `#pragma unroll`, and a `double` atomic checksum.
const MATMUL: &str = r#"
#define TILE 16
extern "C" __global__ void matmul(const float* __restrict__ A, const float* __restrict__ B,
                                  float* __restrict__ C, double* __restrict__ checksum,
                                  int M, int N, int K) {
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
        __syncthreads();
    }
    if (row < M && col < N) {
        C[row * N + col] = acc;
        atomicAdd(checksum, (double)acc);
    }
}
"#;

#[test]
fn tiled_matmul_compiles_with_nvrtc_and_runs_on_the_cpu() {
    if nvrtc_or_skip("tiled_matmul_compiles_with_nvrtc_and_runs_on_the_cpu") {
        for arch in ["sm_80", "sm_90"] {
            let c = cuda::nvrtc_compile(MATMUL, arch).unwrap();
            assert!(c.log.is_empty(), "{arch}: {}", c.log);
        }
    }
    for (m, n, k) in [(1usize, 1usize, 1usize), (37, 53, 29), (64, 48, 80)] {
        let mut a: Vec<f32> = (0..m * k).map(|i| (i % 5) as f32 - 2.0).collect();
        let mut b: Vec<f32> = (0..k * n).map(|i| (i % 7) as f32 - 3.0).collect();
        let mut c = vec![f32::NAN; m * n];
        let mut sum = [0.0f64];
        let grid = [n.div_ceil(16) as u32, m.div_ceil(16) as u32, 1];
        run_on_cpu(
            MATMUL,
            "matmul",
            &mut [
                SimArg::buf(&mut a),
                SimArg::buf(&mut b),
                SimArg::buf(&mut c),
                SimArg::buf(&mut sum),
                SimArg::scalar(m as i32),
                SimArg::scalar(n as i32),
                SimArg::scalar(k as i32),
            ],
            grid,
            [16, 16, 1],
        )
        .unwrap();
        let mut total = 0.0f64;
        for i in 0..m {
            for j in 0..n {
                let want: f32 = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
                assert_eq!(c[i * n + j], want, "C[{i}][{j}] of {m}x{n}x{k}");
                total += want as f64;
            }
        }
        assert_eq!(sum[0], total);
    }
}

/// ptxas' report and the SASS of a real CUBIN (sm_90) without a GPU: the
/// hand-written tiled matmul takes registers and shared memory, does not
/// spill, and its unrolled `k` loop is FMAs fed by shared loads. The SASS
/// part needs `nvdisasm`; without it the part is skipped, unless
/// `MDH_REQUIRE_NVDISASM=1` (scripts/test-all.sh installs it).
#[test]
fn nvrtc_reports_resources_and_nvdisasm_the_sass() {
    if !nvrtc_or_skip("nvrtc_reports_resources_and_nvdisasm_the_sass") {
        return;
    }
    let c = cuda::nvrtc_resources(MATMUL, "sm_90").unwrap();
    let [k] = c.kernels.as_slice() else {
        panic!("one kernel expected: {:?}\n{}", c.kernels, c.log)
    };
    assert_eq!(k.name, "matmul");
    assert!(k.registers > 0, "{}", c.log);
    // Two tiles of 16 × 17 floats (padded against bank conflicts).
    assert_eq!(k.shared_bytes, 2 * 16 * 17 * 4, "{}", c.log);
    assert_eq!(k.spill_bytes(), Some(0), "{}", c.log);
    assert_eq!(k.stack_bytes, 0, "{}", c.log);
    // The CUBIN records the same but for the spills.
    assert_eq!(
        cuda::cubin_resources(&c.cubin).unwrap(),
        [cuda::KernelResources {
            spill_stores: None,
            spill_loads: None,
            ..k.clone()
        }]
    );
    assert!(cuda::nvrtc_resources(MATMUL, "compute_90").is_err());
    if mdh_gpu::sass::nvdisasm().is_none() {
        assert!(
            std::env::var("MDH_REQUIRE_NVDISASM").as_deref() != Ok("1"),
            "MDH_REQUIRE_NVDISASM=1 but nvdisasm was not found (pip install --user nvidia-cuda-nvdisasm)"
        );
        eprintln!("the SASS part is skipped: nvdisasm was not found (pip install --user nvidia-cuda-nvdisasm)");
        return;
    }
    let sass = mdh_gpu::sass::disassemble(&c.cubin).unwrap();
    let fns = mdh_gpu::sass::Function::parse_all(&sass);
    let f = fns.iter().find(|f| f.name == "matmul").expect(&sass);
    let hot = f.hot_loop().expect(&sass);
    // 16 steps of k, one FMA and two shared loads each.
    assert_eq!(hot.ffma, 16, "{hot:?}\n{sass}");
    assert!(hot.lds >= 16, "{hot:?}\n{sass}");
    assert_eq!(f.division_calls(), 0, "{sass}");
}

#[test]
fn cpu_exposes_a_missing_syncthreads_deterministically() {
    // The tiled matmul without its second barrier: the first thread of each
    // block overwrites the tiles before the others have read them.
    let racy = MATMUL.replacen(
        "acc);\n        __syncthreads();",
        "acc);\n        /* no barrier */",
        1,
    );
    assert_ne!(racy, MATMUL);
    let (m, n, k) = (32usize, 32usize, 64usize);
    let mut a: Vec<f32> = (0..m * k).map(|i| (i % 5) as f32 - 2.0).collect();
    let mut b: Vec<f32> = (0..k * n).map(|i| (i % 7) as f32 - 3.0).collect();
    let mut c = vec![0.0f32; m * n];
    let mut sum = [0.0f64];
    run_on_cpu(
        &racy,
        "matmul",
        &mut [
            SimArg::buf(&mut a),
            SimArg::buf(&mut b),
            SimArg::buf(&mut c),
            SimArg::buf(&mut sum),
            SimArg::scalar(m as i32),
            SimArg::scalar(n as i32),
            SimArg::scalar(k as i32),
        ],
        [2, 2, 1],
        [16, 16, 1],
    )
    .unwrap();
    let wrong = (0..m * n)
        .filter(|&ij| {
            let (i, j) = (ij / n, ij % n);
            c[ij] != (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum::<f32>()
        })
        .count();
    assert!(wrong > 0, "the race should change the result");
}

#[test]
fn cpu_threads_that_return_early_do_not_block_barriers() {
    let src = r#"
extern "C" __global__ void early(float* x, int n) {
    __shared__ float s[256];
    int t = threadIdx.x;
    if (t >= n) return;            // the tail of the block leaves
    s[t] = x[t];
    __syncthreads();
    x[t] = s[n - 1 - t];           // reverse through shared memory
}
"#;
    let mut x: Vec<f32> = (0..100).map(|i| i as f32).collect();
    run_on_cpu(
        src,
        "early",
        &mut [SimArg::buf(&mut x), SimArg::scalar(100i32)],
        [1, 1, 1],
        [256, 1, 1],
    )
    .unwrap();
    assert_eq!(x, (0..100).rev().map(|i| i as f32).collect::<Vec<_>>());
}

#[test]
fn cpu_errors_are_reported_not_hung_or_panicked() {
    // A deadlock: half a warp waits at __syncthreads, the other half at a shuffle.
    let dead = r#"
extern "C" __global__ void dead(int* x) {
    if (threadIdx.x < 16) __syncthreads();
    else x[0] = __shfl_down_sync(0xffffffffu, 1, 1);
}
"#;
    let mut x = [0i32; 1];
    let e = run_on_cpu(
        dead,
        "dead",
        &mut [SimArg::buf(&mut x)],
        [1, 1, 1],
        [32, 1, 1],
    )
    .unwrap_err();
    assert!(e.to_string().contains("deadlock"), "{e}");

    // Out of bounds: a write far past the end faults, a write just past it is seen.
    let oob = r#"
extern "C" __global__ void oob(float* x, int at) { if (threadIdx.x == 0) x[at] = 1.0f; }
"#;
    let mut x = vec![0.0f32; 10];
    let e = run_on_cpu(
        oob,
        "oob",
        &mut [SimArg::buf(&mut x), SimArg::scalar(100_000i32)],
        [1, 1, 1],
        [1, 1, 1],
    )
    .unwrap_err();
    assert!(e.to_string().contains("out-of-bounds"), "{e}");
    let e = run_on_cpu(
        oob,
        "oob",
        &mut [SimArg::buf(&mut x), SimArg::scalar(10i32)],
        [1, 1, 1],
        [1, 1, 1],
    )
    .unwrap_err();
    assert!(e.to_string().contains("past the end of argument 0"), "{e}");
    let e = run_on_cpu(
        oob,
        "oob",
        &mut [SimArg::buf(&mut x), SimArg::scalar(-1i32)],
        [1, 1, 1],
        [1, 1, 1],
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("before the start of argument 0"),
        "{e}"
    );

    // Compile errors carry the compiler's message; bad launches are refused.
    let e = run_on_cpu(
        "extern \"C\" __global__ void k(float* x) { x[0] = nope; }",
        "k",
        &mut [SimArg::buf(&mut x)],
        [1, 1, 1],
        [1, 1, 1],
    )
    .unwrap_err();
    assert!(e.to_string().contains("nope"), "{e}");
    let e = run_on_cpu(
        oob,
        "oob",
        &mut [SimArg::buf(&mut x), SimArg::scalar(0i32)],
        [1, 1, 1],
        [2048, 1, 1],
    )
    .unwrap_err();
    assert!(e.to_string().contains("1024"), "{e}");
}

#[test]
fn devices_and_modules_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Device>();
    send_sync::<cuda::Module>();
}

#[test]
fn no_device_is_an_err_not_a_panic() {
    let first = Device::first();
    if Device::count() == 0 {
        let e = first.unwrap_err().to_string();
        assert!(e.contains("CUDA"), "{e}");
        assert!(Device::by_index(3).is_err());
    } else {
        let d = first.expect("a device is present");
        eprintln!(
            "CUDA device: {} (sm_{}{})",
            d.name(),
            d.compute_capability().0,
            d.compute_capability().1
        );
        assert!(Device::by_index(Device::count()).is_err());
    }
}

/// On a machine with a GPU: the same kernels on the device agree with the CPU.
#[test]
fn gpu_runs_the_same_kernels_when_present() {
    let dev = match Device::first() {
        Ok(dev) => dev,
        Err(e) => {
            let why = format!("there is no CUDA device ({e})");
            skip_or_fail(
                "gpu_runs_the_same_kernels_when_present",
                "MDH_REQUIRE_CUDA_DEVICE",
                &why,
            );
            return;
        }
    };
    let m = dev.module(SOURCE).unwrap();
    assert!(
        Arc::ptr_eq(&m, &dev.module(SOURCE).unwrap()),
        "modules are cached"
    );
    for (n, grid, block) in [
        (1usize, 1u32, 32u32),
        (100_003, 13, 1024),
        (65_537, 40, 128),
    ] {
        let x = data(n);
        let dx = dev.buffer_from(&x).unwrap();
        let mut dout = dev.buffer::<f32>(1).unwrap();
        let took = m
            .kernel("block_sum")
            .unwrap()
            .arg_slice(&dx)
            .arg_slice_mut(&mut dout)
            .arg_scalar(n as i32)
            .run([grid, 1, 1], [block, 1, 1], 0)
            .unwrap();
        let mut out = [0.0f32];
        dev.read(&dout, &mut out).unwrap();
        assert_eq!(out[0], cpu_block_sum(&x, grid, block), "n {n}");
        eprintln!("block_sum n={n}: {took:?}");
    }
    let n = 50_000usize;
    let (a, b) = (data(n), data(n + 5)[5..].to_vec());
    let (da, db) = (dev.buffer_from(&a).unwrap(), dev.buffer_from(&b).unwrap());
    let mut dc = dev.buffer::<f32>(n).unwrap();
    m.kernel("vec_add")
        .unwrap()
        .arg_slice(&da)
        .arg_slice(&db)
        .arg_slice_mut(&mut dc)
        .arg_scalar(n as u32)
        .run([7, 1, 1], [256, 1, 1], 0)
        .unwrap();
    let mut c = vec![0.0f32; n];
    dev.read(&dc, &mut c).unwrap();
    assert!((0..n).all(|i| c[i] == a[i].mul_add(2.0, b[i])));
    // The same, issued asynchronously on another stream of the context: the
    // read on that stream waits for the launch.
    let side = dev.on_stream(dev.context().new_stream().unwrap()).unwrap();
    let mut dc = side.buffer::<f32>(n).unwrap();
    m.kernel_on(side.stream(), "vec_add")
        .unwrap()
        .arg_slice(&da)
        .arg_slice(&db)
        .arg_slice_mut(&mut dc)
        .arg_scalar(n as u32)
        .launch([7, 1, 1], [256, 1, 1], 0)
        .unwrap();
    let mut c = vec![0.0f32; n];
    side.read(&dc, &mut c).unwrap();
    assert!((0..n).all(|i| c[i] == a[i].mul_add(2.0, b[i])));
    assert!(
        Arc::ptr_eq(&m, &side.module(SOURCE).unwrap()),
        "the module cache is shared"
    );
    assert!(m.kernel("missing").is_err());
    assert!(dev.module("this is not CUDA").is_err());
}

/// Three kernels: one small, one with shared memory and an array indexed at
/// run time (a stack frame), one that spills under its launch bound.
const LOCAL_MEMORY: &str = r#"
extern "C" __global__ void small(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] *= 2.0f;
}
extern "C" __global__ void __launch_bounds__(128) indexed(float* a, const float* b, int n) {
    __shared__ float s[1000];
    float acc[64];
    for (int j = 0; j < 64; j++) acc[j] = b[j * n + threadIdx.x];
    s[threadIdx.x] = acc[threadIdx.x % 64];
    __syncthreads();
    for (int r = 0; r < n; r++)
        for (int j = 0; j < 64; j++) acc[j] = acc[j] * acc[(j + r) % 64] + s[(j + r) % 1000];
    for (int j = 0; j < 64; j++) a[j * n + threadIdx.x] = acc[j];
}
extern "C" __global__ void __launch_bounds__(1024) spills(float* a, const float* b, int n) {
    float acc[200];
    #pragma unroll
    for (int j = 0; j < 200; j++) acc[j] = b[j * n + threadIdx.x];
    for (int r = 0; r < n; r++) {
        #pragma unroll
        for (int j = 0; j < 200; j++) acc[j] = acc[j] * b[r] + acc[(j + 1) % 200];
    }
    #pragma unroll
    for (int j = 0; j < 200; j++) a[j * n + threadIdx.x] = acc[j];
}
"#;

/// The CUBIN's own attributes describe each kernel as ptxas' report does
/// (registers, stack frame, static shared memory; spills only the report
/// says), before and after sm_90, whose CUBINs count the shared memory
/// CUDA reserves per block.
#[test]
fn the_cubin_describes_its_kernels_as_the_report_does() {
    if !nvrtc_or_skip("the_cubin_describes_its_kernels_as_the_report_does") {
        return;
    }
    for arch in ["sm_80", "sm_90", "sm_120"] {
        let c = cuda::nvrtc_resources(LOCAL_MEMORY, arch).unwrap();
        let mut reported = c.kernels.clone();
        reported.sort_by(|a, b| a.name.cmp(&b.name));
        let [indexed, small, spills] = reported.as_slice() else {
            panic!("{arch}: three kernels expected: {reported:?}\n{}", c.log)
        };
        assert_eq!(
            (indexed.shared_bytes, small.shared_bytes, small.stack_bytes),
            (4000, 0, 0),
            "{arch}\n{}",
            c.log
        );
        assert!(indexed.stack_bytes > 0, "{arch}\n{}", c.log);
        assert!(spills.spill_bytes() > Some(0), "{arch}\n{}", c.log);
        let mut read = cuda::cubin_resources(&c.cubin).unwrap();
        read.sort_by(|a, b| a.name.cmp(&b.name));
        for k in &mut reported {
            (k.spill_stores, k.spill_loads) = (None, None);
        }
        assert_eq!(read, reported, "{arch}\n{}", c.log);
    }
}
