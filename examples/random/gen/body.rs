//! The scalar function: `let` and `let mut` bindings, an `if` that assigns,
//! a bounded `for` loop with `break`, then one value per output access.

use crate::rng::Rng;
use crate::scalar::{cast, clamp, expr, var, Env, Var, E};
use crate::types::{Ty, NUMBERS};

/// How an output's values are combined, as far as its values' range goes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// No reduced dimension, or a sum, max, min or `bool` operator.
    Any,
    /// A product: float factors stay near 1, so that long products neither
    /// overflow nor underflow (where the order of rounding would show).
    Product,
}

/// The body of the scalar function, for outputs of these types, in `env`
/// (the parameters, indices, sizes and params): a block or an expression.
pub fn body(rng: &mut Rng, env: &mut Env, outputs: &[(Ty, Combine)]) -> String {
    let mut stmts: Vec<String> = Vec::new();
    let mut muts: Vec<usize> = Vec::new();
    for t in 0..rng.below(4) {
        let ty = if rng.chance(10) {
            Ty::Bool
        } else {
            rng.pick(&NUMBERS)
        };
        let x = expr(rng, env, ty, 2);
        let mutable = rng.chance(40);
        let name = format!("t{t}");
        stmts.push(format!(
            "let {}{name} = {};",
            if mutable { "mut " } else { "" },
            x.text
        ));
        if mutable {
            muts.push(env.vars.len());
        }
        env.vars.push(Var {
            name,
            ty,
            bound: x.bound,
            exact: x.exact,
        });
    }
    if let Some(&m) = muts.first() {
        if rng.chance(60) {
            stmts.push(assign_if(rng, env, m));
        }
        if rng.chance(40) && env.vars[m].ty != Ty::Bool {
            stmts.push(accumulate_loop(rng, env, m));
        }
    }
    let results: Vec<String> = outputs
        .iter()
        .map(|&(ty, c)| result(rng, env, ty, c).text)
        .collect();
    let value = match results.len() {
        1 => results[0].clone(),
        _ => format!("({})", results.join(", ")),
    };
    if stmts.is_empty() {
        value
    } else {
        format!("{{ {} {value} }}", stmts.join(" "))
    }
}

/// `if c { t = a; } else { t = b; }` (the `else` half the time).
fn assign_if(rng: &mut Rng, env: &mut Env, m: usize) -> String {
    let c = expr(rng, env, Ty::Bool, 1);
    let v = &env.vars[m];
    let (name, ty) = (v.name.clone(), v.ty);
    let a = expr(rng, env, ty, 2);
    let mut s = format!("if {} {{ {name} = {}; }}", c.text, a.text);
    let mut updated = vec![a];
    if rng.chance(50) {
        let b = expr(rng, env, ty, 2);
        s += &format!(" else {{ {name} = {}; }}", b.text);
        updated.push(b);
    }
    let v = &mut env.vars[m];
    for x in updated {
        v.bound = v.bound.max(x.bound);
        v.exact &= x.exact;
    }
    s
}

/// `for _ in 0..n { if c { break; } t = t + a; }`: `c` may read `t`.
fn accumulate_loop(rng: &mut Rng, env: &mut Env, m: usize) -> String {
    let trips = 1 + rng.below(4);
    let c = expr(rng, env, Ty::Bool, 1);
    let v = &env.vars[m];
    let (name, ty) = (v.name.clone(), v.ty);
    let a = expr(rng, env, ty, 1);
    let v = &mut env.vars[m];
    v.bound += trips as f64 * a.bound;
    v.exact &= a.exact;
    format!(
        "for _ in 0..{trips} {{ if {} {{ break; }} {name} = {name} + {}; }}",
        c.text, a.text
    )
}

/// The value of one output access: sometimes a cast of a binding (as in
/// `(r, r as f64)`), else a new expression; near 1 for float products.
fn result(rng: &mut Rng, env: &Env, ty: Ty, combine: Combine) -> E {
    // A float cast to an integer only where it is exact (see `scalar`).
    let castable: Vec<&Var> = env
        .vars
        .iter()
        .filter(|v| v.exact || ty.is_float() || !v.ty.is_float())
        .filter(|v| {
            v.name.starts_with('t')
                && (v.ty == ty
                    || (v.ty != Ty::Bool && ty != Ty::Bool)
                    || (v.ty == Ty::Bool && !ty.is_float()))
        })
        .collect();
    let x = if !castable.is_empty() && rng.chance(40) {
        let v = castable[rng.below(castable.len())];
        cast(&var(v), ty)
    } else {
        expr(rng, env, ty, 3)
    };
    let x = if ty.is_float() { clamp(x) } else { x };
    if combine == Combine::Product && ty.is_float() {
        E {
            text: format!("(1.0 + ({}).tanh() * 0.01)", x.text),
            bound: 1.01,
            exact: false,
            ..x
        }
    } else {
        x
    }
}
