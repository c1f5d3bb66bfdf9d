//! The CPU search space: the paper's Table 1 parameters of the CPU's ASM
//! (COR parts, L2/L1/REG tile sizes per dimension, the tile loops' order,
//! the memory region and layout of each input access) as tuning parameters,
//! each a list of values.
//!
//! Constraints are built into the parameters where they are structural and
//! propagated while a point is sampled or repaired where they couple
//! dimensions, so that every point handed to the measurement is a plan
//! [`CpuPlan::validate`] accepts:
//! - L1 tiles are multiples of register tiles, L2 tiles multiples of L1
//!   tiles (parameters are the multipliers), clamped to the extents;
//! - register tiles: only the innermost PW dimension may exceed 1 among PW
//!   dimensions; the register tile's accumulators stay within the
//!   registers of the machine's instruction set ([`Isa::accumulator_bytes`],
//!   at most [`MAX_REGISTER_TILE`] points over all outputs: larger tiles
//!   spill, and their fully unrolled code is slow to compile), enforced dimension by
//!   dimension when sampling and by shrinking when repairing;
//! - loop orders: permutations of the dimensions (any order of PW
//!   dimensions is legal: partial results are kept per task);
//! - packing: read in place, or a packed L1 tile with one of the access's
//!   dimensions innermost (contiguous);
//! - results: streamed past the caches or not.

use mdh_core::desc::KernelDesc;
use mdh_core::plan::{
    accumulator_bytes_per_point, reduction_lanes, simd_lanes, CpuPlan, MAX_REGISTER_TILE,
};
use mdh_core::spec::DimKind;
use mdh_core::Checked;
use mdh_rt::machine::Isa;

use crate::search::space::{distinct_steps, Space};
use crate::search::{Point, Rng};

/// COR parts (0: chosen at run time from the number of threads).
const COR: [usize; 6] = [0, 1, 2, 4, 8, 16];
/// L1 tile = register tile × one of these; L2 tile = L1 tile × one of these.
const L1_FACTORS: [usize; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];
const L2_FACTORS: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// One tuning parameter: what it sets and its values.
#[derive(Clone, Debug)]
pub enum Param {
    Cor(usize, Vec<usize>),
    Reg(usize, Vec<usize>),
    L1(usize, Vec<usize>),
    L2(usize, Vec<usize>),
    /// The loop order: the `i`-th permutation of the `d` dimensions in
    /// lexicographic order (d! values, not stored: 10 dimensions have
    /// 3.6 million).
    Order(usize),
    Pack(Vec<Vec<usize>>),
    Stream(Vec<bool>),
}

impl Param {
    fn len(&self) -> usize {
        match self {
            Param::Cor(_, v) | Param::Reg(_, v) | Param::L1(_, v) | Param::L2(_, v) => v.len(),
            Param::Order(d) => factorial(*d),
            Param::Pack(v) => v.len(),
            Param::Stream(v) => v.len(),
        }
    }
}

#[derive(Clone)]
pub struct CpuSpace {
    pub params: Vec<Param>,
    pub extents: Vec<usize>,
    /// Register tile points allowed per output.
    reg_budget: usize,
}

/// `n!`, saturated (an index into the orders of more than 20 dimensions
/// would overflow).
fn factorial(n: usize) -> usize {
    (1..=n).fold(1usize, |f, k| f.saturating_mul(k))
}

/// The `i`-th permutation of `0..d` in lexicographic order (`i < d!`).
fn permutation(mut i: usize, d: usize) -> Vec<usize> {
    let mut left: Vec<usize> = (0..d).collect();
    (0..d)
        .rev()
        .map(|rest| {
            let f = factorial(rest);
            let j = (i / f).min(left.len() - 1);
            i %= f;
            left.remove(j)
        })
        .collect()
}

/// The index of `order` among the permutations of `0..order.len()` in
/// lexicographic order, if it is one.
fn permutation_index(order: &[usize]) -> Option<usize> {
    let d = order.len();
    let mut left: Vec<usize> = (0..d).collect();
    let mut i = 0;
    for (pos, x) in order.iter().enumerate() {
        let j = left.iter().position(|y| y == x)?;
        left.remove(j);
        i += j * factorial(d - 1 - pos);
    }
    Some(i)
}

impl CpuSpace {
    /// The space of `k` at the sizes `sizes` (size-parameter order) on a
    /// machine of instruction set `isa`: register tiles whose accumulators
    /// its registers hold (on AVX2 a quarter of AVX-512's: what spills
    /// there is not worth a build).
    pub fn new(k: &Checked, sizes: &[usize], isa: Isa) -> Result<CpuSpace, String> {
        let desc = KernelDesc::from_kernel(k);
        let extents = desc
            .dims
            .iter()
            .map(|c| KernelDesc::eval_size(c, sizes))
            .collect::<Option<Vec<usize>>>()
            .ok_or("a dimension's size overflows at these sizes; give smaller --size values")?;
        let d = extents.len();
        let kinds = k.dim_kinds();
        let innermost_pw = (0..d).rev().find(|&x| kinds[x] == DimKind::Pw);
        let lanes = simd_lanes(k);
        let mut params = Vec::new();
        for (x, &ext) in extents.iter().enumerate() {
            params.push(Param::Cor(x, COR.to_vec()));
            let reg = if kinds[x] == DimKind::Pw && Some(x) != innermost_pw {
                vec![1]
            } else {
                // Lanes of partial results along the innermost PW dimension
                // are one vector of the narrowest type (`reduction_lanes`).
                let lanes = if Some(x) == innermost_pw {
                    reduction_lanes(k)
                } else {
                    lanes
                };
                let mut v: Vec<usize> = [1, 2, 3, 4, 6, 8]
                    .into_iter()
                    .chain((1..=4).map(|m| m * lanes))
                    .chain([8 * lanes])
                    .filter(|&r| r == 1 || r <= ext)
                    .collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            params.push(Param::Reg(x, reg));
            params.push(Param::L1(x, L1_FACTORS.to_vec()));
            params.push(Param::L2(x, L2_FACTORS.to_vec()));
        }
        params.push(Param::Order(d));
        for access in &k.analysis().inputs {
            let used = &access.uses;
            let mut layouts = vec![Vec::new()];
            for &inner in used {
                let mut l: Vec<usize> = used.iter().copied().filter(|&u| u != inner).collect();
                l.push(inner);
                layouts.push(l);
            }
            params.push(Param::Pack(layouts));
        }
        params.push(Param::Stream(vec![false, true]));
        let outputs = k.analysis().outputs.len().max(1);
        Ok(CpuSpace {
            params,
            extents,
            reg_budget: (MAX_REGISTER_TILE / outputs)
                .min(isa.accumulator_bytes() / accumulator_bytes_per_point(k).max(1))
                .max(1),
        })
    }

    fn reg_of(&self, p: &Point, x: usize) -> usize {
        self.params
            .iter()
            .zip(p)
            .find_map(|(q, &i)| match q {
                Param::Reg(y, v) if *y == x => Some(v[i]),
                _ => None,
            })
            .unwrap_or(1)
    }

    fn reg_points(&self, p: &Point) -> usize {
        (0..self.extents.len()).map(|x| self.reg_of(p, x)).product()
    }
}

impl Space for CpuSpace {
    type Plan = CpuPlan;

    fn cards(&self) -> Vec<usize> {
        self.params.iter().map(Param::len).collect()
    }

    /// The plan a point stands for (tiles clamped to the extents).
    fn decode(&self, p: &Point) -> CpuPlan {
        let d = self.extents.len();
        let mut plan = CpuPlan {
            nod: vec![0; d],
            cor: vec![0; d],
            l2: vec![1; d],
            l1: vec![1; d],
            reg: (0..d).map(|x| self.reg_of(p, x)).collect(),
            order: (0..d).collect(),
            pack: Vec::new(),
            stream: false,
            exact: false,
        };
        // Parameters come per dimension as cor, reg, l1, l2: L1 before L2.
        for (q, &i) in self.params.iter().zip(p) {
            match q {
                Param::Cor(x, v) => plan.cor[*x] = v[i],
                Param::Reg(..) => {}
                Param::L1(x, v) => {
                    let r = plan.reg[*x];
                    plan.l1[*x] = (r * v[i]).min(self.extents[*x].div_ceil(r).max(1) * r);
                }
                Param::L2(x, v) => {
                    let l1 = plan.l1[*x];
                    plan.l2[*x] = (l1 * v[i]).min(self.extents[*x].div_ceil(l1).max(1) * l1);
                }
                Param::Order(d) => plan.order = permutation(i, *d),
                Param::Pack(v) => plan.pack.push(v[i].clone()),
                Param::Stream(v) => plan.stream = v[i],
            }
        }
        plan
    }

    fn agrees(&self, s: usize, a: &CpuPlan, b: &CpuPlan) -> bool {
        match &self.params[s] {
            Param::Cor(x, _) => a.cor[*x] == b.cor[*x],
            Param::Reg(x, _) => a.reg[*x] == b.reg[*x],
            Param::L1(x, _) => a.l1[*x] == b.l1[*x],
            Param::L2(x, _) => a.l2[*x] == b.l2[*x],
            Param::Order(_) => a.order == b.order,
            // The j-th Pack parameter is input access j.
            Param::Pack(_) => {
                let j = self.params[..s]
                    .iter()
                    .filter(|q| matches!(q, Param::Pack(_)))
                    .count();
                a.pack.get(j) == b.pack.get(j)
            }
            Param::Stream(_) => a.stream == b.stream,
        }
    }

    fn value_of(&self, s: usize, plan: &CpuPlan) -> Option<usize> {
        match self.params[s] {
            Param::Order(_) => permutation_index(&plan.order),
            _ => None,
        }
    }

    /// Tile sizes and COR parts by the ratio of their values, tiles cut at
    /// the extent (larger ones cover it all alike; COR 0, chosen at run
    /// time, is far from any count), loop orders by the positions that
    /// differ.
    fn mismatch(&self, s: usize, a: &CpuPlan, b: &CpuPlan) -> f64 {
        if self.agrees(s, a, b) {
            return 0.0;
        }
        let ratio = |x: usize, y: usize| ((x.max(1) as f64).ln() - (y.max(1) as f64).ln()).abs();
        let tile = |x: usize, u: usize, v: usize| {
            let e = self.extents[x].max(1);
            ratio(u.min(e), v.min(e))
        };
        match &self.params[s] {
            Param::Cor(x, _) if a.cor[*x] == 0 || b.cor[*x] == 0 => 100.0,
            Param::Cor(x, _) => ratio(a.cor[*x], b.cor[*x]),
            Param::Reg(x, _) => tile(*x, a.reg[*x], b.reg[*x]),
            Param::L1(x, _) => tile(*x, a.l1[*x], b.l1[*x]),
            Param::L2(x, _) => tile(*x, a.l2[*x], b.l2[*x]),
            Param::Order(_) => a.order.iter().zip(&b.order).filter(|(u, v)| u != v).count() as f64,
            Param::Pack(_) | Param::Stream(_) => 1.0,
        }
    }

    /// `p` with register tiles shrunk (the largest first) until they fit
    /// the registers: the propagation of the register constraint.
    fn repair(&self, mut p: Point) -> Point {
        while self.reg_points(&p) > self.reg_budget {
            let Some((slot, _)) = self
                .params
                .iter()
                .enumerate()
                .filter_map(|(s, q)| match q {
                    Param::Reg(_, v) if p[s] > 0 => Some((s, v[p[s]])),
                    _ => None,
                })
                .max_by_key(|&(_, r)| r)
            else {
                break;
            };
            p[slot] -= 1;
        }
        p
    }

    /// A uniformly drawn value per parameter, the register tiles drawn
    /// within what the earlier dimensions left of the register budget.
    fn sample(&self, rng: &mut Rng) -> Point {
        let mut left = self.reg_budget;
        self.params
            .iter()
            .map(|q| match q {
                Param::Reg(_, v) => {
                    let fits = v.iter().filter(|&&r| r <= left).count().max(1);
                    let i = rng.below(fits);
                    left /= v[i];
                    i
                }
                _ => rng.below(q.len()),
            })
            .collect()
    }

    /// One step: a COR part count, a register tile or an L1/L2 factor to
    /// the next value up or down (tile sizes ×2 or ÷2 for the factors), a
    /// register tile with its L1 factor moved the other way (the L1 tile
    /// about kept), two adjacent loops of the order swapped, one input's
    /// packing changed, or streaming switched.
    fn neighbours(&self, p: &Point) -> Vec<Point> {
        let moved = |changes: &[(usize, usize)]| {
            let mut q = p.clone();
            for &(s, i) in changes {
                q[s] = i;
            }
            q
        };
        let adjacent = |s: usize, card: usize| {
            [p[s].checked_sub(1), Some(p[s] + 1).filter(|&i| i < card)]
                .into_iter()
                .flatten()
        };
        let mut steps = Vec::new();
        for (s, q) in self.params.iter().enumerate() {
            match q {
                Param::Cor(..) | Param::L1(..) | Param::L2(..) | Param::Stream(_) => {
                    steps.extend(adjacent(s, q.len()).map(|i| moved(&[(s, i)])));
                }
                Param::Reg(x, _) => {
                    let l1 = self
                        .params
                        .iter()
                        .position(|r| matches!(r, Param::L1(y, _) if y == x));
                    for i in adjacent(s, q.len()) {
                        steps.push(moved(&[(s, i)]));
                        // Register tile up, L1 factor down, and vice versa.
                        if let Some(l1) = l1 {
                            let f = if i > p[s] {
                                p[l1].checked_sub(1)
                            } else {
                                Some(p[l1] + 1).filter(|&f| f < self.params[l1].len())
                            };
                            if let Some(f) = f {
                                steps.push(moved(&[(s, i), (l1, f)]));
                            }
                        }
                    }
                }
                Param::Order(d) => {
                    let order = permutation(p[s], *d);
                    for i in 1..order.len() {
                        let mut o = order.clone();
                        o.swap(i - 1, i);
                        if let Some(j) = permutation_index(&o) {
                            steps.push(moved(&[(s, j)]));
                        }
                    }
                }
                Param::Pack(layouts) => {
                    steps.extend(
                        (0..layouts.len())
                            .filter(|&i| i != p[s])
                            .map(|i| moved(&[(s, i)])),
                    );
                }
            }
        }
        distinct_steps(self, p, steps.into_iter())
    }

    /// The number of points of the space that satisfy the constraints
    /// (plans whose clamped tiles coincide are counted apart).
    fn size(&self) -> f64 {
        // Register tiles: count the combinations within the budget exactly
        // (a product-bounded count over the dimensions); the rest multiply.
        let mut counts = vec![0f64; self.reg_budget + 1];
        counts[1] = 1.0;
        let mut rest = 1f64;
        for q in &self.params {
            match q {
                Param::Reg(_, v) => {
                    let mut next = vec![0f64; self.reg_budget + 1];
                    for (prod, &c) in counts.iter().enumerate().filter(|(_, &c)| c > 0.0) {
                        for &r in v {
                            if prod * r <= self.reg_budget {
                                next[prod * r] += c;
                            }
                        }
                    }
                    counts = next;
                }
                _ => rest *= q.len() as f64,
            }
        }
        counts.iter().sum::<f64>() * rest
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::search::space::MAX_STEP_PARAMS;

    use mdh_core::fixtures::{matmul, matvec};

    /// The examples' kernel `name`, as the tuner finds it.
    pub(crate) fn example(name: &str) -> Checked {
        let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kernels");
        crate::source::find(&examples, Some(name))
            .expect("an example kernel")
            .kernel
    }

    /// The examples' 7-dimensional contraction.
    pub(crate) fn ccsdt() -> Checked {
        example("ccsdt")
    }

    #[test]
    fn neighbours_are_valid_plans_a_step_or_two_away() {
        for (k, sizes) in [(matmul(), vec![1024, 1024, 1024]), (ccsdt(), vec![24; 7])] {
            let s = CpuSpace::new(&k, &sizes, Isa::Avx512).unwrap();
            let order_slot = s
                .params
                .iter()
                .position(|q| matches!(q, Param::Order(_)))
                .unwrap();
            let mut rng = Rng::new(11);
            for _ in 0..30 {
                let p = s.sample(&mut rng);
                let plan = s.decode(&p);
                let next = s.neighbours(&p);
                assert!(next.len() > 10, "{} neighbours", next.len());
                let mut plans = vec![plan.clone()];
                for q in &next {
                    let changed = (0..p.len()).filter(|&i| p[i] != q[i]).count();
                    assert!((1..=MAX_STEP_PARAMS).contains(&changed), "{p:?} -> {q:?}");
                    let np = s.decode(q);
                    assert_eq!(np.validate(&k), Ok(()), "{np:?}");
                    assert!(!plans.contains(&np), "a plan twice: {np:?}");
                    plans.push(np.clone());
                    if np.order != plan.order {
                        // Two adjacent loops swapped, nothing else moved.
                        let diff: Vec<usize> = (0..plan.order.len())
                            .filter(|&i| plan.order[i] != np.order[i])
                            .collect();
                        assert!(diff.len() == 2 && diff[1] == diff[0] + 1, "{np:?}");
                        assert_eq!(changed, 1);
                        assert_ne!(p[order_slot], q[order_slot]);
                    }
                }
                // Every kind of step is among them.
                assert!(plans.iter().any(|q| q.order != plan.order));
                assert!(plans.iter().any(|q| q.pack != plan.pack));
                assert!(plans.iter().any(|q| q.reg != plan.reg));
            }
        }
    }

    #[test]
    fn lanes_of_partial_results_come_in_vectors_of_the_narrowest_type() {
        // prl: i32 inputs, i64 results; its innermost PW dimension J takes
        // register tiles of whole 16-lane vectors (plus the scalar sizes),
        // and the search starts from its default's register tile.
        let k = example("prl");
        let s = CpuSpace::new(&k, &[4096, 4096], Isa::Avx512).unwrap();
        let reg_j = s
            .params
            .iter()
            .find_map(|q| match q {
                Param::Reg(1, v) => Some(v.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(reg_j, vec![1, 2, 3, 4, 6, 8, 16, 32, 48, 64, 128]);
        let default = CpuPlan::default_for(&k);
        assert_eq!(s.decode(&s.nearest(&default)).reg, default.reg);
    }

    #[test]
    fn loop_orders_are_indexed_lexicographically() {
        let all: Vec<Vec<usize>> = (0..factorial(4)).map(|i| permutation(i, 4)).collect();
        assert_eq!(all[0], vec![0, 1, 2, 3]);
        assert_eq!(all[23], vec![3, 2, 1, 0]);
        assert!(all.windows(2).all(|w| w[0] < w[1]), "sorted, so distinct");
        for (i, o) in all.iter().enumerate() {
            assert_eq!(permutation_index(o), Some(i));
        }
        assert_eq!(permutation_index(&[0, 0, 1]), None);
        let ten = permutation(factorial(10) - 1, 10);
        assert_eq!(permutation_index(&ten), Some(factorial(10) - 1));
    }

    #[test]
    fn plans_off_the_grid_start_the_search_from_the_nearest_point() {
        let k = ccsdt();
        let s = CpuSpace::new(&k, &[16; 7], Isa::Avx512).unwrap();
        // Its L1 tiles (64 and 512 points) exceed the extent 16.
        let default = CpuPlan::default_for(&k);
        assert_eq!(s.encode(&default), None);
        let near = s.decode(&s.nearest(&default));
        assert_eq!(near.validate(&k), Ok(()));
        assert_eq!(
            (&near.cor, &near.order, &near.pack),
            (&default.cor, &default.order, &default.pack)
        );
        let cut = |v: &[usize]| v.iter().map(|&t| t.min(16)).collect::<Vec<_>>();
        assert_eq!(cut(&near.reg), cut(&default.reg));
        assert_eq!(cut(&near.l1), cut(&default.l1));
        // A plan on the grid is its own nearest.
        let mut rng = Rng::new(5);
        for _ in 0..20 {
            let plan = s.decode(&s.sample(&mut rng));
            assert_eq!(s.decode(&s.nearest(&plan)), plan);
        }
    }

    #[test]
    fn every_sampled_or_repaired_point_is_a_valid_plan() {
        let k = matmul();
        let s = CpuSpace::new(&k, &[64, 100, 48], Isa::Avx512).unwrap();
        let mut rng = Rng::new(7);
        let cards = s.cards();
        for _ in 0..2000 {
            let p = s.sample(&mut rng);
            assert_eq!(s.decode(&p).validate(&k), Ok(()), "{p:?}");
            let wild: Point = cards.iter().map(|&c| rng.below(c)).collect();
            let plan = s.decode(&s.repair(wild));
            assert_eq!(plan.validate(&k), Ok(()), "{plan:?}");
            for x in 0..3 {
                assert_eq!(plan.l1[x] % plan.reg[x], 0);
                assert_eq!(plan.l2[x] % plan.l1[x], 0);
            }
        }
    }

    #[test]
    fn default_plans_on_the_grid_are_encoded() {
        let k = matmul();
        let s = CpuSpace::new(&k, &[1024, 1024, 1024], Isa::Avx512).unwrap();
        let mut rng = Rng::new(3);
        for _ in 0..200 {
            let p = s.sample(&mut rng);
            assert_eq!(
                s.encode(&s.decode(&p)).map(|q| s.decode(&q)),
                Some(s.decode(&p))
            );
        }
        let mut off = CpuPlan::default_for(&k);
        off.l1[0] = 7;
        assert_eq!(s.encode(&off), None);
    }

    #[test]
    fn on_avx2_every_register_tile_fits_its_registers() {
        use mdh_rt::machine::PlanEntry;
        for (k, sizes) in [(matmul(), vec![1024, 1024, 1024]), (ccsdt(), vec![16; 7])] {
            let s = CpuSpace::new(&k, &sizes, Isa::Avx2).unwrap();
            let wide = CpuSpace::new(&k, &sizes, Isa::Avx512).unwrap();
            assert_eq!(s.reg_budget * 4, wide.reg_budget);
            let mut rng = Rng::new(5);
            for _ in 0..500 {
                let plan = s.decode(&s.sample(&mut rng));
                let bytes = plan.accumulator_bytes(&k);
                assert!(bytes <= Isa::Avx2.accumulator_bytes(), "{plan:?}");
                // As a `*` entry, the dispatch would run it on AVX2.
                let entry = PlanEntry {
                    device: "*",
                    machine: None,
                    sizes: None,
                    line: 1,
                    accumulator_bytes: bytes,
                    narrowed_for: None,
                    rows: None,
                    pairs: false,
                };
                assert!(entry.suits(Isa::Avx2));
            }
            // The default the AVX2 body runs fits too.
            let default = CpuPlan::default_for_isa(&k, Isa::Avx2);
            assert!(default.accumulator_bytes(&k) <= Isa::Avx2.accumulator_bytes());
        }
    }

    #[test]
    fn the_space_size_counts_register_tiles_within_the_budget() {
        let s = CpuSpace::new(&matvec(), &[2048, 2048], Isa::Avx512).unwrap();
        let reg: Vec<&Vec<usize>> = s
            .params
            .iter()
            .filter_map(|q| match q {
                Param::Reg(_, v) => Some(v),
                _ => None,
            })
            .collect();
        let pairs = reg[0]
            .iter()
            .flat_map(|a| reg[1].iter().map(move |b| a * b))
            .filter(|&p| p <= s.reg_budget)
            .count() as f64;
        let rest: f64 = s
            .params
            .iter()
            .filter(|q| !matches!(q, Param::Reg(..)))
            .map(|q| q.len() as f64)
            .product();
        assert_eq!(s.size(), pairs * rest);
        assert!(s.size() > 1e6);
    }
}
