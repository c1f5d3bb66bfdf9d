//! Differential evolution (Storn and Price's DE/rand/1/bin) on the best
//! measured points: mutant `a + F·(b − c)` rounded to the grid, crossed with
//! a target point coordinate by coordinate with probability `CR`.

use super::{History, Point, Rng, Technique};

pub struct DifferentialEvolution;

/// The population: the best measured points.
const POPULATION: usize = 10;
const F: f64 = 0.7;
const CR: f64 = 0.6;

impl Technique for DifferentialEvolution {
    fn name(&self) -> &'static str {
        "differential-evolution"
    }

    fn propose(&mut self, h: &History, rng: &mut Rng) -> Point {
        let mut pop: Vec<&(Point, f64)> = h.measured.iter().collect();
        if pop.len() < 4 {
            return h.random_point(rng);
        }
        pop.sort_by(|a, b| a.1.total_cmp(&b.1));
        pop.truncate(POPULATION);
        let n = pop.len();
        let target = &pop[rng.below(n)].0;
        let (a, b, c) = (
            &pop[rng.below(n)].0,
            &pop[rng.below(n)].0,
            &pop[rng.below(n)].0,
        );
        // At least one coordinate comes from the mutant.
        let forced = rng.below(target.len());
        (0..target.len())
            .map(|i| {
                if i == forced || rng.unit() < CR {
                    let m = a[i] as f64 + F * (b[i] as f64 - c[i] as f64);
                    (m.round().max(0.0) as usize).min(h.cards[i] - 1)
                } else {
                    target[i]
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn differential_evolution_converges_on_a_bowl() {
        let de = super::super::tests::run_alone(Box::new(super::DifferentialEvolution), 300, 9);
        assert!(de <= 4.0, "{de}");
    }
}
