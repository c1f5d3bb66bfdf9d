//! Emission of checked scalar-function expressions as Rust. Integer
//! arithmetic wraps (as in the interpreter), literals carry their checked
//! types, so the generated code means exactly what the interpreter computes.

use mdh_rt::value::Cast;
use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};

use crate::interp::Value;
use crate::spec::{
    BinOp, Block, BuiltinOp, Combination, Expr, ExprKind, Identity, Lit, Method, ReduceOp,
    ScalarType, Stmt, Type, UnOp,
};

pub fn ty(t: ScalarType) -> TokenStream {
    let id = Ident::new(t.name(), Span::call_site());
    if t.is_half() {
        // The `half` crate's type, as `mdh` re-exports it.
        quote!(::mdh::__rt::#id)
    } else {
        quote!(#id)
    }
}

/// A literal of the 16-bit float type `t` (`f16`, `bf16`), as the bits of
/// `v` rounded to it (the interpreter's `Cast`: through `f32`).
fn half_lit(v: impl Cast, t: ScalarType) -> Option<TokenStream> {
    let bits = match v.cast_to(t)? {
        Value::F16(h) => h.to_bits(),
        Value::Bf16(b) => b.to_bits(),
        _ => return None,
    };
    let tt = ty(t);
    let bits = Literal::u16_suffixed(bits);
    Some(quote!(#tt::from_bits(#bits)))
}

/// A literal of type `t` with value `v` (integers that do not fit `t` wrap,
/// like `v as t`).
pub fn int_lit(v: u128, t: ScalarType) -> TokenStream {
    if let Some(h) = half_lit(v, t) {
        return h;
    }
    let fits = |max: u128| v <= max;
    let l = match t {
        ScalarType::F32 => Literal::f32_suffixed(v as f32),
        ScalarType::F64 => Literal::f64_suffixed(v as f64),
        ScalarType::I8 if fits(i8::MAX as u128) => Literal::i8_suffixed(v as i8),
        ScalarType::I16 if fits(i16::MAX as u128) => Literal::i16_suffixed(v as i16),
        ScalarType::I32 if fits(i32::MAX as u128) => Literal::i32_suffixed(v as i32),
        ScalarType::I64 if fits(i64::MAX as u128) => Literal::i64_suffixed(v as i64),
        ScalarType::U8 if fits(u8::MAX as u128) => Literal::u8_suffixed(v as u8),
        ScalarType::U16 if fits(u16::MAX as u128) => Literal::u16_suffixed(v as u16),
        ScalarType::U32 if fits(u32::MAX as u128) => Literal::u32_suffixed(v as u32),
        ScalarType::U64 if fits(u64::MAX as u128) => Literal::u64_suffixed(v as u64),
        ScalarType::Usize if fits(u64::MAX as u128) => Literal::usize_suffixed(v as usize),
        ScalarType::Bool => return if v != 0 { quote!(true) } else { quote!(false) },
        _ => {
            let l = Literal::u128_suffixed(v);
            let t = ty(t);
            return quote!((#l as #t));
        }
    };
    quote!(#l)
}

pub fn float_lit(v: f64, t: ScalarType) -> TokenStream {
    if let Some(h) = half_lit(v, t) {
        return h;
    }
    match t {
        ScalarType::F32 if (v as f32).is_finite() => {
            let l = Literal::f32_suffixed(v as f32);
            quote!(#l)
        }
        ScalarType::F64 if v.is_finite() => {
            let l = Literal::f64_suffixed(v);
            quote!(#l)
        }
        ScalarType::F32 => quote!(::core::primitive::f32::INFINITY),
        _ => quote!(::core::primitive::f64::INFINITY),
    }
}

/// The neutral element of a built-in operator on `t`.
pub fn identity(op: BuiltinOp, t: ScalarType) -> TokenStream {
    let tt = ty(t);
    match (op.identity(), t.is_float()) {
        (Identity::Zero, _) => int_lit(0, t),
        (Identity::One, _) => int_lit(1, t),
        (Identity::Lowest, true) => quote!(#tt::NEG_INFINITY),
        (Identity::Highest, true) => quote!(#tt::INFINITY),
        (Identity::Lowest, false) => quote!(#tt::MIN),
        (Identity::Highest, false) => quote!(#tt::MAX),
    }
}

/// `a ⊕ b` for a combine operator on values of type `t`.
pub fn combine(op: &ReduceOp, t: ScalarType, a: &TokenStream, b: &TokenStream) -> TokenStream {
    match op {
        ReduceOp::Builtin(op, _) => match op.combination() {
            Combination::Binary(bin) => binary(bin, t, a, b),
            Combination::Method(m) => min_max(m, t, a, b),
        },
        ReduceOp::Closure(c) => {
            let (l, r) = (&c.lhs, &c.rhs);
            let body = expr(&c.body);
            let tt = ty(t);
            quote!({ let #l: #tt = #a; let #r: #tt = #b; #body })
        }
    }
}

/// `a.max(b)` / `a.min(b)`; for floats through `mdh::__rt::FloatMinMax`
/// (the same meaning as `f32::max`, but not LLVM's `maxnum`, whose
/// vectorized reductions of two float types rustc 1.95 cannot compile: see
/// the trait's documentation).
fn min_max(m: Method, t: ScalarType, a: &TokenStream, b: &TokenStream) -> TokenStream {
    if t.is_float() {
        let name = format_ident!("{}_num", m.name());
        quote!(::mdh::__rt::FloatMinMax::#name(#a, #b))
    } else {
        let name = format_ident!("{}", m.name());
        quote!(::core::cmp::Ord::#name(#a, #b))
    }
}

fn binary(op: BinOp, t: ScalarType, a: &TokenStream, b: &TokenStream) -> TokenStream {
    if t.is_int() {
        // Integer `/` and `%` by 0 give 0 (the interpreter's and the GPUs'
        // definition) instead of panicking: `mdh::__rt::IntDiv`.
        match op {
            BinOp::Div => return quote!(::mdh::__rt::IntDiv::div_or_zero(#a, #b)),
            BinOp::Rem => return quote!(::mdh::__rt::IntDiv::rem_or_zero(#a, #b)),
            _ => {}
        }
        let wrapping = match op {
            BinOp::Add => Some("wrapping_add"),
            BinOp::Sub => Some("wrapping_sub"),
            BinOp::Mul => Some("wrapping_mul"),
            _ => None,
        };
        if let Some(w) = wrapping {
            let w = format_ident!("{}", w);
            return quote!((#a).#w(#b));
        }
    }
    let sym: TokenStream = op.symbol().parse().unwrap_or_default();
    quote!((#a #sym #b))
}

pub fn expr(e: &Expr) -> TokenStream {
    match &e.kind {
        ExprKind::Lit(Lit::Bool(b), _) => quote!(#b),
        ExprKind::Lit(Lit::Int(v, _), t) => int_lit(*v, *t),
        ExprKind::Lit(Lit::Float(v, _), t) => float_lit(*v, *t),
        ExprKind::Var(id) => quote!(#id),
        ExprKind::Unary(UnOp::Not, a, _) => {
            let a = expr(a);
            quote!((!#a))
        }
        ExprKind::Unary(UnOp::Neg, a, t) => {
            let a = expr(a);
            if t.is_int() {
                quote!((#a).wrapping_neg())
            } else {
                quote!((-#a))
            }
        }
        ExprKind::Binary(op, a, b, t) => {
            // Operand type decides the arithmetic (comparisons return bool).
            binary(*op, *t, &expr(a), &expr(b))
        }
        ExprKind::Cast(a, to, from) => cast(expr(a), *from, *to),
        ExprKind::MethodCall(recv, m, args, t) => {
            let t = *t;
            let r = expr(recv);
            let args: Vec<TokenStream> = args.iter().map(expr).collect();
            match m {
                Method::Min | Method::Max => {
                    min_max(*m, t, &r, &args.first().cloned().unwrap_or_default())
                }
                Method::Abs if t.is_int() => quote!((#r).wrapping_abs()),
                _ if t.is_half() => {
                    // Computed in f32, rounded to the type.
                    let name = format_ident!("{}", m.name());
                    // Arguments have the receiver's type, but `powi`'s (an `i32`).
                    let args = args.iter().map(|a| match m {
                        Method::Powi => a.clone(),
                        _ => quote!((#a).to_f32()),
                    });
                    let tt = ty(t);
                    quote!(#tt::from_f32((#r).to_f32().#name(#(#args),*)))
                }
                _ => {
                    let name = format_ident!("{}", m.name());
                    quote!((#r).#name(#(#args),*))
                }
            }
        }
        ExprKind::If(c, then, els) => {
            let c = expr(c);
            let then = block(then);
            match els {
                Some(e) => {
                    let e = expr(e);
                    quote!(if #c #then else #e)
                }
                None => quote!(if #c #then),
            }
        }
        ExprKind::Block(b) => block(b),
        ExprKind::Tuple(items) => {
            let items = items.iter().map(expr);
            quote!((#(#items,)*))
        }
        ExprKind::Assign(id, None, v, _) => {
            let v = expr(v);
            quote!(#id = #v)
        }
        ExprKind::Assign(id, Some(op), v, t) => {
            let rhs = binary(*op, *t, &quote!(#id), &expr(v));
            quote!(#id = #rhs)
        }
        ExprKind::For(var, lo, hi, body, _) => {
            let var = match var {
                Some(v) => quote!(#v),
                None => quote!(_),
            };
            let (lo, hi, body) = (expr(lo), expr(hi), block(body));
            quote!(for #var in (#lo)..(#hi) #body)
        }
        ExprKind::Break => quote!(break),
    }
}

/// `a as to` for a value `a` of type `from`: Rust's `as`, to and from the
/// 16-bit float types through `f32`.
fn cast(a: TokenStream, from: ScalarType, to: ScalarType) -> TokenStream {
    let a = if from.is_half() {
        quote!((#a).to_f32())
    } else {
        a
    };
    let tt = ty(to);
    if to.is_half() {
        quote!(#tt::from_f32((#a) as f32))
    } else {
        quote!(((#a) as #tt))
    }
}

pub fn block(b: &Block) -> TokenStream {
    let stmts = b.stmts.iter().map(|s| match s {
        Stmt::Let {
            name,
            mutable,
            ty: annot,
            init,
            ..
        } => {
            let m = mutable.then(|| quote!(mut));
            let annot = annot.map(|t| {
                let t = ty(t);
                quote!(: #t)
            });
            match init {
                Some(i) => {
                    let i = expr(i);
                    quote!(let #m #name #annot = #i;)
                }
                None => quote!(let #m #name #annot;),
            }
        }
        Stmt::Expr(e) => {
            let e = expr(e);
            quote!(#e;)
        }
    });
    let tail = b.tail.as_ref().map(|t| expr(t));
    quote!({ #(#stmts)* #tail })
}

/// The Rust type of a checked expression's value.
pub fn type_of(t: &Type) -> TokenStream {
    match t {
        Type::Scalar(s) => ty(*s),
        Type::Tuple(ts) => {
            let ts = ts.iter().map(|t| ty(*t));
            quote!((#(#ts,)*))
        }
        Type::Unit | Type::Never => quote!(()),
    }
}
