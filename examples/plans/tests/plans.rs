//! Property tests of the low-level plan: random valid CPU plans × random sizes
//! agree with the reference interpreter, for every example family.
//!
//! The kernels are the example families of mdh-example-kernels, included
//! from their files; compiled in this crate, each finds its config in this
//! crate's `configs/<family>.yaml` (written by `scripts/gen-plan-configs.py`),
//! which holds eight random valid plans, each pinned with `sizes:` to
//! different random sizes. All eight are compiled into the kernel and
//! dispatched at run time to the nearest pinned sizes, so each test:
//!
//! 1. calls the kernel with exactly each pinned size vector, which must select
//!    that entry (checked with the driver's own `choose_plan` over the
//!    kernel's own entry list), so every plan runs at least once: in its
//!    body for exactly its sizes (constant sizes and strides, see
//!    `Gen::exact_binds` in mdh-core) where the plan asks for one (`exact`,
//!    half of them), else in its general body. On an instruction set whose
//!    registers do not hold a plan's register tile (`PlanEntry::suits`:
//!    the larger tiles of these plans under `MDH_ISA=avx2`) the nearest
//!    plan that suits it runs instead (another entry, or the default), as
//!    the dispatch decides for users;
//! 2. calls it with random sizes (mostly 1, primes, the pinned sizes and
//!    their neighbours, small and medium values, sometimes 0), which the
//!    dispatch spreads over the plans' general bodies.
//!
//! Every call is compared with the reference interpreter. Outputs start as a
//! sentinel (NaN, or an unlikely integer) on both sides, so an element the
//! kernel forgets to write is a mismatch. A failure names the kernel, the
//! sizes and the selected plan (its YAML entry).
//!
//! # Tolerances
//!
//! Integers are compared exactly. Float inputs are, in half of the cases,
//! small integers (0..8) stored as floats: then every sum of products in
//! these tests stays below 2^24, is exact in any order, and results are
//! compared exactly (a lost or doubled term cannot hide in a tolerance).
//! Otherwise they are uniform in [0, 1) and results are compared as
//! `|a - b| <= rtol · max(|a|, |b|) + 16 ε √n` with `rtol = max(1e-4, 4 ε √n)` for a
//! reduction of `n` terms of one sign (the summation order differs between
//! the plans and the interpreter; each order's relative error is about
//! `ε √n / 3` in practice, `n ε` at worst; see `examples/src/check.rs`), and
//! `1e-4` for element-wise scalar functions with float parameters (FMA
//! contraction may differ).

use mdh::reference::{Buffer, Value};
use mdh_examples::check::{self, len, verify, Rng};

// ---------------------------------------------------------------------------
// The kernels: the example families as mdh-example-kernels declares them,
// compiled here with this crate's configs (configs/<kernel>.yaml).

include!("../../kernels/src/dot.rs");
include!("../../kernels/src/matvec.rs");
include!("../../kernels/src/matmul.rs");
include!("../../kernels/src/matmul_t.rs");
include!("../../kernels/src/bmatmul.rs");
include!("../../kernels/src/conv2d.rs");
include!("../../kernels/src/mcc.rs");
include!("../../kernels/src/ccsdt.rs");
include!("../../kernels/src/jacobi1d.rs");
include!("../../kernels/src/jacobi3d.rs");
include!("../../kernels/src/prl.rs");
include!("../../kernels/src/histo.rs");
include!("../../kernels/src/map.rs");
include!("../../kernels/src/reduce.rs");
include!("../../kernels/src/reduce2.rs");
include!("../../kernels/src/scan.rs");
include!("../../kernels/src/mbbs.rs");
include!("../../kernels/src/mandelbrot.rs");
include!("../../kernels/src/matmul_bf16.rs");
include!("../../kernels/src/matmul_bias_relu.rs");

// ---------------------------------------------------------------------------
// Random numbers, sizes and inputs

const SPECIAL: [usize; 8] = [1, 2, 3, 5, 7, 13, 31, 97];

/// A family: the kernel's config (its pinned sizes), its size parameters in
/// `Sizes::values()` order, the largest size per parameter, and the largest
/// index space (the interpreter must stay fast).
struct Family {
    name: &'static str,
    yaml: &'static str,
    names: &'static [&'static str],
    /// The entries as the kernel lists them for its dispatch.
    listed: &'static [mdh::__rt::PlanEntry<'static>],
    max: &'static [(&'static str, usize)],
    cap: usize,
}

impl Family {
    fn max_of(&self, n: &str) -> usize {
        self.max
            .iter()
            .find(|(m, _)| *m == n)
            .unwrap_or_else(|| panic!("{}: no max for {n}", self.name))
            .1
    }

    /// The `sizes:` of each entry, in `Sizes::values()` order, and each
    /// entry's text (for failure messages).
    fn entries(&self) -> Vec<(Vec<usize>, String)> {
        let mut out: Vec<(Vec<usize>, String)> = Vec::new();
        for line in self.yaml.lines() {
            let t = line.trim();
            if t.starts_with("- backend:") {
                out.push((Vec::new(), String::new()));
            }
            let Some(e) = out.last_mut() else { continue };
            if let Some(m) = t.strip_prefix("sizes: {").and_then(|m| m.strip_suffix('}')) {
                let pairs: Vec<(&str, usize)> = m
                    .split(',')
                    .map(|p| {
                        let (k, v) = p.split_once(':').expect("`name: value`");
                        (k.trim(), v.trim().parse().expect("a size"))
                    })
                    .collect();
                e.0 = self
                    .names
                    .iter()
                    .map(|n| {
                        pairs
                            .iter()
                            .find(|(k, _)| k == n)
                            .expect("every size pinned")
                            .1
                    })
                    .collect();
            } else if t.starts_with("cor:")
                || t.starts_with("l2:")
                || t.starts_with("l1:")
                || t.starts_with("reg:")
                || t.starts_with("order:")
            {
                e.1.push_str(t);
                e.1.push_str("; ");
            }
        }
        assert!(!out.is_empty(), "{}: no entries in the config", self.name);
        assert!(
            out.iter().all(|e| e.0.len() == self.names.len()),
            "{}: an entry lacks sizes",
            self.name
        );
        out
    }

    /// Random sizes: mostly 1, primes, the pinned sizes (and their
    /// neighbours), small and medium values, sometimes 0; at most `cap` points.
    fn draw(&self, g: &mut Rng, pinned: &[(Vec<usize>, String)]) -> Vec<usize> {
        loop {
            let v: Vec<usize> = if g.below(4) == 0 {
                let p = &pinned[g.below(pinned.len())].0;
                p.iter()
                    .zip(self.names)
                    .map(|(&x, n)| match g.below(4) {
                        0 => (x + 1).min(self.max_of(n)),
                        1 => x.saturating_sub(1).max(1),
                        _ => x,
                    })
                    .collect()
            } else {
                self.names
                    .iter()
                    .enumerate()
                    .map(|(d, n)| {
                        let hi = self.max_of(n);
                        match g.below(20) {
                            0 => 0,
                            1..=7 => {
                                let s: Vec<usize> =
                                    SPECIAL.into_iter().filter(|&s| s <= hi).collect();
                                s[g.below(s.len())]
                            }
                            8..=11 => pinned[g.below(pinned.len())].0[d],
                            _ => {
                                let e = (hi as f64).powf(g.unit() as f64);
                                (e.round() as usize).clamp(1, hi)
                            }
                        }
                    })
                    .collect()
            };
            if v.iter().product::<usize>() <= self.cap {
                return v;
            }
        }
    }
}

fn at(names: &[&str], v: &[usize], n: &str) -> usize {
    v[names
        .iter()
        .position(|m| *m == n)
        .expect("a size parameter")]
}

/// `NAME::Sizes` from values in `Sizes::values()` order.
macro_rules! sizes {
    ($k:ident, $v:expr; $($p:ident),*) => {
        $k::Sizes { $($p: at(&$k::Sizes::NAMES, $v, stringify!($p)),)* }
    };
}

/// Runs the family: each pinned size vector (which must select its entry),
/// then `cases` random ones; `case(sizes, rng)` runs the kernel and compares.
/// Collects all failures, then panics listing them.
fn run_family(f: &Family, cases: usize, case: impl Fn(&[usize], &mut Rng) -> Result<(), String>) {
    let entries = f.entries();
    // The kernel's entries, then the analytical plans: of few rows (a
    // matrix product's) and the default (line 0).
    let tuned = f.listed;
    let few_rows: Vec<usize> = (0..tuned.len())
        .filter(|&i| tuned[i].rows.is_some())
        .collect();
    assert_eq!(
        tuned.len(),
        entries.len() + 1 + few_rows.len(),
        "{}: entries",
        f.name
    );
    // Entries whose register tile outgrows this instruction set's
    // registers (an AVX2 run) rank after the default and never run.
    let isa = mdh::machine::host().machine.isa;
    let suited = |i: usize| tuned[i].suits(isa);
    let mut failures = Vec::new();
    let mut hits = vec![0usize; tuned.len()];
    // Seeded by the name the kernels once had here (`plan_<family>`), so
    // that the random sizes stayed the ones tested before.
    let mut g = Rng::new(
        format!("plan_{}", f.name)
            .bytes()
            .fold(17, |h, b| h.wrapping_mul(31) ^ b as u64),
    );
    let mut run = |v: &[usize], g: &mut Rng, failures: &mut Vec<String>| {
        let plan = mdh::__rt::choose_plan(f.name, f.names, tuned, v);
        hits[plan] += 1;
        if let Err(e) = case(v, g) {
            let sizes: Vec<String> = f
                .names
                .iter()
                .zip(v)
                .map(|(n, x)| format!("{n}: {x}"))
                .collect();
            failures.push(format!(
                "{} with sizes {{{}}}, plan #{plan} {}\n    {e}",
                f.name,
                sizes.join(", "),
                entries.get(plan).map_or(
                    if few_rows.contains(&plan) {
                        "(a plan of few rows)".to_string()
                    } else {
                        "(the default plan)".to_string()
                    },
                    |(s, text)| { format!("(pinned to {s:?}) {text}") }
                ),
            ));
        }
    };
    for (i, (s, _)) in entries.iter().enumerate() {
        let got = mdh::__rt::choose_plan(f.name, f.names, tuned, s);
        if suited(i) {
            assert_eq!(
                got, i,
                "{}: pinned sizes {s:?} must select entry {i}",
                f.name
            );
        } else {
            assert!(
                got != i && suited(got),
                "{}: pinned sizes {s:?} of an unsuited entry select entry {got}",
                f.name
            );
        }
        run(s, &mut g, &mut failures);
    }
    for _ in 0..cases {
        let v = f.draw(&mut g, &entries);
        run(&v, &mut g, &mut failures);
    }
    println!("{}: plan hits {hits:?}", f.name);
    // Calls of few rows take the plans of few rows (the random sizes draw
    // them often enough) where their tiles suit the registers (not on the
    // baseline: the default runs there): of each range of rows the first
    // that runs here (a plan of bf16 pairs only where the bodies run them)
    // and whose rows no earlier one that runs takes all of.
    let host = mdh::machine::host();
    let runs =
        |i: usize| tuned[i].rows.is_some() && suited(i) && (!tuned[i].pairs || host.bf16_pairs);
    let takes = |j: usize, i: usize| match (tuned[j].rows, tuned[i].rows) {
        (Some(a), Some(b)) => a.min <= b.min && b.max <= a.max,
        _ => false,
    };
    let first = |i: usize| runs(i) && !(0..i).any(|j| runs(j) && takes(j, i));
    for &i in few_rows.iter().filter(|&&i| first(i)) {
        assert!(
            hits[i] > 0,
            "{}: no call took plan {i} of few rows: {hits:?}",
            f.name
        );
    }
    // Random sizes reach more than the pinned entries alone.
    let reached = (0..entries.len())
        .filter(|&i| suited(i) && hits[i] > 1)
        .count();
    let runnable = (0..entries.len()).filter(|&i| suited(i)).count();
    assert!(
        reached * 2 >= runnable,
        "{}: random sizes reach only {reached} plans: {hits:?}",
        f.name
    );
    if !failures.is_empty() {
        panic!(
            "{} of {} cases failed:\n{}",
            failures.len(),
            entries.len() + cases,
            failures.join("\n")
        );
    }
}

// ---------------------------------------------------------------------------
// Comparison with the interpreter

/// Tolerance of a reduction of `n` float terms of one sign (see the module docs).
fn sum_rtol(n: usize, exact: bool) -> check::Tol {
    if exact {
        check::Tol::EXACT
    } else {
        check::sum_rtol(n)
    }
}

fn nan(n: usize) -> Vec<f32> {
    vec![f32::NAN; n]
}

const CASES: usize = 300;

// ---------------------------------------------------------------------------
// Linear algebra

#[test]
fn dot() {
    let f = Family {
        name: "dot",
        yaml: include_str!("../configs/dot.yaml"),
        names: &dot::Sizes::NAMES,
        listed: dot::__CPU_ENTRIES,
        max: &[("N", 100_000)],
        cap: 100_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(dot, v; N);
        let exact = g.below(2) == 0;
        let n = s.N;
        check::f32_case(
            dot::SPEC,
            v,
            vec![g.f32s_or_ints(n, exact), g.f32s_or_ints(n, exact)],
            1,
            sum_rtol(n, exact),
            |i, o| dot::cpu(&i[0], &i[1], o, s),
        )
    });
}

#[test]
fn matvec() {
    let f = Family {
        name: "matvec",
        yaml: include_str!("../configs/matvec.yaml"),
        names: &matvec::Sizes::NAMES,
        listed: matvec::__CPU_ENTRIES,
        max: &[("I", 300), ("K", 1000)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(matvec, v; I, K);
        let exact = g.below(2) == 0;
        check::f32_case(
            matvec::SPEC,
            v,
            vec![g.f32s_or_ints(s.I * s.K, exact), g.f32s_or_ints(s.K, exact)],
            s.I,
            sum_rtol(s.K, exact),
            |x, o| matvec::cpu(&x[0], &x[1], o, s),
        )
    });
}

#[test]
fn matmul() {
    let f = Family {
        name: "matmul",
        yaml: include_str!("../configs/matmul.yaml"),
        names: &matmul::Sizes::NAMES,
        listed: matmul::__CPU_ENTRIES,
        max: &[("I", 97), ("J", 97), ("K", 97)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(matmul, v; I, J, K);
        let exact = g.below(2) == 0;
        check::f32_case(
            matmul::SPEC,
            v,
            vec![
                g.f32s_or_ints(s.I * s.K, exact),
                g.f32s_or_ints(s.K * s.J, exact),
            ],
            s.I * s.J,
            sum_rtol(s.K, exact),
            |x, o| matmul::cpu(&x[0], &x[1], o, s),
        )
    });
}

/// The product's plans with the bias and ReLU fused into its stores
/// (`cpu`: applied once, after the last combine of each point, whether the
/// product's PW range is one task's or split across tasks), and the stages
/// run one by one (`cpu_unfused`).
#[test]
fn matmul_bias_relu() {
    use matmul_bias_relu::fused::matmul_bias_relu_product as product;
    let f = Family {
        name: "matmul_bias_relu_product",
        yaml: include_str!("../configs/matmul_bias_relu_product.yaml"),
        names: &product::Sizes::NAMES,
        listed: product::__CPU_ENTRIES,
        max: &[("I", 97), ("J", 97), ("K", 97)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(matmul_bias_relu, v; I, J, K);
        let exact = g.below(2) == 0;
        // With small integers (exact sums) the bias is centred so that ReLU
        // clips about half the points (a product's terms average 12.25);
        // with floats it stays positive (no cancellation beyond the
        // tolerance of a sum of one sign).
        let shift = if exact { 12.0 * s.K as f32 } else { 0.0 };
        let bias = g
            .f32s_or_ints(s.J, exact)
            .into_iter()
            .map(|b| b - shift)
            .collect();
        let x = vec![
            g.f32s_or_ints(s.I * s.K, exact),
            g.f32s_or_ints(s.K * s.J, exact),
            bias,
        ];
        let rtol = sum_rtol(s.K, exact);
        check::f32_case(
            matmul_bias_relu::SPEC,
            v,
            x.clone(),
            s.I * s.J,
            rtol,
            |x, o| matmul_bias_relu::cpu(&x[0], &x[1], &x[2], o, s),
        )?;
        check::f32_case(matmul_bias_relu::SPEC, v, x, s.I * s.J, rtol, |x, o| {
            matmul_bias_relu::cpu_unfused(&x[0], &x[1], &x[2], o, s)
        })
    });
}

/// bf16 inputs (packed as they are), products and sums in f32.
#[test]
fn matmul_bf16() {
    let f = Family {
        name: "matmul_bf16",
        yaml: include_str!("../configs/matmul_bf16.yaml"),
        names: &matmul_bf16::Sizes::NAMES,
        listed: matmul_bf16::__CPU_ENTRIES,
        max: &[("I", 97), ("J", 97), ("K", 97)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(matmul_bf16, v; I, J, K);
        let exact = g.below(2) == 0;
        let bf16s =
            |x: Vec<f32>| -> Vec<mdh::bf16> { x.into_iter().map(mdh::bf16::from_f32).collect() };
        let a = bf16s(g.f32s_or_ints(s.I * s.K, exact));
        let b = bf16s(g.f32s_or_ints(s.K * s.J, exact));
        let (r, c) = check::guarded(s.I * s.J, f32::NAN, |c| matmul_bf16::cpu(&a, &b, c, s))?;
        check::verify(
            matmul_bf16::SPEC,
            v,
            &[a.into(), b.into()],
            &[],
            vec![nan(s.I * s.J).into()],
            r,
            &[c.into()],
            sum_rtol(s.K, exact),
        )
    });
}

#[test]
fn matmul_t() {
    let f = Family {
        name: "matmul_t",
        yaml: include_str!("../configs/matmul_t.yaml"),
        names: &matmul_t::Sizes::NAMES,
        listed: matmul_t::__CPU_ENTRIES,
        max: &[("I", 97), ("J", 97), ("K", 97)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(matmul_t, v; I, J, K);
        let exact = g.below(2) == 0;
        check::f32_case(
            matmul_t::SPEC,
            v,
            vec![
                g.f32s_or_ints(s.K * s.I, exact),
                g.f32s_or_ints(s.J * s.K, exact),
            ],
            s.J * s.I,
            sum_rtol(s.K, exact),
            |x, o| matmul_t::cpu(&x[0], &x[1], o, s),
        )
    });
}

#[test]
fn bmatmul() {
    let f = Family {
        name: "bmatmul",
        yaml: include_str!("../configs/bmatmul.yaml"),
        names: &bmatmul::Sizes::NAMES,
        listed: bmatmul::__CPU_ENTRIES,
        max: &[("NB", 7), ("I", 31), ("J", 97), ("K", 61)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(bmatmul, v; NB, I, J, K);
        let exact = g.below(2) == 0;
        let (a, b) = (
            g.f32s_or_ints(s.NB * s.I * s.K, exact),
            g.f32s_or_ints(s.NB * s.K * s.J, exact),
        );
        check::f32_case(
            bmatmul::SPEC,
            v,
            vec![a, b],
            s.NB * s.I * s.J,
            sum_rtol(s.K, exact),
            |x, o| bmatmul::cpu(&x[0], &x[1], o, s),
        )
    });
}

// ---------------------------------------------------------------------------
// Convolutions and contractions

#[test]
fn conv2d() {
    let f = Family {
        name: "conv2d",
        yaml: include_str!("../configs/conv2d.yaml"),
        names: &conv2d::Sizes::NAMES,
        listed: conv2d::__CPU_ENTRIES,
        max: &[("P", 40), ("Q", 40), ("R", 7), ("S", 7)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(conv2d, v; P, Q, R, S);
        let exact = g.below(2) == 0;
        let il = len(&[s.P as i128 + s.R as i128 - 1, s.Q as i128 + s.S as i128 - 1]);
        check::f32_case(
            conv2d::SPEC,
            v,
            vec![g.f32s_or_ints(il, exact), g.f32s_or_ints(s.R * s.S, exact)],
            s.P * s.Q,
            sum_rtol(s.R * s.S, exact),
            |x, o| conv2d::cpu(&x[0], &x[1], o, s),
        )
    });
}

#[test]
fn mcc() {
    let f = Family {
        name: "mcc",
        yaml: include_str!("../configs/mcc.yaml"),
        names: &mcc::Sizes::NAMES,
        listed: mcc::__CPU_ENTRIES,
        max: &[
            ("N", 3),
            ("P", 7),
            ("Q", 7),
            ("K", 13),
            ("R", 5),
            ("S", 5),
            ("C", 5),
        ],
        cap: 20_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(mcc, v; N, P, Q, K, R, S, C);
        let exact = g.below(2) == 0;
        let il = len(&[
            s.N as i128,
            2 * s.P as i128 + s.R as i128 - 2,
            2 * s.Q as i128 + s.S as i128 - 2,
            s.C as i128,
        ]);
        let (i, w) = (
            g.f32s_or_ints(il, exact),
            g.f32s_or_ints(s.K * s.R * s.S * s.C, exact),
        );
        check::f32_case(
            mcc::SPEC,
            v,
            vec![i, w],
            s.N * s.P * s.Q * s.K,
            sum_rtol(s.R * s.S * s.C, exact),
            |x, o| mcc::cpu(&x[0], &x[1], o, s),
        )
    });
}

#[test]
fn ccsdt() {
    let f = Family {
        name: "ccsdt",
        yaml: include_str!("../configs/ccsdt.yaml"),
        names: &ccsdt::Sizes::NAMES,
        listed: ccsdt::__CPU_ENTRIES,
        max: &[
            ("NA", 5),
            ("NB", 5),
            ("NC", 7),
            ("ND", 5),
            ("NE", 5),
            ("NF", 7),
            ("NG", 13),
        ],
        cap: 20_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(ccsdt, v; NA, NB, NC, ND, NE, NF, NG);
        let exact = g.below(2) == 0;
        let (a, b) = (
            g.f32s_or_ints(s.NG * s.ND * s.NA * s.NB, exact),
            g.f32s_or_ints(s.NE * s.NF * s.NG * s.NC, exact),
        );
        let out = s.NA * s.NB * s.NC * s.ND * s.NE * s.NF;
        check::f32_case(
            ccsdt::SPEC,
            v,
            vec![a, b],
            out,
            sum_rtol(s.NG, exact),
            |x, o| ccsdt::cpu(&x[0], &x[1], o, s),
        )
    });
}

// ---------------------------------------------------------------------------
// Stencils

#[test]
fn jacobi1d() {
    let f = Family {
        name: "jacobi1d",
        yaml: include_str!("../configs/jacobi1d.yaml"),
        names: &jacobi1d::Sizes::NAMES,
        listed: jacobi1d::__CPU_ENTRIES,
        max: &[("N", 100_000)],
        cap: 100_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(jacobi1d, v; N);
        let exact = g.below(2) == 0;
        let (c0, c1) = (g.unit() * 4.0 - 2.0, g.unit() * 4.0 - 2.0);
        let x = g.f32s_or_ints(s.N + 2, exact);
        let (r, w) = check::guarded(s.N, f32::NAN, |w| jacobi1d::cpu(&x, w, c0, c1, s))?;
        verify(
            jacobi1d::SPEC,
            v,
            &[x.into()],
            &[Value::F32(c0), Value::F32(c1)],
            vec![nan(s.N).into()],
            r,
            &[w.into()],
            1e-4,
        )
    });
}

#[test]
fn jacobi3d() {
    let f = Family {
        name: "jacobi3d",
        yaml: include_str!("../configs/jacobi3d.yaml"),
        names: &jacobi3d::Sizes::NAMES,
        listed: jacobi3d::__CPU_ENTRIES,
        max: &[("N", 31), ("M", 31), ("L", 31)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(jacobi3d, v; N, M, L);
        let exact = g.below(2) == 0;
        let x = g.f32s_or_ints((s.N + 2) * (s.M + 2) * (s.L + 2), exact);
        check::f32_case(jacobi3d::SPEC, v, vec![x], s.N * s.M * s.L, 1e-4, |x, o| {
            jacobi3d::cpu(&x[0], o, s)
        })
    });
}

// ---------------------------------------------------------------------------
// Data mining

#[test]
fn prl() {
    let f = Family {
        name: "prl",
        yaml: include_str!("../configs/prl.yaml"),
        names: &prl::Sizes::NAMES,
        listed: prl::__CPU_ENTRIES,
        max: &[("I", 97), ("J", 300)],
        cap: 20_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(prl, v; I, J);
        // Few distinct values: matches, near years and ties are common.
        let x: Vec<Vec<i32>> = vec![
            g.i32s(s.I, 0, 4),
            g.i32s(s.I, 0, 4),
            g.i32s(s.I, 0, 5),
            g.i32s(s.J, 0, 4),
            g.i32s(s.J, 0, 4),
            g.i32s(s.J, 0, 5),
        ];
        let sentinel = vec![0x5A5A_5A5Ai64; s.I];
        let (r, best) = check::guarded(s.I, 0x5A5A_5A5Ai64, |b| {
            prl::cpu(&x[0], &x[1], &x[2], &x[3], &x[4], &x[5], b, s)
        })?;
        let ins: Vec<Buffer> = x.into_iter().map(Buffer::from).collect();
        verify(
            prl::SPEC,
            v,
            &ins,
            &[],
            vec![sentinel.into()],
            r,
            &[best.into()],
            0.0,
        )
    });
}

#[test]
fn histo() {
    let f = Family {
        name: "histo",
        yaml: include_str!("../configs/histo.yaml"),
        names: &histo::Sizes::NAMES,
        listed: histo::__CPU_ENTRIES,
        max: &[("E", 1000), ("B", 97)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(histo, v; E, B);
        let elems = g.u32s(s.E, (s.B + 3) as u32);
        let bins: Vec<u32> = (0..s.B as u32).rev().collect();
        let (r, hist) = check::guarded(s.B, 0xDEAD_BEEFu32, |h| histo::cpu(&elems, &bins, h, s))?;
        verify(
            histo::SPEC,
            v,
            &[elems.into(), bins.into()],
            &[],
            vec![vec![0xDEAD_BEEFu32; s.B].into()],
            r,
            &[hist.into()],
            0.0,
        )
    });
}

// ---------------------------------------------------------------------------
// Map, reduce, scan

#[test]
fn map() {
    let f = Family {
        name: "map",
        yaml: include_str!("../configs/map.yaml"),
        names: &map::Sizes::NAMES,
        listed: map::__CPU_ENTRIES,
        max: &[("N", 100_000)],
        cap: 100_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(map, v; N);
        let exact = g.below(2) == 0;
        let alpha = g.unit() * 8.0 - 4.0;
        let (x, y) = (g.f32s_or_ints(s.N, exact), g.f32s_or_ints(s.N, exact));
        let (r, z) = check::guarded(s.N, f32::NAN, |z| map::cpu(&x, &y, z, alpha, s))?;
        verify(
            map::SPEC,
            v,
            &[x.into(), y.into()],
            &[Value::F32(alpha)],
            vec![nan(s.N).into()],
            r,
            &[z.into()],
            1e-4,
        )
    });
}

#[test]
fn reduce() {
    let f = Family {
        name: "reduce",
        yaml: include_str!("../configs/reduce.yaml"),
        names: &reduce::Sizes::NAMES,
        listed: reduce::__CPU_ENTRIES,
        max: &[("N", 100_000)],
        cap: 100_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(reduce, v; N);
        let exact = g.below(2) == 0;
        check::f32_case(
            reduce::SPEC,
            v,
            vec![g.f32s_or_ints(s.N, exact)],
            1,
            sum_rtol(s.N, exact),
            |x, o| reduce::cpu(&x[0], o, s),
        )
    });
}

#[test]
fn reduce2() {
    let f = Family {
        name: "reduce2",
        yaml: include_str!("../configs/reduce2.yaml"),
        names: &reduce2::Sizes::NAMES,
        listed: reduce2::__CPU_ENTRIES,
        max: &[("N", 100_000)],
        cap: 100_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(reduce2, v; N);
        let exact = g.below(2) == 0;
        let x = g.f32s_or_ints(s.N, exact);
        let (sum, max) = check::guarded(1, f32::NAN, |max| {
            check::guarded(1, f32::NAN, |sum| reduce2::cpu(&x, sum, max, s))
        })?;
        let (r, sum) = sum?;
        verify(
            reduce2::SPEC,
            v,
            &[x.into()],
            &[],
            vec![nan(1).into(), nan(1).into()],
            r,
            &[sum.into(), max.into()],
            sum_rtol(s.N, exact),
        )
    });
}

#[test]
fn scan() {
    let f = Family {
        name: "scan",
        yaml: include_str!("../configs/scan.yaml"),
        names: &scan::Sizes::NAMES,
        listed: scan::__CPU_ENTRIES,
        max: &[("N", 1000)],
        cap: 1000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(scan, v; N);
        let exact = g.below(2) == 0;
        check::f32_case(
            scan::SPEC,
            v,
            vec![g.f32s_or_ints(s.N, exact)],
            s.N,
            sum_rtol(s.N, exact),
            |x, o| scan::cpu(&x[0], o, s),
        )
    });
}

#[test]
fn mbbs() {
    let f = Family {
        name: "mbbs",
        yaml: include_str!("../configs/mbbs.yaml"),
        names: &mbbs::Sizes::NAMES,
        listed: mbbs::__CPU_ENTRIES,
        max: &[("I", 97), ("J", 200)],
        cap: 10_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(mbbs, v; I, J);
        let exact = g.below(2) == 0;
        check::f32_case(
            mbbs::SPEC,
            v,
            vec![g.f32s_or_ints(s.I * s.J, exact)],
            s.I,
            sum_rtol(s.I * s.J, exact),
            |x, o| mbbs::cpu(&x[0], o, s),
        )
    });
}

// ---------------------------------------------------------------------------
// Generators

#[test]
fn mandelbrot() {
    let f = Family {
        name: "mandelbrot",
        yaml: include_str!("../configs/mandelbrot.yaml"),
        names: &mandelbrot::Sizes::NAMES,
        listed: mandelbrot::__CPU_ENTRIES,
        max: &[("H", 61), ("W", 97)],
        cap: 6_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(mandelbrot, v; H, W);
        let max_iter = g.below(64) as u32;
        let n = s.H * s.W;
        let (r, o) = check::guarded(n, 0xDEAD_BEEFu32, |o| mandelbrot::cpu(o, max_iter, s))?;
        verify(
            mandelbrot::SPEC,
            v,
            &[],
            &[Value::U32(max_iter)],
            vec![vec![0xDEAD_BEEFu32; n].into()],
            r,
            &[o.into()],
            0.0,
        )
    });
}
