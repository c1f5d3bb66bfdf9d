//! A search space of one backend's plans, as the search techniques see
//! it: the CPU space is the tuner's (`mdh-tune`), the GPU space
//! (`gpu::space`) is shared by the tuner and run-time tuning.

use super::{Point, Rng};

/// A search space of one backend's plans: coordinates ([`Point`]s) that
/// the search techniques move in, decoded into plans; every repaired or
/// sampled point decodes to a plan that can be measured.
pub trait Space: Clone + 'static {
    type Plan: Clone + Eq + std::hash::Hash + std::fmt::Debug;
    /// The number of values of each parameter (the search's coordinates).
    fn cards(&self) -> Vec<usize>;
    fn decode(&self, p: &Point) -> Self::Plan;
    /// Whether coordinate `s` gives `a` and `b` the same value of what it
    /// sets (given the earlier coordinates).
    fn agrees(&self, s: usize, a: &Self::Plan, b: &Self::Plan) -> bool;
    /// `p` moved to the nearest point that satisfies the constraints.
    fn repair(&self, p: Point) -> Point;
    /// A random point that satisfies the constraints.
    fn sample(&self, rng: &mut Rng) -> Point;
    /// The number of points that satisfy the constraints (or an estimate).
    fn size(&self) -> f64;

    /// `plan` as read from a log, completed where it was written before
    /// some of its fields existed (by default: as it is).
    fn complete(&self, plan: Self::Plan) -> Self::Plan {
        plan
    }

    /// Whether two plans run alike at these sizes (by default: equal).
    fn runs_alike(&self, a: &Self::Plan, b: &Self::Plan) -> bool {
        a == b
    }

    /// The points one step from `p`, repaired: a parameter moved to an
    /// adjacent value (by default each coordinate ±1), each a different
    /// plan from `p`'s and differing from `p` in at most
    /// [`MAX_STEP_PARAMS`] coordinates (repairing may move one more).
    fn neighbours(&self, p: &Point) -> Vec<Point> {
        let moves = self.cards().into_iter().enumerate().flat_map(|(s, card)| {
            [p[s].checked_sub(1), Some(p[s] + 1).filter(|&i| i < card)]
                .into_iter()
                .flatten()
                .map(move |i| (s, i))
        });
        let steps = moves.map(|(s, i)| {
            let mut q = p.clone();
            q[s] = i;
            q
        });
        distinct_steps(self, p, steps)
    }

    /// The point of `plan`, if the space holds it (see
    /// [`Space::closest`]). Only the tests need it (the search starts from
    /// [`Space::nearest`], which never fails).
    fn encode(&self, plan: &Self::Plan) -> Option<Point> {
        let p = self.closest(plan);
        (self.decode(&p) == *plan).then_some(p)
    }

    /// Coordinate `s`'s value for `plan` where the space knows it without
    /// a search (the index of a loop order, say).
    fn value_of(&self, _s: usize, _plan: &Self::Plan) -> Option<usize> {
        None
    }

    /// How far coordinate `s` puts `a` from `b` in what it sets (0: they
    /// agree; by default 1 otherwise).
    fn mismatch(&self, s: usize, a: &Self::Plan, b: &Self::Plan) -> f64 {
        if self.agrees(s, a, b) {
            0.0
        } else {
            1.0
        }
    }

    /// The point nearest to `plan`, repaired (see [`Space::closest`]): for
    /// a plan off the grid (a default plan whose tiles exceed the extents,
    /// say), where the local searches start from it.
    fn nearest(&self, plan: &Self::Plan) -> Point {
        self.repair(self.closest(plan))
    }

    /// Coordinates one by one (later parameters may depend on earlier
    /// ones), each [`Space::value_of`] the plan or else the first value of
    /// the least [`Space::mismatch`] given the earlier ones: the plan's own
    /// point where the space holds it, else one near it.
    fn closest(&self, plan: &Self::Plan) -> Point {
        let cards = self.cards();
        let mut p = vec![0; cards.len()];
        for s in 0..cards.len() {
            if let Some(i) = self.value_of(s, plan).filter(|&i| i < cards[s]) {
                p[s] = i;
                continue;
            }
            let mut best = (f64::INFINITY, 0);
            for i in 0..cards[s] {
                p[s] = i;
                let m = self.mismatch(s, &self.decode(&p), plan);
                if m < best.0 {
                    best = (m, i);
                }
            }
            p[s] = best.1;
        }
        p
    }
}

/// Coordinates a step may change (see [`Space::neighbours`]).
pub const MAX_STEP_PARAMS: usize = 2;

/// `steps` from `p` repaired, without those that decode to `p`'s plan or
/// to one seen before, or that change more than [`MAX_STEP_PARAMS`]
/// coordinates.
pub fn distinct_steps<S: Space>(
    space: &S,
    p: &Point,
    steps: impl Iterator<Item = Point>,
) -> Vec<Point> {
    let mut plans = vec![space.decode(p)];
    let mut out = Vec::new();
    for q in steps {
        let q = space.repair(q);
        let changed = q.iter().zip(p).filter(|(a, b)| a != b).count();
        let plan = space.decode(&q);
        if (1..=MAX_STEP_PARAMS).contains(&changed) && !plans.contains(&plan) {
            plans.push(plan);
            out.push(q);
        }
    }
    out
}
