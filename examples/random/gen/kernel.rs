//! One random kernel: dimensions and their combine operators, inputs with
//! one or two accesses each, params, outputs of several types, and the
//! scalar function, as the source of an `mdh!` invocation.

use crate::body::{body, Combine};
use crate::rng::Rng;
use crate::scalar::{Env, Var};
use crate::types::{Ty, NUMBERS};
use crate::views::{dims, Dim, Kind, View};

/// A combine operator for outputs of type `ty`: a built-in one or a
/// closure (associative and commutative; a cast inside one for `f32`).
fn operator(rng: &mut Rng, ty: Ty) -> (&'static str, Combine) {
    const FLOAT_CLOSURES: [&str; 3] = [
        "|a, b| a + b",
        "|a, b| a.max(b)",
        "|a, b| if a < b { a } else { b }",
    ];
    const INT_CLOSURES: [&str; 4] = [
        "|a, b| a + b",
        "|a, b| a * b",
        "|a, b| if a > b { a } else { b }",
        "|a, b| a.min(b)",
    ];
    let text = match ty {
        Ty::Bool => rng.pick(&["|a, b| a || b", "|a, b| a && b", "|a, b| a != b"]),
        _ if rng.chance(60) => rng.pick(&["+", "*", "max", "min"]),
        Ty::F32 if rng.chance(25) => "|a, b| ((a as f64) + (b as f64)) as f32",
        t if t.is_float() => rng.pick(&FLOAT_CLOSURES),
        _ => rng.pick(&INT_CLOSURES),
    };
    let product = text == "*" || text == "|a, b| a * b";
    (
        text,
        if product {
            Combine::Product
        } else {
            Combine::Any
        },
    )
}

fn element_type(rng: &mut Rng) -> Ty {
    if rng.chance(10) {
        Ty::Bool
    } else {
        rng.pick(&NUMBERS)
    }
}

/// The source of kernel `name` (without `mdh!`), and the seed it came from
/// in a comment.
pub fn kernel(rng: &mut Rng, name: &str) -> String {
    let n_dims = rng.pick(&[1, 1, 2, 2, 2, 3, 3]);
    let dims = dims(rng, n_dims);
    let reduced = dims.iter().any(|d| d.kind != Kind::Cc);
    let mut env = Env {
        sizes: dims.iter().map(|d| d.size).collect(),
        ..Env::default()
    };
    let (mut inp, mut inp_view, mut fn_params) = (Vec::new(), Vec::new(), Vec::new());
    for b in 0..rng.pick(&[0, 1, 1, 2, 2, 2, 3, 3]) {
        let ty = element_type(rng);
        let first = View::input(rng, &dims);
        let mut views = vec![first];
        if rng.chance(25) {
            let second = views[0].variant(rng);
            views.push(second);
        }
        inp.push(declaration(&format!("x{b}"), ty, &views, &dims));
        inp_view.push(view_entry(&format!("x{b}"), &views, &dims));
        for a in 0..views.len() {
            let name = format!("a{b}{}", ["", "b"][a]);
            let bound = if ty.is_float() { 1.0 } else { 64.0 };
            fn_params.push(name.clone());
            env.vars.push(Var {
                name,
                ty,
                bound,
                exact: true,
            });
        }
    }
    let mut params = Vec::new();
    for p in 0..rng.pick(&[0, 0, 1, 1, 2]) {
        let ty = rng.pick(&[Ty::F32, Ty::F64, Ty::I32, Ty::U32]);
        params.push(format!("p{p}: {}", ty.name()));
        env.vars.push(Var {
            name: format!("p{p}"),
            ty,
            bound: 20.0,
            exact: true,
        });
    }
    let (mut out, mut out_view, mut outputs, mut ops) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for o in 0..rng.pick(&[1, 1, 2, 2, 3]) {
        let ty = element_type(rng);
        let mut views = vec![View::output(rng, &dims)];
        if let Some(second) = views[0].interleaved().filter(|_| rng.chance(50)) {
            views.push(second);
        }
        out.push(declaration(&format!("y{o}"), ty, &views, &dims));
        out_view.push(view_entry(&format!("y{o}"), &views, &dims));
        for _ in &views {
            let (op, combine) = if reduced {
                operator(rng, ty)
            } else {
                ("+", Combine::Any)
            };
            ops.push(op);
            outputs.push((ty, combine));
        }
    }
    if fn_params.is_empty() || rng.chance(40) {
        env.indices = dims.iter().map(|d| d.index).collect();
        let pattern = format!("[{}]", env.indices.join(", "));
        fn_params.insert(0, pattern);
    }
    let scalar = body(rng, &mut env, &outputs);
    let combine = combine_ops(&dims, &ops);
    let sizes: Vec<&str> = dims.iter().map(|d| d.size).collect();
    let params = if params.is_empty() {
        String::new()
    } else {
        format!("\n        params({}),", params.join(", "))
    };
    format!(
        "pub kernel {name} {{
        inp({}),
        out({}),{params}
        out_view({}),
        md_hom[{}](|{}| {scalar}, ({combine})),
        inp_view({}),
    }}",
        inp.join(", "),
        out.join(", "),
        out_view.join(", "),
        sizes.join(", "),
        fn_params.join(", "),
        inp_view.join(", "),
    )
}

/// `x0: f32[I + 1]`: a buffer with the shape its accesses need.
fn declaration(buffer: &str, ty: Ty, views: &[View], dims: &[Dim]) -> String {
    format!("{buffer}: {}[{}]", ty.name(), View::shape(views, dims))
}

/// `x0: |i| (i)`, or `x0: [|i| (i), |i| (i + 1)]` for several accesses.
fn view_entry(buffer: &str, views: &[View], dims: &[Dim]) -> String {
    let closures: Vec<String> = views.iter().map(|v| v.closure(dims)).collect();
    match closures.len() {
        1 => format!("{buffer}: {}", closures[0]),
        _ => format!("{buffer}: [{}]", closures.join(", ")),
    }
}

/// `CC, PW(+), PS(+, max)`: one operator per output access in every
/// reduced dimension (Lemma 1: the same in all of them), written once
/// where all outputs share a built-in one (a closure has one type).
fn combine_ops(dims: &[Dim], ops: &[&str]) -> String {
    let list = if ops.iter().all(|o| *o == ops[0] && !o.starts_with('|')) {
        ops[0].to_string()
    } else {
        ops.join(", ")
    };
    let per_dim: Vec<String> = dims
        .iter()
        .map(|d| match d.kind {
            Kind::Cc => "CC".to_string(),
            Kind::Pw => format!("PW({list})"),
            Kind::Ps => format!("PS({list})"),
        })
        .collect();
    per_dim.join(", ")
}
