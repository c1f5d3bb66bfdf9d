//! Whether a winner beats the plan that runs today beyond the noise: the
//! rule of the tuner's configs (`mdh-tune`) and of run-time GPU tuning
//! (`gpu::tune`), over samples taken in turns.

/// Rounds of the interleaved re-timing of the best plan against the plan
/// that runs today: enough for quartiles of each.
pub const RETIME_ROUNDS: usize = 9;

/// The least gain of an entry: a plan less than this much faster than
/// what runs today changes nothing a user would notice.
pub const MIN_GAIN: f64 = 0.03;

/// Whether re-timed samples justify writing an entry, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub write: bool,
    /// The median time of today's plan over the winner's.
    pub speedup: f64,
    /// One sentence for the user.
    pub why: String,
}

/// The winner's samples against those of the plan that runs today (taken
/// in turns): write its entry only when its median is more than
/// [`MIN_GAIN`] faster and beyond the spread of the samples, i.e. the
/// winner's upper quartile is below today's lower quartile (most of its
/// runs beat most of the others', not a lucky few).
pub fn verdict(winner: &[f64], today: &[f64]) -> Verdict {
    let quartiles = |s: &[f64]| {
        let mut s = s.to_vec();
        s.sort_by(f64::total_cmp);
        let at = |p: f64| s[((s.len() - 1) as f64 * p).round() as usize];
        [at(0.25), at(0.5), at(0.75)]
    };
    if winner.len() < 3 || today.len() < 3 {
        return Verdict {
            write: false,
            speedup: 1.0,
            why: format!(
                "too few re-timed samples ({} and {}) to tell a winner from noise",
                winner.len(),
                today.len()
            ),
        };
    }
    let ([w1, w, w3], [t1, t, _]) = (quartiles(winner), quartiles(today));
    let speedup = t / w;
    let gain = 100.0 * (1.0 - w / t);
    let change = if gain >= 0.0 {
        format!("{gain:.1} % faster")
    } else {
        format!("{:.1} % slower", -gain)
    };
    let timed = format!(
        "re-timed in turns over {} rounds, the best plan takes {} (median), the plan that runs today {}",
        winner.len().min(today.len()),
        ms(w),
        ms(t)
    );
    let (write, why) = if w >= t * (1.0 - MIN_GAIN) {
        (
            false,
            format!(
                "{timed}: {change}, not the {:.0} % faster an entry must be",
                100.0 * MIN_GAIN
            ),
        )
    } else if w3 >= t1 {
        (
            false,
            format!(
                "{timed}: {gain:.1} % faster by the medians, but within the noise (the best plan's upper quartile {} is not below today's lower quartile {})",
                ms(w3),
                ms(t1)
            ),
        )
    } else {
        (
            true,
            format!(
                "{timed}: {gain:.1} % faster, beyond the noise (quartiles {}–{} against {}–)",
                ms(w1),
                ms(w3),
                ms(t1)
            ),
        )
    };
    Verdict {
        write,
        speedup,
        why,
    }
}

/// A time in milliseconds, as the tuner prints them.
pub fn ms(t: f64) -> String {
    format!("{:.3} ms", t * 1e3)
}
