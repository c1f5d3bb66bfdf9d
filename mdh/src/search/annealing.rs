//! Simulated annealing: a walk from the current point to random neighbours,
//! accepting a worse one with probability `exp(−Δ / T)` (Δ relative to the
//! current cost), the temperature `T` cooling geometrically.

use super::{History, Point, Rng, Technique};

pub struct SimulatedAnnealing {
    current: Option<(Point, f64)>,
    temperature: f64,
    rng: Rng,
}

impl Default for SimulatedAnnealing {
    fn default() -> Self {
        SimulatedAnnealing {
            current: None,
            temperature: 0.5,
            rng: Rng::new(0xA11EA1),
        }
    }
}

/// Per observation; from 0.5 it takes ~150 steps to reach 0.01.
const COOLING: f64 = 0.975;

impl Technique for SimulatedAnnealing {
    fn name(&self) -> &'static str {
        "annealing"
    }

    fn propose(&mut self, h: &History, rng: &mut Rng) -> Point {
        match self.current.as_ref().map(|c| &c.0).or(h.best_or_start()) {
            Some(p) => h.neighbour(p, rng),
            None => h.random_point(rng),
        }
    }

    fn observe(&mut self, p: &Point, cost: f64, _h: &History) {
        let accept = match &self.current {
            None => true,
            Some((_, cur)) => {
                let delta = (cost - cur) / cur.abs().max(f64::MIN_POSITIVE);
                delta <= 0.0 || self.rng.unit() < (-delta / self.temperature.max(1e-9)).exp()
            }
        };
        if accept {
            self.current = Some((p.clone(), cost));
        }
        self.temperature *= COOLING;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn annealing_beats_random_sampling_on_a_bowl() {
        let sa =
            super::super::tests::run_alone(Box::<super::SimulatedAnnealing>::default(), 150, 3);
        assert!(sa <= 3.0, "{sa}");
    }
}
