//! CAVI for the logistic-softmax (thesis ch. 4 and §7.4.1): per observation, `λ` integrated
//! out, `q(n)` negative multinomial over the class counts and `q(ω_c | n_c)` Pólya-Gamma; their
//! closed-form coordinate step and ELBO terms. Shared by full-batch CAVI and SVI (with class
//! subsampling weights).
//!
//! Why `λ` is integrated out: with `q(λ)` a separate mean-field factor, the expected counts are
//! `e^(ψ(α))·p̃` instead of their exact conditional mean `p̃/(1 − Σp̃)` — about half — so every
//! class's linear term `(y − E n)/2` sat too high: on `models/multiclass_gp.gpm` the latent
//! means were 1.4 posterior sds from Gibbs's at worst (0.8 on average), their mean level 0.16
//! against −0.54. Collapsed, the bound is exact at a point-mass `q(f)` and the worst error is
//! below half a posterior sd.

use crate::data::Data;
use crate::prepared::{Block, Prepared};
use crate::RuntimeError;
use gpm_special::log_cosh;
use nalgebra::{DMatrix, DVector};

/// `q` of one logistic-softmax factor (thesis §7.4.1): `q(n_i) = NM(1, p_i)` over the class
/// counts with `E[n_ic] = γ_ic`, `q(ω_ic | n_ic) = PG(y_ic + n_ic, c_ic)` with
/// `c_ic² = E_q[f_ic²]`.
#[derive(Clone)]
pub(super) struct SoftmaxQ {
    /// The latent matrix (one GP column per class).
    pub(super) latent: usize,
    /// Labels, 0-based.
    pub(super) labels: Vec<usize>,
    classes: usize,
    pub(super) gamma: DMatrix<f64>,
    /// `E[ω_ic] = (y_ic + γ_ic) tanh(c_ic/2) / (2 c_ic)`.
    pub(super) omega: DMatrix<f64>,
}

impl SoftmaxQ {
    pub(super) fn new(
        cat: &gpm_schedule::CategoricalProgram,
        prep: &Prepared,
        data: &Data,
    ) -> Result<SoftmaxQ, RuntimeError> {
        let y = data
            .vector(&cat.label)
            .ok_or_else(|| RuntimeError::MissingData(format!("no labels `{}`", cat.label)))?;
        let latent = cat.latent_id.0;
        if prep
            .blocks
            .iter()
            .any(|b| matches!(b, Block::Dense { parts, .. } if parts.iter().any(|p| p.0 == latent)))
        {
            return Err(RuntimeError::Unsupported(format!(
                "CAVI for the logistic-softmax needs a GP prior on `{}`",
                cat.latent
            )));
        }
        let n = y.len();
        let classes = prep.latents[latent].1 / n.max(1);
        let labels = y.iter().map(|v| *v as usize - 1).collect();
        Ok(SoftmaxQ {
            latent,
            labels,
            classes,
            gamma: DMatrix::zeros(n, classes),
            omega: DMatrix::from_element(n, classes, 0.25),
        })
    }

    /// Observation `i`'s moments under `q(f)` and its current `q(n)`, into `obs`.
    fn load(&self, i: usize, mean: &DVector<f64>, var: &DVector<f64>, obs: &mut SoftmaxObs) {
        let n = self.labels.len();
        for k in 0..self.classes {
            obs.mu[k] = mean[k * n + i];
            obs.var[k] = var[k * n + i];
            obs.weight[k] = 1.0;
            obs.gamma[k] = self.gamma[(i, k)];
        }
    }

    /// Coordinate steps given `q(f)`, observation by observation ([`softmax_local`]).
    pub(super) fn local_step(&mut self, mean: &DVector<f64>, var: &DVector<f64>) {
        let mut obs = SoftmaxObs::new(self.classes);
        for i in 0..self.labels.len() {
            self.load(i, mean, var, &mut obs);
            softmax_local(self.labels[i], &mut obs);
            for k in 0..self.classes {
                self.gamma[(i, k)] = obs.gamma[k];
                self.omega[(i, k)] = obs.omega[k];
            }
        }
    }

    /// The factor's ELBO terms (everything but `KL(q(f) ‖ p(f))`), [`softmax_elbo`] summed.
    pub(super) fn elbo(&self, mean: &DVector<f64>, var: &DVector<f64>) -> f64 {
        let mut obs = SoftmaxObs::new(self.classes);
        let mut total = 0.0;
        for i in 0..self.labels.len() {
            self.load(i, mean, var, &mut obs);
            total += softmax_elbo(self.labels[i], &obs);
        }
        total
    }
}

/// One observation of a logistic-softmax factor: the moments of its `C` latent values, the
/// weight of each class in sums over classes (1 for all classes; `(C−1)/K` for the `K` sampled
/// non-label classes under class subsampling, 0 for the others), and its `E[n]`, `E[ω]`.
#[derive(Debug, Clone)]
pub(crate) struct SoftmaxObs {
    pub(crate) mu: Vec<f64>,
    pub(crate) var: Vec<f64>,
    pub(crate) weight: Vec<f64>,
    pub(crate) gamma: Vec<f64>,
    pub(crate) omega: Vec<f64>,
}

impl SoftmaxObs {
    pub(crate) fn new(classes: usize) -> SoftmaxObs {
        SoftmaxObs {
            mu: vec![0.0; classes],
            var: vec![0.0; classes],
            weight: vec![1.0; classes],
            gamma: vec![0.0; classes],
            omega: vec![0.25; classes],
        }
    }

    /// `c_k = √(μ_k² + v_k)`, the optimal Pólya-Gamma tilt of class `k`.
    fn tilt(&self, k: usize) -> f64 {
        (self.mu[k] * self.mu[k] + self.var[k]).sqrt()
    }

    /// `p_k = σ̃_k / C` with `σ̃_k = e^(−μ_k/2) / (2 cosh(c_k/2))` (`σ(−μ_k)` when `v_k = 0`),
    /// and `Σ_k w_k p_k`, which stays below 1 (each `p_k < 1/C`; under class subsampling
    /// `p_label + (C−1)/K · K · max p < 1`).
    fn count_probabilities(&self, p: &mut [f64]) -> f64 {
        let ln_c = (self.mu.len() as f64).ln();
        let mut total = 0.0;
        for (k, pk) in p.iter_mut().enumerate() {
            *pk = if self.weight[k] == 0.0 {
                0.0
            } else {
                (-0.5 * self.mu[k] - std::f64::consts::LN_2 - log_cosh(0.5 * self.tilt(k)) - ln_c)
                    .exp()
            };
            total += self.weight[k] * *pk;
        }
        total
    }
}

/// The coordinate step of one observation given `q(f)` — closed form, no inner iteration
/// (thesis §7.4.1, Algorithm 5): integrating `λ` out of `Π_c Po(n_c | λ)` (flat `p(λ)`) leaves
/// `Γ(1 + Σn) Π_c C^(−n_c)/n_c!` (times `1/C`), so the optimal `q(n)` is the negative
/// multinomial `NM(1, p)`, `p_c = σ̃_c/C`, with means `γ_c = p_c / (1 − Σ_j w_j p_j)`; then
/// `E[ω_c] = (y_c + γ_c) tanh(c_c/2) / (2 c_c)`. Classes of weight 0 are skipped.
pub(crate) fn softmax_local(label: usize, o: &mut SoftmaxObs) {
    let cl = o.mu.len();
    let mut p = vec![0.0; cl];
    let rest = 1.0 - o.count_probabilities(&mut p);
    for k in 0..cl {
        if o.weight[k] == 0.0 {
            continue;
        }
        o.gamma[k] = p[k] / rest;
        let c = o.tilt(k);
        let y = if label == k { 1.0 } else { 0.0 };
        let t = if c < 1e-4 {
            0.25 * (1.0 - c * c / 12.0)
        } else {
            (0.5 * c).tanh() / (2.0 * c)
        };
        o.omega[k] = (y + o.gamma[k]) * t;
    }
}

/// The observation's ELBO terms with `q(n, ω)` at its optimum given `q(f)` (docs/inference.md):
/// `−log C − log(2 cosh(c_y/2)) + μ_y/2 − log(1 − Σ_c w_c p_c)` — the Pólya-Gamma bounds are
/// linear in the counts, and the counts' part is the negative multinomial's log normaliser.
/// Exact (`log σ(μ_y)/Σ_c σ(μ_c)`) when `q(f)` is a point mass.
pub(crate) fn softmax_elbo(label: usize, o: &SoftmaxObs) -> f64 {
    let cl = o.mu.len();
    let mut p = vec![0.0; cl];
    let rest = 1.0 - o.count_probabilities(&mut p);
    -(cl as f64).ln() - std::f64::consts::LN_2 - log_cosh(0.5 * o.tilt(label)) + 0.5 * o.mu[label]
        - rest.ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};

    /// At a point-mass `q(f)` the collapsed bound is the log-likelihood itself,
    /// `log σ(f_y) / Σ_c σ(f_c)`.
    #[test]
    fn the_bound_is_exact_at_a_point_mass() {
        let sig = gpm_special::logistic;
        for (f, label) in [
            (vec![0.0, 0.0, 0.0], 0usize),
            (vec![2.0, -1.0, 0.5], 1),
            (vec![-3.0, 4.0, 1.0, 0.0], 3),
            (vec![-8.0, -9.0, -7.5], 2),
        ] {
            let mut o = SoftmaxObs::new(f.len());
            o.mu.clone_from(&f);
            softmax_local(label, &mut o);
            let exact = (sig(f[label]) / f.iter().map(|x| sig(*x)).sum::<f64>()).ln();
            let bound = softmax_elbo(label, &o);
            assert!((bound - exact).abs() < 1e-12, "{f:?}: {bound} vs {exact}");
        }
    }

    /// The augmented bound of the logistic-softmax, maximised over `q(n, ω)` (the local step,
    /// repeated: it must not move), must lie below `E_q[log p(y | f)]` (Jensen), and close to it: checked against
    /// Monte Carlo with 400 000 draws at several Gaussian `q(f)`.
    #[test]
    fn softmax_bound_lies_below_the_expected_log_likelihood() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let sig = gpm_special::logistic;
        for (mu, v, label) in [
            (vec![0.0, 0.0, 0.0], vec![1.0, 1.0, 1.0], 0usize),
            (vec![2.0, -1.0, 0.5], vec![0.3, 0.8, 0.1], 0),
            (vec![2.0, -1.0, 0.5], vec![0.3, 0.8, 0.1], 1),
            (vec![-3.0, 4.0, 1.0, 0.0], vec![2.0, 0.5, 1.0, 0.01], 3),
        ] {
            let cl = mu.len();
            let mut q = SoftmaxQ {
                latent: 0,
                labels: vec![label],
                classes: cl,
                gamma: DMatrix::zeros(1, cl),
                omega: DMatrix::zeros(1, cl),
            };
            let (m, var) = (DVector::from_vec(mu.clone()), DVector::from_vec(v.clone()));
            let mut last = f64::NEG_INFINITY;
            for _ in 0..200 {
                q.local_step(&m, &var);
                let e = q.elbo(&m, &var);
                assert!(e >= last - 1e-12, "bound decreased: {last} → {e}");
                last = e;
            }
            let draws = 400_000;
            let mut sum = 0.0;
            for _ in 0..draws {
                let f: Vec<f64> = (0..cl)
                    .map(|k| {
                        let z: f64 = StandardNormal.sample(&mut rng);
                        mu[k] + v[k].sqrt() * z
                    })
                    .collect();
                let tot: f64 = f.iter().map(|x| sig(*x)).sum();
                sum += (sig(f[label]) / tot).ln();
            }
            let expected = sum / draws as f64;
            assert!(
                last <= expected + 5e-3 && last > expected - 0.5,
                "μ={mu:?} v={v:?} y={label}: bound {last} vs E log p {expected}"
            );
        }
    }
}
