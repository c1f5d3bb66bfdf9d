//! Random sampling: uniform points, the baseline every search must beat and
//! the bandit's source of diversity.

use super::{History, Point, Rng, Technique};

pub struct RandomSampling;

impl Technique for RandomSampling {
    fn name(&self) -> &'static str {
        "random"
    }

    fn propose(&mut self, h: &History, rng: &mut Rng) -> Point {
        h.random_point(rng)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn random_sampling_improves_on_one_sample() {
        let one = super::super::tests::run_alone(Box::new(super::RandomSampling), 1, 5);
        let many = super::super::tests::run_alone(Box::new(super::RandomSampling), 300, 5);
        assert!(many < one && many <= 10.0, "{many}");
    }
}
