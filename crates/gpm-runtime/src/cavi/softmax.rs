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
/// `c_ic² = E_q[f_ic²]`; and its class scales θ (§7.4.3: all 1 when unscaled).
#[derive(Clone)]
pub(super) struct SoftmaxQ {
    /// The latent matrix (one GP column per latent class).
    pub(super) latent: usize,
    /// Labels, 0-based (`columns`: the bijective link's fixed class).
    pub(super) labels: Vec<usize>,
    /// The latent matrix's columns.
    columns: usize,
    bijective: bool,
    /// The class scales, one per class (empty: unscaled), and their hyperparameter when CAVI
    /// learns them ([`gpm_schedule::VariationalUpdate::ClassScales`]).
    theta: Vec<f64>,
    learned: Option<gpm_schedule::HyperId>,
    pub(super) gamma: DMatrix<f64>,
    /// `E[ω_ic] = (y_ic + γ_ic) tanh(c_ic/2) / (2 c_ic)`.
    pub(super) omega: DMatrix<f64>,
}

impl SoftmaxQ {
    pub(super) fn new(
        cat: &gpm_schedule::CategoricalProgram,
        schedule: &gpm_schedule::Schedule,
        prep: &Prepared,
        data: &Data,
        hypers: &crate::kernels::HyperValues,
    ) -> Result<SoftmaxQ, RuntimeError> {
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
        let bound =
            crate::categorical::BoundCategorical::new(cat, data, prep.latents[latent].1, hypers)?;
        let (n, columns) = (bound.labels.len(), bound.columns);
        let learned = cat.scale.filter(|h| {
            matches!(
                schedule.hyper_steps.get(h.0).map(|s| &s.variational),
                Some(gpm_schedule::VariationalUpdate::ClassScales { .. })
            )
        });
        Ok(SoftmaxQ {
            latent,
            theta: crate::categorical::scales(cat, &hypers.vectors).to_vec(),
            learned,
            labels: bound.labels,
            columns,
            bijective: bound.bijective,
            gamma: DMatrix::zeros(n, columns),
            omega: DMatrix::from_element(n, columns, 0.25),
        })
    }

    /// The learned class scales, if CAVI learns them.
    pub(super) fn learned_scales(&self) -> Option<(gpm_schedule::HyperId, Vec<f64>)> {
        self.learned.map(|h| (h, self.theta.clone()))
    }

    /// Observation `i`'s moments under `q(f)` and its current `q(n)`, into `obs`.
    fn load(&self, i: usize, mean: &DVector<f64>, var: &DVector<f64>, obs: &mut SoftmaxObs) {
        let n = self.labels.len();
        let weights = self.weights();
        for k in 0..self.columns {
            obs.mu[k] = mean[k * n + i];
            obs.var[k] = var[k * n + i];
            obs.weight[k] = 1.0;
            obs.theta[k] = weights.scale(k);
            obs.gamma[k] = self.gamma[(i, k)];
        }
        obs.fixed = weights.fixed_weight(self.columns);
    }

    fn weights(&self) -> gpm_library::likelihood::ClassWeights<'_> {
        gpm_library::likelihood::ClassWeights {
            bijective: self.bijective,
            theta: &self.theta,
        }
    }

    /// Coordinate steps given `q(f)`: the class scales first when learned
    /// ([`SoftmaxQ::scale_step`]), then observation by observation ([`softmax_local`]).
    pub(super) fn local_step(&mut self, mean: &DVector<f64>, var: &DVector<f64>) {
        if self.learned.is_some() {
            self.scale_step(mean, var);
        }
        let mut obs = SoftmaxObs::new(self.columns);
        for i in 0..self.labels.len() {
            self.load(i, mean, var, &mut obs);
            softmax_local(self.labels[i], &mut obs);
            for k in 0..self.columns {
                self.gamma[(i, k)] = obs.gamma[k];
                self.omega[(i, k)] = obs.omega[k];
            }
        }
    }

    /// One minorise-maximise step of the collapsed bound in θ given `q(f)` (thesis §7.4.3):
    /// the bound is `Σ_i log θ_{y_i} − Σ_i log S_i + …`, `S_i = Σ_k θ_k s_ik` with
    /// `s_ik = 1 − σ̃_ik` (`D` for the fixed class); `log S ≤ log S° + S/S° − 1` makes
    /// `θ_k = #{y = k} / Σ_i s_ik / S°_i` (`1/S°_i = E[λ_i]`) an ascent step. The bound does not
    /// change when all scales are multiplied by one number: they are normalised to mean 1.
    fn scale_step(&mut self, mean: &DVector<f64>, var: &DVector<f64>) {
        let classes = self.columns + usize::from(self.bijective);
        let n = self.labels.len();
        let mut obs = SoftmaxObs::new(self.columns);
        let mut exposure = vec![0.0; classes];
        let mut s = vec![0.0; classes];
        for i in 0..n {
            self.load(i, mean, var, &mut obs);
            for (k, sk) in s.iter_mut().enumerate().take(self.columns) {
                *sk = 1.0 - obs.sigma_tilde(k);
            }
            if self.bijective {
                s[self.columns] = gpm_library::likelihood::FIXED_CLASS_WEIGHT;
            }
            let total: f64 = (0..classes).map(|k| self.theta[k] * s[k]).sum();
            for k in 0..classes {
                exposure[k] += s[k] / total;
            }
        }
        for k in 0..classes {
            let labelled = self.labels.iter().filter(|&&y| y == k).count() as f64;
            self.theta[k] = labelled / exposure[k];
        }
        let mean_theta = self.theta.iter().sum::<f64>() / classes as f64;
        if mean_theta > 0.0 && mean_theta.is_finite() {
            self.theta.iter_mut().for_each(|t| *t /= mean_theta);
        }
    }

    /// The factor's ELBO terms (everything but `KL(q(f) ‖ p(f))`), [`softmax_elbo`] summed.
    pub(super) fn elbo(&self, mean: &DVector<f64>, var: &DVector<f64>) -> f64 {
        let mut obs = SoftmaxObs::new(self.columns);
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
/// non-label classes under class subsampling, 0 for the others), the class scales θ and the
/// fixed class's weight `θ_K D` (0 unless bijective), and its `E[n]`, `E[ω]`.
#[derive(Debug, Clone)]
pub(crate) struct SoftmaxObs {
    pub(crate) mu: Vec<f64>,
    pub(crate) var: Vec<f64>,
    pub(crate) weight: Vec<f64>,
    pub(crate) theta: Vec<f64>,
    pub(crate) fixed: f64,
    pub(crate) gamma: Vec<f64>,
    pub(crate) omega: Vec<f64>,
}

impl SoftmaxObs {
    pub(crate) fn new(classes: usize) -> SoftmaxObs {
        SoftmaxObs {
            mu: vec![0.0; classes],
            var: vec![0.0; classes],
            weight: vec![1.0; classes],
            theta: vec![1.0; classes],
            fixed: 0.0,
            gamma: vec![0.0; classes],
            omega: vec![0.25; classes],
        }
    }

    /// `c_k = √(μ_k² + v_k)`, the optimal Pólya-Gamma tilt of class `k`.
    fn tilt(&self, k: usize) -> f64 {
        (self.mu[k] * self.mu[k] + self.var[k]).sqrt()
    }

    /// `σ̃_k = e^(−μ_k/2) / (2 cosh(c_k/2))`, which is `σ(−μ_k)` when `v_k = 0` (Algorithm 5).
    fn sigma_tilde(&self, k: usize) -> f64 {
        (-0.5 * self.mu[k] - std::f64::consts::LN_2 - log_cosh(0.5 * self.tilt(k))).exp()
    }

    /// `T = θ_K D + Σ_k θ_k` over every latent class, the rate of λ's Gamma before the counts.
    fn total_scale(&self) -> f64 {
        self.fixed + self.theta.iter().sum::<f64>()
    }

    /// `p_k = θ_k σ̃_k / T`, and `Σ_k w_k p_k`, which stays below 1 (each `θ_k p_k ≤ θ_k/T`;
    /// under class subsampling, unscaled, `p_label + (C−1)/K · K · max p < 1`).
    fn count_probabilities(&self, p: &mut [f64]) -> f64 {
        let total_scale = self.total_scale();
        let mut total = 0.0;
        for (k, pk) in p.iter_mut().enumerate() {
            *pk = if self.weight[k] == 0.0 {
                0.0
            } else {
                self.theta[k] * self.sigma_tilde(k) / total_scale
            };
            total += self.weight[k] * *pk;
        }
        total
    }
}

/// The coordinate step of one observation given `q(f)` — closed form, no inner iteration
/// (thesis §7.4.1, Algorithm 5): integrating `λ` out of `Π_c Po(n_c | λθ_c)` (times the fixed
/// class's `e^(−λ θ_K D)`) leaves `Γ(1 + Σn) Π_c (θ_c/T)^(n_c)/n_c!` (times `1/T`), so the
/// optimal `q(n)` is the negative multinomial `NM(1, p)`, `p_c = θ_c σ̃_c/T`, with means
/// `γ_c = p_c / (1 − Σ_j w_j p_j)`; then `E[ω_c] = (y_c + γ_c) tanh(c_c/2) / (2 c_c)`. Classes of
/// weight 0 are skipped.
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
/// `log θ_y − log T − log(2 cosh(c_y/2)) + μ_y/2 − log(1 − Σ_c w_c p_c)` — the Pólya-Gamma
/// bounds are linear in the counts, and the counts' part is the negative multinomial's log
/// normaliser; for the bijective link's fixed class, `log θ_K D − log T − log(1 − Σ_c w_c p_c)`.
/// Exact (`log w_y / Σ_c w_c`) when `q(f)` is a point mass.
pub(crate) fn softmax_elbo(label: usize, o: &SoftmaxObs) -> f64 {
    let cl = o.mu.len();
    let mut p = vec![0.0; cl];
    let rest = 1.0 - o.count_probabilities(&mut p);
    let own = if label == cl {
        o.fixed.ln()
    } else {
        o.theta[label].ln() - std::f64::consts::LN_2 - log_cosh(0.5 * o.tilt(label))
            + 0.5 * o.mu[label]
    };
    own - o.total_scale().ln() - rest.ln()
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

    /// The same for the bijective and scaled links (thesis §7.4.2-7.4.3):
    /// `log w_y / Σ_c w_c` with `w_c = θ_c σ(f_c)` and the fixed class's `θ_K D`.
    #[test]
    fn the_bound_is_exact_at_a_point_mass_for_every_link() {
        for (f, theta, bijective, label) in [
            (vec![0.3, -1.0], vec![1.0, 1.0, 1.0], true, 2usize),
            (vec![0.3, -1.0], vec![1.0, 1.0, 1.0], true, 0),
            (vec![2.0, -1.0, 0.5], vec![0.5, 3.0, 1.2], false, 1),
            (vec![-3.0, 4.0, 1.0], vec![0.2, 1.5, 2.0, 0.7], true, 3),
            (vec![-3.0, 4.0, 1.0], vec![0.2, 1.5, 2.0, 0.7], true, 1),
        ] {
            let w = gpm_library::likelihood::ClassWeights {
                bijective,
                theta: &theta,
            };
            let mut o = SoftmaxObs::new(f.len());
            o.mu.clone_from(&f);
            for k in 0..f.len() {
                o.theta[k] = w.scale(k);
            }
            o.fixed = w.fixed_weight(f.len());
            softmax_local(label, &mut o);
            let exact = w.log_prob(|k| f[k], f.len(), label);
            let bound = softmax_elbo(label, &o);
            assert!(
                (bound - exact).abs() < 1e-12,
                "{f:?} {theta:?}: {bound} vs {exact}"
            );
        }
    }

    /// Learning the class scales (§7.4.3) never lowers the bound: a minorise-maximise step
    /// at a fixed Gaussian `q(f)`, from several starts, and the scales' fixed point is the
    /// bound's maximum (no direction of a log-scale raises it).
    #[test]
    fn the_class_scale_step_climbs_to_the_maximum() {
        use rand::Rng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let (n, columns) = (40, 3);
        for bijective in [false, true] {
            let classes = columns + usize::from(bijective);
            let labels: Vec<usize> = (0..n).map(|i| i % classes).collect();
            let mean = DVector::from_fn(n * columns, |_, _| rng.gen_range(-2.0..2.0));
            let var = DVector::from_fn(n * columns, |_, _| rng.gen_range(0.05..1.0));
            let mut q = SoftmaxQ {
                latent: 0,
                labels,
                columns,
                bijective,
                theta: (0..classes).map(|_| rng.gen_range(0.2..5.0)).collect(),
                learned: Some(gpm_schedule::HyperId(0)),
                gamma: DMatrix::zeros(n, columns),
                omega: DMatrix::zeros(n, columns),
            };
            let mut last = f64::NEG_INFINITY;
            for _ in 0..300 {
                q.local_step(&mean, &var);
                let e = q.elbo(&mean, &var);
                assert!(e >= last - 1e-10, "bound decreased: {last} → {e}");
                last = e;
            }
            let mean_theta = q.theta.iter().sum::<f64>() / classes as f64;
            assert!((mean_theta - 1.0).abs() < 1e-12);
            for k in 0..classes {
                for step in [1e-3, -1e-3] {
                    let mut moved = q.clone();
                    moved.theta[k] *= f64::exp(step);
                    moved.learned = None;
                    moved.local_step(&mean, &var);
                    let e = moved.elbo(&mean, &var);
                    assert!(
                        e <= last + 1e-9,
                        "class {k}: {e} above the fixed point {last}"
                    );
                }
            }
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
                columns: cl,
                bijective: false,
                theta: vec![],
                learned: None,
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
