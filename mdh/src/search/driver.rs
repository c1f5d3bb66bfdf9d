//! The search loop that the tuner (`mdh-tune`) and run-time GPU tuning
//! (`gpu::tune`) share: seeds first (a default, a configured plan, the
//! model's best candidates), then batches of the ensemble's proposals,
//! each measured by the caller, until the budget is spent or the space
//! runs out of new plans. What is the caller's own stays the caller's: how
//! a batch is measured and logged, a lower bound that prunes, progress
//! output ([`Measure`]); what to do with the best plan found.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

use super::space::Space;
use super::{Ensemble, Point};

/// When a search stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// Seconds spent, a resumed search's earlier ones included.
    Time(Duration),
    /// Candidates measured (pruned ones do not count).
    Evaluations(usize),
}

impl Budget {
    /// `10s` or `50 evaluations`, for messages and entries' provenance.
    pub fn describe(&self) -> String {
        match self {
            Budget::Time(d) => format!("{}s", d.as_secs_f64()),
            Budget::Evaluations(n) => format!("{n} evaluations"),
        }
    }
}

/// Candidates in the first batch under a time budget (the seeds and their
/// first competitors), before the cost of one is known.
pub const FIRST_BATCH: usize = 4;

/// Proposals per candidate wanted after which, all of them known plans,
/// the space counts as exhausted.
const TRIES_PER_CANDIDATE: usize = 50;

/// Where a candidate comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The caller's seed of this index (see [`Search::run`]).
    Seed(usize),
    /// The ensemble's technique of this index.
    Technique(usize),
}

/// A plan to measure.
#[derive(Clone, Debug)]
pub struct Proposal<P> {
    pub origin: Origin,
    /// Its point in the space (for a seed off the grid, the nearest one:
    /// the searches learn its cost there).
    pub point: Point,
    pub plan: P,
}

/// The caller's key of a plan: plans that run alike share one.
type KeyFn<P, K> = Box<dyn Fn(&P) -> K>;

/// A batch to measure, and whether the space ran out of new plans while
/// it was filled.
type NextBatch<P> = (Vec<Proposal<P>>, bool);

/// Why a search stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Budget,
    /// Every proposal was a plan measured before.
    Exhausted,
}

/// What the caller of [`Search::run`] does: measure batches, and
/// optionally bound, log and report.
pub trait Measure<P> {
    type Error;

    /// A lower bound of `plan`'s time in seconds (0: none known): a
    /// proposal whose bound is no better than the best time is not
    /// measured ([`Measure::pruned`]).
    fn bound(&mut self, _plan: &P) -> f64 {
        0.0
    }

    /// A proposal left unmeasured for its `bound`.
    fn pruned(&mut self, _c: &Proposal<P>, _bound: f64) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Measures `batch`: one cost per candidate, in order (its time in
    /// seconds; `INFINITY` where it failed or computed other results).
    /// `best_s`: the best time so far (`INFINITY`: none), for a cut-off.
    fn measure(&mut self, batch: &[Proposal<P>], best_s: f64) -> Result<Vec<f64>, Self::Error>;

    /// A candidate is the new best.
    fn improved(&mut self, _c: &Proposal<P>, _cost: f64) {}
}

/// The best candidate so far.
#[derive(Clone, Debug)]
pub struct Best<P> {
    pub point: Option<Point>,
    pub plan: P,
    pub cost: f64,
}

/// A search's state: the ensemble, every plan seen with its cost (by a key
/// of the caller's: plans that run alike are one), the best, the costs in
/// the order measured.
pub struct Search<S: Space, K> {
    pub space: S,
    pub ensemble: Ensemble,
    key: KeyFn<S::Plan, K>,
    seen: HashMap<K, f64>,
    pub best: Option<Best<S::Plan>>,
    /// The measured candidates' costs in order (`INFINITY`: failed).
    pub costs: Vec<f64>,
    clock: Instant,
    /// Seconds of the budget spent before [`Search::run`] (a resumed log,
    /// or the caller's own first measurement).
    spent_before: f64,
}

impl<S: Space, K: Eq + Hash> Search<S, K> {
    /// A search of `space` whose local searches start next to `start`,
    /// with the ensemble's `seed`; `key` tells plans that run alike.
    pub fn new(
        space: S,
        start: &S::Plan,
        seed: u64,
        key: impl Fn(&S::Plan) -> K + 'static,
    ) -> Search<S, K> {
        Search {
            ensemble: Ensemble::over(&space, start, seed),
            space,
            key: Box::new(key),
            seen: HashMap::new(),
            best: None,
            costs: Vec::new(),
            clock: Instant::now(),
            spent_before: 0.0,
        }
    }

    /// Counts `secs` as spent before the search (see [`Budget::Time`]).
    pub fn spent_before(&mut self, secs: f64) {
        self.spent_before = self.spent_before.max(secs);
    }

    /// Seconds of the budget spent.
    pub fn elapsed(&self) -> f64 {
        self.spent_before + self.clock.elapsed().as_secs_f64()
    }

    /// The best time so far (`INFINITY`: none).
    pub fn best_s(&self) -> f64 {
        self.best.as_ref().map_or(f64::INFINITY, |b| b.cost)
    }

    /// The cost of a plan that runs as `plan`, if one was seen.
    pub fn known(&self, plan: &S::Plan) -> Option<f64> {
        self.seen.get(&(self.key)(plan)).copied()
    }

    /// Takes in a result: a candidate measured here, one pruned
    /// (`measured` false, `cost` its bound) or one of a resumed log.
    /// `technique`: the ensemble's technique that proposed it, which
    /// learns from its cost.
    pub fn absorb(
        &mut self,
        technique: Option<usize>,
        point: Option<Point>,
        plan: &S::Plan,
        cost: f64,
        measured: bool,
    ) {
        self.seen.insert((self.key)(plan), cost);
        if measured {
            self.costs.push(cost);
            if cost.is_finite() && cost < self.best_s() {
                self.best = Some(Best {
                    point: point.clone(),
                    plan: plan.clone(),
                    cost,
                });
            }
        }
        if let Some(p) = point {
            self.ensemble.observe(technique, p, cost);
        }
    }

    /// The candidates the next batch may hold under `budget` (at most
    /// `max_batch`; 0: stop): under a time budget as many as the mean cost
    /// of those measured so far fits in what is left (one batch alone
    /// misleads: a build's cost varies with its candidates, and a batch of
    /// one may take a sixth of a batch of four).
    fn batch_size(&self, budget: &Budget, max_batch: usize, spent: (f64, usize)) -> usize {
        match budget {
            Budget::Time(d) => {
                let left = d.as_secs_f64() - self.elapsed();
                let fit = match spent {
                    (_, 0) => FIRST_BATCH,
                    // Rounded: a batch may overrun the budget by half a candidate.
                    (secs, n) => (left * n as f64 / secs).round().max(0.0) as usize,
                };
                if left <= 0.0 {
                    0
                } else {
                    fit.min(max_batch)
                }
            }
            Budget::Evaluations(n) => n.saturating_sub(self.costs.len()).min(max_batch),
        }
    }

    /// The next batch: seeds not seen yet (in order), then new proposals
    /// (repaired, decoded, none twice); hopeless proposals (bound no
    /// better than the best) are given to `m.pruned` instead.
    fn next_batch<M: Measure<S::Plan>>(
        &mut self,
        seeds: &mut std::iter::Peekable<impl Iterator<Item = (usize, S::Plan)>>,
        n: usize,
        m: &mut M,
    ) -> Result<NextBatch<S::Plan>, M::Error> {
        let mut out: Vec<Proposal<S::Plan>> = Vec::new();
        while out.len() < n {
            let Some((i, plan)) = seeds.next() else { break };
            if self.known(&plan).is_some() || out.iter().any(|q| q.plan == plan) {
                continue;
            }
            out.push(Proposal {
                origin: Origin::Seed(i),
                point: self.space.nearest(&plan),
                plan,
            });
        }
        let mut tries = TRIES_PER_CANDIDATE * n;
        let mut exhausted = false;
        while out.len() < n {
            let seen = &self.seen;
            let key = &self.key;
            let Some((t, point, plan)) = self
                .ensemble
                .propose_new(&self.space, &mut tries, |p| seen.get(&key(p)).copied())
            else {
                exhausted = true;
                break;
            };
            if out.iter().any(|q| q.plan == plan) {
                continue;
            }
            let c = Proposal {
                origin: Origin::Technique(t),
                point,
                plan,
            };
            let bound = m.bound(&c.plan);
            if bound > 0.0 && bound >= self.best_s() {
                m.pruned(&c, bound)?;
                self.absorb(Some(t), Some(c.point), &c.plan, bound, false);
                continue;
            }
            out.push(c);
        }
        Ok((out, exhausted))
    }

    /// The loop: `seeds` first (those of plans seen before are skipped),
    /// then the ensemble's proposals, in batches of at most `max_batch`
    /// (fewer where the time budget is nearly spent), each measured by
    /// `m` and taken in, until `budget` is spent or every proposal is a
    /// known plan.
    pub fn run<M: Measure<S::Plan>>(
        &mut self,
        budget: &Budget,
        max_batch: usize,
        seeds: Vec<S::Plan>,
        m: &mut M,
    ) -> Result<Stop, M::Error> {
        self.clock = Instant::now();
        let mut seeds = seeds.into_iter().enumerate().peekable();
        // Seconds spent measuring and candidates measured.
        let mut spent = (0.0f64, 0usize);
        loop {
            let n = self.batch_size(budget, max_batch.max(1), spent);
            if n == 0 {
                return Ok(Stop::Budget);
            }
            let (batch, exhausted) = self.next_batch(&mut seeds, n, m)?;
            if batch.is_empty() {
                return Ok(if exhausted {
                    Stop::Exhausted
                } else {
                    Stop::Budget
                });
            }
            let began = Instant::now();
            let costs = m.measure(&batch, self.best_s())?;
            spent.0 += began.elapsed().as_secs_f64();
            spent.1 += batch.len();
            for (c, &cost) in batch.iter().zip(&costs) {
                let improved = cost.is_finite() && cost < self.best_s();
                let technique = match c.origin {
                    Origin::Technique(t) => Some(t),
                    Origin::Seed(_) => None,
                };
                self.absorb(technique, Some(c.point.clone()), &c.plan, cost, true);
                if improved {
                    m.improved(c, cost);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::tests::cost;
    use crate::search::Rng;

    /// `params` parameters of `values` values each; a plan is its point.
    #[derive(Clone)]
    struct Grid {
        params: usize,
        values: usize,
    }

    impl Space for Grid {
        type Plan = Point;
        fn cards(&self) -> Vec<usize> {
            vec![self.values; self.params]
        }
        fn decode(&self, p: &Point) -> Point {
            p.clone()
        }
        fn agrees(&self, s: usize, a: &Point, b: &Point) -> bool {
            a[s] == b[s]
        }
        fn repair(&self, p: Point) -> Point {
            p
        }
        fn sample(&self, rng: &mut Rng) -> Point {
            (0..self.params).map(|_| rng.below(self.values)).collect()
        }
        fn size(&self) -> f64 {
            (self.values as f64).powi(self.params as i32)
        }
    }

    const TARGET: [usize; 6] = [3, 7, 1, 8, 5, 2];

    /// Measures by the synthetic cost; `fails` computes other results;
    /// remembers every batch.
    struct Fake {
        fails: Point,
        batches: Vec<Vec<Proposal<Point>>>,
        improved: usize,
        bound: Option<fn(&Point) -> f64>,
        pruned: usize,
    }

    impl Fake {
        fn new(fails: Point) -> Fake {
            Fake {
                fails,
                batches: Vec::new(),
                improved: 0,
                bound: None,
                pruned: 0,
            }
        }
    }

    impl Measure<Point> for Fake {
        type Error = String;
        fn bound(&mut self, plan: &Point) -> f64 {
            self.bound.map_or(0.0, |b| b(plan))
        }
        fn pruned(&mut self, _c: &Proposal<Point>, _bound: f64) -> Result<(), String> {
            self.pruned += 1;
            Ok(())
        }
        fn measure(&mut self, batch: &[Proposal<Point>], _best: f64) -> Result<Vec<f64>, String> {
            self.batches.push(batch.to_vec());
            Ok(batch
                .iter()
                .map(|c| {
                    if c.plan == self.fails {
                        f64::INFINITY
                    } else {
                        cost(&c.plan, &TARGET)
                    }
                })
                .collect())
        }
        fn improved(&mut self, _c: &Proposal<Point>, _cost: f64) {
            self.improved += 1;
        }
    }

    fn search() -> Search<Grid, Point> {
        let grid = Grid {
            params: 6,
            values: 10,
        };
        Search::new(grid, &vec![0; 6], 7, Clone::clone)
    }

    #[test]
    fn seeds_come_first_and_the_budget_of_evaluations_holds() {
        let mut s = search();
        let seeds = vec![vec![0; 6], vec![1; 6], vec![0; 6], vec![2; 6]];
        let mut m = Fake::new(vec![9; 6]);
        let stop = s.run(&Budget::Evaluations(10), 3, seeds, &mut m).unwrap();
        assert_eq!(stop, Stop::Budget);
        assert_eq!(s.costs.len(), 10, "measured exactly the budget");
        let first: Vec<_> = m.batches.concat().into_iter().take(3).collect();
        assert_eq!(
            first.iter().map(|c| c.origin).collect::<Vec<_>>(),
            [Origin::Seed(0), Origin::Seed(1), Origin::Seed(3)],
            "seeds in order, the repeated one skipped"
        );
        assert!(m.batches.iter().all(|b| b.len() <= 3));
        let plans: Vec<_> = m.batches.concat().into_iter().map(|c| c.plan).collect();
        let mut distinct = plans.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), plans.len(), "no plan measured twice");
        // The best is the cheapest measured, and each improvement was said.
        let cheapest = plans
            .iter()
            .map(|p| cost(p, &TARGET))
            .fold(f64::INFINITY, f64::min);
        assert_eq!(s.best_s(), cheapest);
        assert!(m.improved >= 1);
    }

    #[test]
    fn a_failing_candidate_is_never_the_best_and_the_search_finds_the_optimum() {
        let mut s = search();
        // The optimum itself fails: the best is one step from it.
        let mut m = Fake::new(TARGET.to_vec());
        s.run(&Budget::Evaluations(600), 8, vec![vec![0; 6]], &mut m)
            .unwrap();
        let best = s.best.as_ref().unwrap();
        assert_ne!(best.plan, TARGET.to_vec());
        assert_eq!(best.cost, 2.0, "one step from the optimum");
        assert!(s.costs.contains(&f64::INFINITY), "the optimum was tried");
        assert_eq!(s.known(&TARGET.to_vec()), Some(f64::INFINITY));
    }

    #[test]
    fn a_time_budget_stops_the_search() {
        let mut s = search();
        let mut m = Fake::new(vec![9; 6]);
        let budget = Budget::Time(Duration::from_millis(50));
        struct Slow<'a>(&'a mut Fake);
        impl Measure<Point> for Slow<'_> {
            type Error = String;
            fn measure(&mut self, b: &[Proposal<Point>], best: f64) -> Result<Vec<f64>, String> {
                std::thread::sleep(Duration::from_millis(5) * b.len() as u32);
                self.0.measure(b, best)
            }
        }
        let began = Instant::now();
        assert_eq!(
            s.run(&budget, 4, Vec::new(), &mut Slow(&mut m)).unwrap(),
            Stop::Budget
        );
        let took = began.elapsed();
        assert!(took >= Duration::from_millis(45), "{took:?}");
        // Generous: the machine may be loaded; a batch overruns by little.
        assert!(took < Duration::from_secs(2), "{took:?}");
        assert!(
            (FIRST_BATCH..=12).contains(&s.costs.len()),
            "{}",
            s.costs.len()
        );
    }

    #[test]
    fn hopeless_proposals_are_pruned_and_a_small_space_runs_out() {
        // Two parameters of two values: four plans.
        let tiny = Grid {
            params: 2,
            values: 2,
        };
        let mut s = Search::new(tiny, &vec![0, 0], 3, Clone::clone);
        let mut m = Fake::new(vec![9, 9]);
        // The seed [0, 0] costs 1 + 9 + 49 = 59 against TARGET's first
        // two; every other plan's bound is 1000: pruned.
        m.bound = Some(|p: &Point| if *p == [0, 0] { 0.0 } else { 1000.0 });
        let stop = s
            .run(&Budget::Evaluations(100), 1, vec![vec![0, 0]], &mut m)
            .unwrap();
        assert_eq!(stop, Stop::Exhausted);
        assert_eq!(s.costs.len(), 1, "only the seed measured");
        assert_eq!(m.pruned, 3, "the three other plans pruned");
    }
}
