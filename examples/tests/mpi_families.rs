//! Every example family on the node layer (NOD) over MPI, against the
//! reference interpreter: random sizes (1, primes, fewer points than ranks),
//! random `nod` plans, replicated and distributed inputs, results on every
//! rank, on rank 0 and distributed; and faults (see `mpi_faults`): a random
//! rank passing a wrong length, other sizes, another plan, input mode or
//! placement, which must be an `Err` on every rank that says why. Every
//! output has guard bytes past its end (`check::guard_tail`), checked
//! after each call.
//! `cargo test` runs it on one rank; scripts/mpi-check.sh runs its binary
//! under `mpirun -np N` too (every rank runs the same cases: the seed is
//! shared). It exits with a failure on any rank that sees a mismatch, after
//! every case: a rank that stopped at its first mismatch would leave the
//! others waiting in the collectives of the next call.
//!
//! `mpi_families [CASES] [SEED]`: random cases per family (default 4).
//! `mpi_families --fault die|hang`: the last rank aborts, or never enters
//! the collective the others wait in (what scripts/mpi-check.sh shows its
//! time limit and MPI's own error handling end).

use mdh::__rt::KernelDesc;
use mdh::mpi::{Communicator, Inputs, Placement, Plan, SimpleCommunicator};
use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_example_kernels::*;
use mdh_examples::check::{self, Rng, RTOL};

mod mpi_faults;

type RunDyn = fn(
    &SimpleCommunicator,
    Option<&Plan>,
    Inputs,
    Placement,
    &[Buffer],
    &mut [Buffer],
    &[Value],
    &[usize],
) -> Result<(), Error>;

/// One family: its source, description and generic entry.
struct Family {
    spec: &'static str,
    desc: fn() -> &'static KernelDesc,
    run: RunDyn,
}

macro_rules! families {
    ($($k:ident),* $(,)?) => {
        vec![$(Family {
            spec: $k::SPEC,
            desc: $k::desc,
            run: $k::mpi::run_dyn::<SimpleCommunicator>,
        }),*]
    };
}

/// Largest index space a case draws (the interpreter runs it on every rank).
const MAX_POINTS: usize = 6000;

fn main() -> std::process::ExitCode {
    let universe = mdh::mpi::initialize().expect("MPI initializes once");
    let world = universe.world();
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--fault") {
        return mpi_faults::provoke(&world, args.get(2).map_or("", String::as_str));
    }
    let cases: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(4);
    let seed: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(23);
    let families = families![
        dot,
        matvec,
        matmul,
        matmul_t,
        bmatmul,
        conv2d,
        mcc,
        mcc_capsule,
        ccsdt,
        jacobi1d,
        jacobi2d,
        jacobi3d,
        prl,
        histo,
        genhisto,
        map,
        reduce,
        reduce2,
        scan,
        mbbs,
        mandelbrot,
        map_half,
        matvec_f16,
        matmul_bf16,
    ];
    let mut rng = Rng::new(seed);
    let mut failures = 0;
    let mut runs = 0;
    for f in &families {
        for case in 0..cases {
            runs += 1;
            let name = &(f.desc)().name;
            let errors = run_case(&world, f, &mut rng, case);
            failures += usize::from(!errors.is_empty());
            for e in errors {
                eprintln!("rank {}: {name} case {case}: {e}", world.rank());
            }
        }
    }
    let errors = stages(&world);
    runs += 1;
    failures += usize::from(!errors.is_empty());
    for e in errors {
        eprintln!("rank {}: kernels of stages: {e}", world.rank());
    }
    let errors = guarded_both_sides(&world);
    runs += 1;
    failures += usize::from(!errors.is_empty());
    for e in errors {
        eprintln!("rank {}: guarded matvec and jacobi1d: {e}", world.rank());
    }
    println!(
        "rank {} of {}: {runs} cases, {failures} failed, {} bytes sent",
        world.rank(),
        world.size(),
        mdh::mpi::bytes_sent()
    );
    if failures > 0 {
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}

/// The kernels of stages (`softmax`, `matmul_bias_relu`, `layernorm`,
/// `attention`) through their
/// `mpi::run` (each stage's in order, an epilogue in its producer's)
/// against the interpreter, on every rank; every rank makes every call.
fn stages(world: &SimpleCommunicator) -> Vec<String> {
    let mut g = Rng::new(39);
    let mut errors = Vec::new();
    for (i, j) in [(1, 1), (13, 97), (31, 2)] {
        let s = softmax::Sizes { I: i, J: j };
        let x = vec![g.f32s_in(i * j, -4.0, 4.0)];
        let r = check::f32_case(
            softmax::SPEC,
            &s.values(),
            x,
            i * j,
            check::sum_rtol(j),
            |x, o| softmax::mpi::run(world, &x[0], o, s),
        );
        errors.extend(r.err().map(|e| format!("softmax {s:?}: {e}")));
    }
    // Its epilogue runs after the collectives: of a gather (the kept
    // dimensions split) and, where they cannot feed the ranks (1 × 1, 1 ×
    // 2), of an all-reduce of the split reduction `K` before it.
    for (i, j, k) in [(1, 1, 1), (7, 13, 5), (31, 2, 97), (1, 1, 97), (1, 2, 97)] {
        let s = matmul_bias_relu::Sizes { I: i, J: j, K: k };
        let x = vec![
            g.f32s_in(i * k, -1.0, 1.0),
            g.f32s_in(k * j, -1.0, 1.0),
            g.f32s_in(j, -1.0, 1.0),
        ];
        let r = check::f32_case(
            matmul_bias_relu::SPEC,
            &s.values(),
            x,
            i * j,
            check::sum_rtol(k),
            |x, o| matmul_bias_relu::mpi::run(world, &x[0], &x[1], &x[2], o, s),
        );
        errors.extend(r.err().map(|e| format!("matmul_bias_relu {s:?}: {e}")));
    }
    // The epilogue's own argument wrong on the last rank alone (its bias
    // one element short): an `Err` on every rank, none left waiting in a
    // collective.
    let (i, j, k) = (7, 13, 5);
    let s = matmul_bias_relu::Sizes { I: i, J: j, K: k };
    let last = world.rank() + 1 == world.size();
    let bias = vec![0.5f32; if last { j - 1 } else { j }];
    let (a, b, mut c) = (
        vec![1.0f32; i * k],
        vec![1.0f32; k * j],
        vec![0.0f32; i * j],
    );
    if matmul_bias_relu::mpi::run(world, &a, &b, &bias, &mut c, s).is_ok() {
        errors.push("matmul_bias_relu with a short bias on the last rank: Ok".into());
    }
    let eps = 1e-5;
    for (i, j) in [(1, 1), (13, 97), (31, 2)] {
        let s = layernorm::Sizes { I: i, J: j };
        let x = vec![
            g.f32s_in(i * j, -4.0, 4.0),
            g.f32s_in(j, -1.0, 1.0),
            g.f32s_in(j, -1.0, 1.0),
        ];
        let r = check::f32_case_with(
            layernorm::SPEC,
            &s.values(),
            x,
            &[Value::F32(eps)],
            i * j,
            check::sum_rtol(j),
            |x, o| layernorm::mpi::run(world, &x[0], &x[1], &x[2], o, eps, s),
        );
        errors.extend(r.err().map(|e| format!("layernorm {s:?}: {e}")));
    }
    for (i, j, d, e) in [(1, 1, 1, 1), (7, 13, 5, 3), (13, 31, 16, 9), (1, 29, 4, 1)] {
        let s = attention::Sizes {
            I: i,
            J: j,
            D: d,
            E: e,
        };
        let scale = 1.0 / (d as f32).sqrt();
        let x = vec![
            g.f32s_in(i * d, -1.0, 1.0),
            g.f32s_in(j * d, -1.0, 1.0),
            g.f32s(j * e),
        ];
        let r = check::f32_case_with(
            attention::SPEC,
            &s.values(),
            x,
            &[Value::F32(scale)],
            i * e,
            check::sum_rtol(j.max(d)),
            |x, o| attention::mpi::run(world, &x[0], &x[1], &x[2], o, scale, s),
        );
        errors.extend(r.err().map(|e| format!("attention {s:?}: {e}")));
    }
    errors
}

/// matvec (a PW dimension: an all-reduce) and jacobi1d (a CC one: a
/// gather) through their typed `mpi::run_with` into outputs with guards on
/// both sides (`check::Guarded`; the generic cases' `Vec` outputs have them
/// past the end only), for each placement; every rank makes every call.
fn guarded_both_sides(world: &SimpleCommunicator) -> Vec<String> {
    let (i, k) = (37, 29);
    let mut g = Rng::new(5);
    let (m, v) = (g.f32s(i * k), g.f32s(k));
    let mv = matvec::Sizes { I: i, K: k };
    let (x, c0, c1) = (g.f32s(i + 2), 0.5f32, -0.25f32);
    let jac = jacobi1d::Sizes { N: i };
    let mut want_mv = vec![f32::NAN; i];
    let mut want_jac = vec![f32::NAN; i];
    matvec::cpu(&m, &v, &mut want_mv, mv).expect("matvec on the CPU");
    jacobi1d::cpu(&x, &mut want_jac, c0, c1, jac).expect("jacobi1d on the CPU");
    let mut errors = Vec::new();
    for placement in [Placement::All, Placement::Root, Placement::Distributed] {
        let mut one = |name: &str,
                       plan: Result<Plan, Error>,
                       want: &[f32],
                       run: &mut dyn FnMut(&mut [f32]) -> Result<(), Error>| {
            // The rows this rank passes: its part where results are
            // distributed, else all of them.
            let (lo, hi) = match (placement, plan) {
                (Placement::Distributed, Ok(p)) => {
                    p.output_part(0).first().copied().unwrap_or((0, 0))
                }
                _ => (0, want.len()),
            };
            let what = format!("{name}, {placement:?}");
            match check::guarded(hi - lo, f32::NAN, run) {
                Err(e) => errors.push(format!("{what}: {e}")),
                Ok((Err(e), _)) => errors.push(format!("{what}: {e}")),
                // Only rank 0 holds all results under `Root`.
                Ok((Ok(()), _)) if placement == Placement::Root && world.rank() != 0 => {}
                Ok((Ok(()), got)) => {
                    let want = Buffer::from(want[lo..hi].to_vec());
                    if let Err(e) = check::compare(&what, &Buffer::from(got), &want, RTOL) {
                        errors.push(e);
                    }
                }
            }
        };
        one("matvec", matvec::mpi::plan(world, mv), &want_mv, &mut |w| {
            matvec::mpi::run_with(world, None, Inputs::Replicated, placement, &m, &v, w, mv)
        });
        one(
            "jacobi1d",
            jacobi1d::mpi::plan(world, jac),
            &want_jac,
            &mut |w| {
                jacobi1d::mpi::run_with(
                    world,
                    None,
                    Inputs::Replicated,
                    placement,
                    &x,
                    w,
                    c0,
                    c1,
                    jac,
                )
            },
        );
    }
    errors
}

/// Sizes whose index space has at most [`MAX_POINTS`] points: each 1, a
/// small prime, or below the number of ranks.
fn draw_sizes(desc: &KernelDesc, rng: &mut Rng, ranks: usize) -> Vec<usize> {
    let choices = [1, 2, 3, 5, 7, 13, 17, 31];
    loop {
        let sizes: Vec<usize> = (0..desc.size_params.len())
            .map(|_| match rng.below(4) {
                0 => 1 + rng.below(ranks.max(1)),
                _ => choices[rng.below(choices.len())],
            })
            .collect();
        let points = desc
            .dims
            .iter()
            .map(|c| KernelDesc::eval_size(c, &sizes))
            .try_fold(1usize, |p, e| e.and_then(|e| p.checked_mul(e)));
        if points.is_some_and(|p| p <= MAX_POINTS) {
            return sizes;
        }
    }
}

/// Parts per dimension whose product is `ranks`: each prime factor of
/// `ranks` to a random dimension.
fn draw_nod(dims: usize, ranks: usize, rng: &mut Rng) -> Vec<usize> {
    let mut nod = vec![1; dims];
    let mut left = ranks;
    let mut p = 2;
    while left > 1 {
        while left.is_multiple_of(p) {
            nod[rng.below(dims)] *= p;
            left /= p;
        }
        p += 1;
    }
    nod
}

/// The elements of `full` (row-major over `shape`) inside the box `part`.
fn sub_box(full: &Buffer, shape: &[usize], part: &[(usize, usize)]) -> Buffer {
    let n: usize = part.iter().map(|&(lo, hi)| hi - lo).product();
    let mut out = Buffer::zeros(full.ty(), n);
    let mut idx: Vec<usize> = part.iter().map(|r| r.0).collect();
    for i in 0..n {
        let off = idx.iter().zip(shape).fold(0, |o, (&x, &e)| o * e + x);
        out.set(i, full.get(off));
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < part[d].1 {
                break;
            }
            idx[d] = part[d].0;
        }
    }
    out
}

/// A value a buffer of `like`'s type can hold, from a small integer.
fn value(like: &Buffer, x: i64) -> Value {
    let v = Value::I64(x);
    v.cast(like.ty()).unwrap_or(Value::Bool(x % 2 == 1))
}

/// One family's random case: sizes, plan, whole inputs and outputs (the
/// outputs' initial contents), and what each rank passes in each mode.
struct Case {
    sizes: Vec<usize>,
    plan: Plan,
    inputs: Vec<Buffer>,
    init: Vec<Buffer>,
    params: Vec<Value>,
    in_shapes: Vec<Vec<usize>>,
    out_shapes: Vec<Vec<usize>>,
}

impl Case {
    /// This rank's inputs in `in_mode`.
    fn inputs_for(&self, in_mode: Inputs) -> Vec<Buffer> {
        match in_mode {
            Inputs::Replicated => self.inputs.clone(),
            Inputs::Distributed => (0..self.inputs.len())
                .map(|b| sub_box(&self.inputs[b], &self.in_shapes[b], self.plan.input_part(b)))
                .collect(),
        }
    }

    /// This rank's outputs (`bufs`: whole outputs) for `placement`.
    fn outputs_for(&self, bufs: &[Buffer], placement: Placement) -> Vec<Buffer> {
        match placement {
            Placement::Distributed => (0..bufs.len())
                .map(|b| sub_box(&bufs[b], &self.out_shapes[b], self.plan.output_part(b)))
                .collect(),
            _ => bufs.to_vec(),
        }
    }
}

/// A random case of `f` for the ranks of `world`.
fn draw_case(
    world: &SimpleCommunicator,
    f: &Family,
    rng: &mut Rng,
    case: usize,
) -> Result<Case, String> {
    let kernel = mdh::reference::kernel(f.spec).map_err(|e| e.to_string())?;
    let desc = (f.desc)();
    let ranks = world.size() as usize;
    let sizes = draw_sizes(desc, rng, ranks);
    let shape = |code: &[mdh::__rt::SizeOp]| KernelDesc::eval_size(code, &sizes).unwrap_or(0);
    let shapes = |bufs: &[mdh::__rt::BufDesc]| -> Vec<Vec<usize>> {
        bufs.iter()
            .map(|b| b.shape.iter().map(|c| shape(c)).collect())
            .collect()
    };
    let (in_shapes, out_shapes) = (shapes(&desc.inputs), shapes(&desc.outputs));
    // Small integers: sums are exact in any order.
    let inputs: Vec<Buffer> = kernel
        .inputs
        .iter()
        .zip(&in_shapes)
        .map(|(b, s)| {
            let mut buf = Buffer::zeros(b.ty, s.iter().product());
            for i in 0..buf.len() {
                let x = rng.below(8) as i64;
                buf.set(i, value(&buf, x));
            }
            buf
        })
        .collect();
    let params: Vec<Value> = kernel
        .params
        .iter()
        .map(|p| value(&Buffer::zeros(p.ty, 0), 3))
        .collect();
    let sentinel = |b: &Buffer| value(b, 77);
    let init: Vec<Buffer> = kernel
        .outputs
        .iter()
        .zip(&out_shapes)
        .map(|(b, s)| {
            let mut buf = Buffer::zeros(b.ty, s.iter().product());
            let v = sentinel(&buf);
            for i in 0..buf.len() {
                buf.set(i, v);
            }
            buf
        })
        .collect();
    let nod = draw_nod(desc.dims.len(), ranks, rng);
    // Not collective: every rank computes the same plan (or error).
    let plan = if case.is_multiple_of(2) {
        mdh::__rt::mpi::plan(world, desc, Some(&nod), &sizes)
    } else {
        mdh::__rt::mpi::plan(world, desc, None, &sizes)
    }
    .map_err(|e| format!("plan: {e}"))?;
    Ok(Case {
        sizes,
        plan,
        inputs,
        init,
        params,
        in_shapes,
        out_shapes,
    })
}

/// Every mismatch of one random case of `f` (every input mode and
/// placement, then the faults). Every rank makes the same calls whatever
/// it sees: the mismatches are collected, never returned early.
fn run_case(world: &SimpleCommunicator, f: &Family, rng: &mut Rng, case: usize) -> Vec<String> {
    // Before any collective, and alike on every rank.
    let c = match draw_case(world, f, rng, case) {
        Ok(c) => c,
        Err(e) => return vec![e],
    };
    let rank = world.rank() as usize;
    let mut errors = Vec::new();
    let mut want = c.init.clone();
    let reference = check::reference(f.spec, &c.sizes, &c.inputs, &mut want, &c.params);
    let what = |m: &str| format!("sizes {:?}, nod {:?}, {m}", c.sizes, c.plan.nod);

    for in_mode in [Inputs::Replicated, Inputs::Distributed] {
        let ins = c.inputs_for(in_mode);
        for placement in [Placement::All, Placement::Root, Placement::Distributed] {
            let mode = what(&format!("{in_mode:?} inputs, {placement:?} results"));
            let mut got = c.outputs_for(&c.init, placement);
            got.iter_mut().for_each(check::guard_tail);
            let r = (f.run)(
                world,
                Some(&c.plan),
                in_mode,
                placement,
                &ins,
                &mut got,
                &c.params,
                &c.sizes,
            );
            match (&r, &reference) {
                (Err(_), Err(_)) => continue,
                (Ok(()), Err(e)) => {
                    errors.push(format!("{mode}: ran, but the interpreter fails: {e}"));
                    continue;
                }
                (Err(e), Ok(())) => {
                    errors.push(format!("{mode}: {e}"));
                    continue;
                }
                (Ok(()), Ok(())) => {}
            }
            for (o, g) in got.iter().enumerate() {
                if let Err(e) = check::check_tail(g) {
                    errors.push(format!("{mode}: output #{o}: {e}"));
                }
            }
            let expect: Vec<Buffer> = match placement {
                // Idle ranks hold no part (a scalar's part is the scalar).
                Placement::Distributed if c.plan.region().is_none() => continue,
                Placement::Root if rank != 0 => continue,
                _ => c.outputs_for(&want, placement),
            };
            for (o, (g, w)) in got.iter().zip(&expect).enumerate() {
                if let Err(e) = check::compare(&format!("output #{o}"), g, w, RTOL) {
                    errors.push(format!("{mode}: {e}"));
                }
            }
        }
    }
    // Faults only where the call itself succeeds: an `Err` of every rank
    // for the sizes alone would hide which error each rank must report.
    if reference.is_ok() {
        errors.extend(
            mpi_faults::every(world, f, &c, rng)
                .into_iter()
                .map(|e| what(&e)),
        );
    }
    errors
}
