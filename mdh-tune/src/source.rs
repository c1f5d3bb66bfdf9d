//! Finding a kernel in a crate's sources: every `mdh! { … }` invocation in
//! `src/`, `examples/`, `tests/` and `benches/`, parsed and checked by the
//! same functions the macro calls (`mdh_core::compile`), so the tuner and
//! the macro cannot disagree on what a kernel is.

use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

use mdh_core::{Checked, Program};

/// One kernel of an `mdh!` invocation: the file it is in, its tokens and
/// the kernel. A kernel of stages is found as its stages, each a kernel of
/// one md_hom named `KERNEL_STAGE` (the name its config file takes), its
/// tokens those the macro builds for it.
pub struct Found {
    pub file: PathBuf,
    pub tokens: TokenStream,
    pub kernel: Checked,
    /// The kernel of stages and the stage this is, if it is one.
    pub stage_of: Option<(String, String)>,
}

struct Invocations(Vec<TokenStream>);

impl<'ast> Visit<'ast> for Invocations {
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if m.path.segments.last().is_some_and(|s| s.ident == "mdh") {
            self.0.push(m.tokens.clone());
        }
        syn::visit::visit_macro(self, m);
    }
}

/// The Rust files of a crate the tuner searches, in a stable order.
fn rust_files(crate_dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["src", "examples", "tests", "benches"]
        .iter()
        .flat_map(|d| walkdir::WalkDir::new(crate_dir.join(d)).into_iter())
        .filter_map(Result::ok)
        .map(walkdir::DirEntry::into_path)
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    files
}

/// All kernels defined with `mdh!` in the crate at `crate_dir`. Files that do
/// not parse, and invocations that the macro would reject, are skipped: the
/// crate's own build reports them.
pub fn kernels(crate_dir: &Path) -> Result<Vec<Found>, String> {
    let mut found = Vec::new();
    for file in rust_files(crate_dir) {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("cannot read {}: {e}; check its permissions", file.display()))?;
        let Ok(ast) = syn::parse_file(&text) else {
            continue;
        };
        let mut v = Invocations(Vec::new());
        v.visit_file(&ast);
        for tokens in v.0 {
            match mdh_core::compile_program(tokens.clone()) {
                Ok(Program::Single(kernel)) => found.push(Found {
                    file: file.clone(),
                    tokens,
                    kernel,
                    stage_of: None,
                }),
                Ok(Program::Staged(staged)) => {
                    for s in staged.stages {
                        let Ok(tokens) = s.kernel.source.parse::<TokenStream>() else {
                            continue;
                        };
                        found.push(Found {
                            file: file.clone(),
                            tokens,
                            kernel: s.kernel,
                            stage_of: Some((staged.name.to_string(), s.name.to_string())),
                        });
                    }
                }
                Err(_) => {}
            }
        }
    }
    Ok(found)
}

/// The kernel named `name`, or an error listing the kernels there are.
pub fn find(crate_dir: &Path, name: Option<&str>) -> Result<Found, String> {
    let mut all = kernels(crate_dir)?;
    let list = all
        .iter()
        .map(|f| match &f.stage_of {
            Some((kernel, stage)) => format!(
                "  {} (stage `{stage}` of `{kernel}`, {})",
                f.kernel.name,
                f.file.display()
            ),
            None => format!("  {} ({})", f.kernel.name, f.file.display()),
        })
        .collect::<Vec<_>>()
        .join("\n");
    if all.is_empty() {
        return Err(format!(
            "no `mdh!` kernel found under {}; point --manifest-path at the crate that defines the kernel",
            crate_dir.display()
        ));
    }
    let Some(name) = name else {
        return Err(format!(
            "name the kernel to tune with --kernel; this crate defines:\n{}",
            list
        ));
    };
    let stages: Vec<String> = (all.iter())
        .filter(|f| f.stage_of.as_ref().is_some_and(|(k, _)| k == name))
        .map(|f| format!("--kernel {}", f.kernel.name))
        .collect();
    match all.iter().position(|f| f.kernel.name == name) {
        Some(i) => Ok(all.swap_remove(i)),
        None if !stages.is_empty() => Err(format!(
            "`{name}` is a kernel of stages, whose plans are its stages' (each its own config \
             file): tune them one at a time, {}",
            stages.join(", ")
        )),
        None => Err(format!(
            "no kernel `{name}` in {}; use one of:\n{}",
            crate_dir.display(),
            list
        )),
    }
}

/// The invocation's tokens with the kernel renamed to `new` (the scratch
/// crate holds one renamed copy per candidate, each with its own config).
pub fn renamed(tokens: &TokenStream, new: &str) -> TokenStream {
    let mut out = Vec::new();
    let mut after_kernel = false;
    for t in tokens.clone() {
        match &t {
            TokenTree::Ident(i) if after_kernel => {
                out.push(TokenTree::Ident(proc_macro2::Ident::new(new, i.span())));
                after_kernel = false;
                continue;
            }
            TokenTree::Ident(i) if i == "kernel" => after_kernel = true,
            _ => after_kernel = false,
        }
        out.push(t);
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate folder (removed by the caller) whose `src/lib.rs` is `lib`.
    fn crate_with(name: &str, lib: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mdh-tune-{name}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/lib.rs"), lib).unwrap();
        dir
    }

    #[test]
    fn finds_kernels_and_lists_them() {
        let dir = crate_with(
            "source",
            "mdh::mdh! {\n pub kernel scale {\n inp(x: f32[N]),\n out(y: f32[N]),\n out_view(y: |i| (i)),\n md_hom[N](|a| a * 2.0, (CC)),\n inp_view(x: |i| (i)),\n }\n}\nfn f() { let x = vec![1]; }\n",
        );
        let f = find(&dir, Some("scale")).unwrap();
        assert_eq!(f.kernel.name, "scale");
        let e = find(&dir, None).err().unwrap();
        assert!(e.contains("--kernel") && e.contains("scale"), "{e}");
        let e = find(&dir, Some("nope")).err().unwrap();
        assert!(e.contains("no kernel `nope`"), "{e}");
        let r = mdh_core::compile(renamed(&f.tokens, "c7")).unwrap();
        assert_eq!(r.name, "c7");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn kernels_of_stages_are_found_as_their_stages() {
        let dir = crate_with(
            "stages",
            "mdh::mdh! {\n pub kernel center {\n inp(x: f32[N]),\n out(y: f32[N]),\n tmp(s: f32[]),\n params(k: f32),\n \
             stage sum {\n out_view(s: |i| ()),\n md_hom[N](|a| a, (PW(+))),\n inp_view(x: |i| (i)),\n },\n \
             stage sub {\n out_view(y: |i| (i)),\n md_hom[N](|a, t| a - t * k, (CC)),\n inp_view(x: |i| (i), s: |i| ()),\n },\n }\n}\n",
        );
        let all = kernels(&dir).unwrap();
        let names: Vec<String> = all.iter().map(|f| f.kernel.name.to_string()).collect();
        assert_eq!(names, ["center_sum", "center_sub"]);
        // A stage is a kernel of one md_hom, as the macro builds it: its
        // reads are inputs, its writes outputs, the params shared.
        let f = find(&dir, Some("center_sub")).unwrap();
        assert_eq!(f.stage_of, Some(("center".into(), "sub".into())));
        assert_eq!(f.kernel.inputs.len(), 2);
        assert_eq!(f.kernel.params.len(), 1);
        let r = mdh_core::compile(renamed(&f.tokens, "c7")).unwrap();
        assert_eq!((r.name.to_string(), r.outputs.len()), ("c7".into(), 1));
        // The kernel of stages itself: which stages to tune.
        let e = find(&dir, Some("center")).err().unwrap();
        assert!(
            e.contains("kernel of stages")
                && e.contains("--kernel center_sum, --kernel center_sub"),
            "{e}"
        );
        let e = find(&dir, None).err().unwrap();
        assert!(e.contains("center_sub (stage `sub` of `center`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
