//! Property tests of the low-level plan: random valid CPU plans × random sizes
//! agree with the reference interpreter, for every example family.
//!
//! Each kernel below has a config `configs/plan_<family>.yaml` (in this
//! crate's directory, written by `scripts/gen-plan-configs.py`) with eight
//! random valid plans, each pinned with `sizes:` to different random sizes.
//! All eight are compiled into the kernel and dispatched at run time to the
//! nearest pinned sizes, so each test:
//!
//! 1. calls the kernel with exactly each pinned size vector, which must select
//!    that entry (checked with the driver's own `choose_plan`), so every
//!    plan runs at least once, in its body for exactly its sizes (constant
//!    sizes and strides, see `Gen::exact_binds` in mdh-core);
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
//! `|a - b| <= rtol · max(1, |a|, |b|)` with `rtol = max(1e-4, 4 ε √n)` for a
//! reduction of `n` terms of one sign (the summation order differs between
//! the plans and the interpreter; each order's relative error is about
//! `ε √n / 3` in practice, `n ε` at worst; see `examples/src/check.rs`), and
//! `1e-4` for element-wise scalar functions with float parameters (FMA
//! contraction may differ).

use mdh::mdh;
use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_examples::check::{self, len, verify, Rng};

// ---------------------------------------------------------------------------
// The kernels: the example families, under their own names (and configs).

mdh! {
    pub kernel plan_dot {
        inp(x: f32[N], y: f32[N]),
        out(r: f32[]),
        out_view(r: |k| ()),
        md_hom[N](|a, b| a * b, (PW(+))),
        inp_view(x: |k| (k), y: |k| (k)),
    }
}

mdh! {
    pub kernel plan_matvec {
        inp(M: f32[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| m * x, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k)),
    }
}

mdh! {
    pub kernel plan_matmul {
        inp(A: f32[I, K], B: f32[K, J]),
        out(C: f32[I, J]),
        out_view(C: |i, j, k| (i, j)),
        md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
        inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
    }
}

mdh! {
    pub kernel plan_matmul_t {
        inp(A: f32[K, I], B: f32[J, K]),
        out(C: f32[J, I]),
        out_view(C: |i, j, k| (j, i)),
        md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
        inp_view(A: |i, j, k| (k, i), B: |i, j, k| (j, k)),
    }
}

mdh! {
    pub kernel plan_bmatmul {
        inp(A: f32[NB, I, K], B: f32[NB, K, J]),
        out(C: f32[NB, I, J]),
        out_view(C: |b, i, j, k| (b, i, j)),
        md_hom[NB, I, J, K](|a, x| a * x, (CC, CC, CC, PW(+))),
        inp_view(A: |b, i, j, k| (b, i, k), B: |b, i, j, k| (b, k, j)),
    }
}

mdh! {
    pub kernel plan_conv2d {
        inp(I: f32[P + R - 1, Q + S - 1], F: f32[R, S]),
        out(O: f32[P, Q]),
        out_view(O: |p, q, r, s| (p, q)),
        md_hom[P, Q, R, S](|x, w| x * w, (CC, CC, PW(+), PW(+))),
        inp_view(I: |p, q, r, s| (p + r, q + s), F: |p, q, r, s| (r, s)),
    }
}

mdh! {
    pub kernel plan_mcc {
        inp(I: f32[N, 2 * P + R - 2, 2 * Q + S - 2, C], F: f32[K, R, S, C]),
        out(O: f32[N, P, Q, K]),
        out_view(O: |n, p, q, k, r, s, c| (n, p, q, k)),
        md_hom[N, P, Q, K, R, S, C](|x, w| x * w, (CC, CC, CC, CC, PW(+), PW(+), PW(+))),
        inp_view(
            I: |n, p, q, k, r, s, c| (n, 2 * p + r, 2 * q + s, c),
            F: |n, p, q, k, r, s, c| (k, r, s, c),
        ),
    }
}

mdh! {
    pub kernel plan_ccsdt {
        inp(A: f32[NG, ND, NA, NB], B: f32[NE, NF, NG, NC]),
        out(C: f32[NA, NB, NC, ND, NE, NF]),
        out_view(C: |a, b, c, d, e, f, g| (a, b, c, d, e, f)),
        md_hom[NA, NB, NC, ND, NE, NF, NG](|x, y| x * y, (CC, CC, CC, CC, CC, CC, PW(+))),
        inp_view(
            A: |a, b, c, d, e, f, g| (g, d, a, b),
            B: |a, b, c, d, e, f, g| (e, f, g, c),
        ),
    }
}

mdh! {
    pub kernel plan_jacobi1d {
        inp(v: f32[N + 2]),
        out(w: f32[N]),
        params(c0: f32, c1: f32),
        out_view(w: |i| (i)),
        md_hom[N](|l, m, r| c0 * (l + r) + c1 * m, (CC)),
        inp_view(v: [|i| (i), |i| (i + 1), |i| (i + 2)]),
    }
}

mdh! {
    pub kernel plan_jacobi3d {
        inp(v: f32[N + 2, M + 2, L + 2]),
        out(w: f32[N, M, L]),
        out_view(w: |i, j, k| (i, j, k)),
        md_hom[N, M, L](
            |c, xm, xp, ym, yp, zm, zp| 0.4 * c + 0.1 * (xm + xp + ym + yp + zm + zp),
            (CC, CC, CC)
        ),
        inp_view(v: [
            |i, j, k| (i + 1, j + 1, k + 1),
            |i, j, k| (i, j + 1, k + 1),
            |i, j, k| (i + 2, j + 1, k + 1),
            |i, j, k| (i + 1, j, k + 1),
            |i, j, k| (i + 1, j + 2, k + 1),
            |i, j, k| (i + 1, j + 1, k),
            |i, j, k| (i + 1, j + 1, k + 2),
        ]),
    }
}

mdh! {
    /// Record linkage: a user-defined PW operator (max of an encoded
    /// (weight, index) pair) whose scalar function reads the indices.
    pub kernel plan_prl {
        inp(n_first: i32[I], n_last: i32[I], n_year: i32[I],
            e_first: i32[J], e_last: i32[J], e_year: i32[J]),
        out(best: i64[I]),
        out_view(best: |i, j| (i)),
        md_hom[I, J](
            |[i, j], nf, nl, ny, ef, el, ey| {
                let wf = if nf == ef { 8 } else { -2 };
                let wl = if nl == el { 12 } else { -3 };
                let dy = ny - ey;
                let wy = if dy == 0 { 5 } else if dy == 1 || dy == -1 { 2 } else { -4 };
                (wf + wl + wy) as i64 * 4294967296 + (4294967295 - j as i64)
            },
            (CC, PW(|a, b| if a > b { a } else { b }))
        ),
        inp_view(
            n_first: |i, j| (i), n_last: |i, j| (i), n_year: |i, j| (i),
            e_first: |i, j| (j), e_last: |i, j| (j), e_year: |i, j| (j),
        ),
    }
}

mdh! {
    pub kernel plan_histo {
        inp(elems: u32[E], bins: u32[B]),
        out(hist: u32[B]),
        out_view(hist: |e, b| (b)),
        md_hom[E, B](|x, y| if x == y { 1 } else { 0 }, (PW(+), CC)),
        inp_view(elems: |e, b| (e), bins: |e, b| (b)),
    }
}

mdh! {
    pub kernel plan_map {
        inp(x: f32[N], y: f32[N]),
        out(z: f32[N]),
        params(alpha: f32),
        out_view(z: |i| (i)),
        md_hom[N](|a, b| alpha * a + b, (CC)),
        inp_view(x: |i| (i), y: |i| (i)),
    }
}

mdh! {
    pub kernel plan_reduce {
        inp(x: f32[N]),
        out(s: f32[]),
        out_view(s: |i| ()),
        md_hom[N](|a| a, (PW(+))),
        inp_view(x: |i| (i)),
    }
}

mdh! {
    pub kernel plan_reduce2 {
        inp(x: f32[N]),
        out(s: f32[], m: f32[]),
        out_view(s: |i| (), m: |i| ()),
        md_hom[N](|a| (a, a), (PW(+, max))),
        inp_view(x: |i| (i)),
    }
}

mdh! {
    pub kernel plan_scan {
        inp(x: f32[N]),
        out(y: f32[N]),
        out_view(y: |i| (i)),
        md_hom[N](|a| a, (PS(+))),
        inp_view(x: |i| (i)),
    }
}

mdh! {
    pub kernel plan_mbbs {
        inp(A: f32[I, J]),
        out(o: f32[I]),
        out_view(o: |i, j| (i)),
        md_hom[I, J](|a| a, (PS(+), PW(+))),
        inp_view(A: |i, j| (i, j)),
    }
}

mdh! {
    pub kernel plan_mandelbrot {
        inp(),
        out(O: u32[H, W]),
        params(max_iter: u32),
        out_view(O: |y, x| (y, x)),
        md_hom[H, W](
            |[y, x]| {
                let cr = x as f32 * 3.0 / W as f32 - 2.0;
                let ci = y as f32 * 2.0 / H as f32 - 1.0;
                let mut zr = 0.0;
                let mut zi = 0.0;
                let mut n = 0;
                for _ in 0..max_iter {
                    if zr * zr + zi * zi > 4.0 {
                        break;
                    }
                    let t = zr * zr - zi * zi + cr;
                    zi = 2.0 * zr * zi + ci;
                    zr = t;
                    n += 1;
                }
                n
            },
            (CC, CC)
        ),
        inp_view(),
    }
}

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
    // As the kernel lists them: its entries (for any machine), the default
    // plan last (line 0).
    let entry = |sizes, line| mdh::__rt::PlanEntry {
        device: "*",
        machine: None,
        sizes,
        line,
    };
    let tuned: Vec<mdh::__rt::PlanEntry> = entries
        .iter()
        .map(|(s, _)| entry(Some(&s[..]), 1))
        .chain(std::iter::once(entry(None, 0)))
        .collect();
    let mut failures = Vec::new();
    let mut hits = vec![0usize; entries.len()];
    let mut g = Rng::new(
        f.name
            .bytes()
            .fold(17, |h, b| h.wrapping_mul(31) ^ b as u64),
    );
    let mut run = |v: &[usize], g: &mut Rng, failures: &mut Vec<String>| {
        let plan = mdh::__rt::choose_plan(f.name, f.names, &tuned, v);
        hits[plan] += 1;
        if let Err(e) = case(v, g) {
            let sizes: Vec<String> = f
                .names
                .iter()
                .zip(v)
                .map(|(n, x)| format!("{n}: {x}"))
                .collect();
            failures.push(format!(
                "{} with sizes {{{}}}, plan #{plan} (pinned to {:?}) {}\n    {e}",
                f.name,
                sizes.join(", "),
                entries[plan].0,
                entries[plan].1
            ));
        }
    };
    for (i, (s, _)) in entries.iter().enumerate() {
        assert_eq!(
            mdh::__rt::choose_plan(f.name, f.names, &tuned, s),
            i,
            "{}: pinned sizes {s:?} must select entry {i}",
            f.name
        );
        run(s, &mut g, &mut failures);
    }
    for _ in 0..cases {
        let v = f.draw(&mut g, &entries);
        run(&v, &mut g, &mut failures);
    }
    println!("{}: plan hits {hits:?}", f.name);
    // Random sizes reach more than the pinned entries alone.
    let reached = hits.iter().filter(|&&h| h > 1).count();
    assert!(
        reached * 2 >= entries.len(),
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
fn sum_rtol(n: usize, exact: bool) -> f64 {
    if exact {
        0.0
    } else {
        check::sum_rtol(n)
    }
}

fn nan(n: usize) -> Vec<f32> {
    vec![f32::NAN; n]
}

/// `f32` inputs and one `f32` output of `out_len` elements, no params.
fn f32_case(
    spec: &str,
    sizes: &[usize],
    inputs: Vec<Vec<f32>>,
    out_len: usize,
    rtol: f64,
    kernel: impl FnOnce(&[Vec<f32>], &mut [f32]) -> Result<(), Error>,
) -> Result<(), String> {
    // Half of the calls write into a 64-byte aligned output (where plans
    // with `stream` write whole vectors past the caches), the others into
    // one 4 bytes off.
    let skew = sizes.iter().sum::<usize>() % 2;
    let mut buf = nan(out_len + 16);
    let start = (buf.as_ptr().align_offset(64) + skew) % 16;
    let r = kernel(&inputs, &mut buf[start..start + out_len]);
    let out = buf[start..start + out_len].to_vec();
    let ins: Vec<Buffer> = inputs.into_iter().map(Buffer::from).collect();
    verify(
        spec,
        sizes,
        &ins,
        &[],
        vec![nan(out_len).into()],
        r,
        &[out.into()],
        rtol,
    )
}

const CASES: usize = 300;

// ---------------------------------------------------------------------------
// Linear algebra

#[test]
fn dot() {
    let f = Family {
        name: "plan_dot",
        yaml: include_str!("../configs/plan_dot.yaml"),
        names: &plan_dot::Sizes::NAMES,
        max: &[("N", 100_000)],
        cap: 100_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_dot, v; N);
        let exact = g.below(2) == 0;
        let n = s.N;
        f32_case(
            plan_dot::SPEC,
            v,
            vec![g.f32s_or_ints(n, exact), g.f32s_or_ints(n, exact)],
            1,
            sum_rtol(n, exact),
            |i, o| plan_dot::cpu(&i[0], &i[1], o, s),
        )
    });
}

#[test]
fn matvec() {
    let f = Family {
        name: "plan_matvec",
        yaml: include_str!("../configs/plan_matvec.yaml"),
        names: &plan_matvec::Sizes::NAMES,
        max: &[("I", 300), ("K", 1000)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_matvec, v; I, K);
        let exact = g.below(2) == 0;
        f32_case(
            plan_matvec::SPEC,
            v,
            vec![g.f32s_or_ints(s.I * s.K, exact), g.f32s_or_ints(s.K, exact)],
            s.I,
            sum_rtol(s.K, exact),
            |x, o| plan_matvec::cpu(&x[0], &x[1], o, s),
        )
    });
}

#[test]
fn matmul() {
    let f = Family {
        name: "plan_matmul",
        yaml: include_str!("../configs/plan_matmul.yaml"),
        names: &plan_matmul::Sizes::NAMES,
        max: &[("I", 97), ("J", 97), ("K", 97)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_matmul, v; I, J, K);
        let exact = g.below(2) == 0;
        f32_case(
            plan_matmul::SPEC,
            v,
            vec![
                g.f32s_or_ints(s.I * s.K, exact),
                g.f32s_or_ints(s.K * s.J, exact),
            ],
            s.I * s.J,
            sum_rtol(s.K, exact),
            |x, o| plan_matmul::cpu(&x[0], &x[1], o, s),
        )
    });
}

#[test]
fn matmul_t() {
    let f = Family {
        name: "plan_matmul_t",
        yaml: include_str!("../configs/plan_matmul_t.yaml"),
        names: &plan_matmul_t::Sizes::NAMES,
        max: &[("I", 97), ("J", 97), ("K", 97)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_matmul_t, v; I, J, K);
        let exact = g.below(2) == 0;
        f32_case(
            plan_matmul_t::SPEC,
            v,
            vec![
                g.f32s_or_ints(s.K * s.I, exact),
                g.f32s_or_ints(s.J * s.K, exact),
            ],
            s.J * s.I,
            sum_rtol(s.K, exact),
            |x, o| plan_matmul_t::cpu(&x[0], &x[1], o, s),
        )
    });
}

#[test]
fn bmatmul() {
    let f = Family {
        name: "plan_bmatmul",
        yaml: include_str!("../configs/plan_bmatmul.yaml"),
        names: &plan_bmatmul::Sizes::NAMES,
        max: &[("NB", 7), ("I", 31), ("J", 97), ("K", 61)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_bmatmul, v; NB, I, J, K);
        let exact = g.below(2) == 0;
        let (a, b) = (
            g.f32s_or_ints(s.NB * s.I * s.K, exact),
            g.f32s_or_ints(s.NB * s.K * s.J, exact),
        );
        f32_case(
            plan_bmatmul::SPEC,
            v,
            vec![a, b],
            s.NB * s.I * s.J,
            sum_rtol(s.K, exact),
            |x, o| plan_bmatmul::cpu(&x[0], &x[1], o, s),
        )
    });
}

// ---------------------------------------------------------------------------
// Convolutions and contractions

#[test]
fn conv2d() {
    let f = Family {
        name: "plan_conv2d",
        yaml: include_str!("../configs/plan_conv2d.yaml"),
        names: &plan_conv2d::Sizes::NAMES,
        max: &[("P", 40), ("Q", 40), ("R", 7), ("S", 7)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_conv2d, v; P, Q, R, S);
        let exact = g.below(2) == 0;
        let il = len(&[s.P as i128 + s.R as i128 - 1, s.Q as i128 + s.S as i128 - 1]);
        f32_case(
            plan_conv2d::SPEC,
            v,
            vec![g.f32s_or_ints(il, exact), g.f32s_or_ints(s.R * s.S, exact)],
            s.P * s.Q,
            sum_rtol(s.R * s.S, exact),
            |x, o| plan_conv2d::cpu(&x[0], &x[1], o, s),
        )
    });
}

#[test]
fn mcc() {
    let f = Family {
        name: "plan_mcc",
        yaml: include_str!("../configs/plan_mcc.yaml"),
        names: &plan_mcc::Sizes::NAMES,
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
        let s = sizes!(plan_mcc, v; N, P, Q, K, R, S, C);
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
        f32_case(
            plan_mcc::SPEC,
            v,
            vec![i, w],
            s.N * s.P * s.Q * s.K,
            sum_rtol(s.R * s.S * s.C, exact),
            |x, o| plan_mcc::cpu(&x[0], &x[1], o, s),
        )
    });
}

#[test]
fn ccsdt() {
    let f = Family {
        name: "plan_ccsdt",
        yaml: include_str!("../configs/plan_ccsdt.yaml"),
        names: &plan_ccsdt::Sizes::NAMES,
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
        let s = sizes!(plan_ccsdt, v; NA, NB, NC, ND, NE, NF, NG);
        let exact = g.below(2) == 0;
        let (a, b) = (
            g.f32s_or_ints(s.NG * s.ND * s.NA * s.NB, exact),
            g.f32s_or_ints(s.NE * s.NF * s.NG * s.NC, exact),
        );
        let out = s.NA * s.NB * s.NC * s.ND * s.NE * s.NF;
        f32_case(
            plan_ccsdt::SPEC,
            v,
            vec![a, b],
            out,
            sum_rtol(s.NG, exact),
            |x, o| plan_ccsdt::cpu(&x[0], &x[1], o, s),
        )
    });
}

// ---------------------------------------------------------------------------
// Stencils

#[test]
fn jacobi1d() {
    let f = Family {
        name: "plan_jacobi1d",
        yaml: include_str!("../configs/plan_jacobi1d.yaml"),
        names: &plan_jacobi1d::Sizes::NAMES,
        max: &[("N", 100_000)],
        cap: 100_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_jacobi1d, v; N);
        let exact = g.below(2) == 0;
        let (c0, c1) = (g.unit() * 4.0 - 2.0, g.unit() * 4.0 - 2.0);
        let x = g.f32s_or_ints(s.N + 2, exact);
        let mut w = nan(s.N);
        let r = plan_jacobi1d::cpu(&x, &mut w, c0, c1, s);
        verify(
            plan_jacobi1d::SPEC,
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
        name: "plan_jacobi3d",
        yaml: include_str!("../configs/plan_jacobi3d.yaml"),
        names: &plan_jacobi3d::Sizes::NAMES,
        max: &[("N", 31), ("M", 31), ("L", 31)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_jacobi3d, v; N, M, L);
        let exact = g.below(2) == 0;
        let x = g.f32s_or_ints((s.N + 2) * (s.M + 2) * (s.L + 2), exact);
        f32_case(
            plan_jacobi3d::SPEC,
            v,
            vec![x],
            s.N * s.M * s.L,
            1e-4,
            |x, o| plan_jacobi3d::cpu(&x[0], o, s),
        )
    });
}

// ---------------------------------------------------------------------------
// Data mining

#[test]
fn prl() {
    let f = Family {
        name: "plan_prl",
        yaml: include_str!("../configs/plan_prl.yaml"),
        names: &plan_prl::Sizes::NAMES,
        max: &[("I", 97), ("J", 300)],
        cap: 20_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_prl, v; I, J);
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
        let mut best = sentinel.clone();
        let r = plan_prl::cpu(&x[0], &x[1], &x[2], &x[3], &x[4], &x[5], &mut best, s);
        let ins: Vec<Buffer> = x.into_iter().map(Buffer::from).collect();
        verify(
            plan_prl::SPEC,
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
        name: "plan_histo",
        yaml: include_str!("../configs/plan_histo.yaml"),
        names: &plan_histo::Sizes::NAMES,
        max: &[("E", 1000), ("B", 97)],
        cap: 30_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_histo, v; E, B);
        let elems = g.u32s(s.E, (s.B + 3) as u32);
        let bins: Vec<u32> = (0..s.B as u32).rev().collect();
        let mut hist = vec![0xDEAD_BEEFu32; s.B];
        let r = plan_histo::cpu(&elems, &bins, &mut hist, s);
        verify(
            plan_histo::SPEC,
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
        name: "plan_map",
        yaml: include_str!("../configs/plan_map.yaml"),
        names: &plan_map::Sizes::NAMES,
        max: &[("N", 100_000)],
        cap: 100_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_map, v; N);
        let exact = g.below(2) == 0;
        let alpha = g.unit() * 8.0 - 4.0;
        let (x, y) = (g.f32s_or_ints(s.N, exact), g.f32s_or_ints(s.N, exact));
        let mut z = nan(s.N);
        let r = plan_map::cpu(&x, &y, &mut z, alpha, s);
        verify(
            plan_map::SPEC,
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
        name: "plan_reduce",
        yaml: include_str!("../configs/plan_reduce.yaml"),
        names: &plan_reduce::Sizes::NAMES,
        max: &[("N", 100_000)],
        cap: 100_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_reduce, v; N);
        let exact = g.below(2) == 0;
        f32_case(
            plan_reduce::SPEC,
            v,
            vec![g.f32s_or_ints(s.N, exact)],
            1,
            sum_rtol(s.N, exact),
            |x, o| plan_reduce::cpu(&x[0], o, s),
        )
    });
}

#[test]
fn reduce2() {
    let f = Family {
        name: "plan_reduce2",
        yaml: include_str!("../configs/plan_reduce2.yaml"),
        names: &plan_reduce2::Sizes::NAMES,
        max: &[("N", 100_000)],
        cap: 100_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_reduce2, v; N);
        let exact = g.below(2) == 0;
        let x = g.f32s_or_ints(s.N, exact);
        let (mut sum, mut max) = (nan(1), nan(1));
        let r = plan_reduce2::cpu(&x, &mut sum, &mut max, s);
        verify(
            plan_reduce2::SPEC,
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
        name: "plan_scan",
        yaml: include_str!("../configs/plan_scan.yaml"),
        names: &plan_scan::Sizes::NAMES,
        max: &[("N", 1000)],
        cap: 1000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_scan, v; N);
        let exact = g.below(2) == 0;
        f32_case(
            plan_scan::SPEC,
            v,
            vec![g.f32s_or_ints(s.N, exact)],
            s.N,
            sum_rtol(s.N, exact),
            |x, o| plan_scan::cpu(&x[0], o, s),
        )
    });
}

#[test]
fn mbbs() {
    let f = Family {
        name: "plan_mbbs",
        yaml: include_str!("../configs/plan_mbbs.yaml"),
        names: &plan_mbbs::Sizes::NAMES,
        max: &[("I", 97), ("J", 200)],
        cap: 10_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_mbbs, v; I, J);
        let exact = g.below(2) == 0;
        f32_case(
            plan_mbbs::SPEC,
            v,
            vec![g.f32s_or_ints(s.I * s.J, exact)],
            s.I,
            sum_rtol(s.I * s.J, exact),
            |x, o| plan_mbbs::cpu(&x[0], o, s),
        )
    });
}

// ---------------------------------------------------------------------------
// Generators

#[test]
fn mandelbrot() {
    let f = Family {
        name: "plan_mandelbrot",
        yaml: include_str!("../configs/plan_mandelbrot.yaml"),
        names: &plan_mandelbrot::Sizes::NAMES,
        max: &[("H", 61), ("W", 97)],
        cap: 6_000,
    };
    run_family(&f, CASES, |v, g| {
        let s = sizes!(plan_mandelbrot, v; H, W);
        let max_iter = g.below(64) as u32;
        let n = s.H * s.W;
        let mut o = vec![0xDEAD_BEEFu32; n];
        let r = plan_mandelbrot::cpu(&mut o, max_iter, s);
        verify(
            plan_mandelbrot::SPEC,
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
