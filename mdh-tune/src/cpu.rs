//! Tuning for this CPU: candidates are compiled in batches into a scratch
//! crate ([`crate::scratch`]), one renamed copy of the kernel per
//! candidate, and timed by its harness; results are checked against the
//! reference interpreter or the default plan's.

use std::path::Path;
use std::time::Instant;

use mdh_core::config::cpu_entry_yaml;
use mdh_core::desc::KernelDesc;
use mdh_core::plan::{elem_bytes, CpuPlan};
use mdh_core::Checked;

use crate::log::Status;
use crate::space::{CpuSpace, Space};
use crate::tuning::{configured_entries, skip_tuned, Options, Target, Tuning};
use crate::{bound, reference, scratch, source};

/// The CPU plan that the config in `out_dir` dispatches to at `sizes` on
/// this CPU, if an entry of it does (`None`: the default plan runs, as
/// when no entry is for `*` or this CPU).
pub(crate) fn configured_cpu_plan(
    k: &Checked,
    out_dir: &Path,
    sizes: &[usize],
) -> Result<Option<CpuPlan>, String> {
    let Some(entries) = configured_entries(k, out_dir)? else {
        return Ok(None);
    };
    let mut list: Vec<(&str, Option<&[usize]>)> = entries
        .cpu
        .iter()
        .map(|e| (e.device.as_str(), e.sizes.as_deref()))
        .collect();
    // The macro compiles the default plan last, for `*` and any sizes
    // (`mdh_core::config::plans`), unless an entry already is that.
    if !list.contains(&("*", None)) {
        list.push(("*", None));
    }
    Ok(entries
        .cpu
        .get(mdh::cpu::nearest_plan(&list, sizes))
        .map(|e| e.plan.clone()))
}

/// Tunes `found`'s kernel (in the crate of `manifest`) for this CPU.
pub fn tune(
    opts: &Options,
    manifest: &Path,
    found: &source::Found,
    target: &mut Target,
) -> Result<(), String> {
    target.device = mdh::cpu::cpu_name().to_string();
    if skip_tuned(opts, target)? {
        return Ok(());
    }
    let k = &found.kernel;
    let sizes = target.sizes;
    let space = CpuSpace::new(k, sizes)?;
    let desc = KernelDesc::from_kernel(k);
    let input_bytes: f64 = k
        .inputs
        .iter()
        .zip(desc.inputs.iter())
        .map(|(b, d)| {
            let n: f64 = d
                .shape
                .iter()
                .map(|c| KernelDesc::eval_size(c, sizes).unwrap_or(0) as f64)
                .product();
            n * elem_bytes(b.ty) as f64
        })
        .sum();
    target.announce(&found.file, space.params.len(), space.size(), false);
    let ws = scratch::Workspace::of(manifest)?;
    let mut scratch = scratch::Scratch::new(&ws, k, &found.tokens, sizes)?;
    let extents: Vec<usize> = desc
        .dims
        .iter()
        .map(|c| KernelDesc::eval_size(c, sizes).unwrap_or(0))
        .collect();
    if let Some(why) = reference::interpreter_unfit(k, &desc, &extents) {
        scratch.check_against_default();
        target.checked_against = format!("the default plan's result ({why})");
    }
    eprintln!("results are checked against {}", target.checked_against);
    let tag = &target.tag;
    let reference = scratch.dir().join(format!("reference{tag}.txt"));
    let machine = bound::Machine {
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let extents = space.extents.clone();
    let lower = move |plan: &CpuPlan| bound::lower_bound(k, plan, &extents, input_bytes, &machine);
    let default = CpuPlan::default_for(k);
    let configured = configured_cpu_plan(k, &target.out_dir, sizes)?;
    let mut t = Tuning::new(
        space,
        &default,
        target,
        scratch.dir(),
        opts,
        Box::new(lower),
    )?;

    // The dependencies build once, before the clock starts.
    eprintln!(
        "building the scratch crate's dependencies in {} (once; not counted in the budget)",
        ws.target_dir.join("mdh-tune").display()
    );
    scratch.build(&scratch::Batch::Plans(&[]))?;

    t.search(default, configured, opts.batch, |t, batch| {
        let began = Instant::now();
        let plans: Vec<CpuPlan> = batch.iter().map(|p| p.plan.clone()).collect();
        match scratch.build(&scratch::Batch::Plans(&plans)) {
            Err(e) => {
                if batch[0].technique.is_none() {
                    return Err(e);
                }
                t.say(format!(
                    "a batch failed to build; its candidates are recorded as failed:\n{e}"
                ));
                for p in batch {
                    let c = p.candidate(Status::Failed, None, Some(e.clone()), t.elapsed());
                    t.record(c)?;
                }
            }
            Ok(binary) => {
                // A candidate 3× slower than the best in its checked run is
                // not repeated.
                let slow = t.best.as_ref().map_or(f64::INFINITY, |b| 3.0 * b.1);
                let mut measured = vec![false; batch.len()];
                scratch.run(&binary, None, slow, &reference, |m| {
                    let i: usize = m.kernel.trim_start_matches('c').parse().map_err(|_| {
                        format!("the harness reported an unknown kernel `{}`", m.kernel)
                    })?;
                    let p = batch.get(i).ok_or_else(|| {
                        format!("the harness reported an unknown kernel `{}`", m.kernel)
                    })?;
                    let status = match m.status.as_str() {
                        "ok" => Status::Ok,
                        "wrong" => Status::Wrong,
                        _ => Status::Failed,
                    };
                    if status == Status::Wrong {
                        t.say(format!(
                            "candidate {:?} computes wrong results: {}",
                            p.plan,
                            m.error.as_deref().unwrap_or("")
                        ));
                    }
                    measured[i] = true;
                    t.record(p.candidate(status, m.time_s, m.error, t.elapsed()))
                })?;
                if let Some(i) = measured.iter().position(|m| !m) {
                    return Err(format!(
                        "the harness did not report candidate c{i}; see {}",
                        scratch.dir().display()
                    ));
                }
            }
        }
        t.say(format!(
            "batch of {}: built and measured in {:.0}s",
            batch.len(),
            began.elapsed().as_secs_f64()
        ));
        Ok(())
    })?;
    t.finish(target, |plan, prov| {
        cpu_entry_yaml(k, &target.device, Some(sizes), plan, prov)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::tests::TempDir;

    #[test]
    fn the_configured_cpu_plan_is_the_one_the_macro_dispatches_to() {
        let k = mdh_core::fixtures::matvec();
        let dir = TempDir::new("configured-cpu");
        assert_eq!(configured_cpu_plan(&k, &dir.0, &[64, 64]), Ok(None));
        let mut tuned = CpuPlan::default_for(&k);
        tuned.cor = vec![2, 1];
        let mut elsewhere = tuned.clone();
        elsewhere.cor = vec![1, 2];
        let entry = |device: &str, sizes: Option<&[usize]>, plan: &CpuPlan| {
            cpu_entry_yaml(&k, device, sizes, plan, &[])
        };
        // Only another CPU's entry: the macro's default plan runs here.
        dir.config(&k, &[entry("Another CPU", Some(&[64, 64]), &elsewhere)]);
        assert_eq!(configured_cpu_plan(&k, &dir.0, &[64, 64]), Ok(None));
        // An entry for every CPU, tuned for other sizes: the nearest.
        dir.config(
            &k,
            &[
                entry("Another CPU", Some(&[64, 64]), &elsewhere),
                entry("*", Some(&[4096, 4096]), &tuned),
            ],
        );
        assert_eq!(
            configured_cpu_plan(&k, &dir.0, &[64, 64]),
            Ok(Some(tuned.clone()))
        );
    }
}
