use crate::fixtures;
use crate::spec::{Block, CombineOp, Expr, ExprKind, ReduceOp, ScalarType, Stmt, Type};
use quote::quote;

fn walk(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Lit(_, _) | ExprKind::Var(_) | ExprKind::Break => {}
        ExprKind::Unary(_, a, _) | ExprKind::Cast(a, _, _) | ExprKind::Assign(_, _, a, _) => {
            walk(a, f)
        }
        ExprKind::Binary(_, a, b, _) => {
            walk(a, f);
            walk(b, f);
        }
        ExprKind::MethodCall(r, _, args, _) => {
            walk(r, f);
            for a in args {
                walk(a, f);
            }
        }
        ExprKind::If(c, t, e) => {
            walk(c, f);
            walk_block(t, f);
            if let Some(e) = e {
                walk(e, f);
            }
        }
        ExprKind::Block(b) => walk_block(b, f),
        ExprKind::Tuple(es) => {
            for e in es {
                walk(e, f);
            }
        }
        ExprKind::For(_, lo, hi, b, _) => {
            walk(lo, f);
            walk(hi, f);
            walk_block(b, f);
        }
    }
}

fn walk_block(b: &Block, f: &mut dyn FnMut(&Expr)) {
    for s in &b.stmts {
        match s {
            Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => walk(e, f),
            Stmt::Let { init: None, .. } => {}
        }
    }
    if let Some(t) = &b.tail {
        walk(t, f);
    }
}

fn ok(tokens: proc_macro2::TokenStream) -> crate::Checked {
    match crate::compile(tokens) {
        Ok(k) => k,
        Err(e) => panic!("unexpected error: {}", msgs(e)),
    }
}

fn msgs(e: syn::Error) -> String {
    e.into_iter()
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn err(tokens: proc_macro2::TokenStream) -> String {
    match crate::compile(tokens) {
        Ok(_) => panic!("expected an error"),
        Err(e) => msgs(e),
    }
}

fn assert_err(tokens: proc_macro2::TokenStream, needle: &str) {
    let m = err(tokens);
    assert!(m.contains(needle), "expected `{needle}` in:\n{m}");
}

/// Types of all nodes of a tree (pre-order) whose node is a `Var` named `name`.
fn var_types(e: &Expr, name: &str) -> Vec<Type> {
    let mut v = Vec::new();
    walk(e, &mut |e| {
        if let ExprKind::Var(id) = &e.kind {
            if id == name {
                v.push(e.ty.clone());
            }
        }
    });
    v
}

fn lit_types(e: &Expr) -> Vec<Type> {
    let mut v = Vec::new();
    walk(e, &mut |e| {
        if let ExprKind::Lit(_, _) = &e.kind {
            v.push(e.ty.clone());
        }
    });
    v
}

fn matvec_with(
    out_ty: proc_macro2::TokenStream,
    f: proc_macro2::TokenStream,
    ops: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    quote! {
        kernel matvec {
            inp(M: f32[I, K], v: f32[K]),
            out(w: #out_ty[I]),
            out_view(w: |i, k| (i)),
            md_hom[I, K](#f, #ops),
            inp_view(M: |i, k| (i, k), v: |i, k| (k)),
        }
    }
}

#[test]
fn matvec_ok() {
    let k = ok(fixtures::tokens(fixtures::MATVEC));
    assert_eq!(k.scalar_fn.body.ty, Type::Scalar(ScalarType::F32));
}

#[test]
fn matmul_ok() {
    let k = ok(fixtures::tokens(&fixtures::in_f64(fixtures::MATMUL)));
    assert_eq!(k.scalar_fn.body.ty, Type::Scalar(ScalarType::F64));
}

#[test]
fn jacobi1d_ok() {
    let k = ok(fixtures::tokens(fixtures::JACOBI1D));
    // The unsuffixed float literal takes the type of the buffer.
    assert_eq!(
        lit_types(&k.scalar_fn.body),
        vec![Type::Scalar(ScalarType::F32)]
    );
}

#[test]
fn mandelbrot_ok() {
    let k = ok(fixtures::tokens(&fixtures::example("mandelbrot")));
    assert_eq!(k.scalar_fn.body.ty, Type::Scalar(ScalarType::U32));
    assert!(var_types(&k.scalar_fn.body, "x")
        .iter()
        .all(|t| *t == Type::Scalar(ScalarType::Usize)));
    assert!(var_types(&k.scalar_fn.body, "W")
        .iter()
        .all(|t| *t == Type::Scalar(ScalarType::Usize)));
    assert!(var_types(&k.scalar_fn.body, "zi")
        .iter()
        .all(|t| *t == Type::Scalar(ScalarType::F32)));
    // `n` is inferred from the output type, `zr` and `zi` from `cr` and `ci`.
    assert!(var_types(&k.scalar_fn.body, "n")
        .iter()
        .all(|t| *t == Type::Scalar(ScalarType::U32)));
    let lits = lit_types(&k.scalar_fn.body);
    assert!(
        lits.iter()
            .all(|t| matches!(t, Type::Scalar(ScalarType::F32 | ScalarType::U32))),
        "{lits:?}"
    );
}

#[test]
fn an_integer_literal_takes_the_float_type_it_meets() {
    let k = ok(quote! {
        kernel scale {
            inp(v: f32[N]),
            out(w: f32[N]),
            out_view(w: |i| (i)),
            md_hom[N](|x| { let mut y: f32 = 0.0; y = 2 * x + y; y }, (CC)),
            inp_view(v: |i| (i)),
        }
    });
    let lits = lit_types(&k.scalar_fn.body);
    assert_eq!(lits, vec![Type::Scalar(ScalarType::F32); 2]);
}

#[test]
fn reduce2_ok() {
    let k = ok(quote! {
        kernel reduce2 {
            inp(x: f32[N]),
            out(s: f32[], m: f32[]),
            out_view(s: |i| (), m: |i| ()),
            md_hom[N](|a| (a, a), (PW(+, max))),
            inp_view(x: |i| (i)),
        }
    });
    assert_eq!(
        k.scalar_fn.body.ty,
        Type::Tuple(vec![ScalarType::F32, ScalarType::F32])
    );
}

#[test]
fn reduce2_mixed_types_ok() {
    let k = ok(quote! {
        kernel sum_count {
            inp(x: f64[N]),
            out(s: f64[], c: u64[]),
            out_view(s: |i| (), c: |i| ()),
            md_hom[N](|a| if a > 0.0 { (a, 1) } else { (0.0, 0) }, (PW(+))),
            inp_view(x: |i| (i)),
        }
    });
    assert_eq!(
        k.scalar_fn.body.ty,
        Type::Tuple(vec![ScalarType::F64, ScalarType::U64])
    );
}

#[test]
fn scan_ok() {
    let k = ok(fixtures::tokens(&fixtures::in_type(
        &fixtures::example("scan"),
        "i64",
    )));
    assert_eq!(k.scalar_fn.body.ty, Type::Scalar(ScalarType::I64));
}

#[test]
fn prl_custom_closure_ok() {
    let k = ok(quote! {
        kernel prl {
            inp(a: f64[N, M], b: f64[M]),
            out(best: f64[N]),
            params(eps: f64),
            out_view(best: |n, m| (n)),
            md_hom[N, M](|x, y| {
                let d = (x - y).abs();
                if d < eps { d * 2.0 } else { d.sqrt().mul_add(2.0, eps) + M as f64 }
            }, (CC, PW(|p, q| if p > q { p } else { q - eps * 0.0 }))),
            inp_view(a: |n, m| (n, m), b: |n, m| (m)),
        }
    });
    let CombineOp::Pw(ops, _) = &k.ops[1] else {
        panic!()
    };
    let ReduceOp::Closure(c) = &ops[0] else {
        panic!()
    };
    assert_eq!(c.body.ty, Type::Scalar(ScalarType::F64));
    assert_eq!(
        var_types(&k.scalar_fn.body, "eps"),
        vec![Type::Scalar(ScalarType::F64); 2]
    );
}

#[test]
fn params_and_methods_ok() {
    ok(quote! {
        kernel saxpy {
            inp(x: f32[N], y: f32[N]),
            out(z: f32[N]),
            params(alpha: f32, p: i32),
            out_view(z: |i| (i)),
            md_hom[N](|a, b| {
                let q = a.powi(p).max(0.5).min(b.powf(2.0));
                let r = (-a).abs() + q.exp().ln().sin().cos().tanh().floor().ceil();
                alpha * r + b - (p as f32) % 3.0
            }, (CC)),
            inp_view(x: |i| (i), y: |i| (i)),
        }
    });
}

#[test]
fn integer_defaults_and_bool_logic_ok() {
    let k = ok(quote! {
        kernel count {
            inp(x: i32[N]),
            out(c: i32[]),
            out_view(c: |i| ()),
            md_hom[N](|a| {
                let t = 5;
                let f = 2.5;
                if a > t && !(f < 1.0) || a == -1 { 1 } else { 0 }
            }, (PW(+))),
            inp_view(x: |i| (i)),
        }
    });
    let lits = lit_types(&k.scalar_fn.body);
    assert!(lits.contains(&Type::Scalar(ScalarType::F64)), "{lits:?}");
}

// --- structural errors ---------------------------------------------------

#[test]
fn duplicate_names() {
    assert_err(
        quote! {
            kernel k {
                inp(a: f32[N], a: f32[N]), out(w: f32[N]),
                out_view(w: |i| (i)), md_hom[N](|x, y| x + y, (CC)),
                inp_view(a: [|i| (i), |i| (i)]),
            }
        },
        "the name `a` is declared twice as an input buffer; rename one of them",
    );
    assert_err(
        quote! {
            kernel k {
                inp(a: f32[N]), out(w: f32[N]), params(a: f32),
                out_view(w: |i| (i)), md_hom[N](|x| x, (CC)), inp_view(a: |i| (i)),
            }
        },
        "declared twice (as an input buffer and as a param)",
    );
    assert_err(
        quote! {
            kernel k {
                inp(a: f32[N]), out(w: f32[N]), params(N: f32),
                out_view(w: |i| (i)), md_hom[N](|x| x, (CC)), inp_view(a: |i| (i)),
            }
        },
        "`N` is a size parameter (used in a shape or in md_hom[...]) and cannot also be a param",
    );
    assert_err(
        quote! {
            kernel k {
                inp(a: f32[N]), out(N: f32[N]),
                out_view(N: |i| (i)), md_hom[N](|x| x, (CC)), inp_view(a: |i| (i)),
            }
        },
        "cannot also name an output buffer: the generated `cpu` function takes the buffers and the size parameters as arguments by name, so the two would clash; rename the size parameter (e.g. `NUM_N`) or the buffer",
    );
}

#[test]
fn op_count() {
    assert_err(
        matvec_with(quote!(f32), quote!(|m, x| m * x), quote!((CC, PW(+), CC))),
        "md_hom has 2 dimensions [I, K] but 3 combine operators; give exactly one operator",
    );
}

#[test]
fn index_fn_arity_and_rank() {
    assert_err(
        quote! {
            kernel matvec {
                inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                out_view(w: |i, k| (i)),
                md_hom[I, K](|m, x| m * x, (CC, PW(+))),
                inp_view(M: |i, k| (i, k), v: |k| (k)),
            }
        },
        "this index function has 1 parameter but md_hom has 2 dimensions [I, K]; write one parameter per dimension, e.g. `|i, j|`",
    );
    assert_err(
        quote! {
            kernel matvec {
                inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                out_view(w: |i, k| (i)),
                md_hom[I, K](|m, x| m * x, (CC, PW(+))),
                inp_view(M: |i, k| (i), v: |i, k| (k)),
            }
        },
        "this index function gives 1 index but `M` (f32[I, K]) has rank 2; return one index per buffer dimension",
    );
}

#[test]
fn views() {
    assert_err(
        quote! {
            kernel matvec {
                inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                out_view(w: |i, k| (i)),
                md_hom[I, K](|m, x| m * x, (CC, PW(+))),
                inp_view(M: |i, k| (i, k), u: |i, k| (k)),
            }
        },
        "unknown buffer `u` in inp_view; the declared input buffers are `M`, `v`",
    );
    let m = err(quote! {
        kernel matvec {
            inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
            out_view(w: |i, k| (i)),
            md_hom[I, K](|m| m, (CC, PW(+))),
            inp_view(M: |i, k| (i, k)),
        }
    });
    assert!(
        m.contains("the input buffer `v` has no entry in inp_view"),
        "{m}"
    );
    assert_err(
        quote! {
            kernel matvec {
                inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                out_view(w: |i, k| (i)),
                md_hom[I, K](|m, x, y| m * x, (CC, PW(+))),
                inp_view(M: |i, k| (i, k), v: |i, k| (k), v: |i, k| (k)),
            }
        },
        "`v` is listed twice in inp_view",
    );
    assert_err(
        quote! {
            kernel matvec {
                inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                out_view(w: |i, k| (i)),
                md_hom[I, K](|m, x, y| m * x, (CC, PW(+))),
                inp_view(M: |i, k| (i, k), v: |i, k| (k), w: |i, k| (i)),
            }
        },
        "`w` is not an input buffer; list its index functions in out_view, not in inp_view",
    );
    assert_err(
        quote! {
            kernel nothing {
                inp(v: f32[K]), out(),
                out_view(),
                md_hom[K](|x| x, (CC)),
                inp_view(v: |k| (k)),
            }
        },
        "this kernel declares no output buffer",
    );
}

#[test]
fn scalar_fn_arity() {
    assert_err(
        quote! {
            kernel jacobi1d {
                inp(u: f32[N + 2]), out(w: f32[N]),
                out_view(w: |i| (i)),
                md_hom[N](|l, c| l + c, (CC)),
                inp_view(u: [|i| (i), |i| (i + 1), |i| (i + 2)]),
            }
        },
        "the scalar function has 2 parameters but inp_view has 3 input accesses (`u`, `u`, `u`); write one parameter per input access",
    );
    assert_err(
        quote! {
            kernel g {
                inp(), out(img: u32[H, W]),
                out_view(img: |y, x| (y, x)),
                md_hom[H, W](|[y]| y as u32, (CC, CC)),
                inp_view(),
            }
        },
        "the index pattern binds 1 name but md_hom has 2 dimensions [H, W]",
    );
}

#[test]
fn result_arity() {
    let two = |f: proc_macro2::TokenStream| {
        quote! {
            kernel reduce2 {
                inp(x: f32[N]), out(s: f32[], m: f32[]),
                out_view(s: |i| (), m: |i| ()),
                md_hom[N](#f, (PW(+, max))),
                inp_view(x: |i| (i)),
            }
        }
    };
    assert_err(
        two(quote!(|a| a)),
        "the scalar function returns a single value but there are 2 output accesses (`s`, `m`)",
    );
    assert_err(
        two(quote!(|a| (a, a, a))),
        "the scalar function returns 3 values but there are 2 output accesses (`s`, `m`)",
    );
    assert_err(
        matvec_with(quote!(f32), quote!(|m, x| (m, x)), quote!((CC, PW(+)))),
        "the scalar function returns a tuple of 2 values but there is one output access (`w`); return a single value",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                m * x;
            }),
            quote!((CC, PW(+))),
        ),
        "the scalar function returns no value",
    );
}

#[test]
fn pw_operator_count() {
    assert_err(
        quote! {
            kernel reduce3 {
                inp(x: f32[N]), out(s: f32[], m: f32[]),
                out_view(s: |i| (), m: |i| ()),
                md_hom[N](|a| (a, a), (PW(+, max, min))),
                inp_view(x: |i| (i)),
            }
        },
        "PW has 3 operators but there are 2 output accesses (`s`, `m`)",
    );
}

#[test]
fn lemma1() {
    assert_err(
        quote! {
            kernel k {
                inp(A: f32[I, J]), out(s: f32[]),
                out_view(s: |i, j| ()),
                md_hom[I, J](|a| a, (PW(+), PW(max))),
                inp_view(A: |i, j| (i, j)),
            }
        },
        "dimension 2 combines with `max` but dimension 1 with `+`: a combination of dimensions is only well-defined when all reduced dimensions use one associative, commutative operator",
    );
    assert_err(
        quote! {
            kernel k {
                inp(A: f32[I, J]), out(s: f32[I]),
                out_view(s: |i, j| (i)),
                md_hom[I, J](|a| a, (PS(+), PW(max))),
                inp_view(A: |i, j| (i, j)),
            }
        },
        "is only well-defined when all reduced dimensions use one associative, commutative operator",
    );
    // Same operator everywhere is fine.
    ok(quote! {
        kernel k {
            inp(A: f32[I, J]), out(s: f32[]),
            out_view(s: |i, j| ()),
            md_hom[I, J](|a| a, (PW(max), PW(max))),
            inp_view(A: |i, j| (i, j)),
        }
    });
}

#[test]
fn bool_outputs() {
    assert_err(
        quote! {
            kernel any {
                inp(x: f32[N]), out(b: bool[]),
                out_view(b: |i| ()),
                md_hom[N](|a| a > 0.0, (PW(+))),
                inp_view(x: |i| (i)),
            }
        },
        "`PW(+)` cannot combine the `bool` values of output `b`; use a closure such as `PW(|a, b| a || b)`",
    );
    ok(quote! {
        kernel any {
            inp(x: f32[N]), out(b: bool[]),
            out_view(b: |i| ()),
            md_hom[N](|a| a > 0.0, (PW(|p, q| p || q))),
            inp_view(x: |i| (i)),
        }
    });
}

#[test]
fn output_index_functions() {
    assert_err(
        matvec_with(quote!(f32), quote!(|m, x| m * x), quote!((PW(+), CC))),
        "this output index uses `i` (dimension 1), which is reduced by PW",
    );
    assert_err(
        quote! {
            kernel k {
                inp(A: f32[I, J]), out(s: f32[I]),
                out_view(s: |i, j| (i)),
                md_hom[I, J](|a| a, (CC, CC)),
                inp_view(A: |i, j| (i, j)),
            }
        },
        "this output index function is not injective over the kept (CC and PS) dimensions (it does not use `j` (dimension 2)), so two points of the index space would write the same element of `s`; add the missing dimension to the output index function or make that dimension PW",
    );
    assert_err(
        quote! {
            kernel k {
                inp(A: f32[I, J]), out(s: f32[I + J]),
                out_view(s: |i, j| (i + j)),
                md_hom[I, J](|a| a, (CC, CC)),
                inp_view(A: |i, j| (i, j)),
            }
        },
        "its kept dimensions are combined so that different points map to the same index",
    );
    ok(quote! {
        kernel k {
            inp(A: f32[I, J]), out(s: f32[I + J, J]),
            out_view(s: |i, j| (i + j, J - 1 - j)),
            md_hom[I, J](|a| a, (CC, CC)),
            inp_view(A: |i, j| (i, j)),
        }
    });
}

// --- type errors -----------------------------------------------------------

#[test]
fn unknown_name() {
    assert_err(
        matvec_with(quote!(f32), quote!(|m, x| m * y), quote!((CC, PW(+)))),
        "unknown name `y`: ",
    );
    assert_err(
        matvec_with(quote!(f32), quote!(|m, x| m * v), quote!((CC, PW(+)))),
        "unknown name `v`: buffers cannot be used directly",
    );
}

#[test]
fn result_type_mismatch() {
    assert_err(
        matvec_with(quote!(f32), quote!(|m, x| (m * x) as f64), quote!((CC, PW(+)))),
        "the scalar function returns `f64` for output `w`, which is `f32`; add `as f32` or change the buffer type",
    );
    assert_err(
        matvec_with(quote!(i32), quote!(|m, x| m * x), quote!((CC, PW(+)))),
        "the scalar function returns `f32` for output `w`, which is `i32`",
    );
}

#[test]
fn arithmetic_and_logic_errors() {
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| m * (x as f64)),
            quote!((CC, PW(+))),
        ),
        "`*` needs both operands of the same type, but the left is `f32` and the right is `f64`",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| if m { x } else { 0.0 }),
            quote!((CC, PW(+))),
        ),
        "an `if` condition must be a `bool`, but this is `f32`",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| if m > 0.0 && x { x } else { 0.0 }),
            quote!((CC, PW(+))),
        ),
        "`&&` needs `bool` operands, but this is `f32`",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| if m > 0.0 { x } else { 0 as f64 }),
            quote!((CC, PW(+))),
        ),
        "the branches of this `if` have different types",
    );
    assert_err(
        matvec_with(quote!(u32), quote!(|m, x| -(m as u32)), quote!((CC, PW(+)))),
        "cannot negate a value of unsigned type `u32`",
    );
    assert_err(
        matvec_with(
            quote!(bool),
            quote!(|m, x| m as bool),
            quote!((CC, PW(|a, b| a || b))),
        ),
        "cannot cast to `bool` with `as`",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| (m > x) as f32),
            quote!((CC, PW(+))),
        ),
        "cannot cast a `bool` to `f32`",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                let b = m > x;
                (b + b) as f32
            }),
            quote!((CC, PW(+))),
        ),
        "`+` needs numbers, but both operands are `bool`",
    );
}

#[test]
fn method_errors() {
    assert_err(
        matvec_with(
            quote!(i32),
            quote!(|m, x| (m as i32).sqrt()),
            quote!((CC, PW(+))),
        ),
        "`.sqrt()` is only defined on `f32` and `f64`, but this is `i32`",
    );
    assert_err(
        matvec_with(
            quote!(u32),
            quote!(|m, x| (m as u32).abs()),
            quote!((CC, PW(+))),
        ),
        "`.abs()` on unsigned type `u32`",
    );
    assert_err(
        matvec_with(quote!(f32), quote!(|m, x| m.powi(x)), quote!((CC, PW(+)))),
        "this argument of `.powi()` is `f32`, but it must be `i32`",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| m.max(x as f64)),
            quote!((CC, PW(+))),
        ),
        "this argument of `.max()` is `f64`, but it must be `f32`",
    );
}

#[test]
fn binding_errors() {
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                m = x;
                m
            }),
            quote!((CC, PW(+))),
        ),
        "cannot assign to `m`, a closure parameter; bind a copy with `let mut m = m;` first",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                let t = m;
                t = x;
                t
            }),
            quote!((CC, PW(+))),
        ),
        "`t` is not mutable, so it can be assigned only once; declare it with `let mut t`",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                let t;
                m
            }),
            quote!((CC, PW(+))),
        ),
        "`t` is declared without a value and never assigned",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                let t: f64 = m;
                m
            }),
            quote!((CC, PW(+))),
        ),
        "`t` is declared as `f64` but initialized with `f32`",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                let mut t = true;
                t += true;
                m
            }),
            quote!((CC, PW(+))),
        ),
        "`+=` needs a number, but `t` is a `bool`",
    );
    // Blocks scope their bindings.
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                {
                    let t = m;
                }
                t
            }),
            quote!((CC, PW(+))),
        ),
        "unknown name `t`",
    );
}

/// Rust's deferred initialization `let a; a = x;`: one plain assignment
/// directly in the block of the `let`, before any use.
#[test]
fn deferred_initialization() {
    for f in [
        quote!(|m, x| {
            let a;
            a = m * x;
            a
        }),
        quote!(|m, x| {
            let a: f32;
            a = m;
            a * x
        }),
        quote!(|m, x| {
            let mut a;
            a = m;
            a += x;
            a
        }),
        quote!(|m, x| {
            let a;
            let b;
            a = m;
            b = x;
            a * b
        }),
        quote!(|m, x| {
            for _ in 0..2 {
                let a;
                a = m;
                let _c = a;
            }
            m * x
        }),
    ] {
        let k = crate::compile(matvec_with(quote!(f32), f.clone(), quote!((CC, PW(+)))))
            .unwrap_or_else(|e| panic!("{f}: {}", msgs(e)));
        // The deferred binding gets the assigned value's type.
        assert!(var_types(&k.scalar_fn.body, "a")
            .iter()
            .all(|t| *t == Type::Scalar(ScalarType::F32)));
    }
    // The interpreter (the oracle) evaluates it like Rust.
    let k = crate::compile(matvec_with(
        quote!(f32),
        quote!(|m, x| {
            let a;
            a = m * x;
            let b: f32;
            b = a + 1.0;
            b
        }),
        quote!((CC, PW(+))),
    ))
    .unwrap_or_else(|e| panic!("{}", msgs(e)));
    use crate::interp::{run, Buffer};
    let inputs = [
        Buffer::from(vec![1.0f32, 2.0, 3.0, 4.0]),
        Buffer::from(vec![10.0f32, 100.0]),
    ];
    let mut outputs = [Buffer::zeros(ScalarType::F32, 2)];
    run(&k, &[2, 2], &inputs, &mut outputs, &[]).expect("runs");
    assert_eq!(outputs[0], Buffer::from(vec![212.0f32, 432.0]));
    for (f, needle) in [
        (
            quote!(|m, x| { let a; let b = a; a = m; b * x }),
            "`a` is used before it has a value",
        ),
        (
            quote!(|m, x| { let a; if m > x { a = m; } else { a = x; } a }),
            "`a` is declared without a value, and such a binding can only be initialized by a plain assignment `a = ...;` directly in the block of its `let`",
        ),
        (
            quote!(|m, x| { let a; a += m; a }),
            "can only be initialized by a plain assignment",
        ),
        (
            quote!(|m, x| { let a; a = m; a = x; a }),
            "`a` is not mutable, so it can be assigned only once; declare it with `let mut a`",
        ),
        (
            quote!(|m, x| { let a; { a = m; } a }),
            "directly in the block of its `let`",
        ),
        (
            quote!(|m, x| { let a: i32; a = m; x }),
            "cannot assign `f32` to `a`, which is `i32`",
        ),
    ] {
        let m = err(matvec_with(quote!(f32), f.clone(), quote!((CC, PW(+)))));
        assert!(m.contains(needle), "{f}: expected `{needle}` in:\n{m}");
    }
}

/// One error for a binding assigned in branches, no follow-ups.
#[test]
fn deferred_initialization_single_error() {
    let m = err(matvec_with(
        quote!(f32),
        quote!(|m, x| {
            let a;
            if m > x {
                a = m;
            } else {
                a = x;
            }
            a
        }),
        quote!((CC, PW(+))),
    ));
    assert_eq!(m.lines().count(), 1, "{m}");
}

#[test]
fn division_by_literal_zero() {
    for (f, needle) in [
        (quote!(|m, x| (m as i32) / 0), "integer division by zero"),
        (
            quote!(|m, x| (m as i32) % 0i32),
            "integer remainder by zero",
        ),
        (
            quote!(|m, x| {
                let mut a = m as i64;
                a /= 0;
                a as i32
            }),
            "integer division by zero",
        ),
    ] {
        let m = err(matvec_with(quote!(i32), f.clone(), quote!((CC, PW(+)))));
        assert!(m.contains(needle), "{f}: expected `{needle}` in:\n{m}");
    }
    // Floats divide by zero without panicking; `x / 1` is fine.
    for f in [
        quote!(|m, x| m / 0),
        quote!(|m, x| m / 0.0),
        quote!(|m, x| m / 1 + x),
    ] {
        if let Err(e) = crate::compile(matvec_with(quote!(f32), f.clone(), quote!((CC, PW(+))))) {
            panic!("{f}: {}", msgs(e));
        }
    }
}

#[test]
fn identical_output_index_functions() {
    let k = |views: proc_macro2::TokenStream| {
        quote! {
            kernel twice {
                inp(a: f32[N]), out(b: f32[M]),
                out_view(b: #views),
                md_hom[N](|x| (x, x + 1.0), (CC)),
                inp_view(a: |i| (i)),
            }
        }
    };
    assert_err(
        k(quote!([|i| (i), |j| (j)])),
        "both index functions of `b` write the same elements",
    );
    assert!(crate::compile(k(quote!([|i| (i), |i| (i + N)]))).is_ok());
}

/// An error in a view clause is not followed by errors that only count
/// the accesses.
#[test]
fn no_cascades_after_view_errors() {
    for (t, needle) in [
        (
            quote! { kernel k {
                inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                out_view(w: |i, k| (i)),
                md_hom[I, K](|m, x, y| m * x * y, (CC, PW(+))),
                inp_view(M: |i, k| (i, k), v: |i, k| (k), u: |i, k| (k)),
            } },
            "unknown buffer `u` in inp_view",
        ),
        (
            quote! { kernel k {
                inp(M: f32[I, K], v: f32[K]), out(w: f32[I]),
                out_view(w: |i, k| (i)),
                md_hom[I, K](|m, x, y| m * x * y, (CC, PW(+))),
                inp_view(M: |i, k| (i, k), v: |i, k| (k), w: |i, k| (i)),
            } },
            "`w` is not an input buffer",
        ),
        (
            quote! { kernel k {
                inp(a: f32[N]), out(b: f32[N]),
                out_view(b: |i| (i)),
                md_hom[N](|x| x, (CC)),
            } },
            "the input buffer `a` has no entry in inp_view",
        ),
        (
            quote! { kernel k {
                inp(a: f32[N]), out(b: f32[N], c: f32[N]),
                out_view(b: |i| (i), d: |i| (i)),
                md_hom[N](|x| (x, x), (CC)),
                inp_view(a: |i| (i)),
            } },
            "unknown buffer `d` in out_view",
        ),
    ] {
        let m = err(t);
        assert!(m.starts_with(needle), "expected `{needle}` in:\n{m}");
        // (The last case also reports the missing entry of `c`.)
        assert!(m.lines().count() <= 2, "follow-up errors:\n{m}");
        assert!(!m.contains("scalar function"), "follow-up errors:\n{m}");
    }
}

#[test]
fn buffer_named_like_size_parameter() {
    assert_err(
        quote! { kernel bmm {
            inp(A: f32[B, I, K], B: f32[B, K, J]), out(C: f32[B, I, J]),
            out_view(C: |b, i, j, k| (b, i, j)),
            md_hom[B, I, J, K](|a, b| a * b, (CC, CC, CC, PW(+))),
            inp_view(A: |b, i, j, k| (b, i, k), B: |b, i, j, k| (b, k, j)),
        } },
        "`B` is a size parameter (used in a shape or in md_hom[...]) and cannot also name an input buffer: the generated `cpu` function takes the buffers and the size parameters as arguments by name, so the two would clash; rename the size parameter (e.g. `NB`) or the buffer",
    );
}

#[test]
fn loop_errors() {
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                if m > x {
                    break;
                }
                m
            }),
            quote!((CC, PW(+))),
        ),
        "`break` outside of a `for` loop",
    );
    // `break` gives no value: no operand, and the loop keeps its kernel typed.
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                let mut s = m;
                for _ in 0..4 {
                    s = s + break;
                }
                s
            }),
            quote!((CC, PW(+))),
        ),
        "`+` needs a value, but this expression leaves the loop (`break`) before it gives one",
    );
    // As the value of one branch it is fine (the `if` has the other's type).
    ok(matvec_with(
        quote!(f32),
        quote!(|m, x| {
            let mut s = m;
            for _ in 0..4 {
                s = if s > x { break } else { s * 2.0 };
            }
            s
        }),
        quote!((CC, PW(+))),
    ));
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                for i in 0.0..x {}
                m
            }),
            quote!((CC, PW(+))),
        ),
        "loop bounds must be integers, but these are `f32`",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                for i in 0u8..K {}
                m
            }),
            quote!((CC, PW(+))),
        ),
        "the bounds of this loop have different types (`u8` and `usize`)",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| {
                let t = (m, x);
                m
            }),
            quote!((CC, PW(+))),
        ),
        "a tuple can only be the final value of the scalar function",
    );
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| if m > x {
                m
            }),
            quote!((CC, PW(+))),
        ),
        "an `if` without `else` cannot produce a value",
    );
}

#[test]
fn closure_operator_errors() {
    assert_err(
        matvec_with(
            quote!(f32),
            quote!(|m, x| m * x),
            quote!((CC, PW(|a, b| (a + b) as f64))),
        ),
        "this operator returns `f64`, but it combines values of output `w`, which is `f32`",
    );
    assert_err(
        quote! {
            kernel sum_count {
                inp(x: f64[N]), out(s: f64[], c: u64[]),
                out_view(s: |i| (), c: |i| ()),
                md_hom[N](|a| (a, 1), (PW(|p, q| p + q))),
                inp_view(x: |i| (i)),
            }
        },
        "this operator combines outputs `s` (`f64`) and `c` (`u64`) of different types; give one operator per output access",
    );
}

#[test]
fn several_errors_at_once() {
    let m = err(quote! {
        kernel k {
            inp(a: f32[N]), out(w: f32[N]),
            out_view(w: |i, j| (i)),
            md_hom[N](|x| x + y, (CC)),
            inp_view(a: |i| (i)),
        }
    });
    assert!(m.contains("this index function has 2 parameters"), "{m}");
    assert!(m.contains("unknown name `y`"), "{m}");
}
#[test]
fn never_panics_on_mutated_kernels() {
    // One line, words split by single spaces (the mutations work on words).
    let matvec = fixtures::MATVEC
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let kernels = [
        matvec.as_str(),
        "kernel r { inp(x: f32[N]), out(s: f32[], m: f32[]), out_view(s: |i| (), m: |i| ()), md_hom[N](|a| (a, a), (PW(+, max))), inp_view(x: |i| (i)), }",
        "kernel g { inp(), out(img: u32[H, W]), params(it: u32), out_view(img: |y, x| (y, x)), md_hom[H, W](|[y, x]| { let mut n = 0; let c = x as f32 / W as f32; for _ in 0..it { if c > 4.0 { break; } n += 1; } n }, (CC, CC)), inp_view(), }",
        "kernel p { inp(a: f64[N, M]), out(b: f64[N]), params(e: f64), out_view(b: |n, m| (n)), md_hom[N, M](|x| x.abs().max(e), (CC, PW(|p, q| if p > q { p } else { q }))), inp_view(a: |n, m| (n, m)), }",
    ];
    for src in kernels {
        let words: Vec<&str> = src.split(' ').collect();
        let mut variants = Vec::new();
        for i in 0..words.len() {
            // Drop one word; duplicate one word; swap two neighbours.
            let mut v = words.clone();
            v.remove(i);
            variants.push(v.join(" "));
            let mut v = words.clone();
            v.insert(i, words[i]);
            variants.push(v.join(" "));
            if i + 1 < words.len() {
                let mut v = words.clone();
                v.swap(i, i + 1);
                variants.push(v.join(" "));
            }
        }
        for v in variants {
            let r = std::panic::catch_unwind(|| {
                let _ = crate::compile_str(&v);
            });
            assert!(r.is_ok(), "panicked on: {v}");
        }
    }
}
