//! Tuned configs: `configs/<kernel>.yaml`, read by the macro at compile time
//! (and written by the tuner).
//!
//! ```yaml
//! kernel: matmul
//! entries:
//!   - backend: cpu
//!     device: "*"                       # a CPU model name, or "*" for any
//!     machine: { isa: avx2, cores: 2, l1d: 32K, l2: 512K, l3: 32M }
//!                                       # the machine it was tuned on (optional)
//!     sizes: { I: 1024, J: 1024, K: 1024 }   # what it was tuned for (optional)
//!     cpu:                              # the plan (see `plan::CpuPlan`);
//!       nod: [2, 1, 1]                  # MPI ranks (`NAME::mpi`, optional)
//!       cor: [0, 0, 1]                  # every field is optional and
//!       l2: [192, 1024, 256]            # defaults to the analytical plan
//!       l1: [48, 256, 256]
//!       reg: [6, 32, 1]
//!       order: [0, 1, 2]
//!       pack: [[], [2, 1]]              # per input access: packed layout
//!       stream: false                   # final results past the caches
//!       exact: false                    # a body for exactly `sizes` too
//!     provenance: { ... }               # free-form (the tuner's record)
//!   - backend: cuda                     # or opencl
//!     device: "H100"                    # a part of the device's name, or "*"
//!     arch: sm_90                       # CUDA: the architecture it was tuned on
//!                                       # (optional; serves its other devices)
//!     sizes: { I: 1024, J: 1024, K: 1024 }
//!     gpu:                              # the plan (see `gpu_plan::GpuPlan`);
//!       groups: [0, 0, 1]               # every field is optional and
//!       items: [4, 64, 1]               # defaults to the heuristic plan
//!       tile: [4, 64, 256]
//!       local: [false, true]            # per input buffer
//!       blocked: false
//!       vector: [1, 4]                  # per input: float4 copies and loads
//!       transpose: [false, false]       # per input: local tile transposed
//!       pad: [0, 4]                     # per input: local tile's row padding
//!       stages: 2                       # prefetch the next tile (1: off)
//!       mma: tf32                       # CUDA tensor cores: tf32 | 3xtf32 | bf16 | f16 (default off)
//!       warps: [2, 2, 1]                # the warp layer: warps per dimension
//! ```
//!
//! Lists have one entry per md_hom dimension, in md_hom order (`local`,
//! `vector`, `transpose`, `pad`: one per input buffer). A CPU entry takes `cpu:`, an OpenCL or CUDA entry
//! `gpu:`; each entry is checked against the kernel when the macro expands,
//! and an error names the file, line and column of the offending value.
//!
//! Where the file is found, first hit wins:
//! 1. `MDH_CONFIG_<KERNEL>` (the kernel name in upper case): a file path;
//! 2. `MDH_CONFIG_DIR`: a directory holding `<kernel>.yaml`;
//! 3. `configs/<kernel>.yaml` in the calling crate's directory
//!    (`CARGO_MANIFEST_DIR`), then in each ancestor up to the workspace root
//!    (the first directory whose `Cargo.toml` has a `[workspace]` table).
//!
//! `machine:` describes the CPU an entry was tuned on (what `mdh-tune`
//! writes): `isa` (`avx512`, `avx2` or `baseline`) and `cores` are
//! required, the cache sizes `l1d`, `l2`, `l3` optional, in bytes or with a
//! `K`, `M` or `G` suffix. An entry with it is matched by it, not by its
//! `device:` (which then only records the model name).
//!
//! Without a file (or without a CPU entry) the analytical default plan of
//! [`CpuPlan::default_for`] is used. Several CPU entries are all compiled
//! in and dispatched at run time (`mdh::machine`): an entry tuned on this
//! machine, then on the nearest machine of its instruction set, then one
//! for any machine (`device: "*"` without `machine:`), nearest tuned sizes
//! first within each; the default plan is the fallback (left out when an
//! entry for any machine and any sizes makes it unreachable).
//! GPU entries are compiled into `NAME::opencl` / `NAME::cuda` and chosen per
//! call alike (device name, then nearest sizes, among the entries that fit
//! the device's limits), else [`GpuPlan::default_for`] fitted to the device.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mdh_rt::machine::{
    parse_size, Isa, Machine, PlanEntry, RowsWithin, CACHE_FIELDS, DEFAULT_LINE, FEW_ROWS_LINE,
};
use serde::Deserialize;
use serde_saphyr::{Location, Spanned};

use crate::analysis::Checked;
use crate::backend::Backend;
use crate::desc::KernelDesc;
use crate::gpu_plan::{cuda_arch_number, GpuPlan, Mma};
use crate::plan::CpuPlan;

mod write;
pub use write::{cpu_entry_yaml, gpu_entry_yaml, machine_yaml, merge_entry, yaml_string, EntryKey};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub kernel: Spanned<String>,
    #[serde(default)]
    pub entries: Vec<Spanned<Entry>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub backend: Spanned<String>,
    #[serde(default)]
    pub device: Option<String>,
    #[serde(default)]
    pub machine: Option<Spanned<MachineConfig>>,
    #[serde(default)]
    pub arch: Option<Spanned<String>>,
    #[serde(default)]
    pub sizes: Option<Spanned<BTreeMap<String, usize>>>,
    #[serde(default)]
    pub cpu: Option<Spanned<CpuConfig>>,
    #[serde(default)]
    pub gpu: Option<Spanned<GpuConfig>>,
    #[serde(default)]
    pub provenance: Option<serde::de::IgnoredAny>,
}

/// A machine description as written in YAML (see the module docs).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    pub isa: Spanned<String>,
    pub cores: Spanned<usize>,
    #[serde(default)]
    pub l1d: Option<Spanned<SizeText>>,
    #[serde(default)]
    pub l2: Option<Spanned<SizeText>>,
    #[serde(default)]
    pub l3: Option<Spanned<SizeText>>,
}

/// A cache size in YAML: bytes, or a string with a unit (`512K`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum SizeText {
    Bytes(u64),
    Text(String),
}

/// The CPU plan as written in YAML; missing fields come from the default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuConfig {
    #[serde(default)]
    pub nod: Option<Spanned<Vec<usize>>>,
    #[serde(default)]
    pub cor: Option<Spanned<Vec<usize>>>,
    #[serde(default)]
    pub l2: Option<Spanned<Vec<usize>>>,
    #[serde(default)]
    pub l1: Option<Spanned<Vec<usize>>>,
    #[serde(default)]
    pub reg: Option<Spanned<Vec<usize>>>,
    #[serde(default)]
    pub order: Option<Spanned<Vec<usize>>>,
    /// Per input access: its packed layout, or [] (see `plan::CpuPlan::pack`).
    #[serde(default)]
    pub pack: Option<Spanned<Vec<Vec<usize>>>>,
    /// Whether final results are streamed (see `plan::CpuPlan::stream`).
    #[serde(default)]
    pub stream: Option<Spanned<bool>>,
    /// Whether the entry's sizes get a body of their own (see
    /// `plan::CpuPlan::exact`).
    #[serde(default)]
    pub exact: Option<Spanned<bool>>,
}

/// The list fields of a CPU plan in YAML, in the order of `CpuConfig::fields`.
pub const CPU_LIST_FIELDS: [&str; 6] = ["nod", "cor", "l2", "l1", "reg", "order"];

impl CpuConfig {
    fn fields(&self) -> [(&'static str, &Option<Spanned<Vec<usize>>>); 6] {
        let values = [
            &self.nod,
            &self.cor,
            &self.l2,
            &self.l1,
            &self.reg,
            &self.order,
        ];
        [0, 1, 2, 3, 4, 5].map(|i| (CPU_LIST_FIELDS[i], values[i]))
    }
}

/// How a config holds a GPU plan field, and reads its value from there.
pub trait YamlField: Sized {
    /// The field as YAML holds it.
    type Yaml;

    /// The value, or why the YAML holds none.
    fn read(yaml: &Self::Yaml) -> Result<Self, String>;
}

macro_rules! yaml_as_is {
    ($($ty:ty),*) => {$(
        impl YamlField for $ty {
            type Yaml = $ty;

            fn read(yaml: &$ty) -> Result<$ty, String> {
                Ok(yaml.clone())
            }
        }
    )*};
}

yaml_as_is!(Vec<usize>, Vec<bool>, usize, bool);

/// Tensor cores are written by name (`off`, `tf32`, `3xtf32`, `bf16`,
/// `f16`, see [`Mma::name`]).
impl YamlField for Mma {
    type Yaml = String;

    fn read(name: &String) -> Result<Mma, String> {
        Mma::from_name(name).ok_or_else(|| format!("unknown `mma: {name}`; use `off` (exact FP32), `tf32` (tensor cores, TF32 operands: relative errors about 1e-3) `3xtf32` (tensor cores, about FP32 accuracy), `bf16` or `f16` (tensor cores on 16-bit inputs of that type, exact products)"))
    }
}

macro_rules! gpu_config {
    ($($(#[$attr:meta])* $name:ident: $ty:ty = $absence:ident $(($absent:expr))?,)*) => {
        /// The GPU plan as written in YAML (its fields: [`GpuPlan`]'s);
        /// missing fields come from the default.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct GpuConfig {
            $(#[serde(default)]
            pub $name: Option<Spanned<<$ty as YamlField>::Yaml>>,)*
        }

        impl GpuConfig {
            /// The plan: the set fields over `plan`; `Err`: where a value
            /// is no value of its field, and why.
            fn apply(&self, plan: &mut GpuPlan) -> Result<(), (&Location, String)> {
                $(if let Some(v) = &self.$name {
                    plan.$name = YamlField::read(&v.value).map_err(|e| (&v.referenced, e))?;
                })*
                Ok(())
            }

            /// Where field `name` is set in the file, if it is.
            fn span_of(&self, name: &str) -> Option<&Location> {
                match name {
                    $(stringify!($name) => self.$name.as_ref().map(|f| &f.referenced),)*
                    _ => None,
                }
            }
        }
    };
}

mdh_rt::gpu_plan_fields!(gpu_config);

/// One GPU plan of a kernel for one back end, with the device pattern and
/// the sizes it was tuned for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuEntryCfg {
    pub plan: GpuPlan,
    pub device: String,
    /// The CUDA architecture it was tuned on, as a compute capability
    /// (`arch: sm_90`: 90): devices of that architecture whose name does
    /// not match `device` take it before `*` entries.
    pub arch: Option<u32>,
    pub sizes: Option<Vec<usize>>,
}

/// One CPU plan of a kernel, with the device pattern, the machine and the
/// sizes it was tuned for (`None`: the default plan).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuEntry {
    pub plan: CpuPlan,
    pub device: String,
    pub machine: Option<Machine>,
    pub sizes: Option<Vec<usize>>,
    /// Its line in the file (0: the default plan the macro adds), for
    /// `MDH_EXPLAIN`'s messages.
    pub line: u32,
    /// A plan of products of few rows the macro adds: the rows it serves
    /// ([`PlanEntry::rows`]).
    pub rows: Option<RowsWithin>,
}

impl CpuEntry {
    /// The entry as generated code lists it for the run-time dispatch.
    pub fn plan_entry(&self, k: &Checked) -> PlanEntry<'_> {
        PlanEntry {
            device: &self.device,
            machine: self.machine,
            sizes: self.sizes.as_deref(),
            line: self.line,
            accumulator_bytes: self.plan.accumulator_bytes(k),
            narrowed_for: self.narrowed_for_avx2(k).map(|_| Isa::Avx2),
            rows: self.rows,
            pairs: crate::codegen::cpu::runs_pairs(k, &self.plan),
        }
    }

    /// The entry's plan narrowed to AVX2's registers, which the AVX2 body
    /// runs, where the plan outgrows them and the entry is for any machine
    /// of the AVX-512 kind (no machine description, not the default plan,
    /// which the macro fits to each instruction set itself).
    pub fn narrowed_for_avx2(&self, k: &Checked) -> Option<CpuPlan> {
        if self.machine.is_some() || self.line == DEFAULT_LINE {
            return None;
        }
        self.plan.narrowed(k, Isa::Avx2)
    }
}

/// A config error, already located: `path:line:column: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn located<T>(path: &Path, at: &Spanned<T>, msg: impl std::fmt::Display) -> ConfigError {
    located_at(path, &at.referenced, msg)
}

fn located_at(path: &Path, at: &Location, msg: impl std::fmt::Display) -> ConfigError {
    ConfigError(format!(
        "{}:{}:{}: {msg}",
        path.display(),
        at.line(),
        at.column()
    ))
}

/// The environment variable that names one kernel's config file.
pub fn kernel_env_var(kernel: &str) -> String {
    format!("MDH_CONFIG_{}", kernel.to_uppercase())
}

pub const DIR_ENV_VAR: &str = "MDH_CONFIG_DIR";

/// Whether `dir` is a workspace root: its `Cargo.toml` has a `[workspace]`
/// table (where the lookup of configs stops).
pub fn is_workspace_root(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("Cargo.toml"))
        .is_ok_and(|t| t.lines().any(|l| l.trim() == "[workspace]"))
}

/// Where the config of `kernel` is, per the rules in the module docs.
/// `Err` only when an environment variable names a file that is missing.
pub fn find(kernel: &str, manifest_dir: Option<&Path>) -> Result<Option<PathBuf>, ConfigError> {
    let var = kernel_env_var(kernel);
    if let Ok(p) = std::env::var(&var) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(Some(p))
        } else {
            Err(ConfigError(format!(
                "{var} names `{}`, which is not a file",
                p.display()
            )))
        };
    }
    let file = format!("{kernel}.yaml");
    if let Ok(dir) = std::env::var(DIR_ENV_VAR) {
        let p = Path::new(&dir).join(&file);
        return Ok(p.is_file().then_some(p));
    }
    let mut dir = manifest_dir.map(Path::to_path_buf);
    while let Some(d) = dir {
        let p = d.join("configs").join(&file);
        if p.is_file() {
            return Ok(Some(p));
        }
        if is_workspace_root(&d) {
            break;
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    Ok(None)
}

/// The plans of a kernel's config, per back end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entries {
    pub cpu: Vec<CpuEntry>,
    /// Per GPU back end, in the order of [`Backend::ALL`].
    gpu: [Vec<GpuEntryCfg>; Backend::ALL.len()],
}

impl Entries {
    /// The entries of GPU back end `b`.
    pub fn gpu(&self, b: Backend) -> &[GpuEntryCfg] {
        &self.gpu[b as usize]
    }
}

/// Parses a config file's text and returns its entries for `k`, each
/// checked against the kernel.
pub fn entries(k: &Checked, path: &Path, text: &str) -> Result<Entries, ConfigError> {
    let file: ConfigFile = serde_saphyr::from_str(text).map_err(|e| {
        // serde-saphyr's first line reads "error: line L column C: message".
        let msg = e.to_string();
        let first = msg
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        // Render its location like every other config error: `path:L:C: …`.
        let located = first.strip_prefix("line ").and_then(|rest| {
            let (line, rest) = rest.split_once(" column ")?;
            let (col, text) = rest.split_once(": ")?;
            Some(format!("{}:{line}:{col}: {text}", path.display()))
        });
        ConfigError(located.unwrap_or_else(|| format!("{}: {first}", path.display())))
    })?;
    let name = k.name.to_string();
    if file.kernel.value != name {
        return Err(located(
            path,
            &file.kernel,
            format!(
                "this file is for kernel `{}`, not `{name}`; fix `kernel:` or rename the file",
                file.kernel.value
            ),
        ));
    }
    let mut out = Entries::default();
    for entry in &file.entries {
        let e = &entry.value;
        let line = entry.referenced.line() as u32;
        let sizes = match &e.sizes {
            None => None,
            Some(s) => Some(size_values(k, path, s)?),
        };
        let device = e.device.clone().unwrap_or_else(|| "*".into());
        let backend = e.backend.value.as_str();
        match backend {
            "cpu" => {
                if let Some(g) = &e.gpu {
                    return Err(located(path, g, "a `cpu` entry takes a `cpu:` plan, not `gpu:`; rename the key or change `backend:` to `opencl` or `cuda`"));
                }
                if let Some(a) = &e.arch {
                    return Err(located(path, a, "`arch:` names a CUDA architecture; a `cpu` entry is described by `machine:` (see docs/guide/02-configs.md, \"How entries are chosen\"): remove `arch:`"));
                }
                let exact = e.cpu.as_ref().and_then(|c| c.value.exact.as_ref());
                if let (Some(x), None) = (exact.filter(|x| x.value), &sizes) {
                    return Err(located(path, x, "`exact: true` compiles a body for the entry's sizes, and this entry has none: add `sizes:` or remove `exact`"));
                }
                out.cpu.push(CpuEntry {
                    plan: cpu_plan(k, path, e.cpu.as_ref())?,
                    device,
                    machine: e.machine.as_ref().map(|m| machine(path, m)).transpose()?,
                    sizes,
                    line,
                    rows: None,
                });
            }
            name => {
                let Some(b) = Backend::named(name) else {
                    let names: Vec<String> = Backend::ALL
                        .iter()
                        .map(|b| format!("`{}`", b.name()))
                        .collect();
                    return Err(located(
                        path,
                        &e.backend,
                        format!(
                            "unknown backend `{name}`; use `cpu`, {}",
                            names.join(" or ")
                        ),
                    ));
                };
                if let Some(c) = &e.cpu {
                    return Err(located(path, c, format!("an `{backend}` entry takes a `gpu:` plan, not `cpu:`; rename the key or change `backend:` to `cpu`")));
                }
                if let Some(m) = &e.machine {
                    return Err(located(path, m, format!("`machine:` describes a CPU; an `{backend}` entry is chosen by `device:` (a part of the device's name): remove `machine:`")));
                }
                let arch = match &e.arch {
                    None => None,
                    Some(a) if b != Backend::Cuda => {
                        return Err(located(path, a, format!("`arch:` names a CUDA architecture, and this is an `{backend}` entry (chosen by `device:`): remove `arch:` or make it a `cuda` entry")));
                    }
                    Some(a) => Some(cuda_arch_number(&a.value).ok_or_else(|| {
                        located(path, a, format!("`{}` is not a CUDA architecture: write `sm_` and the compute capability, e.g. `arch: sm_90` for an H100 or H200, `sm_80` for an A100", a.value))
                    })?),
                };
                let entry = GpuEntryCfg {
                    plan: gpu_plan(k, path, e.gpu.as_ref(), backend)?,
                    device,
                    arch,
                    sizes,
                };
                out.gpu[b as usize].push(entry);
            }
        }
    }
    Ok(out)
}

/// The machine description of an entry, checked: a known instruction set,
/// at least one core, cache sizes that read as sizes.
fn machine(path: &Path, m: &Spanned<MachineConfig>) -> Result<Machine, ConfigError> {
    let v = &m.value;
    let isa = Isa::from_name(&v.isa.value).ok_or_else(|| {
        located(
            path,
            &v.isa,
            format!(
                "unknown instruction set `{}`; use one of {} (the vector ISA class of the machine the entry was tuned on)",
                v.isa.value,
                Isa::names()
            ),
        )
    })?;
    if v.cores.value == 0 {
        return Err(located(
            path,
            &v.cores,
            "`cores: 0`: give the number of cores the entry was tuned with (at least 1)",
        ));
    }
    let size = |name: &str, s: &Option<Spanned<SizeText>>| -> Result<Option<u64>, ConfigError> {
        let Some(s) = s else { return Ok(None) };
        let bytes = match &s.value {
            SizeText::Bytes(n) => Some(*n).filter(|&n| n > 0),
            SizeText::Text(t) => parse_size(t),
        };
        let shown = match &s.value {
            SizeText::Bytes(n) => n.to_string(),
            SizeText::Text(t) => t.clone(),
        };
        bytes.map(Some).ok_or_else(|| {
            located(
                path,
                s,
                format!("`{name}: {shown}` is not a cache size; write bytes (524288) or a whole number with a K, M or G suffix (512K, 32M)"),
            )
        })
    };
    Ok(Machine {
        isa,
        cores: v.cores.value,
        l1d: size(CACHE_FIELDS[0], &v.l1d)?,
        l2: size(CACHE_FIELDS[1], &v.l2)?,
        l3: size(CACHE_FIELDS[2], &v.l3)?,
    })
}

/// The CPU plan of an entry: the default with the fields the file sets,
/// checked against the kernel.
fn cpu_plan(
    k: &Checked,
    path: &Path,
    c: Option<&Spanned<CpuConfig>>,
) -> Result<CpuPlan, ConfigError> {
    let mut plan = CpuPlan::default_for(k);
    let Some(c) = c else { return Ok(plan) };
    let v = &c.value;
    let dsts = [
        &mut plan.nod,
        &mut plan.cor,
        &mut plan.l2,
        &mut plan.l1,
        &mut plan.reg,
        &mut plan.order,
    ];
    for (dst, (_, src)) in dsts.into_iter().zip(v.fields()) {
        if let Some(s) = src {
            dst.clone_from(&s.value);
        }
    }
    if let Some(p) = &v.pack {
        plan.pack.clone_from(&p.value);
    }
    if let Some(st) = &v.stream {
        plan.stream = st.value;
    }
    if let Some(ex) = &v.exact {
        plan.exact = ex.value;
    }
    plan.validate(k).map_err(|e| {
        // Point at the offending field where the file sets it.
        match (
            v.fields()
                .into_iter()
                .find(|(n, f)| *n == e.field && f.is_some()),
            &v.pack,
        ) {
            (Some((_, Some(f))), _) => located(path, f, e.message),
            (_, Some(p)) if e.field == "pack" => located(path, p, e.message),
            _ => located(path, c, e.message),
        }
    })?;
    Ok(plan)
}

/// The GPU plan of an entry: the default with the fields the file sets,
/// checked against the kernel and the model's constraints (at most 1024
/// work-items per work-group, registers for the private partial results).
fn gpu_plan(
    k: &Checked,
    path: &Path,
    g: Option<&Spanned<GpuConfig>>,
    backend: &str,
) -> Result<GpuPlan, ConfigError> {
    let desc = KernelDesc::from_kernel(k);
    let mut plan = GpuPlan::default_for(&desc);
    let Some(g) = g else { return Ok(plan) };
    g.value
        .apply(&mut plan)
        .map_err(|(at, why)| located_at(path, at, why))?;
    plan.validate_backend(backend)
        .and_then(|()| plan.validate(&desc))
        .map_err(|e| match g.value.span_of(e.field) {
            Some(at) => located_at(path, at, e.message),
            None => located(path, g, e.message),
        })?;
    Ok(plan)
}

fn size_values(
    k: &Checked,
    path: &Path,
    s: &Spanned<BTreeMap<String, usize>>,
) -> Result<Vec<usize>, ConfigError> {
    if let Some(unknown) = s.value.keys().find(|n| k.size_index(n).is_none()) {
        let known: Vec<String> = k.size_params.iter().map(|p| p.to_string()).collect();
        return Err(located(
            path,
            s,
            format!(
                "`{unknown}` is not a size parameter of `{}`; they are {}",
                k.name,
                known.join(", ")
            ),
        ));
    }
    k.size_params
        .iter()
        .map(|p| {
            s.value.get(&p.to_string()).copied().ok_or_else(|| {
                located(
                    path,
                    s,
                    format!("`sizes` lacks `{p}`; give every size parameter"),
                )
            })
        })
        .collect()
}

/// All entries the macro compiles for `k`: those of its config file, and
/// the default CPU plan last, unless a CPU entry for any machine and any
/// sizes makes it unreachable (the dispatch takes the first such entry
/// before it). Returns the file read (for rebuild tracking).
pub fn plans(
    k: &Checked,
    manifest_dir: Option<&Path>,
) -> Result<(Entries, Option<PathBuf>), ConfigError> {
    let name = k.name.to_string();
    let path = find(&name, manifest_dir)?;
    let entries = match &path {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| {
                ConfigError(format!("{}: cannot read the config: {e}", p.display()))
            })?;
            entries(k, p, &text)?
        }
        None => Entries::default(),
    };
    Ok((with_default(k, entries), path))
}

/// `entries` with the default CPU plan last, for any machine and any
/// sizes (line 0), unless an entry already is for those (the dispatch
/// would take it first), and before it, for a matrix product, the plan of
/// few rows ([`CpuPlan::few_rows_for`]): the CPU plans the macro compiles.
pub fn with_default(k: &Checked, mut entries: Entries) -> Entries {
    if !entries
        .cpu
        .iter()
        .any(|e| e.sizes.is_none() && e.plan_entry(k).for_any_machine())
    {
        for (plan, rows) in CpuPlan::few_rows_for(k) {
            entries.cpu.push(CpuEntry {
                plan,
                device: "*".into(),
                machine: None,
                sizes: None,
                line: FEW_ROWS_LINE,
                rows: Some(rows),
            });
        }
        entries.cpu.push(CpuEntry {
            plan: CpuPlan::default_for(k),
            device: "*".into(),
            machine: None,
            sizes: None,
            line: DEFAULT_LINE,
            rows: None,
        });
    }
    entries
}

#[cfg(test)]
pub(crate) mod tests;
