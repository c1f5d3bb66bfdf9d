//! The NOD plan: which box of the index space each rank computes and
//! which part of each buffer it reads or holds.

use mdh_rt::desc::{affine_offset, AccessDesc, Bound, BufDesc, KernelDesc, Linear};
use mdh_rt::nod::default_nod;
use mdh_rt::DimKind;
use mdh_rt::Error;

/// A half-open range per dimension (of the index space or of a buffer).
pub type Ranges = Vec<(usize, usize)>;

/// The NOD plan of one call on one rank: `NAME::mpi::plan` (the
/// configured or default parts) or `NAME::mpi::plan_with` (given parts).
///
/// ```no_run
/// mdh::mdh! {
///     pub kernel matvec {
///         inp(M: f32[I, K], v: f32[K]),
///         out(w: f32[I]),
///         out_view(w: |i, k| (i)),
///         md_hom[I, K](|m, x| m * x, (CC, PW(+))),
///         inp_view(M: |i, k| (i, k), v: |i, k| (k)),
///     }
/// }
/// use mdh::mpi::Communicator as _;
/// let universe = mdh::mpi::initialize().ok_or("MPI is already initialized")?;
/// let world = universe.world();
/// // All ranks along I: each computes some rows of w.
/// let plan = matvec::mpi::plan_with(&world, &[world.size() as usize, 1], matvec::Sizes { I: 512, K: 4096 })?;
/// println!("rank {} computes rows {:?}", plan.rank, plan.output_part(0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Parts per md_hom dimension (their product is the number of ranks).
    pub nod: Vec<usize>,
    /// The number of ranks and this rank.
    pub ranks: usize,
    pub rank: usize,
    extents: Vec<usize>,
    kinds: Vec<DimKind>,
    inputs: Vec<Ranges>,
    outputs: Vec<Ranges>,
}

/// Splits `0..extent` into at most `parts` nearly equal, non-empty ranges
/// (one empty range for an empty extent).
fn chunks(extent: usize, parts: usize) -> Ranges {
    let parts = parts.clamp(1, extent.max(1));
    (0..parts)
        .map(|j| (extent * j / parts, extent * (j + 1) / parts))
        .collect()
}

impl Plan {
    /// The plan of rank `rank` of `ranks` for a call bound to `bound`:
    /// `nod` if given (validated), else [`default_nod`].
    pub(crate) fn new(
        desc: &KernelDesc,
        bound: &Bound,
        nod: Option<&[usize]>,
        ranks: usize,
        rank: usize,
    ) -> Result<Plan, Error> {
        let d = bound.extents.len();
        let nod = match nod {
            Some(n) => {
                if n.len() != d || n.contains(&0) || n.iter().product::<usize>() != ranks {
                    return Err(Error::Argument(format!(
                        "kernel `{}`: nod {n:?} needs one part count (≥ 1) per md_hom dimension ({d}) whose product is the number of ranks ({ranks})",
                        desc.name
                    )));
                }
                n.to_vec()
            }
            None => default_nod(&bound.extents, &desc.kinds, ranks),
        };
        let mut plan = Plan {
            nod,
            ranks,
            rank,
            extents: bound.extents.clone(),
            kinds: desc.kinds.to_vec(),
            inputs: Vec::new(),
            outputs: Vec::new(),
        };
        let region = plan.region();
        plan.inputs = hulls(&desc.inputs, region.as_deref(), &bound.sizes);
        plan.outputs = hulls(&desc.outputs, region.as_deref(), &bound.sizes);
        Ok(plan)
    }

    /// The part coordinates of `rank` (row-major over the dimensions).
    pub(crate) fn coords(&self, rank: usize) -> Vec<usize> {
        let mut rest = rank;
        let mut c = vec![0; self.nod.len()];
        for d in (0..self.nod.len()).rev() {
            c[d] = rest % self.nod[d];
            rest /= self.nod[d];
        }
        c
    }

    /// The box of the index space `rank` computes; `None`: it idles (a
    /// dimension has fewer points than parts).
    pub fn region_of(&self, rank: usize) -> Option<Ranges> {
        let c = self.coords(rank);
        (0..self.nod.len())
            .map(|d| chunks(self.extents[d], self.nod[d]).get(c[d]).copied())
            .collect()
    }

    /// This rank's box ([`Plan::region_of`]).
    pub fn region(&self) -> Option<Ranges> {
        self.region_of(self.rank)
    }

    /// The part of input `b` this rank reads: a range per dimension of the
    /// buffer (all its index functions over the box, halos included).
    pub fn input_part(&self, b: usize) -> &[(usize, usize)] {
        &self.inputs[b]
    }

    /// The part of output `b` this rank holds after a
    /// [`Placement::Distributed`](super::Placement::Distributed) call (an
    /// idle rank holds nothing: its parts are empty, but a scalar's, which
    /// it does not write).
    pub fn output_part(&self, b: usize) -> &[(usize, usize)] {
        &self.outputs[b]
    }

    /// The parts of every input and output this rank reads or holds.
    pub(crate) fn parts(&self) -> (&[Ranges], &[Ranges]) {
        (&self.inputs, &self.outputs)
    }

    /// Whether `rank` computes a box and is the first of those that share
    /// its kept part (its PW coordinates are all 0): it sends that part's
    /// results in gathers.
    pub(crate) fn sends_results(&self, rank: usize) -> bool {
        let c = self.coords(rank);
        self.region_of(rank).is_some()
            && (0..self.nod.len()).all(|d| self.kinds[d].is_kept() || c[d] == 0)
    }

    /// The index of `rank`'s part among the parts of the dimensions `dims`
    /// (row-major), or `None` if it idles: ranks with the same index form
    /// a group.
    pub(crate) fn group(&self, rank: usize, dims: &[usize]) -> Option<usize> {
        self.region_of(rank)?;
        let c = self.coords(rank);
        Some(dims.iter().fold(0, |g, &d| g * self.nod[d] + c[d]))
    }

    pub(crate) fn kinds(&self) -> &[DimKind] {
        &self.kinds
    }
}

/// The NOD plan of a call with `sizes` on this rank of `comm`: `nod` parts
/// per md_hom dimension, or the default. Local: no rank waits for another.
pub fn plan<C: mpi::topology::Communicator>(
    comm: &C,
    desc: &KernelDesc,
    nod: Option<&[usize]>,
    sizes: &[usize],
) -> Result<Plan, Error> {
    let bound = desc.bind_sizes(sizes)?;
    Plan::new(
        desc,
        &bound,
        nod,
        comm.size() as usize,
        comm.rank() as usize,
    )
}

/// Number of elements of a part.
pub(crate) fn len(part: &[(usize, usize)]) -> usize {
    part.iter().map(|&(lo, hi)| hi - lo).product()
}

/// Per buffer, the smallest box holding every access over `region` (empty
/// ranges where the rank idles or the box is empty).
fn hulls(bufs: &[BufDesc], region: Option<&[(usize, usize)]>, sizes: &[usize]) -> Vec<Ranges> {
    bufs.iter()
        .map(|b| {
            let empty = vec![(0, 0); b.shape.len()];
            let Some(region) = region.filter(|r| r.iter().all(|&(lo, hi)| lo < hi)) else {
                return empty;
            };
            if b.accesses.is_empty() {
                return empty;
            }
            (0..b.shape.len())
                .map(|r| {
                    let (lo, hi) = b
                        .accesses
                        .iter()
                        .map(|a| box_range(a, r, region, sizes))
                        .fold((i128::MAX, i128::MIN), |(l, h), (a, b)| {
                            (l.min(a), h.max(b))
                        });
                    // In bounds: `bind` checked every access over the whole space.
                    (lo as usize, hi as usize + 1)
                })
                .collect()
        })
        .collect()
}

/// Minimum and maximum of component `r` of access `a` over a non-empty box.
fn box_range(a: &AccessDesc, r: usize, region: &[(usize, usize)], sizes: &[usize]) -> (i128, i128) {
    let c = &a.components[r];
    let off = affine_offset(c, sizes);
    c.dims
        .iter()
        .zip(region)
        .fold((off, off), |(lo, hi), (&k, &(a, b))| {
            let (x, y) = (k as i128 * a as i128, k as i128 * (b as i128 - 1));
            (lo + x.min(y), hi + x.max(y))
        })
}

/// The accesses of `buf` flattened onto its part `part` (row-major over the
/// part): what a rank that holds only the part indexes it with.
pub(crate) fn rebase(
    kernel: &str,
    buf: &BufDesc,
    part: &[(usize, usize)],
    sizes: &[usize],
    dims: usize,
) -> Result<Vec<Linear>, Error> {
    let overflow = || Error::SizeOverflow {
        kernel: kernel.to_string(),
        what: format!("an index of the part of `{}`", buf.name),
    };
    buf.accesses
        .iter()
        .map(|a| {
            let mut base: i128 = 0;
            let mut coefs = vec![0i128; dims];
            let mut stride: i128 = 1;
            for (comp, &(lo, hi)) in a.components.iter().zip(part).rev() {
                base += (affine_offset(comp, sizes) - lo as i128) * stride;
                for (c, &k) in coefs.iter_mut().zip(comp.dims.iter()) {
                    *c += k as i128 * stride;
                }
                stride *= (hi - lo) as i128;
            }
            let to = |v: i128| isize::try_from(v).map_err(|_| overflow());
            Ok(Linear {
                base: to(base)?,
                coefs: coefs.into_iter().map(to).collect::<Result<_, _>>()?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_extent_with_non_empty_ranges() {
        assert_eq!(chunks(5, 2), vec![(0, 2), (2, 5)]);
        assert_eq!(chunks(2, 4), vec![(0, 1), (1, 2)]);
        assert_eq!(chunks(0, 3), vec![(0, 0)]);
    }
}
