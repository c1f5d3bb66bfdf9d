//! The reference interpreter: evaluates a kernel's high-level definition
//! `out_view ∘ md_hom(f, (⊗1, …, ⊗D)) ∘ inp_view` (the paper's Fig. 6)
//! directly, point by point. It is the oracle of every test, so it is written
//! to be obviously right rather than fast:
//!
//! for every kept point `c` (the CC and PS coordinates) and every output
//! access `k`,
//!
//! ```text
//! out_k[c] = ⊕_k  f(p)_k   over all points p with p_CC = c_CC, p_PS <= c_PS
//!                          (component-wise) and any p_PW,
//!                          visited in lexicographic order of the non-CC dims
//! ```
//!
//! written at `out_view_k(c with PW coordinates 0)`. An empty PW dimension
//! gives the operator's neutral element (user-defined operators have none:
//! [`Error::EmptyReduction`]); an empty kept dimension writes nothing.
//!
//! Scalar-function semantics are Rust's: integer arithmetic wraps, casts are
//! `as` casts, floats are computed in their own precision, methods are the
//! std methods of the receiver type; `f16` and `bf16` are computed in `f32`
//! and each result is rounded to the type (the `half` crate's operators),
//! casts to and from them go through `f32`. Integer division is defined
//! everywhere, as in the generated CPU and GPU code: `x / 0 == 0`,
//! `x % 0 == 0`, `MIN / -1 == MIN` (wrapping), `MIN % -1 == 0` (a kernel
//! cannot stop in the middle of a device launch to report an error, so the
//! back ends agree on a value instead).

use proc_macro2::Ident;

mod stages;
pub use stages::{run_program, run_staged, run_stages_with, StageFn};

use mdh_rt::value::{bf16, f16, Cast};
pub use mdh_rt::value::{Buffer, Value};
use mdh_rt::{any_type, floats, numeric, numeric_typed, on1, on2};

use crate::analysis::Checked;
use crate::desc::{Bound, KernelDesc, Linear};
use crate::error::Error;
use crate::spec::{
    BinOp, Block, BufferDecl, BuiltinOp, Combination, DimKind, Expr, ExprKind, Identity, IndexFn,
    Lit, Method, ReduceOp, ScalarType, Stmt, UnOp,
};

// ----------------------------------------------------------------------------
// Arithmetic per type, with Rust's semantics.

/// The operations of the scalar-function language on one numeric type.
trait Num: Copy + PartialOrd + Into<Value> {
    const ZERO: Self;
    const ONE: Self;
    /// Neutral element of `max`: `MIN` or `-inf`.
    const LOWEST: Self;
    /// Neutral element of `min`: `MAX` or `+inf`.
    const HIGHEST: Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// Integers: 0 for a zero divisor, wrapping otherwise.
    fn div(self, o: Self) -> Self;
    /// Integers: 0 for a zero divisor, wrapping otherwise.
    fn rem(self, o: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    fn min(self, o: Self) -> Self;
    fn max(self, o: Self) -> Self;
    /// Bitwise `!` (`None` for floats).
    fn not(self) -> Option<Self>;
}

macro_rules! int_num {
    ($($t:ty: $abs:expr),* $(,)?) => {$(
        impl Num for $t {
            const ZERO: $t = 0;
            const ONE: $t = 1;
            const LOWEST: $t = <$t>::MIN;
            const HIGHEST: $t = <$t>::MAX;
            fn add(self, o: $t) -> $t {
                self.wrapping_add(o)
            }
            fn sub(self, o: $t) -> $t {
                self.wrapping_sub(o)
            }
            fn mul(self, o: $t) -> $t {
                self.wrapping_mul(o)
            }
            fn div(self, o: $t) -> $t {
                if o == 0 { 0 } else { self.wrapping_div(o) }
            }
            fn rem(self, o: $t) -> $t {
                if o == 0 { 0 } else { self.wrapping_rem(o) }
            }
            fn neg(self) -> $t {
                self.wrapping_neg()
            }
            fn abs(self) -> $t {
                let abs: fn($t) -> $t = $abs;
                abs(self)
            }
            fn min(self, o: $t) -> $t {
                Ord::min(self, o)
            }
            fn max(self, o: $t) -> $t {
                Ord::max(self, o)
            }
            fn not(self) -> Option<$t> {
                Some(!self)
            }
        }
    )*};
}

int_num! {
    i8: i8::wrapping_abs,
    i16: i16::wrapping_abs,
    i32: i32::wrapping_abs,
    i64: i64::wrapping_abs,
    u8: |x| x,
    u16: |x| x,
    u32: |x| x,
    u64: |x| x,
    usize: |x| x,
}

/// The float-only methods.
trait Float: Num {
    /// The methods without arguments (`None` for the others).
    fn unary(self, m: Method) -> Option<Self>;
    fn powi(self, n: i32) -> Self;
    fn powf(self, y: Self) -> Self;
    fn mul_add(self, a: Self, b: Self) -> Self;
}

/// `Num` of the float types (for `f16` and `bf16`, `half`'s operators
/// compute in f32 and round the result to the type).
macro_rules! float_num {
    ($($t:ident: $zero:expr, $one:expr, $abs:expr);* $(;)?) => {$(
        impl Num for $t {
            const ZERO: $t = $zero;
            const ONE: $t = $one;
            const LOWEST: $t = $t::NEG_INFINITY;
            const HIGHEST: $t = $t::INFINITY;
            fn add(self, o: $t) -> $t {
                self + o
            }
            fn sub(self, o: $t) -> $t {
                self - o
            }
            fn mul(self, o: $t) -> $t {
                self * o
            }
            fn div(self, o: $t) -> $t {
                self / o
            }
            fn rem(self, o: $t) -> $t {
                self % o
            }
            fn neg(self) -> $t {
                -self
            }
            fn abs(self) -> $t {
                let abs: fn($t) -> $t = $abs;
                abs(self)
            }
            fn min(self, o: $t) -> $t {
                $t::min(self, o)
            }
            fn max(self, o: $t) -> $t {
                $t::max(self, o)
            }
            fn not(self) -> Option<$t> {
                None
            }
        }
    )*};
}

float_num! {
    f32: 0.0, 1.0, f32::abs;
    f64: 0.0, 1.0, f64::abs;
    f16: f16::ZERO, f16::ONE, |x| f16::from_f32(x.to_f32().abs());
    bf16: bf16::ZERO, bf16::ONE, |x| bf16::from_f32(x.to_f32().abs());
}

macro_rules! float_methods {
    ($($t:ident),*) => {$(
        impl Float for $t {
            fn unary(self, m: Method) -> Option<$t> {
                Some(match m {
                    Method::Abs => $t::abs(self),
                    Method::Sqrt => $t::sqrt(self),
                    Method::Exp => $t::exp(self),
                    Method::Ln => $t::ln(self),
                    Method::Sin => $t::sin(self),
                    Method::Cos => $t::cos(self),
                    Method::Tanh => $t::tanh(self),
                    Method::Floor => $t::floor(self),
                    Method::Ceil => $t::ceil(self),
                    _ => return None,
                })
            }
            fn powi(self, n: i32) -> $t {
                $t::powi(self, n)
            }
            fn powf(self, y: $t) -> $t {
                $t::powf(self, y)
            }
            fn mul_add(self, a: $t, b: $t) -> $t {
                $t::mul_add(self, a, b)
            }
        }
    )*};
}

float_methods!(f32, f64);

/// The methods of `f16` and `bf16`: computed in f32, rounded to the type.
macro_rules! half_methods {
    ($($t:ident),*) => {$(
        impl Float for $t {
            fn unary(self, m: Method) -> Option<$t> {
                Float::unary(self.to_f32(), m).map($t::from_f32)
            }
            fn powi(self, n: i32) -> $t {
                $t::from_f32(self.to_f32().powi(n))
            }
            fn powf(self, y: $t) -> $t {
                $t::from_f32(self.to_f32().powf(y.to_f32()))
            }
            fn mul_add(self, a: $t, b: $t) -> $t {
                $t::from_f32(self.to_f32().mul_add(a.to_f32(), b.to_f32()))
            }
        }
    )*};
}

half_methods!(f16, bf16);

macro_rules! typed_const {
    ([$($V:ident $t:ty),*], $ty:expr, $c:ident) => {
        match $ty {
            $(ScalarType::$V => Some(Value::$V(<$t as Num>::$c)),)*
            ScalarType::Bool => None,
        }
    };
}

fn internal(what: String) -> Error {
    Error::Spec(format!("interpreter: {what} (was the kernel checked?)"))
}

/// A binary operator on two values of the same type (`&&` and `||` here
/// without short-circuit: the evaluator short-circuits before calling).
#[allow(clippy::bool_comparison)] // `<` on bools is Rust's, like every other type
fn binary(op: BinOp, a: Value, b: Value) -> Result<Value, Error> {
    let r: Option<Option<Value>> = match op {
        BinOp::Add => numeric!(on2!(a, b, x, y => Some(Num::add(x, y).into()))),
        BinOp::Sub => numeric!(on2!(a, b, x, y => Some(Num::sub(x, y).into()))),
        BinOp::Mul => numeric!(on2!(a, b, x, y => Some(Num::mul(x, y).into()))),
        BinOp::Div => numeric!(on2!(a, b, x, y => Some(Num::div(x, y).into()))),
        BinOp::Rem => numeric!(on2!(a, b, x, y => Some(Num::rem(x, y).into()))),
        BinOp::Eq => any_type!(on2!(a, b, x, y => Some(Value::Bool(x == y)))),
        BinOp::Ne => any_type!(on2!(a, b, x, y => Some(Value::Bool(x != y)))),
        BinOp::Lt => any_type!(on2!(a, b, x, y => Some(Value::Bool(x < y)))),
        BinOp::Le => any_type!(on2!(a, b, x, y => Some(Value::Bool(x <= y)))),
        BinOp::Gt => any_type!(on2!(a, b, x, y => Some(Value::Bool(x > y)))),
        BinOp::Ge => any_type!(on2!(a, b, x, y => Some(Value::Bool(x >= y)))),
        BinOp::And => on2!([Bool], a, b, x, y => Some(Value::Bool(x && y))),
        BinOp::Or => on2!([Bool], a, b, x, y => Some(Value::Bool(x || y))),
    };
    match r {
        Some(Some(v)) => Ok(v),
        Some(None) | None => Err(internal(format!(
            "`{}` applied to {} and {}",
            op.symbol(),
            a.ty(),
            b.ty()
        ))),
    }
}

fn unary(op: UnOp, v: Value) -> Result<Value, Error> {
    let r = match (op, v) {
        (UnOp::Neg, _) => numeric!(on1!(v, x => Num::neg(x).into())),
        (UnOp::Not, Value::Bool(b)) => Some(Value::Bool(!b)),
        (UnOp::Not, _) => numeric!(on1!(v, x => Num::not(x).map(Value::from))).flatten(),
    };
    r.ok_or_else(|| internal(format!("unary `{op:?}` applied to {}", v.ty())))
}

fn method(recv: Value, m: Method, args: &[Value]) -> Result<Value, Error> {
    let r = match (m, args) {
        (Method::Abs, []) => numeric!(on1!(recv, x => Num::abs(x).into())),
        (Method::Min, [y]) => numeric!(on2!(recv, *y, x, y => Num::min(x, y).into())),
        (Method::Max, [y]) => numeric!(on2!(recv, *y, x, y => Num::max(x, y).into())),
        (Method::Powi, [Value::I32(n)]) => floats!(on1!(recv, x => Float::powi(x, *n).into())),
        (Method::Powf, [y]) => floats!(on2!(recv, *y, x, y => Float::powf(x, y).into())),
        (Method::MulAdd, [a, b]) => match (recv, *a, *b) {
            (Value::F32(x), Value::F32(a), Value::F32(b)) => {
                Some(Value::F32(Float::mul_add(x, a, b)))
            }
            (Value::F64(x), Value::F64(a), Value::F64(b)) => {
                Some(Value::F64(Float::mul_add(x, a, b)))
            }
            (Value::F16(x), Value::F16(a), Value::F16(b)) => {
                Some(Value::F16(Float::mul_add(x, a, b)))
            }
            (Value::Bf16(x), Value::Bf16(a), Value::Bf16(b)) => {
                Some(Value::Bf16(Float::mul_add(x, a, b)))
            }
            _ => None,
        },
        (_, []) => floats!(on1!(recv, x => Float::unary(x, m).map(Value::from))).flatten(),
        _ => None,
    };
    r.ok_or_else(|| {
        let tys: Vec<String> = args.iter().map(|a| a.ty().to_string()).collect();
        internal(format!(
            "method `{}` on {} with arguments ({})",
            m.name(),
            recv.ty(),
            tys.join(", ")
        ))
    })
}

/// `a ⊕ b` for a built-in combine operator.
fn builtin(op: BuiltinOp, a: Value, b: Value) -> Result<Value, Error> {
    match op.combination() {
        Combination::Binary(bin) => binary(bin, a, b),
        Combination::Method(m) => method(a, m, &[b]),
    }
}

/// The neutral element of a built-in operator on `ty`.
fn neutral(op: BuiltinOp, ty: ScalarType) -> Option<Value> {
    match op.identity() {
        Identity::Zero => numeric_typed!(typed_const!(ty, ZERO)),
        Identity::One => numeric_typed!(typed_const!(ty, ONE)),
        Identity::Lowest => numeric_typed!(typed_const!(ty, LOWEST)),
        Identity::Highest => numeric_typed!(typed_const!(ty, HIGHEST)),
    }
}

/// A literal of the type the checker gave it (else its suffix, else Rust's
/// defaults `i32` / `f64`).
fn literal(l: &Lit, t: ScalarType) -> Result<Value, Error> {
    match l {
        Lit::Int(v, _) => v.cast_to(t),
        Lit::Float(v, _) => v.cast_to(t),
        Lit::Bool(b) => b.cast_to(t),
    }
    .ok_or_else(|| internal(format!("literal {l:?} of type {t}")))
}

// ----------------------------------------------------------------------------
// The evaluator.

/// The result of an expression.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Unit,
    Scalar(Value),
    Tuple(Vec<Value>),
}

/// Non-local control flow: `break`, or an error (boxed to keep results small).
enum Flow {
    Break,
    Err(Box<Error>),
}

impl From<Error> for Flow {
    fn from(e: Error) -> Flow {
        Flow::Err(Box::new(e))
    }
}

fn flow_err(f: Flow) -> Error {
    match f {
        Flow::Break => internal("`break` outside of a loop".into()),
        Flow::Err(e) => *e,
    }
}

type R<T> = Result<T, Flow>;

/// A tree-walking evaluator with a stack of named values: the size
/// parameters and params at the bottom, then closure parameters and `let`
/// bindings; lookups search from the top, so inner names shadow outer ones.
struct Eval<'k> {
    env: Vec<(&'k Ident, Value)>,
    /// Height of the bottom part (size parameters and params).
    base: usize,
}

impl<'k> Eval<'k> {
    fn slot(&self, name: &Ident) -> Result<usize, Error> {
        self.env
            .iter()
            .rposition(|(n, _)| *n == name)
            .ok_or_else(|| internal(format!("unknown variable `{name}`")))
    }

    fn scalar(&mut self, e: &'k Expr) -> R<Value> {
        match self.eval(e)? {
            Val::Scalar(v) => Ok(v),
            other => Err(internal(format!("expected a scalar value, got {other:?}")).into()),
        }
    }

    fn boolean(&mut self, e: &'k Expr) -> R<bool> {
        match self.scalar(e)? {
            Value::Bool(b) => Ok(b),
            v => Err(internal(format!("expected a bool, got {}", v.ty())).into()),
        }
    }

    fn eval(&mut self, e: &'k Expr) -> R<Val> {
        Ok(match &e.kind {
            ExprKind::Lit(l, t) => Val::Scalar(literal(l, *t)?),
            ExprKind::Var(name) => Val::Scalar(self.env[self.slot(name)?].1),
            ExprKind::Unary(op, x, _) => {
                let v = self.scalar(x)?;
                Val::Scalar(unary(*op, v)?)
            }
            ExprKind::Binary(BinOp::And, a, b, _) => {
                Val::Scalar(Value::Bool(self.boolean(a)? && self.boolean(b)?))
            }
            ExprKind::Binary(BinOp::Or, a, b, _) => {
                Val::Scalar(Value::Bool(self.boolean(a)? || self.boolean(b)?))
            }
            ExprKind::Binary(op, a, b, _) => {
                let x = self.scalar(a)?;
                let y = self.scalar(b)?;
                Val::Scalar(binary(*op, x, y)?)
            }
            ExprKind::Cast(x, t, _) => {
                let v = self.scalar(x)?;
                Val::Scalar(
                    v.cast(*t)
                        .ok_or_else(|| internal(format!("cast from {} to {t}", v.ty())))?,
                )
            }
            ExprKind::MethodCall(recv, m, args, _) => {
                let r = self.scalar(recv)?;
                let mut vals = [Value::Bool(false); 2];
                if args.len() > vals.len() {
                    return Err(internal(format!("too many arguments to `{}`", m.name())).into());
                }
                for (slot, a) in vals.iter_mut().zip(args) {
                    *slot = self.scalar(a)?;
                }
                Val::Scalar(method(r, *m, &vals[..args.len()])?)
            }
            ExprKind::If(cond, then, els) => {
                if self.boolean(cond)? {
                    self.block(then)?
                } else if let Some(els) = els {
                    self.eval(els)?
                } else {
                    Val::Unit
                }
            }
            ExprKind::Block(b) => self.block(b)?,
            ExprKind::Tuple(es) => Val::Tuple(es.iter().map(|x| self.scalar(x)).collect::<R<_>>()?),
            ExprKind::Assign(name, op, rhs, _) => {
                let v = self.scalar(rhs)?;
                let slot = self.slot(name)?;
                self.env[slot].1 = match op {
                    Some(op) => binary(*op, self.env[slot].1, v)?,
                    None => v,
                };
                Val::Unit
            }
            ExprKind::For(var, lo, hi, body, _) => {
                let lo = self.scalar(lo)?;
                let hi = self.scalar(hi)?;
                let one = 1u8
                    .cast_to(lo.ty())
                    .ok_or_else(|| internal(format!("loop over {}", lo.ty())))?;
                let mut i = lo;
                // `i < hi` before each step, so `i + 1` never wraps.
                while binary(BinOp::Lt, i, hi)? == Value::Bool(true) {
                    let mark = self.env.len();
                    if let Some(v) = var {
                        self.env.push((v, i));
                    }
                    let r = self.block(body);
                    self.env.truncate(mark);
                    match r {
                        Ok(_) => {}
                        Err(Flow::Break) => break,
                        Err(e) => return Err(e),
                    }
                    i = binary(BinOp::Add, i, one)?;
                }
                Val::Unit
            }
            ExprKind::Break => return Err(Flow::Break),
        })
    }

    /// A block is a scope: its `let`s are dropped at its end.
    fn block(&mut self, b: &'k Block) -> R<Val> {
        let mark = self.env.len();
        let r = self.block_inner(b);
        self.env.truncate(mark);
        r
    }

    fn block_inner(&mut self, b: &'k Block) -> R<Val> {
        for s in &b.stmts {
            match s {
                Stmt::Let { name, ty, init, .. } => {
                    let v = match init {
                        Some(e) => self.scalar(e)?,
                        // Assigned before use (the checker enforces it).
                        None => ty
                            .and_then(|t| 0u8.cast_to(t))
                            .unwrap_or(Value::Bool(false)),
                    };
                    self.env.push((name, v));
                }
                Stmt::Expr(e) => {
                    self.eval(e)?;
                }
            }
        }
        match &b.tail {
            Some(e) => self.eval(e),
            None => Ok(Val::Unit),
        }
    }

    /// `a ⊕ b`.
    fn combine(&mut self, op: &'k ReduceOp, a: Value, b: Value) -> Result<Value, Error> {
        match op {
            ReduceOp::Builtin(op, _) => builtin(*op, a, b),
            ReduceOp::Closure(c) => {
                self.env.truncate(self.base);
                self.env.push((&c.lhs, a));
                self.env.push((&c.rhs, b));
                let r = self.scalar(&c.body);
                self.env.truncate(self.base);
                r.map_err(flow_err)
            }
        }
    }
}

/// For each access (in scalar-function order), its buffer and its linear
/// form; `linear[b]` holds buffer `b`'s accesses in view order.
fn access_slots<'b>(
    accesses: &[(usize, &IndexFn)],
    linear: &'b [Vec<Linear>],
) -> Vec<(usize, &'b Linear)> {
    let mut seen = vec![0usize; linear.len()];
    accesses
        .iter()
        .map(|&(b, _)| {
            seen[b] += 1;
            (b, &linear[b][seen[b] - 1])
        })
        .collect()
}

/// Advances `p` to the next point in row-major order over the dimensions
/// `d` with `limit(d) = Some(extent)`, the others staying fixed; `false`
/// (with those coordinates back at 0) after the last point.
fn next_point(p: &mut [usize], limit: impl Fn(usize) -> Option<usize>) -> bool {
    for d in (0..p.len()).rev() {
        if let Some(n) = limit(d) {
            p[d] += 1;
            if p[d] < n {
                return true;
            }
            p[d] = 0;
        }
    }
    false
}

fn check_buffers(
    kernel: &Checked,
    what: &str,
    decls: &[BufferDecl],
    bufs: &[Buffer],
) -> Result<(), Error> {
    if decls.len() != bufs.len() {
        let names: Vec<String> = decls.iter().map(|d| d.name.to_string()).collect();
        return Err(Error::Argument(format!(
            "kernel `{}`: expected {} {what} buffers ({}), got {}",
            kernel.name,
            decls.len(),
            names.join(", "),
            bufs.len()
        )));
    }
    for (d, b) in decls.iter().zip(bufs) {
        if d.ty != b.ty() {
            return Err(Error::Argument(format!(
                "kernel `{}`: {what} buffer `{}` must hold {}, got a buffer of {}",
                kernel.name,
                d.name,
                d.ty,
                b.ty()
            )));
        }
    }
    Ok(())
}

fn check_arguments(
    kernel: &Checked,
    sizes: &[usize],
    inputs: &[Buffer],
    outputs: &[Buffer],
    params: &[Value],
) -> Result<(), Error> {
    if sizes.len() != kernel.size_params.len() {
        let names: Vec<String> = kernel.size_params.iter().map(|s| s.to_string()).collect();
        return Err(Error::Argument(format!(
            "kernel `{}`: expected {} sizes ({}), got {}",
            kernel.name,
            names.len(),
            names.join(", "),
            sizes.len()
        )));
    }
    check_buffers(kernel, "input", &kernel.inputs, inputs)?;
    check_buffers(kernel, "output", &kernel.outputs, outputs)?;
    if params.len() != kernel.params.len() {
        return Err(Error::Argument(format!(
            "kernel `{}`: expected {} params, got {}",
            kernel.name,
            kernel.params.len(),
            params.len()
        )));
    }
    for (d, v) in kernel.params.iter().zip(params) {
        if d.ty != v.ty() {
            return Err(Error::Argument(format!(
                "kernel `{}`: param `{}` must be {}, got {} ({v})",
                kernel.name,
                d.name,
                d.ty,
                v.ty()
            )));
        }
    }
    Ok(())
}

/// Runs `kernel` (parsed and checked) on host buffers: `sizes` in
/// `kernel.size_params` order, `inputs` / `outputs` / `params` in
/// declaration order. Outputs are overwritten where the out_view writes;
/// other elements are left as they are.
pub fn run(
    kernel: &Checked,
    sizes: &[usize],
    inputs: &[Buffer],
    outputs: &mut [Buffer],
    params: &[Value],
) -> Result<(), Error> {
    check_arguments(kernel, sizes, inputs, outputs, params)?;
    let in_lens: Vec<usize> = inputs.iter().map(Buffer::len).collect();
    let out_lens: Vec<usize> = outputs.iter().map(Buffer::len).collect();
    let bound = KernelDesc::from_kernel(kernel).bind(sizes, &in_lens, &out_lens)?;
    evaluate(kernel, &bound, inputs, outputs, params)
}

fn evaluate<'k>(
    kernel: &'k Checked,
    bound: &Bound,
    inputs: &[Buffer],
    outputs: &mut [Buffer],
    params: &[Value],
) -> Result<(), Error> {
    let d = kernel.dims.len();
    let kinds = &kernel.analysis().kinds;
    let ext = &bound.extents;
    let f = &kernel.scalar_fn;
    let ins = access_slots(&kernel.input_accesses(), &bound.in_linear);
    let outs = access_slots(&kernel.output_accesses(), &bound.out_linear);
    if kinds.len() != d
        || f.params.len() != ins.len()
        || f.index_params.as_ref().is_some_and(|ix| ix.len() != d)
    {
        return Err(internal(
            "the scalar function's parameters do not match the accesses and dimensions".into(),
        ));
    }
    // Nothing to write when a kept dimension is empty.
    if kernel.analysis().kept.iter().any(|&i| ext[i] == 0) {
        return Ok(());
    }
    // ⊕_k: the operator of output k (the same in every PW/PS dimension).
    let ops: Vec<Option<&ReduceOp>> = (0..outs.len()).map(|k| kernel.op(k)).collect();
    // A PW dimension of extent 0: every reduction is empty.
    let empty_dim = (0..d).find(|&i| ext[i] == 0);

    let mut ev = Eval {
        env: Vec::new(),
        base: 0,
    };
    for (name, &s) in kernel.size_params.iter().zip(&bound.sizes) {
        ev.env.push((name, Value::Usize(s)));
    }
    for (decl, &v) in kernel.params.iter().zip(params) {
        ev.env.push((&decl.name, v));
    }
    ev.base = ev.env.len();

    // f(p): one value per output access (a scalar or a tuple).
    let apply = |ev: &mut Eval<'k>, p: &[usize]| -> Result<Val, Error> {
        if let Some(names) = &f.index_params {
            for (name, &i) in names.iter().zip(p) {
                ev.env.push((name, Value::Usize(i)));
            }
        }
        for (name, &(b, lin)) in f.params.iter().zip(&ins) {
            ev.env.push((name, inputs[b].get(lin.at(p))));
        }
        let r = ev.eval(&f.body);
        ev.env.truncate(ev.base);
        match r.map_err(flow_err)? {
            Val::Scalar(v) if outs.len() == 1 => Ok(Val::Scalar(v)),
            Val::Tuple(vs) if vs.len() == outs.len() => Ok(Val::Tuple(vs)),
            other => Err(internal(format!(
                "the scalar function returned {other:?} for {} output accesses",
                outs.len()
            ))),
        }
    };

    let mut c = vec![0usize; d]; // the kept point (PW coordinates 0)
    let mut p = vec![0usize; d]; // the point of the reduction set
    loop {
        let mut acc: Vec<Option<Value>> = vec![None; outs.len()];
        if empty_dim.is_none() {
            // The first point of the reduction set: c's CC coordinates, 0 elsewhere.
            for ((pi, &ci), &kind) in p.iter_mut().zip(&c).zip(kinds) {
                *pi = if kind == DimKind::Cc { ci } else { 0 };
            }
            loop {
                let r = apply(&mut ev, &p)?;
                let vals = match &r {
                    Val::Scalar(v) => std::slice::from_ref(v),
                    Val::Tuple(vs) => &vs[..],
                    Val::Unit => &[],
                };
                for (k, &v) in vals.iter().enumerate() {
                    acc[k] = Some(match (acc[k], ops[k]) {
                        (None, _) => v,
                        (Some(a), Some(op)) => ev.combine(op, a, v)?,
                        (Some(_), None) => {
                            return Err(internal("a reduction without an operator".into()))
                        }
                    });
                }
                let more = next_point(&mut p, |i| match kinds[i] {
                    DimKind::Cc => None,
                    DimKind::Pw => Some(ext[i]),
                    DimKind::Ps => Some(c[i] + 1),
                });
                if !more {
                    break;
                }
            }
        }
        for (k, &(b, lin)) in outs.iter().enumerate() {
            let ty = outputs[b].ty();
            let v = match (acc[k], ops[k]) {
                (Some(v), _) => v,
                (None, Some(ReduceOp::Builtin(op, _))) => neutral(*op, ty).ok_or_else(|| {
                    internal(format!("no neutral element of `{}` on {ty}", op.name()))
                })?,
                (None, _) => {
                    return Err(Error::EmptyReduction {
                        kernel: kernel.name.to_string(),
                        dim: empty_dim.unwrap_or(0),
                    })
                }
            };
            if v.ty() != ty {
                return Err(internal(format!(
                    "output access #{k} gets a {} value, but its buffer holds {ty}",
                    v.ty()
                )));
            }
            outputs[b].set(lin.at(&c), v);
        }
        if !next_point(&mut c, |i| kinds[i].is_kept().then_some(ext[i])) {
            return Ok(());
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
