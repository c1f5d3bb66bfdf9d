//! Tuning the node layer (`--ranks N`): which `nod` (parts per md_hom
//! dimension, their product N) runs a kernel fastest on the ranks of an
//! MPI job. NOD parts are chosen at run time, so one build measures them
//! all: the kernel with the CPU plan that runs today, run under `mpirun -np
//! N`, every candidate checked, timed by its slowest rank, and the bytes
//! the busiest rank sends per call reported. The space is small (the
//! ordered factorizations of N over the dimensions), so it is searched
//! exhaustively.

use std::path::Path;

use mdh_core::config::{cpu_entry_yaml, machine_yaml};
use mdh_core::desc::KernelDesc;
use mdh_core::plan::CpuPlan;
use mdh_rt::nod::{configured_nod, default_nod};

use mdh::machine::{host, ignore_device_entries};

use crate::cpu::configured_cpu_plan;
use crate::scratch::Timing;
use crate::tuning::{utc_date, write_entry, Target};
use crate::{reference, scratch, source};

/// Every `nod` of `dims` parts whose product is `ranks`, none splitting a
/// dimension into more parts than its extent has points (such parts idle)
/// unless no other split exists.
pub fn candidates(extents: &[usize], ranks: usize) -> Vec<Vec<usize>> {
    fn place(extents: &[usize], left: usize, nod: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        let d = nod.len();
        if d == extents.len() {
            if left == 1 {
                out.push(nod.clone());
            }
            return;
        }
        for p in (1..=left).filter(|&p| left.is_multiple_of(p)) {
            nod.push(p);
            place(extents, left / p, nod, out);
            nod.pop();
        }
    }
    let mut all = Vec::new();
    place(extents, ranks.max(1), &mut Vec::new(), &mut all);
    let fed: Vec<Vec<usize>> = all
        .iter()
        .filter(|n| n.iter().zip(extents).all(|(&p, &e)| p <= e.max(1)))
        .cloned()
        .collect();
    if fed.is_empty() {
        all
    } else {
        fed
    }
}

/// The measured candidate to write, if any: the fastest, unless the `nod`
/// that runs today (`today`, measured) is within 3 % of it (the noise of a
/// shared machine; an entry then changes nothing that can be measured).
pub fn winner<'a>(
    results: &'a [(Vec<usize>, f64, u64)],
    today: &[usize],
) -> Option<&'a (Vec<usize>, f64, u64)> {
    let best = results.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let now = results.iter().find(|r| r.0 == today);
    match now {
        Some(now) if best.0 == now.0 || best.1 >= now.1 * 0.97 => None,
        _ => Some(best),
    }
}

/// Tunes the NOD layer of `found`'s kernel (in the crate of `manifest`)
/// for `ranks` MPI ranks.
pub fn tune(
    manifest: &Path,
    found: &source::Found,
    target: &mut Target,
    ranks: usize,
) -> Result<(), String> {
    if ranks == 0 {
        return Err("--ranks must be at least 1".into());
    }
    let host = host();
    target.device.clone_from(&host.model);
    target.machine = Some(host.machine);
    let k = &found.kernel;
    let sizes = target.sizes;
    let desc = KernelDesc::from_kernel(k);
    let extents: Vec<usize> = desc
        .dims
        .iter()
        .map(|c| KernelDesc::eval_size(c, sizes).unwrap_or(0))
        .collect();
    let (configured, why) =
        configured_cpu_plan(k, &target.out_dir, sizes, host, ignore_device_entries())?;
    eprintln!("runs here today: {why}");
    let mut plan = configured.unwrap_or_else(|| CpuPlan::default_for(k));
    let today = configured_nod(&plan.nod, ranks)
        .map(<[usize]>::to_vec)
        .unwrap_or_else(|| default_nod(&extents, &k.analysis().kinds, ranks));
    let mut nods = candidates(&extents, ranks);
    // What runs today first: it is measured whatever the space holds.
    nods.retain(|n| *n != today);
    nods.insert(0, today.clone());
    eprintln!(
        "tuning the NOD layer of `{}` at {} for {ranks} ranks: {} candidate{}, each under `mpirun -np {ranks}`",
        k.name,
        target.at,
        nods.len(),
        if nods.len() == 1 { "" } else { "s" }
    );
    let ws = scratch::Workspace::of(manifest)?;
    let mut scratch = scratch::Scratch::new(&ws, k, &found.tokens, sizes)?;
    if let Some(why) = reference::interpreter_unfit(k, &desc, &extents) {
        scratch.check_against_default();
        target.checked_against = format!("the default plan's result ({why})");
    }
    eprintln!("results are checked against {}", target.checked_against);
    eprintln!(
        "building the scratch crate with MPI in {} (the first build compiles the dependencies)",
        ws.target_dir.join("mdh-tune").display()
    );
    let binary = scratch.build(&scratch::Batch::Nods {
        plan: &plan,
        nods: &nods,
    })?;
    let reference = scratch.dir().join(format!("reference{}.txt", target.tag));
    let mut results: Vec<(Vec<usize>, f64, u64)> = Vec::new();
    let timing = Timing::OneByOne {
        slow_s: f64::INFINITY,
    };
    scratch.run(&binary, Some(ranks), timing, &reference, |m| {
        let i: usize = m
            .kernel
            .strip_prefix('n')
            .and_then(|i| i.parse().ok())
            .filter(|&i| i < nods.len())
            .ok_or_else(|| format!("the harness reported an unknown candidate `{}`", m.kernel))?;
        let nod = &nods[i];
        let mark = if *nod == today { " (runs today)" } else { "" };
        match (m.status.as_str(), m.time_s) {
            ("ok", Some(t)) => {
                let bytes = m.bytes_sent.unwrap_or(0);
                eprintln!(
                    "  nod {nod:?}{mark}: {:.3} ms, {:.2} MiB sent per call by the busiest rank",
                    t * 1e3,
                    bytes as f64 / (1 << 20) as f64
                );
                results.push((nod.clone(), t, bytes));
            }
            (status, _) => eprintln!(
                "  nod {nod:?}{mark}: {status}: {}",
                m.error.as_deref().unwrap_or("no detail")
            ),
        }
        Ok(())
    })?;
    if results.is_empty() {
        return Err("no NOD candidate ran correctly; see the messages above".into());
    }
    let Some((best, time, bytes)) = winner(&results, &today) else {
        eprintln!(
            "the nod that runs today ({today:?}) is the fastest within 3 %; the config is unchanged"
        );
        return Ok(());
    };
    plan.nod.clone_from(best);
    let provenance = [
        ("tuner", mdh_core::config::yaml_string("mdh-tune --ranks")),
        ("device", mdh_core::config::yaml_string(&target.device)),
        ("date", mdh_core::config::yaml_string(&utc_date())),
        ("ranks", ranks.to_string()),
        ("machine", machine_yaml(&host.machine)),
        ("time_s", format!("{time:e}")),
        ("bytes_sent_per_rank", bytes.to_string()),
    ];
    let entry = cpu_entry_yaml(
        k,
        &target.device,
        target.machine.as_ref(),
        Some(sizes),
        &plan,
        &provenance,
    );
    let path = target.out_dir.join(format!("{}.yaml", k.name));
    write_entry(target, &path, &entry)?;
    eprintln!(
        "wrote nod {best:?} ({:.3} ms) to {}",
        time * 1e3,
        path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_the_factorizations_that_fit_the_extents() {
        let mut c = candidates(&[100, 100], 4);
        c.sort();
        assert_eq!(c, vec![vec![1, 4], vec![2, 2], vec![4, 1]]);
        // A dimension of 1 point takes no split; 6 = 2·3 over the others.
        let c = candidates(&[1, 50, 3], 6);
        assert!(c.iter().all(|n| n[0] == 1 && n[2] <= 3), "{c:?}");
        assert!(c.contains(&vec![1, 2, 3]) && c.contains(&vec![1, 6, 1]));
        // Nothing fits: every split, idle ranks included.
        assert_eq!(candidates(&[1], 3), vec![vec![3]]);
        assert_eq!(candidates(&[7, 7], 1), vec![vec![1, 1]]);
    }

    #[test]
    fn the_winner_must_beat_what_runs_today_beyond_the_noise() {
        let r = vec![(vec![2, 1], 1.0, 8), (vec![1, 2], 0.98, 0)];
        assert_eq!(winner(&r, &[2, 1]), None);
        let r = vec![(vec![2, 1], 1.0, 8), (vec![1, 2], 0.5, 0)];
        assert_eq!(winner(&r, &[2, 1]).map(|w| &w.0), Some(&vec![1, 2]));
        // What runs today failed: the fastest that ran.
        let r = vec![(vec![1, 2], 0.7, 0)];
        assert_eq!(winner(&r, &[2, 1]).map(|w| &w.0), Some(&vec![1, 2]));
    }
}
