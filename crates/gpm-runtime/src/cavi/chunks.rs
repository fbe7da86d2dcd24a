//! A factor's per-observation work — CAVI's local steps and their ELBO terms — in fixed ranges
//! of observations, the ranges in parallel. Each range's result depends on its observations
//! alone and the results come back in the ranges' order, so a sum over them (the ELBO) is the
//! same at any number of threads.

use rayon::prelude::*;
use std::ops::Range;

/// Observations per range: enough tape evaluations to outweigh a task's scheduling.
const OBSERVATIONS: usize = 4096;

/// `work` on every range of `0..n`, the results in the ranges' order.
pub(super) fn over_observations<T: Send>(
    n: usize,
    work: impl Fn(Range<usize>) -> T + Sync,
) -> Vec<T> {
    let starts: Vec<usize> = (0..n).step_by(OBSERVATIONS).collect();
    let tasks = starts.len();
    starts
        .into_par_iter()
        .with_min_len(crate::parallel::min_items(tasks, 1))
        .map(|start| work(start..(start + OBSERVATIONS).min(n)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_observations_in_order() {
        for n in [0, 1, OBSERVATIONS, 3 * OBSERVATIONS + 5] {
            let got: Vec<usize> = over_observations(n, |r| r.collect::<Vec<_>>())
                .into_iter()
                .flatten()
                .collect();
            assert_eq!(got, (0..n).collect::<Vec<_>>());
        }
    }
}
