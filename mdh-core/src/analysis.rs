//! The checked kernel and its analysis: the facts about a kernel that plans,
//! code generators, the interpreter and the tuner read, derived once by
//! [`check`](crate::check::check) instead of again in each consumer.
//!
//! A [`Checked`] can only be made by the checker, so holding one means the
//! kernel passed every check of DESIGN.md §2: every expression is typed, one
//! combine operator per dimension, Lemma 1 holds (all PW and PS dimensions
//! of an output access use the same operator ⊕).

use std::ops::Deref;

mod widen;

use crate::spec::{
    BinOp, BuiltinOp, Closure2, DimKind, Expr, ExprKind, IndexFn, Kernel, Method, ReduceOp,
    ScalarType,
};

/// A kernel that passed the checker, with its [`Analysis`]. Derefs to the
/// [`Kernel`] for what the source says (names, views, scalar function).
#[derive(Clone, Debug)]
pub struct Checked {
    kernel: Kernel,
    analysis: Analysis,
    /// Per output access: its operator as the CPU code runs it (see
    /// [`Checked::cpu_op`]).
    cpu_ops: Vec<Option<ReduceOp>>,
    /// Per input access: whether the CPU reads it widened to `f32` (see
    /// [`Checked::widened`]).
    widened: Vec<bool>,
    /// The scalar function's body as the CPU task bodies compute it (see
    /// [`Checked::cpu_body`]).
    cpu_body: Expr,
}

/// What the checker derived about a kernel (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Analysis {
    /// Per md_hom dimension: CC, PW or PS.
    pub kinds: Vec<DimKind>,
    /// The dimensions kept in the output (CC and PS), in increasing order.
    pub kept: Vec<usize>,
    /// The dimensions reduced by a PW operator, in increasing order.
    pub reduced: Vec<usize>,
    /// The input accesses, in scalar-function parameter order.
    pub inputs: Vec<Access>,
    /// The output accesses, in scalar-function result order.
    pub outputs: Vec<Access>,
    /// The first PW or PS dimension: its combine operator gives each output
    /// access's ⊕ (by Lemma 1 every other one gives the same). `None` when
    /// every dimension is CC.
    op_dim: Option<usize>,
}

/// One access `buffer[f(i…)]` of an `inp_view` or `out_view`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// Index of the buffer among the inputs (or among the outputs).
    pub buffer: usize,
    /// The buffer's element type.
    pub ty: ScalarType,
    /// The dimensions the index function depends on, in increasing order.
    pub uses: Vec<usize>,
    /// Per md_hom dimension: its coefficient in the row-major offset when
    /// known at compile time (see [`static_coef`]).
    pub static_coefs: Vec<Option<i64>>,
}

impl Checked {
    /// Wraps a kernel the checker accepted (only the checker calls this).
    pub(crate) fn new(kernel: Kernel) -> Checked {
        let analysis = Analysis::of(&kernel);
        let tys: Vec<ScalarType> = analysis.inputs.iter().map(|a| a.ty).collect();
        let widened = widen::widened(&kernel.scalar_fn, &tys);
        let cpu_body = widen::body(&kernel.scalar_fn, &widened);
        let mut checked = Checked {
            kernel,
            analysis,
            cpu_ops: Vec::new(),
            widened,
            cpu_body,
        };
        checked.cpu_ops = (0..checked.analysis.outputs.len())
            .map(|o| {
                let op = checked.op(o)?;
                Some(match op {
                    ReduceOp::Closure(c) => match builtin_of(c, checked.analysis.outputs[o].ty) {
                        Some(b) => ReduceOp::Builtin(b, c.span),
                        None => op.clone(),
                    },
                    _ => op.clone(),
                })
            })
            .collect();
        checked
    }

    pub fn analysis(&self) -> &Analysis {
        &self.analysis
    }

    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Whether the CPU reads input access `j` widened to `f32`: its element
    /// type is `f16` or `bf16` and the scalar function only uses it as
    /// `x as f32` (mixed precision). Its packed tiles hold `f32` (converted
    /// while packing), and where a plan reads it in place each read
    /// converts; the scalar function computes as [`Checked::cpu_body`] says.
    pub fn widened(&self, j: usize) -> bool {
        self.widened.get(j).copied().unwrap_or(false)
    }

    /// The element type of input access `j` as the CPU task bodies read it:
    /// `f32` where it is [widened](Checked::widened), else its own.
    pub fn cpu_input_ty(&self, j: usize) -> ScalarType {
        if self.widened(j) {
            ScalarType::F32
        } else {
            self.analysis.inputs[j].ty
        }
    }

    /// The scalar function's body as the CPU task bodies compute it: each
    /// `x as f32` of a [widened](Checked::widened) parameter is `x`, already
    /// an `f32` (the widening is exact: the same value).
    pub fn cpu_body(&self) -> &Expr {
        &self.cpu_body
    }

    /// Whether the kernel is contraction-shaped (`KernelDesc::contraction`):
    /// two input buffers of one access each, `f32` or 16-bit floats widened
    /// with `as f32` (mixed precision: the widening is exact, so tensor
    /// cores take them as they take `f32`), their `f32` product (in either
    /// order) as the scalar function, one `f32` output access combined by
    /// PW(+) along at least one dimension, no PS dimension.
    pub fn contraction(&self) -> bool {
        let a = &self.analysis;
        let f = &self.kernel.scalar_fn;
        let param = |e: &Expr| match &e.kind {
            ExprKind::Var(v) => f.params.iter().position(|p| p == v),
            _ => None,
        };
        let operand = |e: &Expr| match &e.kind {
            ExprKind::Cast(x, ScalarType::F32, from) if from.is_half() => param(x),
            _ => param(e),
        };
        let product = match &value_of(&f.body).kind {
            ExprKind::Binary(BinOp::Mul, x, y, ScalarType::F32) => {
                matches!(
                    (operand(x), operand(y)),
                    (Some(0), Some(1)) | (Some(1), Some(0))
                )
            }
            _ => false,
        };
        product
            && self.kernel.inputs.len() == 2
            && a.inputs.len() == 2
            && a.inputs
                .iter()
                .all(|x| x.ty == ScalarType::F32 || x.ty.is_half())
            && a.outputs.len() == 1
            && a.outputs[0].ty == ScalarType::F32
            && !a.reduced.is_empty()
            && !a.kinds.contains(&DimKind::Ps)
            && matches!(self.op(0), Some(ReduceOp::Builtin(BuiltinOp::Add, _)))
    }

    /// The combine operator ⊕ of output access `o`, if any dimension is PW or PS.
    pub fn op(&self, o: usize) -> Option<&ReduceOp> {
        let d = self.analysis.op_dim?;
        self.kernel.ops[d].op_for(o)
    }

    /// Output access `o`'s combine operator as the CPU code runs it: a
    /// user-defined operator that computes a built-in one (`|a, b| if a > b
    /// { a } else { b }` on integers is `max`) as that built-in, whose
    /// identity starts the accumulators, so that SIMD lanes apply and LLVM
    /// vectorizes the reduction (prl on the 2-core AMD EPYC: 0.56 s with the
    /// closure's `Option` accumulators, 0.18 s as `max`). The kernel's
    /// semantics stay the closure's: [`Checked::has_identity`] (an empty PW
    /// dimension is still an error), the GPU and MPI code use [`Checked::op`].
    pub fn cpu_op(&self, o: usize) -> Option<&ReduceOp> {
        self.cpu_ops.get(o)?.as_ref()
    }

    /// Whether output access `o` has a neutral element: a built-in
    /// operator's, or none needed (no dimension combines it). A
    /// user-defined operator has none, so an empty PW dimension is an error.
    pub fn has_identity(&self, o: usize) -> bool {
        !matches!(self.op(o), Some(ReduceOp::Closure(_)))
    }
}

impl Deref for Checked {
    type Target = Kernel;

    fn deref(&self) -> &Kernel {
        &self.kernel
    }
}

impl Analysis {
    fn of(k: &Kernel) -> Analysis {
        let kinds = k.dim_kinds();
        let d = kinds.len();
        let access = |bufs: &[crate::spec::BufferDecl], (b, f): (usize, &IndexFn)| Access {
            buffer: b,
            ty: bufs[b].ty,
            uses: used_dims(f, d),
            static_coefs: (0..d).map(|x| static_coef(f, x)).collect(),
        };
        Analysis {
            kept: DimKind::kept(&kinds),
            reduced: DimKind::reduced(&kinds),
            inputs: k
                .input_accesses()
                .into_iter()
                .map(|a| access(&k.inputs, a))
                .collect(),
            outputs: k
                .output_accesses()
                .into_iter()
                .map(|a| access(&k.outputs, a))
                .collect(),
            op_dim: kinds.iter().position(|&x| x != DimKind::Cc),
            kinds,
        }
    }

    /// The element type of each output access (one partial result each).
    pub fn output_types(&self) -> Vec<ScalarType> {
        self.outputs.iter().map(|a| a.ty).collect()
    }
}

/// The expression a block without statements evaluates to (`{ a * b }` is
/// `a * b`).
fn value_of(e: &Expr) -> &Expr {
    match &e.kind {
        ExprKind::Block(b) if b.stmts.is_empty() => b.tail.as_deref().map_or(e, value_of),
        _ => e,
    }
}

/// The dimensions an access depends on (a non-zero coefficient in some
/// component), in increasing order.
pub fn used_dims(f: &IndexFn, dims: usize) -> Vec<usize> {
    (0..dims)
        .filter(|&d| {
            f.components
                .iter()
                .any(|c| c.dims.get(d).copied().unwrap_or(0) != 0)
        })
        .collect()
}

/// The coefficient of dimension `d` in the row-major offset of an access
/// when it is known at compile time: `d` appears only in the last
/// component (whose stride is 1).
pub fn static_coef(f: &IndexFn, d: usize) -> Option<i64> {
    let (last, rest) = f.components.split_last()?;
    rest.iter()
        .all(|c| c.dims.get(d).copied().unwrap_or(0) == 0)
        .then(|| last.dims.get(d).copied().unwrap_or(0))
}

/// The built-in operator a user-defined one computes on values of type
/// `t`, if it is one spelled out: `a + b`, `a * b`, `a.max(b)`, `a.min(b)`
/// (operands in either order), and on integers `if a > b { a } else { b }`
/// with any comparison and branch order (on floats it differs from `max`
/// where a NaN is compared).
fn builtin_of(c: &Closure2, t: ScalarType) -> Option<BuiltinOp> {
    let var = |e: &Expr| match &value_of(e).kind {
        ExprKind::Var(v) if *v == c.lhs => Some(0),
        ExprKind::Var(v) if *v == c.rhs => Some(1),
        _ => None,
    };
    // The operands are `a` and `b`, one each.
    let both = |x: &Expr, y: &Expr| matches!((var(x), var(y)), (Some(p), Some(q)) if p != q);
    match &value_of(&c.body).kind {
        ExprKind::Binary(BinOp::Add, x, y, _) if both(x, y) => Some(BuiltinOp::Add),
        ExprKind::Binary(BinOp::Mul, x, y, _) if both(x, y) => Some(BuiltinOp::Mul),
        ExprKind::MethodCall(r, m, args, _) if args.len() == 1 && both(r, &args[0]) => match m {
            Method::Max => Some(BuiltinOp::Max),
            Method::Min => Some(BuiltinOp::Min),
            _ => None,
        },
        ExprKind::If(cond, then, Some(els)) if t.is_int() => {
            let ExprKind::Binary(cmp, x, y, _) = &value_of(cond).kind else {
                return None;
            };
            let then: &Expr = match (then.stmts.is_empty(), then.tail.as_deref()) {
                (true, Some(v)) => v,
                _ => return None,
            };
            if !(both(x, y) && both(then, els) && var(then)? != var(els)?) {
                return None;
            }
            // `x > y` (or `>=`) choosing `x` is max; choosing `y`, min.
            let first = var(then) == var(x);
            match cmp {
                BinOp::Gt | BinOp::Ge => Some(if first {
                    BuiltinOp::Max
                } else {
                    BuiltinOp::Min
                }),
                BinOp::Lt | BinOp::Le => Some(if first {
                    BuiltinOp::Min
                } else {
                    BuiltinOp::Max
                }),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::fixtures::{compiled, matvec};
    use crate::spec::{BuiltinOp, DimKind, ReduceOp};

    #[test]
    fn matvec_facts() {
        let k = matvec();
        let a = k.analysis();
        assert_eq!(a.kinds, [DimKind::Cc, DimKind::Pw]);
        assert_eq!(
            (a.kept.as_slice(), a.reduced.as_slice()),
            (&[0][..], &[1][..])
        );
        assert_eq!(a.inputs[0].uses, [0, 1]);
        assert_eq!(a.inputs[1].uses, [1]);
        // M[i, k]: k's stride is 1, i's is the run-time row length.
        assert_eq!(a.inputs[0].static_coefs, [None, Some(1)]);
        assert_eq!(a.outputs[0].uses, [0]);
        assert!(matches!(
            k.op(0),
            Some(ReduceOp::Builtin(BuiltinOp::Add, _))
        ));
        assert!(k.has_identity(0));
    }

    #[test]
    fn operators_per_output_and_identity() {
        // Two outputs with their own operators; a user-defined one has no identity.
        let k = compiled(
            "kernel two { inp(x: f32[N]), out(s: f32[], m: f32[]), \
             out_view(s: |n| (), m: |n| ()), \
             md_hom[N](|a| (a, a), (PW(+, |p, q| if p > q { p } else { q }))), \
             inp_view(x: |n| (n)) }",
        );
        assert!(matches!(
            k.op(0),
            Some(ReduceOp::Builtin(BuiltinOp::Add, _))
        ));
        assert!(matches!(k.op(1), Some(ReduceOp::Closure(_))));
        assert!(k.has_identity(0));
        assert!(!k.has_identity(1));
        // Only CC dimensions: no operator, nothing to be neutral for.
        let map = compiled(
            "kernel map { inp(x: f32[N]), out(y: f32[N]), out_view(y: |n| (n)), \
             md_hom[N](|a| a, (CC)), inp_view(x: |n| (n)) }",
        );
        assert!(map.op(0).is_none() && map.has_identity(0));
        assert!(map.analysis().reduced.is_empty());
    }

    /// The operator a closure runs as on the CPU, for `kernel k`'s single
    /// output of type `t`.
    fn cpu_op(t: &str, closure: &str) -> Option<BuiltinOp> {
        let k = compiled(&format!(
            "kernel k {{ inp(x: {t}[N]), out(m: {t}[]), out_view(m: |n| ()), \
             md_hom[N](|a| a, (PW({closure}))), inp_view(x: |n| (n)) }}"
        ));
        assert!(
            !k.has_identity(0),
            "the kernel's semantics stay the closure's"
        );
        match k.cpu_op(0) {
            Some(ReduceOp::Builtin(b, _)) => Some(*b),
            _ => None,
        }
    }

    #[test]
    fn closures_that_compute_a_builtin_run_as_it() {
        use BuiltinOp::{Add, Max, Min, Mul};
        for (t, closure, want) in [
            ("i64", "|a, b| if a > b { a } else { b }", Some(Max)),
            ("i64", "|a, b| if a >= b { a } else { b }", Some(Max)),
            ("i32", "|p, q| if q < p { p } else { q }", Some(Max)),
            ("u8", "|a, b| if a < b { a } else { b }", Some(Min)),
            ("i32", "|a, b| if b > a { a } else { b }", Some(Min)),
            ("i32", "|a, b| { if a <= b { b } else { a } }", Some(Max)),
            ("f32", "|a, b| b + a", Some(Add)),
            ("i32", "|a, b| a * b", Some(Mul)),
            ("f64", "|a, b| a.max(b)", Some(Max)),
            ("f32", "|a, b| b.min(a)", Some(Min)),
            // Not a built-in: NaN order on floats, other values, one operand twice.
            ("f32", "|a, b| if a > b { a } else { b }", None),
            ("i32", "|a, b| if a > b { a } else { b + 1 }", None),
            ("i32", "|a, b| if a > b { a } else { a }", None),
            ("i32", "|a, b| if a == b { a } else { b }", None),
            ("i32", "|a, b| a + a", None),
            ("i32", "|a, b| a - b", None),
        ] {
            assert_eq!(cpu_op(t, closure), want, "{t}: {closure}");
        }
    }
}
