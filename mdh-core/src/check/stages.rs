//! The checks of a kernel of stages: how data flows between the stages
//! (every buffer a stage reads is an input or computed by an earlier stage;
//! every buffer is computed by one stage; inputs are never written; every
//! input, output and `tmp` is used), then each stage by [`check`] as a kernel
//! of its own, then the intermediates' shapes against the stages that write
//! and read them.

use super::check;
use crate::analysis::Checked;
use crate::diagnostics::Diagnostics;
use crate::spec::parsed::Kernel;
use crate::spec::{Affine, BufRef, BufferDecl, IndexFn, SizeExpr, Stage, Staged, View};
use syn::Ident;

/// The buffer of the kernel of stages each view of `views` names, with the
/// view.
fn views<'a>(
    views: &'a [View],
    decls: &'a [BufferDecl],
    refs: &'a [BufRef],
) -> impl Iterator<Item = (BufRef, &'a View)> + 'a {
    views.iter().filter_map(move |v| {
        let i = decls.iter().position(|d| d.name == v.buffer)?;
        Some((refs[i], v))
    })
}

/// Checks a parsed kernel of stages (see the module documentation).
pub fn check_staged(k: Staged<Kernel>) -> syn::Result<Staged<Checked>> {
    let mut errs = Diagnostics::default();
    check_flow(&k, &mut errs);
    errs.finish()?;
    let mut errs = Diagnostics::default();
    let staged = k.map_stages(|kernel| errs.take(check(kernel)));
    errs.finish()?;
    let mut errs = Diagnostics::default();
    check_shapes(&staged, &mut errs);
    errs.finish()?;
    Ok(staged)
}

fn check_flow(k: &Staged<Kernel>, errs: &mut Diagnostics) {
    // The stage that computes each buffer, by position in `k.stages`.
    let mut writer: Vec<(BufRef, usize)> = Vec::new();
    let mut read: Vec<BufRef> = Vec::new();
    for (i, s) in k.stages.iter().enumerate() {
        if let Some(first) = k.stages[..i].iter().find(|t| t.name == s.name) {
            errs.error(
                s.name.span(),
                format!(
                    "two stages are named `{}`; rename this one (the first is at `{}`)",
                    s.name, first.name
                ),
            );
        }
        let kern = &s.kernel;
        for (b, v) in views(&kern.out_view, &kern.outputs, &s.writes) {
            let buf = &v.buffer;
            if let BufRef::Input(_) = b {
                errs.error(
                    buf.span(),
                    format!(
                        "stage `{}` writes `{buf}`, an input of kernel `{}`; inputs are read-only, \
                         so declare what the stage computes in `out(...)` or `tmp(...)`",
                        s.name, k.name
                    ),
                );
            } else if let Some(&(_, j)) = writer.iter().find(|w| w.0 == b) {
                errs.error(
                    buf.span(),
                    format!(
                        "`{buf}` is computed by stage `{}` and again by stage `{}`; each buffer \
                         has one stage that writes it, so write this stage's result into a new \
                         buffer declared in `tmp(...)` or `out(...)`",
                        k.stages[j].name, s.name
                    ),
                );
            }
        }
        for (b, v) in views(&kern.inp_view, &kern.inputs, &s.reads) {
            read.push(b);
            if matches!(b, BufRef::Input(_)) || writer.iter().any(|w| w.0 == b) {
                continue;
            }
            let later = (k.stages.iter().enumerate().skip(i))
                .find(|(_, t)| t.writes.contains(&b))
                .map(|(j, t)| (j, &t.name));
            errs.error(v.buffer.span(), read_error(&s.name, &v.buffer, i, later));
        }
        for &b in &s.writes {
            if !writer.iter().any(|w| w.0 == b) {
                writer.push((b, i));
            }
        }
    }
    let is_read = |b: BufRef| read.contains(&b);
    let is_written = |b: BufRef| writer.iter().any(|w| w.0 == b);
    for (i, d) in k.inputs.iter().enumerate() {
        if !is_read(BufRef::Input(i)) {
            errs.error(
                d.span,
                format!(
                    "input `{}` is read by no stage; read it in a stage's `inp_view`, or remove it",
                    d.name
                ),
            );
        }
    }
    for (i, d) in k.outputs.iter().enumerate() {
        if !is_written(BufRef::Output(i)) {
            errs.error(
                d.span,
                format!(
                    "output `{}` is computed by no stage; write it in a stage's `out_view`, or \
                     remove it",
                    d.name
                ),
            );
        }
    }
    for (i, d) in k.tmps.iter().enumerate() {
        let (name, b) = (&d.name, BufRef::Tmp(i));
        // Read but never written: the read already says so.
        match (is_read(b), is_written(b)) {
            (false, false) => errs.error(
                d.span,
                format!(
                    "`tmp` buffer `{name}` is neither computed nor read by any stage; remove it"
                ),
            ),
            (false, true) => errs.error(
                d.span,
                format!(
                    "`tmp` buffer `{name}` is computed but read by no later stage; read it in a \
                     stage's `inp_view`, declare it in `out(...)` to return it, or remove it"
                ),
            ),
            _ => {}
        }
    }
}

/// Why stage `stage` (at position `at`) may not read `buf`: it computes it
/// itself, a later stage does, or none does.
fn read_error(stage: &Ident, buf: &Ident, at: usize, writer: Option<(usize, &Ident)>) -> String {
    match writer {
        Some((j, _)) if j == at => format!(
            "stage `{stage}` reads `{buf}`, which it computes itself; a stage reads only inputs \
             and what earlier stages computed, so split it into two stages"
        ),
        Some((_, w)) => format!(
            "stage `{stage}` reads `{buf}` before stage `{w}` computes it; stages run in order, \
             so move stage `{w}` before stage `{stage}`"
        ),
        None => format!(
            "stage `{stage}` reads `{buf}`, which no stage computes; add a stage before it whose \
             `out_view` writes `{buf}`"
        ),
    }
}

/// An intermediate (`tmp`) indexed by one md_hom dimension alone (`|i, j|
/// (i)`) has that dimension's md_hom size in that position of its shape:
/// the stage that computes it writes all of it, and the stages that read
/// it stay in its bounds. Other index expressions are checked at run time.
fn check_shapes(k: &Staged<Checked>, errs: &mut Diagnostics) {
    for s in &k.stages {
        let kern = &s.kernel;
        let all = views(&kern.out_view, &kern.outputs, &s.writes)
            .map(|(b, v)| (b, v, "writes"))
            .chain(views(&kern.inp_view, &kern.inputs, &s.reads).map(|(b, v)| (b, v, "reads")));
        for (b, v, verb) in all {
            let BufRef::Tmp(t) = b else { continue };
            let decl = &k.tmps[t];
            for f in &v.accesses {
                check_access(k, s, decl, f, verb, errs);
            }
        }
    }
}

fn check_access(
    k: &Staged<Checked>,
    s: &Stage<Checked>,
    decl: &BufferDecl,
    f: &IndexFn,
    verb: &str,
    errs: &mut Diagnostics,
) {
    let kern = &s.kernel;
    for (c, (a, shape)) in f.components.iter().zip(&decl.shape).enumerate() {
        let Some(d) = lone_dim(a) else {
            continue;
        };
        let Some(dim) = kern.dims.get(d) else {
            continue;
        };
        if !SizeExpr::same_as(&dim.size, shape) {
            let (size, dim_name) = (size_text(&dim.size), &f.params[d]);
            errs.error(
                f.component_spans.get(c).copied().unwrap_or(f.span),
                format!(
                    "stage `{}` {verb} `{}` over `{dim_name}`, whose md_hom size is `{size}`, but \
                     dimension {} of `{}` has size `{}` in its `tmp` declaration; an intermediate \
                     is written whole and read in its bounds, so give both the same size \
                     (kernel `{}`)",
                    s.name,
                    decl.name,
                    c + 1,
                    decl.name,
                    size_text(shape),
                    k.name
                ),
            );
        }
    }
}

/// Whether the stage that computes intermediate `t` of `k` writes every
/// element of it: through one access whose components are each one md_hom
/// dimension alone, no dimension twice (`check_shapes` made each such
/// dimension's size the intermediate's extent there). Its old values are
/// then never read.
pub fn written_whole(k: &Staged<Checked>, t: usize) -> bool {
    let Some((s, out)) = k.writer(BufRef::Tmp(t)) else {
        return false;
    };
    let writes: Vec<&IndexFn> = (s.kernel.output_accesses().into_iter())
        .filter(|&(b, _)| b == out)
        .map(|(_, f)| f)
        .collect();
    let [f] = writes[..] else {
        return false;
    };
    distinct_lone_dims(f).is_some_and(|dims| dims.len() == k.tmps[t].shape.len())
}

/// The md_hom dimensions of an index function whose every component is one
/// dimension alone ([`lone_dim`]), none twice (`(i, j)`, `(j, i)`; not
/// `(i, i)`): then each point of the buffer is one point of those
/// dimensions.
pub fn distinct_lone_dims(f: &IndexFn) -> Option<Vec<usize>> {
    let dims: Vec<usize> = f.components.iter().map(lone_dim).collect::<Option<_>>()?;
    (1..dims.len())
        .all(|m| !dims[..m].contains(&dims[m]))
        .then_some(dims)
}

/// The md_hom dimension an index component is, alone (`i`, not `i + 1`,
/// `2 * i` or `i + j`).
pub fn lone_dim(c: &Affine) -> Option<usize> {
    let mut dims = c.dims.iter().enumerate().filter(|(_, &x)| x != 0);
    match (dims.next(), dims.next()) {
        (Some((d, 1)), None) if c.constant == 0 && c.sizes.iter().all(|&x| x == 0) => Some(d),
        _ => None,
    }
}

fn size_text(e: &SizeExpr) -> String {
    match e {
        SizeExpr::Const(c, _) => c.to_string(),
        SizeExpr::Param(p) => p.to_string(),
        SizeExpr::Add(a, b) => format!("{} + {}", size_text(a), size_text(b)),
        SizeExpr::Sub(a, b) => format!("{} - {}", size_text(a), size_text(b)),
        SizeExpr::Mul(a, b) => format!("({}) * ({})", size_text(a), size_text(b)),
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::{BufRef, Program};
    use crate::{compile_program_str, compile_str, Error};

    const CENTER: &str = "kernel center { inp(x: f32[N]), out(y: f32[N]), tmp(s: f32[]), \
        stage sum { out_view(s: |i| ()), md_hom[N](|a| a, (PW(+))), inp_view(x: |i| (i)) }, \
        stage sub { out_view(y: |i| (i)), md_hom[N](|a, m| a - m, (CC)), \
                    inp_view(x: |i| (i), s: |i| ()) } }";

    /// The error text of a kernel that must not compile.
    fn error(source: &str) -> String {
        match compile_program_str(source) {
            Err(Error::Spec(text)) => text,
            other => panic!("expected an error, got {other:?}"),
        }
    }

    /// Which intermediates their stage writes whole (their old values
    /// never read: `written_whole`), on what this checker proves.
    #[test]
    fn intermediates_written_whole() {
        let staged = |source: &str| match compile_program_str(source) {
            Ok(Program::Staged(k)) => k,
            other => panic!("expected a kernel of stages, got {other:?}"),
        };
        // softmax: m at (i), e at (i, j), s at (i): each element once.
        let k = staged(crate::fixtures::SOFTMAX);
        assert!((0..k.tmps.len()).all(|t| super::written_whole(&k, t)));
        assert!(
            super::written_whole(&staged(CENTER), 0),
            "a scalar, written by a reduction"
        );
        // Transposed is whole too; a shifted or a strided write is not
        // (their ranges are checked at run time only; a write that is not
        // injective the checker rejects).
        let with = |write: &str, shape: &str| {
            let k = staged(&format!(
                "kernel k {{ inp(x: f32[N, N]), out(y: f32[N]), tmp(t: f32[{shape}]), \
                 stage a {{ out_view(t: |i, j| {write}), md_hom[N, N](|v| v, (CC, CC)), \
                 inp_view(x: |i, j| (i, j)) }}, \
                 stage b {{ out_view(y: |i| (i)), md_hom[N](|v| v, (CC)), \
                 inp_view(t: |i| (2 * i, i)) }} }}"
            ));
            super::written_whole(&k, 0)
        };
        assert!(with("(j, i)", "N, N"));
        assert!(!with("(i + 1, j)", "N + 1, N"));
        assert!(!with("(2 * i, j)", "2 * N, N"));
    }

    #[test]
    fn stages_are_kernels_of_their_own() {
        let Ok(Program::Staged(k)) = compile_program_str(CENTER) else {
            panic!("center compiles");
        };
        let names: Vec<String> = k.stages.iter().map(|s| s.kernel.name.to_string()).collect();
        assert_eq!(names, ["center_sum", "center_sub"]);
        assert_eq!(k.stages[1].reads, [BufRef::Input(0), BufRef::Tmp(0)]);
        assert_eq!(k.stages[1].writes, [BufRef::Output(0)]);
        assert_eq!(k.stages[0].sizes, [0]);
        // A stage's source is a kernel of one md_hom.
        assert!(compile_str(&k.stages[1].kernel.source).is_ok());
        // A kernel of stages is not one of one md_hom.
        let Err(Error::Spec(text)) = compile_str(CENTER) else {
            panic!("compile_str takes kernels of one md_hom");
        };
        assert!(text.contains("has stages"), "{text}");
    }

    #[test]
    fn single_kernels_stay_single() {
        let source = "kernel copy { inp(x: f32[N]), out(y: f32[N]), out_view(y: |i| (i)), \
                      md_hom[N](|a| a, (CC)), inp_view(x: |i| (i)) }";
        assert!(matches!(
            compile_program_str(source),
            Ok(Program::Single(_))
        ));
    }

    #[test]
    fn malformed_stages_say_how_to_fix_them() {
        let declared_in_stage = error(
            "kernel k { inp(x: f32[N]), out(y: f32[N]), stage s { inp(z: f32[N]), \
             out_view(y: |i| (i)), md_hom[N](|a| a, (CC)), inp_view(x: |i| (i)) } }",
        );
        assert!(
            declared_in_stage.contains("at the top of kernel `k`"),
            "{declared_in_stage}"
        );
        let unknown = error(
            "kernel k { inp(x: f32[N]), out(y: f32[N]), stage s { out_view(y: |i| (i)), \
             md_hom[N](|a| a, (CC)), inp_view(z: |i| (i)) } }",
        );
        assert!(unknown.contains("declare it there"), "{unknown}");
        let twice = error(
            "kernel k { inp(x: f32[N]), out(y: f32[N], w: f32[N]), \
             stage s { out_view(y: |i| (i)), md_hom[N](|a| a, (CC)), inp_view(x: |i| (i)) }, \
             stage s { out_view(w: |i| (i)), md_hom[N](|a| a, (CC)), inp_view(x: |i| (i)) } }",
        );
        assert!(twice.contains("two stages are named `s`"), "{twice}");
        let no_stage = error("kernel k { inp(x: f32[N]), out(y: f32[N]), tmp(t: f32[N]) }");
        assert!(no_stage.contains("has no stage"), "{no_stage}");
    }

    #[test]
    fn the_interpreter_runs_stages_in_order() {
        use crate::interp::{run_program, Buffer};
        let k = compile_program_str(CENTER).unwrap();
        let mut y = [Buffer::from(vec![0.0f32; 3])];
        run_program(&k, &[3], &[vec![1.0f32, 2.0, 6.0].into()], &mut y, &[]).unwrap();
        assert_eq!(y[0], Buffer::from(vec![-8.0f32, -7.0, -3.0]));
        // Wrong counts are an `Err`.
        assert!(run_program(&k, &[3, 4], &[vec![1.0f32; 3].into()], &mut y, &[]).is_err());
    }
}
