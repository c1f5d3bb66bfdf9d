//! Search techniques over a discrete space and the ensemble that picks
//! among them (ATF's and OpenTuner's approach): each technique proposes
//! points (one coordinate per tuning parameter, an index into its list of
//! values), an AUC multi-armed bandit chooses which technique proposes next.
//!
//! The techniques know nothing about plans: a point's validity is the
//! space's business (it repairs points before they are measured), its cost
//! is the measured run time. Lower costs are better. The tuner (`mdh-tune`)
//! and run-time GPU tuning (`gpu::tune`) search with them, in one loop
//! ([`driver::Search`]).

pub mod annealing;
pub mod bandit;
pub mod check;
pub mod differential;
pub mod driver;
pub mod neighbourhood;
pub mod pattern;
pub mod random;
pub mod space;
pub mod verdict;

/// One coordinate per tuning parameter: an index into its values.
pub type Point = Vec<usize>;

/// A small deterministic PRNG (xorshift64*): searches are reproducible from
/// a seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 11) as u128 * n as u128) >> 53) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Draws a random point of the space.
pub type Sampler = Box<dyn Fn(&mut Rng) -> Point>;

/// The points one step from a point, as the space defines a step.
pub type Steps = Box<dyn Fn(&Point) -> Vec<Point>>;

/// What every technique may look at: the sizes of the coordinates' value
/// lists and all measured points so far.
pub struct History {
    pub cards: Vec<usize>,
    pub measured: Vec<(Point, f64)>,
    /// Draws a random point; the space's own sampler propagates its
    /// constraints (default: uniform per coordinate).
    pub sampler: Option<Sampler>,
    /// The space's steps from a point (default: each coordinate ±1).
    pub steps: Option<Steps>,
    /// Where local searches start before anything is measured (the
    /// default plan's point): a batch is proposed before it is measured.
    pub start: Option<Point>,
}

impl History {
    pub fn best(&self) -> Option<&(Point, f64)> {
        self.measured.iter().min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// The best point, else the start point.
    pub fn best_or_start(&self) -> Option<&Point> {
        self.best().map(|b| &b.0).or(self.start.as_ref())
    }

    pub fn random_point(&self, rng: &mut Rng) -> Point {
        match &self.sampler {
            Some(sample) => sample(rng),
            None => self.cards.iter().map(|&c| rng.below(c)).collect(),
        }
    }

    /// `p` with coordinate `i` moved by `delta`, clamped to its range.
    pub fn moved(&self, p: &Point, i: usize, delta: i64) -> Point {
        let mut q = p.clone();
        q[i] = (p[i] as i64 + delta).clamp(0, self.cards[i] as i64 - 1) as usize;
        q
    }

    /// A random neighbour: one or two coordinates moved by ±1 or ±2, or
    /// with the space's steps one or two steps.
    pub fn neighbour(&self, p: &Point, rng: &mut Rng) -> Point {
        let mut q = p.clone();
        for _ in 0..1 + rng.below(2) {
            q = match &self.steps {
                Some(steps) => {
                    let next = steps(&q);
                    match next.len() {
                        0 => q,
                        n => next[rng.below(n)].clone(),
                    }
                }
                None => {
                    let i = rng.below(q.len());
                    let step = 1 + rng.below(2) as i64;
                    self.moved(&q, i, if rng.below(2) == 0 { step } else { -step })
                }
            };
        }
        q
    }

    /// The points one step from `p` (see [`History::steps`]).
    pub fn steps_from(&self, p: &Point) -> Vec<Point> {
        match &self.steps {
            Some(steps) => steps(p),
            None => (0..p.len())
                .flat_map(|i| [self.moved(p, i, -1), self.moved(p, i, 1)])
                .filter(|q| q != p)
                .collect(),
        }
    }

    /// Whether `p` was measured (or found known).
    pub fn was_measured(&self, p: &Point) -> bool {
        self.measured.iter().any(|(q, _)| q == p)
    }
}

/// A search technique: proposes the next point to measure and learns from
/// the measured costs of the points it proposed.
pub trait Technique {
    fn name(&self) -> &'static str;
    fn propose(&mut self, h: &History, rng: &mut Rng) -> Point;
    fn observe(&mut self, _p: &Point, _cost: f64, _h: &History) {}
}

/// All techniques, in the order the bandit first tries them: the local
/// searches first (they start next to the default plan), differential
/// evolution last (it needs a population).
pub fn techniques() -> Vec<Box<dyn Technique>> {
    vec![
        Box::new(neighbourhood::Neighbourhood::default()),
        Box::new(annealing::SimulatedAnnealing::default()),
        Box::new(pattern::PatternSearch::default()),
        Box::new(random::RandomSampling),
        Box::new(differential::DifferentialEvolution),
    ]
}

/// The ensemble: the techniques, the bandit that picks among them and the
/// shared history.
pub struct Ensemble {
    pub techniques: Vec<Box<dyn Technique>>,
    pub bandit: bandit::AucBandit,
    pub history: History,
    pub rng: Rng,
}

impl Ensemble {
    pub fn new(cards: Vec<usize>, seed: u64) -> Ensemble {
        let techniques = techniques();
        Ensemble {
            bandit: bandit::AucBandit::new(techniques.len()),
            techniques,
            history: History {
                cards,
                measured: Vec::new(),
                sampler: None,
                steps: None,
                start: None,
            },
            rng: Rng::new(seed),
        }
    }

    /// The ensemble over `space` (its sampler and its steps), whose local
    /// searches start at the point nearest to `start` (on the grid or next
    /// to it).
    pub fn over<S: space::Space>(space: &S, start: &S::Plan, seed: u64) -> Ensemble {
        let mut e = Ensemble::new(space.cards(), seed);
        let sampler = space.clone();
        e.history.sampler = Some(Box::new(move |rng| sampler.sample(rng)));
        let stepper = space.clone();
        e.history.steps = Some(Box::new(move |p| stepper.neighbours(p)));
        e.history.start = Some(space.nearest(start));
        e
    }

    /// The index of the technique called `name`.
    pub fn technique(&self, name: &str) -> Option<usize> {
        self.techniques.iter().position(|t| t.name() == name)
    }

    /// The bandit's choice of technique and its proposal.
    pub fn propose(&mut self) -> (usize, Point) {
        let t = self.bandit.choose();
        let p = self.techniques[t].propose(&self.history, &mut self.rng);
        (t, p)
    }

    /// The next proposal whose plan is new, with its technique and its
    /// plan: the bandit's choice, repaired to a valid point and decoded. A
    /// proposal of a known plan (`known` gives its cost) is observed again,
    /// so that its technique learns, and skipped. Each proposal counts
    /// `tries` down; at 0 the space counts as exhausted (`None`). Both
    /// searches, the tuner's and run-time tuning's, take their proposals
    /// from here.
    pub fn propose_new<S: space::Space>(
        &mut self,
        space: &S,
        tries: &mut usize,
        mut known: impl FnMut(&S::Plan) -> Option<f64>,
    ) -> Option<(usize, Point, S::Plan)> {
        while *tries > 0 {
            *tries -= 1;
            let (t, p) = self.propose();
            let p = space.repair(p);
            let plan = space.decode(&p);
            match known(&plan) {
                Some(cost) => self.observe(Some(t), p, cost),
                None => return Some((t, p, plan)),
            }
        }
        None
    }

    /// Records a measured point: the bandit credits technique `t` when it
    /// found a new best; every technique sees the history grow, `t` also
    /// learns the cost of its own proposal.
    pub fn observe(&mut self, t: Option<usize>, p: Point, cost: f64) {
        let improved = self.history.best().is_none_or(|b| cost < b.1);
        self.history.measured.push((p.clone(), cost));
        if let Some(t) = t {
            self.bandit.credit(t, improved);
            self.techniques[t].observe(&p, cost, &self.history);
        }
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A synthetic cost with one optimum at `target` and a plateau far away:
    /// `1 + Σ (p_i − target_i)²`.
    pub fn cost(p: &Point, target: &[usize]) -> f64 {
        1.0 + p
            .iter()
            .zip(target)
            .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
            .sum::<f64>()
    }

    /// Runs one technique alone for `n` evaluations; returns the best cost.
    pub fn run_alone(mut t: Box<dyn Technique>, n: usize, seed: u64) -> f64 {
        let target = [3, 7, 1, 8, 5, 2];
        let mut h = History {
            cards: vec![10; 6],
            measured: Vec::new(),
            sampler: None,
            steps: None,
            start: None,
        };
        let mut rng = Rng::new(seed);
        for _ in 0..n {
            let p = t.propose(&h, &mut rng);
            let c = cost(&p, &target);
            h.measured.push((p.clone(), c));
            t.observe(&p, c, &h);
        }
        h.best().unwrap().1
    }

    #[test]
    fn ensemble_finds_the_optimum_of_a_synthetic_cost() {
        let target = [3, 7, 1, 8, 5, 2];
        let mut e = Ensemble::new(vec![10; 6], 42);
        for _ in 0..400 {
            let (t, p) = e.propose();
            let c = cost(&p, &target);
            e.observe(Some(t), p, c);
        }
        assert_eq!(e.history.best().unwrap().1, 1.0);
        // Every technique got some turns.
        assert!(
            e.bandit.uses().iter().all(|&u| u > 0),
            "{:?}",
            e.bandit.uses()
        );
    }

    #[test]
    fn rng_is_uniform_enough() {
        let mut r = Rng::new(1);
        let mut counts = [0usize; 4];
        for _ in 0..4000 {
            counts[r.below(4)] += 1;
        }
        assert!(
            counts.iter().all(|&c| (900..1100).contains(&c)),
            "{counts:?}"
        );
    }
}
