//! The tuner on GPU backends, end to end on the examples' matvec: OpenCL
//! through PoCL on the CPU (no GPU needed), CUDA where a device exists.
//! The config starts with an entry for the device and sizes, which the
//! search measures first (technique `config`); each run tunes and writes
//! its best plan unless that is the configured one, the entry is read back
//! with the macro's parser and chosen by the wrappers' dispatch for the
//! device and sizes; a resumed run measures no candidate again.

mod common;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use common::{speedup, tune};

use mdh::gpu::{CallDesc, DeviceLimits, GpuEntry};
use mdh_core::config::{entries, gpu_entry_yaml};
use mdh_core::desc::KernelDesc;
use mdh_core::gpu_plan::GpuPlan;

use mdh_core::fixtures::matvec;

/// The log file a run names on stderr.
fn log_path(stderr: &str) -> PathBuf {
    let at = stderr.find("log: ").expect("the summary names the log") + 5;
    let rest = &stderr[at..];
    PathBuf::from(&rest[..rest.find(';').expect("`; plot:` follows")])
}

/// Candidates measured (not pruned) in a log, in order.
fn measured_records(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["record"] == "candidate" && r["status"] != "pruned")
        .collect()
}

/// Plans measured (not pruned) in a log, in order.
fn measured(log: &Path) -> Vec<String> {
    measured_records(log)
        .iter()
        .map(|r| r["plan"].to_string())
        .collect()
}

/// Tunes matvec for `backend` in two runs (the second resumed) and checks
/// the written entry; `device` is the device's name.
fn tune_and_check(backend: &str, device: &str, limits: DeviceLimits) {
    let out = std::env::temp_dir().join(format!("mdh-tune-{backend}-{}", std::process::id()));
    // The config dispatches to this plan at these sizes now.
    let k = matvec();
    let configured = GpuPlan {
        items: vec![4, 4],
        tile: vec![4, 64],
        ..GpuPlan::base(2, 2)
    };
    let path = out.join("matvec.yaml");
    std::fs::create_dir_all(&out).unwrap();
    let entry = gpu_entry_yaml(
        &k,
        backend,
        device,
        limits.cuda_arch,
        Some(&[64, 64]),
        &configured,
        &[],
    );
    std::fs::write(&path, format!("kernel: matvec\nentries:\n{entry}")).unwrap();
    let run = |extra: &[&str]| {
        tune(
            backend,
            "I=64,K=64",
            &out,
            &[&["--batch", "2"], extra].concat(),
        )
    };
    let (first, stderr) = run(&["--evaluations", "3"]);
    assert!(speedup(&first) >= 1.0, "{first}");
    let log = log_path(&stderr);
    let first_batch = measured_records(&log);
    assert_eq!(first_batch.len(), 3, "{stderr}");
    assert_eq!(first_batch[1]["technique"], "config", "{first_batch:?}");
    assert_eq!(
        serde_json::from_value::<GpuPlan>(first_batch[1]["plan"].clone()).unwrap(),
        configured
    );

    // Resumed to 6: the 3 measured ones are not measured again.
    let (second, stderr) = run(&["--evaluations", "6", "--resume"]);
    assert!(stderr.contains("resumed 3 candidates"), "{stderr}");
    let plans = measured(&log_path(&stderr));
    assert_eq!(plans.len(), 6, "{plans:?}");
    let distinct: HashSet<&String> = plans.iter().collect();
    assert_eq!(
        distinct.len(),
        6,
        "a candidate was measured twice: {plans:?}"
    );
    // Every candidate's analytic lower bound (compute and memory traffic
    // of its plan on the device) is positive and below its measured time.
    for r in measured_records(&log_path(&stderr)) {
        let bound = r["lower_bound_s"].as_f64().unwrap();
        assert!(bound > 0.0, "{r}");
        if let Some(time) = r["time_s"].as_f64() {
            assert!(time >= bound, "measured below its lower bound: {r}");
            // The throughput model's prediction is kept next to it.
            let predicted = r["model"]["predicted_s"].as_f64().unwrap();
            assert!(predicted >= bound, "{r}");
            if backend == "cuda" {
                assert!(r["model"]["registers"].as_u64().is_some(), "{r}");
            }
        }
    }

    // The macro's parser reads the file; the entry is the one chosen for
    // this device and these sizes: the best plan found, or the configured
    // one where it is the best.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("backend: {backend}")), "{text}");
    let unchanged = second.contains("config unchanged");
    assert!(
        unchanged || text.contains("evaluations: 6"),
        "{second}\n{text}"
    );
    let e = entries(&k, &path, &text).unwrap();
    let gpu = e.gpu(mdh_core::backend::Backend::named(backend).unwrap());
    assert_eq!(gpu.len(), 1, "{text}");
    assert_eq!(gpu[0].device, device);
    assert_eq!(gpu[0].sizes, Some(vec![64, 64]));
    let desc = KernelDesc::from_kernel(&k);
    let bound = mdh::gpu::bind_sizes(&desc, &[64, 64]).unwrap();
    let info = mdh::reference::kernel_info(&k, mdh_core::codegen::c_expr::Dialect::OpenCl);
    let plan: GpuPlan = gpu[0].plan.clone();
    let dispatch = [GpuEntry {
        plan: plan.clone(),
        device: Box::leak(gpu[0].device.clone().into_boxed_str()),
        arch: gpu[0].arch,
        sizes: Some(&[64, 64]),
    }];
    let chosen = CallDesc {
        desc: &desc,
        bound: &bound,
        info,
        entries: &dispatch,
        device,
        lim: limits,
    }
    .choose();
    assert_eq!(chosen.r, plan.resolve(&desc.kinds, &bound.extents));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn tunes_matvec_on_opencl_writes_an_entry_the_macro_chooses_and_resumes() {
    let dev = match mdh::opencl::Device::first() {
        Ok(d) => d,
        Err(e) => return skip_or_fail("MDH_REQUIRE_OPENCL", format!("no OpenCL device ({e})")),
    };
    use mdh::gpu::GpuDevice as _;
    tune_and_check("opencl", dev.name(), dev.limits());
}

#[test]
fn tunes_matvec_on_cuda_where_there_is_a_gpu() {
    let dev = match mdh::cuda::Device::first() {
        Ok(d) => d,
        Err(e) => return skip_or_fail("MDH_REQUIRE_CUDA_DEVICE", format!("no CUDA device ({e})")),
    };
    use mdh::gpu::GpuDevice as _;
    tune_and_check("cuda", dev.name(), dev.limits());
}

/// Says that a test is skipped because `why`, or fails it where `var` is
/// set (scripts/test-all.sh sets `MDH_REQUIRE_OPENCL`).
fn skip_or_fail(var: &str, why: String) {
    assert!(std::env::var_os(var).is_none(), "{var} is set but {why}");
    println!("skipped: {why} (set {var}=1 to make this a failure)");
}
