//! The machine this process runs on ([`host`]), and which of a kernel's
//! CPU config entries runs on it ([`rank`]): generated code emits its
//! entries as static [`PlanEntry`] data and calls [`choose_plan`] once per
//! distinct call (the bind cache keeps the answer), so the ranking lives
//! here once instead of in every kernel.
//!
//! Ranking (docs/guide/02-configs.md, "How entries are chosen"): an entry tuned on this
//! machine (its `machine:` equals this one's description), then one tuned
//! on the nearest machine of the same instruction set
//! ([`Machine::distance`]), then entries for any machine (`device: "*"`
//! without `machine:`; the analytical default plan is one, for any sizes)
//! and entries that only name this CPU's model (`device:` without
//! `machine:`, before the former at sizes as near); within a rank, the
//! nearest tuned sizes. An entry tuned for another instruction set is never taken;
//! one without a machine description whose register tile outgrows this
//! instruction set's registers ([`PlanEntry::suits`]) ranks after the
//! default plan, so it does not run (a `*` entry tuned on AVX-512, on AVX2).
//! `MDH_IGNORE_DEVICE_ENTRIES=1` leaves only the entries for any machine;
//! `MDH_EXPLAIN=1` prints which entry a kernel takes and why (stderr, once
//! per kernel and entry).

use std::path::Path;
use std::sync::{Mutex, OnceLock, PoisonError};

pub use mdh_rt::machine::{
    format_size, parse_size, Fit, Host, Isa, Machine, PlanEntry, RowsWithin,
};

use crate::cpu::{cpu_name, isa};

/// Where Linux describes the first CPU's caches.
const SYSFS_CACHES: &str = "/sys/devices/system/cpu/cpu0/cache";

/// This machine, read once: the instruction set kernels run with (capped
/// by `MDH_ISA`, so a capped run is ranked as the smaller machine it acts
/// as), the cores the process may use, and the cache sizes of sysfs
/// (unknown where there is none: not Linux, or a container that hides it).
pub fn host() -> &'static Host {
    static HOST: OnceLock<Host> = OnceLock::new();
    HOST.get_or_init(|| {
        let [l1d, l2, l3] = caches(Path::new(SYSFS_CACHES));
        Host {
            model: cpu_name().to_string(),
            machine: Machine {
                isa: isa(),
                // As rayon sizes its pool when this fails.
                cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
                l1d,
                l2,
                l3,
            },
            bf16_pairs: crate::widen::bf16_pairs() != crate::widen::Bf16Pairs::Off,
        }
    })
}

/// The L1 data, L2 and L3 cache sizes listed in a sysfs cache directory
/// (`index*/{level,type,size}`); `None` for a level it does not list or
/// whose size does not read (no directory: all unknown).
fn caches(dir: &Path) -> [Option<u64>; 3] {
    let mut found = [None; 3];
    let Ok(list) = std::fs::read_dir(dir) else {
        return found;
    };
    for index in list.flatten() {
        if !index.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        let read = |f: &str| std::fs::read_to_string(index.path().join(f)).ok();
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        // Instruction caches do not hold a plan's tiles.
        if !matches!(kind.trim(), "Data" | "Unified") {
            continue;
        }
        let slot = match level.trim() {
            "1" => 0,
            "2" => 1,
            "3" => 2,
            _ => continue,
        };
        if let Some(bytes) = parse_size(&size) {
            found[slot] = Some(bytes);
        }
    }
    found
}

/// The entry [`rank`] chose and how it fits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    pub index: usize,
    pub fit: Fit,
}

/// By the sum of squared log-ratios of the sizes (so that twice and half
/// are equally far); an entry for any sizes after every tuned one.
pub(crate) fn size_distance(tuned: Option<&[usize]>, sizes: &[usize]) -> f64 {
    tuned.map_or(f64::INFINITY, |t| {
        t.iter()
            .zip(sizes)
            .map(|(&a, &b)| {
                let r = (a.max(1) as f64 / b.max(1) as f64).ln();
                r * r
            })
            .sum()
    })
}

/// The entry to run at `sizes` on `host` (see the module docs), the first
/// one on ties; `None` if no entry may run there. `ignore_device_entries`:
/// only entries for any machine count (`MDH_IGNORE_DEVICE_ENTRIES`).
pub fn rank(
    entries: &[PlanEntry<'_>],
    sizes: &[usize],
    host: &Host,
    ignore_device_entries: bool,
) -> Option<Choice> {
    entries
        .iter()
        .enumerate()
        .filter_map(|(index, e)| {
            if ignore_device_entries && !e.for_any_machine() {
                return None;
            }
            let fit = e.fit(host)?;
            let (rank, far, tie) = fit.rank();
            let near = match e.rows {
                Some(rows) if rows.holds(sizes) && (!e.pairs || host.bf16_pairs) => 0.0,
                Some(_) => return None,
                None => size_distance(e.sizes, sizes),
            };
            Some(((rank, far, near, tie), Choice { index, fit }))
        })
        .min_by(|(a, _), (b, _)| {
            (a.0.cmp(&b.0))
                .then(a.1.total_cmp(&b.1))
                .then(a.2.total_cmp(&b.2))
                .then(a.3.cmp(&b.3))
        })
        .map(|(_, c)| c)
}

/// Whether an L1 tile of an input whose register tiles read it `reads`
/// times is read in place instead of packed (the generated code asks
/// once per tile where its layout allows both, see `codegen/cpu/packing.rs`):
/// where it is read fewer than 8 times, so that the copy would cost about
/// one more read, and the input, `input_bytes` long, stays in the last
/// level cache between calls (at most half of it; 16 MiB where the machine
/// does not say). An input that streams from memory is packed whatever its
/// reuse: the copy reads whole rows, which the prefetchers follow, where
/// the register tiles read a line per row. Measured on the 2-core AMD EPYC
/// (Zen 3, 32 MiB L3), the default matmul plan, in place against packed:
/// 16 × 1000 × 2048 (B 8 MB) 0.86–0.89 ms against 0.92–1.12;
/// 16 × 4096 × 4096 (B 64 MiB) 23–26 ms against 9.7–10.9. On the Zen 5
/// EPYC, 16 × 1000 × 2048: 0.165 in place, 0.240 packed.
pub fn read_in_place(reads: usize, input_bytes: usize) -> bool {
    let l3 = host().machine.l3.unwrap_or(32 << 20);
    reads < 8 && (input_bytes as u64) <= l3 / 2
}

/// `I=64, K=64, J=64`: sizes by the names of a kernel's size parameters,
/// for messages (CPU and GPU alike).
pub(crate) fn sizes_text(names: &[impl AsRef<str>], sizes: &[usize]) -> String {
    let pairs: Vec<String> = names
        .iter()
        .zip(sizes)
        .map(|(n, v)| format!("{}={v}", n.as_ref()))
        .collect();
    pairs.join(", ")
}

/// Why `choice` (of [`rank`] over `entries` at `sizes` on `host`) was
/// taken, in one line for kernel `kernel` (its size parameters called
/// `size_names`), as `MDH_EXPLAIN=1` and `mdh-tune` print it.
pub fn explain(
    kernel: &str,
    size_names: &[&str],
    entries: &[PlanEntry<'_>],
    sizes: &[usize],
    host: &Host,
    ignore_device_entries: bool,
    choice: Option<Choice>,
) -> String {
    let x = |s: &[usize]| sizes_text(size_names, s);
    let here = format!("this machine: {}", host.machine.describe());
    let isa = host.machine.isa;
    let registers = format!("{}'s registers ({} B", isa.name(), isa.accumulator_bytes());
    let Some(Choice { index, fit }) = choice else {
        return format!(
            "{kernel} at {}: no entry may run here ({here}); the first plan runs",
            x(sizes)
        );
    };
    let e = &entries[index];
    let which = if e.is_default() {
        "the analytical default plan".to_string()
    } else if let Some(r) = e.rows {
        let name = size_names.get(r.param).unwrap_or(&"?");
        let within = if r.min == r.max {
            format!("{name} = {}", r.min)
        } else {
            format!("{name} from {} to {}", r.min, r.max)
        };
        let pairs = if e.pairs {
            ", B packed as bf16 pairs"
        } else {
            ""
        };
        format!("the analytical plan of a product of few rows ({within}{pairs})")
    } else {
        let tuned_on = e
            .machine
            .map_or(String::new(), |m| format!(", tuned on {}", m.describe()));
        // Generated code narrows only entries that outgrow the registers.
        let narrowed = if e.narrowed_for == Some(isa) {
            format!(", its register tile narrowed to {}'s registers", isa.name())
        } else {
            String::new()
        };
        format!(
            "cpu entry {} (config line {}; device {:?}{tuned_on}{narrowed})",
            index + 1,
            e.line,
            e.device
        )
    };
    let why = match fit {
        Fit::Exact => format!("tuned on this machine ({here})"),
        Fit::Model => format!("tuned on this CPU model, {:?} ({here})", host.model),
        Fit::SameClass(d) => format!(
            "the nearest machine of class {} (distance {d:.2}; {here})",
            host.machine.isa.name()
        ),
        Fit::Any if ignore_device_entries => {
            "for any machine (MDH_IGNORE_DEVICE_ENTRIES: only such entries count)".to_string()
        }
        Fit::Any => {
            format!("for any machine: no entry was tuned on this machine or its class ({here})")
        }
        Fit::Spills => format!(
            "no entry fits better, though its register tile's accumulators ({} B) outgrow {registers}; {here})",
            e.accumulator_bytes
        ),
    };
    let at = match (e.sizes, e.rows) {
        (Some(t), _) => format!("sizes nearest {}", x(t)),
        (None, Some(_)) => "for any sizes of these rows".to_string(),
        (None, None) => "for any sizes".to_string(),
    };
    // Entries that would have run on a machine with more registers.
    let spilling: Vec<String> = entries
        .iter()
        .enumerate()
        .filter(|&(i, e)| i != index && e.fit(host) == Some(Fit::Spills))
        .map(|(i, e)| format!("{} (line {}, {} B)", i + 1, e.line, e.accumulator_bytes))
        .collect();
    let passed = if spilling.is_empty() {
        String::new()
    } else {
        format!(
            "; passed over cpu entries {}: their register tiles' accumulators outgrow {registers})",
            spilling.join(", ")
        )
    };
    let pairs = if e.pairs && host.bf16_pairs {
        "; bf16 products two reduction points per vdpbf16ps"
    } else {
        ""
    };
    format!(
        "{kernel} at {}: {which}{pairs}; {why}; {at}{passed}",
        x(sizes)
    )
}

/// Whether the environment variable `var` is set to on (`1`, `true`,
/// `yes`); an unrecognized value is reported and counts as off.
pub(crate) fn env_flag(var: &str) -> bool {
    let value = std::env::var(var).unwrap_or_default();
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" => true,
        "" | "0" | "false" | "no" => false,
        other => {
            eprintln!("mdh: {var}={other:?} is not 1 or 0; ignored");
            false
        }
    }
}

/// `MDH_IGNORE_DEVICE_ENTRIES`, read once: only entries for any machine
/// (and the default plan) run, as on a machine nobody tuned for.
pub fn ignore_device_entries() -> bool {
    static FLAG: OnceLock<bool> = OnceLock::new();
    *FLAG.get_or_init(|| env_flag("MDH_IGNORE_DEVICE_ENTRIES"))
}

/// `MDH_EXPLAIN`, read once.
pub(crate) fn explaining() -> bool {
    static FLAG: OnceLock<bool> = OnceLock::new();
    *FLAG.get_or_init(|| env_flag("MDH_EXPLAIN"))
}

/// The plan kernel `kernel` runs at `sizes` (an index into `entries`, its
/// entries as generated code lists them; `size_names`: its size
/// parameters, for the explanation). With `MDH_EXPLAIN=1`, says why
/// on stderr the first time the kernel takes each entry (the user asked,
/// so no logger is needed to see it).
pub fn choose_plan(
    kernel: &str,
    size_names: &[&str],
    entries: &[PlanEntry<'_>],
    sizes: &[usize],
) -> usize {
    let (host, ignore) = (host(), ignore_device_entries());
    let choice = rank(entries, sizes, host, ignore);
    let index = choice.map_or(0, |c| c.index);
    if explaining() {
        static SAID: Mutex<Vec<(String, usize)>> = Mutex::new(Vec::new());
        let mut said = SAID.lock().unwrap_or_else(PoisonError::into_inner);
        if !said.iter().any(|(k, i)| k == kernel && *i == index) {
            said.push((kernel.to_string(), index));
            eprintln!(
                "mdh: {}",
                explain(kernel, size_names, entries, sizes, host, ignore, choice)
            );
        }
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(isa: Isa, cores: usize, l2_k: u64) -> Machine {
        Machine {
            isa,
            cores,
            l1d: Some(32 << 10),
            l2: Some(l2_k << 10),
            l3: Some(32 << 20),
        }
    }

    fn zen3() -> Host {
        Host {
            model: "AMD EPYC".into(),
            machine: machine(Isa::Avx2, 2, 512),
            bf16_pairs: false,
        }
    }

    fn entry(
        device: &'static str,
        m: Option<Machine>,
        sizes: Option<&'static [usize]>,
    ) -> PlanEntry<'static> {
        PlanEntry {
            device,
            machine: m,
            sizes,
            line: 1,
            accumulator_bytes: 64,
            narrowed_for: None,
            rows: None,
            pairs: false,
        }
    }

    const AT: &[usize] = &[1024, 1024];
    const FAR: &[usize] = &[16, 16];

    fn chosen(entries: &[PlanEntry<'_>], sizes: &[usize], ignore: bool) -> Option<usize> {
        rank(entries, sizes, &zen3(), ignore).map(|c| c.index)
    }

    #[test]
    fn exact_beats_same_class_beats_any_beats_default() {
        let exact = entry("Other name", Some(machine(Isa::Avx2, 2, 512)), Some(FAR));
        let near = entry("Other name", Some(machine(Isa::Avx2, 2, 1024)), Some(AT));
        let farther = entry("Other name", Some(machine(Isa::Avx2, 64, 1024)), Some(AT));
        let any = entry("*", None, Some(AT));
        let default = PlanEntry {
            line: 0,
            ..entry("*", None, None)
        };
        let list = [default, any, farther, near, exact];
        // The rank decides before the sizes: the exact entry of far sizes wins.
        assert_eq!(
            rank(&list, AT, &zen3(), false),
            Some(Choice {
                index: 4,
                fit: Fit::Exact
            })
        );
        let c = rank(&list[..4], AT, &zen3(), false).unwrap();
        assert_eq!(c.index, 3, "the nearest machine of the class");
        assert!(matches!(c.fit, Fit::SameClass(d) if d > 0.0), "{c:?}");
        assert_eq!(
            chosen(&list[..3], AT, false),
            Some(2),
            "a farther machine still"
        );
        assert_eq!(chosen(&list[..2], AT, false), Some(1), "then `*`");
        assert_eq!(chosen(&list[..1], AT, false), Some(0), "then the default");
        // Within a rank, the nearest tuned sizes; the default after them.
        let small = entry("*", None, Some(FAR));
        assert_eq!(chosen(&[default, any, small], &[20, 10], false), Some(2));
        assert_eq!(chosen(&[default, any, small], &[900, 2000], false), Some(1));
        // The first of equal entries.
        assert_eq!(chosen(&[any, any], AT, false), Some(0));
    }

    #[test]
    fn plans_of_few_rows_run_where_the_rows_are_few() {
        let default = PlanEntry {
            line: 0,
            ..entry("*", None, None)
        };
        let few = |min, max| PlanEntry {
            rows: Some(RowsWithin { param: 0, min, max }),
            ..entry("*", None, None)
        };
        let (one, four) = (few(1, 1), few(2, 5));
        let any = entry("*", None, Some(&[1, 1024]));
        let far = entry("*", None, Some(AT));
        let tuned = entry("Other name", Some(machine(Isa::Avx2, 2, 1024)), Some(AT));
        // Only for their rows; the default elsewhere.
        let list = [one, four, default];
        for (rows, plan) in [(1, 0), (2, 1), (5, 1), (6, 2), (1000, 2)] {
            assert_eq!(
                chosen(&list, &[rows, 1000], false),
                Some(plan),
                "{rows} rows"
            );
        }
        // As an entry tuned at the call's sizes: before `*` entries of other
        // sizes, after those of the very sizes (file order) and after any
        // entry tuned on this machine's class.
        assert_eq!(chosen(&[far, one, default], &[1, 1000], false), Some(1));
        assert_eq!(chosen(&[far, one, default], &[6, 1000], false), Some(0));
        assert_eq!(chosen(&[any, one, default], &[1, 1024], false), Some(0));
        assert_eq!(chosen(&[tuned, one, default], &[1, 1000], false), Some(0));
        let host = zen3();
        let say = |sizes: &[usize]| {
            explain(
                "matmul",
                &["I", "J"],
                &list,
                sizes,
                &host,
                false,
                rank(&list, sizes, &host, false),
            )
        };
        let s = say(&[1, 1000]);
        assert!(
            s.starts_with(
                "matmul at I=1, J=1000: the analytical plan of a product of few rows (I = 1)"
            ) && s.ends_with("for any sizes of these rows"),
            "{s}"
        );
        let s = say(&[3, 1000]);
        assert!(s.contains("of few rows (I from 2 to 5)"), "{s}");
        // A plan of bf16 pairs only where the bodies run them; before the
        // plan of the same rows that reads B in place.
        let pairs = PlanEntry {
            pairs: true,
            ..four
        };
        let list = [one, pairs, four, default];
        let paired = Host {
            bf16_pairs: true,
            ..zen3()
        };
        for (host, plan) in [(zen3(), 2), (paired.clone(), 1)] {
            let c = rank(&list, &[3, 1000], &host, false);
            assert_eq!(c.map(|c| c.index), Some(plan));
            let s = explain("matmul", &["I", "J"], &list, &[3, 1000], &host, false, c);
            assert_eq!(s.contains("B packed as bf16 pairs"), plan == 1, "{s}");
        }
        assert_eq!(rank(&list, &[1, 1000], &paired, false).unwrap().index, 0);
        // An entry whose plan has pair bodies: said where the host runs them.
        let default_pairs = PlanEntry {
            pairs: true,
            ..default
        };
        let list = [default_pairs];
        for host in [zen3(), paired] {
            let c = rank(&list, &[64, 1000], &host, false);
            let s = explain("matmul", &["I", "J"], &list, &[64, 1000], &host, false, c);
            let said = s.contains("bf16 products two reduction points per vdpbf16ps");
            assert_eq!(said, host.bf16_pairs, "{s}");
        }
    }

    #[test]
    fn model_names_match_exactly_only_without_a_description() {
        let by_name = entry("AMD EPYC", None, Some(FAR));
        let any = entry("*", None, Some(AT));
        assert_eq!(
            rank(&[by_name], AT, &zen3(), false).unwrap().fit,
            Fit::Model
        );
        // A model name says little about the machine: it ranks with the
        // entries for any machine, by sizes, so a `*` entry of these sizes
        // wins, and the named one only at sizes as near.
        assert_eq!(chosen(&[by_name, any], AT, false), Some(1));
        assert_eq!(chosen(&[by_name, any], FAR, false), Some(0));
        let by_name_at = entry("AMD EPYC", None, Some(AT));
        assert_eq!(chosen(&[any, by_name_at], AT, false), Some(1));
        // It still beats the default plan (for any sizes) ...
        let default = PlanEntry {
            line: 0,
            ..entry("*", None, None)
        };
        assert_eq!(chosen(&[default, by_name], AT, false), Some(1));
        // ... and an entry described as this machine or its class beats
        // it, at any sizes (a re-tuning written next to an old entry).
        let here = entry("AMD EPYC", Some(machine(Isa::Avx2, 2, 512)), Some(FAR));
        let near = entry("AMD EPYC", Some(machine(Isa::Avx2, 4, 512)), Some(&[1, 1]));
        assert_eq!(chosen(&[by_name_at, here], AT, false), Some(1));
        assert_eq!(chosen(&[by_name_at, near], AT, false), Some(1));
        // Another model without a description: not for this machine.
        assert_eq!(
            chosen(
                &[entry("Intel(R) Xeon(R) Processor", None, Some(AT)), any],
                AT,
                false
            ),
            Some(1)
        );
        // The same name on a machine described otherwise: ranked by the description.
        let same_name = entry("AMD EPYC", Some(machine(Isa::Avx2, 4, 512)), Some(AT));
        assert!(matches!(same_name.fit(&zen3()), Some(Fit::SameClass(_))));
        // An unknown model matches no name.
        let unknown = Host {
            model: String::new(),
            ..zen3()
        };
        assert_eq!(entry("", None, None).fit(&unknown), None);
    }

    #[test]
    fn another_instruction_set_is_never_taken() {
        let avx512 = entry("AMD EPYC", Some(machine(Isa::Avx512, 2, 512)), Some(AT));
        let baseline = entry("*", Some(machine(Isa::Baseline, 2, 512)), Some(AT));
        assert_eq!(avx512.fit(&zen3()), None);
        assert_eq!(chosen(&[avx512, baseline], AT, false), None);
        let any = entry("*", None, Some(FAR));
        assert_eq!(chosen(&[avx512, baseline, any], AT, false), Some(2));
    }

    #[test]
    fn an_entry_whose_register_tile_outgrows_the_registers_runs_after_the_default() {
        // matmul's `*` entry of 6 × 64 floats, tuned on AVX-512: 24 zmm
        // there, 48 ymm on AVX2 (zen3()), which has 12 for accumulators.
        let wide = PlanEntry {
            accumulator_bytes: 6 * 64 * 4,
            ..entry("*", None, Some(AT))
        };
        assert!(wide.suits(Isa::Avx512) && !wide.suits(Isa::Avx2));
        // A tile past even AVX-512's registers runs there as given.
        let widest = PlanEntry {
            accumulator_bytes: 2 * Isa::Avx512.accumulator_bytes(),
            ..wide
        };
        assert!(widest.suits(Isa::Avx512) && !widest.suits(Isa::Baseline));
        assert_eq!(wide.fit(&zen3()), Some(Fit::Spills));
        let fitting = PlanEntry {
            accumulator_bytes: Isa::Avx2.accumulator_bytes(),
            ..wide
        };
        assert_eq!(fitting.fit(&zen3()), Some(Fit::Any));
        // Narrowed to AVX2's registers in the AVX2 body, it ranks with the
        // entries for any machine there.
        let narrowed = PlanEntry {
            narrowed_for: Some(Isa::Avx2),
            ..wide
        };
        assert!(narrowed.suits(Isa::Avx2) && !narrowed.suits(Isa::Baseline));
        assert_eq!(narrowed.fit(&zen3()), Some(Fit::Any));
        // The default plan suits every instruction set (the macro fits it).
        let default = PlanEntry {
            line: 0,
            ..entry("*", None, None)
        };
        let default_wide = PlanEntry { line: 0, ..wide };
        assert!(Isa::ALL.into_iter().all(|i| default_wide.suits(i)));
        // Before the default even at its tuned sizes, and with
        // MDH_IGNORE_DEVICE_ENTRIES; alone, it still runs.
        assert_eq!(chosen(&[wide, default], AT, false), Some(1));
        assert_eq!(chosen(&[wide, default], AT, true), Some(1));
        assert_eq!(chosen(&[wide, fitting, default], AT, false), Some(1));
        assert_eq!(chosen(&[wide], AT, false), Some(0));
        // So is an entry of this model's name (a run capped by MDH_ISA).
        let by_name = PlanEntry {
            device: "AMD EPYC",
            ..wide
        };
        assert_eq!(by_name.fit(&zen3()), Some(Fit::Spills));
        // A described machine's entry suits its instruction set only, as
        // tuned there whatever its tile.
        let avx2 = PlanEntry {
            machine: Some(machine(Isa::Avx2, 2, 512)),
            ..wide
        };
        assert!(avx2.suits(Isa::Avx2) && !avx2.suits(Isa::Avx512));
        assert_eq!(avx2.fit(&zen3()), Some(Fit::Exact));
        // MDH_EXPLAIN names the entry passed over and why.
        let list = [wide, default];
        let s = explain(
            "matmul",
            &["I", "J"],
            &list,
            AT,
            &zen3(),
            false,
            rank(&list, AT, &zen3(), false),
        );
        assert!(
            s.contains("the analytical default plan")
                && s.ends_with("passed over cpu entries 1 (line 1, 1536 B): their register tiles' accumulators outgrow avx2's registers (384 B)"),
            "{s}"
        );
        let s = explain(
            "matmul",
            &["I", "J"],
            &list[..1],
            AT,
            &zen3(),
            false,
            rank(&list[..1], AT, &zen3(), false),
        );
        assert!(s.contains("outgrow avx2's registers (384 B"), "{s}");
    }

    #[test]
    fn ignoring_device_entries_leaves_entries_for_any_machine() {
        let exact = entry("x", Some(machine(Isa::Avx2, 2, 512)), Some(AT));
        let by_name = entry("AMD EPYC", None, Some(AT));
        let any_with_machine = entry("*", Some(machine(Isa::Avx2, 2, 256)), Some(AT));
        let any = entry("*", None, Some(FAR));
        let default = PlanEntry {
            line: 0,
            ..entry("*", None, None)
        };
        let list = [exact, by_name, any_with_machine, any, default];
        assert_eq!(chosen(&list, AT, false), Some(0));
        assert_eq!(chosen(&list, AT, true), Some(3));
        assert_eq!(chosen(&[exact, default], AT, true), Some(1));
        assert_eq!(chosen(&[exact], AT, true), None);
    }

    #[test]
    fn explanations_say_which_entry_and_why() {
        let host = zen3();
        let tuned = PlanEntry {
            line: 12,
            ..entry(
                "Intel(R) Xeon(R) Processor",
                Some(machine(Isa::Avx2, 2, 2048)),
                Some(AT),
            )
        };
        let default = PlanEntry {
            line: 0,
            ..entry("*", None, None)
        };
        let list = [tuned, default];
        let say = |ignore| {
            explain(
                "matmul",
                &["I", "J"],
                &list,
                &[1000, 1000],
                &host,
                ignore,
                rank(&list, &[1000, 1000], &host, ignore),
            )
        };
        let s = say(false);
        assert!(s.starts_with("matmul at I=1000, J=1000: cpu entry 1 (config line 12; device \"Intel(R) Xeon(R) Processor\", tuned on avx2, 2 cores, L1d 32K, L2 2M, L3 32M)"), "{s}");
        assert!(
            s.contains("the nearest machine of class avx2")
                && s.contains("this machine: avx2, 2 cores, L1d 32K, L2 512K"),
            "{s}"
        );
        assert!(s.ends_with("sizes nearest I=1024, J=1024"), "{s}");
        let s = say(true);
        assert!(
            s.contains("the analytical default plan; for any machine (MDH_IGNORE_DEVICE_ENTRIES"),
            "{s}"
        );
        assert!(s.ends_with("for any sizes"), "{s}");
        let s = explain("k", &["N"], &list, &[1], &host, false, None);
        assert!(s.contains("no entry may run here"), "{s}");
    }

    #[test]
    fn caches_read_from_sysfs_and_unknown_without_it() {
        let dir = std::env::temp_dir().join(format!("mdh-caches-{}", std::process::id()));
        let write = |index: &str, level: &str, kind: &str, size: Option<&str>| {
            let d = dir.join(index);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            if let Some(s) = size {
                std::fs::write(d.join("size"), format!("{s}\n")).unwrap();
            }
        };
        write("index0", "1", "Data", Some("32K"));
        write("index1", "1", "Instruction", Some("64K"));
        write("index2", "2", "Unified", Some("1024K"));
        write("index3", "3", "Unified", None);
        assert_eq!(caches(&dir), [Some(32 << 10), Some(1 << 20), None]);
        write("index3", "3", "Unified", Some("32768K"));
        assert_eq!(
            caches(&dir),
            [Some(32 << 10), Some(1 << 20), Some(32 << 20)]
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(caches(&dir), [None; 3]);
        // This machine: its own instruction set and at least one core.
        assert_eq!(host().machine.isa, isa());
        assert!(host().machine.cores >= 1);
    }
}
