//! Tuning for OpenCL and CUDA devices. GPU plans are not compiled into
//! Rust: the kernel's source template (the macro's own generator,
//! [`mdh_core::codegen::gpu::template`]) is completed per candidate by the facade's
//! [`mdh::gpu::job`], compiled by the runtime (OpenCL program build or
//! NVRTC, both cached) and launched in this process on untyped device
//! buffers ([`mdh::gpu::Loaded`]), so a candidate costs a compilation and a few runs,
//! no Rust build.

use std::path::Path;

use mdh::gpu::bench::{Bench, Status};
use mdh::gpu::space::GpuSpace;
use mdh::gpu::{local_bytes, CallDesc, DeviceLimits, GpuEntry, MainResources, RawDevice};
use mdh::reference::{kernel_info, Buffer};
use mdh_core::backend::Backend;
use mdh_core::codegen::c_expr::Dialect;
use mdh_core::config::gpu_entry_yaml;
use mdh_core::desc::KernelDesc;
use mdh_core::gpu_plan::GpuPlan;
use mdh_core::plan::elem_bytes;
use mdh_core::Checked;

use crate::gpu_model::{predict, Bytes, GpuModel, Resources};
use crate::log::ModelNote;
use crate::search::space::Space;
use crate::source;
use crate::tuning::{configured_entries, skip_tuned, Options, Target, Tuning, RETIME_ROUNDS};

/// `--device` for OpenCL: an index or a part of the name.
pub fn open_opencl(sel: Option<&str>) -> Result<mdh::opencl::Device, String> {
    use mdh::opencl::Device;
    let d = match sel {
        None => Device::first(),
        Some(s) => match s.parse::<usize>() {
            Ok(i) => Device::by_index(i),
            Err(_) => Device::by_name(s),
        },
    };
    d.map_err(|e| format!("--backend opencl: {e}"))
}

/// `--device` for CUDA: an ordinal or a part of the name.
pub fn open_cuda(sel: Option<&str>) -> Result<mdh::cuda::Device, String> {
    use mdh::cuda::Device;
    let err = |e: mdh::Error| format!("--backend cuda: {e}");
    match sel {
        None => Device::first().map_err(err),
        Some(s) => match s.parse::<usize>() {
            Ok(i) => Device::by_index(i).map_err(err),
            Err(_) => {
                let mut names = Vec::new();
                for i in 0..Device::count() {
                    let d = Device::by_index(i).map_err(err)?;
                    if d.name().to_lowercase().contains(&s.to_lowercase()) {
                        return Ok(d);
                    }
                    names.push(d.name().to_string());
                }
                Err(format!(
                    "--device {s:?}: no CUDA device name contains it; the devices are {names:?}"
                ))
            }
        },
    }
}

/// The bench of `k` at `sizes` on `dev` (the facade's, as run-time tuning
/// measures with): deterministic data, and the reference interpreter's
/// results where it is a reference (else the default plan's, measured
/// first, give them).
fn bench<'a, D: RawDevice>(
    dev: &'a D,
    k: &Checked,
    sizes: &[usize],
    dialect: Dialect,
) -> Result<Bench<'a, D>, String> {
    let desc: &'static KernelDesc = Box::leak(Box::new(KernelDesc::from_kernel(k)));
    let info = kernel_info(k, dialect);
    let mut bench = Bench::new(dev, desc, info, sizes).map_err(|e| format!("--size: {e}"))?;
    if unchecked_because(k, &bench).is_none() {
        let mut want = bench.init.clone();
        mdh::reference::run(k, sizes, &bench.inputs, &mut want, &bench.params)
            .map_err(|e| format!("the reference interpreter fails at these sizes: {e}"))?;
        bench.want = Some(want);
    }
    Ok(bench)
}

/// Why the reference interpreter is no reference at the bench's sizes, if
/// it is not (see [`crate::reference`]).
fn unchecked_because<D: RawDevice>(k: &Checked, bench: &Bench<'_, D>) -> Option<String> {
    crate::reference::interpreter_unfit(k, bench.desc, &bench.bound.extents)
}

/// The GPU plan that the config in `out_dir` (the file the result is
/// merged into) dispatches to for `backend` (`opencl` or `cuda`) in the
/// call `unconfigured` (whose entries are left for the config's): the
/// entry that the generated wrappers' [`CallDesc::choose`] takes (nearest
/// sizes among those for this device that fit it), if it runs something
/// other than the fitted default (`None`: the default runs).
fn configured_gpu_plan(
    k: &Checked,
    out_dir: &Path,
    backend: &str,
    unconfigured: CallDesc<'_>,
) -> Result<Option<GpuPlan>, String> {
    let Some(entries) = configured_entries(k, out_dir)? else {
        return Ok(None);
    };
    let list = Backend::named(backend).map_or(&[][..], |b| entries.gpu(b));
    // The wrappers' entries are constants; these live as long as the run.
    let entries: Vec<GpuEntry> = list
        .iter()
        .cloned()
        .map(|e| GpuEntry {
            plan: e.plan,
            device: Box::leak(e.device.into_boxed_str()),
            arch: e.arch,
            sizes: e.sizes.map(|s| &*Box::leak(s.into_boxed_slice())),
        })
        .collect();
    let call = CallDesc {
        entries: &entries,
        ..unconfigured
    };
    let chosen = call.choose().r;
    if chosen == unconfigured.choose().r {
        return Ok(None);
    }
    let CallDesc { desc, bound, .. } = unconfigured;
    Ok(entries
        .into_iter()
        .find(|e| {
            e.plan.validate(desc).is_ok() && e.plan.resolve(&desc.kinds, &bound.extents) == chosen
        })
        .map(|e| e.plan))
}

/// A measured candidate's line: its time next to the model's.
fn describe(plan: &GpuPlan, time_s: f64, n: &ModelNote) -> String {
    let mut s = format!(
        "{:>9.1} µs measured, {:>9.1} µs predicted ({}, {} blocks per unit, {} waves)",
        time_s * 1e6,
        n.predicted_s * 1e6,
        n.limiter,
        n.blocks_per_unit,
        n.waves
    );
    if let (Some(r), Some(sp)) = (n.registers, n.spill_bytes) {
        s += &format!(", {r} registers, {sp} spill bytes");
    }
    s + &format!(": {plan:?}")
}

/// Tunes `found`'s kernel for the device `dev` of `target.backend`.
pub fn tune<D: RawDevice>(
    opts: &Options,
    found: &source::Found,
    target: &mut Target,
    dev: &D,
    work_dir: &Path,
) -> Result<(), String> {
    let k = &found.kernel;
    let sizes = target.sizes;
    target.device = dev.device_name().to_string();
    if skip_tuned(opts, target)? {
        return Ok(());
    }
    let backend = Backend::named(target.backend)
        .ok_or_else(|| format!("unknown backend `{}`", target.backend))?;
    let mut bench = bench(dev, k, sizes, backend.dialect())?;
    let (desc, info, bound) = (bench.desc, bench.info, bench.bound.clone());
    let lim: DeviceLimits = dev.limits();
    let space = GpuSpace::new(desc, bound.clone(), info, lim);
    target.announce(&found.file, space.params.len(), space.size(), true);
    let compute = dev.compute();
    let known = |n: Option<String>| n.unwrap_or_else(|| "unknown".into());
    eprintln!(
        "device limits: {} work-items per work-group, {} bytes of local memory; compute units: {}, clock: {}",
        lim.max_items,
        lim.local_bytes,
        known(compute.compute_units.map(|n| n.to_string())),
        known(compute.clock_hz.map(|f| format!("{:.0} MHz", f / 1e6))),
    );
    if let Some(why) = unchecked_because(k, &bench) {
        target.checked_against = format!("the default plan's result ({why})");
    }
    eprintln!("results are checked against {}", target.checked_against);
    let default = mdh::gpu::defaults::default_plan(desc, &bound, info, dev.device_name(), lim);
    let unconfigured = CallDesc {
        desc,
        bound: &bound,
        info,
        entries: &[],
        device: dev.device_name(),
        lim,
    };
    let configured = configured_gpu_plan(k, &target.out_dir, target.backend, unconfigured)?;
    // The throughput model: candidates that cannot beat the best measured
    // are not compiled; the others are measured and compared with its
    // prediction.
    let model = GpuModel::of(dev.device_name(), compute);
    let bytes_of = |bufs: &[Buffer]| -> f64 {
        bufs.iter()
            .map(|b| (b.len() * elem_bytes(b.ty())) as f64)
            .sum()
    };
    let bytes = Bytes {
        inputs: bytes_of(&bench.inputs),
        outputs: bytes_of(&bench.init),
    };
    eprintln!(
        "throughput model: {} ({} units at {:.0} MHz)",
        model.name,
        model.units,
        model.clock_hz / 1e6
    );
    let extents = bound.extents.clone();
    let note = |plan: &GpuPlan, res: Option<MainResources>| {
        let shared = local_bytes(desc, info, &bound, &plan.resolve(&desc.kinds, &extents));
        let r = res.map(|r| Resources {
            registers: r.registers,
            shared_bytes: r.shared_bytes,
        });
        let p = predict(k, plan, &extents, bytes, &model, r, shared);
        let note = ModelNote {
            device: model.name.to_string(),
            predicted_s: p.time_s,
            limiter: p.limiter.to_string(),
            blocks_per_unit: p.blocks_per_unit,
            waves: p.waves,
            registers: res.map(|r| r.registers),
            spill_bytes: res.and_then(|r| r.spill_bytes),
            shared_bytes: res.map(|r| r.shared_bytes),
        };
        (p.bound_s, note)
    };
    let lower = |plan: &GpuPlan| note(plan, None).0;
    let mut t = Tuning::new(space, &default, target, work_dir, opts, Box::new(lower))?;
    if t.search.best.is_some() && bench.want.is_none() {
        // A resumed run compares with the default plan's result: run it
        // again (not recorded: it is in the log).
        let o = bench.measure(&default, 0.0);
        if o.status != Status::Ok {
            return Err(format!(
                "the default plan does not run: {}",
                o.error.unwrap_or_default()
            ));
        }
    }
    t.search(default, configured, opts.batch, |t, batch| {
        for p in batch {
            let slow = 3.0 * t.best_s();
            let o = bench.measure(&p.plan, slow);
            match (o.status, p.technique) {
                (Status::Wrong, _) => t.say(format!(
                    "candidate {:?} computes wrong results: {}",
                    p.plan,
                    o.error.as_deref().unwrap_or("")
                )),
                (Status::Failed, None) => {
                    return Err(format!(
                        "the default plan {:?} fails on {}: {}",
                        p.plan,
                        dev.device_name(),
                        o.error.unwrap_or_default()
                    ))
                }
                _ => {}
            }
            let (_, model_note) = note(&p.plan, o.resources);
            if let Some(time) = o.time_s {
                t.say(describe(&p.plan, time, &model_note));
            }
            let mut c = p.candidate(o.status.into(), o.time_s, o.error, t.elapsed());
            c.model = Some(model_note);
            t.record(c)?;
        }
        Ok(())
    })?;
    let retime = |best: &GpuPlan, today: &GpuPlan| {
        let mut s = bench.interleave(&[best, today], RETIME_ROUNDS)?.into_iter();
        match (s.next(), s.next()) {
            (Some(best), Some(today)) => Ok((best, today)),
            _ => Err("re-timing gave no samples".to_string()),
        }
    };
    t.finish(target, retime, |plan, prov| {
        // A CUDA entry records its architecture: it serves the other
        // devices of it too (`mdh::gpu::DeviceMatch`).
        gpu_entry_yaml(
            k,
            target.backend,
            &target.device,
            lim.cuda_arch,
            Some(sizes),
            plan,
            prov,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mdh::gpu::bind_sizes;
    use mdh::gpu::GpuDevice;
    use mdh::reference::Value;

    #[test]
    fn the_configured_plan_is_the_entry_the_wrappers_choose() {
        let k = mdh_core::fixtures::matvec();
        let desc: &'static KernelDesc = Box::leak(Box::new(KernelDesc::from_kernel(&k)));
        let info = kernel_info(&k, Dialect::Cuda);
        let lim = DeviceLimits {
            max_items: 512,
            local_bytes: 48 * 1024,
            cuda_arch: None,
            compute: Default::default(),
        };
        let h100 = "NVIDIA H100 80GB HBM3";
        let dir = crate::tuning::tests::TempDir::new("configured-gpu");
        let at = |sizes: &[usize], backend: &str, device: &str| {
            let bound = bind_sizes(desc, sizes).unwrap();
            let call = CallDesc {
                desc,
                bound: &bound,
                info,
                entries: &[],
                device,
                lim,
            };
            configured_gpu_plan(&k, &dir.0, backend, call).unwrap()
        };
        assert_eq!(at(&[1024, 1024], "cuda", h100), None, "no config");
        let plan = |items: [usize; 2], tile: [usize; 2], local: [bool; 2]| GpuPlan {
            items: items.to_vec(),
            tile: tile.to_vec(),
            local: local.to_vec(),
            ..GpuPlan::base(2, 2)
        };
        let small = plan([4, 32], [4, 256], [false, false]);
        let large = plan([16, 32], [16, 8192], [false, true]);
        let ocl = plan([8, 16], [8, 512], [false, false]);
        // Needs 1024 work-items per group, the device allows 512: never
        // chosen here.
        let unfit = plan([32, 32], [32, 256], [false, false]);
        let entry = |backend: &str, device: &str, sizes: &[usize], p: &GpuPlan| {
            gpu_entry_yaml(&k, backend, device, None, Some(sizes), p, &[])
        };
        let bound = bind_sizes(desc, &[1024, 1024]).unwrap();
        let default = mdh::gpu::defaults::default_plan(desc, &bound, info, h100, lim);
        dir.config(
            &k,
            &[
                entry("cuda", h100, &[4096, 4096], &small),
                entry("cuda", h100, &[8192, 8192], &large),
                entry("cuda", h100, &[1024, 1024], &unfit),
                entry("opencl", h100, &[1024, 1024], &ocl),
                entry("cuda", "A100", &[1024, 1024], &large),
                entry("cuda", "*", &[128, 128], &default),
            ],
        );
        assert!(![&small, &large, &ocl].contains(&&default));
        // The nearest sizes that fit the device, for this device's name.
        assert_eq!(at(&[1024, 1024], "cuda", h100), Some(small.clone()));
        assert_eq!(at(&[16384, 8192], "cuda", h100), Some(large.clone()));
        assert_eq!(at(&[1024, 1024], "opencl", h100), Some(ocl));
        assert_eq!(
            at(&[1024, 1024], "cuda", "NVIDIA A100-SXM4-40GB"),
            Some(large)
        );
        // Only the `*` entry applies, and it is the default: `None`.
        assert_eq!(at(&[1024, 1024], "cuda", "Tesla T4"), None);
    }

    /// The first OpenCL device, or `None` (said on stdout) without one
    /// (a failure where `MDH_REQUIRE_OPENCL` is set, as scripts/test-all.sh does),
    /// with a guard that keeps the tests that use it from running at the
    /// same time: two devices opened and building programs in parallel
    /// threads made PoCL (Debian 12's, with an empty kernel cache, as in
    /// CI) crash the test process about one run in five.
    fn opencl_or_skip() -> Option<(std::sync::MutexGuard<'static, ()>, mdh::opencl::Device)> {
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let guard = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dev = mdh::opencl::Device::first()
            .map_err(|e| {
                let why = format!("no OpenCL device ({e})");
                assert!(
                    std::env::var_os("MDH_REQUIRE_OPENCL").is_none(),
                    "MDH_REQUIRE_OPENCL is set but {why}"
                );
                println!("skipped: {why} (set MDH_REQUIRE_OPENCL=1 to make this a failure)");
            })
            .ok()?;
        Some((guard, dev))
    }

    #[test]
    fn a_candidate_with_wrong_results_is_rejected() {
        let Some((_one_at_a_time, dev)) = opencl_or_skip() else {
            return;
        };
        let k = mdh_core::fixtures::matvec();
        let mut bench = bench(&dev, &k, &[64, 64], Dialect::OpenCl).unwrap();
        let plan = mdh::gpu::defaults::default_plan(
            bench.desc,
            &bench.bound,
            bench.info,
            dev.device_name(),
            dev.limits(),
        );
        let o = bench.measure(&plan, f64::INFINITY);
        assert_eq!(o.status, Status::Ok, "{:?}", o.error);
        assert!(o.time_s.is_some_and(|t| t > 0.0));
        // Another expected result stands for a kernel that computes wrong
        // results: it is never timed.
        if let Some(want) = &mut bench.want {
            want[0].set(3, Value::F32(-1.0));
        }
        let o = bench.measure(&plan, f64::INFINITY);
        assert_eq!(o.status, Status::Wrong);
        assert!(o.time_s.is_none());
        assert!(o.error.is_some_and(|e| e.contains("output #0[3]")));
        // A plan the device cannot run fails with the facade's reason.
        let huge = GpuPlan {
            items: vec![2048, 1],
            ..plan
        };
        let o = bench.measure(&huge, f64::INFINITY);
        assert_eq!(o.status, Status::Failed);
    }

    #[test]
    fn measured_times_are_above_their_lower_bounds() {
        let Some((_one_at_a_time, dev)) = opencl_or_skip() else {
            return;
        };
        let k = mdh_core::fixtures::matvec();
        let sizes = [256, 256];
        let mut bench = bench(&dev, &k, &sizes, Dialect::OpenCl).unwrap();
        let machine = GpuModel::of(dev.device_name(), dev.compute());
        assert!(machine.units >= 1);
        let input_bytes = 4.0 * (256.0 * 256.0 + 256.0);
        let default = mdh::gpu::defaults::default_plan(
            bench.desc,
            &bench.bound,
            bench.info,
            dev.device_name(),
            dev.limits(),
        );
        let plan = |groups: [usize; 2], items: [usize; 2], tile: [usize; 2]| GpuPlan {
            groups: groups.to_vec(),
            items: items.to_vec(),
            tile: tile.to_vec(),
            ..GpuPlan::base(2, 2)
        };
        let alone = plan([1, 1], [1, 1], [1, 1]);
        let extents = bench.bound.extents.clone();
        let bound_of = |p: &GpuPlan, inputs: f64| {
            let bytes = Bytes {
                inputs,
                outputs: 0.0,
            };
            predict(&k, p, &extents, bytes, &machine, None, 0).bound_s
        };
        // One work-item for the whole call is bounded above any plan that
        // spreads the points (compute alone: a work-item does at most half
        // of what a unit does).
        assert!(bound_of(&alone, 0.0) >= 2.0 * bound_of(&default, 0.0));
        for p in [
            default.clone(),
            alone,
            plan([4, 1], [16, 4], [16, 64]),
            plan([0, 0], [32, 8], [32, 256]),
        ] {
            let bound = bound_of(&p, input_bytes);
            let o = bench.measure(&p, f64::INFINITY);
            assert_eq!(o.status, Status::Ok, "{p:?}: {:?}", o.error);
            let time = o.time_s.unwrap();
            assert!(
                bound > 0.0 && time >= bound,
                "{p:?}: {time} s, bound {bound} s"
            );
        }
    }
}
