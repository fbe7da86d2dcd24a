//! CAVI for the logistic-softmax (thesis ch. 4; MATH.md §5): per observation `q(λ)` Gamma,
//! `q(n_c)` Poisson, `q(ω_c | n_c)` Pólya-Gamma, their closed-form coordinate steps and ELBO
//! terms. Shared by full-batch CAVI and SVI (with class subsampling weights).

use crate::data::Data;
use crate::prepared::{Block, Prepared};
use crate::RuntimeError;
use gpm_special::log_cosh;
use nalgebra::{DMatrix, DVector};

/// `q` of one logistic-softmax factor (thesis ch. 4; MATH.md §5): `q(λ_i) = Gamma(α_i, C)`,
/// `q(n_ic) = Po(γ_ic)`, `q(ω_ic | n_ic) = PG(y_ic + n_ic, c_ic)` with `c_ic² = E_q[f_ic²]`.
pub(super) struct SoftmaxQ {
    /// The latent matrix (one GP column per class).
    pub(super) latent: usize,
    /// Labels, 0-based.
    pub(super) labels: Vec<usize>,
    classes: usize,
    pub(super) gamma: DMatrix<f64>,
    alpha: Vec<f64>,
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
            alpha: vec![1.0; n],
            omega: DMatrix::from_element(n, classes, 0.25),
        })
    }

    /// Observation `i`'s moments under `q(f)` and its current `q(λ)`, `q(n)`, into `obs`.
    fn load(&self, i: usize, mean: &DVector<f64>, var: &DVector<f64>, obs: &mut SoftmaxObs) {
        let n = self.labels.len();
        for k in 0..self.classes {
            obs.mu[k] = mean[k * n + i];
            obs.var[k] = var[k * n + i];
            obs.weight[k] = 1.0;
            obs.gamma[k] = self.gamma[(i, k)];
        }
        obs.alpha = self.alpha[i];
    }

    /// Coordinate steps given `q(f)`, observation by observation ([`softmax_local`]).
    pub(super) fn local_step(&mut self, mean: &DVector<f64>, var: &DVector<f64>) {
        let mut obs = SoftmaxObs::new(self.classes);
        for i in 0..self.labels.len() {
            self.load(i, mean, var, &mut obs);
            softmax_local(self.labels[i], &mut obs);
            self.alpha[i] = obs.alpha;
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
/// non-label classes under class subsampling, 0 for the others), and its `q(λ)`, `q(n)`, `E[ω]`.
#[derive(Debug, Clone)]
pub(crate) struct SoftmaxObs {
    pub(crate) mu: Vec<f64>,
    pub(crate) var: Vec<f64>,
    pub(crate) weight: Vec<f64>,
    pub(crate) alpha: f64,
    pub(crate) gamma: Vec<f64>,
    pub(crate) omega: Vec<f64>,
}

impl SoftmaxObs {
    pub(crate) fn new(classes: usize) -> SoftmaxObs {
        SoftmaxObs {
            mu: vec![0.0; classes],
            var: vec![0.0; classes],
            weight: vec![1.0; classes],
            alpha: 1.0,
            gamma: vec![0.0; classes],
            omega: vec![0.25; classes],
        }
    }
}

/// Coordinate steps of one observation given `q(f)`: `γ` (at the current `α`, with `c`
/// optimal), then `α = 1 + Σ_c w_c γ_c`, then `E[ω]`:
/// `γ_c = e^(ψ(α))/C · e^(−μ_c/2) / (2 cosh(c_c/2))` (MATH.md §5),
/// `E[ω_c] = (y_c + γ_c) tanh(c_c/2) / (2 c_c)`. Classes of weight 0 are skipped.
pub(crate) fn softmax_local(label: usize, o: &mut SoftmaxObs) {
    let cl = o.mu.len();
    let ln_c = (cl as f64).ln();
    let elog = statrs::function::gamma::digamma(o.alpha) - ln_c;
    let mut total = 0.0;
    for k in 0..cl {
        if o.weight[k] == 0.0 {
            continue;
        }
        let c = (o.mu[k] * o.mu[k] + o.var[k]).sqrt();
        o.gamma[k] = (elog - 0.5 * o.mu[k] - std::f64::consts::LN_2 - log_cosh(0.5 * c)).exp();
        total += o.weight[k] * o.gamma[k];
    }
    o.alpha = 1.0 + total;
    for k in 0..cl {
        if o.weight[k] == 0.0 {
            continue;
        }
        let c = (o.mu[k] * o.mu[k] + o.var[k]).sqrt();
        let y = if label == k { 1.0 } else { 0.0 };
        let t = if c < 1e-4 {
            0.25 * (1.0 - c * c / 12.0)
        } else {
            (0.5 * c).tanh() / (2.0 * c)
        };
        o.omega[k] = (y + o.gamma[k]) * t;
    }
}

/// The observation's ELBO terms with `c` at its optimum (docs/inference.md):
/// `Σ_c w_c [−(y+γ) log(2cosh(c/2)) + (y−γ)μ/2 + γ(ψ(α) − log C − log γ + 1)]`
/// `− log C + log Γ(α) + (1−α)ψ(α)`.
pub(crate) fn softmax_elbo(label: usize, o: &SoftmaxObs) -> f64 {
    let cl = o.mu.len();
    let ln_c = (cl as f64).ln();
    let a = o.alpha;
    let psi = statrs::function::gamma::digamma(a);
    let mut total = -ln_c + statrs::function::gamma::ln_gamma(a) + (1.0 - a) * psi;
    for k in 0..cl {
        if o.weight[k] == 0.0 {
            continue;
        }
        let c = (o.mu[k] * o.mu[k] + o.var[k]).sqrt();
        let y = if label == k { 1.0 } else { 0.0 };
        let g = o.gamma[k];
        let mut term =
            -(y + g) * (std::f64::consts::LN_2 + log_cosh(0.5 * c)) + (y - g) * o.mu[k] / 2.0;
        if g > 0.0 {
            term += g * (psi - ln_c - g.ln() + 1.0);
        }
        total += o.weight[k] * term;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};

    /// The augmented bound of the logistic-softmax, maximised over `q(λ, n, ω)` by iterating the
    /// local steps, must lie below `E_q[log p(y | f)]` (Jensen), and close to it: checked against
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
                alpha: vec![1.0],
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
