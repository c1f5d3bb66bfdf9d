//! Finding a kernel in a crate's sources: every `mdh! { … }` invocation in
//! `src/`, `examples/`, `tests/` and `benches/`, parsed and checked by the
//! same functions the macro calls (`mdh_core::compile`), so the tuner and
//! the macro cannot disagree on what a kernel is.

use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

use mdh_core::Checked;

/// One `mdh!` invocation: the file it is in, its tokens and the kernel.
pub struct Found {
    pub file: PathBuf,
    pub tokens: TokenStream,
    pub kernel: Checked,
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
            if let Ok(kernel) = mdh_core::compile(tokens.clone()) {
                found.push(Found {
                    file: file.clone(),
                    tokens,
                    kernel,
                });
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
        .map(|f| format!("  {} ({})", f.kernel.name, f.file.display()))
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
    match all.iter().position(|f| f.kernel.name == name) {
        Some(i) => Ok(all.swap_remove(i)),
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

    #[test]
    fn finds_kernels_and_lists_them() {
        let dir = std::env::temp_dir().join(format!("mdh-tune-source-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(
            dir.join("src/lib.rs"),
            "mdh::mdh! {\n pub kernel scale {\n inp(x: f32[N]),\n out(y: f32[N]),\n out_view(y: |i| (i)),\n md_hom[N](|a| a * 2.0, (CC)),\n inp_view(x: |i| (i)),\n }\n}\nfn f() { let x = vec![1]; }\n",
        )
        .unwrap();
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
}
