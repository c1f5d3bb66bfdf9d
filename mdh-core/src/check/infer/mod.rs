//! Type inference of the scalar function and of user-defined operators.

use super::messages::{combine_name, input_access_info, output_access_info, quoted_list};
use super::views::ViewsOk;
use crate::check::infer::unify::{class_text, Class, Vars};
use crate::diagnostics::Diagnostics;
use crate::spec::parsed::{CombineOp, Expr, ExprKind, Kernel, ReduceOp};
use crate::spec::{BinOp, Lit, ScalarType, SpanRange, Type, UnOp};

mod exprs;
mod unify;

/// An inferred type.
#[derive(Clone, Debug)]
enum ITy {
    S(usize),
    Unit,
    Never,
    Tuple(Vec<usize>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BKind {
    SizeParam,
    Param,
    IndexName,
    ClosureParam,
    OpParam,
    Let { mutable: bool },
    LoopVar,
}

struct Binding {
    name: String,
    var: usize,
    kind: BKind,
    /// A `let` without a value that has not been assigned yet.
    unassigned: bool,
}

type Deferred = (usize, SpanRange, Box<dyn Fn(ScalarType) -> Option<String>>);

struct Infer<'k> {
    k: &'k Kernel,
    vars: Vars,
    scope: Vec<Binding>,
    /// Per expression node, in pre-order.
    slots: Vec<Slot>,
    /// Per `let`, in order: the binding's variable.
    lets: Vec<(usize, SpanRange)>,
    /// Set by a node's typing rule, last: the variable of the scalar type
    /// its operation computes in (see `ExprKind`); `expr` takes it.
    op: Option<usize>,
    loop_depth: usize,
    checks: Vec<Deferred>,
    errs: Diagnostics,
    /// Set by `block` just before checking a statement `x = e;` that
    /// initializes a `let x;` of the same block (deferred initialization).
    init_assign: bool,
}

/// What inference records of an expression node.
struct Slot {
    ty: ITy,
    op: Option<usize>,
    range: SpanRange,
}

/// Per tree, what inference records, in pre-order.
type Slots = (Vec<Slot>, Vec<(usize, SpanRange)>);

/// The resolved types of one tree, in the order of [`Infer::expr`]: per
/// node its type and its operation's scalar type, per `let` its binding's.
pub(super) struct TreeTypes {
    pub(super) nodes: Vec<(Type, Option<ScalarType>)>,
    pub(super) lets: Vec<ScalarType>,
}

/// The types of the scalar function and of the user-defined operators.
pub(super) struct NodeTypes {
    pub(super) scalar_fn: TreeTypes,
    /// Per (combine op, reduce op) index: the closure's types.
    pub(super) closures: Vec<((usize, usize), TreeTypes)>,
}

fn describe_ity(vars: &mut Vars, t: &ITy) -> String {
    match t {
        ITy::S(v) => class_text(vars.class(*v)),
        ITy::Unit => "`()`".to_string(),
        ITy::Never => "`!`".to_string(),
        ITy::Tuple(vs) => {
            let v: Vec<String> = vs
                .iter()
                .map(|&v| match vars.class(v) {
                    Class::Known(t) => t.to_string(),
                    Class::IntLit => "{integer}".to_string(),
                    Class::FloatLit => "{float}".to_string(),
                    Class::Any => "_".to_string(),
                })
                .collect();
            format!("a tuple `({})`", v.join(", "))
        }
    }
}

impl<'k> Infer<'k> {
    fn new(k: &'k Kernel) -> Self {
        let mut s = Infer {
            k,
            vars: Vars::default(),
            scope: Vec::new(),
            slots: Vec::new(),
            lets: Vec::new(),
            op: None,
            loop_depth: 0,
            checks: Vec::new(),
            errs: Diagnostics::default(),
            init_assign: false,
        };
        for sp in &k.size_params {
            let v = s.vars.fresh(Class::Known(ScalarType::Usize));
            s.bind(sp.to_string(), v, BKind::SizeParam);
        }
        for p in &k.params {
            let v = s.vars.fresh(Class::Known(p.ty));
            s.bind(p.name.to_string(), v, BKind::Param);
        }
        s
    }

    fn bind(&mut self, name: String, var: usize, kind: BKind) {
        self.scope.push(Binding {
            name,
            var,
            kind,
            unassigned: false,
        });
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scope.iter().rev().find(|b| b.name == name)
    }

    fn lookup_index(&self, name: &str) -> Option<usize> {
        self.scope.iter().rposition(|b| b.name == name)
    }

    fn known(&mut self, t: ScalarType) -> usize {
        self.vars.fresh(Class::Known(t))
    }

    fn defer(
        &mut self,
        v: usize,
        span: SpanRange,
        f: impl Fn(ScalarType) -> Option<String> + 'static,
    ) {
        self.checks.push((v, span, Box::new(f)));
    }

    /// Integer `/` or `%` by a literal zero panics at run time.
    fn defer_zero_divisor(&mut self, v: usize, span: SpanRange, op: BinOp) {
        let what = if op == BinOp::Div {
            "division"
        } else {
            "remainder"
        };
        let sym = op.symbol();
        self.defer(v, span, move |t| {
            t.is_int().then(|| {
                format!("integer {what} by zero: the right operand of this `{sym}` is the literal `0`, so the kernel would panic at run time; use a non-zero divisor")
            })
        });
    }

    /// The scalar variable of a value; errors on `()` and tuples.
    fn scalar(&mut self, t: ITy, span: SpanRange, what: &str) -> usize {
        match t {
            ITy::S(v) => v,
            ITy::Never => {
                self.errs.error(
                    span,
                    format!("{what} needs a value, but this expression leaves the loop (`break`) before it gives one; make the `break` a statement of its own, e.g. `if c {{ break; }}`"),
                );
                self.vars.fresh(Class::Any)
            }
            other => {
                let d = describe_ity(&mut self.vars, &other);
                self.errs.error(
                    span,
                    format!("{what} needs a single value, but this expression is {d}"),
                );
                self.vars.fresh(Class::Any)
            }
        }
    }

    fn unify_or(
        &mut self,
        a: usize,
        b: usize,
        span: SpanRange,
        msg: impl FnOnce(String, String) -> String,
    ) -> bool {
        match self.vars.unify(a, b) {
            Ok(()) => true,
            Err((ca, cb)) => {
                self.errs.error(span, msg(class_text(ca), class_text(cb)));
                false
            }
        }
    }

    /// Unifies two types (branches of an `if`); `Never` gives way to the other.
    fn unify_ity(&mut self, a: &ITy, b: &ITy) -> Result<ITy, ()> {
        match (a, b) {
            (ITy::Never, x) | (x, ITy::Never) => Ok(x.clone()),
            (ITy::Unit, ITy::Unit) => Ok(ITy::Unit),
            (ITy::S(x), ITy::S(y)) => self.vars.unify(*x, *y).map(|_| a.clone()).map_err(|_| ()),
            (ITy::Tuple(xs), ITy::Tuple(ys)) if xs.len() == ys.len() => {
                for (x, y) in xs.iter().zip(ys) {
                    self.vars.unify(*x, *y).map_err(|_| ())?;
                }
                Ok(a.clone())
            }
            _ => Err(()),
        }
    }

    fn take_slots(&mut self) -> Slots {
        (
            std::mem::take(&mut self.slots),
            std::mem::take(&mut self.lets),
        )
    }
}

/// Whether `e` is a literal, possibly negated (`1.5`, `-2`).
fn is_literal(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(_, _) => true,
        ExprKind::Unary(UnOp::Neg, x, _) => is_literal(x),
        _ => false,
    }
}

/// Whether `e` is the integer literal `0` (any suffix, possibly negated).
fn is_zero_int_literal(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(Lit::Int(0, _), _) => true,
        ExprKind::Unary(UnOp::Neg, x, _) => is_zero_int_literal(x),
        _ => false,
    }
}

/// The expressions that give the value of `e` (through block tails and
/// `if` / `else` branches).
fn result_exprs<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match &e.kind {
        ExprKind::Block(b) => match &b.tail {
            Some(t) => result_exprs(t, out),
            None => out.push(e),
        },
        ExprKind::If(_, then, Some(els)) => {
            if let Some(t) = &then.tail {
                result_exprs(t, out);
            }
            result_exprs(els, out);
        }
        _ => out.push(e),
    }
}

pub(super) fn infer_types(k: &Kernel, views: ViewsOk, errs: &mut Diagnostics) -> Option<NodeTypes> {
    let mut inf = Infer::new(k);
    let outs = output_access_info(k);

    // The scalar function.
    let f = &k.scalar_fn;
    let mark = inf.scope.len();
    for name in f.index_params.iter().flatten() {
        let v = inf.known(ScalarType::Usize);
        inf.bind(name.to_string(), v, BKind::IndexName);
    }
    let inputs = input_access_info(k);
    for (i, p) in f.params.iter().enumerate() {
        let v = match inputs.get(i) {
            Some((_, t)) => inf.known(*t),
            None => inf.vars.fresh(Class::Any),
        };
        inf.bind(p.to_string(), v, BKind::ClosureParam);
    }
    let body_t = inf.expr(&f.body, true);
    inf.scope.truncate(mark);
    // After an error in out_view the output accesses are unknown.
    if views.out {
        check_result(&mut inf, &f.body, &body_t, &outs);
    }
    let scalar_slots = inf.take_slots();

    // User-defined operators.
    let mut closure_slots = Vec::new();
    for (d, op) in k.ops.iter().enumerate() {
        let (CombineOp::Pw(ops, _) | CombineOp::Ps(ops, _)) = op else {
            continue;
        };
        for (j, r) in ops.iter().enumerate() {
            let ReduceOp::Closure(c) = r else { continue };
            // The outputs this operator combines.
            let applies: Vec<&(String, ScalarType)> = if ops.len() == 1 {
                outs.iter().collect()
            } else {
                outs.get(j).into_iter().collect()
            };
            let ty = match applies.first() {
                Some((_, t0)) => {
                    if let Some((n, t)) = applies.iter().find(|(_, t)| t != t0) {
                        let n0 = &applies[0].0;
                        inf.errs.error(
                            c.range,
                            format!(
                                "this operator combines outputs `{n0}` (`{t0}`) and `{n}` (`{t}`) of different types; give one operator per output access, e.g. `{}(op1, op2)`",
                                combine_name(op)
                            ),
                        );
                    }
                    Some(*t0)
                }
                None => None,
            };
            let mark = inf.scope.len();
            let var = match ty {
                Some(t) => inf.known(t),
                None => inf.vars.fresh(Class::Any),
            };
            inf.bind(c.lhs.to_string(), var, BKind::OpParam);
            inf.bind(c.rhs.to_string(), var, BKind::OpParam);
            let t = inf.expr(&c.body, false);
            inf.scope.truncate(mark);
            match t {
                ITy::S(v) => {
                    if let Some(ty) = ty {
                        let out_name = applies.first().map(|(n, _)| n.clone()).unwrap_or_default();
                        let want = inf.known(ty);
                        inf.unify_or(v, want, c.body.range, |x, _| {
                            format!("this operator returns {x}, but it combines values of output `{out_name}`, which is `{ty}`; make it return `{ty}` (e.g. with `as {ty}`)")
                        });
                    }
                }
                ITy::Never => {}
                other => {
                    let dsc = describe_ity(&mut inf.vars, &other);
                    inf.errs.error(
                        c.body.range,
                        format!("an operator must return one value, but this gives {dsc}"),
                    );
                }
            }
            closure_slots.push(((d, j), inf.take_slots()));
        }
    }

    if !inf.errs.is_empty() || !errs.is_empty() {
        errs.append(std::mem::take(&mut inf.errs));
        return None;
    }

    // Default literals, then run the deferred checks on the final types.
    let resolve_all = |inf: &mut Infer, (slots, lets): Slots, errs: &mut Diagnostics| {
        let mut res = |v: usize, span: SpanRange, errs: &mut Diagnostics| -> ScalarType {
            match inf.vars.resolve(v) {
                Some(t) => {
                    inf.vars.set(v, Class::Known(t));
                    t
                }
                None => {
                    errs.error(span, "cannot infer the type of this expression; add a type annotation or a cast with `as`");
                    inf.vars.set(v, Class::Known(ScalarType::I32));
                    ScalarType::I32
                }
            }
        };
        let mut nodes = Vec::with_capacity(slots.len());
        for Slot { ty, op, range } in slots {
            let ty = match ty {
                ITy::S(v) => Type::Scalar(res(v, range, errs)),
                ITy::Unit => Type::Unit,
                ITy::Never => Type::Never,
                ITy::Tuple(vs) => {
                    Type::Tuple(vs.into_iter().map(|v| res(v, range, errs)).collect())
                }
            };
            nodes.push((ty, op.map(|v| res(v, range, errs))));
        }
        let lets = lets.into_iter().map(|(v, r)| res(v, r, errs)).collect();
        TreeTypes { nodes, lets }
    };
    let scalar_fn = resolve_all(&mut inf, scalar_slots, errs);
    let closures: Vec<((usize, usize), TreeTypes)> = closure_slots
        .into_iter()
        .map(|(key, s)| (key, resolve_all(&mut inf, s, errs)))
        .collect();
    let checks = std::mem::take(&mut inf.checks);
    for (v, span, f) in checks {
        if let Some(t) = inf.vars.resolve(v) {
            if let Some(msg) = f(t) {
                errs.error(span, msg);
            }
        }
    }
    if !errs.is_empty() {
        return None;
    }
    Some(NodeTypes {
        scalar_fn,
        closures,
    })
}

/// Checks the scalar function's result against the output accesses: arity,
/// then element types (unifying, so that literals take the output types).
fn check_result(inf: &mut Infer, body: &Expr, t: &ITy, outs: &[(String, ScalarType)]) {
    let n = outs.len();
    if n == 0 {
        return;
    }
    let mut rs = Vec::new();
    result_exprs(body, &mut rs);
    let span = match rs.as_slice() {
        [one] => one.range,
        _ => body.range,
    };
    let names = quoted_list(outs.iter().map(|(n, _)| n.clone()));
    let mismatch = |inf: &mut Infer, v: usize, k: usize, span: SpanRange| {
        let Some((name, ty)) = outs.get(k) else {
            return;
        };
        let want = inf.known(*ty);
        let (name, ty) = (name.clone(), *ty);
        inf.unify_or(v, want, span, |x, _| {
            format!("the scalar function returns {x} for output `{name}`, which is `{ty}`; add `as {ty}` or change the buffer type")
        });
    };
    match t {
        ITy::Never => {}
        ITy::Unit => inf.errs.error(
            span,
            format!("the scalar function returns no value, but it must return {} ({names}); end the body with the result expression (without `;`)",
                if n == 1 { "one value".to_string() } else { format!("a tuple of {n} values") }),
        ),
        ITy::S(v) => {
            if n == 1 {
                mismatch(inf, *v, 0, span);
            } else {
                inf.errs.error(
                    span,
                    format!("the scalar function returns a single value but there are {n} output accesses ({names}); return a tuple with one value per output access, in out_view order"),
                );
            }
        }
        ITy::Tuple(vs) => {
            if n == 1 {
                inf.errs.error(
                    span,
                    format!("the scalar function returns a tuple of {} values but there is one output access ({names}); return a single value", vs.len()),
                );
            } else if vs.len() != n {
                inf.errs.error(
                    span,
                    format!("the scalar function returns {} values but there are {n} output accesses ({names}); return one value per output access, in out_view order", vs.len()),
                );
            } else {
                for (k, v) in vs.iter().enumerate() {
                    let el_span = match rs.as_slice() {
                        [Expr { kind: ExprKind::Tuple(es), .. }] => es.get(k).map(|e| e.range).unwrap_or(span),
                        _ => span,
                    };
                    mismatch(inf, *v, k, el_span);
                }
            }
        }
    }
}
