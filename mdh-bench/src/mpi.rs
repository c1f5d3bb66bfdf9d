//! `mdh-bench --mpi`: the node layer (NOD) over MPI. Runs matmul 2048³ and
//! jacobi3d 512³ (`--quick`: a quarter of each extent) under `mpirun -np 1`
//! and `-np 2`, with replicated inputs and results on every rank, and with
//! distributed inputs and results. Per case: the slowest rank's median time
//! and the bytes each rank sent in the collectives. Needs the `mpi` feature
//! (`cargo run --release -p mdh-bench --features mpi -- --mpi`) and
//! `mpirun` on PATH (as root, and with more ranks than cores, set
//! `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
//! OMPI_MCA_rmaps_base_oversubscribe=1`).

use std::process::{Command, ExitCode};
use std::time::Instant;

use mdh::__rt::mpi::plan;
use mdh::__rt::KernelDesc;
use mdh::mpi::{Communicator, CommunicatorCollectives, Inputs, Placement, SimpleCommunicator};
use mdh::reference::Buffer;
use mdh_example_kernels::{jacobi3d, matmul};

/// Set in the processes `run` starts under `mpirun`.
const ON_RANKS: &str = "MDH_BENCH_ON_RANKS";

type RunDyn = fn(
    &SimpleCommunicator,
    Option<&mdh::mpi::Plan>,
    Inputs,
    Placement,
    &[Buffer],
    &mut [Buffer],
    &[mdh::reference::Value],
    &[usize],
) -> Result<(), mdh::Error>;

/// `--mpi`: this program again under `mpirun -np 1` and `-np 2`, or, in
/// those processes, the cases.
pub fn run(quick: bool) -> ExitCode {
    if std::env::var_os(ON_RANKS).is_some() {
        return match on_ranks(quick) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mdh-bench --mpi: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let Ok(me) = std::env::current_exe() else {
        eprintln!("mdh-bench --mpi: cannot find this program's path to start it under mpirun");
        return ExitCode::FAILURE;
    };
    for ranks in [1, 2] {
        println!("== mpirun -np {ranks}");
        let mut cmd = Command::new("mpirun");
        cmd.args(["-np", &ranks.to_string()]).arg(&me).arg("--mpi");
        if quick {
            cmd.arg("--quick");
        }
        match cmd.env(ON_RANKS, "1").status() {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("mdh-bench --mpi: mpirun -np {ranks} failed ({s})");
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("mdh-bench --mpi: cannot run mpirun: {e}; install MPI (e.g. Debian's openmpi-bin) and put mpirun on PATH");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

/// The cases on this rank of MPI's world (every rank runs this).
fn on_ranks(quick: bool) -> Result<(), Box<dyn std::error::Error>> {
    let universe = mdh::mpi::initialize().ok_or("MPI is already initialized")?;
    let world = universe.world();
    let scale = if quick { 4 } else { 1 };
    let (n, m) = (2048 / scale, 512 / scale);
    let cases: [(&str, &KernelDesc, RunDyn, Vec<usize>, f64); 2] = [
        (
            "matmul",
            matmul::desc(),
            matmul::mpi::run_dyn::<SimpleCommunicator>,
            vec![n, n, n],
            2.0 * (n * n * n) as f64,
        ),
        (
            "jacobi3d",
            jacobi3d::desc(),
            jacobi3d::mpi::run_dyn::<SimpleCommunicator>,
            vec![m, m, m],
            8.0 * (m * m * m) as f64,
        ),
    ];
    for (name, desc, run, sizes, flops) in cases {
        let plan = plan(&world, desc, None, &sizes)?;
        let shape = |b: &mdh::__rt::BufDesc| -> usize {
            b.shape
                .iter()
                .map(|c| KernelDesc::eval_size(c, &sizes).unwrap_or(0))
                .product()
        };
        for (inputs, placement) in [
            (Inputs::Replicated, Placement::All),
            (Inputs::Distributed, Placement::Distributed),
        ] {
            let part = |p: &[(usize, usize)]| p.iter().map(|&(lo, hi)| hi - lo).product::<usize>();
            let ins: Vec<Buffer> = desc
                .inputs
                .iter()
                .enumerate()
                .map(|(b, d)| match inputs {
                    Inputs::Replicated => Buffer::from(vec![1.0f32; shape(d)]),
                    Inputs::Distributed => Buffer::from(vec![1.0f32; part(plan.input_part(b))]),
                })
                .collect();
            let mut outs: Vec<Buffer> = desc
                .outputs
                .iter()
                .enumerate()
                .map(|(b, d)| match placement {
                    Placement::Distributed => Buffer::from(vec![0.0f32; part(plan.output_part(b))]),
                    _ => Buffer::from(vec![0.0f32; shape(d)]),
                })
                .collect();
            let mut times = Vec::new();
            let mut sent = 0;
            for _ in 0..3 {
                world.barrier();
                let before = mdh::mpi::bytes_sent();
                let t = Instant::now();
                run(
                    &world,
                    Some(&plan),
                    inputs,
                    placement,
                    &ins,
                    &mut outs,
                    &[],
                    &sizes,
                )?;
                let mine = t.elapsed().as_secs_f64();
                sent = mdh::mpi::bytes_sent() - before;
                times.push(mdh::mpi::slowest(&world, mine));
            }
            times.sort_by(f64::total_cmp);
            let t = times[times.len() / 2];
            // Each rank's bytes; the time is the slowest rank's.
            println!(
                "{name} {sizes:?} ranks {} nod {:?} {inputs:?}/{placement:?}: {:.1} ms, {:.1} GFLOP/s, rank {} sent {:.1} MiB",
                world.size(),
                plan.nod,
                t * 1e3,
                flops / t / 1e9,
                world.rank(),
                sent as f64 / (1u64 << 20) as f64
            );
        }
    }
    Ok(())
}
