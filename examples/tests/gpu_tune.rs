//! Run-time GPU tuning (`NAME::opencl::tune`, `MDH_AUTOTUNE=1`, the
//! tuning cache; `mdh::gpu::tune`) on OpenCL (PoCL here): the kept plan
//! computes what the interpreter does; the cache file is written; later
//! calls run the kept plan, in this process (on the same device and on a
//! fresh one, whose prepared calls read the file) and in another process;
//! a stage fused with its epilogue runs the plan kept for the stage alone;
//! a corrupt, truncated or other version's file is ignored (and replaced);
//! processes tuning the same call at once leave one whole file; without a
//! cache folder (no `HOME`, one that cannot be made) autotuned calls still
//! run and say so once. The CUDA `tune` shares all of it but the device
//! (it is compiled here, not run).
//!
//! The tests share one cache folder (`MDH_TUNE_CACHE`, set once per
//! process, under `target/tmp/`) and run one at a time (PoCL, see mdh-tune's GPU tests); the
//! processes they start run one test of this binary.

#[allow(dead_code, unused_macros)] // what the family tests use
mod gpu;

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use mdh::gpu::{bind_sizes, GpuDevice as _, TuneReport};
use mdh::opencl::Device;
use mdh::reference::Buffer;
use mdh_example_kernels::{dot, matmul, matmul_bias_relu};

/// A search budget that leaves a test in seconds.
const BUDGET: Duration = Duration::from_millis(1500);
/// Set in the processes the tests start: the test that reads it runs.
const CHILD: &str = "MDH_TUNE_TEST_CHILD";

/// This process's cache folder (empty at first) and the one-at-a-time
/// guard, or `None` where the test does not run: without an OpenCL device
/// (a failure under `MDH_REQUIRE_OPENCL=1`), and in the processes the tests
/// start unless `child` (the tests those processes run return at once in
/// other processes).
fn setup(child: bool) -> Option<(MutexGuard<'static, ()>, PathBuf)> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    if std::env::var_os(CHILD).is_some() != child {
        return None;
    }
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    gpu::opencl_device()?;
    let dir = DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os(CHILD) {
            return PathBuf::from(dir);
        }
        // Cargo's folder for integration tests' files, emptied per run.
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gpu-tune-cache");
        let _ = std::fs::remove_dir_all(&dir);
        // Before any call reads it; the guard keeps the other tests out.
        std::env::set_var("MDH_TUNE_CACHE", &dir);
        dir
    });
    Some((guard, dir.clone()))
}

/// A device with an empty memo: its calls read the cache file.
fn fresh_device() -> Device {
    Device::first().expect("the OpenCL device opened before opens again")
}

fn f32s(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed) as f32 / u32::MAX as f32)
        .collect()
}

/// The outputs of `SPEC` (of one md_hom or of stages) by the reference
/// interpreter.
fn interpreted(spec: &str, sizes: &[usize], inputs: &[Buffer], outputs: &[Buffer]) -> Vec<Buffer> {
    let k = mdh::reference::program(spec).unwrap();
    let mut want = outputs.to_vec();
    mdh::reference::run_program(&k, sizes, inputs, &mut want, &[]).unwrap();
    want
}

fn assert_close(got: &[f32], want: &Buffer) {
    let want = want.as_f32().unwrap();
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-4 * w.abs().max(1.0),
            "[{i}]: {g} vs {w}"
        );
    }
}

const MM: matmul::Sizes = matmul::Sizes {
    I: 48,
    K: 64,
    J: 40,
};

/// The source of the prepared matmul call at `MM` on `dev`.
fn matmul_call_source(dev: &Device) -> String {
    let s = MM;
    let call = matmul::opencl::call(
        dev,
        None,
        &s.values(),
        &[s.I * s.K, s.K * s.J],
        &[s.I * s.J],
    )
    .unwrap();
    call.ready().unwrap().job().source.clone()
}

/// The source of matmul at `MM` on `dev` with `plan` (`None`: the
/// configured choice).
fn matmul_source(dev: &Device, plan: Option<&mdh::__rt::GpuPlan>) -> String {
    let bound = bind_sizes(matmul::desc(), &MM.values()).unwrap();
    let job = matmul::opencl::job(&bound, plan, dev.name(), dev.limits()).unwrap();
    job.unwrap().source
}

fn run_matmul(dev: &Device) -> Vec<f32> {
    let s = MM;
    let (a, b) = (f32s(s.I * s.K, 1), f32s(s.K * s.J, 2));
    let mut c = vec![0.0; s.I * s.J];
    matmul::opencl::run(dev, &a, &b, &mut c, s).unwrap();
    let want = interpreted(
        matmul::SPEC,
        &s.values(),
        &[Buffer::from(a), Buffer::from(b)],
        &[Buffer::from(c.clone())],
    );
    assert_close(&c, &want[0]);
    c
}

/// The process this test binary starts with `env` to run test `name`; its
/// stderr.
fn child(name: &str, dir: &PathBuf, env: &[(&str, &str)]) -> String {
    finished(name, child_command(name, dir, env).output().unwrap())
}

/// The command of [`child`], to start it without waiting.
fn child_command(name: &str, dir: &PathBuf, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, dir)
        .env("MDH_TUNE_CACHE", dir)
        .envs(env.iter().copied());
    c
}

/// The stderr of the process of [`child`] that ran test `name`, which
/// must have passed.
fn finished(name: &str, out: std::process::Output) -> String {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{name}:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{name} did not run:\n{stdout}");
    stderr.into_owned()
}

#[test]
fn matmul_keeps_a_checked_plan_that_later_calls_and_processes_run() {
    let Some((_one_at_a_time, dir)) = setup(false) else {
        return;
    };
    let dev = fresh_device();
    // Before tuning: the configured choice (no cache file yet).
    assert_eq!(matmul_call_source(&dev), matmul_source(&dev, None));
    let r: TuneReport = matmul::opencl::tune(&dev, MM, BUDGET).unwrap();
    eprintln!("{r:?}");
    assert!(r.measured >= 2, "{r:?}");
    assert!(r.best_s > 0.0 && r.best_s <= r.before_s, "{r:?}");
    assert!(r.file.starts_with(&dir) && r.file.exists(), "{r:?}");
    let text = std::fs::read_to_string(&r.file).unwrap();
    assert!(
        text.contains("kernel matmul\n") && text.contains("extents up to 64 64 64\n"),
        "{text}"
    );
    // Later calls run the kept plan: on this device (its prepared call was
    // forgotten) and on a fresh one (which reads the file), correctly.
    let kept = matmul_source(&dev, Some(&r.plan));
    assert_eq!(matmul_call_source(&dev), kept);
    let fresh = fresh_device();
    assert_eq!(matmul_call_source(&fresh), kept);
    run_matmul(&dev);
    run_matmul(&fresh);
    // And another process, which says so under MDH_EXPLAIN=1.
    let said = child(
        "later_process_runs_the_kept_plan",
        &dir,
        &[("MDH_EXPLAIN", "1")],
    );
    assert!(
        said.contains("the plan of the run-time tuning cache"),
        "{said}"
    );
    if r.plan != r.before {
        assert!(said.contains(&format!("{:?}", r.plan)), "{said}");
    }
}

/// A stage fused with its epilogue runs the plan run-time tuning keeps
/// for the stage alone: `matmul_bias_relu`'s product tuned, the fused
/// call on this device is made again (forgotten with the product's), its
/// source there and on a fresh device the fused job of the kept plan, and
/// the kernel's `run` computes what the interpreter does.
#[test]
fn a_fused_stage_runs_the_plan_kept_for_its_producer() {
    use matmul_bias_relu::fused::matmul_bias_relu_product as fused;
    use matmul_bias_relu::stages::matmul_bias_relu_epilogue as epilogue;
    use matmul_bias_relu::stages::matmul_bias_relu_product as product;
    let Some((_one_at_a_time, _)) = setup(false) else {
        return;
    };
    let (i, j, k) = (40, 24, 56);
    let sizes = fused::Sizes { I: i, J: j, K: k }.values();
    let esizes = epilogue::Sizes { I: i, J: j }.values();
    let (lens, outs) = ([i * j, j], [i * j]);
    let args = mdh::__rt::ArgSizes {
        sizes: &esizes,
        in_lens: &lens,
        out_lens: &outs,
    };
    let call = |dev: &Device| {
        let e = fused::opencl::epilogue(args);
        fused::opencl::call(dev, None, &sizes, &[i * k, k * j], &[i * j], &e).unwrap()
    };
    let source = |c: &mdh::__rt::gpu::Call<Device>| c.ready().unwrap().job().source.clone();
    let job_source = |dev: &Device, plan: Option<&mdh::__rt::GpuPlan>| {
        let bound = bind_sizes(fused::desc(), &sizes).unwrap();
        let e = fused::opencl::epilogue(args);
        let job = fused::opencl::job(&bound, &e, plan, dev.name(), dev.limits());
        job.unwrap().unwrap().source
    };
    let dev = fresh_device();
    let before = call(&dev);
    assert_eq!(source(&before), job_source(&dev, None));
    let s = product::Sizes { I: i, J: j, K: k };
    let r = product::opencl::tune(&dev, s, BUDGET).unwrap();
    eprintln!("{r:?}");
    // Made again (whether or not tuning found a faster plan).
    let after = call(&dev);
    assert!(
        !std::sync::Arc::ptr_eq(&before, &after),
        "the fused call was kept"
    );
    let kept = job_source(&dev, Some(&r.plan));
    assert_eq!(source(&after), kept);
    assert_eq!(source(&call(&fresh_device())), kept);
    let (a, b, bias) = (f32s(i * k, 1), f32s(k * j, 2), f32s(j, 3));
    let mut y = vec![0.0; i * j];
    let s = matmul_bias_relu::Sizes { I: i, J: j, K: k };
    matmul_bias_relu::opencl::run(&dev, &a, &b, &bias, &mut y, s).unwrap();
    let inputs = [Buffer::from(a), Buffer::from(b), Buffer::from(bias)];
    let want = interpreted(
        matmul_bias_relu::SPEC,
        &s.values(),
        &inputs,
        &[Buffer::from(y.clone())],
    );
    assert_close(&y, &want[0]);
}

/// Run by [`matmul_keeps_a_checked_plan_that_later_calls_and_processes_run`]
/// in a process of its own.
#[test]
fn later_process_runs_the_kept_plan() {
    let Some((_one_at_a_time, _)) = setup(true) else {
        return;
    };
    let dev = fresh_device();
    run_matmul(&dev);
}

fn run_dot(dev: &Device, n: usize) {
    let (x, y) = (f32s(n, 3), f32s(n, 4));
    let mut r = [0.0f32];
    dot::opencl::run(dev, &x, &y, &mut r, dot::Sizes { N: n }).unwrap();
    let want = interpreted(
        dot::SPEC,
        &[n],
        &[Buffer::from(x), Buffer::from(y)],
        &[Buffer::from(vec![0.0f32])],
    );
    assert_close(&r, &want[0]);
}

#[test]
fn autotune_tunes_a_call_without_a_kept_plan() {
    let Some((_one_at_a_time, dir)) = setup(false) else {
        return;
    };
    let said = child(
        "autotuned_call",
        &dir.join("autotune"),
        &[("MDH_AUTOTUNE", "1"), ("MDH_AUTOTUNE_BUDGET", "0.5")],
    );
    assert!(
        said.contains("MDH_AUTOTUNE: tuning dot at N=2000"),
        "{said}"
    );
    assert!(said.contains("kept in"), "{said}");
    let files: Vec<_> = std::fs::read_dir(dir.join("autotune")).unwrap().collect();
    assert_eq!(files.len(), 1, "{files:?}");
}

/// Run by [`autotune_tunes_a_call_without_a_kept_plan`] in a process of its
/// own, under `MDH_AUTOTUNE=1`.
#[test]
fn autotuned_call() {
    let Some((_one_at_a_time, _)) = setup(true) else {
        return;
    };
    run_dot(&fresh_device(), 2000);
}

/// The cache file's text with `line` (one of its own) replaced by `by`.
fn edited(text: &str, line: &str, by: &str) -> String {
    assert!(text.contains(line), "{text}");
    text.replace(line, by)
}

#[test]
fn a_reduction_is_tuned_and_a_corrupt_truncated_or_other_versions_file_ignored() {
    let Some((_one_at_a_time, _)) = setup(false) else {
        return;
    };
    let dev = fresh_device();
    let n = 3000;
    let r = dot::opencl::tune(&dev, dot::Sizes { N: n }, BUDGET).unwrap();
    assert!(r.file.exists(), "{r:?}");
    run_dot(&dev, n);
    let whole = std::fs::read_to_string(&r.file).unwrap();
    let version = format!("\nmdh {}\n", env!("CARGO_PKG_VERSION"));
    let bound = bind_sizes(dot::desc(), &[n]).unwrap();
    let bytes = whole.as_bytes();
    for bad in [
        b"\x00\x01 not a cache file".to_vec(),
        bytes[..bytes.len() / 2].to_vec(),
        bytes[..bytes.len() - 5].to_vec(),
        edited(&whole, &version, "\nmdh 0.0.1\n").into_bytes(),
    ] {
        std::fs::write(&r.file, &bad).unwrap();
        let bad = String::from_utf8_lossy(&bad);
        // A fresh device's calls run the configured choice, correctly.
        let fresh = fresh_device();
        let call = dot::opencl::call(&fresh, None, &[n], &[n, n], &[1]).unwrap();
        let configured = dot::opencl::job(&bound, None, fresh.name(), fresh.limits())
            .unwrap()
            .unwrap();
        assert_eq!(
            call.ready().unwrap().job().source,
            configured.source,
            "{bad}"
        );
        run_dot(&fresh, n);
        // Tuning again replaces the file with a whole one of this mdh.
        let again = dot::opencl::tune(&fresh, dot::Sizes { N: n }, Duration::ZERO).unwrap();
        assert_eq!(again.file, r.file);
        let text = std::fs::read_to_string(&r.file).unwrap();
        assert!(
            text.contains(&version) && text.ends_with("\nend\n"),
            "{text}"
        );
    }
}

#[test]
fn processes_tuning_one_call_at_once_leave_one_whole_file() {
    let Some((_one_at_a_time, dir)) = setup(false) else {
        return;
    };
    let dir = dir.join("race");
    let children: Vec<_> = (0..3)
        .map(|_| {
            child_command("tunes_dot_as_others_do", &dir, &[])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        finished("tunes_dot_as_others_do", c.wait_with_output().unwrap());
    }
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|f| f.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "one file, no temporary ones: {files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.starts_with("# mdh run-time tuning cache") && text.ends_with("\nend\n"),
        "{text}"
    );
    // And a later process runs what it keeps.
    child(
        "tunes_dot_as_others_do",
        &dir,
        &[("MDH_TUNE_ONLY_RUN", "1")],
    );
}

/// Run by [`processes_tuning_one_call_at_once_leave_one_whole_file`] in
/// processes of their own, at once: tunes dot (reading the file the others
/// write), then runs it; only runs it under `MDH_TUNE_ONLY_RUN`.
#[test]
fn tunes_dot_as_others_do() {
    let Some((_one_at_a_time, dir)) = setup(true) else {
        return;
    };
    let dev = fresh_device();
    if std::env::var_os("MDH_TUNE_ONLY_RUN").is_none() {
        for _ in 0..2 {
            let r = dot::opencl::tune(&dev, dot::Sizes { N: 1800 }, Duration::from_millis(300))
                .unwrap();
            assert!(r.file.starts_with(&dir), "{r:?}");
        }
    }
    run_dot(&dev, 1800);
}

#[test]
fn autotuned_calls_run_without_a_cache_folder_and_say_so_once() {
    let Some((_one_at_a_time, dir)) = setup(false) else {
        return;
    };
    // A folder that cannot be made (its parent is a file), and none at all
    // (no HOME, no XDG_CACHE_HOME, no MDH_TUNE_CACHE).
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let unmakeable = file.join("cache");
    let pocl_cache = dir.join("pocl");
    for cache in [Some(unmakeable.to_str().unwrap()), None] {
        let mut c = child_command(
            "autotuned_calls_without_a_cache",
            &dir,
            &[
                ("MDH_AUTOTUNE", "1"),
                ("MDH_AUTOTUNE_BUDGET", "0.3"),
                // PoCL keeps its kernels under HOME otherwise.
                ("POCL_CACHE_DIR", pocl_cache.to_str().unwrap()),
            ],
        );
        c.env_remove("MDH_TUNE_CACHE").env_remove("XDG_CACHE_HOME");
        match cache {
            Some(d) => c.env("MDH_TUNE_CACHE", d),
            None => c.env_remove("HOME"),
        };
        let said = finished("autotuned_calls_without_a_cache", c.output().unwrap());
        let warning = "the plans found run in this process only";
        assert_eq!(said.matches(warning).count(), 1, "{cache:?}:\n{said}");
        assert_eq!(
            said.matches("MDH_AUTOTUNE: tuning dot").count(),
            2,
            "{said}"
        );
    }
}

/// Run by [`autotuned_calls_run_without_a_cache_folder_and_say_so_once`] in
/// a process of its own without a usable cache folder: two autotuned
/// calls run correctly, and `tune` is an `Err` that says why.
#[test]
fn autotuned_calls_without_a_cache() {
    let Some((_one_at_a_time, _)) = setup(true) else {
        return;
    };
    let dev = fresh_device();
    run_dot(&dev, 1500);
    run_dot(&dev, 1700);
    let e = dot::opencl::tune(&dev, dot::Sizes { N: 1500 }, Duration::ZERO).unwrap_err();
    let e = e.to_string();
    assert!(e.contains("tuning cache"), "{e}");
}
