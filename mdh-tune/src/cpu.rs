//! Tuning for this CPU: candidates are compiled in batches into a scratch
//! crate ([`crate::scratch`]), one renamed copy of the kernel per
//! candidate, and timed by its harness; results are checked against the
//! reference interpreter or the default plan's.

use std::cell::Cell;
use std::path::Path;
use std::time::Instant;

use mdh::machine::{explain, host, ignore_device_entries, rank, Host, Isa, PlanEntry};
use mdh_core::config::{cpu_entry_yaml, with_default};
use mdh_core::desc::KernelDesc;
use mdh_core::plan::{elem_bytes, CpuPlan};
use mdh_core::Checked;

use crate::log::Status;
use crate::scratch::{Measured, Timing};
use crate::search::space::Space;
use crate::space::CpuSpace;
use crate::tuning::{
    configured_entries, skip_tuned, verdict, Options, Target, Tuning, RETIME_ROUNDS,
};
use crate::{bound, reference, scratch, source};

/// The CPU plan that the config in `out_dir` dispatches to at `sizes` on
/// `host` (`None`: the default plan runs, as when no entry is for this
/// machine or any), as it runs there (an entry narrowed to AVX2's
/// registers, narrowed), and why, as `MDH_EXPLAIN=1` would say it.
pub(crate) fn configured_cpu_plan(
    k: &Checked,
    out_dir: &Path,
    sizes: &[usize],
    host: &Host,
    ignore_device_entries: bool,
) -> Result<(Option<CpuPlan>, String), String> {
    let entries = with_default(k, configured_entries(k, out_dir)?.unwrap_or_default());
    let list: Vec<PlanEntry<'_>> = entries.cpu.iter().map(|e| e.plan_entry(k)).collect();
    let choice = rank(&list, sizes, host, ignore_device_entries);
    let names: Vec<String> = k.size_params.iter().map(|p| p.to_string()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let why = explain(
        &k.name.to_string(),
        &names,
        &list,
        sizes,
        host,
        ignore_device_entries,
        choice,
    );
    let plan = choice
        .map(|c| &entries.cpu[c.index])
        .filter(|e| e.line != 0)
        .map(|e| match e.narrowed_for_avx2(k) {
            Some(narrowed) if host.machine.isa == Isa::Avx2 => narrowed,
            _ => e.plan.clone(),
        });
    Ok((plan, why))
}

/// Which candidate of a batch of `n` a measurement is of (`cN`).
fn candidate(m: &Measured, n: usize) -> Result<usize, String> {
    m.kernel
        .trim_start_matches('c')
        .parse()
        .ok()
        .filter(|&i| i < n)
        .ok_or_else(|| format!("the harness reported an unknown kernel `{}`", m.kernel))
}

/// The bytes of `k`'s inputs at `sizes`.
fn input_bytes(k: &Checked, desc: &KernelDesc, sizes: &[usize]) -> f64 {
    k.inputs
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
        .sum()
}

/// The winner and today's plan in one more build, timed in turns, with the
/// winner also in a body for exactly the tuned sizes (`exact`): the
/// winner's samples (of the exact body where it is faster beyond the
/// noise, then `exact` is set) and today's.
fn retime(
    scratch: &scratch::Scratch,
    reference: &Path,
    best: &CpuPlan,
    today: &CpuPlan,
    exact: &Cell<bool>,
) -> Result<(Vec<f64>, Vec<f64>), String> {
    let best_exact = CpuPlan {
        exact: true,
        ..best.clone()
    };
    let plans = [best.clone(), today.clone(), best_exact];
    let binary = scratch.build(&scratch::Batch::Plans(&plans))?;
    let mut samples = [Vec::new(), Vec::new(), Vec::new()];
    let rounds = Timing::Interleaved {
        rounds: RETIME_ROUNDS,
    };
    let names = [
        "the best plan",
        "the plan that runs today",
        "the best plan's body for exactly these sizes",
    ];
    scratch.run(&binary, None, rounds, reference, |m| {
        let i = candidate(&m, plans.len())?;
        if m.status != "ok" {
            return Err(format!(
                "re-timing: {} no longer runs correctly ({}): {}",
                names[i],
                m.status,
                m.error.unwrap_or_default()
            ));
        }
        samples[i] = m.samples;
        Ok(())
    })?;
    let [general, today, exact_body] = samples;
    // An exact body costs compile time in every build of the user's crate:
    // kept only where it wins beyond the noise.
    let v = verdict(&exact_body, &general);
    eprintln!(
        "a body for exactly these sizes (`exact`), against the general one: {}",
        v.why
    );
    exact.set(v.write);
    Ok((if exact.get() { exact_body } else { general }, today))
}

/// Tunes `found`'s kernel (in the crate of `manifest`) for this CPU.
pub fn tune(
    opts: &Options,
    manifest: &Path,
    found: &source::Found,
    target: &mut Target,
) -> Result<(), String> {
    let host = host();
    target.device.clone_from(&host.model);
    target.machine = Some(host.machine);
    if skip_tuned(opts, target)? {
        return Ok(());
    }
    let k = &found.kernel;
    let sizes = target.sizes;
    let space = CpuSpace::new(k, sizes, host.machine.isa)?;
    let desc = KernelDesc::from_kernel(k);
    let input_bytes = input_bytes(k, &desc, sizes);
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
        threads: host.machine.cores,
    };
    let extents = space.extents.clone();
    let lower = move |plan: &CpuPlan| bound::lower_bound(k, plan, &extents, input_bytes, &machine);
    // The default plan as this machine's instruction set runs it.
    let default = CpuPlan::default_for_isa(k, host.machine.isa);
    let (configured, why) =
        configured_cpu_plan(k, &target.out_dir, sizes, host, ignore_device_entries())?;
    eprintln!("runs here today: {why}");
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
                let slow = 3.0 * t.best_s();
                let mut measured = vec![false; batch.len()];
                scratch.run(
                    &binary,
                    None,
                    Timing::OneByOne { slow_s: slow },
                    &reference,
                    |m| {
                        let i = candidate(&m, batch.len())?;
                        let p = &batch[i];
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
                    },
                )?;
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
    let exact = Cell::new(false);
    let retime =
        |best: &CpuPlan, today: &CpuPlan| retime(&scratch, &reference, best, today, &exact);
    t.finish(target, retime, |plan, prov| {
        let plan = CpuPlan {
            exact: exact.get(),
            ..plan.clone()
        };
        cpu_entry_yaml(
            k,
            &target.device,
            target.machine.as_ref(),
            Some(sizes),
            &plan,
            prov,
        )
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
        let here = mdh::machine::Machine {
            isa: mdh::machine::Isa::Avx2,
            cores: 2,
            l1d: Some(32 << 10),
            l2: Some(512 << 10),
            l3: Some(32 << 20),
        };
        let host = Host {
            model: "This CPU".into(),
            machine: here,
            bf16_pairs: false,
        };
        let plan = |ignore: bool| {
            configured_cpu_plan(&k, &dir.0, &[64, 64], &host, ignore).map(|(p, _)| p)
        };
        assert_eq!(plan(false), Ok(None));
        // Plans whose register tile AVX2's registers hold (this machine's).
        let mut tuned = CpuPlan::default_for_isa(&k, mdh::machine::Isa::Avx2);
        tuned.cor = vec![2, 1];
        let mut elsewhere = tuned.clone();
        elsewhere.cor = vec![1, 2];
        let mut near = tuned.clone();
        near.cor = vec![2, 2];
        let entry =
            |device: &str,
             m: Option<&mdh::machine::Machine>,
             sizes: Option<&[usize]>,
             plan: &CpuPlan| { cpu_entry_yaml(&k, device, m, sizes, plan, &[]) };
        let avx512 = mdh::machine::Machine {
            isa: mdh::machine::Isa::Avx512,
            ..here
        };
        let bigger = mdh::machine::Machine { cores: 4, ..here };
        // Only another CPU's entries (by name, or of another instruction
        // set): the macro's default plan runs here.
        dir.config(
            &k,
            &[
                entry("Another CPU", None, Some(&[64, 64]), &elsewhere),
                entry("This CPU", Some(&avx512), Some(&[64, 64]), &elsewhere),
            ],
        );
        assert_eq!(plan(false), Ok(None));
        let (_, why) = configured_cpu_plan(&k, &dir.0, &[64, 64], &host, false).unwrap();
        assert!(why.contains("the analytical default plan"), "{why}");
        // An entry for every CPU, tuned for other sizes: the nearest.
        let mut list = vec![
            entry("Another CPU", None, Some(&[64, 64]), &elsewhere),
            entry("*", None, Some(&[4096, 4096]), &tuned),
        ];
        dir.config(&k, &list);
        assert_eq!(plan(false), Ok(Some(tuned.clone())));
        // A machine of the same class beats it, unless device entries are ignored.
        list.push(entry(
            "Other name",
            Some(&bigger),
            Some(&[4096, 4096]),
            &near,
        ));
        dir.config(&k, &list);
        assert_eq!(plan(false), Ok(Some(near.clone())));
        assert_eq!(plan(true), Ok(Some(tuned.clone())));
        let (_, why) = configured_cpu_plan(&k, &dir.0, &[64, 64], &host, false).unwrap();
        assert!(
            why.starts_with("matvec at I=64, K=64: cpu entry 3 (config line ")
                && why.contains("nearest machine of class avx2"),
            "{why}"
        );
        // A `*` entry at these very sizes whose tile fits AVX-512's
        // registers, not these: it runs narrowed to them, as the macro's
        // dispatch runs it.
        list.truncate(2);
        let wide = CpuPlan::default_for(&k);
        list.push(entry("*", None, Some(&[64, 64]), &wide));
        dir.config(&k, &list);
        let narrowed = wide.narrowed(&k, Isa::Avx2).expect("narrowed for AVX2");
        assert_eq!(plan(false), Ok(Some(narrowed)));
        let (_, why) = configured_cpu_plan(&k, &dir.0, &[64, 64], &host, false).unwrap();
        assert!(why.contains("narrowed to avx2's registers"), "{why}");
        // One that cannot be narrowed (no extent halves into whole vectors
        // or rows) is passed over.
        let odd = CpuPlan {
            reg: vec![7, 16],
            l1: vec![7, 16384],
            l2: vec![70, 16384],
            ..wide
        };
        assert_eq!(odd.narrowed(&k, Isa::Avx2), None);
        list.truncate(2);
        list.push(entry("*", None, Some(&[64, 64]), &odd));
        dir.config(&k, &list);
        assert_eq!(plan(false), Ok(Some(tuned.clone())));
        let (_, why) = configured_cpu_plan(&k, &dir.0, &[64, 64], &host, false).unwrap();
        assert!(why.contains("passed over cpu entries 3"), "{why}");
    }
}
