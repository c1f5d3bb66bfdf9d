//! Widened 16-bit inputs: an `f16` or `bf16` input access whose scalar
//! function reads it only as `x as f32` is converted to f32 where it is
//! read (while its L1 tile is packed, or at its in-place read), and the
//! scalar function runs on f32 values. A mixed-precision contraction
//! `|a, b| (a as f32) * (b as f32)` then runs the f32 register tiles at the
//! FP32 FMA rate; the conversion is exact, so its values are the
//! interpreter's.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::analysis::Checked;
use crate::spec::{Block, Expr, ExprKind, ScalarType, Stmt, Type};

/// The scalar function as the CPU code runs it: its body with the casts of
/// widened parameters removed, and per input access the 16-bit type it is
/// widened from (`None`: read as it is).
#[derive(Clone)]
pub(super) struct Widened {
    pub(super) body: Expr,
    pub(super) from: Vec<Option<ScalarType>>,
}

impl Widened {
    pub(super) fn new(k: &Checked) -> Self {
        let f = &k.scalar_fn;
        let from: Vec<Option<ScalarType>> = f
            .params
            .iter()
            .zip(&k.analysis().inputs)
            .map(|(p, a)| (a.ty.is_half() && only_widened(&f.body, p)).then_some(a.ty))
            .collect();
        let names: Vec<&Ident> = f
            .params
            .iter()
            .zip(&from)
            .filter_map(|(p, w)| w.map(|_| p))
            .collect();
        let mut body = f.body.clone();
        if !names.is_empty() {
            unwiden(&mut body, &names);
        }
        Widened { body, from }
    }

    /// The type input access `j` is read as (`ty`: its element type).
    pub(super) fn read_ty(&self, j: usize, ty: ScalarType) -> ScalarType {
        match self.from[j] {
            Some(_) => ScalarType::F32,
            None => ty,
        }
    }
}

/// Per input access, the 16-bit type the CPU code widens it from
/// ([`Widened`]; `None`: read as it is).
pub(crate) fn widened(k: &Checked) -> Vec<Option<ScalarType>> {
    Widened::new(k).from
}

/// `x` (an element of input access `j`'s buffer) as the scalar function
/// reads it: widened to f32 where the access is (`from`), else as it is.
/// `bf16` → `f32` is the 16-bit shift; `f16` → `f32` is one `vcvtph2ps`
/// in the AVX2 and AVX-512 bodies (F16C), `half`'s conversion in the
/// baseline one ([`mdh::__rt::widen_f16`]).
pub(super) fn widen(from: Option<ScalarType>, x: TokenStream) -> TokenStream {
    match from {
        Some(ScalarType::Bf16) => quote!(::mdh::__rt::widen_bf16(#x)),
        Some(_) => quote!(::mdh::__rt::widen_f16::<ISA>(#x)),
        None => x,
    }
}

/// Whether every use of `p` in `e` is `p as f32` (and nothing rebinds it).
fn only_widened(e: &Expr, p: &Ident) -> bool {
    match &e.kind {
        ExprKind::Cast(x, ScalarType::F32, t) if t.is_half() => match &x.kind {
            ExprKind::Var(v) if v == p => true,
            _ => only_widened(x, p),
        },
        ExprKind::Var(v) => v != p,
        ExprKind::Assign(v, _, x, _) => v != p && only_widened(x, p),
        ExprKind::For(v, lo, hi, b, _) => {
            v.as_ref() != Some(p)
                && only_widened(lo, p)
                && only_widened(hi, p)
                && block_only_widened(b, p)
        }
        ExprKind::Lit(..) | ExprKind::Break => true,
        ExprKind::Unary(_, x, _) | ExprKind::Cast(x, _, _) => only_widened(x, p),
        ExprKind::Binary(_, x, y, _) => only_widened(x, p) && only_widened(y, p),
        ExprKind::MethodCall(r, _, args, _) => {
            only_widened(r, p) && args.iter().all(|a| only_widened(a, p))
        }
        ExprKind::If(c, t, els) => {
            only_widened(c, p)
                && block_only_widened(t, p)
                && els.as_deref().is_none_or(|x| only_widened(x, p))
        }
        ExprKind::Block(b) => block_only_widened(b, p),
        ExprKind::Tuple(xs) => xs.iter().all(|x| only_widened(x, p)),
    }
}

fn block_only_widened(b: &Block, p: &Ident) -> bool {
    b.stmts.iter().all(|s| match s {
        Stmt::Let { name, init, .. } => {
            name != p && init.as_ref().is_none_or(|x| only_widened(x, p))
        }
        Stmt::Expr(x) => only_widened(x, p),
    }) && b.tail.as_deref().is_none_or(|x| only_widened(x, p))
}

/// Replaces each `p as f32` of a widened parameter `p` by `p` (an f32).
fn unwiden(e: &mut Expr, names: &[&Ident]) {
    if let ExprKind::Cast(x, ScalarType::F32, t) = &e.kind {
        if let ExprKind::Var(v) = &x.kind {
            if t.is_half() && names.contains(&v) {
                let mut var = (**x).clone();
                var.ty = Type::Scalar(ScalarType::F32);
                *e = var;
                return;
            }
        }
    }
    let block = |b: &mut Block| {
        for s in &mut b.stmts {
            match s {
                Stmt::Let { init: Some(x), .. } | Stmt::Expr(x) => unwiden(x, names),
                Stmt::Let { init: None, .. } => {}
            }
        }
        if let Some(t) = b.tail.as_deref_mut() {
            unwiden(t, names);
        }
    };
    match &mut e.kind {
        ExprKind::Lit(..) | ExprKind::Var(_) | ExprKind::Break => {}
        ExprKind::Unary(_, x, _) | ExprKind::Cast(x, _, _) | ExprKind::Assign(_, _, x, _) => {
            unwiden(x, names)
        }
        ExprKind::Binary(_, x, y, _) => {
            unwiden(x, names);
            unwiden(y, names);
        }
        ExprKind::MethodCall(r, _, args, _) => {
            unwiden(r, names);
            args.iter_mut().for_each(|a| unwiden(a, names));
        }
        ExprKind::If(c, t, els) => {
            unwiden(c, names);
            block(t);
            if let Some(x) = els.as_deref_mut() {
                unwiden(x, names);
            }
        }
        ExprKind::Block(b) => block(b),
        ExprKind::Tuple(xs) => xs.iter_mut().for_each(|x| unwiden(x, names)),
        ExprKind::For(_, lo, hi, b, _) => {
            unwiden(lo, names);
            unwiden(hi, names);
            block(b);
        }
    }
}
