//! How Gibbs slice samples the hyperparameters of one update together (a GP's kernel, a kernel
//! shared by several GPs, a dense block's prior scales): decided here, carried out by the
//! runtime.
//!
//! Each evaluation of such an update's density costs a Cholesky factorisation (of `I + S K S`
//! for a GP), so what a scheme is judged by is evaluations per effective draw. Coordinate-wise
//! slice sampling with stepping out (Neal 2003, §4) spends about five evaluations per
//! coordinate per sweep. The reference-elliptical move updates all of them at once by
//! elliptical slice sampling about a Gaussian fitted to the warm-up draws (inflated): close to
//! Gaussian conditionals take about two evaluations per sweep for a nearly independent draw.

use serde::Serialize;

/// A slice-sampling scheme for the hyperparameters of one update.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "scheme", rename_all = "snake_case")]
pub enum SliceScheme {
    /// One hyperparameter at a time on its unconstrained scale: an interval `width` wide placed
    /// at random around the current value, stepped out at most `max_steps` times, then shrunk.
    Coordinatewise {
        /// Initial interval width.
        width: f64,
        /// Most steps out.
        max_steps: usize,
    },
    /// All of them at once. During warm-up: one at a time (as above, width 1, at most 10 steps
    /// out) up to the end of the first window (`first_window` sweeps); each window's draws of
    /// the unconstrained values `u` then set a Gaussian reference `N(m, Σ)` (their mean and
    /// regularised covariance) for the next; windows double in length, the last one running to
    /// the end of warm-up. Then: elliptical slice sampling of `N(u | m, c²Σ) · ℓ(u)`, `ℓ` the
    /// conditional over the reference, `c` = `inflation`. The reference is frozen when warm-up
    /// ends, so every kept draw comes from one fixed, exact Markov kernel.
    ReferenceElliptical {
        /// `c`: the reference's sds are the warm-up draws' times `c`.
        inflation: f64,
        /// Sweeps before the first adaptation.
        first_window: usize,
    },
}

impl SliceScheme {
    /// The scheme of a kernel, shared-kernel or dense-block update: every such evaluation is a
    /// factorisation, so the joint move is worth its warm-up. `c = 2` (measured on a
    /// full-Bayes GP classifier: ESS per second of the hyperparameters 1.5–2.6× that of
    /// coordinate-wise slice sampling; `c` = 1 mixes worse, 1.3–2.2 alike).
    pub fn for_marginal_update() -> Self {
        SliceScheme::ReferenceElliptical {
            inflation: 2.0,
            first_window: 25,
        }
    }

    /// The ends (sweep counts) of the adaptation windows for a warm-up of `warmup` sweeps:
    /// `first`, then each window twice as long as the one before, the last one stretched to
    /// the end of warm-up (none when warm-up is shorter than the first window).
    pub fn window_ends(first_window: usize, warmup: usize) -> Vec<usize> {
        let mut ends = Vec::new();
        if first_window == 0 || warmup < first_window {
            return ends;
        }
        let (mut end, mut len) = (first_window, first_window);
        loop {
            let next = end + 2 * len;
            if next > warmup {
                ends.push(warmup);
                break;
            }
            ends.push(end);
            end = next;
            len *= 2;
        }
        ends
    }

    /// For people: the `gpmc check` text.
    pub fn describe(&self) -> String {
        match *self {
            SliceScheme::Coordinatewise { width, max_steps } => format!(
                "one at a time (slice sampling, width {width}, at most {max_steps} steps out)"
            ),
            SliceScheme::ReferenceElliptical {
                inflation,
                first_window,
            } => format!(
                "jointly (elliptical slice sampling about a Gaussian fitted to the warm-up draws, \
                 sds times {inflation}, refitted in doubling windows from sweep {first_window}, \
                 frozen after warm-up)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_double_and_the_last_reaches_the_end_of_warm_up() {
        assert_eq!(SliceScheme::window_ends(25, 200), vec![25, 75, 200]);
        assert_eq!(SliceScheme::window_ends(25, 175), vec![25, 75, 175]);
        assert_eq!(
            SliceScheme::window_ends(25, 1000),
            vec![25, 75, 175, 375, 1000]
        );
        assert_eq!(SliceScheme::window_ends(25, 60), vec![60]);
        assert_eq!(SliceScheme::window_ends(25, 24), Vec::<usize>::new());
        assert_eq!(SliceScheme::window_ends(25, 0), Vec::<usize>::new());
    }
}
