//! Lowering of checked scalar-function expressions (and user-defined
//! combine operators) to C, for the OpenCL and CUDA dialects of the GPU
//! emitter.
//!
//! Rust's expressions (blocks, `if`, loops with values) become C statements
//! that assign temporaries; what is left are pure C expressions. The meaning
//! is the interpreter's: integer arithmetic wraps (computed in the unsigned
//! type of the same width, so C's signed overflow never happens), literals
//! carry their checked types, and every user name gets a prefix so that it
//! cannot collide with a C keyword or a name of the kernel.
//!
//! Integer `/` and `%` call helpers ([`int_div_helpers`]) that define what C
//! leaves undefined: `x / 0 == 0` and `x % 0 == 0` (a kernel cannot report
//! an error per point; the reference interpreter and the CPU kernels define
//! it alike), `MIN / -1 == MIN` and `MIN % -1 == 0` (Rust's `wrapping_div` /
//! `wrapping_rem`).

use std::fmt::Write;

use mdh_rt::value::Cast;

use crate::interp::Value;
use crate::spec::{
    BinOp, Block, BuiltinOp, Combination, Expr, ExprKind, Identity, Lit, Method, ReduceOp,
    ScalarType, Stmt, Type, UnOp,
};

/// The two C dialects of the GPU emitter; every difference between them
/// that reaches an expression is a method here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    OpenCl,
    Cuda,
}

impl Dialect {
    /// The C type of a value of type `t` in registers (`f16` and `bf16`
    /// values are `float`s that the type represents exactly: every
    /// operation rounds its result with `mdh_rnd_T`, [`half_helpers`]).
    pub fn ty(self, t: ScalarType) -> &'static str {
        match (self, t) {
            (_, ScalarType::F32 | ScalarType::F16 | ScalarType::Bf16) => "float",
            (_, ScalarType::F64) => "double",
            (Dialect::OpenCl, ScalarType::I8) => "char",
            (Dialect::Cuda, ScalarType::I8) => "signed char",
            (_, ScalarType::I16) => "short",
            (_, ScalarType::I32) => "int",
            (_, ScalarType::I64) => "long",
            (_, ScalarType::U8) => "uchar",
            (_, ScalarType::U16) => "ushort",
            (_, ScalarType::U32) => "uint",
            (_, ScalarType::U64 | ScalarType::Usize) => "ulong",
            (_, ScalarType::Bool) => "bool",
        }
    }

    /// The C type of a buffer element (OpenCL has no `bool` in buffers or
    /// kernel arguments: bytes 0 / 1, as Rust stores `bool`; `f16` and
    /// `bf16` are their bits, converted by `mdh_ld_T` / `mdh_st_T`).
    pub fn storage_ty(self, t: ScalarType) -> &'static str {
        match t {
            ScalarType::Bool => "uchar",
            ScalarType::F16 | ScalarType::Bf16 => "ushort",
            _ => self.ty(t),
        }
    }

    /// The unsigned type of the same width, in which wrapping arithmetic is
    /// defined (narrow types are computed in `uint` and truncated).
    fn unsigned_ty(self, t: ScalarType) -> &'static str {
        match t {
            ScalarType::I64 | ScalarType::U64 | ScalarType::Usize => "ulong",
            _ => "uint",
        }
    }

    /// The qualifiers of a helper function defined in the prelude (OpenCL C
    /// follows C99, where a plain `inline` definition may leave no symbol to
    /// call when it is not inlined). A helper is defined when some lowered
    /// code calls it, which may sit in a part the plan's `#if`s drop: NVRTC
    /// warns of an unreferenced static function (#177) unless it is
    /// `[[maybe_unused]]` (random kernels with integer `/`, issue 37).
    fn helper(self) -> &'static str {
        match self {
            Dialect::OpenCl => "static inline",
            Dialect::Cuda => "[[maybe_unused]] static __device__ __forceinline__",
        }
    }

    /// What precedes the declaration of a variable the user named (a
    /// scalar-function parameter, a `let`): the user may leave it unread,
    /// which Rust allows (the generated Rust says `allow(unused)`) and
    /// NVRTC warns of (#177, #550; random kernels, issue 37).
    fn user_var(self) -> &'static str {
        match self {
            Dialect::OpenCl => "",
            Dialect::Cuda => "[[maybe_unused]] ",
        }
    }

    fn infinity(self, t: ScalarType) -> &'static str {
        match (self, t) {
            (Dialect::OpenCl, ScalarType::F32 | ScalarType::F16 | ScalarType::Bf16) => "INFINITY",
            (Dialect::OpenCl, _) => "((double)INFINITY)",
            (Dialect::Cuda, ScalarType::F32 | ScalarType::F16 | ScalarType::Bf16) => {
                "__int_as_float(0x7f800000)"
            }
            (Dialect::Cuda, _) => "__longlong_as_double(0x7ff0000000000000LL)",
        }
    }

    /// `(t)a` with Rust's `as` semantics for floats to integers (saturating,
    /// NaN to 0). OpenCL says so with `convert_T_sat_rtz`; CUDA through
    /// `mdh_cvt_T_F` ([`float_cast_helpers`]): C leaves an out-of-range
    /// conversion undefined (the CPU execution of CUDA C wrapped `-5.0` to
    /// `u8` 251, issue 37), and only some of CUDA's conversion
    /// instructions saturate.
    fn cast(self, a: &str, from: ScalarType, to: ScalarType) -> String {
        // A 16-bit float is a `float` in registers: cast as one.
        let from = if from.is_half() {
            ScalarType::F32
        } else {
            from
        };
        if to.is_half() {
            format!("mdh_rnd_{}((float)({a}))", to.name())
        } else if from.is_float() && to.is_int() && self == Dialect::OpenCl {
            format!("convert_{}_sat_rtz({a})", self.ty(to))
        } else if from.is_float() && to.is_int() {
            format!("mdh_cvt_{}_{}({a})", to.name(), from.name())
        } else if to == ScalarType::Bool {
            format!("(({a}) != 0)")
        } else {
            format!("(({}){a})", self.ty(to))
        }
    }
}

/// A C literal of value `v` and type `t` (integers that do not fit wrap,
/// like `v as t`).
pub fn int_lit(d: Dialect, v: u128, t: ScalarType) -> String {
    if let Some(h) = half_lit(d, v, t) {
        return h;
    }
    match t {
        ScalarType::F32 => float_lit(d, v as f64, t),
        ScalarType::F64 => float_lit(d, v as f64, t),
        ScalarType::Bool => (if v != 0 { "true" } else { "false" }).into(),
        ScalarType::I32 if v <= i32::MAX as u128 => format!("{v}"),
        ScalarType::U32 => format!("{}u", v as u32),
        ScalarType::I64 if v <= i64::MAX as u128 => format!("{v}L"),
        ScalarType::U64 | ScalarType::Usize => format!("{}UL", v as u64),
        _ => {
            // Truncate to the width (two's complement), then reinterpret.
            let bits = 8 * crate::plan::elem_bytes(t) as u32;
            let m = if bits >= 128 {
                v
            } else {
                v & ((1u128 << bits) - 1)
            };
            format!("(({})({}UL))", d.ty(t), m as u64)
        }
    }
}

pub fn float_lit(d: Dialect, v: f64, t: ScalarType) -> String {
    if let Some(h) = half_lit(d, v, t) {
        return h;
    }
    match t {
        ScalarType::F32 if (v as f32).is_finite() => format!("{:?}f", v as f32),
        ScalarType::F64 if v.is_finite() => format!("{v:?}"),
        _ => d.infinity(t).into(),
    }
}

/// A literal of the 16-bit float type `t`: the `float` of `v` rounded to
/// it (the interpreter's `Cast`: through `f32`).
fn half_lit(d: Dialect, v: impl Cast, t: ScalarType) -> Option<String> {
    if !t.is_half() {
        return None;
    }
    match v.cast_to(t)?.cast(ScalarType::F32)? {
        Value::F32(x) => Some(float_lit(d, x as f64, ScalarType::F32)),
        _ => None,
    }
}

/// `e`, an element of type `t` as a buffer stores it, as a register value.
pub fn from_storage(t: ScalarType, e: &str) -> String {
    if t.is_half() {
        format!("mdh_ld_{}({e})", t.name())
    } else {
        e.to_string()
    }
}

/// `e`, a register value of type `t`, as a buffer stores it.
pub fn to_storage(t: ScalarType, e: &str) -> String {
    if t.is_half() {
        format!("mdh_st_{}({e})", t.name())
    } else {
        e.to_string()
    }
}

/// The C definitions of the conversions of the 16-bit float types `types`
/// (bits in a `ushort`, values in a `float`): `mdh_ld_T` (bits to value,
/// exact), `mdh_st_T` (value to bits, rounded to nearest, ties to even,
/// NaN kept a NaN) and `mdh_rnd_T` (a `float` rounded to the type), the
/// `half` crate's conversions written with integer operations, so that
/// they need no `cl_khr_fp16` and compile alike in both dialects and in
/// the CPU execution of CUDA C; on a CUDA device f16's are `cvt`
/// instructions.
pub fn half_helpers(d: Dialect, types: &[ScalarType]) -> String {
    let (h, bits, float) = match d {
        Dialect::OpenCl => ("static inline", "as_uint", "as_float"),
        Dialect::Cuda => (d.helper(), "__float_as_uint", "__uint_as_float"),
    };
    let mut s = String::new();
    for &t in types {
        let body_ld = match t {
            ScalarType::Bf16 => format!("return {float}((uint)b << 16);"),
            // Normal and zero: rebias the exponent; subnormal: the value
            // is its mantissa times 2^-24 (exact in a float); all ones:
            // infinity or NaN.
            _ => format!(
                "uint s = ((uint)b & 0x8000u) << 16, e = ((uint)b >> 10) & 0x1fu, m = (uint)b & 0x3ffu;                  if (e == 0x1fu) return {float}(s | 0x7f800000u | (m << 13));                  if (e == 0u) {{ float f = (float)m * 5.9604644775390625e-8f; return s ? -f : f; }}                  return {float}(s | ((e + 112u) << 23) | (m << 13));"
            ),
        };
        let body_st = match t {
            ScalarType::Bf16 => format!(
                "uint u = {bits}(x);                  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);                  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);"
            ),
            // Beyond the largest finite value (rounded): infinity; below
            // the smallest normal: the subnormal's mantissa, rounded to
            // even by the float addition of 0.5 (exact below 2^23); else
            // the rebiased exponent and mantissa, rounded to even.
            _ => format!(
                "uint u = {bits}(x), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;                  if (a > 0x7f800000u) return (ushort)(s | 0x7e00u | (a >> 13));                  if (a >= 0x477ff000u) return (ushort)(s | 0x7c00u);                  if (a < 0x38800000u) {{ float f = {float}(a) * 16777216.0f; uint m = (uint)f; float r = f - (float)m;                  if (r > 0.5f || (r == 0.5f && (m & 1u))) m++; return (ushort)(s | m); }}                  uint v = a - 0x38000000u; v = v + 0xfffu + ((v >> 13) & 1u); return (ushort)(s | (v >> 13));"
            ),
        };
        let n = t.name();
        // On a CUDA device, f16 converts in one instruction each way
        // (`cvt`, any architecture): the integer code's branches would make
        // loops of f16 reads too long for nvcc to unroll, and rolled loops
        // keep their register arrays in local memory. `cvt.rn` rounds to
        // nearest, ties to even, as the integer code does; a NaN stays a
        // NaN (its payload may not: only NaN-ness is part of the rule).
        // bf16 keeps the integer code (a shift to widen; `cvt.f32.bf16`
        // needs sm_90).
        let device_f16 = d == Dialect::Cuda && t == ScalarType::F16;
        if device_f16 {
            s.push_str("#ifdef __CUDA_ARCH__\n");
            let _ = writeln!(
                s,
                "{h} float mdh_ld_f16(ushort b) {{ float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(b)); return f; }}"
            );
            let _ = writeln!(
                s,
                "{h} ushort mdh_st_f16(float x) {{ ushort b; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(b) : \"f\"(x)); return b; }}"
            );
            s.push_str("#else\n");
        }
        let _ = writeln!(s, "{h} float mdh_ld_{n}(ushort b) {{ {body_ld} }}");
        let _ = writeln!(s, "{h} ushort mdh_st_{n}(float x) {{ {body_st} }}");
        if device_f16 {
            s.push_str("#endif\n");
        }
        let _ = writeln!(
            s,
            "{h} float mdh_rnd_{n}(float x) {{ return mdh_ld_{n}(mdh_st_{n}(x)); }}"
        );
    }
    s
}

/// The C definitions of the helpers `mdh_div_T` and `mdh_rem_T` for the
/// integer types `types` (see the module docs for their meaning); an
/// expression lowered by [`Lowering`] calls those in its `int_divs`.
pub fn int_div_helpers(d: Dialect, types: &[ScalarType]) -> String {
    let mut s = String::new();
    for &t in types {
        let (c, n, f) = (d.ty(t), t.name(), d.helper());
        if t.is_signed() {
            // `-a` wraps in the unsigned type: `MIN / -1 == MIN`.
            let neg = format!("(({c})(0u - ({})a))", d.unsigned_ty(t));
            let _ = writeln!(
                s,
                "{f} {c} mdh_div_{n}({c} a, {c} b) {{ return b == 0 ? ({c})0 : b == -1 ? {neg} : ({c})(a / b); }}"
            );
            let _ = writeln!(
                s,
                "{f} {c} mdh_rem_{n}({c} a, {c} b) {{ return b == 0 || b == -1 ? ({c})0 : ({c})(a % b); }}"
            );
        } else {
            for (op, sym) in [("div", '/'), ("rem", '%')] {
                let _ = writeln!(
                    s,
                    "{f} {c} mdh_{op}_{n}({c} a, {c} b) {{ return b == 0 ? ({c})0 : ({c})(a {sym} b); }}"
                );
            }
        }
    }
    s
}

/// The C definitions of the CUDA helpers `mdh_cvt_T_F` for the float to
/// integer casts `casts` (`(F, T)` pairs): Rust's `as` (NaN to 0, values
/// beyond `T`'s range to its bounds, the rest truncated toward zero); an
/// expression lowered by [`Lowering`] calls those in its `float_casts`.
pub fn float_cast_helpers(d: Dialect, casts: &[(ScalarType, ScalarType)]) -> String {
    let mut s = String::new();
    for &(from, to) in casts {
        let bits = 8 * crate::plan::elem_bytes(to) as i32;
        // The bounds as floats: -2^(bits-1) and 2^(bits-1) (signed), 0 and
        // 2^bits (unsigned), each exact; `x >= hi` saturates.
        let (lo, hi, min) = if to.is_signed() {
            let min = format!("(({})(1UL << {}))", d.ty(to), bits - 1);
            (-(2f64.powi(bits - 1)), 2f64.powi(bits - 1), min)
        } else {
            (0.0, 2f64.powi(bits), int_lit(d, 0, to))
        };
        let max = int_lit(
            d,
            if to.is_signed() {
                (1u128 << (bits - 1)) - 1
            } else {
                (1u128 << bits) - 1
            },
            to,
        );
        let (c, f, h) = (d.ty(to), d.ty(from), d.helper());
        let (lo, hi) = (float_lit(d, lo, from), float_lit(d, hi, from));
        let _ = writeln!(
            s,
            "{h} {c} mdh_cvt_{}_{}({f} x) {{ return x != x ? ({c})0 : x <= {lo} ? {min} : x >= {hi} ? {max} : ({c})x; }}",
            to.name(),
            from.name()
        );
    }
    s
}

/// The neutral element of a built-in operator on `t`.
pub fn identity(d: Dialect, op: BuiltinOp, t: ScalarType) -> String {
    let signed_min = |bits: u32| format!("(({})(1UL << {}))", d.ty(t), bits - 1);
    match op.identity() {
        Identity::Zero => int_lit(d, 0, t),
        Identity::One => int_lit(d, 1, t),
        Identity::Lowest if t.is_float() => format!("(-{})", d.infinity(t)),
        Identity::Highest if t.is_float() => d.infinity(t).into(),
        Identity::Lowest if t.is_signed() => signed_min(8 * crate::plan::elem_bytes(t) as u32),
        Identity::Lowest => int_lit(d, 0, t),
        Identity::Highest if t.is_signed() => {
            let bits = 8 * crate::plan::elem_bytes(t) as u32;
            int_lit(d, (1u128 << (bits - 1)) - 1, t)
        }
        Identity::Highest => {
            let bits = 8 * crate::plan::elem_bytes(t) as u32;
            int_lit(d, (1u128 << bits) - 1, t)
        }
    }
}

/// Whether lowering `e` needs statements (it is not a pure C expression).
fn needs_stmts(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_, _) | ExprKind::Var(_) => false,
        ExprKind::Unary(_, a, _) | ExprKind::Cast(a, _, _) => needs_stmts(a),
        ExprKind::Binary(_, a, b, _) => needs_stmts(a) || needs_stmts(b),
        ExprKind::MethodCall(r, _, args, _) => needs_stmts(r) || args.iter().any(needs_stmts),
        _ => true,
    }
}

/// A C name bound to a Rust name.
#[derive(Clone)]
struct Binding {
    rust: String,
    c: String,
}

/// Lowers expressions into a buffer of C statements.
pub struct Lowering {
    pub d: Dialect,
    /// The statements emitted so far.
    pub out: String,
    indent: usize,
    scope: Vec<Binding>,
    fresh: usize,
    /// The integer types whose `/` or `%` helpers the lowered code calls
    /// (the prelude defines them, see [`int_div_helpers`]).
    pub int_divs: Vec<ScalarType>,
    /// The float to integer casts (`(from, to)`) whose helpers the lowered
    /// CUDA code calls (see [`float_cast_helpers`]).
    pub float_casts: Vec<(ScalarType, ScalarType)>,
}

impl Lowering {
    pub fn new(d: Dialect, indent: usize) -> Lowering {
        Lowering {
            d,
            out: String::new(),
            indent,
            scope: Vec::new(),
            fresh: 0,
            int_divs: Vec::new(),
            float_casts: Vec::new(),
        }
    }

    /// Binds `rust` to the C expression `c` (a variable or a macro name).
    pub fn bind(&mut self, rust: &str, c: &str) {
        self.scope.push(Binding {
            rust: rust.into(),
            c: c.into(),
        });
    }

    fn lookup(&self, rust: &str) -> String {
        self.scope
            .iter()
            .rev()
            .find(|b| b.rust == rust)
            .map(|b| b.c.clone())
            // The checker resolved every name; keep the output compilable.
            .unwrap_or_else(|| format!("/* unbound {rust} */ 0"))
    }

    /// A new C variable name derived from `hint`.
    pub fn fresh(&mut self, hint: &str) -> String {
        self.fresh += 1;
        format!("v{}_{hint}", self.fresh)
    }

    pub fn line(&mut self, s: &str) {
        let _ = writeln!(self.out, "{:w$}{s}", "", w = self.indent * 4);
    }

    /// `{ … }` around what `f` emits; the names it binds end with it.
    pub fn block(&mut self, f: impl FnOnce(&mut Lowering)) {
        let mark = self.scope.len();
        self.open("{");
        f(self);
        self.close("}");
        self.scope.truncate(mark);
    }

    fn open(&mut self, s: &str) {
        self.line(s);
        self.indent += 1;
    }

    fn close(&mut self, s: &str) {
        self.indent -= 1;
        self.line(s);
    }

    /// Declares a fresh variable of type `t` initialized with `init`.
    pub fn temp(&mut self, hint: &str, t: ScalarType, init: &str) -> String {
        let v = self.fresh(hint);
        let ty = self.d.ty(t);
        self.line(&format!("{ty} {v} = {init};"));
        v
    }

    /// Declares a fresh variable for the user's name `name`, of type `t`,
    /// initialized with `init` if given; the user may leave it unread.
    pub fn user_var(&mut self, name: &str, t: ScalarType, init: Option<&str>) -> String {
        let v = self.fresh(name);
        let (attr, ty) = (self.d.user_var(), self.d.ty(t));
        match init {
            Some(init) => self.line(&format!("{attr}{ty} {v} = {init};")),
            None => self.line(&format!("{attr}{ty} {v};")),
        }
        v
    }

    /// `e` as a pure C expression, emitting the statements it needs first.
    pub fn value(&mut self, e: &Expr) -> String {
        let d = self.d;
        match &e.kind {
            ExprKind::Lit(Lit::Bool(b), _) => b.to_string(),
            ExprKind::Lit(Lit::Int(v, _), t) => int_lit(d, *v, *t),
            ExprKind::Lit(Lit::Float(v, _), t) => float_lit(d, *v, *t),
            ExprKind::Var(id) => self.lookup(&id.to_string()),
            ExprKind::Unary(op, a, t) => {
                let a = self.value(a);
                self.unary(*op, *t, &a)
            }
            ExprKind::Binary(op @ (BinOp::And | BinOp::Or), a, b, _) if needs_stmts(b) => {
                // Keep the short circuit: the statements of `b` run only
                // when `a` does not decide.
                let a = self.value(a);
                let t = self.temp("cond", ScalarType::Bool, &a);
                let test = if *op == BinOp::And {
                    t.clone()
                } else {
                    format!("!{t}")
                };
                self.open(&format!("if ({test}) {{"));
                let b = self.value(b);
                self.line(&format!("{t} = {b};"));
                self.close("}");
                t
            }
            ExprKind::Binary(op, a, b, t) => {
                let a = self.value(a);
                let b = self.value(b);
                self.binary(*op, *t, &a, &b)
            }
            ExprKind::Cast(a, to, from) => {
                let a = self.value(a);
                let cast = (*from, *to);
                if d == Dialect::Cuda
                    && from.is_float()
                    && to.is_int()
                    && !self.float_casts.contains(&cast)
                {
                    self.float_casts.push(cast);
                }
                d.cast(&a, *from, *to)
            }
            ExprKind::MethodCall(recv, m, args, t) => {
                let r = self.value(recv);
                let args: Vec<String> = args.iter().map(|a| self.value(a)).collect();
                self.method(*m, *t, &r, &args)
            }
            ExprKind::If(c, then, Some(els))
                if !needs_stmts(c) && simple_block(then) && !needs_stmts(els) =>
            {
                let c = self.value(c);
                let then = self.value(then.tail.as_deref().unwrap_or(e));
                let els = self.value(els);
                format!("({c} ? {then} : {els})")
            }
            ExprKind::Block(b) if b.stmts.is_empty() && b.tail.is_some() => {
                self.value(b.tail.as_deref().unwrap_or(e))
            }
            _ => match &e.ty {
                Type::Scalar(t) => {
                    let v = self.fresh("t");
                    let ty = d.ty(*t);
                    self.line(&format!("{ty} {v};"));
                    self.assign_into(e, std::slice::from_ref(&v));
                    v
                }
                // `()` (a statement), `!` (a `break`), a tuple (only the
                // result of the scalar function, lowered by `assign_into`).
                Type::Unit | Type::Never | Type::Tuple(_) => {
                    self.stmt(e);
                    String::new()
                }
            },
        }
    }

    /// Lowers `e` and assigns its value(s) to `dests` (one per tuple
    /// component, or one for a scalar).
    pub fn assign_into(&mut self, e: &Expr, dests: &[String]) {
        match &e.kind {
            ExprKind::Tuple(items) if items.len() == dests.len() => {
                for (item, dest) in items.iter().zip(dests) {
                    self.assign_into(item, std::slice::from_ref(dest));
                }
            }
            ExprKind::If(c, then, Some(els)) => {
                let c = self.value(c);
                self.open(&format!("if {} {{", paren(&c)));
                self.block_into(then, dests);
                self.close("} else {");
                self.indent += 1;
                self.assign_into(els, dests);
                self.close("}");
            }
            ExprKind::Block(b) => self.block_into(b, dests),
            ExprKind::Break => self.line("break;"),
            _ if dests.len() == 1 => {
                let v = self.value(e);
                self.line(&format!("{} = {v};", dests[0]));
            }
            // A tuple-valued expression of another form does not pass the
            // checker; lower it for its effects only.
            _ => self.stmt(e),
        }
    }

    fn block_into(&mut self, b: &Block, dests: &[String]) {
        let mark = self.scope.len();
        self.stmts(b);
        if let Some(t) = &b.tail {
            self.assign_into(t, dests);
        }
        self.scope.truncate(mark);
    }

    fn stmts(&mut self, b: &Block) {
        for s in &b.stmts {
            match s {
                Stmt::Let {
                    name,
                    init,
                    var_ty: t,
                    ..
                } => {
                    let (n, t) = (name.to_string(), *t);
                    let x = init.as_ref().map(|init| self.value(init));
                    let v = self.user_var(&n, t, x.as_deref());
                    self.bind(&n, &v);
                }
                Stmt::Expr(e) => self.stmt(e),
            }
        }
    }

    /// Lowers `e` for its effects (its value, if any, is dropped).
    pub fn stmt(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Assign(id, op, v, t) => {
                let x = self.lookup(&id.to_string());
                let val = self.value(v);
                let rhs = match op {
                    None => val,
                    Some(op) => self.binary(*op, *t, &x, &val),
                };
                self.line(&format!("{x} = {rhs};"));
            }
            ExprKind::For(var, lo, hi, body, t) => {
                let t = *t;
                let lo = self.value(lo);
                let hi = self.value(hi);
                let end = self.temp("end", t, &hi);
                let name = var.as_ref().map_or("_".to_string(), |v| v.to_string());
                let v = self.fresh(&name.replace('_', "it"));
                let ty = self.d.ty(t);
                self.open(&format!("for ({ty} {v} = {lo}; {v} < {end}; {v}++) {{"));
                let mark = self.scope.len();
                if let Some(var) = var {
                    self.bind(&var.to_string(), &v);
                }
                self.block_stmt(body);
                self.scope.truncate(mark);
                self.close("}");
            }
            ExprKind::If(c, then, els) => {
                let c = self.value(c);
                self.open(&format!("if {} {{", paren(&c)));
                self.block_stmt(then);
                match els {
                    Some(els) => {
                        self.close("} else {");
                        self.indent += 1;
                        self.stmt(els);
                        self.close("}");
                    }
                    None => self.close("}"),
                }
            }
            ExprKind::Block(b) => self.block_stmt(b),
            ExprKind::Break => self.line("break;"),
            // Pure expressions have no effects.
            _ => {}
        }
    }

    fn block_stmt(&mut self, b: &Block) {
        let mark = self.scope.len();
        self.stmts(b);
        if let Some(t) = &b.tail {
            self.stmt(t);
        }
        self.scope.truncate(mark);
    }

    fn unary(&self, op: UnOp, t: ScalarType, a: &str) -> String {
        let d = self.d;
        match op {
            UnOp::Neg if t.is_int() => format!("(({})(0u - ({}){a}))", d.ty(t), d.unsigned_ty(t)),
            UnOp::Neg => format!("(-{a})"),
            UnOp::Not if t == ScalarType::Bool => format!("(!{a})"),
            UnOp::Not => format!("(({})(~{a}))", d.ty(t)),
        }
    }

    /// `a op b` on operands of type `t`.
    pub fn binary(&mut self, op: BinOp, t: ScalarType, a: &str, b: &str) -> String {
        let d = self.d;
        let wraps = matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul);
        if t.is_int() && wraps {
            let u = d.unsigned_ty(t);
            return format!("(({})(({u}){a} {} ({u}){b}))", d.ty(t), op.symbol());
        }
        if t.is_int() && matches!(op, BinOp::Div | BinOp::Rem) {
            if !self.int_divs.contains(&t) {
                self.int_divs.push(t);
            }
            let f = if op == BinOp::Div { "div" } else { "rem" };
            return format!("mdh_{f}_{}({a}, {b})", t.name());
        }
        let v = if t.is_float() && op == BinOp::Rem {
            format!("fmod({a}, {b})")
        } else {
            format!("({a} {} {b})", op.symbol())
        };
        if t.is_half() && !op.is_comparison() {
            format!("mdh_rnd_{}({v})", t.name())
        } else {
            v
        }
    }

    fn method(&self, m: Method, t: ScalarType, r: &str, args: &[String]) -> String {
        let v = self.float_method(m, t, r, args);
        if t.is_half() {
            format!("mdh_rnd_{}({v})", t.name())
        } else {
            v
        }
    }

    /// A method's value, in the receiver's C type (before the rounding of
    /// a 16-bit float type).
    fn float_method(&self, m: Method, t: ScalarType, r: &str, args: &[String]) -> String {
        let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
        match m {
            Method::Abs if t.is_int() => {
                format!("({r} < 0 ? {} : {r})", self.unary(UnOp::Neg, t, r))
            }
            Method::Abs => format!("fabs({r})"),
            Method::Min | Method::Max => self.min_max(m, t, r, &arg(0)),
            Method::Powi if self.d == Dialect::OpenCl => format!("pown({r}, {})", arg(0)),
            Method::Powi => format!("pow({r}, ({}){})", self.d.ty(t), arg(0)),
            Method::Powf => format!("pow({r}, {})", arg(0)),
            Method::Ln => format!("log({r})"),
            Method::MulAdd => format!("fma({r}, {}, {})", arg(0), arg(1)),
            Method::Sqrt
            | Method::Exp
            | Method::Sin
            | Method::Cos
            | Method::Tanh
            | Method::Floor
            | Method::Ceil => format!("{}({r})", m.name()),
        }
    }

    fn min_max(&self, m: Method, t: ScalarType, a: &str, b: &str) -> String {
        match (m, t.is_float()) {
            (Method::Min, true) => format!("fmin({a}, {b})"),
            (_, true) => format!("fmax({a}, {b})"),
            // OpenCL's built-ins: `x.max(x)` as `x > x ? x : x` made clang
            // warn of a self-comparison (random kernel 45 of seed 108,
            // issue 37). Operands cast to `t`: a conditional expression of
            // narrow integers is an `int`, and the built-ins take one type.
            (_, false) if self.d == Dialect::OpenCl => {
                let c = self.d.ty(t);
                let f = if m == Method::Min { "min" } else { "max" };
                format!("{f}(({c})({a}), ({c})({b}))")
            }
            (Method::Min, false) => format!("({a} < {b} ? {a} : {b})"),
            (_, false) => format!("({a} > {b} ? {a} : {b})"),
        }
    }

    /// `a ⊕ b` for a combine operator on values of type `t`, as a pure C
    /// expression (a closure's statements are emitted first).
    pub fn combine(&mut self, op: &ReduceOp, t: ScalarType, a: &str, b: &str) -> String {
        match op {
            ReduceOp::Builtin(op, _) => match op.combination() {
                Combination::Binary(bin) => self.binary(bin, t, a, b),
                Combination::Method(m) => self.min_max(m, t, a, b),
            },
            ReduceOp::Closure(c) => {
                let mark = self.scope.len();
                let l = self.temp(&c.lhs.to_string(), t, a);
                let r = self.temp(&c.rhs.to_string(), t, b);
                self.bind(&c.lhs.to_string(), &l);
                self.bind(&c.rhs.to_string(), &r);
                let v = self.value(&c.body);
                self.scope.truncate(mark);
                v
            }
        }
    }
}

/// `c` in parentheses once (clang warns about `if ((a == b))`).
fn paren(c: &str) -> String {
    // Wrapped when the first parenthesis closes only at the very end.
    let mut wrapped = c.starts_with('(') && c.ends_with(')');
    let mut depth = 0i32;
    for (i, ch) in c.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth == 0 && i + 1 < c.len() {
            wrapped = false;
        }
    }
    if wrapped {
        c.to_string()
    } else {
        format!("({c})")
    }
}

fn simple_block(b: &Block) -> bool {
    b.stmts.is_empty() && b.tail.as_deref().is_some_and(|t| !needs_stmts(t))
}
