//! Gaussian latent blocks under an augmented likelihood that is a diagonal quadratic form
//! `Σ_i (b_i x_i − ½ a_i x_i²)` in the block's contribution `x = Φ θ` to the predictors.
//!
//! * [`GpBlock`] — a GP block (`x = f`, prior `N(μ₀, K)`). Posterior precision `K⁻¹ + diag(a)`
//!   (thesis ch. 5 Theorem 2). Sampling uses the pseudo-observation (Matheron) form
//!   `f = f₀ + K S B⁻¹ (b/s − S f₀ − z)`, `S = diag(√a)`, `B = I + S K S`, `f₀ ~ N(0, K)`,
//!   `z ~ N(0, I)`: one Cholesky of `B` and O(N²) work per draw, never `K⁻¹` (GPML §3.4 uses the
//!   same `B` for its numerical stability: its eigenvalues are ≥ 1).
//! * [`DenseBlock`] — a small block with an explicit design (`x = Φ θ`, prior
//!   `N(μ₀, diag(s²))`): regression weights, intercepts, random effects. Precision
//!   `diag(1/s²) + Φᵀ diag(a) Φ`, factored by Cholesky.

use crate::RuntimeError;
use nalgebra::{Cholesky, DMatrix, DVector, Dyn};
use rand::Rng;
use rand_distr::StandardNormal;
use std::borrow::Cow;

/// Cholesky with jitter added only when the matrix is not numerically positive definite; the
/// jitter used is returned so that it can be reported.
pub fn cholesky_jitter(
    m: &DMatrix<f64>,
    what: &str,
) -> Result<(Cholesky<f64, Dyn>, f64), RuntimeError> {
    if let Some(c) = crate::linalg::cholesky(m.clone()) {
        // A NaN or infinite entry never factors (it reaches a pivot), so the scan for one waits
        // for a failure: on the way to success it cost a third of a factorisation at N = 200.
        return Ok((c, 0.0));
    }
    if m.iter().any(|v| !v.is_finite()) {
        return Err(RuntimeError::Numerical(format!(
            "the {what} contains NaN or infinite entries"
        )));
    }
    let scale = m
        .diagonal()
        .iter()
        .fold(0.0f64, |s, v| s.max(v.abs()))
        .max(1e-300);
    let mut jitter = 1e-10 * scale;
    while jitter <= 1e-3 * scale {
        let mut mj = m.clone();
        for i in 0..m.nrows() {
            mj[(i, i)] += jitter;
        }
        if let Some(c) = crate::linalg::cholesky(mj) {
            return Ok((c, jitter));
        }
        jitter *= 10.0;
    }
    Err(RuntimeError::Numerical(format!(
        "the {what} is not positive definite, even with jitter {:.1e} on the diagonal",
        1e-3 * scale
    )))
}

fn std_normal_vec<R: Rng + ?Sized>(n: usize, rng: &mut R) -> DVector<f64> {
    DVector::from_iterator(n, (0..n).map(|_| rng.sample::<f64, _>(StandardNormal)))
}

/// Mean, marginal variances and KL divergence to the prior of a Gaussian posterior.
#[derive(Debug, Clone)]
pub struct Moments {
    /// Posterior mean.
    pub mean: DVector<f64>,
    /// Posterior marginal variances.
    pub var: DVector<f64>,
    /// `KL(q ‖ prior)`.
    pub kl: f64,
}

/// `log ∫ N(f | μ₀1, K) exp(bᵀf − ½ fᵀ diag(a) f) df`, up to a constant free of `K` and `μ₀`:
/// the likelihood of the kernel's hyperparameters once the auxiliaries make the likelihood
/// Gaussian in `f`. With `S = diag(√a)`, `B = I + SKS = LLᵀ` and `c = b − aμ₀`
/// (Sylvester: `|I + KA| = |B|`; Woodbury: `(K⁻¹ + A)⁻¹ = K − KS B⁻¹ SK`):
/// `−½ log|B| + ½ (cᵀKc − ‖L⁻¹SKc‖²) + μ₀ Σb − ½ μ₀² Σa`. Never forms `K⁻¹`.
pub fn gp_log_marginal(
    k: &DMatrix<f64>,
    mean: f64,
    a: &[f64],
    b: &[f64],
) -> Result<f64, RuntimeError> {
    gp_log_marginal_factored(k, mean, a, b).map(|(v, _)| v)
}

/// [`gp_log_marginal`] with the factor of `B = I + SKS` it made, which [`GpBlock::sample`] at
/// the same `K` and curvature can reuse ([`GpBlock::with_b_factor`]). `S` is formed as in the
/// draw (`√max(a, 10⁻¹²)`), so that the factor is the draw's.
pub fn gp_log_marginal_factored(
    k: &DMatrix<f64>,
    mean: f64,
    a: &[f64],
    b: &[f64],
) -> Result<(f64, Cholesky<f64, Dyn>), RuntimeError> {
    gp_log_marginal_scaled(k, 1.0, mean, a, b)
}

/// [`gp_log_marginal_factored`] at `K = v K₁`, reading only `K₁`'s lower triangle (a
/// [`crate::kernels::training_lower`] matrix will do): `B` and `K c` come from one pass over
/// it, so a hyperparameter's evaluation forms no scaled copy of `K` and no mirror of it.
pub fn gp_log_marginal_scaled(
    k1: &DMatrix<f64>,
    v: f64,
    mean: f64,
    a: &[f64],
    b: &[f64],
) -> Result<(f64, Cholesky<f64, Dyn>), RuntimeError> {
    let n = k1.nrows();
    if a.len() != n || b.len() != n {
        return Err(RuntimeError::Inconsistent(
            "curvature and linear term have the wrong length".into(),
        ));
    }
    let s: Vec<f64> = a.iter().map(|v| v.max(MIN_CURVATURE).sqrt()).collect();
    let c: Vec<f64> = (0..n).map(|i| b[i] - a[i] * mean).collect();
    let (bm, kc) = b_lower(k1, v, &s, Some(&c));
    let chol = factor_b(bm)?;
    let log_det: f64 = chol
        .l_dirty()
        .diagonal()
        .iter()
        .map(|d| d.ln())
        .sum::<f64>()
        * 2.0;
    let skc = DVector::from_iterator(n, kc.iter().zip(&s).map(|(x, si)| x * si));
    let u = crate::linalg::solve_lower_vec(chol.l_dirty(), &skc);
    let ckc: f64 = c.iter().zip(&kc).map(|(x, y)| x * y).sum();
    let (sum_b, sum_a): (f64, f64) = (b.iter().sum(), a.iter().sum());
    let value =
        -0.5 * log_det + 0.5 * (ckc - u.norm_squared()) + mean * sum_b - 0.5 * mean * mean * sum_a;
    Ok((value, chol))
}

/// The Cholesky factor of `B = I + S K S`, its lower triangle written in one pass over `K`'s
/// (the factorisation reads the lower triangle only; the upper one is zero).
pub(crate) fn b_factor(
    k: &DMatrix<f64>,
    s: &DVector<f64>,
) -> Result<Cholesky<f64, Dyn>, RuntimeError> {
    factor_b(b_lower(k, 1.0, s.as_slice(), None).0)
}

fn factor_b(b: DMatrix<f64>) -> Result<Cholesky<f64, Dyn>, RuntimeError> {
    crate::linalg::cholesky(b).ok_or_else(|| {
        RuntimeError::Numerical(
            "I + S K S is not positive definite (NaN in the augmented curvature?)".into(),
        )
    })
}

/// `B = I + v S K₁ S` (lower triangle, zeros above) and, given `c`, `v K₁ c`, from one pass
/// over `K₁`'s lower triangle by columns: `B`'s column `j` below the diagonal, the symmetric
/// product's `y_j += K₁[j.., j]·c[j..]` and `y[j+1..] += c_j K₁[j+1.., j]` (columns as slices: a
/// strided nalgebra iterator skipped to row j cost O(j) and pushed element by element).
fn b_lower(k1: &DMatrix<f64>, v: f64, s: &[f64], c: Option<&[f64]>) -> (DMatrix<f64>, Vec<f64>) {
    let n = k1.nrows();
    let mut b = Vec::with_capacity(n * n);
    let mut y = vec![0.0; if c.is_some() { n } else { 0 }];
    for (j, col) in k1.as_slice().chunks_exact(n.max(1)).enumerate() {
        let sj = s[j];
        b.resize(j * n + j, 0.0);
        // `(v K₁_ij)(s_i s_j)`: the entries of `v K₁` as a scaled copy has them, then `B`'s.
        b.push((col[j] * v) * (sj * sj) + 1.0);
        b.extend(
            col[j + 1..]
                .iter()
                .zip(&s[j + 1..])
                .map(|(x, si)| (x * v) * (si * sj)),
        );
        if let Some(c) = c {
            y[j] += dot(&col[j..], &c[j..]);
            let cj = c[j];
            for (yi, x) in y[j + 1..].iter_mut().zip(&col[j + 1..]) {
                *yi += x * cj;
            }
        }
    }
    y.iter_mut().for_each(|yi| *yi *= v);
    (DMatrix::from_vec(n, n, b), y)
}

/// `Σ xᵢ yᵢ` in eight interleaved partial sums (independent chains the compiler vectorises;
/// one running sum would wait on each addition), added in a fixed order.
fn dot(x: &[f64], y: &[f64]) -> f64 {
    let mut acc = [0.0; 8];
    let (xc, yc) = (x.chunks_exact(8), y.chunks_exact(8));
    let tail: f64 = xc
        .remainder()
        .iter()
        .zip(yc.remainder())
        .map(|(a, b)| a * b)
        .sum();
    for (a, b) in xc.zip(yc) {
        for l in 0..8 {
            acc[l] += a[l] * b[l];
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// The augmented likelihood `exp(Σ b_i f_i − ½ a_i f_i²)` must have `a_i ≥ 0` and finite `b_i`
/// (a NaN from a sampler or a tape is reported here, naming the observation).
pub(crate) fn check_curvature(a: &[f64], b: &[f64]) -> Result<(), RuntimeError> {
    match (0..a.len()).find(|&i| !(a[i] >= 0.0) || !b[i].is_finite()) {
        Some(i) => Err(RuntimeError::Numerical(format!(
            "observation {}: augmented curvature {} / linear term {} is not valid",
            i + 1,
            a[i],
            b[i]
        ))),
        None => Ok(()),
    }
}

/// A GP latent block with its prior factored once.
#[derive(Debug, Clone)]
pub struct GpBlock {
    /// Prior covariance (with jitter, if any was needed).
    pub k: DMatrix<f64>,
    /// Its Cholesky factor.
    pub chol: Cholesky<f64, Dyn>,
    /// Constant prior mean.
    pub mean: f64,
    /// Diagonal jitter that was needed to factor `K` (0 when none).
    pub jitter: f64,
    /// The factor of `I + SKS` at one curvature `a`, made while evaluating the hyperparameters'
    /// conditional at this `K` ([`gp_log_marginal_factored`]): the draw at that curvature
    /// reuses it instead of factoring again.
    b_factor: Option<(Vec<f64>, Cholesky<f64, Dyn>)>,
    /// `K`'s leading eigenpairs, where the draw solves with `B` by preconditioned CG instead of
    /// factorising it ([`crate::pathwise`]; a fixed kernel's block from the schedule's
    /// crossover size on).
    spectrum: Option<std::sync::Arc<crate::pathwise::PriorSpectrum>>,
}

/// Smallest curvature used in `S = √a`: keeps `b/s` finite for observations that carry no
/// quadratic term (their pseudo-observation then has a huge variance and no influence).
const MIN_CURVATURE: f64 = 1e-12;

impl GpBlock {
    /// The prior with its covariance times `c > 0` (its factor times `√c`): no factorisation.
    pub fn scaled(&self, c: f64) -> GpBlock {
        let l = self.chol.l_dirty() * c.sqrt();
        GpBlock {
            k: &self.k * c,
            chol: Cholesky::pack_dirty(l),
            mean: self.mean,
            jitter: self.jitter * c,
            b_factor: None,
            spectrum: None,
        }
    }

    /// Factor the prior covariance.
    pub fn new(k: DMatrix<f64>, mean: f64) -> Result<Self, RuntimeError> {
        let (chol, jitter) = cholesky_jitter(&k, "GP prior covariance")?;
        let mut k = k;
        for i in 0..k.nrows() {
            k[(i, i)] += jitter;
        }
        Ok(GpBlock {
            k,
            chol,
            mean,
            jitter,
            b_factor: None,
            spectrum: None,
        })
    }

    /// Draw by the pathwise CG solve with `K`'s `rank` leading eigenpairs as preconditioner
    /// (one eigendecomposition of `K`, here).
    pub fn with_spectrum(mut self, rank: usize) -> Result<Self, RuntimeError> {
        let spectrum = crate::pathwise::PriorSpectrum::of(&self.k, rank)?;
        self.set_spectrum(std::sync::Arc::new(spectrum));
        Ok(self)
    }

    /// Draw by the pathwise CG solve with `spectrum`, the leading eigenpairs of this block's
    /// `K` (shared by the columns of a matrix latent).
    pub fn set_spectrum(&mut self, spectrum: std::sync::Arc<crate::pathwise::PriorSpectrum>) {
        if spectrum.len() == self.len() {
            self.spectrum = Some(spectrum);
        }
    }

    /// What the CG solve of `B W = R` at `S = diag(s)` does (the benches' crossover
    /// measurement); `None` without a spectrum or where it does not converge.
    pub fn pathwise_stats(
        &self,
        s: &DVector<f64>,
        rhs: &DMatrix<f64>,
    ) -> Option<crate::pathwise::SolveStats> {
        let spectrum = self.spectrum.as_ref()?;
        crate::pathwise::solve_b(&self.k, s, spectrum, rhs).map(|(_, stats)| stats)
    }

    /// Whether the draw solves by CG ([`GpBlock::with_spectrum`]).
    pub fn is_pathwise(&self) -> bool {
        self.spectrum.is_some()
    }

    /// Keep the factor of `I + SKS` at curvature `a` made from this block's `K` (dropped if
    /// `K` needed jitter: the factor was made without it).
    pub fn with_b_factor(mut self, a: &[f64], lb: Cholesky<f64, Dyn>) -> Self {
        if self.jitter == 0.0 && lb.l_dirty().nrows() == self.len() {
            self.b_factor = Some((a.to_vec(), lb));
        }
        self
    }

    /// `log N(f | μ₀, K)` up to `−(n/2) log 2π`: `−½‖L⁻¹(f − μ₀)‖² − Σ log L_ii`.
    pub fn log_prior(&self, f: &DVector<f64>) -> Result<f64, RuntimeError> {
        let d = f.map(|v| v - self.mean);
        let v = crate::linalg::solve_lower_vec(self.chol.l_dirty(), &d);
        let half_log_det: f64 = self.chol.l_dirty().diagonal().iter().map(|x| x.ln()).sum();
        Ok(-(0.5 * v.norm_squared() + half_log_det))
    }

    /// Number of latent values.
    pub fn len(&self) -> usize {
        self.k.nrows()
    }

    /// Whether the block is empty.
    pub fn is_empty(&self) -> bool {
        self.k.nrows() == 0
    }

    /// The factor of `I + SKS` at curvature `a` (`s = √max(a, 10⁻¹²)`): the kept one when it
    /// was made at this `a`, else a new one.
    /// Borrowed when kept: a copy would be one more N × N pass per draw.
    fn b_matrix(
        &self,
        a: &[f64],
        s: &DVector<f64>,
    ) -> Result<Cow<'_, Cholesky<f64, Dyn>>, RuntimeError> {
        match &self.b_factor {
            Some((at, lb)) if at.as_slice() == a => Ok(Cow::Borrowed(lb)),
            _ => Ok(Cow::Owned(b_factor(&self.k, s)?)),
        }
    }

    fn curvature(
        &self,
        a: &[f64],
        b: &[f64],
    ) -> Result<(DVector<f64>, DVector<f64>), RuntimeError> {
        if a.len() != self.len() || b.len() != self.len() {
            return Err(RuntimeError::Inconsistent(
                "curvature and linear term have the wrong length".into(),
            ));
        }
        check_curvature(a, b)?;
        let s = DVector::from_iterator(a.len(), a.iter().map(|v| v.max(MIN_CURVATURE).sqrt()));
        // Shift to a zero prior mean: b' = b − a μ₀.
        let bp = DVector::from_iterator(b.len(), (0..b.len()).map(|i| b[i] - a[i] * self.mean));
        Ok((s, bp))
    }

    /// `Σ v = K v − K S B⁻¹ S K v` (`Σ = (K⁻¹ + S²)⁻¹`, `B = I + SKS` factored as `lb`): the
    /// conditional's mean shift, shared by the elliptical update and CAVI.
    fn sigma_times(
        &self,
        lb: &Cholesky<f64, Dyn>,
        s: &DVector<f64>,
        v: &DVector<f64>,
    ) -> DVector<f64> {
        let kv = crate::linalg::matvec(&self.k, v);
        let w = crate::linalg::cholesky_solve_vec(lb.l_dirty(), &kv.component_mul(s));
        &kv - crate::linalg::matvec(&self.k, &w.component_mul(s))
    }

    /// One exact draw from the conditional `N(Σ(K⁻¹μ₀ + b), Σ)`, `Σ = (K⁻¹ + diag a)⁻¹`.
    pub fn sample<R: Rng + ?Sized>(
        &self,
        a: &[f64],
        b: &[f64],
        rng: &mut R,
    ) -> Result<DVector<f64>, RuntimeError> {
        Ok(self.sample_with_mean(a, b, rng)?.0)
    }

    /// A draw and the conditional mean it is a draw about, `(f, E[f | a, b])`: Matheron's rule
    /// `f = f₀ + K S B⁻¹ (S⁻¹b' − S f₀ − z)` is linear in `(f₀, z)`, whose mean is 0, so the mean
    /// is the same solve with `f₀ = z = 0` — one more right-hand side for the factor `B` and
    /// one more column for the product with `K` (the Rao-Blackwellised summaries).
    pub fn sample_with_mean<R: Rng + ?Sized>(
        &self,
        a: &[f64],
        b: &[f64],
        rng: &mut R,
    ) -> Result<(DVector<f64>, DVector<f64>), RuntimeError> {
        let n = self.len();
        let (s, bp) = self.curvature(a, b)?;
        let f0 = crate::linalg::lower_times_vec(self.chol.l_dirty(), &std_normal_vec(n, rng));
        let z = std_normal_vec(n, rng);
        let rhs = DMatrix::from_fn(n, 2, |i, j| {
            let centre = bp[i] / s[i];
            if j == 0 {
                centre - s[i] * f0[i] - z[i]
            } else {
                centre
            }
        });
        let mut w = self.solve_b(a, &s, rhs)?;
        for j in 0..2 {
            w.column_mut(j).component_mul_assign(&s);
        }
        let kw = crate::linalg::matmul(&self.k, &w);
        let mut f = f0 + kw.column(0);
        f.add_scalar_mut(self.mean);
        let mut mean = kw.column(1).into_owned();
        mean.add_scalar_mut(self.mean);
        Ok((f, mean))
    }

    /// `B⁻¹ R`: by CG where the block has its prior's spectrum and no factor of `B` at this
    /// curvature is kept, else (or where CG does not converge) from `B`'s factor.
    fn solve_b(
        &self,
        a: &[f64],
        s: &DVector<f64>,
        rhs: DMatrix<f64>,
    ) -> Result<DMatrix<f64>, RuntimeError> {
        let kept = matches!(&self.b_factor, Some((at, _)) if at.as_slice() == a);
        if let (Some(spectrum), false) = (&self.spectrum, kept) {
            if let Some((w, _)) = crate::pathwise::solve_b(&self.k, s, spectrum, &rhs) {
                return Ok(w);
            }
        }
        let lb = self.b_matrix(a, s)?;
        Ok(crate::linalg::cholesky_solve(lb.l_dirty(), rhs))
    }

    /// The conditional's mean and a sampler of its centred draws `N(0, Σ)`, factored once:
    /// what elliptical slice sampling draws at every step.
    pub fn ellipse(&self, a: &[f64], b: &[f64]) -> Result<GpEllipse<'_>, RuntimeError> {
        let (s, bp) = self.curvature(a, b)?;
        let lb = self.b_matrix(a, &s)?;
        let mut mean = self.sigma_times(&lb, &s, &bp);
        mean.add_scalar_mut(self.mean);
        Ok(GpEllipse {
            gp: self,
            s,
            lb,
            mean,
        })
    }

    /// The conditional's covariance `Σ = (K⁻¹ + diag a)⁻¹ = K − (L_B⁻¹ S K)ᵀ(L_B⁻¹ S K)`, whole
    /// (the reference of the adapted marginal elliptical steps, made a few times per warm-up).
    pub fn conditional_covariance(&self, a: &[f64]) -> Result<DMatrix<f64>, RuntimeError> {
        let n = self.len();
        let (s, _) = self.curvature(a, &vec![0.0; n])?;
        let lb = self.b_matrix(a, &s)?;
        let sk = DMatrix::from_fn(n, n, |i, j| s[i] * self.k[(i, j)]);
        let w = crate::linalg::solve_lower(lb.l_dirty(), sk);
        let wtw = crate::linalg::matmul(&w.transpose(), &w);
        Ok(&self.k - wtw)
    }

    /// Posterior moments and `KL(q ‖ p)` for CAVI.
    pub fn moments(&self, a: &[f64], b: &[f64]) -> Result<Moments, RuntimeError> {
        let n = self.len();
        let (s, bp) = self.curvature(a, b)?;
        let lb = self.b_matrix(a, &s)?;
        let d = self.sigma_times(&lb, &s, &bp);
        // One triangular inverse R = L_B⁻¹ serves both: diag Σ = diag K − ‖R S K e_i‖² (R S K by
        // a matrix product, much faster than a second triangular solve with N right-hand
        // sides), and, in KL = ½ [tr(K⁻¹Σ) + dᵀK⁻¹d − N + log|K| − log|Σ|], tr(K⁻¹Σ) = tr(B⁻¹)
        // = ‖R‖²_F and log|K| − log|Σ| = log|B|.
        let lbinv = crate::linalg::lower_triangular_inverse(lb.l_dirty());
        let sk = DMatrix::from_fn(n, n, |i, j| s[i] * self.k[(i, j)]);
        let v = crate::linalg::lower_times(&lbinv, &sk);
        let var = DVector::from_fn(n, |i, _| {
            (self.k[(i, i)] - v.column(i).norm_squared()).max(0.0)
        });
        let tr_binv = lbinv.norm_squared();
        let kd = crate::linalg::solve_lower_vec(self.chol.l_dirty(), &d);
        let logdet_b = 2.0 * lb.l_dirty().diagonal().iter().map(|x| x.ln()).sum::<f64>();
        let kl = 0.5 * (tr_binv + kd.norm_squared() - n as f64 + logdet_b);
        let mut mean = d;
        mean.add_scalar_mut(self.mean);
        Ok(Moments { mean, var, kl })
    }
}

/// A GP conditional factored once ([`GpBlock::ellipse`]).
pub struct GpEllipse<'a> {
    gp: &'a GpBlock,
    s: DVector<f64>,
    lb: Cow<'a, Cholesky<f64, Dyn>>,
    /// The conditional mean.
    pub mean: DVector<f64>,
}

impl GpEllipse<'_> {
    /// A draw of `N(0, Σ)`, `Σ = (K⁻¹ + S²)⁻¹`: [`GpBlock::sample`] with a zero linear term,
    /// `f₀ + K S B⁻¹(−S f₀ − z)` with `f₀ ~ N(0, K)`, `z ~ N(0, I)` (GPML §3.4.3's
    /// matrix-inversion-free form; `O(N²)` per draw).
    pub fn centred_draw<R: Rng + ?Sized>(&self, rng: &mut R) -> DVector<f64> {
        let n = self.s.len();
        let f0 = crate::linalg::lower_times_vec(self.gp.chol.l_dirty(), &std_normal_vec(n, rng));
        let z = std_normal_vec(n, rng);
        let v = DVector::from_fn(n, |i, _| -self.s[i] * f0[i] - z[i]);
        let w = crate::linalg::cholesky_solve_vec(self.lb.l_dirty(), &v).component_mul(&self.s);
        f0 + crate::linalg::matvec(&self.gp.k, &w)
    }
}

/// A small Gaussian block with an explicit design matrix and independent normal prior.
#[derive(Debug, Clone)]
pub struct DenseBlock {
    /// Design `Φ` (observations × coefficients).
    pub design: DMatrix<f64>,
    /// Prior means.
    pub prior_mean: DVector<f64>,
    /// Prior standard deviations.
    pub prior_sd: DVector<f64>,
}

impl DenseBlock {
    fn precision(
        &self,
        a: &[f64],
        b: &[f64],
    ) -> Result<(Cholesky<f64, Dyn>, DVector<f64>), RuntimeError> {
        let (n, d) = self.design.shape();
        if a.len() != n || b.len() != n {
            return Err(RuntimeError::Inconsistent(
                "curvature and linear term have the wrong length".into(),
            ));
        }
        let mut p = DMatrix::zeros(d, d);
        let mut h = DVector::zeros(d);
        for j in 0..d {
            // A flat prior (sd = ∞) adds nothing: 1/∞ = 0.
            let s2 = self.prior_sd[j] * self.prior_sd[j];
            p[(j, j)] = 1.0 / s2;
            h[j] = if s2.is_infinite() {
                0.0
            } else {
                self.prior_mean[j] / s2
            };
        }
        // Φᵀ diag(a) Φ and Φᵀ b, skipping the zeros of sparse designs (random effects).
        for i in 0..n {
            let row = self.design.row(i);
            let nz: Vec<usize> = (0..d).filter(|&j| row[j] != 0.0).collect();
            for &j in &nz {
                h[j] += row[j] * b[i];
                for &k in &nz {
                    p[(j, k)] += a[i] * row[j] * row[k];
                }
            }
        }
        let (chol, jitter) = cholesky_jitter(&p, "posterior precision of a weight block")?;
        self.check_flat_identified(&p, &chol, jitter)?;
        Ok((chol, h))
    }

    /// Under a flat prior the conditional is proper only if the data inform every flat
    /// coordinate: its Cholesky pivot `L_jj²` (its conditional precision given the coordinates
    /// before it) must not vanish against its own precision `P_jj`. Jitter, which would make
    /// an improper posterior look proper, is refused outright.
    fn check_flat_identified(
        &self,
        p: &DMatrix<f64>,
        chol: &Cholesky<f64, Dyn>,
        jitter: f64,
    ) -> Result<(), RuntimeError> {
        let l = chol.l_dirty();
        let flat = (0..p.nrows()).filter(|&j| self.prior_sd[j].is_infinite());
        for j in flat {
            if jitter > 0.0 || !(l[(j, j)] * l[(j, j)] > 1e-12 * p[(j, j)]) {
                return Err(RuntimeError::BadData(format!(
                    "coefficient {} of a block with a flat prior is not informed by the data (a zero column of its design, or one that repeats a combination of others), so its posterior is improper; give that latent a proper prior (e.g. `normal(0, 10)`) or drop the coefficient",
                    j + 1
                )));
            }
        }
        Ok(())
    }

    /// `log ∫ N(θ | μ, diag(sd²)) exp(Σᵢ bᵢ(Φθ)ᵢ − ½ aᵢ(Φθ)ᵢ²) dθ`, up to a constant free of the
    /// prior: with `P = diag(sd⁻²) + ΦᵀAΦ = LLᵀ` and `h = μ/sd² + Φᵀb`, it is
    /// `½‖L⁻¹h‖² − ½ Σ μ²/sd² − Σ log Lⱼⱼ − Σ log sdⱼ` — the likelihood of the prior's scale
    /// once the auxiliaries make the likelihood Gaussian in θ.
    pub fn log_marginal(&self, a: &[f64], b: &[f64]) -> Result<f64, RuntimeError> {
        let (chol, h) = self.precision(a, b)?;
        let l = chol.l_dirty();
        let u = l
            .solve_lower_triangular(&h)
            .ok_or_else(|| RuntimeError::Numerical("triangular solve failed".into()))?;
        let prior: f64 = (0..self.prior_mean.len())
            .map(|j| {
                let sd = self.prior_sd[j];
                // A flat coordinate's normaliser is an improper constant: dropped.
                if sd.is_infinite() {
                    return 0.0;
                }
                0.5 * (self.prior_mean[j] / sd).powi(2) + sd.ln()
            })
            .sum();
        let log_det: f64 = l.diagonal().iter().map(|x| x.ln()).sum();
        Ok(0.5 * u.norm_squared() - prior - log_det)
    }

    /// One exact draw from the conditional, and the conditional mean it is a draw about (the
    /// Rao-Blackwellised summaries).
    pub fn sample_with_mean<R: Rng + ?Sized>(
        &self,
        a: &[f64],
        b: &[f64],
        rng: &mut R,
    ) -> Result<(DVector<f64>, DVector<f64>), RuntimeError> {
        let (chol, h) = self.precision(a, b)?;
        let mean = chol.solve(&h);
        let z = std_normal_vec(mean.len(), rng);
        // θ = μ + L⁻ᵀ z has covariance (L Lᵀ)⁻¹.
        let dev = chol
            .l_dirty()
            .transpose()
            .solve_upper_triangular(&z)
            .ok_or_else(|| RuntimeError::Numerical("triangular solve failed".into()))?;
        Ok((&mean + dev, mean))
    }

    /// The conditional's mean and the Cholesky factor of its precision, factored once.
    pub fn ellipse(
        &self,
        a: &[f64],
        b: &[f64],
    ) -> Result<(DVector<f64>, Cholesky<f64, Dyn>), RuntimeError> {
        let (chol, h) = self.precision(a, b)?;
        Ok((chol.solve(&h), chol))
    }

    /// Posterior moments (of the coefficients) and `KL(q ‖ p)`.
    pub fn moments(&self, a: &[f64], b: &[f64]) -> Result<(Moments, DMatrix<f64>), RuntimeError> {
        let (chol, h) = self.precision(a, b)?;
        let mean = chol.solve(&h);
        let cov = chol.inverse();
        let d = mean.len();
        let mut kl = 0.0;
        let logdet_prec = 2.0
            * chol
                .l_dirty()
                .diagonal()
                .iter()
                .map(|x| x.ln())
                .sum::<f64>();
        for j in 0..d {
            let s2 = self.prior_sd[j] * self.prior_sd[j];
            // Under a flat prior only q's entropy remains (the KL up to an improper constant).
            if s2.is_infinite() {
                continue;
            }
            let dm = mean[j] - self.prior_mean[j];
            kl += (cov[(j, j)] + dm * dm) / s2 + s2.ln();
        }
        kl = 0.5 * (kl - d as f64 + logdet_prec);
        Ok((
            Moments {
                var: cov.diagonal(),
                mean,
                kl,
            },
            cov,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The marginal at `K = v K₁` from `K₁`'s lower triangle is the marginal at the whole `v K₁`
    /// (the upper triangle, here garbage, never read), with the same factor of `B` to the bit.
    #[test]
    fn scaled_marginal_reads_the_lower_triangle() {
        for n in [1, 7, 40] {
            let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin() * 3.0).collect();
            let k1 = DMatrix::from_fn(n, n, |i, j| {
                (-0.5 * (x[i] - x[j]).powi(2)).exp() + if i == j { 1e-6 } else { 0.0 }
            });
            let mut garbage = k1.clone();
            for j in 0..n {
                for i in 0..j {
                    garbage[(i, j)] = f64::NAN;
                }
            }
            let a: Vec<f64> = (0..n).map(|i| 0.1 + (i % 5) as f64 * 0.3).collect();
            let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.9).cos()).collect();
            for v in [1.0, 0.3, 4.5] {
                let (want, lw) = gp_log_marginal_factored(&(&k1 * v), 0.2, &a, &b).unwrap();
                let (got, lg) = gp_log_marginal_scaled(&garbage, v, 0.2, &a, &b).unwrap();
                assert!(
                    (want - got).abs() < 1e-10 * want.abs().max(1.0),
                    "{want} {got}"
                );
                assert_eq!(lw.l_dirty(), lg.l_dirty());
            }
        }
    }

    /// `log N(ỹ | μ₀1, K + A⁻¹)` with pseudo-observations `ỹ = b/a`, by a dense Cholesky.
    fn pseudo_observation_evidence(k: &DMatrix<f64>, mean: f64, a: &[f64], b: &[f64]) -> f64 {
        let n = k.nrows();
        let mut c = k.clone();
        for i in 0..n {
            c[(i, i)] += 1.0 / a[i];
        }
        let ch = crate::linalg::cholesky(c).unwrap();
        let r = DVector::from_fn(n, |i, _| b[i] / a[i] - mean);
        let u = ch.l_dirty().solve_lower_triangular(&r).unwrap();
        -0.5 * u.norm_squared() - ch.l_dirty().diagonal().iter().map(|d| d.ln()).sum::<f64>()
    }

    /// With a Gaussian likelihood `y ~ N(Φθ, σ²)` (`a = 1/σ²`, `b = y/σ²`), the dense block's
    /// marginal must differ from `log N(y | Φμ, Φ diag(sd²) Φᵀ + σ²I)` by a constant free of
    /// the prior.
    #[test]
    fn dense_marginal_differs_from_the_evidence_by_a_constant() {
        let (n, d) = (9, 3);
        let phi = DMatrix::from_fn(n, d, |i, j| ((i * 5 + j * 3) % 7) as f64 / 3.0 - 1.0);
        let y = DVector::from_fn(n, |i, _| (i as f64 * 0.7).sin());
        let (a, b): (Vec<f64>, Vec<f64>) = (0..n).map(|i| (4.0, y[i] * 4.0)).unzip();
        let mut diffs = Vec::new();
        for (mu, sd) in [(0.0, 0.3), (0.0, 1.7), (0.4, 0.9), (-1.0, 2.5)] {
            let block = DenseBlock {
                design: phi.clone(),
                prior_mean: DVector::from_element(d, mu),
                prior_sd: DVector::from_element(d, sd),
            };
            let ours = block.log_marginal(&a, &b).unwrap();
            let cov = &phi * &phi.transpose() * (sd * sd) + DMatrix::identity(n, n) * 0.25;
            let r = &y - &phi * DVector::from_element(d, mu);
            let ch = Cholesky::new(cov).unwrap();
            let u = ch.l().solve_lower_triangular(&r).unwrap();
            let exact =
                -0.5 * u.norm_squared() - ch.l().diagonal().iter().map(|v| v.ln()).sum::<f64>();
            diffs.push(ours - exact);
        }
        for d in &diffs {
            assert!((d - diffs[0]).abs() < 1e-9, "{diffs:?}");
        }
    }

    #[test]
    fn gp_marginal_differs_from_the_pseudo_observation_evidence_by_a_constant() {
        // The two agree up to terms free of K and μ₀ (½ Σ b²/a − ½ Σ log a), so their
        // differences between kernels (and means) must agree.
        let n = 12;
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.77).sin() * 2.0).collect();
        let a: Vec<f64> = (0..n)
            .map(|i| 0.05 + (i as f64 * 1.3).cos().abs())
            .collect();
        let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.41).sin() - 0.2).collect();
        let kern = |l: f64, v: f64| {
            DMatrix::from_fn(n, n, |i, j| {
                v * (-(x[i] - x[j]).powi(2) / (2.0 * l * l)).exp()
            }) + DMatrix::identity(n, n) * 1e-8
        };
        let ours = |l: f64, v: f64, m: f64| gp_log_marginal(&kern(l, v), m, &a, &b).unwrap();
        let theirs = |l: f64, v: f64, m: f64| pseudo_observation_evidence(&kern(l, v), m, &a, &b);
        let base = ours(1.0, 1.0, 0.0) - theirs(1.0, 1.0, 0.0);
        for &(l, v, m) in &[(0.3, 2.0, 0.0), (2.5, 0.5, 0.7), (1.0, 4.0, -1.2)] {
            let d = ours(l, v, m) - theirs(l, v, m);
            assert!((d - base).abs() < 1e-9, "ℓ={l} v={v} m={m}: {d} vs {base}");
        }
    }
}
