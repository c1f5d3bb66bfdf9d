//! The high-level representation of a kernel: the paper's
//! `out_view ∘ md_hom(f, (⊗1, …, ⊗D)) ∘ inp_view` (its Fig. 6), as parsed from
//! the `mdh!` tokens. Spans are kept so that every later check can point at the
//! offending tokens.

use proc_macro2::{Punct, Spacing, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::Ident;

pub use mdh_rt::types::{DimKind, ScalarType};

/// The first and the last token of a piece of syntax, for errors that cover
/// all of it.
///
/// On stable Rust a proc macro cannot join two spans (`Span::join` is
/// nightly-only), so a single [`Span`] of an expression covers only its first
/// token. An error built with `syn::Error::new_spanned` on two tokens carrying
/// `start` and `end` is rendered by rustc from `start` to `end`: that is what
/// [`SpanRange::error`] does.
#[derive(Clone, Copy)]
pub struct SpanRange {
    pub start: Span,
    pub end: Span,
}

impl SpanRange {
    pub fn new(start: Span, end: Span) -> SpanRange {
        SpanRange { start, end }
    }

    /// The range of all tokens of `t` (`Span::call_site()` if it has none).
    pub fn of<T: ToTokens + ?Sized>(t: &T) -> SpanRange {
        let mut it = t.to_token_stream().into_iter();
        let start = it.next().map_or_else(Span::call_site, |t| t.span());
        let end = it.last().map_or(start, |t| t.span());
        SpanRange { start, end }
    }

    /// From the start of `self` to the end of `other`.
    pub fn to(self, other: SpanRange) -> SpanRange {
        SpanRange {
            start: self.start,
            end: other.end,
        }
    }

    /// An error covering the whole range.
    pub fn error(&self, msg: impl std::fmt::Display) -> syn::Error {
        let mut a = Punct::new('#', Spacing::Alone);
        a.set_span(self.start);
        let mut b = Punct::new('#', Spacing::Alone);
        b.set_span(self.end);
        let ts: TokenStream = [TokenTree::Punct(a), TokenTree::Punct(b)]
            .into_iter()
            .collect();
        syn::Error::new_spanned(ts, msg)
    }
}

impl From<Span> for SpanRange {
    fn from(s: Span) -> SpanRange {
        SpanRange { start: s, end: s }
    }
}

/// Spans differ between two parses of the same text, so they are left out
/// (as the parser's tests compare `Debug` output).
impl std::fmt::Debug for SpanRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpanRange")
    }
}

/// A size expression in a shape or in `md_hom[...]`: integer arithmetic over
/// size parameters (`I`, `P + R - 1`, `2 * P + R - 1`, `64`).
#[derive(Clone, Debug)]
pub enum SizeExpr {
    Const(u64, Span),
    Param(Ident),
    Add(Box<SizeExpr>, Box<SizeExpr>),
    Sub(Box<SizeExpr>, Box<SizeExpr>),
    Mul(Box<SizeExpr>, Box<SizeExpr>),
}

impl SizeExpr {
    /// Whether two size expressions are the same expression (spans aside).
    pub fn same_as(a: &SizeExpr, b: &SizeExpr) -> bool {
        match (a, b) {
            (SizeExpr::Const(x, _), SizeExpr::Const(y, _)) => x == y,
            (SizeExpr::Param(x), SizeExpr::Param(y)) => x == y,
            (SizeExpr::Add(a1, a2), SizeExpr::Add(b1, b2))
            | (SizeExpr::Sub(a1, a2), SizeExpr::Sub(b1, b2))
            | (SizeExpr::Mul(a1, a2), SizeExpr::Mul(b1, b2)) => {
                SizeExpr::same_as(a1, b1) && SizeExpr::same_as(a2, b2)
            }
            _ => false,
        }
    }
}

/// An affine expression `Σ c_d · dim_d + Σ c_s · size_s + c` with integer
/// coefficients: one component of an index function.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Affine {
    /// One coefficient per md_hom dimension.
    pub dims: Vec<i64>,
    /// One coefficient per size parameter (in `Kernel::size_params` order).
    pub sizes: Vec<i64>,
    pub constant: i64,
}

/// An index function `|d1, …, dD| (e1, …, eR)`.
#[derive(Clone, Debug)]
pub struct IndexFn {
    /// The closure's parameter names, one per md_hom dimension.
    pub params: Vec<Ident>,
    /// One affine expression per buffer dimension.
    pub components: Vec<Affine>,
    /// Spans of the component expressions (for errors).
    pub component_spans: Vec<Span>,
    /// Span of the closure's first token `|`.
    pub span: Span,
    /// The whole closure.
    pub range: SpanRange,
    /// The parameter list `|i, k|`.
    pub params_range: SpanRange,
    /// The body, e.g. the tuple `(i, k)`.
    pub body_range: SpanRange,
    /// The component expressions (one per component).
    pub component_ranges: Vec<SpanRange>,
}

/// `BUF: TYPE[SHAPE]`
#[derive(Clone, Debug)]
pub struct BufferDecl {
    pub name: Ident,
    pub ty: ScalarType,
    pub ty_span: Span,
    pub shape: Vec<SizeExpr>,
    pub span: Span,
}

/// `NAME: TYPE` in `params(...)`.
#[derive(Clone, Debug)]
pub struct ParamDecl {
    pub name: Ident,
    pub ty: ScalarType,
    pub ty_span: Span,
}

/// The index functions of one buffer in `inp_view` or `out_view`.
#[derive(Clone, Debug)]
pub struct View {
    pub buffer: Ident,
    pub accesses: Vec<IndexFn>,
}

/// A binary operator usable as a combine operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuiltinOp {
    Add,
    Mul,
    Max,
    Min,
}

impl BuiltinOp {
    pub fn name(self) -> &'static str {
        match self {
            BuiltinOp::Add => "+",
            BuiltinOp::Mul => "*",
            BuiltinOp::Max => "max",
            BuiltinOp::Min => "min",
        }
    }

    /// What it computes, in the words of the kernel language: the one
    /// table by which the interpreter and the scalar generators (Rust, C)
    /// combine.
    pub fn combination(self) -> Combination {
        match self {
            BuiltinOp::Add => Combination::Binary(BinOp::Add),
            BuiltinOp::Mul => Combination::Binary(BinOp::Mul),
            BuiltinOp::Max => Combination::Method(Method::Max),
            BuiltinOp::Min => Combination::Method(Method::Min),
        }
    }

    /// Its neutral element: the one table that the interpreter and the
    /// generators (Rust, C) write their values from.
    pub fn identity(self) -> Identity {
        match self {
            BuiltinOp::Add => Identity::Zero,
            BuiltinOp::Mul => Identity::One,
            BuiltinOp::Max => Identity::Lowest,
            BuiltinOp::Min => Identity::Highest,
        }
    }
}

/// What a built-in operator computes: `a op b`, or `a.method(b)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combination {
    Binary(BinOp),
    Method(Method),
}

/// The neutral element of a built-in operator, as a value every numeric
/// type has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
    Zero,
    One,
    /// The type's least value (-∞ for floats).
    Lowest,
    /// The type's greatest value (+∞ for floats).
    Highest,
}

/// The operator ⊕ of a PW or PS combine operator.
// Few and small in number; boxing the closure would change the type that the
// back ends match on.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum ReduceOp<P: Phase = Typed> {
    Builtin(BuiltinOp, Span),
    /// `|a, b| expr`: user-defined, associative (and commutative for PW).
    Closure(Closure2<P>),
}

impl<P: Phase> ReduceOp<P> {
    pub fn span(&self) -> Span {
        match self {
            ReduceOp::Builtin(_, s) => *s,
            ReduceOp::Closure(c) => c.span,
        }
    }

    /// The operator's tokens: the built-in's token or the whole closure.
    pub fn range(&self) -> SpanRange {
        match self {
            ReduceOp::Builtin(_, s) => SpanRange::from(*s),
            ReduceOp::Closure(c) => c.range,
        }
    }

    /// Two operators are the same if they are the same built-in or textually
    /// equal closures (used for the paper's Lemma 1).
    pub fn same_as(&self, other: &ReduceOp<P>) -> bool {
        match (self, other) {
            (ReduceOp::Builtin(a, _), ReduceOp::Builtin(b, _)) => a == b,
            (ReduceOp::Closure(a), ReduceOp::Closure(b)) => a.text == b.text,
            _ => false,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            ReduceOp::Builtin(op, _) => op.name().to_string(),
            ReduceOp::Closure(c) => c.text.clone(),
        }
    }
}

/// A user-defined binary operator `|a, b| expr`.
#[derive(Clone, Debug)]
pub struct Closure2<P: Phase = Typed> {
    pub lhs: Ident,
    pub rhs: Ident,
    pub body: Expr<P>,
    /// Normalized token text, for comparing operators.
    pub text: String,
    /// Span of the closure's first token `|`.
    pub span: Span,
    /// The whole closure.
    pub range: SpanRange,
    /// The parameter list `|a, b|`.
    pub params_range: SpanRange,
}

/// The combine operator of one dimension.
#[derive(Clone, Debug)]
pub enum CombineOp<P: Phase = Typed> {
    /// Concatenation `++`: the dimension is kept in the output.
    Cc(Span),
    /// Point-wise combination: the dimension is reduced, one operator per
    /// output access (a single operator applies to all).
    Pw(Vec<ReduceOp<P>>, Span),
    /// Prefix-sum: the dimension is kept and scanned.
    Ps(Vec<ReduceOp<P>>, Span),
}

impl<P: Phase> CombineOp<P> {
    pub fn span(&self) -> Span {
        match self {
            CombineOp::Cc(s) | CombineOp::Pw(_, s) | CombineOp::Ps(_, s) => *s,
        }
    }

    pub fn kind(&self) -> DimKind {
        match self {
            CombineOp::Cc(_) => DimKind::Cc,
            CombineOp::Pw(..) => DimKind::Pw,
            CombineOp::Ps(..) => DimKind::Ps,
        }
    }

    /// The operator applied to output access `k` (None for CC).
    pub fn op_for(&self, k: usize) -> Option<&ReduceOp<P>> {
        match self {
            CombineOp::Cc(_) => None,
            CombineOp::Pw(ops, _) | CombineOp::Ps(ops, _) => {
                Some(if ops.len() == 1 { &ops[0] } else { &ops[k] })
            }
        }
    }
}

/// One dimension of the md_hom.
#[derive(Clone, Debug)]
pub struct Dim {
    pub size: SizeExpr,
    pub span: Span,
}

/// The scalar function `|a, b, …| body` or `|[y, x], a, …| body`.
#[derive(Clone, Debug)]
pub struct ScalarFn<P: Phase = Typed> {
    /// Names bound to the MDA indices by a leading slice pattern, if any.
    pub index_params: Option<Vec<Ident>>,
    /// One parameter per input access, in `inp_view` order.
    pub params: Vec<Ident>,
    pub body: Expr<P>,
    /// Span of the closure's first token `|`.
    pub span: Span,
    /// The parameter list `|[y, x], a, b|`.
    pub params_range: SpanRange,
    /// The index pattern `[y, x]`, if any.
    pub index_pattern_range: Option<SpanRange>,
}

/// A whole `mdh!` kernel: as parsed (`Kernel<Parsed>`), or as checked
/// (`Kernel`, every expression typed; held by a [`Checked`](crate::Checked)).
#[derive(Clone, Debug)]
pub struct Kernel<P: Phase = Typed> {
    /// `///` doc comments (the attribute tokens, re-emitted on the module).
    pub attrs: Vec<TokenStream>,
    /// The visibility tokens (`pub`, `pub(crate)`, or empty).
    pub vis: TokenStream,
    pub name: Ident,
    pub inputs: Vec<BufferDecl>,
    pub outputs: Vec<BufferDecl>,
    pub params: Vec<ParamDecl>,
    /// Size parameters in order of first appearance (shapes, then md_hom).
    pub size_params: Vec<Ident>,
    pub dims: Vec<Dim>,
    pub scalar_fn: ScalarFn<P>,
    pub ops: Vec<CombineOp<P>>,
    /// Span of the operator tuple (for count mismatches).
    pub ops_span: Span,
    pub md_hom_span: Span,
    pub inp_view: Vec<View>,
    pub out_view: Vec<View>,
    /// The original tokens of the kernel, for `SPEC`.
    pub source: String,
}

impl<P: Phase> Kernel<P> {
    pub fn dim_kinds(&self) -> Vec<DimKind> {
        self.ops.iter().map(CombineOp::kind).collect()
    }

    /// Input accesses in scalar-function parameter order: (buffer index, index fn).
    pub fn input_accesses(&self) -> Vec<(usize, &IndexFn)> {
        self.accesses(&self.inp_view, &self.inputs)
    }

    /// Output accesses in scalar-function result order: (buffer index, index fn).
    pub fn output_accesses(&self) -> Vec<(usize, &IndexFn)> {
        self.accesses(&self.out_view, &self.outputs)
    }

    fn accesses<'a>(&'a self, views: &'a [View], bufs: &[BufferDecl]) -> Vec<(usize, &'a IndexFn)> {
        let mut out = Vec::new();
        for v in views {
            if let Some(b) = bufs.iter().position(|b| b.name == v.buffer) {
                for a in &v.accesses {
                    out.push((b, a));
                }
            }
        }
        out
    }

    pub fn size_index(&self, name: &str) -> Option<usize> {
        self.size_params.iter().position(|s| s == name)
    }

    /// The same kernel with each expression tree mapped by `f`: the scalar
    /// function's body (`None`), then each user-defined operator's
    /// (`Some((dimension, operator))`). How the checker types the trees.
    pub fn map_trees<Q: Phase, E>(
        self,
        mut f: impl FnMut(Option<(usize, usize)>, Expr<P>) -> Result<Expr<Q>, E>,
    ) -> Result<Kernel<Q>, E> {
        let ScalarFn {
            index_params,
            params,
            body,
            span,
            params_range,
            index_pattern_range,
        } = self.scalar_fn;
        let scalar_fn = ScalarFn {
            index_params,
            params,
            body: f(None, body)?,
            span,
            params_range,
            index_pattern_range,
        };
        let mut reduce = |d: usize, rs: Vec<ReduceOp<P>>| -> Result<Vec<ReduceOp<Q>>, E> {
            let mut out = Vec::with_capacity(rs.len());
            for (j, r) in rs.into_iter().enumerate() {
                out.push(match r {
                    ReduceOp::Builtin(b, s) => ReduceOp::Builtin(b, s),
                    ReduceOp::Closure(c) => ReduceOp::Closure(Closure2 {
                        body: f(Some((d, j)), c.body)?,
                        lhs: c.lhs,
                        rhs: c.rhs,
                        text: c.text,
                        span: c.span,
                        range: c.range,
                        params_range: c.params_range,
                    }),
                });
            }
            Ok(out)
        };
        let mut ops = Vec::with_capacity(self.ops.len());
        for (d, op) in self.ops.into_iter().enumerate() {
            ops.push(match op {
                CombineOp::Cc(s) => CombineOp::Cc(s),
                CombineOp::Pw(rs, s) => CombineOp::Pw(reduce(d, rs)?, s),
                CombineOp::Ps(rs, s) => CombineOp::Ps(reduce(d, rs)?, s),
            });
        }
        Ok(Kernel {
            attrs: self.attrs,
            vis: self.vis,
            name: self.name,
            inputs: self.inputs,
            outputs: self.outputs,
            params: self.params,
            size_params: self.size_params,
            dims: self.dims,
            scalar_fn,
            ops,
            ops_span: self.ops_span,
            md_hom_span: self.md_hom_span,
            inp_view: self.inp_view,
            out_view: self.out_view,
            source: self.source,
        })
    }
}

// ----------------------------------------------------------------------------
// Scalar-function expressions (also the bodies of user-defined operators).

/// The phase of a kernel's expression trees: as the parser gives them
/// ([`Parsed`], no types) or as the checker gives them ([`Typed`]). A
/// generator or the interpreter reads only `Typed` trees, so every type it
/// needs is there, resolved, without a fallback.
pub trait Phase: Clone + Copy + std::fmt::Debug {
    /// The type of an expression's value.
    type Ty: Clone + std::fmt::Debug;
    /// The scalar type an operation computes in: a literal's own, the
    /// operands' of a unary or binary operator, the source's of a cast, the
    /// receiver's of a method, the variable's of an assignment or a `let`,
    /// the bounds' of a loop.
    type Scalar: Clone + Copy + std::fmt::Debug;
}

/// Trees as parsed: no types yet.
#[derive(Clone, Copy, Debug)]
pub struct Parsed;

/// Trees as checked: every expression and operation typed.
#[derive(Clone, Copy, Debug)]
pub struct Typed;

impl Phase for Parsed {
    type Ty = ();
    type Scalar = ();
}

impl Phase for Typed {
    type Ty = Type;
    type Scalar = ScalarType;
}

/// An expression of the scalar-function subset.
#[derive(Clone, Debug)]
pub struct Expr<P: Phase = Typed> {
    pub kind: ExprKind<P>,
    /// Span of the expression's first token.
    pub span: Span,
    /// All tokens of the expression (for errors).
    pub range: SpanRange,
    /// The type of its value (given by the checker).
    pub ty: P::Ty,
}

/// Types of scalar-function expressions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Type {
    Scalar(ScalarType),
    Tuple(Vec<ScalarType>),
    /// `()`: statements, loops, `if` without `else`.
    Unit,
    /// `break`: coerces to anything.
    Never,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinOp {
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "&&",
            BinOp::Or => "||",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

/// The whitelisted methods (`x.sqrt()`, `a.max(b)`, `a.mul_add(b, c)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Abs,
    Sqrt,
    Exp,
    Ln,
    Powi,
    Powf,
    Sin,
    Cos,
    Tanh,
    Floor,
    Ceil,
    Min,
    Max,
    MulAdd,
}

impl Method {
    pub const ALL: [Method; 14] = [
        Method::Abs,
        Method::Sqrt,
        Method::Exp,
        Method::Ln,
        Method::Powi,
        Method::Powf,
        Method::Sin,
        Method::Cos,
        Method::Tanh,
        Method::Floor,
        Method::Ceil,
        Method::Min,
        Method::Max,
        Method::MulAdd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Abs => "abs",
            Method::Sqrt => "sqrt",
            Method::Exp => "exp",
            Method::Ln => "ln",
            Method::Powi => "powi",
            Method::Powf => "powf",
            Method::Sin => "sin",
            Method::Cos => "cos",
            Method::Tanh => "tanh",
            Method::Floor => "floor",
            Method::Ceil => "ceil",
            Method::Min => "min",
            Method::Max => "max",
            Method::MulAdd => "mul_add",
        }
    }

    pub fn from_name(s: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == s)
    }

    /// Number of arguments besides the receiver.
    pub fn arity(self) -> usize {
        match self {
            Method::Powi | Method::Powf | Method::Min | Method::Max => 1,
            Method::MulAdd => 2,
            _ => 0,
        }
    }

    /// Whether the method exists only on floats.
    pub fn float_only(self) -> bool {
        !matches!(self, Method::Abs | Method::Min | Method::Max)
    }
}

#[derive(Clone, Debug)]
pub enum Lit {
    /// An integer literal with its suffix type, if any.
    Int(u128, Option<ScalarType>),
    /// A float literal with its suffix type, if any.
    Float(f64, Option<ScalarType>),
    Bool(bool),
}

/// The last field of the operations is their [`Phase::Scalar`] type.
#[derive(Clone, Debug)]
pub enum ExprKind<P: Phase = Typed> {
    /// A literal, and its type.
    Lit(Lit, P::Scalar),
    /// A closure parameter, a `let` binding, a param, a size parameter or an
    /// index name.
    Var(Ident),
    /// An operator, its operand, and the operand's type.
    Unary(UnOp, Box<Expr<P>>, P::Scalar),
    /// An operator, its operands, and the operands' type (a comparison's
    /// value is a `bool`).
    Binary(BinOp, Box<Expr<P>>, Box<Expr<P>>, P::Scalar),
    /// `e as T`: the value, the target type, and the value's type.
    Cast(Box<Expr<P>>, ScalarType, P::Scalar),
    /// The receiver, the method, its arguments, and the receiver's type.
    MethodCall(Box<Expr<P>>, Method, Vec<Expr<P>>, P::Scalar),
    /// `if c { … } else …`; the else branch is a block or another `if`.
    If(Box<Expr<P>>, Block<P>, Option<Box<Expr<P>>>),
    Block(Block<P>),
    Tuple(Vec<Expr<P>>),
    /// `x = e` or `x op= e` (compound assignment carries the operator), and
    /// the type of `x`.
    Assign(Ident, Option<BinOp>, Box<Expr<P>>, P::Scalar),
    /// `for v in lo..hi { … }` (`v` is `None` for `_`), and the type of the
    /// bounds (and of `v`).
    For(
        Option<Ident>,
        Box<Expr<P>>,
        Box<Expr<P>>,
        Block<P>,
        P::Scalar,
    ),
    Break,
}

#[derive(Clone, Debug)]
pub struct Block<P: Phase = Typed> {
    pub stmts: Vec<Stmt<P>>,
    /// The value of the block, if it ends in an expression without `;`.
    pub tail: Option<Box<Expr<P>>>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum Stmt<P: Phase = Typed> {
    Let {
        name: Ident,
        mutable: bool,
        /// The annotation `let x: T`, if written.
        ty: Option<ScalarType>,
        init: Option<Expr<P>>,
        /// Span of `let`.
        span: Span,
        /// The whole statement `let a = …;`.
        range: SpanRange,
        /// The type of the binding (annotated, initialized or assigned).
        var_ty: P::Scalar,
    },
    Expr(Expr<P>),
}

impl<P: Phase> Expr<P> {
    /// Whether some node of the tree (this one included) satisfies `p`:
    /// the one walk over expressions that questions about a tree share.
    pub fn any(&self, p: &dyn Fn(&Expr<P>) -> bool) -> bool {
        if p(self) {
            return true;
        }
        let in_block = |b: &Block<P>| {
            b.stmts.iter().any(|s| match s {
                Stmt::Let { init: Some(i), .. } => i.any(p),
                Stmt::Let { .. } => false,
                Stmt::Expr(x) => x.any(p),
            }) || b.tail.as_deref().is_some_and(|t| t.any(p))
        };
        match &self.kind {
            ExprKind::Lit(_, _) | ExprKind::Var(_) | ExprKind::Break => false,
            ExprKind::Unary(_, a, _) | ExprKind::Cast(a, _, _) | ExprKind::Assign(_, _, a, _) => {
                a.any(p)
            }
            ExprKind::Binary(_, a, b, _) => a.any(p) || b.any(p),
            ExprKind::MethodCall(r, _, args, _) => r.any(p) || args.iter().any(|a| a.any(p)),
            ExprKind::If(c, then, els) => {
                c.any(p) || in_block(then) || els.as_deref().is_some_and(|x| x.any(p))
            }
            ExprKind::Block(b) => in_block(b),
            ExprKind::Tuple(items) => items.iter().any(|x| x.any(p)),
            ExprKind::For(_, lo, hi, body, _) => lo.any(p) || hi.any(p) || in_block(body),
        }
    }
}

impl Expr<Parsed> {
    pub fn new(kind: ExprKind<Parsed>, span: Span) -> Expr<Parsed> {
        Expr {
            kind,
            span,
            range: SpanRange::from(span),
            ty: (),
        }
    }

    /// An expression covering `range` (its `span` is the first token's).
    pub fn with_range(kind: ExprKind<Parsed>, range: SpanRange) -> Expr<Parsed> {
        Expr {
            kind,
            span: range.start,
            range,
            ty: (),
        }
    }
}

/// The trees as the parser gives them: the checker's input (the names
/// without a phase are the checked trees that generators read).
/// A buffer of a kernel of stages, by its clause and its position there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufRef {
    Input(usize),
    Output(usize),
    Tmp(usize),
}

/// One md_hom of a kernel of stages: a kernel of its own (`kernel`, named
/// `KERNEL_STAGE`, whose inputs are the buffers its `inp_view` reads and
/// whose outputs are those its `out_view` writes, with every param of the
/// kernel of stages), and where its buffers and sizes come from.
#[derive(Debug)]
pub struct Stage<K> {
    pub name: Ident,
    pub kernel: K,
    /// Per input of `kernel`, the buffer of the kernel of stages it is.
    pub reads: Vec<BufRef>,
    /// Per output of `kernel`, the buffer of the kernel of stages it is.
    pub writes: Vec<BufRef>,
    /// Per size parameter of `kernel`, its position in the kernel of
    /// stages' `size_params`.
    pub sizes: Vec<usize>,
}

/// A kernel of several md_homs (`stage NAME { ... }` blocks) that run in
/// order; `tmp(...)` buffers are the intermediates the runtime allocates
/// per call. `K` is the stages' kernel: parsed, then [`Checked`](crate::Checked).
#[derive(Debug)]
pub struct Staged<K> {
    pub attrs: Vec<TokenStream>,
    pub vis: TokenStream,
    pub name: Ident,
    pub inputs: Vec<BufferDecl>,
    pub outputs: Vec<BufferDecl>,
    pub tmps: Vec<BufferDecl>,
    pub params: Vec<ParamDecl>,
    /// Size parameters in order of first appearance (shapes of `inp`,
    /// `out`, `tmp`, then each stage's md_hom).
    pub size_params: Vec<Ident>,
    pub stages: Vec<Stage<K>>,
    /// The original tokens of the kernel, for `SPEC`.
    pub source: String,
}

impl<K> Staged<K> {
    /// The stage that computes buffer `b` and the position of `b` among
    /// that stage's outputs (after the checker: one stage per output and
    /// intermediate, none for an input).
    pub fn writer(&self, b: BufRef) -> Option<(&Stage<K>, usize)> {
        self.stages
            .iter()
            .find_map(|s| Some((s, s.writes.iter().position(|&w| w == b)?)))
    }

    /// The same kernel with each stage's kernel mapped by `f`; a stage
    /// whose kernel maps to `None` is left out (the caller reports why).
    pub fn map_stages<L>(self, mut f: impl FnMut(K) -> Option<L>) -> Staged<L> {
        let stages = (self.stages.into_iter())
            .filter_map(|s| {
                Some(Stage {
                    kernel: f(s.kernel)?,
                    name: s.name,
                    reads: s.reads,
                    writes: s.writes,
                    sizes: s.sizes,
                })
            })
            .collect();
        Staged {
            attrs: self.attrs,
            vis: self.vis,
            name: self.name,
            inputs: self.inputs,
            outputs: self.outputs,
            tmps: self.tmps,
            params: self.params,
            size_params: self.size_params,
            stages,
            source: self.source,
        }
    }

    /// The declaration of a buffer.
    pub fn decl(&self, b: BufRef) -> &BufferDecl {
        match b {
            BufRef::Input(i) => &self.inputs[i],
            BufRef::Output(i) => &self.outputs[i],
            BufRef::Tmp(i) => &self.tmps[i],
        }
    }
}

/// What one `mdh!` holds: a kernel of one md_hom (DESIGN.md §1) or a
/// kernel of stages.
#[derive(Debug)]
pub enum Program<K> {
    Single(K),
    Staged(Box<Staged<K>>),
}

pub mod parsed {
    use super::Parsed;

    pub type Kernel = super::Kernel<Parsed>;
    pub type ScalarFn = super::ScalarFn<Parsed>;
    pub type CombineOp = super::CombineOp<Parsed>;
    pub type ReduceOp = super::ReduceOp<Parsed>;
    pub type Closure2 = super::Closure2<Parsed>;
    pub type Expr = super::Expr<Parsed>;
    pub type ExprKind = super::ExprKind<Parsed>;
    pub type Block = super::Block<Parsed>;
    pub type Stmt = super::Stmt<Parsed>;
}
