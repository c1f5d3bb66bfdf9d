use super::*;
use crate::fixtures;
use proc_macro2::TokenStream;
use quote::quote;

fn kernel(ts: TokenStream) -> crate::Checked {
    crate::compile(ts).unwrap_or_else(|e| panic!("the kernel does not compile: {e}"))
}

/// Size values by name, in the kernel's size-parameter order.
fn sizes(k: &crate::Checked, named: &[(&str, usize)]) -> Vec<usize> {
    k.size_params
        .iter()
        .map(|s| {
            named
                .iter()
                .find(|(n, _)| *s == *n)
                .unwrap_or_else(|| panic!("no value for size `{s}`"))
                .1
        })
        .collect()
}

/// Runs `k` and returns its outputs.
fn exec(
    k: &crate::Checked,
    named: &[(&str, usize)],
    inputs: &[Buffer],
    mut outputs: Vec<Buffer>,
    params: &[Value],
) -> Vec<Buffer> {
    run(k, &sizes(k, named), inputs, &mut outputs, params).unwrap_or_else(|e| panic!("{e}"));
    outputs
}

/// Deterministic data: small values (some negative) from an LCG.
fn ints(n: usize, seed: u64) -> Vec<i32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % 19) as i32 - 9
        })
        .collect()
}

fn floats(n: usize, seed: u64) -> Vec<f32> {
    ints(n, seed).into_iter().map(|x| x as f32 * 0.37).collect()
}

#[test]
fn interp_matvec() {
    let k = fixtures::matvec();
    for (ni, nk) in [(1, 1), (13, 17), (4, 1), (1, 9)] {
        let (m, v) = (floats(ni * nk, 1), floats(nk, 2));
        let out = exec(
            &k,
            &[("I", ni), ("K", nk)],
            &[m.clone().into(), v.clone().into()],
            vec![Buffer::zeros(ScalarType::F32, ni)],
            &[],
        );
        let mut w = vec![0.0f32; ni];
        for i in 0..ni {
            for kk in 0..nk {
                w[i] += m[i * nk + kk] * v[kk];
            }
        }
        assert_eq!(out[0].as_f32().unwrap(), &w[..], "I={ni} K={nk}");
    }
}

#[test]
fn interp_matmul_primes() {
    let k = fixtures::compiled(&fixtures::in_f64(fixtures::MATMUL));
    let (ni, nj, nk) = (7, 11, 13);
    let a: Vec<f64> = floats(ni * nk, 3).into_iter().map(f64::from).collect();
    let b: Vec<f64> = floats(nk * nj, 4).into_iter().map(f64::from).collect();
    let out = exec(
        &k,
        &[("I", ni), ("J", nj), ("K", nk)],
        &[a.clone().into(), b.clone().into()],
        vec![Buffer::zeros(ScalarType::F64, ni * nj)],
        &[],
    );
    let mut c = vec![0.0f64; ni * nj];
    for i in 0..ni {
        for j in 0..nj {
            for kk in 0..nk {
                c[i * nj + j] += a[i * nk + kk] * b[kk * nj + j];
            }
        }
    }
    assert_eq!(out[0].as_f64().unwrap(), &c[..]);
}

fn dot() -> crate::Checked {
    fixtures::compiled(&fixtures::example("dot"))
}

#[test]
fn interp_dot() {
    let k = dot();
    for n in [1, 2, 101] {
        let (a, b) = (floats(n, 5), floats(n, 6));
        let out = exec(
            &k,
            &[("N", n)],
            &[a.clone().into(), b.clone().into()],
            vec![vec![7.0f32].into()],
            &[],
        );
        let mut s = 0.0f32;
        for i in 0..n {
            s += a[i] * b[i];
        }
        assert_eq!(out[0].as_f32().unwrap(), &[s]);
    }
}

#[test]
fn interp_jacobi1d() {
    let k = fixtures::compiled(fixtures::JACOBI1D);
    let n = 29;
    let v = floats(n + 2, 7);
    let out = exec(
        &k,
        &[("N", n)],
        &[v.clone().into()],
        vec![Buffer::zeros(ScalarType::F32, n)],
        &[],
    );
    let w: Vec<f32> = (0..n).map(|i| (v[i] + v[i + 1] + v[i + 2]) / 3.0).collect();
    assert_eq!(out[0].as_f32().unwrap(), &w[..]);
}

fn reduce2() -> crate::Checked {
    fixtures::compiled(&fixtures::in_type(&fixtures::example("reduce2"), "i32"))
}

#[test]
fn interp_reduce2_wraps() {
    let k = reduce2();
    let mut a = ints(50, 8);
    a[3] = i32::MAX;
    a[7] = i32::MAX - 5;
    let out = exec(
        &k,
        &[("N", a.len())],
        &[a.clone().into()],
        vec![vec![0i32].into(), vec![0i32].into()],
        &[],
    );
    let s = a.iter().fold(0i32, |s, &x| s.wrapping_add(x));
    assert_eq!(out[0].as_i32().unwrap(), &[s]);
    assert_eq!(out[1].as_i32().unwrap(), &[i32::MAX]);
}

#[test]
fn interp_scan() {
    let k = fixtures::compiled(&fixtures::in_type(&fixtures::example("scan"), "i64"));
    let a: Vec<i64> = ints(37, 9).into_iter().map(i64::from).collect();
    let out = exec(
        &k,
        &[("N", a.len())],
        &[a.clone().into()],
        vec![Buffer::zeros(ScalarType::I64, a.len())],
        &[],
    );
    let want: Vec<i64> = a
        .iter()
        .scan(0, |s, &x| {
            *s += x;
            Some(*s)
        })
        .collect();
    assert_eq!(out[0].as_i64().unwrap(), &want[..]);
}

#[test]
fn interp_mbbs() {
    let k = fixtures::compiled(&fixtures::in_type(&fixtures::example("mbbs"), "i32"));
    let (ni, nj) = (11, 5);
    let a = ints(ni * nj, 10);
    let out = exec(
        &k,
        &[("I", ni), ("J", nj)],
        &[a.clone().into()],
        vec![Buffer::zeros(ScalarType::I32, ni)],
        &[],
    );
    let mut want = vec![0i32; ni];
    let mut run = 0;
    for i in 0..ni {
        run += a[i * nj..(i + 1) * nj].iter().sum::<i32>();
        want[i] = run;
    }
    assert_eq!(out[0].as_i32().unwrap(), &want[..]);
}

#[test]
fn interp_histogram() {
    let k = fixtures::compiled(&fixtures::example("histo"));
    let (ne, nb) = (97, 6);
    let e: Vec<u32> = ints(ne, 11)
        .into_iter()
        .map(|x| x.unsigned_abs() % 7)
        .collect();
    let bins: Vec<u32> = (0..nb as u32).collect();
    let out = exec(
        &k,
        &[("E", ne), ("B", nb)],
        &[e.clone().into(), bins.into()],
        vec![Buffer::zeros(ScalarType::U32, nb)],
        &[],
    );
    let mut want = vec![0u32; nb];
    for &x in &e {
        if (x as usize) < nb {
            want[x as usize] += 1;
        }
    }
    assert_eq!(out[0].as_u32().unwrap(), &want[..]);
}

#[test]
fn interp_custom_operators() {
    // Max by a user-defined PW operator.
    let k = kernel(quote! {
        kernel cmax {
            inp(a: i32[I, K]),
            out(o: i32[I]),
            out_view(o: |i, k| (i)),
            md_hom[I, K](|x| x * x, (CC, PW(|p, q| if p > q { p } else { q }))),
            inp_view(a: |i, k| (i, k)),
        }
    });
    let (ni, nk) = (5, 9);
    let a = ints(ni * nk, 12);
    let out = exec(
        &k,
        &[("I", ni), ("K", nk)],
        &[a.clone().into()],
        vec![Buffer::zeros(ScalarType::I32, ni)],
        &[],
    );
    let want: Vec<i32> = (0..ni)
        .map(|i| a[i * nk..(i + 1) * nk].iter().map(|x| x * x).max().unwrap())
        .collect();
    assert_eq!(out[0].as_i32().unwrap(), &want[..]);
    // Empty reduction with a user-defined operator.
    let mut o = vec![Buffer::zeros(ScalarType::I32, ni)];
    let r = run(
        &k,
        &sizes(&k, &[("I", ni), ("K", 0)]),
        &[Buffer::zeros(ScalarType::I32, 0)],
        &mut o,
        &[],
    );
    assert_eq!(
        r,
        Err(Error::EmptyReduction {
            kernel: "cmax".into(),
            dim: 1
        })
    );

    // A non-commutative (but associative) PS operator shows the order: a
    // left fold in index order.
    let k = kernel(quote! {
        kernel lscan {
            inp(a: i64[N]),
            out(o: i64[N]),
            out_view(o: |i| (i)),
            md_hom[N](|x| x, (PS(|p, q| p * 10 + q))),
            inp_view(a: |i| (i)),
        }
    });
    let a: Vec<i64> = vec![1, 2, 3, 4];
    let out = exec(
        &k,
        &[("N", 4)],
        &[a.into()],
        vec![Buffer::zeros(ScalarType::I64, 4)],
        &[],
    );
    assert_eq!(out[0].as_i64().unwrap(), &[1, 12, 123, 1234]);
}

#[test]
fn interp_empty_reductions() {
    let k = dot();
    let out = exec(
        &k,
        &[("N", 0)],
        &[vec![0f32; 0].into(), vec![0f32; 0].into()],
        vec![vec![7.0f32].into()],
        &[],
    );
    assert_eq!(out[0].as_f32().unwrap(), &[0.0]);
    let k = reduce2();
    let out = exec(
        &k,
        &[("N", 0)],
        &[vec![0i32; 0].into()],
        vec![vec![5i32].into(), vec![5i32].into()],
        &[],
    );
    assert_eq!(out[0].as_i32().unwrap(), &[0]);
    assert_eq!(out[1].as_i32().unwrap(), &[i32::MIN]);
    // An empty kept dimension writes nothing (and refuses nothing).
    let k = fixtures::matvec();
    let out = exec(
        &k,
        &[("I", 0), ("K", 3)],
        &[vec![0f32; 0].into(), vec![1f32; 3].into()],
        vec![vec![0f32; 0].into()],
        &[],
    );
    assert!(out[0].is_empty());
    let k = kernel(quote! {
        kernel part {
            inp(a: f32[N]),
            out(w: f32[M]),
            out_view(w: |i, k| (i)),
            md_hom[N, K](|x| x, (CC, PW(max))),
            inp_view(a: |i, k| (i)),
        }
    });
    // Elements the view does not write keep their values.
    let out = exec(
        &k,
        &[("N", 2), ("M", 4), ("K", 1)],
        &[vec![1f32, 2.0].into()],
        vec![vec![9f32; 4].into()],
        &[],
    );
    assert_eq!(out[0].as_f32().unwrap(), &[1.0, 2.0, 9.0, 9.0]);
    let out = exec(
        &k,
        &[("N", 2), ("M", 4), ("K", 0)],
        &[vec![1f32, 2.0].into()],
        vec![vec![9f32; 4].into()],
        &[],
    );
    assert_eq!(
        out[0].as_f32().unwrap(),
        &[f32::NEG_INFINITY, f32::NEG_INFINITY, 9.0, 9.0]
    );
    let out = exec(
        &k,
        &[("N", 0), ("M", 4), ("K", 0)],
        &[vec![0f32; 0].into()],
        vec![vec![9f32; 4].into()],
        &[],
    );
    assert_eq!(out[0].as_f32().unwrap(), &[9.0; 4]);
}

#[test]
fn interp_bad_arguments() {
    let k = fixtures::matvec();
    let s = sizes(&k, &[("I", 3), ("K", 4)]);
    let good_in = || vec![Buffer::from(vec![0f32; 12]), Buffer::from(vec![0f32; 4])];
    // Wrong length.
    let mut o = vec![Buffer::from(vec![0f32; 3])];
    let r = run(
        &k,
        &s,
        &[vec![0f32; 11].into(), vec![0f32; 4].into()],
        &mut o,
        &[],
    );
    assert!(
        matches!(
            r,
            Err(Error::BufferLength {
                expected: 12,
                actual: 11,
                ..
            })
        ),
        "{r:?}"
    );
    let mut o = vec![Buffer::from(vec![0f32; 4])];
    assert!(matches!(
        run(&k, &s, &good_in(), &mut o, &[]),
        Err(Error::BufferLength { .. })
    ));
    // Wrong element type.
    let mut o = vec![Buffer::from(vec![0f64; 3])];
    assert!(
        matches!(run(&k, &s, &good_in(), &mut o, &[]), Err(Error::Argument(m)) if m.contains("`w`") && m.contains("f64"))
    );
    // Wrong counts.
    let mut o = vec![Buffer::from(vec![0f32; 3])];
    assert!(matches!(
        run(&k, &s, &good_in()[..1], &mut o, &[]),
        Err(Error::Argument(_))
    ));
    assert!(matches!(
        run(&k, &s[..1], &good_in(), &mut o, &[]),
        Err(Error::Argument(_))
    ));
    assert!(matches!(
        run(&k, &s, &good_in(), &mut o, &[Value::F32(1.0)]),
        Err(Error::Argument(_))
    ));
    assert!(run(&k, &s, &good_in(), &mut o, &[]).is_ok());
}

#[test]
fn interp_params_sizes_and_index_params() {
    let k = kernel(quote! {
        kernel affine {
            inp(a: f32[N]),
            out(w: f32[N]),
            params(alpha: f32, shift: i32),
            out_view(w: |i| (i)),
            md_hom[N](|[i], x| x * alpha + (i as i32 + shift) as f32 + N as f32, (CC)),
            inp_view(a: |i| (i)),
        }
    });
    let a = floats(10, 13);
    let out = exec(
        &k,
        &[("N", 10)],
        &[a.clone().into()],
        vec![Buffer::zeros(ScalarType::F32, 10)],
        &[Value::F32(1.5), Value::I32(-3)],
    );
    let want: Vec<f32> = (0..10)
        .map(|i| a[i] * 1.5 + (i as i32 - 3) as f32 + 10.0)
        .collect();
    assert_eq!(out[0].as_f32().unwrap(), &want[..]);
    let mut o = vec![Buffer::zeros(ScalarType::F32, 10)];
    let r = run(
        &k,
        &[10],
        &[a.into()],
        &mut o,
        &[Value::F64(1.5), Value::I32(-3)],
    );
    assert!(matches!(r, Err(Error::Argument(m)) if m.contains("alpha")));
}

#[test]
fn interp_integer_semantics() {
    let k = kernel(quote! {
        kernel ints {
            inp(a: i32[N], b: i32[N], f: f32[N]),
            out(q: i32[N], r: i32[N], c: u8[N], d: i8[N]),
            out_view(q: |i| (i), r: |i| (i), c: |i| (i), d: |i| (i)),
            md_hom[N](|x, y, z| (x / y, (x * 3) % y, z as u8, (x as i8).abs()), (CC)),
            inp_view(a: |i| (i), b: |i| (i), f: |i| (i)),
        }
    });
    let a = vec![i32::MIN, 7, -7, 1 << 30, 128];
    let b = vec![-1, 2, 2, 5, 3];
    let f = vec![-1.5f32, 300.0, f32::NAN, 2.7, 255.9];
    let outs = vec![
        Buffer::zeros(ScalarType::I32, 5),
        Buffer::zeros(ScalarType::I32, 5),
        Buffer::zeros(ScalarType::U8, 5),
        Buffer::zeros(ScalarType::I8, 5),
    ];
    let out = exec(
        &k,
        &[("N", 5)],
        &[a.clone().into(), b.clone().into(), f.clone().into()],
        outs,
        &[],
    );
    let q: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_div(*y)).collect();
    let r: Vec<i32> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| x.wrapping_mul(3).wrapping_rem(*y))
        .collect();
    let c: Vec<u8> = f.iter().map(|&z| z as u8).collect();
    let d: Vec<i8> = a.iter().map(|&x| (x as i8).wrapping_abs()).collect();
    assert_eq!(out[0].as_i32().unwrap(), &q[..]);
    assert_eq!(out[1].as_i32().unwrap(), &r[..]);
    assert_eq!(out[2].as_u8().unwrap(), &c[..]);
    assert_eq!(out[3].as_i8().unwrap(), &d[..]);
    // Division by zero is defined: 0, like the generated code's (the
    // outputs start at 7, so that a skipped write cannot pass).
    let mut o = vec![
        Buffer::I32(vec![7]),
        Buffer::I32(vec![7]),
        Buffer::zeros(ScalarType::U8, 1),
        Buffer::zeros(ScalarType::I8, 1),
    ];
    let r = run(
        &k,
        &[1],
        &[vec![1i32].into(), vec![0i32].into(), vec![0f32].into()],
        &mut o,
        &[],
    );
    assert!(r.is_ok(), "{r:?}");
    assert_eq!(o[0].as_i32().unwrap(), &[0]);
    assert_eq!(o[1].as_i32().unwrap(), &[0]);
}

#[test]
fn interp_float_methods_in_own_precision() {
    let k = kernel(quote! {
        kernel meth {
            inp(a: f32[N], b: f64[N]),
            out(x: f32[N], y: f64[N]),
            out_view(x: |i| (i), y: |i| (i)),
            md_hom[N](|p, q| (
                p.abs().sqrt().mul_add(p.sin(), p.cos()).max(p.tanh()) + p.exp().ln() * p.powi(3) - p.abs().powf(0.5) + p.floor() * p.ceil() + p.min(0.1) / 3.0,
                q.abs().sqrt().mul_add(q.sin(), q.cos()).max(q.tanh()) + q.exp().ln() * q.powi(3) - q.abs().powf(0.5) + q.floor() * q.ceil() + q.min(0.1) / 3.0
            ), (CC)),
            inp_view(a: |i| (i), b: |i| (i)),
        }
    });
    let a = floats(16, 14);
    let b: Vec<f64> = a.iter().map(|&x| x as f64 * 1.1).collect();
    let outs = vec![
        Buffer::zeros(ScalarType::F32, 16),
        Buffer::zeros(ScalarType::F64, 16),
    ];
    let out = exec(
        &k,
        &[("N", 16)],
        &[a.clone().into(), b.clone().into()],
        outs,
        &[],
    );
    let x: Vec<f32> = a
        .iter()
        .map(|&p| {
            p.abs().sqrt().mul_add(p.sin(), p.cos()).max(p.tanh()) + p.exp().ln() * p.powi(3)
                - p.abs().powf(0.5)
                + p.floor() * p.ceil()
                + p.min(0.1) / 3.0
        })
        .collect();
    let y: Vec<f64> = b
        .iter()
        .map(|&q| {
            q.abs().sqrt().mul_add(q.sin(), q.cos()).max(q.tanh()) + q.exp().ln() * q.powi(3)
                - q.abs().powf(0.5)
                + q.floor() * q.ceil()
                + q.min(0.1) / 3.0
        })
        .collect();
    assert_eq!(out[0].as_f32().unwrap(), &x[..]);
    assert_eq!(out[1].as_f64().unwrap(), &y[..]);
}

// Unit tests of the value layer (independent of the parser).

#[test]
fn interp_value_ops() {
    assert_eq!(
        binary(BinOp::Add, Value::I8(127), Value::I8(1)),
        Ok(Value::I8(-128))
    );
    assert_eq!(
        binary(BinOp::Div, Value::I32(i32::MIN), Value::I32(-1)),
        Ok(Value::I32(i32::MIN))
    );
    assert_eq!(
        binary(BinOp::Rem, Value::U8(1), Value::U8(0)),
        Ok(Value::U8(0))
    );
    assert_eq!(
        binary(BinOp::Div, Value::I64(-5), Value::I64(0)),
        Ok(Value::I64(0))
    );
    assert_eq!(
        binary(BinOp::Div, Value::F32(1.0), Value::F32(0.0)),
        Ok(Value::F32(f32::INFINITY))
    );
    assert_eq!(
        binary(BinOp::Add, Value::F32(16777216.0), Value::F32(1.0)),
        Ok(Value::F32(16777216.0))
    );
    assert_eq!(
        binary(BinOp::Lt, Value::U32(1), Value::U32(2)),
        Ok(Value::Bool(true))
    );
    assert!(binary(BinOp::Add, Value::F32(1.0), Value::F64(1.0)).is_err());
    assert_eq!(
        unary(UnOp::Neg, Value::I32(i32::MIN)),
        Ok(Value::I32(i32::MIN))
    );
    assert_eq!(unary(UnOp::Not, Value::U8(1)), Ok(Value::U8(254)));
    assert_eq!(
        method(Value::I16(i16::MIN), Method::Abs, &[]),
        Ok(Value::I16(i16::MIN))
    );
    assert_eq!(
        method(Value::F32(f32::NAN), Method::Max, &[Value::F32(1.0)]),
        Ok(Value::F32(1.0))
    );
    assert_eq!(
        method(Value::F32(2.0), Method::Powi, &[Value::I32(10)]),
        Ok(Value::F32(1024.0))
    );
    assert_eq!(
        neutral(BuiltinOp::Max, ScalarType::U16),
        Some(Value::U16(0))
    );
    assert_eq!(
        neutral(BuiltinOp::Min, ScalarType::F64),
        Some(Value::F64(f64::INFINITY))
    );
    assert_eq!(neutral(BuiltinOp::Mul, ScalarType::I8), Some(Value::I8(1)));
    assert_eq!(
        literal(&Lit::Int(3, None), ScalarType::F32),
        Ok(Value::F32(3.0))
    );
    assert_eq!(
        literal(&Lit::Float(0.1, None), ScalarType::F32),
        Ok(Value::F32(0.1))
    );
    assert_eq!(Value::F32(1.0).to_string(), "1.0");
}

#[test]
fn interp_buffer_api() {
    let mut b = Buffer::zeros(ScalarType::U16, 3);
    assert_eq!((b.ty(), b.len()), (ScalarType::U16, 3));
    b.set(1, Value::U16(7));
    assert_eq!(b.get(1), Value::U16(7));
    assert_eq!(b.as_u16(), Some(&[0u16, 7, 0][..]));
    assert_eq!(b.as_f32(), None);
    b.as_u16_mut().unwrap()[2] = 9;
    assert_eq!(b, Buffer::from(vec![0u16, 7, 9]));
    assert_eq!(Buffer::from(vec![true]).get(0), Value::Bool(true));
    assert_eq!(Value::from(2.5f64).ty(), ScalarType::F64);
}

/// `f16` and `bf16` compute in f32 and round every result to the type: an
/// f16 sum of 2048 and ones stays 2048 (2049 rounds to even), the same
/// values widened `as f32` sum exactly; methods and literals round alike.
#[test]
fn interp_half_rounds_every_operation() {
    let sum = |body: TokenStream, out: TokenStream| {
        kernel(quote! {
            kernel s {
                inp(x: f16[N]),
                out(y: #out[]),
                out_view(y: |n| ()),
                md_hom[N](#body, (PW(+))),
                inp_view(x: |n| (n)),
            }
        })
    };
    let x: Vec<f16> = [2048.0f32, 1.0, 1.0].map(f16::from_f32).to_vec();
    let k = sum(quote!(|v| v), quote!(f16));
    let out = exec(
        &k,
        &[("N", 3)],
        &[x.clone().into()],
        vec![Buffer::zeros(ScalarType::F16, 1)],
        &[],
    );
    assert_eq!(out[0].as_f16().unwrap(), &[f16::from_f32(2048.0)]);
    let k = sum(quote!(|v| v as f32), quote!(f32));
    let out = exec(
        &k,
        &[("N", 3)],
        &[x.into()],
        vec![Buffer::zeros(ScalarType::F32, 1)],
        &[],
    );
    assert_eq!(out[0].as_f32().unwrap(), &[2050.0]);
    assert_eq!(
        method(Value::Bf16(bf16::from_f32(2.0)), Method::Sqrt, &[]),
        Ok(Value::Bf16(bf16::from_f32(2f32.sqrt())))
    );
    assert_eq!(
        literal(&Lit::Float(0.1, None), ScalarType::F16),
        Ok(Value::F16(f16::from_f32(0.1)))
    );
    assert_eq!(
        neutral(BuiltinOp::Max, ScalarType::Bf16),
        Some(Value::Bf16(bf16::NEG_INFINITY))
    );
}
