//! The checked kernel's trees: the parsed trees with the types that
//! inference resolved, read in the order inference recorded them (the
//! pre-order of [`Infer::expr`](super::infer), each `let` after its value).
//!
//! After a successful inference every node has its types; a missing one is
//! a bug in mdh, reported as an error at the node (never a guess).

use super::infer::{NodeTypes, TreeTypes};
use crate::spec::{parsed, Block, Expr, ExprKind, Kernel, ScalarType, SpanRange, Stmt, Type};

/// `k` with every expression typed.
pub(super) fn typed_kernel(k: parsed::Kernel, types: NodeTypes) -> syn::Result<Kernel> {
    let NodeTypes {
        scalar_fn,
        mut closures,
    } = types;
    let mut scalar_fn = Some(scalar_fn);
    k.map_trees(|tree, body| {
        let types = match tree {
            None => scalar_fn.take(),
            Some(key) => closures
                .iter()
                .position(|(k, _)| *k == key)
                .map(|i| closures.swap_remove(i).1),
        };
        match types {
            Some(types) => Cursor::new(types).tree(body),
            None => Err(untyped(body.range)),
        }
    })
}

fn untyped(range: SpanRange) -> syn::Error {
    range.error("internal error in mdh: the checker left this expression without a type; please report it with the kernel")
}

/// The types of one tree, taken in order.
struct Cursor {
    nodes: std::vec::IntoIter<(Type, Option<ScalarType>)>,
    lets: std::vec::IntoIter<ScalarType>,
}

impl Cursor {
    fn new(t: TreeTypes) -> Cursor {
        Cursor {
            nodes: t.nodes.into_iter(),
            lets: t.lets.into_iter(),
        }
    }

    /// A whole tree: every type of the cursor is used.
    fn tree(mut self, e: parsed::Expr) -> syn::Result<Expr> {
        let range = e.range;
        let e = self.expr(e)?;
        match (self.nodes.next(), self.lets.next()) {
            (None, None) => Ok(e),
            _ => Err(untyped(range)),
        }
    }

    fn expr(&mut self, e: parsed::Expr) -> syn::Result<Expr> {
        let range = e.range;
        let (ty, op) = self.nodes.next().ok_or_else(|| untyped(range))?;
        // The scalar type of the node's operation.
        let op = || op.ok_or_else(|| untyped(range));
        let kind = match e.kind {
            ExprKind::Lit(l, ()) => ExprKind::Lit(l, op()?),
            ExprKind::Var(id) => ExprKind::Var(id),
            ExprKind::Unary(o, a, ()) => ExprKind::Unary(o, self.boxed(*a)?, op()?),
            ExprKind::Binary(o, a, b, ()) => {
                let a = self.boxed(*a)?;
                ExprKind::Binary(o, a, self.boxed(*b)?, op()?)
            }
            ExprKind::Cast(a, to, ()) => ExprKind::Cast(self.boxed(*a)?, to, op()?),
            ExprKind::MethodCall(r, m, args, ()) => {
                let r = self.boxed(*r)?;
                let args = args
                    .into_iter()
                    .map(|a| self.expr(a))
                    .collect::<syn::Result<_>>()?;
                ExprKind::MethodCall(r, m, args, op()?)
            }
            ExprKind::If(c, then, els) => {
                let c = self.boxed(*c)?;
                let then = self.block(then)?;
                let els = els.map(|x| self.boxed(*x)).transpose()?;
                ExprKind::If(c, then, els)
            }
            ExprKind::Block(b) => ExprKind::Block(self.block(b)?),
            ExprKind::Tuple(es) => ExprKind::Tuple(
                es.into_iter()
                    .map(|x| self.expr(x))
                    .collect::<syn::Result<_>>()?,
            ),
            ExprKind::Assign(id, o, v, ()) => ExprKind::Assign(id, o, self.boxed(*v)?, op()?),
            ExprKind::For(v, lo, hi, body, ()) => {
                let lo = self.boxed(*lo)?;
                let hi = self.boxed(*hi)?;
                ExprKind::For(v, lo, hi, self.block(body)?, op()?)
            }
            ExprKind::Break => ExprKind::Break,
        };
        Ok(Expr {
            kind,
            span: e.span,
            range,
            ty,
        })
    }

    fn boxed(&mut self, e: parsed::Expr) -> syn::Result<Box<Expr>> {
        self.expr(e).map(Box::new)
    }

    fn block(&mut self, b: parsed::Block) -> syn::Result<Block> {
        let stmts = b
            .stmts
            .into_iter()
            .map(|s| match s {
                Stmt::Let {
                    name,
                    mutable,
                    ty,
                    init,
                    span,
                    range,
                    var_ty: (),
                } => {
                    let init = init.map(|x| self.expr(x)).transpose()?;
                    let var_ty = self.lets.next().ok_or_else(|| untyped(range))?;
                    Ok(Stmt::Let {
                        name,
                        mutable,
                        ty,
                        init,
                        span,
                        range,
                        var_ty,
                    })
                }
                Stmt::Expr(e) => self.expr(e).map(Stmt::Expr),
            })
            .collect::<syn::Result<_>>()?;
        let tail = b.tail.map(|t| self.boxed(*t)).transpose()?;
        Ok(Block {
            stmts,
            tail,
            span: b.span,
        })
    }
}
