//! Expands every kernel in the repository with this checkout's compiler and
//! writes each expansion to a file, so that the output of two checkouts can
//! be compared with `diff -r` (`scripts/expansion-snapshot.sh`): a refactor
//! that must not change generated code shows an empty diff.
//!
//! What is expanded, each with the configs its real build finds:
//! - every `mdh! { … }` in a `.rs` file of the repository, with the
//!   `configs/` folder the macro would find from the file's crate
//!   (`ui-tests`: its `tests/ui/configs`, as `tests/ui.rs` sets it);
//! - the example kernels once more with `examples/plans/configs` (the plan
//!   property tests `include!` them there);
//! - every string literal and `quote! { … }` that holds a kernel
//!   (`kernel NAME { … }`: the fixtures and the tests' inline kernels),
//!   without a config.
//!
//! Errors are expansions too (`compile_error!`s): a changed message shows.
//! Absolute paths of the checkout are written as `$ROOT`.
//!
//! Usage: `cargo run -p mdh-core --example expansion_snapshot -- OUT_DIR`.

use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};

fn main() {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: expansion_snapshot OUT_DIR");
        std::process::exit(2);
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let root = root.canonicalize().unwrap_or(root);
    if let Err(e) = run(&root, &out) {
        eprintln!("expansion_snapshot: {e}");
        std::process::exit(1);
    }
}

fn run(root: &Path, out: &Path) -> Result<(), String> {
    let mut files = Vec::new();
    rust_files(root, root, &mut files)?;
    files.sort();
    let mut count = 0;
    for file in &files {
        let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        // Files that are not token streams (none today) are skipped.
        let Ok(tokens) = text.parse::<TokenStream>() else {
            continue;
        };
        let rel = file.strip_prefix(root).unwrap_or(file);
        let name = rel.to_string_lossy().replace('/', "__");
        let crate_dir = crate_dir(root, file);
        let mut macros = Vec::new();
        macro_calls(tokens.clone(), &mut macros);
        let (config_dir, manifest) = config_for(root, rel, &crate_dir);
        for (i, body) in macros.iter().enumerate() {
            let text = expand(body.clone(), config_dir.as_deref(), Some(&manifest));
            write(out, &format!("{name}.mdh{i}.rs"), &text, root)?;
            if rel.starts_with("examples/kernels/src") {
                let plans = root.join("examples/plans");
                let text = expand(body.clone(), None, Some(&plans));
                write(out, &format!("{name}.mdh{i}.plans.rs"), &text, root)?;
            }
            count += 1;
        }
        let mut strings = Vec::new();
        kernel_strings(tokens, &mut strings);
        for (i, src) in strings.iter().enumerate() {
            let Ok(body) = src.parse::<TokenStream>() else {
                continue;
            };
            let none = out.join(".no-configs");
            let text = expand(body, Some(&none), None);
            write(out, &format!("{name}.str{i}.rs"), &text, root)?;
            count += 1;
        }
    }
    eprintln!("expansion_snapshot: {count} kernels into {}", out.display());
    Ok(())
}

/// The `.rs` files under `dir`, except build output and hidden folders.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with('.') || (dir == root && name == "target") {
            continue;
        }
        if path.is_dir() {
            rust_files(root, &path, out)?;
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// The nearest folder above `file` with a `Cargo.toml`.
fn crate_dir(root: &Path, file: &Path) -> PathBuf {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d.join("Cargo.toml").is_file() {
            return d.to_path_buf();
        }
        dir = d.parent();
    }
    root.to_path_buf()
}

/// `MDH_CONFIG_DIR` and `CARGO_MANIFEST_DIR` as the file's real build sets them.
fn config_for(root: &Path, rel: &Path, crate_dir: &Path) -> (Option<PathBuf>, PathBuf) {
    if rel.starts_with("ui-tests") {
        let ui = root.join("ui-tests/tests/ui/configs");
        return (Some(ui), root.join("ui-tests"));
    }
    (None, crate_dir.to_path_buf())
}

fn expand(body: TokenStream, config_dir: Option<&Path>, manifest: Option<&Path>) -> String {
    // One thread: the environment is the macro's only other input.
    match config_dir {
        Some(d) => std::env::set_var("MDH_CONFIG_DIR", d),
        None => std::env::remove_var("MDH_CONFIG_DIR"),
    }
    match manifest {
        Some(m) => std::env::set_var("CARGO_MANIFEST_DIR", m),
        None => std::env::remove_var("CARGO_MANIFEST_DIR"),
    }
    mdh_core::expand(body).to_string()
}

fn write(out: &Path, name: &str, text: &str, root: &Path) -> Result<(), String> {
    fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let text = text.replace(&root.display().to_string(), "$ROOT");
    // One item or statement per line, so that a diff points somewhere.
    let text = text.replace("; ", ";\n").replace("{ ", "{\n");
    let path = out.join(name);
    fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
}

/// The bodies of `mdh! { … }` and `mdh::mdh! { … }`, and of `quote! { … }`
/// that hold a kernel (the tests' inline kernels).
fn macro_calls(tokens: TokenStream, out: &mut Vec<TokenStream>) {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        if let TokenTree::Group(g) = tt {
            let is_call = i >= 2
                && matches!(&tts[i - 2], TokenTree::Ident(id) if id == "mdh")
                && matches!(&tts[i - 1], TokenTree::Punct(p) if p.as_char() == '!');
            let is_quote = i >= 2
                && matches!(&tts[i - 2], TokenTree::Ident(id) if id == "quote")
                && matches!(&tts[i - 1], TokenTree::Punct(p) if p.as_char() == '!');
            if is_call || (is_quote && holds_kernel(&g.stream())) {
                out.push(g.stream());
            } else {
                macro_calls(g.stream(), out);
            }
        }
    }
}

/// Whether `tokens` has `kernel NAME { … }` at its top level.
fn holds_kernel(tokens: &TokenStream) -> bool {
    let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
    tts.windows(3).any(|w| {
        matches!(&w[0], TokenTree::Ident(k) if k == "kernel")
            && matches!(&w[1], TokenTree::Ident(_))
            && matches!(&w[2], TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Brace)
    })
}

/// String literals whose text is a kernel.
fn kernel_strings(tokens: TokenStream, out: &mut Vec<String>) {
    for tt in tokens {
        match tt {
            TokenTree::Group(g) => kernel_strings(g.stream(), out),
            TokenTree::Literal(l) => {
                let Ok(s) = syn::parse_str::<syn::LitStr>(&l.to_string()) else {
                    continue;
                };
                let v = s.value();
                let t = v.trim_start();
                if t.starts_with("kernel ") || t.starts_with("pub kernel ") {
                    out.push(v);
                }
            }
            _ => {}
        }
    }
}
