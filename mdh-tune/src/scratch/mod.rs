//! The scratch crate that measures CPU candidates. CPU plans are compiled
//! into the kernel (constant trip counts), so each batch of candidates is
//! one build: a renamed copy of the kernel per candidate (`c0`, `c1`, …),
//! each with its own `configs/cN.yaml`, and a `main` that checks and times
//! them all in one process (see `harness.rs`). A NOD batch (`--ranks`) is
//! one copy of the kernel with the CPU plan that runs today, run under
//! `mpirun` once per candidate `nod` (the `mpi` feature of the crate).
//!
//! The crate lives in `<target dir>/mdh-tune/<kernel>/` and builds into
//! `<target dir>/mdh-tune/target`, shared by all kernels: the dependencies
//! (`mdh`, `rayon`, `syn`, …) compile once, later batches rebuild only the
//! generated code.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde::Deserialize;

use mdh::search::check;
use mdh_core::config::{cpu_entry_yaml, merge_entry, EntryKey};
use mdh_core::plan::CpuPlan;
use mdh_core::spec::ScalarType;
use mdh_core::Checked;

/// Where the tuned crate's `mdh` comes from, and where it builds.
pub struct Workspace {
    /// `mdh` and `mdh-core` as dependency lines of a Cargo.toml.
    pub deps: String,
    pub target_dir: PathBuf,
    pub lock_file: Option<PathBuf>,
}

#[derive(Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    target_directory: PathBuf,
    workspace_root: PathBuf,
}

#[derive(Deserialize)]
struct Package {
    name: String,
    version: String,
    source: Option<String>,
    manifest_path: PathBuf,
}

impl Workspace {
    /// Asks cargo where the crate at `manifest` gets `mdh` from.
    pub fn of(manifest: &Path) -> Result<Workspace, String> {
        let out = Command::new(cargo())
            .args(["metadata", "--format-version", "1", "--manifest-path"])
            .arg(manifest)
            .output()
            .map_err(|e| format!("cannot run cargo: {e}; put cargo on PATH or set CARGO"))?;
        if !out.status.success() {
            return Err(format!(
                "`cargo metadata` failed for {}; fix the manifest:\n{}",
                manifest.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let m: Metadata = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("cannot read `cargo metadata`'s answer: {e}"))?;
        // `features`: what the harness needs beyond what the tuned crate
        // enables (it may use `mdh` without the interpreter).
        let dep = |name: &str, features: &str| -> Result<String, String> {
            let p = m.packages.iter().find(|p| p.name == name).ok_or_else(|| {
                format!(
                    "{} does not depend on `{name}`; the crate to tune must use mdh",
                    manifest.display()
                )
            })?;
            Ok(match &p.source {
                // A path dependency: the same sources.
                None => format!(
                    "{name} = {{ path = {}, features = [{features}] }}\n",
                    toml_string(
                        &p.manifest_path
                            .parent()
                            .unwrap_or(Path::new("."))
                            .display()
                            .to_string()
                    )
                ),
                Some(_) => format!(
                    "{name} = {{ version = \"={}\", features = [{features}] }}\n",
                    p.version
                ),
            })
        };
        let lock = m.workspace_root.join("Cargo.lock");
        Ok(Workspace {
            deps: dep("mdh", "\"reference\"")? + &dep("mdh-core", "")?,
            target_dir: m.target_directory,
            lock_file: lock.is_file().then_some(lock),
        })
    }
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// TOML basic strings escape like JSON's.
fn toml_string(s: &str) -> String {
    mdh_core::config::yaml_string(s)
}

/// One measured candidate, as the harness reports it.
#[derive(Debug, Deserialize)]
pub struct Measured {
    pub kernel: String,
    pub status: String,
    #[serde(default)]
    pub time_s: Option<f64>,
    #[serde(default)]
    pub error: Option<String>,
    /// Each sample of an interleaved run (see [`Scratch::run`]).
    #[serde(default)]
    pub samples: Vec<f64>,
    /// NOD runs: the bytes the busiest rank sent in one call.
    #[serde(default)]
    pub bytes_sent: Option<u64>,
}

/// What one build of the scratch crate measures.
pub enum Batch<'a> {
    /// Candidate `cN` runs `plans[N]` on this machine.
    Plans(&'a [CpuPlan]),
    /// The kernel with `plan`, candidate `nN` on the ranks of MPI's world
    /// with `nods[N]` parts per dimension (run under `mpirun`).
    Nods {
        plan: &'a CpuPlan,
        nods: &'a [Vec<usize>],
    },
}

/// How a batch is timed (see `harness.rs`).
#[derive(Clone, Copy, Debug)]
pub enum Timing {
    /// Each candidate alone; one slower than `slow_s` in its checked run
    /// is not repeated.
    OneByOne { slow_s: f64 },
    /// The candidates in turns, one sample each per round.
    Interleaved { rounds: usize },
}

pub struct Scratch {
    dir: PathBuf,
    target_dir: PathBuf,
    package: String,
    kernel: Checked,
    tokens: TokenStream,
    sizes: Vec<usize>,
    /// Candidates are checked against the default plan's result (a copy
    /// `cref` of the kernel without a config) instead of the interpreter's.
    by_default: bool,
}

/// A literal of a scalar param's value in the tuning runs
/// ([`check::param`]), and the same value for the reference interpreter.
fn param_value(t: ScalarType) -> (TokenStream, TokenStream) {
    let v = check::param(t);
    let lit: TokenStream = match t {
        ScalarType::Bool => v.to_string(),
        _ => format!("{v}{}", t.name()),
    }
    .parse()
    .expect("a literal");
    let variant = format_ident!("{}", format!("{t:?}"));
    (lit.clone(), quote!(mdh::reference::Value::#variant(#lit)))
}

impl Scratch {
    /// Creates (or reuses) the scratch crate of `kernel` under `ws`.
    pub fn new(
        ws: &Workspace,
        kernel: &Checked,
        tokens: &TokenStream,
        sizes: &[usize],
    ) -> Result<Scratch, String> {
        let root = ws.target_dir.join("mdh-tune");
        let dir = root.join(kernel.name.to_string());
        let package = format!("mdh-tune-{}", kernel.name.to_string().replace('_', "-"));
        let io = |e: std::io::Error| {
            format!("cannot write the scratch crate in {}: {e}; check that the target directory is writable", dir.display())
        };
        std::fs::create_dir_all(dir.join("src")).map_err(io)?;
        std::fs::create_dir_all(dir.join("configs")).map_err(io)?;
        let manifest = format!(
            "# Written by mdh-tune: one build per batch of candidates.\n[package]\nname = \"{package}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[features]\n# NOD batches (`mdh-tune --ranks`): the node layer over MPI.\nmpi = [\"mdh/mpi\"]\n\n[dependencies]\n{}\n[workspace]\n\n[profile.release]\ndebug = false\n",
            ws.deps
        );
        std::fs::write(dir.join("Cargo.toml"), manifest).map_err(io)?;
        if let Some(lock) = &ws.lock_file {
            // Same dependency versions as the tuned crate, and no resolution.
            if !dir.join("Cargo.lock").exists() {
                std::fs::copy(lock, dir.join("Cargo.lock")).map_err(io)?;
            }
        }
        std::fs::write(dir.join("src/harness.rs"), include_str!("harness.rs")).map_err(io)?;
        Ok(Scratch {
            dir,
            target_dir: root.join("target"),
            package,
            kernel: kernel.clone(),
            tokens: tokens.clone(),
            sizes: sizes.to_vec(),
            by_default: false,
        })
    }

    /// Checks candidates against the default plan's result: where the
    /// interpreter is too slow or, for long float sums, too inexact (see
    /// [`crate::reference`]).
    pub fn check_against_default(&mut self) {
        self.by_default = true;
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes the crate for `batch`.
    fn write(&self, batch: &Batch) -> Result<(), String> {
        let k = &self.kernel;
        let io = |e: std::io::Error| {
            format!(
                "cannot write the scratch crate in {}: {e}",
                self.dir.display()
            )
        };
        let configs = self.dir.join("configs");
        for old in std::fs::read_dir(&configs).map_err(io)?.flatten() {
            std::fs::remove_file(old.path()).map_err(io)?;
        }
        let mut kernels = TokenStream::new();
        let mut calls = TokenStream::new();
        let (lits, values): (Vec<_>, Vec<_>) = k.params.iter().map(|p| param_value(p.ty)).unzip();
        let sizes = &self.sizes;
        let size_names = &k.size_params;
        // A run of kernel `m` by `entry` (its `cpu`, or its `mpi::run_with`
        // after the arguments `lead`) on the inputs `ins` and the outputs
        // `__outs`.
        let call = |m: &proc_macro2::Ident,
                    entry: TokenStream,
                    lead: TokenStream,
                    ins: TokenStream| {
            let ins = k.inputs.iter().enumerate().map(|(b, d)| {
                let f = format_ident!("as_{}", d.ty.name());
                quote!(#ins[#b].#f().unwrap())
            });
            let outs = k.outputs.iter().map(|d| {
                let f = format_ident!("as_{}_mut", d.ty.name());
                quote!(__o.next().unwrap().#f().unwrap())
            });
            quote! {
                let mut __o = __outs.iter_mut();
                #m::#entry(#lead #(#ins,)* #(#outs,)* #(#lits,)* #m::Sizes { #(#size_names: #sizes),* })
            }
        };
        // Copy `name` of the kernel, compiled with `plan` only.
        let mut copy = |name: &str, plan: &CpuPlan| -> Result<proc_macro2::Ident, String> {
            let path = configs.join(format!("{name}.yaml"));
            let renamed = mdh_core::compile(crate::source::renamed(&self.tokens, name))
                .map_err(|e| format!("the renamed kernel does not compile: {e}"))?;
            // For any device and sizes: the only plan compiled in (with
            // the tuned sizes where it asks for a body of exactly them).
            let exact = plan.exact.then_some(&sizes[..]);
            let entry = cpu_entry_yaml(&renamed, "*", None, exact, plan, &[]);
            let key = EntryKey {
                backend: "cpu",
                device: "*",
                machine: None,
                sizes,
            };
            let text = merge_entry(&renamed, &path, None, key, &entry).map_err(|e| e.0)?;
            std::fs::write(&path, text).map_err(io)?;
            let toks = crate::source::renamed(&self.tokens, name);
            kernels.extend(quote!(mdh::mdh! { #toks }));
            Ok(format_ident!("{}", name))
        };
        let mpi = matches!(batch, Batch::Nods { .. });
        match batch {
            Batch::Plans(plans) => {
                for (i, plan) in plans.iter().enumerate() {
                    let name = format!("c{i}");
                    let run = call(
                        &copy(&name, plan)?,
                        quote!(cpu),
                        quote!(),
                        quote!(case.inputs),
                    );
                    calls.extend(quote! {
                        (#name, ::std::boxed::Box::new(|__outs: &mut [mdh::reference::Buffer]| { #run }) as harness::Run<'_>),
                    });
                }
            }
            Batch::Nods { plan, nods } => {
                let m = copy("c0", plan)?;
                let lead = quote! {
                    &__world, Some(&__plan), mdh::mpi::Inputs::Replicated, mdh::mpi::Placement::All,
                };
                let run = call(&m, quote!(mpi::run_with), lead, quote!(case.inputs));
                for (i, nod) in nods.iter().enumerate() {
                    let name = format!("n{i}");
                    calls.extend(quote! {
                        let __plan = #m::mpi::plan_with(&__world, &[#(#nod),*], #m::Sizes { #(#size_names: #sizes),* })
                            .unwrap_or_else(|e| harness::fail(format!("nod {:?}: {e}", [#(#nod),*])));
                        harness::measure_ranks(&case, #name, &__world, |__outs: &mut [mdh::reference::Buffer]| { #run });
                    });
                }
            }
        }
        // The reference: the interpreter's, or the default plan's (`cref`
        // has no config, so the macro compiles the default plan).
        let by_default = if self.by_default {
            let toks = crate::source::renamed(&self.tokens, "cref");
            kernels.extend(quote!(mdh::mdh! { #toks }));
            let run = call(&format_ident!("cref"), quote!(cpu), quote!(), quote!(__ins));
            quote!(::core::option::Option::Some(|__ins: &[mdh::reference::Buffer], __outs: &mut [mdh::reference::Buffer]| { #run }))
        } else {
            quote!(::core::option::Option::None)
        };
        let spec = &k.source;
        let setup = quote!(harness::setup(#spec, &[#(#sizes),*], &[#(#values),*], #by_default));
        let body = if mpi {
            quote! {
                let __universe = mdh::mpi::initialize().unwrap_or_else(|| harness::fail("MPI is already initialized".into()));
                let __world = __universe.world();
                let case = harness::setup_ranks(&__world, || #setup);
                #calls
            }
        } else {
            quote! {
                let case = #setup;
                harness::measure_all(&case, &mut [#calls]);
            }
        };
        let main = quote! {
            //! Written by mdh-tune for one batch of candidates; overwritten.
            mod harness;
            #kernels
            fn main() {
                #body
            }
        };
        std::fs::write(self.dir.join("src/main.rs"), main.to_string()).map_err(io)
    }

    /// Builds the crate for `batch` (release, the configs of this crate
    /// only; NOD batches with the `mpi` feature). Returns the binary.
    pub fn build(&self, batch: &Batch) -> Result<PathBuf, String> {
        self.write(batch)?;
        let mpi = matches!(batch, Batch::Nods { .. }).then_some(["--features", "mpi"]);
        let out = Command::new(cargo())
            .args(["build", "--release", "--quiet"])
            .args(mpi.iter().flatten())
            .arg("--manifest-path")
            .arg(self.dir.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &self.target_dir)
            .env(mdh_core::config::DIR_ENV_VAR, self.dir.join("configs"))
            .stdout(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run cargo: {e}; put cargo on PATH or set CARGO"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(30).collect();
            return Err(format!(
                "the scratch crate in {} does not build (a bug of mdh: please report it with this output):\n{}",
                self.dir.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        Ok(self.target_dir.join("release").join(&self.package))
    }

    /// Runs a built batch (a NOD batch under `mpirun -np ranks`); calls
    /// `each` with every result as it arrives.
    /// `how`: a candidate slower than this in its checked run is timed
    /// once, or the candidates take turns for this many rounds. The
    /// reference outputs are cached in `reference`.
    pub fn run(
        &self,
        binary: &Path,
        ranks: Option<usize>,
        how: Timing,
        reference: &Path,
        mut each: impl FnMut(Measured) -> Result<(), String>,
    ) -> Result<(), String> {
        let (flag, value) = match how {
            Timing::OneByOne { slow_s } => ("--slow", slow_s.to_string()),
            Timing::Interleaved { rounds } => ("--interleave", rounds.to_string()),
        };
        let mut cmd = match ranks {
            Some(n) => {
                let mut c = Command::new("mpirun");
                c.arg("-np").arg(n.to_string()).arg(binary);
                c
            }
            None => Command::new(binary),
        };
        let mut child = cmd
            .arg(flag)
            .arg(value)
            .arg("--reference")
            .arg(reference)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| match ranks {
                Some(_) => format!("cannot run mpirun: {e}; install MPI (e.g. Debian's openmpi-bin) and put mpirun on PATH"),
                None => format!("cannot run {}: {e}", binary.display()),
            })?;
        let stdout = child.stdout.take().expect("piped");
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.map_err(|e| format!("reading the measurements: {e}"))?;
            let m: Measured = serde_json::from_str(&line)
                .map_err(|e| format!("the harness wrote `{line}`, not a measurement: {e}"))?;
            each(m)?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("waiting for {}: {e}", binary.display()))?;
        if !out.status.success() {
            return Err(format!(
                "the measurement process failed ({}); a candidate crashed it:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated crate (without building it: that is a release build of
    /// mdh, for the ignored end-to-end test): valid Rust, one config per
    /// candidate that the macro reads back as that candidate's plan.
    #[test]
    fn a_batch_is_one_crate_with_a_config_per_candidate() {
        let tokens: TokenStream = "pub kernel saxpy { inp(x: f32[N], y: f32[N]), out(z: f32[N]), params(a: f32), out_view(z: |i| (i)), md_hom[N](|u, v| a * u + v, (CC)), inp_view(x: |i| (i), y: |i| (i)), }"
            .parse()
            .unwrap();
        let k = mdh_core::compile(tokens.clone()).unwrap();
        let tmp = std::env::temp_dir().join(format!("mdh-tune-scratch-{}", std::process::id()));
        let ws = Workspace {
            deps: "mdh = { path = \"/nowhere\" }\n".into(),
            target_dir: tmp.clone(),
            lock_file: None,
        };
        let s = Scratch::new(&ws, &k, &tokens, &[1000]).unwrap();
        let mut other = CpuPlan::default_for(&k);
        other.reg = vec![4];
        other.l1 = vec![64];
        let plans = [CpuPlan::default_for(&k), other];
        s.write(&Batch::Plans(&plans)).unwrap();
        let main = std::fs::read_to_string(s.dir().join("src/main.rs")).unwrap();
        syn::parse_file(&main).unwrap();
        assert!(
            main.contains("c1 :: cpu") && main.contains("0.5f32"),
            "{main}"
        );
        for (i, plan) in plans.iter().enumerate() {
            let path = s.dir().join(format!("configs/c{i}.yaml"));
            let renamed =
                mdh_core::compile(crate::source::renamed(&tokens, &format!("c{i}"))).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            let e = mdh_core::config::plans(&renamed, Some(&s.dir))
                .unwrap()
                .0
                .cpu;
            assert_eq!(e.len(), 1, "the candidate alone, no default: {text}");
            assert_eq!(&e[0].plan, plan);
        }
        // A smaller batch leaves no stale configs behind.
        s.write(&Batch::Plans(&plans[..1])).unwrap();
        assert!(!s.dir().join("configs/c1.yaml").exists());
        std::fs::remove_dir_all(&tmp).unwrap();
    }

    /// The harness checks candidates with the interpreter: the scratch
    /// crate's `mdh` needs its `reference` feature.
    #[test]
    fn the_scratch_crate_gets_the_interpreter() {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels/Cargo.toml");
        let ws = Workspace::of(&manifest).unwrap();
        let mdh = ws.deps.lines().find(|l| l.starts_with("mdh = ")).unwrap();
        assert!(mdh.contains("features = [\"reference\"]"), "{}", ws.deps);
    }
}
