//! Rao-Blackwellised posterior means of the latents (Gelfand & Smith 1990; thesis ch. 3: the
//! Gibbs sampler's conditional of `f` is Gaussian given the auxiliaries).
//!
//! Every Gaussian block is drawn from `N(m(ω, θ, …), Σ(ω, θ, …))`; the average of `m` over the
//! kept draws estimates `E[f | y]` as the plain average of `f` does (by the tower property,
//! `E[m] = E[E[f | rest]] = E[f]`, the state before each draw being a posterior draw), with the
//! Gaussian noise of each draw averaged out exactly: for a two-block sampler its variance is
//! never larger (Liu, Wong & Kong 1994), and in practice it is smaller wherever the conditional
//! variance is a sizeable part of the posterior's. Its Monte Carlo error is from batch means (Flegal & Jones 2010): each chain's kept
//! draws are cut into [`BATCHES`] consecutive batches, and the sd of the batch means over all
//! chains, divided by the square root of their number, is the standard error (differences
//! between chains count against it).

use nalgebra::DVector;

/// Batches per chain.
pub const BATCHES: usize = 20;

/// One chain's running sums of the latents' conditional means.
#[derive(Debug, Clone)]
pub struct RaoBlackwell {
    /// Draws per batch.
    batch: usize,
    /// Sum over all the chain's draws, flattened in the latents' order.
    total: Vec<f64>,
    /// Sum over the current batch.
    current: Vec<f64>,
    in_current: usize,
    /// Means of the completed batches.
    batch_means: Vec<Vec<f64>>,
    draws: usize,
    /// Per flattened coordinate: whether its latent was ever drawn without a conditional mean.
    without: Vec<bool>,
}

impl RaoBlackwell {
    /// Sums for `width` coordinates over a chain expected to keep `draws` draws.
    pub fn new(width: usize, draws: usize) -> Self {
        RaoBlackwell {
            batch: (draws / BATCHES).max(1),
            total: vec![0.0; width],
            current: vec![0.0; width],
            in_current: 0,
            batch_means: Vec::new(),
            draws: 0,
            without: vec![false; width],
        }
    }

    /// Add one kept draw's conditional means (the latents in order) and which latents had none.
    pub fn push(&mut self, means: &[DVector<f64>], without: &[bool]) {
        let mut k = 0;
        for (z, &no) in means.iter().zip(without) {
            for &v in z.iter() {
                if k < self.total.len() {
                    self.total[k] += v;
                    self.current[k] += v;
                    self.without[k] |= no;
                }
                k += 1;
            }
        }
        self.draws += 1;
        self.in_current += 1;
        if self.in_current == self.batch {
            let n = self.batch as f64;
            self.batch_means
                .push(self.current.iter().map(|s| s / n).collect());
            self.current.iter_mut().for_each(|s| *s = 0.0);
            self.in_current = 0;
        }
    }

    /// Draws added.
    pub fn draws(&self) -> usize {
        self.draws
    }
}

/// A chain's row sink that also keeps the sums of the conditional means.
#[derive(Debug)]
pub struct WithMeans<S> {
    /// Where the rows go.
    pub sink: S,
    /// The sums.
    pub sums: RaoBlackwell,
}

impl<S: crate::gibbs::RowSink> crate::gibbs::RowSink for WithMeans<S> {
    fn push(&mut self, row: Vec<f64>) -> Result<(), crate::RuntimeError> {
        self.sink.push(row)
    }
    /// The rows are cut; the sums keep the few extra draws of a chain that ran further before
    /// an interrupt (valid draws all the same).
    fn truncate(&mut self, rows: usize) -> Result<(), crate::RuntimeError> {
        self.sink.truncate(rows)
    }
    fn conditional_means(&mut self, means: &[DVector<f64>], without: &[bool]) {
        self.sums.push(means, without);
    }
}

/// One coordinate's Rao-Blackwellised mean and its Monte Carlo standard error.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Estimate {
    /// The average of the conditional means.
    pub mean: f64,
    /// Its standard error from batch means (NaN with fewer than two batches).
    pub mcse: f64,
}

/// The chains' estimates per flattened coordinate (`None` where a latent had no conditional
/// mean in some draw of some chain). Chains with no draw are ignored.
pub fn combine(chains: &[RaoBlackwell]) -> Vec<Option<Estimate>> {
    let chains: Vec<&RaoBlackwell> = chains.iter().filter(|c| c.draws > 0).collect();
    let Some(first) = chains.first() else {
        return Vec::new();
    };
    let width = first.total.len();
    let draws: usize = chains.iter().map(|c| c.draws).sum();
    let batches: Vec<&Vec<f64>> = chains.iter().flat_map(|c| &c.batch_means).collect();
    (0..width)
        .map(|k| {
            if chains.iter().any(|c| c.without[k]) {
                return None;
            }
            let mean = chains.iter().map(|c| c.total[k]).sum::<f64>() / draws as f64;
            let nb = batches.len();
            let mcse = if nb < 2 {
                f64::NAN
            } else {
                let bm = batches.iter().map(|b| b[k]).sum::<f64>() / nb as f64;
                let var =
                    batches.iter().map(|b| (b[k] - bm).powi(2)).sum::<f64>() / (nb - 1) as f64;
                (var / nb as f64).sqrt()
            };
            Some(Estimate { mean, mcse })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};

    #[test]
    fn batch_means_give_the_standard_error_of_independent_draws() {
        // Independent N(3, 1) "conditional means": the mean is 3 within its error, and the
        // batch-means error is close to 1/√n.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut chains = Vec::new();
        for _ in 0..4 {
            let mut rb = RaoBlackwell::new(2, 2_000);
            for _ in 0..2_000 {
                let x: f64 = StandardNormal.sample(&mut rng);
                rb.push(&[DVector::from_vec(vec![3.0 + x, -1.0])], &[false]);
            }
            chains.push(rb);
        }
        let est = combine(&chains);
        let a = est[0].unwrap();
        let want = 1.0 / (8_000f64).sqrt();
        assert!((a.mean - 3.0).abs() < 4.0 * want, "{a:?}");
        assert!((a.mcse / want - 1.0).abs() < 0.35, "{a:?} vs {want}");
        // A constant conditional mean is exact, with no error.
        let b = est[1].unwrap();
        assert_eq!(b.mean, -1.0);
        assert_eq!(b.mcse, 0.0);
    }

    #[test]
    fn a_latent_without_conditional_means_is_not_reported() {
        let mut rb = RaoBlackwell::new(3, 10);
        for k in 0..10 {
            let means = [
                DVector::from_vec(vec![1.0, 2.0]),
                DVector::from_vec(vec![5.0]),
            ];
            rb.push(&means, &[false, k == 7]);
        }
        let est = combine(&[rb]);
        assert!(est[0].is_some() && est[1].is_some());
        assert!(est[2].is_none());
    }
}
