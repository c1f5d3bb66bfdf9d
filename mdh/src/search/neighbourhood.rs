//! Neighbourhood search: the incumbent's (the best measured point's)
//! neighbours, one step away as the space defines a step (a tile size ×2 or
//! ÷2, two adjacent loops swapped, one input's packing changed), each
//! proposed once in random order; when all were measured, points two steps
//! away. Where most of the space is far slower than the incumbent (kernels
//! of many dimensions, where a random plan is often 10–100× slower and still
//! costs a build), this spends the budget where improvements are likely;
//! the bandit credits it for the new bests it finds like any technique.

use super::{History, Point, Rng, Technique};

/// Tries at a two-step point not measured yet before a random neighbour.
const TWO_STEP_TRIES: usize = 20;

#[derive(Default)]
pub struct Neighbourhood {
    /// The incumbent whose neighbours are queued.
    centre: Option<Point>,
    /// Its neighbours not proposed yet.
    queue: Vec<Point>,
}

impl Technique for Neighbourhood {
    fn name(&self) -> &'static str {
        "neighbourhood"
    }

    fn propose(&mut self, h: &History, rng: &mut Rng) -> Point {
        let Some(best) = h.best_or_start().cloned() else {
            return h.random_point(rng);
        };
        if self.centre.as_ref() != Some(&best) {
            self.queue = h.steps_from(&best);
            // Shuffled: popped from the back.
            for i in (1..self.queue.len()).rev() {
                self.queue.swap(i, rng.below(i + 1));
            }
            self.centre = Some(best.clone());
        }
        while let Some(q) = self.queue.pop() {
            if !h.was_measured(&q) {
                return q;
            }
        }
        // A local optimum within one step: two steps.
        for _ in 0..TWO_STEP_TRIES {
            let one = h.steps_from(&best);
            if one.is_empty() {
                break;
            }
            let two = h.steps_from(&one[rng.below(one.len())]);
            if let Some(q) = two.get(rng.below(two.len().max(1))) {
                if *q != best && !h.was_measured(q) {
                    return q.clone();
                }
            }
        }
        h.neighbour(&best, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbourhood_search_finds_the_bottom_of_a_bowl() {
        let n = super::super::tests::run_alone(Box::<Neighbourhood>::default(), 150, 4);
        assert_eq!(n, 1.0);
    }

    #[test]
    fn proposals_are_steps_from_the_incumbent_each_proposed_once() {
        let mut h = History {
            cards: vec![5; 3],
            measured: vec![(vec![2, 2, 2], 1.0), (vec![0, 0, 0], 5.0)],
            sampler: None,
            steps: None,
            start: None,
        };
        let mut t = Neighbourhood::default();
        let mut rng = Rng::new(1);
        let mut seen = Vec::new();
        for _ in 0..6 {
            let p = t.propose(&h, &mut rng);
            let changed: Vec<usize> = (0..3).filter(|&i| p[i] != 2).collect();
            assert_eq!(changed.len(), 1, "{p:?}");
            assert_eq!(p[changed[0]].abs_diff(2), 1, "{p:?}");
            assert!(!seen.contains(&p), "{p:?} twice");
            seen.push(p);
        }
        // All six measured: two steps away, never the incumbent.
        for p in &seen {
            h.measured.push((p.clone(), 2.0));
        }
        let p = t.propose(&h, &mut rng);
        let moved: usize = p.iter().map(|&c| c.abs_diff(2)).sum();
        assert!((1..=2).contains(&moved) && !h.was_measured(&p), "{p:?}");
    }
}
