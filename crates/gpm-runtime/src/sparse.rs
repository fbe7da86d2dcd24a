//! Sparse GP blocks with inducing points (Titsias 2009; Hensman, Fusi & Lawrence 2013; thesis
//! ch. 3 §4 and ch. 5 Algorithm 3), in the whitened parameterisation `u = μ₀ + L v`,
//! `K_mm = L Lᵀ`, prior `v ~ N(0, I)`. Given `v`, each latent value is independent:
//! `f_i | v ~ N(μ₀ + φ_iᵀ v, k̃_i)` with `φ_i = L⁻¹ k_m(x_i)` and `k̃_i = k(x_i, x_i) − ‖φ_i‖²`.
//!
//! Under an augmented likelihood that is the diagonal quadratic `Σ_i (b_i f_i − ½ a_i f_i²)`, the
//! optimal `q(v) = N(m, S)` has natural parameters `Λ = S⁻¹ = I + Φ diag(a) Φᵀ` and
//! `h = S⁻¹ m = Φ (b − a μ₀)` (thesis ch. 3 eq. for the sparse CAVI update); stochastic CAVI
//! replaces the sums over observations by `N/|B|` times a minibatch sum and takes the natural
//! gradient step `θ ← (1 − ρ) θ + ρ θ̂` (Hoffman et al. 2013), which for this family is the
//! exact coordinate update when `ρ = 1` and `B` is everything.

use crate::gaussian::cholesky_jitter;
use crate::kernels::{kernel_diag, kernel_matrix, HyperValues};
use crate::shard::InducingStats;
use crate::RuntimeError;
use gpm_schedule::BoundKernel;
use nalgebra::{Cholesky, DMatrix, DVector, Dyn};
use rand::{Rng, SeedableRng};

/// A sparse GP prior: kernel, inducing inputs and the factor of `K_mm`.
#[derive(Debug, Clone)]
pub struct SparseGp {
    /// Inducing inputs, one row per point.
    pub z: DMatrix<f64>,
    /// Lower Cholesky factor of `K_mm` (with jitter, if any was needed).
    pub l: DMatrix<f64>,
    /// Constant prior mean `μ₀`.
    pub mean: f64,
    /// Diagonal jitter that was needed to factor `K_mm`.
    pub jitter: f64,
    /// The Power-EP power α of sparse Gibbs (thesis §7.5, Algorithm 6): `v` is drawn from the
    /// pseudo-observations with `ε` at α times its variance, `ε` from its tilted conditional
    /// (the sites to the power α). 1 (FITC: the exact conditional of the FITC model) unless the
    /// model says `alpha`.
    pub alpha: f64,
    /// The online rule that may add inducing points as data arrive (`inducing = adaptive(…)`);
    /// `None`: the points are fixed.
    pub online: Option<Online>,
    kernel: BoundKernel,
    hypers: HyperValues,
}

mod online;
pub use online::Online;

impl SparseGp {
    /// Factor `K_mm` for the inducing inputs `z`.
    pub fn new(
        kernel: &BoundKernel,
        hypers: &HyperValues,
        z: DMatrix<f64>,
        mean: f64,
    ) -> Result<Self, RuntimeError> {
        let kmm = kernel_matrix(kernel, &z, &z, hypers)?;
        let (chol, jitter) = cholesky_jitter(&kmm, "covariance of the inducing points")?;
        Ok(SparseGp {
            l: chol.l_dirty().clone(),
            z,
            mean,
            jitter,
            alpha: 1.0,
            online: None,
            kernel: kernel.clone(),
            hypers: hypers.clone(),
        })
    }

    /// The same inducing inputs and kernel at other hyperparameter values (`K_mm` refactored).
    pub fn with_hypers(&self, hypers: &HyperValues) -> Result<Self, RuntimeError> {
        let mut sp = SparseGp::new(&self.kernel, hypers, self.z.clone(), self.mean)?;
        sp.alpha = self.alpha;
        sp.online = self.online;
        Ok(sp)
    }

    /// The hyperparameter values of the kernel.
    pub fn hypers(&self) -> &HyperValues {
        &self.hypers
    }

    /// Number of inducing points.
    pub fn m(&self) -> usize {
        self.z.nrows()
    }

    /// `Φ = L⁻¹ K_mx` (`M × rows`) and the residual variances `k̃_i` for the rows of `x`.
    pub fn features(&self, x: &DMatrix<f64>) -> Result<(DMatrix<f64>, Vec<f64>), RuntimeError> {
        let kmx = kernel_matrix(&self.kernel, &self.z, x, &self.hypers)?;
        let mut phi = kmx;
        crate::columns::solve_lower_in_place(&self.l, &mut phi);
        let kxx = kernel_diag(&self.kernel, x, &self.hypers)?;
        let kt = (0..x.nrows())
            .map(|i| (kxx[i] - phi.column(i).norm_squared()).max(0.0))
            .collect();
        Ok((phi, kt))
    }
}

impl SparseGp {
    /// The FITC pseudo-observations of `v` once every `ε_i` is integrated out (the shard
    /// primitive, [`crate::shard`]): weights `w_i = a_i/(1 + α a_i k̃_i)`, linear terms
    /// `r_i = (b_i − a_i μ₀)/(1 + α a_i k̃_i)`, summed over the columns of `phi`. What sparse
    /// Gibbs draws `v` from ([`InducingStats::draw`]) and integrates it against
    /// ([`SparseGp::log_marginal`], α = 1 only); a shard of the data returns its own. With α
    /// the Power-EP optimum of Bui, Yan & Turner (2017) for the Gaussian sites
    /// `N(b_i/a_i | f_i, 1/a_i)`: each site of `u` has variance `1/a_i + α k̃_i` (thesis §7.5;
    /// α = 1 FITC, α = 0 Titsias' optimal `q(u)`).
    pub fn fitc_stats(
        &self,
        phi: &DMatrix<f64>,
        kt: &[f64],
        a: &[f64],
        b: &[f64],
    ) -> Result<InducingStats, RuntimeError> {
        crate::gaussian::check_curvature(a, b)?;
        let n = phi.ncols();
        if kt.len() != n || a.len() != n || b.len() != n {
            return Err(RuntimeError::Inconsistent(
                "curvature of the wrong length for the features".into(),
            ));
        }
        let alpha = self.alpha;
        let w: Vec<f64> = (0..n)
            .map(|i| a[i] / (1.0 + alpha * a[i] * kt[i]))
            .collect();
        let r: Vec<f64> = (0..n)
            .map(|i| (b[i] - a[i] * self.mean) / (1.0 + alpha * a[i] * kt[i]))
            .collect();
        InducingStats::of(phi, &w, &r)
    }

    /// The latent values given `v` (the second half of [`SparseGp::sample_conditional`]):
    /// `f_i = μ₀ + φ_iᵀv + ε_i`, each `ε_i | v` with precision `1/k̃_i + α a_i` and linear term
    /// `α(b_i − a_i(μ₀ + φ_iᵀv))` — the prior's conditional `p(f_i | u)` times the site to the
    /// power α, Power-EP's tilted distribution (α = 1: the exact conditional; α = 0: `p(f_i | u)`,
    /// the variational family's `q(f | u)`); `normal(i)` is row `i`'s standard normal, asked for
    /// each row with `k̃_i > 0`, in row order.
    pub fn sample_given_inducing(
        &self,
        phi: &DMatrix<f64>,
        kt: &[f64],
        a: &[f64],
        b: &[f64],
        v: &DVector<f64>,
        mut normal: impl FnMut(usize) -> f64,
    ) -> Result<DVector<f64>, RuntimeError> {
        let n = phi.ncols();
        if v.len() != phi.nrows() || kt.len() != n || a.len() != n || b.len() != n {
            return Err(RuntimeError::Inconsistent(
                "inducing values or curvature of the wrong length for the features".into(),
            ));
        }
        let fv = phi.tr_mul(v);
        Ok(DVector::from_fn(n, |i, _| {
            let base = self.mean + fv[i];
            if kt[i] <= 0.0 {
                return base;
            }
            let p = 1.0 / kt[i] + self.alpha * a[i];
            let mu = self.alpha * (b[i] - a[i] * base) / p;
            base + mu + normal(i) / p.sqrt()
        }))
    }
}

impl SparseGp {
    /// One exact draw of the sparse prior's latent values given an augmented likelihood
    /// `exp(Σ_i b_i f_i − ½ a_i f_i²)` (sparse Gibbs). The prior is `f_i = μ₀ + φ_iᵀv + ε_i`,
    /// `v ~ N(0, I)`, `ε_i ~ N(0, k̃_i)` independent (the FITC form of `p(f | u)`). `(v, ε)` is
    /// drawn jointly: first `v` with `ε` integrated out, each observation then a Gaussian
    /// pseudo-observation of `φ_iᵀv` with precision `w_i = a_i/(1 + a_i k̃_i)`:
    /// `v ~ N(P⁻¹Φ r, P⁻¹)`, `P = I + Φ diag(w) Φᵀ`, `r_i = (b_i − a_i μ₀)/(1 + a_i k̃_i)`;
    /// then `ε_i | v` with precision `1/k̃_i + a_i` and linear term `b_i − a_i(μ₀ + φ_iᵀv)`.
    /// Cost `O(N M² + M³)`; nothing `N × N`. Returns `(v, f)`.
    pub fn sample_conditional<R: Rng + ?Sized>(
        &self,
        phi: &DMatrix<f64>,
        kt: &[f64],
        a: &[f64],
        b: &[f64],
        rng: &mut R,
    ) -> Result<(DVector<f64>, DVector<f64>), RuntimeError> {
        use rand_distr::StandardNormal;
        let v = self.fitc_stats(phi, kt, a, b)?.draw(rng)?;
        let normal = |_: usize| rng.sample::<f64, _>(StandardNormal);
        let f = self.sample_given_inducing(phi, kt, a, b, &v, normal)?;
        Ok((v, f))
    }
}

impl SparseGp {
    /// `log ∫ p(f) exp(Σ_i b_i f_i − ½ a_i f_i²) df` under the FITC form of the sparse prior,
    /// `f_i = μ₀ + φ_iᵀv + ε_i`, `v ~ N(0, I)`, `ε_i ~ N(0, k̃_i)`: each `ε_i` integrated in
    /// closed form leaves `−½ log(1 + a_i k̃_i) + ½ k̃_i b_i²/(1 + a_i k̃_i)` and a Gaussian term
    /// in `m_i = μ₀ + φ_iᵀv` with precision `w_i = a_i/(1 + a_i k̃_i)` and linear term
    /// `b_i/(1 + a_i k̃_i)`; then `v` integrated: `−½ log|P| + ½ (Φr)ᵀP⁻¹(Φr)` with
    /// `P = I + Φ diag(w) Φᵀ`, `r_i = (b_i − a_i μ₀)/(1 + a_i k̃_i)`, plus
    /// `μ₀ Σ b_i/(1 + a_i k̃_i) − ½ μ₀² Σ w_i`. `O(N M² + M³)`; the same value as
    /// [`crate::gaussian::gp_log_marginal`] on the `N × N` FITC covariance `ΦᵀΦ + diag(k̃)`.
    pub fn log_marginal(
        &self,
        phi: &DMatrix<f64>,
        kt: &[f64],
        a: &[f64],
        b: &[f64],
    ) -> Result<f64, RuntimeError> {
        let n = phi.ncols();
        let mu = self.mean;
        let (chol, h) = self.fitc_stats(phi, kt, a, b)?.factor()?;
        let mut total = 0.0;
        for i in 0..n {
            let d = 1.0 + a[i] * kt[i];
            total += -0.5 * d.ln() + 0.5 * kt[i] * b[i] * b[i] / d;
            total += mu * b[i] / d - 0.5 * mu * mu * a[i] / d;
        }
        let u = chol
            .l_dirty()
            .solve_lower_triangular(&h)
            .ok_or_else(|| RuntimeError::Numerical("triangular solve failed".into()))?;
        let log_det: f64 = 2.0
            * chol
                .l_dirty()
                .diagonal()
                .iter()
                .map(|x| x.ln())
                .sum::<f64>();
        Ok(total - 0.5 * log_det + 0.5 * u.norm_squared())
    }
}

/// `q(v) = N(m, S)` held by its precision `Λ = S⁻¹` and `h = Λ m` (the natural parameters up to
/// the factor −½ on `Λ`).
#[derive(Debug, Clone)]
pub struct QInducing {
    /// Precision `Λ`.
    pub prec: DMatrix<f64>,
    /// `h = Λ m`.
    pub h: DVector<f64>,
    /// Mean `m`.
    pub mean: DVector<f64>,
    /// The inducing inputs `q` lives on when the run chose them itself (SVI with
    /// `inducing = adaptive(…)`: [`crate::svi`]); `None`: those the model binds to the data.
    pub inputs: Option<DMatrix<f64>>,
    chol: Cholesky<f64, Dyn>,
}

impl QInducing {
    /// The prior `N(0, I)`.
    pub fn prior(m: usize) -> Self {
        let prec = DMatrix::identity(m, m);
        QInducing {
            chol: crate::linalg::cholesky(prec.clone()).expect("identity is positive definite"),
            prec,
            h: DVector::zeros(m),
            mean: DVector::zeros(m),
            inputs: None,
        }
    }

    /// `q(v) ⊗ N(0, I_added)`: the prior's law for `added` new whitened coordinates, which
    /// leaves `q(f)` and the KL as they are (a new point's `v_new` is independent of the
    /// others under the prior: [`crate::svi`]'s online inducing points).
    pub fn extended(&self, added: usize) -> Result<Self, RuntimeError> {
        let m = self.h.len();
        let mut prec = DMatrix::identity(m + added, m + added);
        prec.view_mut((0, 0), (m, m)).copy_from(&self.prec);
        let mut h = DVector::zeros(m + added);
        h.rows_mut(0, m).copy_from(&self.h);
        QInducing::from_natural(prec, h)
    }

    /// From natural parameters; the precision must be positive definite.
    pub fn from_natural(prec: DMatrix<f64>, h: DVector<f64>) -> Result<Self, RuntimeError> {
        let chol = crate::linalg::cholesky(prec.clone()).ok_or_else(|| {
            RuntimeError::Numerical(
                "the precision of q(u) is not positive definite (NaN in the augmented curvature?)"
                    .into(),
            )
        })?;
        let mean = chol.solve(&h);
        Ok(QInducing {
            prec,
            h,
            mean,
            inputs: None,
            chol,
        })
    }

    /// The optimal natural parameters for the curvature `a` and linear term `b` at the columns
    /// of `phi`, each observation counted `scale` times (`N/|B|` for a minibatch).
    pub fn target(
        phi: &DMatrix<f64>,
        a: &[f64],
        b: &[f64],
        mean0: f64,
        scale: f64,
    ) -> Result<(DMatrix<f64>, DVector<f64>), RuntimeError> {
        Ok(crate::shard::InducingStats::of_sites(phi, a, b, mean0)?.natural(scale))
    }

    /// The natural-gradient step (Hoffman et al. 2013): the natural parameters moved a fraction
    /// `rho` of the way to `target` (precision, linear term), `θ ← (1 − ρ) θ + ρ θ̂`.
    pub fn toward(
        &self,
        (prec_hat, h_hat): (DMatrix<f64>, DVector<f64>),
        rho: f64,
    ) -> Result<Self, RuntimeError> {
        let prec = &self.prec * (1.0 - rho) + prec_hat * rho;
        let h = &self.h * (1.0 - rho) + h_hat * rho;
        QInducing::from_natural(prec, h)
    }

    /// Means and variances of `f_i` at feature columns `phi` with residual variances `kt`.
    pub fn marginals(
        &self,
        phi: &DMatrix<f64>,
        kt: &[f64],
        mean0: f64,
    ) -> Result<(Vec<f64>, Vec<f64>), RuntimeError> {
        // Var f_i = k̃_i + φ_iᵀ Λ⁻¹ φ_i = k̃_i + ‖L_Λ⁻¹ φ_i‖².
        let (mut mean, mut var) = crate::columns::projections(phi, self.chol.l_dirty(), &self.mean);
        mean.iter_mut().for_each(|x| *x += mean0);
        var.iter_mut().zip(kt).for_each(|(v, k)| *v += k);
        Ok((mean, var))
    }

    /// One draw of `v ~ q = N(m, Λ⁻¹)`: `m + L⁻ᵀz` with `Λ = LLᵀ`, `z ~ N(0, I)`.
    pub fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> Result<DVector<f64>, RuntimeError> {
        use rand_distr::StandardNormal;
        let z = DVector::from_fn(self.mean.len(), |_, _| rng.sample::<f64, _>(StandardNormal));
        let noise = self
            .chol
            .l_dirty()
            .tr_solve_lower_triangular(&z)
            .ok_or_else(|| RuntimeError::Numerical("triangular solve failed".into()))?;
        Ok(&self.mean + noise)
    }

    /// `KL(q(v) ‖ N(0, I)) = ½ (tr S + mᵀm − M + log|Λ|)`.
    pub fn kl(&self) -> Result<f64, RuntimeError> {
        let m = self.mean.len();
        let linv = crate::linalg::lower_triangular_inverse(self.chol.l_dirty());
        let logdet = 2.0
            * self
                .chol
                .l_dirty()
                .diagonal()
                .iter()
                .map(|x| x.ln())
                .sum::<f64>();
        Ok(0.5 * (linv.norm_squared() + self.mean.norm_squared() - m as f64 + logdet))
    }

    /// `u = μ₀ + L m` and the marginal sds of `u` (for reporting the inducing values).
    pub fn inducing_values(
        &self,
        sp: &SparseGp,
    ) -> Result<(DVector<f64>, DVector<f64>), RuntimeError> {
        let mut mu = &sp.l * &self.mean;
        mu.add_scalar_mut(sp.mean);
        let m = self.mean.len();
        // Cov(u) = L S Lᵀ = (L_Λ⁻¹ Lᵀ)ᵀ (L_Λ⁻¹ Lᵀ).
        let a = crate::linalg::solve_lower(self.chol.l_dirty(), sp.l.transpose());
        let sd = DVector::from_fn(m, |i, _| a.column(i).norm());
        Ok((mu, sd))
    }
}

/// `k` points chosen among the rows of `x` by k-means++ seeding followed by a few Lloyd
/// iterations (Arthur & Vassilvitskii 2007), on at most 20 000 rows sampled with the seed. When
/// `x` has at most `k` distinct rows, those rows are returned.
pub fn kmeans_pp(x: &DMatrix<f64>, k: usize, seed: u64) -> Result<DMatrix<f64>, RuntimeError> {
    let (n, d) = x.shape();
    if k == 0 || n == 0 {
        return Err(RuntimeError::BadData(
            "k-means++ needs at least one point and one input row".into(),
        ));
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let rows: Vec<usize> = if n > 20_000 {
        (0..20_000).map(|_| rng.gen_range(0..n)).collect()
    } else {
        (0..n).collect()
    };
    let dist = |i: usize, c: &[f64]| -> f64 { (0..d).map(|j| (x[(i, j)] - c[j]).powi(2)).sum() };
    // At most one centre per row considered (`k` comes from the model and may be anything).
    let mut centres: Vec<Vec<f64>> = Vec::with_capacity(k.min(rows.len()));
    let first = rows[rng.gen_range(0..rows.len())];
    centres.push(x.row(first).iter().copied().collect());
    let mut best: Vec<f64> = rows.iter().map(|&i| dist(i, &centres[0])).collect();
    while centres.len() < k {
        let total: f64 = best.iter().sum();
        if !(total > 0.0) {
            break; // fewer distinct rows than k
        }
        let mut u = rng.gen::<f64>() * total;
        let mut pick = rows.len() - 1;
        for (r, w) in best.iter().enumerate() {
            if u < *w {
                pick = r;
                break;
            }
            u -= w;
        }
        // A stop (Ctrl-C) ends the choice: M·rows distances can take seconds.
        crate::stop::check("the k-means++ choice of inducing points")?;
        let c: Vec<f64> = x.row(rows[pick]).iter().copied().collect();
        for (r, &i) in rows.iter().enumerate() {
            best[r] = best[r].min(dist(i, &c));
        }
        centres.push(c);
    }
    // Lloyd iterations refine the seeding.
    for _ in 0..10 {
        crate::stop::check("the k-means++ choice of inducing points")?;
        let kk = centres.len();
        let mut sum = vec![vec![0.0; d]; kk];
        let mut count = vec![0usize; kk];
        for &i in &rows {
            let (mut bj, mut bd) = (0, f64::INFINITY);
            for (j, c) in centres.iter().enumerate() {
                let dd = dist(i, c);
                if dd < bd {
                    (bj, bd) = (j, dd);
                }
            }
            count[bj] += 1;
            for t in 0..d {
                sum[bj][t] += x[(i, t)];
            }
        }
        for j in 0..kk {
            if count[j] > 0 {
                centres[j] = sum[j].iter().map(|s| s / count[j] as f64).collect();
            }
        }
    }
    Ok(DMatrix::from_fn(centres.len(), d, |i, j| centres[i][j]))
}
