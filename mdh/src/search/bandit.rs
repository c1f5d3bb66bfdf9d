//! The AUC bandit of OpenTuner (Ansel et al., PACT'14): a technique's score
//! is the area under the curve of its recent successes (a success: it found
//! a new best), recent ones weighted more, plus an exploration bonus
//! `C·√(2 ln N / n)` for rarely used techniques.

use std::collections::VecDeque;

/// Successes remembered per technique.
const WINDOW: usize = 50;
/// Weight of exploration against exploitation.
const EXPLORATION: f64 = 0.5;

pub struct AucBandit {
    history: Vec<VecDeque<bool>>,
    uses: Vec<usize>,
    /// Chosen but not yet credited (a batch is proposed before any of it
    /// is measured): counted as uses when choosing.
    pending: Vec<usize>,
}

impl AucBandit {
    pub fn new(arms: usize) -> AucBandit {
        AucBandit {
            history: vec![VecDeque::new(); arms],
            uses: vec![0; arms],
            pending: vec![0; arms],
        }
    }

    pub fn uses(&self) -> &[usize] {
        &self.uses
    }

    fn auc(h: &VecDeque<bool>) -> f64 {
        if h.is_empty() {
            return 0.0;
        }
        let n = h.len() as f64;
        let area: f64 = h
            .iter()
            .enumerate()
            .filter(|(_, &s)| s)
            .map(|(i, _)| (i + 1) as f64)
            .sum();
        area / (n * (n + 1.0) / 2.0)
    }

    /// The technique to use next: an unused one first, then the best score.
    pub fn choose(&mut self) -> usize {
        let n: Vec<usize> = self
            .uses
            .iter()
            .zip(&self.pending)
            .map(|(u, p)| u + p)
            .collect();
        let t = match n.iter().position(|&u| u == 0) {
            Some(t) => t,
            None => {
                let total: usize = n.iter().sum();
                let score = |t: usize| {
                    Self::auc(&self.history[t])
                        + EXPLORATION * (2.0 * (total as f64).ln() / n[t] as f64).sqrt()
                };
                (0..n.len())
                    .max_by(|&a, &b| score(a).total_cmp(&score(b)))
                    .unwrap_or(0)
            }
        };
        self.pending[t] += 1;
        t
    }

    /// Credits a measured proposal of `t` (chosen before, or replayed from
    /// a log).
    pub fn credit(&mut self, t: usize, success: bool) {
        self.pending[t] = self.pending[t].saturating_sub(1);
        self.uses[t] += 1;
        let h = &mut self.history[t];
        h.push_back(success);
        if h.len() > WINDOW {
            h.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bandit_prefers_the_arm_that_succeeds() {
        let mut b = AucBandit::new(3);
        for _ in 0..300 {
            let t = b.choose();
            b.credit(t, t == 1);
        }
        assert!(b.uses()[1] > b.uses()[0] + b.uses()[2], "{:?}", b.uses());
        assert!(b.uses().iter().all(|&u| u > 0));
    }

    #[test]
    fn a_batch_chosen_before_any_credit_tries_every_arm() {
        let mut b = AucBandit::new(4);
        let mut batch: Vec<usize> = (0..4).map(|_| b.choose()).collect();
        batch.sort_unstable();
        assert_eq!(batch, vec![0, 1, 2, 3]);
    }
}
