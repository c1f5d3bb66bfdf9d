//! Faults of one rank in a NOD call, and the errors every rank must see:
//! a wrong buffer length is that rank's own `BufferLength` error and, on
//! the others, an error naming it; other sizes, another plan, input mode
//! or placement is the same disagreement error on every rank. And
//! `--fault die|hang` for scripts/mpi-check.sh: a rank that aborts or
//! never enters a collective.

use mdh::mpi::{Communicator, CommunicatorCollectives, Inputs, Placement, SimpleCommunicator};
use mdh::reference::Buffer;
use mdh::Error;
use mdh_examples::check::Rng;

use super::{Case, Family};

/// What one rank passes otherwise than the others.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// One buffer one element longer.
    Length,
    /// One size one larger (the buffers as before).
    Sizes,
    /// A plan with other parts per dimension.
    Nod,
    /// The other input mode.
    Inputs,
    /// Another placement of the results.
    Placement,
}

const FAULTS: [Fault; 5] = [
    Fault::Length,
    Fault::Sizes,
    Fault::Nod,
    Fault::Inputs,
    Fault::Placement,
];

/// What the disagreement error says on every rank.
const DISAGREE: &str = "the ranks passed different sizes, nod plans, input or result placements";

/// Every fault on a random rank (the same on every rank: `rng` is shared),
/// in every input mode and placement: the mismatches of what each rank's
/// `Err` says. One rank alone cannot disagree with another: it gets the
/// wrong lengths only.
pub fn every(world: &SimpleCommunicator, f: &Family, c: &Case, rng: &mut Rng) -> Vec<String> {
    let ranks = world.size() as usize;
    let mut errors = Vec::new();
    if c.inputs.is_empty() && c.init.is_empty() {
        return errors;
    }
    for in_mode in [Inputs::Replicated, Inputs::Distributed] {
        for placement in [Placement::All, Placement::Root, Placement::Distributed] {
            for fault in FAULTS {
                if ranks == 1 && !matches!(fault, Fault::Length) {
                    continue;
                }
                let bad = rng.below(ranks);
                let r = one(world, f, c, rng, fault, bad, in_mode, placement);
                if let Err(e) = r {
                    errors.push(format!(
                        "{in_mode:?} inputs, {placement:?} results, {fault:?} on rank {bad}: {e}"
                    ));
                }
            }
        }
    }
    errors
}

/// One call with `fault` on rank `bad`: `Err` with what is wrong with the
/// error this rank sees.
#[allow(clippy::too_many_arguments)]
fn one(
    world: &SimpleCommunicator,
    f: &Family,
    c: &Case,
    rng: &mut Rng,
    fault: Fault,
    bad: usize,
    in_mode: Inputs,
    placement: Placement,
) -> Result<(), String> {
    let desc = (f.desc)();
    let (ranks, rank) = (world.size() as usize, world.rank() as usize);
    let mut ins = c.inputs_for(in_mode);
    let mut outs = c.outputs_for(&c.init, placement);
    let (mut sizes, mut plan) = (c.sizes.clone(), c.plan.clone());
    let (mut in_mode_here, mut placement_here) = (in_mode, placement);
    // Drawn on every rank, used on `bad`: the ranks' generators stay alike.
    let n_in = ins.len();
    let which = rng.below(n_in + outs.len());
    let size = rng.below(sizes.len().max(1));
    let (lengthened, buffer) = match which.checked_sub(n_in) {
        None => (&mut ins[which], &desc.inputs[which].name),
        Some(o) => (&mut outs[o], &desc.outputs[o].name),
    };
    let expected = lengthened.len();
    if rank == bad {
        match fault {
            Fault::Length => *lengthened = Buffer::zeros(lengthened.ty(), expected + 1),
            Fault::Sizes if sizes.is_empty() => return Ok(()),
            Fault::Sizes => sizes[size] += 1,
            Fault::Nod => plan.nod[0] += 1,
            Fault::Inputs => {
                in_mode_here = match in_mode {
                    Inputs::Replicated => Inputs::Distributed,
                    Inputs::Distributed => Inputs::Replicated,
                }
            }
            Fault::Placement => {
                placement_here = match placement {
                    Placement::All => Placement::Root,
                    Placement::Root => Placement::Distributed,
                    Placement::Distributed => Placement::All,
                }
            }
        }
    }
    let r = (f.run)(
        world,
        Some(&plan),
        in_mode_here,
        placement_here,
        &ins,
        &mut outs,
        &c.params,
        &sizes,
    );
    let e = match r {
        Ok(()) => return Err("accepted".into()),
        Err(e) => e,
    };
    let kernel = &desc.name;
    let fits = match (fault, &e) {
        (
            Fault::Length,
            Error::BufferLength {
                kernel: k,
                buffer: b,
                expected: x,
                actual,
            },
        ) if rank == bad => k == kernel && b == buffer && *x == expected && *actual == expected + 1,
        (Fault::Length, Error::Argument(m)) if rank != bad => {
            m.contains(&format!("kernel `{kernel}`: rank {bad} of {ranks} failed"))
        }
        (Fault::Length, _) => false,
        (_, Error::Argument(m)) => m.contains(&format!("kernel `{kernel}`: {DISAGREE}")),
        _ => false,
    };
    if fits {
        Ok(())
    } else {
        Err(format!("rank {rank} saw the wrong error: {e}"))
    }
}

/// `--fault die`: the last rank aborts while the others wait in a
/// collective (the job must end with a failure, not hang); `--fault hang`:
/// the last rank never enters it (the job hangs until a time limit ends it).
pub fn provoke(world: &SimpleCommunicator, what: &str) -> std::process::ExitCode {
    if !matches!(what, "die" | "hang") {
        eprintln!("mpi_families --fault: `die` or `hang`, not `{what}`");
        return std::process::ExitCode::from(2);
    }
    if world.rank() == world.size() - 1 {
        eprintln!("rank {}: --fault {what}", world.rank());
        if what == "die" {
            std::process::abort();
        }
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    world.barrier();
    std::process::ExitCode::SUCCESS
}
