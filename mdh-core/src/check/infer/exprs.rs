//! The typing rules of expressions and blocks.

use super::unify::{class_text, Class};
use super::{describe_ity, is_literal, is_zero_int_literal, BKind, ITy, Infer, Slot};
use crate::check::messages::plural;
use crate::spec::parsed::{Block, Expr, ExprKind, Stmt};
use crate::spec::{BinOp, Lit, Method, ScalarType, SpanRange, UnOp};
use mdh_rt::value::{bf16, f16};
use syn::Ident;

impl Infer<'_> {
    pub(super) fn expr(&mut self, e: &Expr, result_pos: bool) -> ITy {
        let slot = self.slots.len();
        self.slots.push(Slot {
            ty: ITy::Unit,
            op: None,
            range: e.range,
        });
        let t = self.expr_kind(e, result_pos);
        let op = self.op.take();
        if let Some(s) = self.slots.get_mut(slot) {
            s.ty = t.clone();
            s.op = op;
        }
        t
    }

    fn expr_kind(&mut self, e: &Expr, result_pos: bool) -> ITy {
        let span = e.range;
        match &e.kind {
            ExprKind::Lit(Lit::Int(value, suffix), _) => self.int_lit(*value, *suffix, span),
            ExprKind::Lit(Lit::Float(value, suffix), _) => {
                let v = match suffix {
                    Some(t) => self.known(*t),
                    None => self.vars.fresh(Class::FloatLit),
                };
                let value = *value;
                self.defer(v, span, move |t| {
                    beyond_half(value, &format!("{value:?}"), t)
                });
                self.operation(v)
            }
            ExprKind::Lit(Lit::Bool(_), _) => {
                let v = self.known(ScalarType::Bool);
                self.operation(v)
            }
            ExprKind::Var(id) => self.var(id),
            ExprKind::Unary(op, a, _) => self.unary(op, a, span),
            ExprKind::Binary(op, a, b, _) => self.binary(op, a, b, span),
            ExprKind::Cast(a, target, _) => self.cast(a, target, span),
            ExprKind::MethodCall(recv, m, args, _) => self.method_call(recv, m, args, span),
            ExprKind::If(c, then, els) => self.if_else(c, then, els.as_deref(), result_pos),
            ExprKind::Block(b) => self.block(b, result_pos),
            ExprKind::Tuple(es) => self.tuple(es, result_pos, span),
            ExprKind::Assign(id, op, rhs, _) => self.assign(id, op.as_ref(), rhs, span),
            ExprKind::For(v, lo, hi, body, _) => self.for_loop(v.as_ref(), lo, hi, body),
            ExprKind::Break => {
                if self.loop_depth == 0 {
                    self.errs.error(
                        span,
                        "`break` outside of a `for` loop; `break` can only leave a loop, so remove it and choose the value with `if`/`else` instead (e.g. `if c { a } else { b }`)",
                    );
                }
                ITy::Never
            }
        }
    }

    /// An integer literal: its type, and later whether the value fits it.
    fn int_lit(&mut self, value: u128, suffix: Option<ScalarType>, span: SpanRange) -> ITy {
        let v = match suffix {
            Some(t) => self.known(t),
            None => self.vars.fresh(Class::IntLit),
        };
        self.defer(v, span, move |t| {
            let max: u128 = match t {
                ScalarType::I8 => 1 << 7,
                ScalarType::I16 => 1 << 15,
                ScalarType::I32 => 1 << 31,
                ScalarType::I64 => 1 << 63,
                ScalarType::U8 => u8::MAX as u128,
                ScalarType::U16 => u16::MAX as u128,
                ScalarType::U32 => u32::MAX as u128,
                ScalarType::U64 | ScalarType::Usize => u64::MAX as u128,
                ScalarType::Bool => {
                    return Some(
                        "an integer literal cannot be a `bool`; write `true` or `false`"
                            .to_string(),
                    )
                }
                ScalarType::F16 | ScalarType::Bf16 => {
                    return beyond_half(value as f64, &value.to_string(), t)
                }
                ScalarType::F32 | ScalarType::F64 => return None,
            };
            (value > max)
                .then(|| format!("the literal `{value}` does not fit in `{t}`; use a wider type"))
        });
        self.operation(v)
    }

    /// Records `v` as the scalar type of the current node's operation (its
    /// rule's last step) and gives the node that type.
    fn operation(&mut self, v: usize) -> ITy {
        self.op = Some(v);
        ITy::S(v)
    }

    fn var(&mut self, id: &Ident) -> ITy {
        let name = id.to_string();
        if let Some((var, unassigned)) = self.lookup(&name).map(|b| (b.var, b.unassigned)) {
            if unassigned {
                self.errs.error(
                    id.span(),
                    format!("`{name}` is used before it has a value; assign it first (`{name} = ...;` directly in the block of its `let`), or give it a value where it is declared: `let {name} = ...;`"),
                );
            }
            return ITy::S(var);
        }
        let msg = if self
            .k
            .inputs
            .iter()
            .chain(&self.k.outputs)
            .any(|b| b.name == name)
        {
            format!("unknown name `{name}`: buffers cannot be used directly; the scalar function receives input elements through its parameters (one per input access in inp_view) and returns output elements")
        } else {
            format!("unknown name `{name}`: it is not a closure parameter, a `let` binding, a param or a size parameter; declare it with `let`, or add `params({name}: TYPE)` to the kernel")
        };
        self.errs.error(id.span(), msg);
        ITy::S(self.vars.fresh(Class::Any))
    }

    fn unary(&mut self, op: &UnOp, a: &Expr, span: SpanRange) -> ITy {
        let ta = self.expr(a, false);
        let v = self.scalar(ta, a.range, "this operator");
        match op {
            UnOp::Not => {
                let b = self.known(ScalarType::Bool);
                self.unify_or(v, b, span, |x, _| {
                    format!("`!` needs a `bool`, but this is {x}; compare with `==` / `!=` to get a `bool`")
                });
                self.operation(v)
            }
            UnOp::Neg => {
                self.defer(v, span, |t| {
                    (!t.is_signed()).then(|| {
                        if t == ScalarType::Bool {
                            "cannot negate a `bool` with `-`; use `!` instead".to_string()
                        } else {
                            format!("cannot negate a value of unsigned type `{t}`; cast it to a signed type first, e.g. `-(x as i64)`")
                        }
                    })
                });
                self.operation(v)
            }
        }
    }

    /// Arithmetic, comparisons and `&&`/`||`.
    fn binary(&mut self, op: &BinOp, a: &Expr, b: &Expr, span: SpanRange) -> ITy {
        let ta = self.expr(a, false);
        let tb = self.expr(b, false);
        let sym = op.symbol();
        let va = self.scalar(ta, a.range, &format!("`{sym}`"));
        let vb = self.scalar(tb, b.range, &format!("`{sym}`"));
        self.op = Some(va);
        if op.is_logical() {
            for (v, s) in [(va, a.range), (vb, b.range)] {
                let t = self.known(ScalarType::Bool);
                self.unify_or(v, t, s, |x, _| {
                    format!("`{sym}` needs `bool` operands, but this is {x}; compare with `==` / `!=` to get a `bool`")
                });
            }
            return ITy::S(self.known(ScalarType::Bool));
        }
        // A literal that does not fit the other side is the culprit.
        let at = match (is_literal(a), is_literal(b)) {
            (false, true) => b.range,
            (true, false) => a.range,
            _ => span,
        };
        let ok = self.unify_or(va, vb, at, |x, y| {
            format!("`{sym}` needs both operands of the same type, but the left is {x} and the right is {y}; convert one side with `as`")
        });
        if ok && matches!(op, BinOp::Div | BinOp::Rem) && is_zero_int_literal(b) {
            self.defer_zero_divisor(va, span, *op);
        }
        if op.is_comparison() {
            return ITy::S(self.known(ScalarType::Bool));
        }
        if ok {
            self.defer(va, span, move |t| {
                (t == ScalarType::Bool).then(|| {
                    format!("`{sym}` needs numbers, but both operands are `bool`; use `&&`, `||` or `!=` for booleans")
                })
            });
        }
        ITy::S(va)
    }

    fn cast(&mut self, a: &Expr, target: &ScalarType, span: SpanRange) -> ITy {
        let ta = self.expr(a, false);
        let v = self.scalar(ta, a.range, "`as`");
        let target = *target;
        if target == ScalarType::Bool {
            self.errs.error(
                span,
                "cannot cast to `bool` with `as`; compare instead, e.g. `x != 0`",
            );
        } else if target.is_float() {
            self.defer(v, span, move |t| {
                (t == ScalarType::Bool).then(|| {
                    format!("cannot cast a `bool` to `{target}`; cast it to an integer first or use `if b {{ 1.0 }} else {{ 0.0 }}`")
                })
            });
        }
        self.op = Some(v);
        ITy::S(self.known(target))
    }

    fn method_call(&mut self, recv: &Expr, m: &Method, args: &[Expr], span: SpanRange) -> ITy {
        let tr = self.expr(recv, false);
        let arg_tys: Vec<(ITy, SpanRange)> = args
            .iter()
            .map(|a| (self.expr(a, false), a.range))
            .collect();
        let name = m.name();
        let v = self.scalar(tr, recv.range, &format!("`.{name}()`"));
        if args.len() != m.arity() {
            self.errs.error(
                span,
                format!(
                    "`.{name}()` takes {} but {} given",
                    plural(m.arity(), "argument", "arguments"),
                    if args.len() == 1 {
                        "1 was".to_string()
                    } else {
                        format!("{} were", args.len())
                    }
                ),
            );
        }
        if m.float_only() {
            if self.vars.constrain(v, Class::FloatLit).is_err() {
                let c = class_text(self.vars.class(v));
                self.errs.error(
                    recv.range,
                    format!("`.{name}()` is only defined on `f32` and `f64`, but this is {c}; convert it with `as f32` or `as f64`"),
                );
            }
        } else {
            let is_abs = *m == Method::Abs;
            self.defer(v, span, move |t| {
                if t == ScalarType::Bool {
                    Some(format!("`.{name}()` needs a number, but this is a `bool`"))
                } else if is_abs && !t.is_signed() {
                    Some(format!("`.abs()` on unsigned type `{t}` is meaningless; remove it or cast to a signed type first"))
                } else {
                    None
                }
            });
        }
        for (ta, s) in arg_tys {
            let va = self.scalar(ta, s, &format!("an argument of `.{name}()`"));
            let want = if *m == Method::Powi {
                self.known(ScalarType::I32)
            } else {
                v
            };
            self.unify_or(va, want, s, |x, y| {
                format!(
                    "this argument of `.{name}()` is {x}, but it must be {y}; convert it with `as`"
                )
            });
        }
        self.operation(v)
    }

    fn if_else(&mut self, c: &Expr, then: &Block, els: Option<&Expr>, result_pos: bool) -> ITy {
        let tc = self.expr(c, false);
        let vc = self.scalar(tc, c.range, "an `if` condition");
        let b = self.known(ScalarType::Bool);
        self.unify_or(vc, b, c.range, |x, _| {
            format!(
                "an `if` condition must be a `bool`, but this is {x}; compare it, e.g. `x != 0`"
            )
        });
        let tt = self.block(then, result_pos);
        match els {
            None => {
                if !matches!(tt, ITy::Unit | ITy::Never) {
                    let d = describe_ity(&mut self.vars, &tt);
                    self.errs.error(
                        then.span,
                        format!("an `if` without `else` cannot produce a value, but this block gives {d}; add an `else` branch or end the value with `;`"),
                    );
                }
                ITy::Unit
            }
            Some(els) => {
                let te = self.expr(els, result_pos);
                match self.unify_ity(&tt, &te) {
                    Ok(t) => t,
                    Err(()) => {
                        let (x, y) = (
                            describe_ity(&mut self.vars, &tt),
                            describe_ity(&mut self.vars, &te),
                        );
                        self.errs.error(
                            els.range,
                            format!("the branches of this `if` have different types ({x} and {y}); make both branches produce the same type"),
                        );
                        tt
                    }
                }
            }
        }
    }

    fn tuple(&mut self, es: &[Expr], result_pos: bool, span: SpanRange) -> ITy {
        if !result_pos {
            self.errs.error(
                span,
                "a tuple can only be the final value of the scalar function (one element per output access); compute the elements with `let` and return them together at the end",
            );
        }
        let mut vs = Vec::new();
        for el in es {
            let t = self.expr(el, false);
            vs.push(self.scalar(t, el.range, "a tuple element"));
        }
        ITy::Tuple(vs)
    }

    /// `x = e` and `x op= e`, including the deferred initialization of `let x;`.
    fn assign(&mut self, id: &Ident, op: Option<&BinOp>, rhs: &Expr, span: SpanRange) -> ITy {
        let init = std::mem::take(&mut self.init_assign) && op.is_none();
        let tr = self.expr(rhs, false);
        let vr = self.scalar(tr, rhs.range, "an assignment");
        let name = id.to_string();
        if let Some(i) = self.lookup_index(&name) {
            if let Some(b) = self.scope.get_mut(i) {
                if b.unassigned {
                    let var = b.var;
                    if init {
                        // Deferred initialization `let x; x = e;`.
                        b.unassigned = false;
                        let n2 = name.clone();
                        self.unify_or(vr, var, rhs.range, |x, y| {
                            format!("cannot assign {x} to `{n2}`, which is {y}; convert the value with `as`")
                        });
                    } else {
                        // Reported once; later uses are not errors.
                        b.unassigned = false;
                        b.kind = BKind::Let { mutable: true };
                        self.errs.error(
                            span,
                            format!("`{name}` is declared without a value, and such a binding can only be initialized by a plain assignment `{name} = ...;` directly in the block of its `let`, before any other use; give it a value where it is declared instead, e.g. `let mut {name} = ...;`"),
                        );
                    }
                    self.op = Some(var);
                    return ITy::Unit;
                }
            }
        }
        let Some(b) = self.lookup(&name) else {
            self.errs.error(
                id.span(),
                format!("unknown name `{name}`: declare it first with `let mut {name} = ...;`"),
            );
            return ITy::Unit;
        };
        let (var, kind) = (b.var, b.kind);
        let why = match kind {
            BKind::Let { mutable: true } => None,
            BKind::Let { mutable: false } => Some(format!("`{name}` is not mutable, so it can be assigned only once; declare it with `let mut {name}`")),
            BKind::ClosureParam | BKind::OpParam => Some(format!("cannot assign to `{name}`, a closure parameter; bind a copy with `let mut {name} = {name};` first")),
            BKind::LoopVar => Some(format!("cannot assign to the loop variable `{name}`; use a separate `let mut` binding")),
            BKind::IndexName => Some(format!("cannot assign to the index `{name}`; bind a copy with `let mut {name} = {name};` first")),
            BKind::Param | BKind::SizeParam => Some(format!("cannot assign to `{name}`, a kernel parameter; bind a copy with `let mut {name} = {name};` first")),
        };
        if let Some(why) = why {
            self.errs.error(id.span(), why);
        }
        if let Some(op) = op {
            if matches!(op, BinOp::Div | BinOp::Rem) && is_zero_int_literal(rhs) {
                self.defer_zero_divisor(var, span, *op);
            }
            if op.is_comparison() || op.is_logical() {
                self.errs.error(
                    span,
                    format!(
                        "`{}=` is not an assignment operator; write `{name} = {name} {} ...`",
                        op.symbol(),
                        op.symbol()
                    ),
                );
            } else {
                let sym = op.symbol();
                self.defer(var, span, move |t| {
                    (t == ScalarType::Bool)
                        .then(|| format!("`{sym}=` needs a number, but `{name}` is a `bool`"))
                });
            }
        }
        let n2 = id.to_string();
        self.unify_or(vr, var, rhs.range, |x, y| {
            format!("cannot assign {x} to `{n2}`, which is {y}; convert the value with `as`")
        });
        self.op = Some(var);
        ITy::Unit
    }

    fn for_loop(&mut self, v: Option<&Ident>, lo: &Expr, hi: &Expr, body: &Block) -> ITy {
        let tl = self.expr(lo, false);
        let th = self.expr(hi, false);
        let vl = self.scalar(tl, lo.range, "a loop bound");
        let vh = self.scalar(th, hi.range, "a loop bound");
        let bounds = lo.range.to(hi.range);
        self.unify_or(vl, vh, bounds, |x, y| {
            format!(
                "the bounds of this loop have different types ({x} and {y}); convert one with `as`"
            )
        });
        self.defer(vl, bounds, |t| {
            (!t.is_int()).then(|| {
                format!(
                    "loop bounds must be integers, but these are `{t}`; cast them with `as usize`"
                )
            })
        });
        let mark = self.scope.len();
        if let Some(v) = v {
            self.bind(v.to_string(), vl, BKind::LoopVar);
        }
        self.loop_depth += 1;
        let tb = self.block(body, false);
        self.loop_depth -= 1;
        self.scope.truncate(mark);
        if !matches!(tb, ITy::Unit | ITy::Never) {
            let d = describe_ity(&mut self.vars, &tb);
            self.errs.error(
                body.span,
                format!("the body of a `for` loop cannot produce a value, but it gives {d}; end its last expression with `;`"),
            );
        }
        self.op = Some(vl);
        ITy::Unit
    }

    pub(super) fn block(&mut self, b: &Block, result_pos: bool) -> ITy {
        let mark = self.scope.len();
        let mut diverges = false;
        for s in &b.stmts {
            match s {
                Stmt::Let {
                    name,
                    mutable,
                    ty,
                    init,
                    range,
                    ..
                } => {
                    let var = match init {
                        Some(init) => {
                            let t = self.expr(init, false);
                            let v = self.scalar(t, init.range, "a `let` binding");
                            if let Some(ann) = ty {
                                let a = self.known(*ann);
                                self.unify_or(v, a, init.range, |x, y| {
                                    format!("`{name}` is declared as {y} but initialized with {x}; convert the value with `as` or change the annotation")
                                });
                            }
                            v
                        }
                        // Deferred initialization: the type comes from the
                        // assignment if there is no annotation.
                        None => match ty {
                            Some(ann) => self.known(*ann),
                            None => self.vars.fresh(Class::Any),
                        },
                    };
                    self.lets.push((var, *range));
                    self.bind(name.to_string(), var, BKind::Let { mutable: *mutable });
                    if init.is_none() {
                        if let Some(b) = self.scope.last_mut() {
                            b.unassigned = true;
                        }
                    }
                }
                Stmt::Expr(e) => {
                    // `x = e;` directly in the block of `let x;` initializes it.
                    if let ExprKind::Assign(id, None, _, _) = &e.kind {
                        let name = id.to_string();
                        self.init_assign = self
                            .lookup_index(&name)
                            .is_some_and(|i| i >= mark && self.scope[i].unassigned);
                    }
                    let t = self.expr(e, false);
                    self.init_assign = false;
                    if matches!(t, ITy::Never) {
                        diverges = true;
                    }
                }
            }
        }
        let t = match &b.tail {
            Some(tail) => self.expr(tail, result_pos),
            None if diverges => ITy::Never,
            None => ITy::Unit,
        };
        // A `let x;` without a type that is never assigned has no type.
        for s in &b.stmts {
            if let Stmt::Let {
                name,
                ty: None,
                init: None,
                range,
                ..
            } = s
            {
                let n = name.to_string();
                let never = self
                    .scope
                    .iter()
                    .skip(mark)
                    .any(|bd| bd.name == n && bd.unassigned);
                if never {
                    self.errs.error(
                        *range,
                        format!("`{n}` is declared without a value and never assigned; remove it, or give it a value: `let {n} = ...;`"),
                    );
                }
            }
        }
        self.scope.truncate(mark);
        t
    }
}

/// Why a literal `value` (written `shown`) does not fit the 16-bit float
/// type `t` (it rounds to infinity), if it does not.
fn beyond_half(value: f64, shown: &str, t: ScalarType) -> Option<String> {
    let (inf, max) = match t {
        ScalarType::F16 => (f16::from_f32(value as f32).is_infinite(), f16::MAX.to_f64()),
        ScalarType::Bf16 => (
            bf16::from_f32(value as f32).is_infinite(),
            bf16::MAX.to_f64(),
        ),
        _ => return None,
    };
    inf.then(|| {
        format!("the literal `{shown}` does not fit in `{t}` (its largest finite value is {max:e}); use a smaller constant, or compute in `f32` and cast the result with `as {t}`")
    })
}
