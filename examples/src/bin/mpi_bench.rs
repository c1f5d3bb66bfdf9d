//! Times matmul 2048³ and jacobi3d 512³ on the node layer (NOD): run it
//! under `mpirun -np N`. Per case and data contract (replicated inputs with
//! results on every rank, and distributed inputs with distributed results):
//! the slowest rank's median time and the bytes each rank sent in the
//! collectives. `mpi_bench [SCALE]` divides the sizes by SCALE (a quick run).

use std::time::Instant;

use mdh::__rt::mpi::plan;
use mdh::__rt::KernelDesc;
use mdh::mpi::{Communicator, CommunicatorCollectives, Inputs, Placement, SimpleCommunicator};
use mdh::reference::Buffer;
include!("../../kernels/src/matmul.rs");
include!("../../kernels/src/jacobi3d.rs");

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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let universe = mdh::mpi::initialize().ok_or("MPI is already initialized")?;
    let world = universe.world();
    let scale: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
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
            println!(
                "{name} {sizes:?} ranks {} nod {:?} {inputs:?}/{placement:?}: rank {} {:.1} ms, {:.1} GFLOP/s, sent {} bytes",
                world.size(),
                plan.nod,
                world.rank(),
                t * 1e3,
                flops / t / 1e9,
                sent
            );
        }
    }
    Ok(())
}
