//! Every example family on the node layer (NOD) over MPI, against the
//! reference interpreter: random sizes (1, primes, fewer points than ranks),
//! random `nod` plans, replicated and distributed inputs, results on every
//! rank, on rank 0 and distributed; and a rank passing a wrong length,
//! which must be an `Err` on every rank. `cargo test` runs it on one rank;
//! scripts/test-all.sh runs its binary under `mpirun -np N` too (every rank
//! runs the same cases: the seed is shared). It exits with a failure on any
//! rank that sees a mismatch.
//!
//! `mpi_families [CASES] [SEED]`: random cases per family (default 4).

use mdh::__rt::KernelDesc;
use mdh::mpi::{Communicator, Inputs, Placement, Plan, SimpleCommunicator};
use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_example_kernels::*;
use mdh_examples::check::{self, Rng, RTOL};

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

fn main() {
    let universe = mdh::mpi::initialize().expect("MPI initializes once");
    let world = universe.world();
    let args: Vec<String> = std::env::args().collect();
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
    ];
    let mut rng = Rng::new(seed);
    let mut failures = 0;
    let mut runs = 0;
    for f in &families {
        for case in 0..cases {
            let outcome = run_case(&world, f, &mut rng, case);
            runs += 1;
            if let Err(e) = outcome {
                failures += 1;
                let name = &(f.desc)().name;
                eprintln!("rank {}: {name} case {case}: {e}", world.rank());
            }
        }
    }
    println!(
        "rank {} of {}: {runs} cases, {failures} failed, {} bytes sent",
        world.rank(),
        world.size(),
        mdh::mpi::bytes_sent()
    );
    if failures > 0 {
        std::process::exit(1);
    }
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
        while left % p == 0 {
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

fn run_case(
    world: &SimpleCommunicator,
    f: &Family,
    rng: &mut Rng,
    case: usize,
) -> Result<(), String> {
    let kernel = mdh::reference::kernel(f.spec).map_err(|e| e.to_string())?;
    let desc = (f.desc)();
    let ranks = world.size() as usize;
    let rank = world.rank() as usize;
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
    let mut want = init.clone();
    let reference = check::reference(f.spec, &sizes, &inputs, &mut want, &params);
    let nod = draw_nod(desc.dims.len(), ranks, rng);
    let plan = if case % 2 == 0 {
        mdh::__rt::mpi::plan(world, desc, Some(&nod), &sizes)
    } else {
        mdh::__rt::mpi::plan(world, desc, None, &sizes)
    }
    .map_err(|e| format!("plan: {e}"))?;
    let what = |m: &str| format!("sizes {sizes:?}, nod {:?}, {m}", plan.nod);

    for in_mode in [Inputs::Replicated, Inputs::Distributed] {
        let ins: Vec<Buffer> = match in_mode {
            Inputs::Replicated => inputs.clone(),
            Inputs::Distributed => (0..inputs.len())
                .map(|b| sub_box(&inputs[b], &in_shapes[b], plan.input_part(b)))
                .collect(),
        };
        for placement in [Placement::All, Placement::Root, Placement::Distributed] {
            let mode = what(&format!("{in_mode:?} inputs, {placement:?} results"));
            let mut got: Vec<Buffer> = match placement {
                Placement::Distributed => (0..init.len())
                    .map(|b| sub_box(&init[b], &out_shapes[b], plan.output_part(b)))
                    .collect(),
                _ => init.clone(),
            };
            let r = (f.run)(
                world,
                Some(&plan),
                in_mode,
                placement,
                &ins,
                &mut got,
                &params,
                &sizes,
            );
            match (&r, &reference) {
                (Err(_), Err(_)) => continue,
                (Ok(()), Err(e)) => {
                    return Err(format!("{mode}: ran, but the interpreter fails: {e}"))
                }
                (Err(e), Ok(())) => return Err(format!("{mode}: {e}")),
                (Ok(()), Ok(())) => {}
            }
            let expect: Vec<Buffer> = match placement {
                // Idle ranks hold no part (a scalar's part is the scalar).
                Placement::Distributed if plan.region().is_none() => continue,
                Placement::Distributed => (0..want.len())
                    .map(|b| sub_box(&want[b], &out_shapes[b], plan.output_part(b)))
                    .collect(),
                Placement::Root if rank != 0 => continue,
                _ => want.clone(),
            };
            for (o, (g, w)) in got.iter().zip(&expect).enumerate() {
                check::compare(&format!("output #{o}"), g, w, RTOL)
                    .map_err(|e| format!("{mode}: {e}"))?;
            }
        }
    }

    // A wrong length on the last rank: an `Err` on every rank.
    if !inputs.is_empty() || !init.is_empty() {
        let mut ins = inputs.clone();
        let mut outs = init.clone();
        if rank == ranks - 1 {
            match ins.first_mut() {
                Some(b) => *b = Buffer::zeros(b.ty(), b.len() + 1),
                None => outs[0] = Buffer::zeros(outs[0].ty(), outs[0].len() + 1),
            }
        }
        let r = (f.run)(
            world,
            Some(&plan),
            Inputs::Replicated,
            Placement::All,
            &ins,
            &mut outs,
            &params,
            &sizes,
        );
        if r.is_ok() {
            return Err(what("a wrong length on the last rank was accepted"));
        }
    }
    Ok(())
}
