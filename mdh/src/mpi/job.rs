//! One NOD call: its arguments checked and agreed on by every rank, the
//! rank's box, and the collectives that re-compose the parts.

use mpi::collective::SystemOperation;
use mpi::topology::{Color, Communicator, SimpleCommunicator};
use mpi::traits::CommunicatorCollectives;

use super::ops::{OutBuf, Points};
use super::plan::{len, rebase, Plan, Ranges};
use super::{Inputs, Placement};
use crate::cpu::Region;
use mdh_rt::desc::{ArgSizes, Bound, BufDesc, KernelDesc, Linear};
use mdh_rt::DimKind;
use mdh_rt::Error;

/// A NOD call on this rank (what a generated `NAME::mpi::run_with` drives).
pub struct Job<'a, C: Communicator> {
    comm: &'a C,
    kernel: String,
    plan: Plan,
    placement: Placement,
    bound: Bound,
}

impl<'a, C: Communicator> Job<'a, C> {
    /// Checks this rank's arguments (`args`: the sizes and the buffers'
    /// lengths; the parts `nod` per dimension or the default) and agrees
    /// with every rank of `comm` that all are valid and the same: an `Err`
    /// on every rank otherwise, before any data moves.
    pub fn new(
        comm: &'a C,
        desc: &KernelDesc,
        nod: Option<&[usize]>,
        inputs: Inputs,
        placement: Placement,
        args: ArgSizes<'_>,
    ) -> Result<Self, Error> {
        let (ranks, rank) = (comm.size() as usize, comm.rank() as usize);
        let local = prepare(desc, nod, inputs, placement, args, ranks, rank);
        // What every rank must pass alike.
        let nod_hash = nod.map_or(0, |n| {
            n.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
                (h ^ x as u64).wrapping_mul(0x100_0000_01b3)
            })
        });
        let mut fingerprint: Vec<u64> = args.sizes.iter().map(|&s| s as u64).collect();
        fingerprint.extend([nod_hash, inputs as u64, placement as u64]);
        let (plan, bound) = agree(comm, &desc.name, local, &fingerprint)?;
        Ok(Job {
            comm,
            kernel: desc.name.to_string(),
            plan,
            placement,
            bound,
        })
    }

    /// The plan of this call on this rank.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// What this rank's kernel indexes its buffers with (accesses rebased
    /// onto the parts of distributed buffers).
    pub fn bound(&self) -> &Bound {
        &self.bound
    }

    /// This rank's box of the index space, `None` if it idles.
    pub fn region<const D: usize>(&self) -> Option<Region<D>> {
        let r = self.plan.region()?;
        Some(std::array::from_fn(|d| r[d]))
    }

    /// Agrees on every rank's result of its part: `Err` everywhere if any
    /// rank failed.
    pub fn agree(&self, done: Result<(), Error>) -> Result<(), Error> {
        agree(self.comm, &self.kernel, done, &[])
    }

    /// The kept dimensions of the call's md_hom.
    fn kept(&self) -> Vec<usize> {
        let kinds = self.plan.kinds();
        (0..kinds.len()).filter(|&d| kinds[d].is_kept()).collect()
    }

    /// The points of output buffer `b`'s access `a` over the kept
    /// dimensions `kept` of `region`.
    fn points<'s>(
        &'s self,
        kept: &'s [usize],
        region: &[(usize, usize)],
        b: usize,
        a: usize,
    ) -> Points<'s> {
        Points {
            lin: &self.bound.out_linear[b][a],
            region: region.to_vec(),
            dims: kept,
        }
    }

    /// The accesses of output buffer `b`.
    fn accesses(&self, b: usize) -> std::ops::Range<usize> {
        0..self.bound.out_linear[b].len()
    }

    /// Combines the ranks' parts of `outs` (one per output buffer, in
    /// declaration order): PW dimensions by all-reduce, PS
    /// dimensions by an exclusive scan and a fix-up. After it, the points
    /// of this rank's box hold their final values (a fused epilogue runs
    /// on them there, before [`Job::place`]).
    pub fn combine(&self, outs: &mut [&mut dyn OutBuf]) {
        let world = self.comm.duplicate();
        let plan = &self.plan;
        let kinds = plan.kinds();
        let dims = kinds.len();
        let kept = self.kept();
        let region = plan.region();
        let rank = world.rank() as usize;

        // PW: the ranks that share a kept part combine their partial results.
        if (0..dims).any(|d| !kinds[d].is_kept() && plan.nod[d] > 1) {
            let group = split(&world, plan.group(rank, &kept));
            if let (Some(group), Some(region)) = (group, &region) {
                for (b, out) in outs.iter_mut().enumerate() {
                    for a in self.accesses(b) {
                        out.all_reduce(&group, a, &self.points(&kept, region, b, a));
                    }
                }
            }
        }

        // PS: along each split scanned dimension, innermost first (the
        // nesting order of the md_hom formula), the parts left of a rank's
        // combine onto it.
        for &d in kept.iter().rev() {
            if kinds[d] != DimKind::Ps || plan.nod[d] <= 1 {
                continue;
            }
            let others: Vec<usize> = (0..dims).filter(|&x| x != d).collect();
            let line = split(&world, plan.group(rank, &others));
            if let (Some(line), Some(region)) = (line, &region) {
                for (b, out) in outs.iter_mut().enumerate() {
                    for a in self.accesses(b) {
                        let mut totals = region.clone();
                        totals[d] = (region[d].1 - 1, region[d].1);
                        let inner: usize = kept
                            .iter()
                            .filter(|&&x| x > d)
                            .map(|&x| region[x].1 - region[x].0)
                            .product();
                        let all = self.points(&kept, region, b, a);
                        let last = self.points(&kept, &totals, b, a);
                        out.scan(&line, a, &all, &last, inner, region[d].1 - region[d].0);
                    }
                }
            }
        }
    }

    /// Places the combined results where the call's placement says: on
    /// every rank, on rank 0, or left where they are (distributed).
    pub fn place(&self, outs: &mut [&mut dyn OutBuf]) -> Result<(), Error> {
        let root = match self.placement {
            Placement::Distributed => return Ok(()),
            Placement::All => None,
            Placement::Root => Some(0),
        };
        let world = self.comm.duplicate();
        let (plan, kept, rank) = (&self.plan, self.kept(), world.rank() as usize);
        let regions: Vec<Option<Vec<(usize, usize)>>> = (0..plan.ranks)
            .map(|q| plan.region_of(q).filter(|_| plan.sends_results(q)))
            .collect();
        for (b, out) in outs.iter_mut().enumerate() {
            let per_rank = |r: &Option<Vec<(usize, usize)>>| -> Vec<Points> {
                r.iter()
                    .flat_map(|r| self.accesses(b).map(move |a| (r, a)))
                    .map(|(r, a)| self.points(&kept, r, b, a))
                    .collect()
            };
            let send = per_rank(&regions[rank]);
            let recv: Vec<Vec<Points>> = regions.iter().map(per_rank).collect();
            out.gather(&world, root, &send, &recv)
                .map_err(|e| Error::Argument(format!("kernel `{}`: {e}", self.kernel)))?;
        }
        Ok(())
    }
}

/// The sub-communicator of the ranks with the same `group` (`None`: this
/// rank takes no part). Collective over `comm`.
fn split(comm: &SimpleCommunicator, group: Option<usize>) -> Option<SimpleCommunicator> {
    let color = match group {
        Some(g) => Color::with_value(g as i32),
        None => Color::undefined(),
    };
    comm.split_by_color(color)
}

/// `local` if every rank of `comm` has an `Ok` and the same `fingerprint`,
/// else an `Err` on every rank: where the fingerprints differ, the same
/// error on every rank (a rank whose own arguments fail too says so only
/// after the ranks agree on the call: its error would hide the cause);
/// else its own error, or one naming the first rank that failed.
fn agree<C: Communicator, T>(
    comm: &C,
    kernel: &str,
    local: Result<T, Error>,
    fingerprint: &[u64],
) -> Result<T, Error> {
    let mut send = vec![if local.is_ok() {
        u64::MAX
    } else {
        comm.rank() as u64
    }];
    send.extend(fingerprint);
    send.extend(fingerprint.iter().map(|v| !v));
    let mut recv = vec![0u64; send.len()];
    comm.all_reduce_into(&send[..], &mut recv[..], SystemOperation::min());
    let n = fingerprint.len();
    if (0..n).any(|i| recv[1 + i] != !recv[1 + n + i]) {
        return Err(Error::Argument(format!(
            "kernel `{kernel}`: the ranks passed different sizes, nod plans, input or result placements; pass the same on every rank"
        )));
    }
    let local = local?;
    if recv[0] != u64::MAX {
        return Err(Error::Argument(format!(
            "kernel `{kernel}`: rank {} of {} failed (its own error says why), so no rank's results are valid",
            recv[0],
            comm.size()
        )));
    }
    Ok(local)
}

/// Checks each buffer's length: the whole buffer (its shape in `shapes`),
/// or the part of it this rank passes (`parts`), whose shape and accesses
/// (`linear`) then replace the whole buffer's.
fn fit(
    desc: &KernelDesc,
    sizes: &[usize],
    bufs: &[BufDesc],
    lens: &[usize],
    parts: Option<&[Ranges]>,
    shapes: &mut [Vec<usize>],
    linear: &mut [Vec<Linear>],
) -> Result<(), Error> {
    for (b, buf) in bufs.iter().enumerate() {
        let part = parts.map(|p| &p[b][..]);
        let expected = part.map_or_else(|| shapes[b].iter().product(), len);
        let actual = lens.get(b).copied().unwrap_or(0);
        if expected != actual {
            return Err(Error::BufferLength {
                kernel: desc.name.to_string(),
                buffer: buf.name.to_string(),
                expected,
                actual,
            });
        }
        if let Some(part) = part {
            linear[b] = rebase(&desc.name, buf, part, sizes, desc.dims.len())?;
            shapes[b] = part.iter().map(|&(lo, hi)| hi - lo).collect();
        }
    }
    Ok(())
}

/// This rank's plan and bound call, or why its arguments do not fit.
fn prepare(
    desc: &KernelDesc,
    nod: Option<&[usize]>,
    inputs: Inputs,
    placement: Placement,
    args: ArgSizes<'_>,
    ranks: usize,
    rank: usize,
) -> Result<(Plan, Bound), Error> {
    let ArgSizes {
        sizes,
        in_lens,
        out_lens,
    } = args;
    let full = desc.bind_sizes(sizes)?;
    let plan = Plan::new(desc, &full, nod, ranks, rank)?;
    let mut bound = full.clone();
    let (in_parts, out_parts) = plan.parts();
    fit(
        desc,
        sizes,
        &desc.inputs,
        in_lens,
        (inputs == Inputs::Distributed).then_some(in_parts),
        &mut bound.in_shapes,
        &mut bound.in_linear,
    )?;
    fit(
        desc,
        sizes,
        &desc.outputs,
        out_lens,
        (placement == Placement::Distributed).then_some(out_parts),
        &mut bound.out_shapes,
        &mut bound.out_linear,
    )?;
    Ok((plan, bound))
}
