use super::*;
use mdh_core::desc::KernelDesc;
use mdh_core::gpu_plan::Mma;

fn plan(groups: &[usize], items: &[usize], tile: &[usize], local: &[bool]) -> GpuPlan {
    GpuPlan {
        groups: groups.to_vec(),
        items: items.to_vec(),
        tile: tile.to_vec(),
        local: local.to_vec(),
        ..GpuPlan::base(groups.len(), local.len())
    }
}

fn h100() -> GpuModel {
    GpuModel::of("NVIDIA H100 80GB HBM3", DeviceCompute::default())
}

/// matmul's bytes: A (I × K), B (K × J) in, C (I × J) out, f32.
fn matmul_bytes(i: usize, j: usize, k: usize) -> Bytes {
    Bytes {
        inputs: 4.0 * (i * k + k * j) as f64,
        outputs: 4.0 * (i * j) as f64,
    }
}

#[test]
fn devices_are_picked_by_name() {
    assert_eq!(h100().name, "H100 SXM");
    assert_eq!(h100().units, 132);
    let pcie = GpuModel::of("NVIDIA H100 PCIe", DeviceCompute::default());
    assert_eq!(pcie.name, "H100 PCIe");
    let a100 = GpuModel::of("NVIDIA A100-SXM4-40GB", DeviceCompute::default());
    assert_eq!((a100.name, a100.fma_lanes), ("A100", 64.0));
    assert_eq!(
        GpuModel::of("NVIDIA H200", DeviceCompute::default()).name,
        "H200"
    );
    // What the runtime reports replaces the row's (a MIG slice).
    let mig = GpuModel::of(
        "NVIDIA H100 80GB HBM3 MIG 1g.10gb",
        DeviceCompute {
            compute_units: Some(16),
            clock_hz: Some(1.7e9),
            ..DeviceCompute::default()
        },
    );
    assert_eq!((mig.units, mig.clock_hz), (16, 1.7e9));
    // Anything else: the generic bound, at least 3 GHz.
    let pocl = GpuModel::of(
        "cpu-haswell-AMD EPYC",
        DeviceCompute {
            compute_units: Some(2),
            clock_hz: Some(2.0e9),
            ..DeviceCompute::default()
        },
    );
    assert_eq!((pocl.name, pocl.units), ("generic", 2));
    assert_eq!(pocl.clock_hz, GENERIC_CLOCK_HZ);
    assert!(!pocl.predicts() && h100().predicts());
    assert_eq!(
        GpuModel::generic(DeviceCompute::default()).units,
        GENERIC_UNITS
    );
}

#[test]
fn occupancy_is_limited_by_threads_registers_and_shared_memory() {
    let m = h100();
    assert_eq!(occupancy(&m, 256, None, 0), 8, "2048 threads");
    let regs = |registers| Resources {
        registers,
        shared_bytes: 0,
    };
    // 139 registers (the register-tiled matmul): 144 per thread allocated,
    // 36864 per block of 256: one block.
    assert_eq!(occupancy(&m, 256, Some(regs(139)), 0), 1);
    assert_eq!(occupancy(&m, 256, Some(regs(106)), 0), 2);
    assert_eq!(occupancy(&m, 256, Some(regs(32)), 0), 8);
    // 48 KiB of shared memory per block: 4 of 228 KiB (with 1 KiB each
    // reserved).
    assert_eq!(occupancy(&m, 64, None, 48 * 1024), 4);
    assert_eq!(occupancy(&m, 32, None, 0), 32, "at most 32 blocks");
}

#[test]
fn waves_quantize_over_the_units() {
    // matmul blocks of 128 × 128 points and a long K: compute-bound, one
    // block of 256 threads per SM (255 registers, 48 KiB shared memory).
    let k = mdh_core::fixtures::matmul();
    let m = h100();
    let res = Some(Resources {
        registers: 255,
        shared_bytes: 0,
    });
    let run = |groups_i: usize| {
        let ext = [128 * groups_i, 128, 4096];
        let p = plan(
            &[groups_i, 1, 1],
            &[16, 16, 1],
            &[128, 128, 8],
            &[true, true],
        );
        predict(
            &k,
            &p,
            &ext,
            matmul_bytes(ext[0], 128, 4096),
            &m,
            res,
            48 * 1024,
        )
    };
    let (full, one_more, two) = (run(132), run(133), run(264));
    assert_eq!((full.waves, one_more.waves, two.waves), (1, 2, 2));
    assert_eq!(full.blocks_per_unit, 1);
    // One more block than SMs costs a whole wave: about as long as twice
    // the blocks.
    let ratio = one_more.time_s / full.time_s;
    assert!(ratio > 1.8 && ratio < 2.1, "{ratio}");
    assert!((two.time_s / one_more.time_s - 1.0).abs() < 0.05);
    // The bound quantizes too (every block whole).
    assert!(one_more.bound_s > 1.8 * full.bound_s);
}

#[test]
fn compute_bound_and_memory_bound() {
    let m = h100();
    // matmul 4096³, register-tiled 8 × 8 in shared memory: the FMA pipe,
    // issue or shared memory, near the 33.5 T FMA/s peak.
    let mm = mdh_core::fixtures::matmul();
    let n = 4096;
    let tiled = plan(&[0, 0, 1], &[16, 16, 1], &[128, 128, 8], &[true, true]);
    let res = Some(Resources {
        registers: 139,
        shared_bytes: 8192,
    });
    let p = predict(
        &mm,
        &tiled,
        &[n, n, n],
        matmul_bytes(n, n, n),
        &m,
        res,
        8192,
    );
    assert!(["fma", "issue", "shared"].contains(&p.limiter), "{p:?}");
    let peak = (n * n * n) as f64 / (132.0 * 128.0 * 1.98e9);
    assert!(p.time_s > peak && p.time_s < 3.0 * peak, "{p:?} vs {peak}");
    // The bound: the peak, with whole waves of 1024 blocks over 132 SMs
    // (8 on the busiest, 7.76 on average).
    let quantized = peak * 8.0 / (1024.0 / 132.0);
    assert!(
        p.bound_s >= peak && p.bound_s <= quantized * 1.0001,
        "{p:?}"
    );
    // matvec 16384²: 1 GiB of matrix from DRAM.
    let mv = mdh_core::fixtures::matvec();
    let n = 16384;
    let bytes = Bytes {
        inputs: 4.0 * (n * n + n) as f64,
        outputs: 4.0 * n as f64,
    };
    let p = predict(
        &mv,
        &plan(&[0, 0], &[4, 32], &[4, 256], &[false, false]),
        &[n, n],
        bytes,
        &m,
        None,
        0,
    );
    assert_eq!(p.limiter, "dram", "{p:?}");
    let dram = bytes.inputs / m.dram_bw;
    assert!(p.time_s >= dram && p.time_s < 1.2 * dram, "{p:?}");
    assert!(p.bound_s <= bytes.inputs / m.dram_peak_bw * 1.0001);
}

/// matmul 4096³ on tensor cores (`fixtures::matmul_tensor_cores`): the
/// bound is 8 times lower with TF32 than in FP32 (the peak TF32 rate) and 3
/// times higher with 3xTF32 than with TF32; the prediction is below the
/// same shape's in FP32, above the bound and not below TF32's with 3xTF32;
/// at sizes that cut the mma tiles (a call in FP32) nothing changes.
#[test]
fn tensor_cores_raise_the_fma_pipe() {
    let (m, mm) = (h100(), mdh_core::fixtures::matmul());
    let at = |mma: Mma, n: usize| {
        let plan = mdh_core::fixtures::matmul_tensor_cores(mma);
        let res = Some(Resources {
            registers: 137,
            shared_bytes: 12288,
        });
        predict(
            &mm,
            &plan,
            &[n, n, n],
            matmul_bytes(n, n, n),
            &m,
            res,
            12288,
        )
    };
    let n = 4096;
    let (fp32, tf32, x3) = (at(Mma::Off, n), at(Mma::Tf32, n), at(Mma::Tf32x3, n));
    let ratio = |a: f64, b: f64| a / b;
    assert!(
        (ratio(fp32.bound_s, tf32.bound_s) - 8.0).abs() < 1e-6,
        "{fp32:?} {tf32:?}"
    );
    assert!(
        (ratio(x3.bound_s, tf32.bound_s) - 3.0).abs() < 1e-6,
        "{x3:?} {tf32:?}"
    );
    assert!(
        tf32.time_s < fp32.time_s && tf32.time_s >= tf32.bound_s,
        "{fp32:?} {tf32:?}"
    );
    // Both wait on L2 here (the blocks' 128 × 64 tiles load their
    // footprints again and again): 3xTF32 costs nothing more.
    assert!(x3.time_s >= tf32.time_s, "{x3:?} {tf32:?}");
    // 100 rows: fewer than the plan's 128 per tile, no mma tiles.
    let cut = |mma: Mma| {
        let plan = mdh_core::fixtures::matmul_tensor_cores(mma);
        predict(
            &mm,
            &plan,
            &[100, n, n],
            matmul_bytes(100, n, n),
            &m,
            None,
            0,
        )
    };
    assert_eq!(cut(Mma::Tf32), cut(Mma::Off));
}

/// bf16 matmul 4096³ on the tensor-core plan: `mma: bf16` (m16n8k16,
/// `HALF_PER_FP32` = 16 times FP32's rate, NVIDIA's dense BF16 figures)
/// has a bound half TF32's on the same plan (TF32's rate does not grow with
/// narrower inputs) and below FP32's; the prediction is not above TF32's
/// (half the HMMAs to issue).
#[test]
fn bf16_tensor_cores_run_at_twice_tf32() {
    let m = h100();
    let k = mdh_core::fixtures::compiled(&mdh_core::fixtures::example("matmul_bf16"));
    let n = 4096;
    let at = |mma: Mma| {
        let plan = mdh_core::fixtures::matmul_tensor_cores(mma);
        let res = Some(Resources {
            registers: 128,
            shared_bytes: 6144,
        });
        let bytes = Bytes {
            inputs: 2.0 * (2 * n * n) as f64,
            outputs: 4.0 * (n * n) as f64,
        };
        predict(&k, &plan, &[n, n, n], bytes, &m, res, 6144)
    };
    let (fp32, tf32, bf16) = (at(Mma::Off), at(Mma::Tf32), at(Mma::Bf16));
    assert!(
        (tf32.bound_s / bf16.bound_s - 2.0).abs() < 1e-6,
        "{tf32:?} {bf16:?}"
    );
    assert!(fp32.bound_s > 4.0 * bf16.bound_s, "{fp32:?} {bf16:?}");
    assert!(
        bf16.time_s <= tf32.time_s && bf16.time_s >= bf16.bound_s,
        "{tf32:?} {bf16:?}"
    );
}

#[test]
fn monotonic_in_the_obvious_directions() {
    let k = mdh_core::fixtures::matmul();
    let p = plan(&[0, 0, 1], &[16, 16, 1], &[64, 64, 8], &[true, true]);
    let at = |m: &GpuModel, n: usize, registers: u32| {
        let res = Some(Resources {
            registers,
            shared_bytes: 4096,
        });
        predict(&k, &p, &[n, n, n], matmul_bytes(n, n, n), m, res, 4096)
    };
    let m = h100();
    let mut fewer = m.clone();
    fewer.units = 66;
    let mut slower = m.clone();
    slower.clock_hz /= 2.0;
    for n in [256, 1024, 2048] {
        let base = at(&m, n, 64);
        assert!(at(&fewer, n, 64).time_s >= base.time_s);
        assert!(at(&slower, n, 64).time_s >= base.time_s);
        assert!(at(&m, n, 200).time_s >= base.time_s, "more registers");
        assert!(at(&m, 2 * n, 64).time_s > base.time_s, "larger sizes");
        assert!(base.bound_s <= base.time_s);
        assert!(at(&fewer, n, 64).bound_s >= base.bound_s);
    }
    // Memory: more bandwidth never slows a memory-bound kernel.
    let mv = mdh_core::fixtures::matvec();
    let n = 8192;
    let bytes = Bytes {
        inputs: 4.0 * (n * n + n) as f64,
        outputs: 4.0 * n as f64,
    };
    let mvp = plan(&[0, 0], &[4, 32], &[4, 256], &[false, false]);
    let mut h200 = m.clone();
    h200.dram_bw *= 1.4;
    let t = |m: &GpuModel| predict(&mv, &mvp, &[n, n], bytes, m, None, 0).time_s;
    assert!(t(&h200) < t(&m));
}

#[test]
fn the_generic_bound_spreads_points_over_lanes() {
    let k = mdh_core::fixtures::matvec();
    // An H100 taken as an unknown device: 132 units at 3 GHz.
    let g = GpuModel::generic(DeviceCompute {
        compute_units: Some(132),
        clock_hz: Some(1.98e9),
        ..DeviceCompute::default()
    });
    let ext = [8192, 8192];
    let bytes = Bytes {
        inputs: 4.0 * (8192.0 * 8192.0 + 8192.0),
        outputs: 0.0,
    };
    let points = 8192.0 * 8192.0;
    let whole = plan(&[0, 0], &[64, 4], &[64, 256], &[false, false]);
    let b = |p: &GpuPlan, bytes: Bytes| predict(&k, p, &ext, bytes, &g, None, 0).bound_s;
    let alone = b(
        &plan(&[1, 1], &[1, 1], &[1, 1], &[false, false]),
        Bytes::default(),
    );
    let one_item = points / (64.0 * GENERIC_CLOCK_HZ);
    assert!(
        (alone / one_item - 1.0).abs() < 1e-9,
        "{alone} vs {one_item}"
    );
    let spread = b(&whole, Bytes::default());
    assert!(alone > 100.0 * spread);
    // Below the H100's real time: 67M FMAs take 2 µs at its peak, reading
    // the 268 MB matrix at 3.35 TB/s 80 µs.
    assert!(spread > 0.0 && spread < 2e-6);
    let with_memory = b(&whole, bytes);
    assert!(with_memory > spread && with_memory < 80e-6);
    // A single work-group of many work-items runs on one unit.
    let group = b(
        &plan(&[1, 1], &[64, 4], &[64, 256], &[false, false]),
        Bytes::default(),
    );
    let one_unit = points / (128.0 * GENERIC_CLOCK_HZ);
    assert!((group / one_unit - 1.0).abs() < 1e-9);
    // The prediction of the generic model is its bound.
    let p = predict(&k, &whole, &ext, bytes, &g, None, 0);
    assert_eq!(p.time_s, p.bound_s);
}

#[test]
fn more_groups_than_units_do_not_lower_the_generic_bound() {
    let k = mdh_core::fixtures::matvec();
    let two = GpuModel::generic(DeviceCompute {
        compute_units: Some(2),
        clock_hz: None,
        ..DeviceCompute::default()
    });
    let ext = [4096, 4096];
    let b = |groups: [usize; 2]| {
        let p = plan(&groups, &[64, 4], &[64, 256], &[false, false]);
        predict(&k, &p, &ext, Bytes::default(), &two, None, 0).bound_s
    };
    // Two units bound everything from two work-groups on (4096 / 64 = 64
    // whole blocks along i: 32 per unit).
    assert!((b([64, 1]) / b([2, 1]) - 1.0).abs() < 1e-9);
    assert!((b([1, 1]) / b([2, 1]) - 2.0).abs() < 1e-9);
    // Memory: input bytes at 256 bytes per cycle and unit at best.
    let p = plan(&[64, 1], &[64, 4], &[64, 256], &[false, false]);
    let bytes = Bytes {
        inputs: 1e9,
        outputs: 0.0,
    };
    let mem = predict(&k, &p, &[64, 1], bytes, &two, None, 0).bound_s;
    assert!((mem - 1e9 / (2.0 * 256.0 * GENERIC_CLOCK_HZ)).abs() < 1e-15);
}

/// A config's CUDA entries with the tuner's provenance: the measured
/// device times of the tuned plan and of the default plan.
#[derive(serde::Deserialize)]
struct ConfigTimes {
    entries: Vec<EntryTimes>,
}

#[derive(serde::Deserialize)]
struct EntryTimes {
    backend: String,
    #[serde(default)]
    provenance: Option<Provenance>,
}

#[derive(serde::Deserialize)]
struct Provenance {
    time_s: f64,
    /// What `mdh-tune` records (run-time tuning records the time of the
    /// plan that ran before instead).
    #[serde(default)]
    default_time_s: Option<f64>,
}

/// One calibration case: a plan of an H100 entry of `configs/`, its
/// measured time and the model's answer.
struct Case {
    name: String,
    plan: &'static str,
    measured_s: f64,
    p: Prediction,
    registers: Option<u32>,
}

const H100_NAME: &str = "NVIDIA H100 80GB HBM3";

/// The tuned and the default plan of every H100 entry of the configs in
/// `configs/`, with the device times the tuner measured (its provenance)
/// and the model's prediction (registers from NVRTC's ptxas report when
/// NVRTC is there).
fn h100_cases() -> Vec<Case> {
    use mdh_core::codegen::c_expr::Dialect;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    let m = h100();
    let lim = mdh::gpu::DeviceLimits {
        max_items: 1024,
        local_bytes: mdh::gpu::CUDA_STATIC_SHARED_BYTES,
        cuda_arch: Some(90),
        compute: Default::default(),
    };
    let mut cases = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.contains(H100_NAME) {
            continue;
        }
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let k = mdh_core::fixtures::compiled(&mdh_core::fixtures::example(&name));
        let entries = mdh_core::config::entries(&k, &path, &text).unwrap();
        let cuda = entries.gpu(mdh_core::backend::Backend::Cuda);
        let times: ConfigTimes = serde_saphyr::from_str(&text).unwrap();
        let times = times.entries.into_iter().filter(|e| e.backend == "cuda");
        let desc = mdh_core::desc::KernelDesc::from_kernel(&k);
        let info = mdh::reference::kernel_info(&k, Dialect::Cuda);
        for (e, t) in cuda.iter().zip(times) {
            let (Some(sizes), Some(prov)) = (&e.sizes, t.provenance) else {
                continue;
            };
            let Some(default_time_s) = prov.default_time_s else {
                continue;
            };
            if e.device != H100_NAME {
                continue;
            }
            let bound = mdh::gpu::bind_sizes(&desc, sizes).unwrap();
            let bytes = |shapes: &[Vec<usize>], bufs: &[mdh_core::spec::BufferDecl]| {
                shapes
                    .iter()
                    .zip(bufs)
                    .map(|(s, b)| (s.iter().product::<usize>() * elem_bytes(b.ty)) as f64)
                    .sum::<f64>()
            };
            let moved = Bytes {
                inputs: bytes(&bound.in_shapes, &k.inputs),
                outputs: bytes(&bound.out_shapes, &k.outputs),
            };
            // The default of the measurements' day: the heuristic one,
            // fitted (the analytical default came after them).
            let default =
                mdh::gpu::defaults::fitted(GpuPlan::default_for(&desc), &desc, &bound, info, lim);
            for (which, plan, measured_s) in [
                ("tuned", &e.plan, prov.time_s),
                ("default", &default, default_time_s),
            ] {
                let job = mdh::gpu::job(&desc, &bound, info, &[], Some(plan), H100_NAME, lim)
                    .unwrap()
                    .unwrap();
                let res = mdh::cuda::nvrtc_available()
                    .then(|| mdh::cuda::nvrtc_resources(&job.source, "sm_90").ok())
                    .flatten()
                    .and_then(|c| c.kernels.into_iter().find(|k| k.name == "mdh_main"))
                    .map(|r| Resources {
                        registers: r.registers,
                        shared_bytes: r.shared_bytes,
                    });
                let r = plan.resolve(&desc.kinds, &bound.extents);
                let shared = mdh::gpu::local_bytes(&desc, info, &bound, &r);
                cases.push(Case {
                    name: format!("{name} {sizes:?}"),
                    plan: which,
                    measured_s,
                    p: predict(&k, plan, &bound.extents, moved, &m, res, shared),
                    registers: res.map(|r| r.registers),
                });
            }
        }
    }
    cases
}

/// The calibration against the H100 (the tuner's measured device times in
/// the provenance of `configs/`): every bound below its measurement, every
/// prediction within [`CALIBRATION_FACTOR`] of it and their geometric mean
/// error within [`MEAN_FACTOR`]. Prints the table docs/guide/06-cuda.md shows.
#[test]
fn calibrated_against_the_h100_measurements() {
    let cases = h100_cases();
    assert!(cases.len() >= 10, "{} cases", cases.len());
    let mut log_err = 0.0;
    println!("| case | plan | measured (µs) | predicted (µs) | predicted / measured | limiter | registers | bound (µs) |");
    println!("|---|---|---:|---:|---:|---|---:|---:|");
    for c in &cases {
        let ratio = c.p.time_s / c.measured_s;
        log_err += ratio.ln().abs();
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.2} | {} | {} | {:.1} |",
            c.name,
            c.plan,
            c.measured_s * 1e6,
            c.p.time_s * 1e6,
            ratio,
            c.p.limiter,
            c.registers.map_or("–".into(), |r| r.to_string()),
            c.p.bound_s * 1e6
        );
    }
    let mean = (log_err / cases.len() as f64).exp();
    println!("geometric mean of max(predicted / measured, measured / predicted): {mean:.2}");
    assert!(mean <= MEAN_FACTOR, "{mean}");
    for c in &cases {
        assert!(
            c.p.bound_s <= c.measured_s,
            "{} {}: bound {} s above the measured {} s",
            c.name,
            c.plan,
            c.p.bound_s,
            c.measured_s
        );
        let ratio = c.p.time_s / c.measured_s;
        assert!(
            ratio < CALIBRATION_FACTOR && ratio > 1.0 / CALIBRATION_FACTOR,
            "{} {}: predicted {} s, measured {} s",
            c.name,
            c.plan,
            c.p.time_s,
            c.measured_s
        );
    }
}

/// How far a prediction may be from its H100 measurement: prl's scalar
/// function has many operations per point where the model counts one (0.19
/// of the measured time), the rest is within 3.6.
const CALIBRATION_FACTOR: f64 = 6.0;
/// How far the predictions may be from the measurements on (geometric)
/// average (1.58 at calibration).
const MEAN_FACTOR: f64 = 2.0;

/// How much slower than a tuned entry the model may predict the
/// analytical default at the entry's sizes (issue 35: 1.25).
const DEFAULT_FACTOR: f64 = 1.25;

/// The limits of a device of `m`'s row as its runtime reports them
/// (sm_90: 1024 threads, the opt-in shared memory).
fn sm90_limits(m: &GpuModel) -> mdh::gpu::DeviceLimits {
    mdh::gpu::DeviceLimits {
        compute: DeviceCompute {
            compute_units: Some(m.units),
            clock_hz: Some(m.clock_hz),
            unit_threads: Some(m.unit_threads),
            unit_registers: Some(m.unit_registers),
            unit_shared: Some(m.unit_shared),
            cpu: false,
        },
        ..mdh::gpu::cuda_arch_limits("sm_90")
    }
}

/// Registers of `mdh_main` for `plan` at `bound` on sm_90 (ptxas' report
/// through NVRTC), `None` without NVRTC.
fn sm90_registers(
    desc: &KernelDesc,
    bound: &mdh::__rt::Bound,
    info: &mdh::gpu::KernelInfo,
    plan: &GpuPlan,
    lim: mdh::gpu::DeviceLimits,
) -> Option<Resources> {
    let job = mdh::gpu::job(desc, bound, info, &[], Some(plan), "*", lim)
        .ok()
        .flatten()?;
    let c = mdh::cuda::nvrtc_available()
        .then(|| mdh::cuda::nvrtc_resources(&job.source, "sm_90").ok())
        .flatten()?;
    let r = c.kernels.into_iter().find(|k| k.name == "mdh_main")?;
    Some(Resources {
        registers: r.registers,
        shared_bytes: r.shared_bytes,
    })
}

/// The analytical default against every FP32 entry tuned on an H100 or an
/// H200 in `configs/` (tensor-core entries are another precision, which
/// a default never picks): at the entry's sizes, on the entry's device
/// row, the model predicts the default within [`DEFAULT_FACTOR`] of the
/// entry. Prints the table docs/guide/02-configs.md shows.
#[test]
fn the_analytical_default_is_near_the_tuned_entries() {
    use mdh_core::codegen::c_expr::Dialect;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    let mut rows = Vec::new();
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        // Only files with H100/H200 entries (a stage's file, as
        // matmul_bias_relu_product's, names no example kernel of its own).
        if !(text.contains("H100") || text.contains("H200")) {
            continue;
        }
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let k = mdh_core::fixtures::compiled(&mdh_core::fixtures::example(&name));
        let entries = mdh_core::config::entries(&k, &path, &text).unwrap();
        let cuda = entries.gpu(mdh_core::backend::Backend::Cuda);
        let desc = KernelDesc::from_kernel(&k);
        let info = mdh::reference::kernel_info(&k, Dialect::Cuda);
        for e in cuda {
            let Some(sizes) = &e.sizes else { continue };
            if e.plan.mma != Mma::Off || !(e.device.contains("H100") || e.device.contains("H200")) {
                continue;
            }
            let m = GpuModel::of(&e.device, DeviceCompute::default());
            let lim = sm90_limits(&m);
            let bound = mdh::gpu::bind_sizes(&desc, sizes).unwrap();
            let bytes = Bytes::of_call(&bound, info);
            let default = mdh::gpu::defaults::default_plan(&desc, &bound, info, &e.device, lim);
            let mk = model_kernel(&k);
            let time = |plan: &GpuPlan| {
                let r = plan.resolve(&desc.kinds, &bound.extents);
                let shared = mdh::gpu::local_bytes(&desc, info, &bound, &r);
                let res = sm90_registers(&desc, &bound, info, plan, lim);
                mdh::gpu::model::predict(&mk, plan, &bound.extents, bytes, &m, res, shared)
            };
            let (d, t) = (time(&default), time(&e.plan));
            let why = mdh::gpu::defaults::explain(&desc, &bound, info, &e.device, lim);
            rows.push((format!("{name} {sizes:?} ({})", m.name), d, t, why));
        }
    }
    assert!(rows.len() >= 15, "{} entries", rows.len());
    println!("| case | default predicted (µs) | limiter | tuned predicted (µs) | limiter | default / tuned |");
    println!("|---|---:|---|---:|---|---:|");
    for (case, d, t, _) in &rows {
        println!(
            "| {case} | {:.1} | {} | {:.1} | {} | {:.2} |",
            d.time_s * 1e6,
            d.limiter,
            t.time_s * 1e6,
            t.limiter,
            d.time_s / t.time_s
        );
    }
    for (case, d, t, why) in &rows {
        assert!(
            d.time_s <= DEFAULT_FACTOR * t.time_s,
            "{case}: the default predicted {:.1} µs, the tuned entry {:.1} µs; {why}",
            d.time_s * 1e6,
            t.time_s * 1e6
        );
    }
}
