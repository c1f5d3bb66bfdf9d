//! Random typed expressions and scalar-function bodies.
//!
//! Every expression carries a bound on its magnitude and whether it is
//! *exact*: computed only with operations that every back end rounds alike
//! (`+ - abs min max floor ceil`, casts, selects), so that a comparison,
//! `floor`, `ceil` or a float-to-integer cast of it gives the same answer
//! everywhere. Products, quotients and transcendental functions may differ
//! in the last bit between Rust, OpenCL C and CUDA C (contraction into
//! FMAs, libm implementations), which is harmless in continuous
//! arithmetic but could flip a discontinuous one: those take exact operands
//! only. Float magnitudes stay below about 16 (larger values are clamped),
//! so that differences of one rounding stay within the tests' tolerance.

use crate::rng::Rng;
use crate::types::{Ty, NUMBERS};

/// A name in scope: a scalar-function parameter, `let`, index, size or param.
#[derive(Clone)]
pub struct Var {
    pub name: String,
    pub ty: Ty,
    pub bound: f64,
    pub exact: bool,
}

/// What an expression may read: variables (numbers and `bool`s), the MDA
/// indices (`usize`, when the function binds them) and the sizes.
#[derive(Default)]
pub struct Env {
    pub vars: Vec<Var>,
    pub indices: Vec<&'static str>,
    pub sizes: Vec<&'static str>,
}

/// An expression's text (parenthesized or atomic) and what is known of it.
#[derive(Clone)]
pub struct E {
    pub text: String,
    pub ty: Ty,
    pub bound: f64,
    pub exact: bool,
}

/// Magnitudes above this are clamped (floats) before they feed more
/// arithmetic.
const FLOAT_BOUND: f64 = 16.0;

fn e(text: String, ty: Ty, bound: f64, exact: bool) -> E {
    E {
        text,
        ty,
        bound,
        exact,
    }
}

/// `x as ty` (nothing when it is of that type already).
pub fn cast(x: &E, ty: Ty) -> E {
    if x.ty == ty {
        return x.clone();
    }
    let text = if x.ty == Ty::Bool && ty.is_float() {
        // `bool as f32` is no Rust cast: through an integer.
        format!("(({} as u8) as {})", x.text, ty.name())
    } else {
        format!("({} as {})", x.text, ty.name())
    };
    let bound = if ty == Ty::U8 {
        x.bound.min(255.0)
    } else {
        x.bound
    };
    e(text, ty, bound, x.exact)
}

/// A random expression of type `ty` with at most `depth` levels of operators.
pub fn expr(rng: &mut Rng, env: &Env, ty: Ty, depth: usize) -> E {
    match ty {
        Ty::Bool => boolean(rng, env, depth),
        t if t.is_float() => float(rng, env, t, depth, false),
        t => int(rng, env, t, depth),
    }
}

fn vars_where(env: &Env, keep: impl Fn(&Var) -> bool) -> Vec<&Var> {
    env.vars.iter().filter(|v| keep(v)).collect()
}

pub fn var(v: &Var) -> E {
    e(v.name.clone(), v.ty, v.bound, v.exact)
}

/// An index or size read as a small number of type `ty`.
fn index_or_size(rng: &mut Rng, env: &Env, ty: Ty) -> Option<E> {
    let use_index = !env.indices.is_empty() && rng.chance(60);
    let (name, m) = if use_index {
        (env.indices[rng.below(env.indices.len())], 7)
    } else if !env.sizes.is_empty() {
        (env.sizes[rng.below(env.sizes.len())], 5)
    } else {
        return None;
    };
    let small = e(format!("({name} % {m})"), Ty::U32, (m - 1) as f64, true);
    Some(e(
        format!("({} as {})", small.text, ty.name()),
        ty,
        small.bound,
        true,
    ))
}

fn float_leaf(rng: &mut Rng, env: &Env, ty: Ty) -> E {
    let numbers = vars_where(env, |v| v.ty != Ty::Bool);
    match rng.below(10) {
        0..=5 if !numbers.is_empty() => {
            let v = var(numbers[rng.below(numbers.len())]);
            clamp(cast(&v, ty))
        }
        6..=7 => index_or_size(rng, env, ty).unwrap_or_else(|| literal(rng, ty)),
        _ => literal(rng, ty),
    }
}

fn literal(rng: &mut Rng, ty: Ty) -> E {
    let v = rng.pick(&[0.5, 1.5, 2.0, 0.25, 3.0]);
    e(format!("{v:?}"), ty, v, true)
}

/// Clamps a float expression to `[-FLOAT_BOUND, FLOAT_BOUND]` when its bound
/// exceeds that (`max`, `min`: exact, continuous).
pub fn clamp(x: E) -> E {
    if x.bound <= FLOAT_BOUND {
        return x;
    }
    let b = format!("{FLOAT_BOUND:?}");
    e(
        format!("({}).max(-{b}).min({b})", x.text),
        x.ty,
        FLOAT_BOUND,
        x.exact,
    )
}

/// `a.min(b)` or `a.max(b)`: exact if both are.
fn min_max(rng: &mut Rng, a: &E, b: &E) -> E {
    let m = rng.pick(&["min", "max"]);
    e(
        format!("({}).{m}({})", a.text, b.text),
        a.ty,
        a.bound.max(b.bound),
        a.exact && b.exact,
    )
}

/// A float expression; `exact_only` keeps to exact operations.
fn float(rng: &mut Rng, env: &Env, ty: Ty, depth: usize, exact_only: bool) -> E {
    if depth == 0 || rng.chance(20) {
        return float_leaf(rng, env, ty);
    }
    let sub = |rng: &mut Rng| float(rng, env, ty, depth - 1, exact_only);
    let a = sub(rng);
    let pick = if exact_only {
        rng.pick(&[0, 1, 2, 3, 4, 5, 13])
    } else {
        rng.below(16)
    };
    let x = match pick {
        0 | 1 => {
            let b = sub(rng);
            let op = if pick == 0 { "+" } else { "-" };
            e(
                format!("({} {op} {})", a.text, b.text),
                ty,
                a.bound + b.bound,
                a.exact && b.exact,
            )
        }
        2 => e(format!("({}).abs()", a.text), ty, a.bound, a.exact),
        3 => {
            let b = sub(rng);
            min_max(rng, &a, &b)
        }
        4 if a.exact => {
            let m = rng.pick(&["floor", "ceil"]);
            e(format!("({}).{m}()", a.text), ty, a.bound + 1.0, true)
        }
        4 | 5 => e(format!("(-{})", a.text), ty, a.bound, a.exact),
        6 => {
            let b = sub(rng);
            e(
                format!("({} * {})", a.text, b.text),
                ty,
                a.bound * b.bound,
                false,
            )
        }
        7 => {
            let b = sub(rng);
            e(
                format!("({} / (({}).abs() + 1.0))", a.text, b.text),
                ty,
                a.bound,
                false,
            )
        }
        8 => {
            let (b, c) = (sub(rng), sub(rng));
            let bound = a.bound * b.bound + c.bound;
            e(
                format!("({}).mul_add({}, {})", a.text, b.text, c.text),
                ty,
                bound,
                false,
            )
        }
        9 => e(
            format!("({}).abs().sqrt()", a.text),
            ty,
            a.bound.sqrt(),
            false,
        ),
        10 => {
            let m = rng.pick(&["sin", "cos", "tanh"]);
            e(format!("({}).{m}()", a.text), ty, 1.0, false)
        }
        11 => e(format!("(-({}).abs()).exp()", a.text), ty, 1.0, false),
        12 => e(
            format!("(({}).abs() + 1.0).ln()", a.text),
            ty,
            (a.bound + 1.0).ln(),
            false,
        ),
        13 => {
            let c = boolean(rng, env, depth - 1);
            let b = sub(rng);
            let exact = a.exact && b.exact;
            e(
                format!("(if {} {{ {} }} else {{ {} }})", c.text, a.text, b.text),
                ty,
                a.bound.max(b.bound),
                exact,
            )
        }
        14 => e(
            format!("({}).powi(2)", a.text),
            ty,
            a.bound * a.bound,
            false,
        ),
        _ => e(
            format!("({}).abs().powf(0.5)", a.text),
            ty,
            a.bound.sqrt(),
            false,
        ),
    };
    clamp(x)
}

fn int_leaf(rng: &mut Rng, env: &Env, ty: Ty) -> E {
    let ints = vars_where(env, |v| !v.ty.is_float());
    let exact_floats = vars_where(env, |v| v.ty.is_float() && v.exact);
    match rng.below(12) {
        0..=5 if !ints.is_empty() => cast(&var(ints[rng.below(ints.len())]), ty),
        6 if !exact_floats.is_empty() => {
            // A float-to-integer cast (saturating) of an exact value.
            let f = var(exact_floats[rng.below(exact_floats.len())]);
            cast(
                &e(format!("({} * 4.0)", f.text), f.ty, f.bound * 4.0, true),
                ty,
            )
        }
        7..=8 => index_or_size(rng, env, ty).unwrap_or_else(|| int_literal(rng, ty)),
        _ => int_literal(rng, ty),
    }
}

fn int_literal(rng: &mut Rng, ty: Ty) -> E {
    let v = 1 + rng.below(9);
    e(v.to_string(), ty, v as f64, true)
}

/// An integer expression (wrapping arithmetic; `/` and `%` by 0 give 0).
fn int(rng: &mut Rng, env: &Env, ty: Ty, depth: usize) -> E {
    if depth == 0 || rng.chance(20) {
        return int_leaf(rng, env, ty);
    }
    let sub = |rng: &mut Rng| int(rng, env, ty, depth - 1);
    let a = sub(rng);
    match rng.below(9) {
        0..=2 => {
            let b = sub(rng);
            let op = rng.pick(&["+", "-", "*"]);
            e(
                format!("({} {op} {})", a.text, b.text),
                ty,
                (a.bound * b.bound + a.bound + b.bound).min(1e30),
                true,
            )
        }
        3 => {
            let b = sub(rng);
            let op = rng.pick(&["/", "%"]);
            e(format!("({} {op} {})", a.text, b.text), ty, a.bound, true)
        }
        4 => {
            let b = sub(rng);
            min_max(rng, &a, &b)
        }
        5 if ty.is_signed() => {
            let m = rng.pick(&["(-{})", "({}).abs()"]);
            e(m.replace("{}", &a.text), ty, a.bound, true)
        }
        6 => {
            // From another integer type, or an exact float.
            let from = rng.pick(&[Ty::F32, Ty::F64, Ty::I32, Ty::U8, Ty::I64]);
            let x = if from.is_float() {
                float(rng, env, from, depth - 1, true)
            } else {
                int(rng, env, from, depth - 1)
            };
            cast(&x, ty)
        }
        7 => {
            let c = boolean(rng, env, depth - 1);
            let b = sub(rng);
            e(
                format!("(if {} {{ {} }} else {{ {} }})", c.text, a.text, b.text),
                ty,
                a.bound.max(b.bound),
                true,
            )
        }
        _ => a,
    }
}

/// A `bool` expression: comparisons of exact values, `&& || !`.
fn boolean(rng: &mut Rng, env: &Env, depth: usize) -> E {
    let bools = vars_where(env, |v| v.ty == Ty::Bool);
    let b = |text: String| e(text, Ty::Bool, 1.0, true);
    match rng.below(10) {
        0..=1 if !bools.is_empty() => var(bools[rng.below(bools.len())]),
        2..=3 if depth > 0 => {
            let (x, y) = (boolean(rng, env, depth - 1), boolean(rng, env, depth - 1));
            let op = rng.pick(&["&&", "||"]);
            b(format!("({} {op} {})", x.text, y.text))
        }
        4 if depth > 0 => b(format!("(!{})", boolean(rng, env, depth - 1).text)),
        _ => {
            let op = rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
            b(format!("({})", comparison(rng, env, depth.min(2), op)))
        }
    }
}

/// `x op y` of two exact operands of one type, neither a comparison of a
/// value with itself nor of two constants: valid Rust, but tautologies C
/// compilers warn of (PoCL's clang under `-Werror`: "self-comparison
/// always evaluates to false", "use of logical '&&' with constant
/// operand"), which the tests keep out of the generated C.
fn comparison(rng: &mut Rng, env: &Env, depth: usize, op: &str) -> String {
    for _ in 0..8 {
        let ty = rng.pick(&NUMBERS);
        let (x, y) = if ty.is_float() {
            (
                float(rng, env, ty, depth, true),
                float(rng, env, ty, depth, true),
            )
        } else {
            (int(rng, env, ty, depth), int(rng, env, ty, depth))
        };
        if x.text != y.text && !(is_constant(&x.text) && is_constant(&y.text)) {
            return format!("{} {op} {}", x.text, y.text);
        }
    }
    // A size read at run time against a literal.
    format!("(({} % 5) as u32) {op} 2", env.sizes[0])
}

/// Whether an expression's text reads no name: the generator's names are
/// `a0`, `a0b`, `t0`, `p0`, the indices `i j k` and the sizes `I J K`.
fn is_constant(text: &str) -> bool {
    !text.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        matches!(w, "i" | "j" | "k" | "I" | "J" | "K")
            || (w.len() >= 2
                && matches!(w.as_bytes()[0], b'a' | b't' | b'p')
                && w[1..]
                    .trim_end_matches('b')
                    .bytes()
                    .all(|c| c.is_ascii_digit())
                && w.as_bytes()[1].is_ascii_digit())
    })
}
