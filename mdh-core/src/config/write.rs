//! What the tuner writes: entries as YAML list items, merged into a
//! config file's text with its other entries and comments kept.

use std::path::Path;

use mdh_rt::machine::{format_size, Machine, CACHE_FIELDS};

use super::{entries, machine, size_values, ConfigError, ConfigFile, CPU_LIST_FIELDS};
use crate::analysis::Checked;
use crate::gpu_plan::{GpuPlan, PlanValue};
use crate::plan::CpuPlan;

/// A string as a YAML (and JSON) double-quoted scalar.
pub fn yaml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn yaml_list(v: &[usize]) -> String {
    let items: Vec<String> = v.iter().map(usize::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// The YAML list item of one entry, as the tuner writes it: the fields
/// [`entries`] reads (`backend`, `device`, `sizes` unless `None`, the plan
/// under `cpu` or `gpu` with every field), then `provenance` (a flow
/// mapping of the given keys and already rendered YAML values) unless empty.
fn entry_yaml(
    k: &Checked,
    backend: &str,
    device: &str,
    described: Option<String>,
    sizes: Option<&[usize]>,
    plan: (&str, Vec<String>),
    provenance: &[(&str, String)],
) -> String {
    // What the entry was tuned on beyond its name: `machine:` (CPU) or
    // `arch:` (CUDA).
    let described = described.map_or(String::new(), |d| format!("    {d}\n"));
    let sizes = sizes.map_or(String::new(), |sizes| {
        let s: Vec<String> = k
            .size_params
            .iter()
            .zip(sizes)
            .map(|(p, v)| format!("{p}: {v}"))
            .collect();
        format!("    sizes: {{ {} }}\n", s.join(", "))
    });
    let prov: Vec<String> = provenance
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let prov = if prov.is_empty() {
        String::new()
    } else {
        format!("    provenance: {{ {} }}\n", prov.join(", "))
    };
    format!(
        "  - backend: {backend}\n    device: {}\n{described}{sizes}    {}: {{ {} }}\n{prov}",
        yaml_string(device),
        plan.0,
        plan.1.join(", "),
    )
}

/// A machine description as a YAML flow mapping (as `machine:` and the
/// tuner's provenance write it): `{ isa: avx2, cores: 2, l1d: 32K, … }`,
/// without the cache sizes that are not known.
pub fn machine_yaml(m: &Machine) -> String {
    let mut fields = vec![
        format!("isa: {}", m.isa.name()),
        format!("cores: {}", m.cores),
    ];
    for (name, size) in CACHE_FIELDS.iter().zip(m.caches()) {
        if let Some(s) = size {
            fields.push(format!("{name}: {}", format_size(s)));
        }
    }
    format!("{{ {} }}", fields.join(", "))
}

/// The YAML list item of one CPU entry (see `entry_yaml`).
pub fn cpu_entry_yaml(
    k: &Checked,
    device: &str,
    machine: Option<&Machine>,
    sizes: Option<&[usize]>,
    plan: &CpuPlan,
    provenance: &[(&str, String)],
) -> String {
    let lists = [
        &plan.nod,
        &plan.cor,
        &plan.l2,
        &plan.l1,
        &plan.reg,
        &plan.order,
    ];
    let mut cpu: Vec<String> = CPU_LIST_FIELDS
        .iter()
        .zip(lists)
        // An unset NOD layer (all 0) is the default: left out.
        .filter(|(n, v)| **n != "nod" || v.iter().any(|&p| p > 0))
        .map(|(n, v)| format!("{n}: {}", yaml_list(v)))
        .collect();
    let pack: Vec<String> = plan.pack.iter().map(|l| yaml_list(l)).collect();
    cpu.push(format!("pack: [{}]", pack.join(", ")));
    if plan.stream {
        cpu.push("stream: true".into());
    }
    if plan.exact {
        cpu.push("exact: true".into());
    }
    let machine = machine.map(|m| format!("machine: {}", machine_yaml(m)));
    entry_yaml(k, "cpu", device, machine, sizes, ("cpu", cpu), provenance)
}

/// The YAML list item of one GPU entry of `backend` (`opencl` or `cuda`;
/// see `entry_yaml`); `arch`: the CUDA architecture it was tuned on, as a
/// compute capability (`arch: sm_90`).
pub fn gpu_entry_yaml(
    k: &Checked,
    backend: &str,
    device: &str,
    arch: Option<u32>,
    sizes: Option<&[usize]>,
    plan: &GpuPlan,
    provenance: &[(&str, String)],
) -> String {
    // Optional fields only where they differ from what leaving them out
    // means (entries written before they existed read the same).
    let gpu = plan
        .fields()
        .into_iter()
        .filter(|f| !f.unset)
        .map(|f| format!("{}: {}", f.name, plan_value_yaml(f.value)))
        .collect();
    let arch = arch.map(|a| format!("arch: sm_{a}"));
    entry_yaml(k, backend, device, arch, sizes, ("gpu", gpu), provenance)
}

/// What the tuner writes an entry for: another result for the same key
/// replaces it. The machine is part of it: a result from another machine
/// of the same model name is a new entry beside the old one.
#[derive(Clone, Copy, Debug)]
pub struct EntryKey<'a> {
    pub backend: &'a str,
    pub device: &'a str,
    pub machine: Option<&'a Machine>,
    pub sizes: &'a [usize],
}

/// A config file's text with `entry` (a list item from [`cpu_entry_yaml`]
/// or [`gpu_entry_yaml`]) in place of the entry of the same `key`, or
/// appended to `entries`; a new file when `text` is `None`. Other entries
/// and all comments are kept as they are (the text is edited, not
/// re-serialized).
pub fn merge_entry(
    k: &Checked,
    path: &Path,
    text: Option<&str>,
    key: EntryKey<'_>,
    entry: &str,
) -> Result<String, ConfigError> {
    let Some(text) = text else {
        return Ok(format!("kernel: {}\nentries:\n{entry}", k.name));
    };
    // Checks the whole file as the macro will (a broken file is reported,
    // not overwritten), and finds the entry to replace.
    entries(k, path, text)?;
    let file: ConfigFile = serde_saphyr::from_str(text)
        .map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = file
        .entries
        .iter()
        .map(|e| e.referenced.line() as usize - 1)
        .collect();
    let same = file.entries.iter().position(|e| {
        let e = &e.value;
        e.backend.value == key.backend
            && e.device.as_deref().unwrap_or("*") == key.device
            && e.machine
                .as_ref()
                .and_then(|m| machine(path, m).ok())
                .as_ref()
                == key.machine
            && e.sizes
                .as_ref()
                .and_then(|s| size_values(k, path, s).ok())
                .is_some_and(|s| s == key.sizes)
    });
    let mut out: Vec<String> = Vec::new();
    match same {
        Some(i) => {
            // The entry's lines end before the comments and blank lines
            // that precede the next entry (or the end of the file).
            let mut end = starts.get(i + 1).copied().unwrap_or(lines.len());
            while end > starts[i] + 1 && {
                let l = lines[end - 1].trim();
                l.is_empty() || l.starts_with('#')
            } {
                end -= 1;
            }
            out.extend(lines[..starts[i]].iter().map(|l| l.to_string()));
            out.push(entry.trim_end().to_string());
            out.extend(lines[end..].iter().map(|l| l.to_string()));
        }
        None if file.entries.is_empty() => {
            // No entries yet (`entries:` absent or `entries: []`).
            out.extend(
                lines
                    .iter()
                    .filter(|l| !l.starts_with("entries:"))
                    .map(|l| l.to_string()),
            );
            out.push("entries:".into());
            out.push(entry.trim_end().to_string());
        }
        None => {
            out.extend(lines.iter().map(|l| l.to_string()));
            out.push(entry.trim_end().to_string());
        }
    }
    Ok(out.join("\n") + "\n")
}

/// A GPU plan field's value in YAML.
fn plan_value_yaml(value: PlanValue<'_>) -> String {
    match value {
        PlanValue::Counts(v) => yaml_list(v),
        PlanValue::Flags(v) => {
            let items: Vec<String> = v.iter().map(bool::to_string).collect();
            format!("[{}]", items.join(", "))
        }
        PlanValue::Count(n) => n.to_string(),
        PlanValue::Flag(b) => b.to_string(),
        PlanValue::Mma(m) => m.name().to_string(),
    }
}
