//! Pattern search (Hooke–Jeeves' exploratory moves): from the best point,
//! try `±step` along each coordinate in turn; after a sweep without
//! improvement halve the step; at step 1 without improvement restart from a
//! random point.

use super::{History, Point, Rng, Technique};

#[derive(Default)]
pub struct PatternSearch {
    center: Option<(Point, f64)>,
    step: i64,
    /// Next move: coordinate `move_ / 2`, direction by parity.
    move_: usize,
    improved_in_sweep: bool,
}

impl Technique for PatternSearch {
    fn name(&self) -> &'static str {
        "pattern-search"
    }

    fn propose(&mut self, h: &History, rng: &mut Rng) -> Point {
        let Some(center) = self.center.as_ref().map(|c| &c.0).or(h.best_or_start()) else {
            return h.random_point(rng);
        };
        let center = center.clone();
        if self.step == 0 {
            self.step = (*h.cards.iter().max().unwrap_or(&2) as i64 / 4).max(1);
        }
        let dims = center.len();
        if self.move_ >= 2 * dims {
            self.move_ = 0;
            if !self.improved_in_sweep {
                if self.step == 1 {
                    // Converged here: explore elsewhere.
                    self.center = None;
                    self.step = 0;
                    return h.random_point(rng);
                }
                self.step = (self.step / 2).max(1);
            }
            self.improved_in_sweep = false;
        }
        let (i, up) = (self.move_ / 2, self.move_.is_multiple_of(2));
        self.move_ += 1;
        h.moved(&center, i, if up { self.step } else { -self.step })
    }

    fn observe(&mut self, p: &Point, cost: f64, _h: &History) {
        if self.center.as_ref().is_none_or(|c| cost < c.1) {
            self.center = Some((p.clone(), cost));
            self.improved_in_sweep = true;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pattern_search_finds_the_bottom_of_a_bowl() {
        let ps = super::super::tests::run_alone(Box::<super::PatternSearch>::default(), 150, 2);
        assert_eq!(ps, 1.0);
    }
}
