//! Kernels that are not among the examples, written only against the
//! syntax contract (DESIGN.md §1) and called through the public
//! `NAME::opencl::run(&Device, …)`, compared with the reference interpreter
//! (integer division by zero included: every back end and the interpreter
//! define it as 0): 2-D PS, a
//! non-commutative PS operator, bool / f64 / i8 / u8 / i64 elements,
//! params, `for` loops with `break`, integer division, several outputs
//! `PW(+, max)`, sizes 1 and primes. Their CUDA C (the same emitter's other
//! dialect) compiles with NVRTC without a warning.
//!
//! Without an OpenCL device (NVRTC) the tests print why and pass, unless
//! `MDH_REQUIRE_OPENCL=1` (`MDH_REQUIRE_NVRTC=1`).

#[allow(dead_code, unused_macros)]
mod gpu;

use mdh::mdh;
use mdh::opencl::Device;
use mdh::reference::{Buffer, Value};
use mdh_core::spec::ScalarType;
use mdh_examples::check::{self, Rng};

fn device() -> Option<&'static Device> {
    gpu::opencl_device()
}

/// Sizes of 1-D cases: 1, primes, and one larger than a work-group.
const SIZES: [usize; 6] = [1, 2, 7, 13, 31, 257];
/// Sizes of each dimension of 2-D cases.
const SIZES_2D: [usize; 4] = [1, 3, 7, 29];

/// Compares one call's outputs with the reference interpreter's.
fn check(
    what: &str,
    spec: &str,
    sizes: &[usize],
    inputs: &[Buffer],
    params: &[Value],
    got: Vec<Buffer>,
) {
    let points: usize = sizes.iter().product();
    if let Err(e) = check::against_reference(
        what,
        spec,
        sizes,
        inputs,
        params,
        &got,
        check::sum_rtol(points),
    ) {
        panic!("{e}");
    }
}

fn random(rng: &mut Rng, t: ScalarType, n: usize) -> Buffer {
    gpu::random_buffer(rng, t, n)
}

mdh! {
    /// Summed-area table: inclusive prefix sums along both dimensions.
    kernel sat {
        inp(a: i32[I, J]),
        out(s: i32[I, J]),
        out_view(s: |i, j| (i, j)),
        md_hom[I, J](|x| x, (PS(+), PS(+))),
        inp_view(a: |i, j| (i, j)),
    }
}

#[test]
fn two_dimensional_prefix_sum() {
    let Some(dev) = device() else { return };
    let mut rng = Rng::new(1);
    for i in SIZES_2D {
        for j in SIZES_2D {
            let a = random(&mut rng, ScalarType::I32, i * j);
            let mut s = vec![0i32; i * j];
            sat::opencl::run(dev, a.as_i32().unwrap(), &mut s, sat::Sizes { I: i, J: j })
                .expect("runs");
            check("sat", sat::SPEC, &[i, j], &[a], &[], vec![s.into()]);
        }
    }
}

mdh! {
    /// Composition of affine maps `x ↦ a·x + b (mod 256)`, each encoded as
    /// `a · 256 + b`: `o[i] = f_i ∘ … ∘ f_0`. Associative, not commutative.
    kernel affine {
        inp(f: u32[N]),
        out(o: u32[N]),
        out_view(o: |i| (i)),
        md_hom[N](
            |x| x,
            (PS(|p, c| {
                let pa = p / 256;
                let pb = p % 256;
                let ca = c / 256;
                let cb = c % 256;
                (ca * pa % 256) * 256 + (ca * pb + cb) % 256
            }))
        ),
        inp_view(f: |i| (i)),
    }
}

#[test]
fn non_commutative_prefix_scan() {
    let Some(dev) = device() else { return };
    let mut rng = Rng::new(2);
    for n in SIZES {
        let f: Vec<u32> = (0..n).map(|_| rng.below(65536) as u32).collect();
        let mut o = vec![0u32; n];
        affine::opencl::run(dev, &f, &mut o, affine::Sizes { N: n }).expect("runs");
        // The composition by hand: the order of operands matters.
        let mut acc = f[0];
        for (i, &c) in f.iter().enumerate().skip(1) {
            let (pa, pb, ca, cb) = (acc / 256, acc % 256, c / 256, c % 256);
            acc = (ca * pa % 256) * 256 + (ca * pb + cb) % 256;
            assert_eq!(o[i], acc, "N = {n}, element {i}");
        }
        check(
            "affine",
            affine::SPEC,
            &[n],
            &[f.into()],
            &[],
            vec![o.into()],
        );
    }
}

mdh! {
    /// i8, u8 and f64 inputs; an i64 sum and an f64 maximum in one pass.
    kernel typed {
        inp(a: i8[N], b: u8[N], c: f64[N]),
        out(s: i64[], m: f64[]),
        out_view(s: |i| (), m: |i| ()),
        md_hom[N](|x, y, z| (x as i64 * y as i64 - 3, z * x as f64), (PW(+, max))),
        inp_view(a: |i| (i), b: |i| (i), c: |i| (i)),
    }
}

mdh! {
    /// Row sums and row maxima of a matrix (`CC`, then `PW(+, max)`).
    kernel rows {
        inp(x: i64[I, K]),
        out(s: i64[I], m: i64[I]),
        out_view(s: |i, k| (i), m: |i, k| (i)),
        md_hom[I, K](|v| (v, v * v), (CC, PW(+, max))),
        inp_view(x: |i, k| (i, k)),
    }
}

#[test]
fn element_types_and_several_outputs() {
    let Some(dev) = device() else { return };
    let mut rng = Rng::new(3);
    for n in SIZES {
        let a = random(&mut rng, ScalarType::I8, n);
        let b = random(&mut rng, ScalarType::U8, n);
        let c = random(&mut rng, ScalarType::F64, n);
        let (mut s, mut m) = ([0i64], [0f64]);
        typed::opencl::run(
            dev,
            a.as_i8().unwrap(),
            b.as_u8().unwrap(),
            c.as_f64().unwrap(),
            &mut s,
            &mut m,
            typed::Sizes { N: n },
        )
        .expect("runs");
        let got = vec![s.to_vec().into(), m.to_vec().into()];
        check("typed", typed::SPEC, &[n], &[a, b, c], &[], got);
    }
    for i in SIZES_2D {
        for k in SIZES {
            let x = random(&mut rng, ScalarType::I64, i * k);
            let (mut s, mut m) = (vec![0i64; i], vec![0i64; i]);
            rows::opencl::run(
                dev,
                x.as_i64().unwrap(),
                &mut s,
                &mut m,
                rows::Sizes { I: i, K: k },
            )
            .expect("runs");
            check(
                "rows",
                rows::SPEC,
                &[i, k],
                &[x],
                &[],
                vec![s.into(), m.into()],
            );
        }
    }
}

mdh! {
    /// bool elements: per row, whether any element is set (a user-defined
    /// operator on bool), and per element a comparison.
    kernel any_row {
        inp(a: bool[I, K]),
        out(r: bool[I]),
        out_view(r: |i, k| (i)),
        md_hom[I, K](|x| x, (CC, PW(|p, q| p || q))),
        inp_view(a: |i, k| (i, k)),
    }
}

mdh! {
    /// bool from comparisons of i8 and u8, and its negation.
    kernel compare {
        inp(a: i8[N], b: u8[N]),
        out(lt: bool[N], ge: bool[N]),
        out_view(lt: |i| (i), ge: |i| (i)),
        md_hom[N](|x, y| {
            let l = (x as i32) < (y as i32) && x != 0;
            (l, !l)
        }, (CC)),
        inp_view(a: |i| (i), b: |i| (i)),
    }
}

#[test]
fn bool_elements() {
    let Some(dev) = device() else { return };
    let mut rng = Rng::new(4);
    for i in SIZES_2D {
        for k in SIZES_2D {
            // Mostly false, so that rows without a set element occur.
            let a: Vec<bool> = (0..i * k).map(|_| rng.below(8) == 0).collect();
            let mut r = vec![false; i];
            any_row::opencl::run(dev, &a, &mut r, any_row::Sizes { I: i, K: k }).expect("runs");
            check(
                "any_row",
                any_row::SPEC,
                &[i, k],
                &[a.into()],
                &[],
                vec![r.into()],
            );
        }
    }
    for n in SIZES {
        let a = random(&mut rng, ScalarType::I8, n);
        let b = random(&mut rng, ScalarType::U8, n);
        let (mut lt, mut ge) = (vec![false; n], vec![false; n]);
        compare::opencl::run(
            dev,
            a.as_i8().unwrap(),
            b.as_u8().unwrap(),
            &mut lt,
            &mut ge,
            compare::Sizes { N: n },
        )
        .expect("runs");
        check(
            "compare",
            compare::SPEC,
            &[n],
            &[a, b],
            &[],
            vec![lt.into(), ge.into()],
        );
    }
}

mdh! {
    /// Params and a `for` loop with `break`: the Collatz steps of each
    /// value, at most `limit`, scaled and shifted by params.
    kernel collatz {
        inp(x: u32[N]),
        out(steps: u32[N], y: f64[N]),
        params(limit: u32, scale: f64, shift: i64),
        out_view(steps: |i| (i), y: |i| (i)),
        md_hom[N](
            |v| {
                let mut c = v;
                let mut n = 0;
                for _ in 0..limit {
                    if c <= 1 {
                        break;
                    }
                    if c % 2 == 0 {
                        c = c / 2;
                    } else {
                        c = 3 * c + 1;
                    }
                    n += 1;
                }
                (n, scale * (n as i64 + shift) as f64)
            },
            (CC)
        ),
        inp_view(x: |i| (i)),
    }
}

#[test]
fn params_and_loops_with_break() {
    let Some(dev) = device() else { return };
    let mut rng = Rng::new(5);
    for n in SIZES {
        let x: Vec<u32> = (0..n).map(|_| rng.below(1000) as u32).collect();
        for (limit, scale, shift) in [(0u32, 1.5f64, 0i64), (20, -0.25, 7), (1000, 2.0, -3)] {
            let (mut steps, mut y) = (vec![0u32; n], vec![0f64; n]);
            collatz::opencl::run(
                dev,
                &x,
                &mut steps,
                &mut y,
                limit,
                scale,
                shift,
                collatz::Sizes { N: n },
            )
            .expect("runs");
            let params = [Value::U32(limit), Value::F64(scale), Value::I64(shift)];
            check(
                "collatz",
                collatz::SPEC,
                &[n],
                &[x.clone().into()],
                &params,
                vec![steps.into(), y.into()],
            );
        }
    }
}

mdh! {
    /// Integer quotients and remainders of four types.
    kernel divide {
        inp(a: i32[N], b: i32[N], c: i64[N], d: i64[N], e: u8[N], f: u8[N], g: i8[N], h: i8[N]),
        out(q32: i32[N], r32: i32[N], q64: i64[N], r64: i64[N], qu: u8[N], ru: u8[N], q8: i8[N], r8: i8[N]),
        out_view(q32: |i| (i), r32: |i| (i), q64: |i| (i), r64: |i| (i),
                 qu: |i| (i), ru: |i| (i), q8: |i| (i), r8: |i| (i)),
        md_hom[N](|a, b, c, d, e, f, g, h| (a / b, a % b, c / d, c % d, e / f, e % f, g / h, g % h), (CC)),
        inp_view(a: |i| (i), b: |i| (i), c: |i| (i), d: |i| (i),
                 e: |i| (i), f: |i| (i), g: |i| (i), h: |i| (i)),
    }
}

/// `divide` through `opencl::run` on inputs `x` (`a` to `h`); its eight
/// outputs.
fn divide_on(dev: &Device, x: &[Buffer; 8]) -> [Buffer; 8] {
    let n = x[0].len();
    let (mut q32, mut r32, mut q64, mut r64) = (vec![0; n], vec![0; n], vec![0; n], vec![0; n]);
    let (mut qu, mut ru, mut q8, mut r8) = (vec![0; n], vec![0; n], vec![0; n], vec![0; n]);
    // Slices of the types the kernel declares (the test builds them so).
    divide::opencl::run(
        dev,
        x[0].as_i32().unwrap(),
        x[1].as_i32().unwrap(),
        x[2].as_i64().unwrap(),
        x[3].as_i64().unwrap(),
        x[4].as_u8().unwrap(),
        x[5].as_u8().unwrap(),
        x[6].as_i8().unwrap(),
        x[7].as_i8().unwrap(),
        &mut q32,
        &mut r32,
        &mut q64,
        &mut r64,
        &mut qu,
        &mut ru,
        &mut q8,
        &mut r8,
        divide::Sizes { N: n },
    )
    .expect("runs");
    [
        q32.into(),
        r32.into(),
        q64.into(),
        r64.into(),
        qu.into(),
        ru.into(),
        q8.into(),
        r8.into(),
    ]
}

#[test]
fn integer_division() {
    let Some(dev) = device() else { return };
    let mut rng = Rng::new(6);
    // Nonzero divisors, with negative operands: the interpreter's results.
    for n in SIZES {
        let nonzero = |rng: &mut Rng, t: ScalarType| {
            let mut b = random(rng, t, n);
            for i in 0..n {
                if b.get(i).cast(ScalarType::I64) == Some(Value::I64(0)) {
                    b.set(i, Value::I64(-3).cast(t).unwrap());
                }
            }
            b
        };
        let x = [
            Buffer::from(rng.i32s(n, -1000, 1000)),
            nonzero(&mut rng, ScalarType::I32),
            random(&mut rng, ScalarType::I64, n),
            nonzero(&mut rng, ScalarType::I64),
            random(&mut rng, ScalarType::U8, n),
            nonzero(&mut rng, ScalarType::U8),
            random(&mut rng, ScalarType::I8, n),
            nonzero(&mut rng, ScalarType::I8),
        ];
        let got = divide_on(dev, &x).to_vec();
        check("divide", divide::SPEC, &[n], &x, &[], got);
    }
    // What C leaves undefined, as the generated C defines it: `x / 0 == 0`,
    // `x % 0 == 0`, `MIN / -1 == MIN`, `MIN % -1 == 0`.
    let x = [
        Buffer::from(vec![7, i32::MIN, i32::MIN, -9, 0]),
        Buffer::from(vec![0, -1, 0, 2, 0]),
        Buffer::from(vec![7, i64::MIN, i64::MIN, -9, 0]),
        Buffer::from(vec![0i64, -1, 0, 2, 0]),
        Buffer::from(vec![7u8, 255, 0, 9, 0]),
        Buffer::from(vec![0u8, 0, 0, 2, 1]),
        Buffer::from(vec![7i8, i8::MIN, i8::MIN, -9, 0]),
        Buffer::from(vec![0i8, -1, 0, 2, 0]),
    ];
    let o = divide_on(dev, &x);
    assert_eq!(o[0].as_i32().unwrap(), [0, i32::MIN, 0, -4, 0]);
    assert_eq!(o[1].as_i32().unwrap(), [0, 0, 0, -1, 0]);
    assert_eq!(o[2].as_i64().unwrap(), [0, i64::MIN, 0, -4, 0]);
    assert_eq!(o[3].as_i64().unwrap(), [0, 0, 0, -1, 0]);
    assert_eq!(o[4].as_u8().unwrap(), [0, 0, 0, 4, 0]);
    assert_eq!(o[5].as_u8().unwrap(), [0, 0, 0, 1, 0]);
    assert_eq!(o[6].as_i8().unwrap(), [0, i8::MIN, 0, -4, 0]);
    assert_eq!(o[7].as_i8().unwrap(), [0, 0, 0, -1, 0]);
    // The reference interpreter and the CPU kernel define them alike.
    check("divide by zero", divide::SPEC, &[5], &x, &[], o.to_vec());
    let (mut q32, mut r32, mut q64, mut r64) = ([1i32; 5], [1i32; 5], [1i64; 5], [1i64; 5]);
    let (mut qu, mut ru, mut q8, mut r8) = ([1u8; 5], [1u8; 5], [1i8; 5], [1i8; 5]);
    let i = |b: usize| &x[b];
    divide::cpu(
        i(0).as_i32().unwrap(),
        i(1).as_i32().unwrap(),
        i(2).as_i64().unwrap(),
        i(3).as_i64().unwrap(),
        i(4).as_u8().unwrap(),
        i(5).as_u8().unwrap(),
        i(6).as_i8().unwrap(),
        i(7).as_i8().unwrap(),
        &mut q32,
        &mut r32,
        &mut q64,
        &mut r64,
        &mut qu,
        &mut ru,
        &mut q8,
        &mut r8,
        divide::Sizes { N: 5 },
    )
    .expect("the CPU kernel runs");
    assert_eq!(
        (o[0].as_i32().unwrap(), o[1].as_i32().unwrap()),
        (&q32[..], &r32[..])
    );
    assert_eq!(
        (o[2].as_i64().unwrap(), o[3].as_i64().unwrap()),
        (&q64[..], &r64[..])
    );
    assert_eq!(
        (o[4].as_u8().unwrap(), o[5].as_u8().unwrap()),
        (&qu[..], &ru[..])
    );
    assert_eq!(
        (o[6].as_i8().unwrap(), o[7].as_i8().unwrap()),
        (&q8[..], &r8[..])
    );
}

mdh! {
    /// The conversions of the 16-bit floats: every f16 and bf16 to f32
    /// (exact), and f32 values to both (rounded to nearest, ties to even).
    kernel half_casts {
        inp(h: f16[N], b: bf16[N], x: f32[N]),
        out(hf: f32[N], bf: f32[N], xh: f16[N], xb: bf16[N]),
        out_view(hf: |i| (i), bf: |i| (i), xh: |i| (i), xb: |i| (i)),
        md_hom[N](|h, b, x| (h as f32, b as f32, x as f16, x as bf16), (CC)),
        inp_view(h: |i| (i), b: |i| (i), x: |i| (i)),
    }
}

/// Inputs of `half_casts`: every bit pattern of f16 and bf16 (4 times),
/// and per pattern `j` of f16 the midpoint between it and the next (a tie),
/// the floats just above and below it, and the midpoint of the bf16
/// pattern `j` (NaNs, infinities, subnormals and overflow among them).
fn half_cast_inputs() -> [Buffer; 3] {
    let n = 4 << 16;
    let h: Vec<mdh::f16> = (0..n).map(|i| mdh::f16::from_bits(i as u16)).collect();
    let b: Vec<mdh::bf16> = (0..n).map(|i| mdh::bf16::from_bits(i as u16)).collect();
    let x: Vec<f32> = (0..n)
        .map(|i| {
            let j = (i / 4) as u16;
            let (lo, hi) = (
                mdh::f16::from_bits(j).to_f32(),
                mdh::f16::from_bits(j.wrapping_add(1)).to_f32(),
            );
            let mid = (lo + hi) / 2.0;
            match i % 4 {
                0 => mid,
                1 => f32::from_bits(mid.to_bits() + 1),
                2 => f32::from_bits(mid.to_bits().wrapping_sub(1)),
                _ => f32::from_bits(((j as u32) << 16) | 0x8000),
            }
        })
        .collect();
    [h.into(), b.into(), x.into()]
}

/// The outputs of `half_casts` for `n` points, as the interpreter starts them.
fn half_cast_outputs(n: usize) -> Vec<Buffer> {
    [
        ScalarType::F32,
        ScalarType::F32,
        ScalarType::F16,
        ScalarType::Bf16,
    ]
    .map(|t| Buffer::zeros(t, n))
    .to_vec()
}

/// The conversions of the C helpers (`mdh_ld_T`, `mdh_st_T`) are the
/// `half` crate's, bit for bit up to NaN payloads, on OpenCL and in the
/// CPU execution of CUDA.
#[test]
fn half_conversions_match_the_half_crate() {
    let inputs = half_cast_inputs();
    let n = inputs[0].len();
    let sizes = half_casts::Sizes { N: n };
    if let Some(dev) = device() {
        let mut out = half_cast_outputs(n);
        half_casts::opencl::run_dyn(dev, None, &inputs, &mut out, &[], &sizes.values())
            .expect("runs");
        check::against_reference("OpenCL", half_casts::SPEC, &[n], &inputs, &[], &out, 0.0)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    if gpu::cuda_cpu::nvrtc_and_compiler() {
        let mut out = half_cast_outputs(n);
        gpu::cuda_cpu::run_on_cpu(
            half_casts::cuda::job,
            half_casts::SPEC,
            None,
            &inputs,
            &mut out,
            &[],
            &sizes.values(),
        )
        .expect("runs");
        check::against_reference(
            "CUDA on the CPU",
            half_casts::SPEC,
            &[n],
            &inputs,
            &[],
            &out,
            0.0,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The same kernels in the CUDA dialect of the shared emitter (division
/// helpers, bool, several outputs, loops): NVRTC compiles them for sm_80 and
/// sm_90 without a warning. Skipped where NVRTC is missing, unless `MDH_REQUIRE_NVRTC=1`.
#[test]
fn cuda_dialect_compiles_with_nvrtc() {
    if !mdh_gpu::cuda::nvrtc_available() {
        gpu::skip_or_fail("MDH_REQUIRE_NVRTC", "NVRTC is not available");
        return;
    }
    let sources = [
        ("sat", sat::cuda::source(&sat::Sizes { I: 7, J: 13 })),
        ("affine", affine::cuda::source(&affine::Sizes { N: 257 })),
        ("typed", typed::cuda::source(&typed::Sizes { N: 31 })),
        ("rows", rows::cuda::source(&rows::Sizes { I: 3, K: 257 })),
        (
            "any_row",
            any_row::cuda::source(&any_row::Sizes { I: 7, K: 29 }),
        ),
        ("compare", compare::cuda::source(&compare::Sizes { N: 13 })),
        ("collatz", collatz::cuda::source(&collatz::Sizes { N: 13 })),
        ("divide", divide::cuda::source(&divide::Sizes { N: 13 })),
        (
            "half_casts",
            half_casts::cuda::source(&half_casts::Sizes { N: 13 }),
        ),
    ];
    for (name, src) in sources {
        for arch in ["sm_80", "sm_90"] {
            let out = mdh_gpu::cuda::nvrtc_compile(&src, arch)
                .unwrap_or_else(|e| panic!("{name}, {arch}: {e}\n{src}"));
            assert!(
                out.log.is_empty(),
                "{name}, {arch}: NVRTC warned:\n{}\n{src}",
                out.log
            );
        }
    }
}
