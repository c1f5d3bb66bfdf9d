use super::parse_kernel;
use crate::fixtures;
use crate::spec::parsed::{CombineOp, Expr, ExprKind, Kernel, ReduceOp, Stmt};
use crate::spec::{Affine, BinOp, BuiltinOp, Lit, Method, ScalarType, SizeExpr, View};
use proc_macro2::{Delimiter, Group, Literal, Punct, Spacing, TokenTree};
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::Ident;

fn parse(ts: TokenStream) -> Kernel {
    match parse_kernel(ts) {
        Ok(k) => k,
        Err(e) => panic!("parse failed: {e}"),
    }
}

fn parse_err(ts: TokenStream) -> String {
    match parse_kernel(ts) {
        Ok(k) => panic!("expected an error, parsed kernel `{}`", k.name),
        Err(e) => e
            .into_iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn names(ids: &[Ident]) -> Vec<String> {
    ids.iter().map(ToString::to_string).collect()
}

fn aff(dims: &[i64], sizes: &[i64], c: i64) -> Affine {
    Affine {
        dims: dims.to_vec(),
        sizes: sizes.to_vec(),
        constant: c,
    }
}

fn components(k: &Kernel, views: &[View], buf: &str, access: usize) -> Vec<Affine> {
    let _ = k;
    views
        .iter()
        .find(|v| v.buffer == buf)
        .expect("view")
        .accesses[access]
        .components
        .clone()
}

/// Debug output with spans normalized away (span-locations may be on).
fn strip_spans(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("bytes(") {
        let (head, tail) = rest.split_at(i);
        let Some(j) = tail.find(')') else { break };
        let mut head = head.to_string();
        if head.ends_with(", span: ") {
            head.truncate(head.len() - ", span: ".len());
            out.push_str(&head);
        } else {
            out.push_str(&head);
            out.push_str("Span");
        }
        rest = &tail[j + 1..];
    }
    out.push_str(rest);
    out
}

fn roundtrip(ts: TokenStream) {
    let k = parse(ts);
    let again = parse(k.source.parse().expect("source tokenizes"));
    assert_eq!(
        strip_spans(&format!("{k:?}")),
        strip_spans(&format!("{again:?}"))
    );
    assert_eq!(k.source, again.source);
}

/// The shared matvec, public and documented.
fn matvec() -> TokenStream {
    let source = format!(
        "/// Matrix-vector multiplication: w = M · v\npub {}",
        crate::fixtures::MATVEC.trim_start()
    );
    crate::fixtures::tokens(&source)
}

#[test]
fn parse_matvec() {
    let k = parse(matvec());
    assert_eq!(k.name, "matvec");
    assert_eq!(k.vis.to_string(), "pub");
    assert_eq!(k.attrs.len(), 1);
    assert!(k.attrs[0].to_string().contains("doc"));
    assert_eq!(names(&k.size_params), ["I", "K"]);
    assert_eq!(k.inputs.len(), 2);
    assert_eq!(k.inputs[0].ty, ScalarType::F32);
    assert_eq!(k.inputs[0].shape.len(), 2);
    assert_eq!(k.outputs[0].name, "w");
    assert_eq!(k.dims.len(), 2);
    assert!(matches!(k.dims[0].size, SizeExpr::Param(ref p) if p == "I"));
    assert_eq!(k.ops.len(), 2);
    assert!(matches!(k.ops[0], CombineOp::Cc(_)));
    assert!(matches!(&k.ops[1], CombineOp::Pw(v, _) if v.len() == 1
        && matches!(v[0], ReduceOp::Builtin(BuiltinOp::Add, _))));
    assert_eq!(names(&k.scalar_fn.params), ["m", "x"]);
    assert!(k.scalar_fn.index_params.is_none());
    assert!(
        matches!(&k.scalar_fn.body.kind, ExprKind::Binary(BinOp::Mul, a, b, _)
        if matches!(&a.kind, ExprKind::Var(v) if v == "m")
        && matches!(&b.kind, ExprKind::Var(v) if v == "x"))
    );
    assert_eq!(
        components(&k, &k.inp_view, "M", 0),
        vec![aff(&[1, 0], &[0, 0], 0), aff(&[0, 1], &[0, 0], 0)]
    );
    assert_eq!(
        components(&k, &k.inp_view, "v", 0),
        vec![aff(&[0, 1], &[0, 0], 0)]
    );
    assert_eq!(
        components(&k, &k.out_view, "w", 0),
        vec![aff(&[1, 0], &[0, 0], 0)]
    );
    assert_eq!(k.input_accesses().len(), 2);
    assert_eq!(k.output_accesses().len(), 1);
    assert_eq!(
        k.dim_kinds(),
        vec![crate::spec::DimKind::Cc, crate::spec::DimKind::Pw]
    );
}

#[test]
fn parse_clauses_any_order_and_vis() {
    let k = parse(quote! {
        pub(crate) kernel mv {
            md_hom[I, K](|m, x| m * x, (CC, PW(+))),
            inp_view(M: |i, k| (i, k), v: |i, k| (k)),
            out_view(w: |i, k| (i)),
            out(w: f32[I]),
            inp(M: f32[I, K], v: f32[K])
        }
    });
    assert_eq!(k.vis.to_string(), "pub (crate)");
    assert!(k.attrs.is_empty());
    assert_eq!(names(&k.size_params), ["I", "K"]);
    let k = parse(quote! {
        kernel mv {
            inp(M: f32[I, K], v: f32[K]), out(w: f32[I]), out_view(w: |i, k| (i)),
            md_hom[I, K](|m, x| m * x, (CC, PW(+))), inp_view(M: |i, k| (i, k), v: |i, k| k),
        }
    });
    assert!(k.vis.is_empty());
    assert_eq!(
        components(&k, &k.inp_view, "v", 0),
        vec![aff(&[0, 1], &[0, 0], 0)]
    );
}

#[test]
fn parse_jacobi1d() {
    // With a trailing comma in the access list.
    let source = crate::fixtures::JACOBI1D.replace("(i + 2)]", "(i + 2),]");
    let k = parse(crate::fixtures::tokens(&source));
    assert_eq!(names(&k.size_params), ["N"]);
    let v = &k.inp_view[0];
    assert_eq!(v.accesses.len(), 3);
    assert_eq!(v.accesses[2].components, vec![aff(&[1], &[0], 2)]);
    assert_eq!(names(&k.scalar_fn.params), ["a", "b", "c"]);
    assert_eq!(k.ops.len(), 1);
    assert_eq!(k.input_accesses().len(), 3);
}

#[test]
fn parse_conv2d_and_strided_mcc() {
    let k = parse(fixtures::tokens(&fixtures::example("conv2d")));
    assert_eq!(names(&k.size_params), ["P", "R", "Q", "S"]);
    assert_eq!(
        components(&k, &k.inp_view, "I", 0),
        vec![
            aff(&[1, 0, 1, 0], &[0; 4], 0),
            aff(&[0, 1, 0, 1], &[0; 4], 0)
        ]
    );
    let k = parse(quote! {
        kernel mcc {
            inp(I: f32[N, 2 * P + R - 1, 2 * Q + S - 1, C], F: f32[K, R, S, C]),
            out(O: f32[N, P, Q, K]),
            out_view(O: |n, p, q, k, r, s, c| (n, p, q, k)),
            md_hom[N, P, Q, K, R, S, C](|i, f| i * f, (CC, CC, CC, CC, PW(+), PW(+), PW(+))),
            inp_view(
                I: |n, p, q, k, r, s, c| (n, 2 * p + r, 2 * q + s, c),
                F: |n, p, q, k, r, s, c| (k, (K - 1 - r) * 1, -s + S - 1, c),
            ),
        }
    });
    assert_eq!(names(&k.size_params), ["N", "P", "R", "Q", "S", "C", "K"]);
    let i = components(&k, &k.inp_view, "I", 0);
    assert_eq!(i[1], aff(&[0, 2, 0, 0, 1, 0, 0], &[0; 7], 0));
    let f = components(&k, &k.inp_view, "F", 0);
    // K is size param index 6, S index 4.
    assert_eq!(
        f[1],
        aff(&[0, 0, 0, 0, -1, 0, 0], &[0, 0, 0, 0, 0, 0, 1], -1)
    );
    assert_eq!(
        f[2],
        aff(&[0, 0, 0, 0, 0, -1, 0], &[0, 0, 0, 0, 1, 0, 0], -1)
    );
    assert!(matches!(&k.inputs[0].shape[1], SizeExpr::Sub(..)));
}

#[test]
fn parse_generator_mandelbrot() {
    let k = parse(crate::fixtures::tokens(&crate::fixtures::example(
        "mandelbrot",
    )));
    assert!(k.inputs.is_empty());
    assert!(k.inp_view.is_empty());
    assert_eq!(k.params.len(), 1);
    assert_eq!(k.params[0].ty, ScalarType::U32);
    assert_eq!(
        names(k.scalar_fn.index_params.as_deref().unwrap()),
        ["y", "x"]
    );
    assert!(k.scalar_fn.params.is_empty());
    let ExprKind::Block(b) = &k.scalar_fn.body.kind else {
        panic!("block")
    };
    assert_eq!(b.stmts.len(), 6);
    assert!(matches!(&b.tail.as_ref().unwrap().kind, ExprKind::Var(v) if v == "n"));
    assert!(matches!(
        &b.stmts[1],
        Stmt::Let {
            ty: None,
            mutable: false,
            ..
        }
    ));
    assert!(matches!(&b.stmts[2], Stmt::Let { mutable: true,
        init: Some(Expr { kind: ExprKind::Lit(Lit::Float(v, None), _), .. }), .. } if *v == 0.0));
    let Stmt::Expr(Expr {
        kind: ExprKind::For(None, lo, hi, body, _),
        ..
    }) = &b.stmts[5]
    else {
        panic!("for loop")
    };
    assert!(matches!(lo.kind, ExprKind::Lit(Lit::Int(0, None), _)));
    assert!(matches!(&hi.kind, ExprKind::Var(v) if v == "max_iter"));
    assert_eq!(body.stmts.len(), 5);
    let Stmt::Expr(Expr {
        kind: ExprKind::If(_, then, None),
        ..
    }) = &body.stmts[0]
    else {
        panic!("if")
    };
    assert!(matches!(
        then.stmts[0],
        Stmt::Expr(Expr {
            kind: ExprKind::Break,
            ..
        })
    ));
    assert!(
        matches!(&body.stmts[4], Stmt::Expr(Expr { kind: ExprKind::Assign(n, Some(BinOp::Add), _, _), .. }) if n == "n")
    );
    assert!(
        matches!(&body.stmts[2], Stmt::Expr(Expr { kind: ExprKind::Assign(n, None, _, _), .. }) if n == "zi")
    );
    // A typed `let`, a suffixed literal, `2.` and `1e-3`.
    let k = parse(quote! {
        kernel lits { out(o: f32[N]), out_view(o: |i| (i)),
            md_hom[N](|[i]| { let a: f32 = 0.0f32; a - 2. * 1e-3 }, (CC)) }
    });
    let ExprKind::Block(b) = &k.scalar_fn.body.kind else {
        panic!("block")
    };
    assert!(
        matches!(&b.stmts[0], Stmt::Let { ty: Some(ScalarType::F32), mutable: false,
        init: Some(Expr { kind: ExprKind::Lit(Lit::Float(v, Some(ScalarType::F32)), _), .. }), .. } if *v == 0.0)
    );
    let ExprKind::Binary(BinOp::Sub, _, prod, _) = &b.tail.as_ref().unwrap().kind else {
        panic!("sub")
    };
    let ExprKind::Binary(BinOp::Mul, two, milli, _) = &prod.kind else {
        panic!("mul")
    };
    assert!(matches!(two.kind, ExprKind::Lit(Lit::Float(v, None), _) if v == 2.0));
    assert!(matches!(milli.kind, ExprKind::Lit(Lit::Float(v, None), _) if v == 1e-3));
    // Missing inp/inp_view clauses entirely is fine too.
    let k = parse(quote! {
        kernel gen { out(o: i32[N]), out_view(o: |i| i), md_hom[N](|[i]| i as i32, CC) }
    });
    assert!(k.inputs.is_empty());
    assert!(matches!(
        &k.scalar_fn.body.kind,
        ExprKind::Cast(_, ScalarType::I32, _)
    ));
}

#[test]
fn parse_reduce2_prl_scan() {
    let k = parse(quote! {
        kernel reduce2 {
            inp(x: f32[N]),
            out(s: f32[], m: f32[]),
            out_view(s: |i| (), m: |i| ()),
            md_hom[N](|a| (a, a.abs()), (PW(+, max),)),
            inp_view(x: |i| (i)),
        }
    });
    assert!(k.outputs[0].shape.is_empty());
    assert!(k.out_view[0].accesses[0].components.is_empty());
    let CombineOp::Pw(ops, _) = &k.ops[0] else {
        panic!("pw")
    };
    assert!(matches!(
        ops[..],
        [
            ReduceOp::Builtin(BuiltinOp::Add, _),
            ReduceOp::Builtin(BuiltinOp::Max, _)
        ]
    ));
    assert!(
        matches!(&k.scalar_fn.body.kind, ExprKind::Tuple(v) if v.len() == 2
        && matches!(&v[1].kind, ExprKind::MethodCall(_, Method::Abs, a, _) if a.is_empty()))
    );

    let k = parse(quote! {
        kernel prl {
            inp(a: f64[N, M]),
            out(b: f64[N]),
            out_view(b: |i, j| (i)),
            md_hom[N, M](|a| a, (CC, PW(|a, b| if a > b { a } else { b }))),
            inp_view(a: |i, j| (i, j)),
        }
    });
    let CombineOp::Pw(ops, _) = &k.ops[1] else {
        panic!("pw")
    };
    let ReduceOp::Closure(c) = &ops[0] else {
        panic!("closure")
    };
    assert_eq!(c.text, "|a,b|ifa>b{a}else{b}");
    assert_eq!(
        (c.lhs.to_string(), c.rhs.to_string()),
        ("a".into(), "b".into())
    );
    assert!(matches!(&c.body.kind, ExprKind::If(..)));

    for ops in [quote!(PS(+)), quote!((PS(+))), quote!((PS(+),))] {
        let k = parse(quote! {
            kernel scan {
                inp(x: i64[N]), out(y: i64[N]), out_view(y: |i| (i)),
                md_hom[N](|a| a, #ops), inp_view(x: |i| (i)),
            }
        });
        assert_eq!(k.ops.len(), 1);
        assert!(matches!(&k.ops[0], CombineOp::Ps(v, _) if v.len() == 1));
    }
}

#[test]
fn parse_params_and_expressions() {
    let k = parse(quote! {
        kernel saxpy {
            inp(x: f32[N], y: f32[N]),
            out(z: f32[N]),
            params(alpha: f32, shift: i32, on: bool),
            out_view(z: |i| (i)),
            md_hom[N](|x, y| {
                let t = alpha.mul_add(x, y);
                if on && !(shift >= 0 || N == 0) { -t } else if shift % 2 != 0 { t.max(0.0) } else { (t as f64).sqrt() as f32 }
            }, (CC)),
            inp_view(x: |i| (i), y: |_| (0)),
        }
    });
    assert_eq!(k.params.len(), 3);
    assert_eq!(k.params[2].ty, ScalarType::Bool);
    assert_eq!(names(&k.inp_view[1].accesses[0].params), ["__unused0"]);
    assert_eq!(
        k.inp_view[1].accesses[0].components,
        vec![aff(&[0], &[0], 0)]
    );
}

#[test]
fn errors() {
    let e = parse_err(quote! {
        kernel bad {
            inp(A: f32[I, K], B: f32[K, J]), out(C: f32[I, J]),
            out_view(C: |i, j, k| (i, j)),
            md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
            inp_view(A: |i, j, k| (i * k, k), B: |i, j, k| (k / 2, j)),
        }
    });
    assert!(e.contains("non-affine index expression `i * k`"), "{e}");
    assert!(e.contains("non-affine index expression `k / 2`"), "{e}");
    assert!(e.contains("must be affine"), "{e}");

    let e = parse_err(quote! {
        kernel bad { inp(A: f32[I, K]), out(C: f32[I]), out_view(C: |i, k| (i)),
            md_hom[I, K](|a| a, (CC, PW(+))), inp_view(A: |i, k| (i * K, k)) }
    });
    assert!(e.contains("non-affine index expression `i * K`"), "{e}");

    let e = parse_err(quote! {
        kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
            md_hom[I](|a| a, (CC)), inp_view(A: |i| (x)) }
    });
    assert!(e.contains("unknown name `x` in index function"), "{e}");

    let e = parse_err(quote! {
        kernel bad { inp(A: f32[I]), out(C: f32[I]), foo(x), out_view(C: |i| (i)),
            md_hom[I](|a| a, (CC)), inp_view(A: |i| (i)) }
    });
    assert!(e.contains("unknown clause `foo`"), "{e}");
    assert!(e.contains("md_hom[...](...)"), "{e}");
    assert!(!e.contains("did you mean"), "{e}");

    for (typo, want) in [
        ("input", "inp"),
        ("outview", "out_view"),
        ("param", "params"),
        ("mdhom", "md_hom"),
        ("Inp_View", "inp_view"),
    ] {
        let typo = Ident::new(typo, Span::call_site());
        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I]), out(C: f32[I]), #typo(x), out_view(C: |i| (i)),
                md_hom[I](|a| a, (CC)), inp_view(A: |i| (i)) }
        });
        assert!(
            e.contains(&format!("(did you mean `{want}`?); the clauses are")),
            "{e}"
        );
    }

    let e = parse_err(quote! {
        kernel bad { inp(A: f32[I]), out(C: f32[I]), params(s: i64), out_view(C: |i| (i)),
            md_hom[I](|a| a, (CC)), inp_view(A: |i| (i + s)) }
    });
    assert!(
        e.contains("`s` is a param, and params cannot be used in index functions; an index function may use only the closure's parameters (`i`) and size parameters (`I`)"),
        "{e}"
    );
}

#[test]
fn operator_and_scalar_function_errors() {
    for (op, sym) in [(quote!(-), "-"), (quote!(/), "/"), (quote!(%), "%")] {
        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I]), out(C: f32[]), out_view(C: |i| ()),
                md_hom[I](|a| a, (PW(#op))), inp_view(A: |i| (i)) }
        });
        assert!(
            e.contains(&format!("`{sym}` is not associative and commutative"))
                && e.contains("`+`, `*`, `max`, `min`"),
            "{e}"
        );
    }
    let e = parse_err(quote! {
        kernel bad { inp(A: bool[I]), out(C: bool[]), out_view(C: |i| ()),
            md_hom[I](|a| a, (PW(&&))), inp_view(A: |i| (i)) }
    });
    assert!(e.contains("write it as a closure `|a, b| a && b`"), "{e}");

    let e = parse_err(quote! {
        kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
            md_hom[I](|a| (|z: f32| z)(a), (CC)), inp_view(A: |i| (i)) }
    });
    assert!(
        e.contains("unsupported syntax in the scalar function: closures"),
        "{e}"
    );

    let e = parse_err(quote! {
        kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
            md_hom[I](|a| foo(a), (CC)), inp_view(A: |i| (i)) }
    });
    assert!(
        e.contains("unsupported syntax in the scalar function: function calls"),
        "{e}"
    );

    let e = parse_err(quote! {
        kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
            md_hom[I](|a| a, (CC)), inp_view(A: |i| (i)), inp(B: f32[I]) }
    });
    assert!(e.contains("duplicate `inp` clause"), "{e}");

    let e = parse_err(quote! {
        kernel bad { inp(A: usize[I]), out(C: f32[I]), out_view(C: |i| (i)),
            md_hom[I](|a| a, (XX)), inp_view(A: |i| (i)) }
    });
    assert!(e.contains("unknown combine operator `XX`"), "{e}");

    let e = parse_err(quote! {
        kernel bad { inp(A: usize[I]), out(C: f32[I]), out_view(C: |i| (i)),
            md_hom[I](|a| a.frob() + v[0] + s.0 + f32::MAX, (CC)), inp_view(A: |i| (i)) }
    });
    assert!(e.contains("`usize` is not a buffer element type"), "{e}");
    assert!(e.contains("the method `frob`"), "{e}");

    let e = parse_err(quote! {
        kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)), inp_view(A: |i| (i)) }
    });
    assert!(e.contains("has no `md_hom` clause"), "{e}");

    let cases: Vec<(TokenStream, &str)> = vec![
        (quote!(|a| a.powi()), "takes 1 argument"),
        (
            quote!(|a| {
                while a > 0.0 {}
                a
            }),
            "`while` loops",
        ),
        (
            quote!(|a| match a {
                _ => a,
            }),
            "`match`",
        ),
        (quote!(|a| "s"), "string literals"),
        (quote!(|a| v[0]), "indexing"),
        (quote!(|a| &a), "references"),
        (quote!(|a| a?), "`?` operator"),
        (
            quote!(|a| {
                for i in 0..=3 {}
                a
            }),
            "inclusive ranges",
        ),
        (
            quote!(|a| {
                return a;
            }),
            "`return`",
        ),
        (quote!(|a| println!("x")), "macros"),
        (quote!(|a: f32| a), "type annotations"),
        (quote!(|a| a << 1), "bitwise"),
        (
            quote!(|a| {
                let (x, y) = a;
                x
            }),
            "`let` pattern",
        ),
        (quote!(|a| a as String), "not a scalar type"),
    ];
    for (f, msg) in cases {
        let e = parse_err(quote! {
            kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
                md_hom[I](#f, (CC)), inp_view(A: |i| (i)) }
        });
        assert!(e.contains(msg), "{f}: {e}");
    }

    for (src, msg) in [
        (quote!(kernel), "expected the kernel's name"),
        (quote!(fn foo {}), "expected `kernel`"),
        (quote!(kernel fn {}), "Rust keyword"),
        (
            quote!(kernel k { inp(A: f32[I]) } extra),
            "unexpected tokens",
        ),
        (
            quote!(kernel k { inp(A: f32[I]); out(B: f32[I]) }),
            "expected `,`",
        ),
        (quote!(#[inline] kernel k {}), "only doc comments"),
        (quote!(kernel k {}), "has no `out` clause"),
        (quote!(), "expected `kernel NAME"),
    ] {
        let e = parse_err(src.clone());
        assert!(e.contains(msg), "{src}: {e}");
    }
}

#[test]
fn affine_overflow_is_an_error() {
    let e = parse_err(quote! {
        kernel bad { inp(A: f32[I]), out(C: f32[I]), out_view(C: |i| (i)),
            md_hom[I](|a| a, (CC)), inp_view(A: |i| (9223372036854775807 * 2 * i)) }
    });
    assert!(e.contains("overflows"), "{e}");
}

#[test]
fn roundtrip_source() {
    roundtrip(matvec());
    roundtrip(quote! {
        /// Doc line one.
        /// Doc line "two".
        pub(crate) kernel gen {
            out(o: f32[H, W]),
            params(s: f32),
            out_view(o: |y, x| (y, x)),
            md_hom[H, W](|[y, x]| { let mut a = 2.; for _ in 0..10 { a *= 1e-3; if a < 0.5f32 { break; } } a * s }, (CC, CC)),
        }
    });
    roundtrip(quote! {
        kernel r2 { inp(x: f32[N]), out(s: f32[], m: f32[]), out_view(s: |i| (), m: |i| ()),
            md_hom[N](|a| (a, a), (PW(+, |a, b| if a > b { a } else { b }))), inp_view(x: |i| i) }
    });
    // Doc comments written as `///` in source text.
    let src = "/// Hello\npub kernel k { out(o: f32[N]), out_view(o: |i| (i)), md_hom[N](|[i]| 1.0, (CC)) }";
    let k = parse(src.parse().unwrap());
    assert_eq!(k.attrs.len(), 1);
    roundtrip(src.parse().unwrap());
}

// ------------------------------------------------------------------------
// Fuzzing: the parser never panics.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const IDENTS: &[&str] = &[
    "kernel", "inp", "out", "params", "out_view", "inp_view", "md_hom", "CC", "PW", "PS", "f32",
    "f64", "usize", "bool", "i", "k", "I", "K", "a", "b", "max", "min", "pub", "let", "mut", "for",
    "in", "if", "else", "break", "as", "sqrt", "mul_add", "crate", "self", "fn", "_", "true",
    "while", "move",
];
const PUNCTS: &[char] = &[
    '+', '-', '*', '/', '%', '=', '<', '>', '!', '&', '|', ',', ';', ':', '.', '#', '?', '@', '^',
    '~',
];
const LITERALS: &[&str] = &[
    "0",
    "1",
    "2.",
    "1e-3",
    "3f32",
    "7u8",
    "0xFF",
    "1.5f64",
    "\"s\"",
    "'c'",
    "340282366920938463463374607431768211456",
    "9223372036854775808",
    "1e999",
    "2usize",
];

fn random_tree(rng: &mut Rng, depth: usize) -> TokenStream {
    let n = rng.below(10);
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(random_token(rng, depth));
    }
    out.into_iter().collect()
}

fn random_token(rng: &mut Rng, depth: usize) -> TokenTree {
    match rng.below(if depth >= 4 { 3 } else { 4 }) {
        0 => {
            let s = IDENTS[rng.below(IDENTS.len())];
            TokenTree::Ident(if s == "_" {
                Ident::new("a_", Span::call_site())
            } else {
                Ident::new(s, Span::call_site())
            })
        }
        1 => {
            let spacing = if rng.below(3) == 0 {
                Spacing::Joint
            } else {
                Spacing::Alone
            };
            TokenTree::Punct(Punct::new(PUNCTS[rng.below(PUNCTS.len())], spacing))
        }
        2 => {
            let l: Literal = LITERALS[rng.below(LITERALS.len())]
                .parse()
                .unwrap_or_else(|_| Literal::u8_unsuffixed(1));
            TokenTree::Literal(l)
        }
        _ => {
            let d = [
                Delimiter::Parenthesis,
                Delimiter::Bracket,
                Delimiter::Brace,
                Delimiter::None,
            ][rng.below(4)];
            TokenTree::Group(Group::new(d, random_tree(rng, depth + 1)))
        }
    }
}

fn mutate(ts: TokenStream, rng: &mut Rng, rate: usize) -> TokenStream {
    let mut v: Vec<TokenTree> = ts.into_iter().collect();
    let mut i = 0;
    while i < v.len() {
        if rng.below(rate) == 0 {
            match rng.below(5) {
                0 => {
                    v.remove(i);
                    continue;
                }
                1 => {
                    let t = v[i].clone();
                    v.insert(i, t);
                    i += 1;
                }
                2 => {
                    let j = rng.below(v.len());
                    v.swap(i, j);
                }
                3 => v[i] = random_token(rng, 3),
                _ => v.insert(i, random_token(rng, 3)),
            }
        }
        if let Some(TokenTree::Group(g)) = v.get(i) {
            let ng = Group::new(g.delimiter(), mutate(g.stream(), rng, rate));
            v[i] = TokenTree::Group(ng);
        }
        i += 1;
    }
    v.into_iter().collect()
}

fn no_panic(ts: TokenStream) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _ = parse_kernel(ts);
    }))
    .is_ok()
}

#[test]
fn fuzz_random_token_trees_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut panics = 0;
    for round in 0..4000 {
        let body = random_tree(&mut rng, 0);
        let ts = match round % 4 {
            0 => body,
            1 => quote!(kernel k { #body }),
            2 => {
                quote!(kernel k { inp(#body), out(o: f32[N]), out_view(o: |i| (i)), md_hom[N](|a| a, (CC)) })
            }
            _ => quote!(kernel k { out(o: f32[N]), out_view(o: |i| (i)), md_hom[N](#body) }),
        };
        if !no_panic(ts) {
            panics += 1;
        }
    }
    assert_eq!(panics, 0);
}

#[test]
fn fuzz_mutated_kernels_never_panic() {
    let seeds = [
        matvec(),
        quote! {
            kernel mcc {
                inp(I: f32[N, 2 * P + R - 1, 2 * Q + S - 1, C], F: f32[K, R, S, C]),
                out(O: f32[N, P, Q, K]),
                params(alpha: f32),
                out_view(O: |n, p, q, k, r, s, c| (n, p, q, k)),
                md_hom[N, P, Q, K, R, S, C](|i, f| i * f * alpha, (CC, CC, CC, CC, PW(+), PW(+), PW(|a, b| a + b))),
                inp_view(I: |n, p, q, k, r, s, c| (n, 2 * p + r, 2 * q + s, c), F: [|n, p, q, k, r, s, c| (K - 1 - k, r, s, c)]),
            }
        },
        quote! {
            kernel gen {
                out(o: u32[H, W]),
                out_view(o: |y, x| (y, x)),
                md_hom[H, W](|[y, x]| { let mut n = 0u32; for _ in 0..100 { if n > 3 { break; } n += 1; } (n as f32).sqrt() as u32 }, (CC, PS(+, max))),
                inp_view(),
            }
        },
    ];
    let mut rng = Rng(12345);
    let mut panics = 0;
    let mut ok = 0;
    for round in 0..6000 {
        let seed = seeds[round % seeds.len()].clone();
        let rate = 2 + rng.below(30);
        let ts = mutate(seed, &mut rng, rate);
        let ts2 = ts.clone();
        if !no_panic(ts) {
            panics += 1;
        } else if parse_kernel(ts2).is_ok() {
            ok += 1;
        }
    }
    assert_eq!(panics, 0);
    // Light mutations leave some kernels valid.
    assert!(ok > 0);
}
