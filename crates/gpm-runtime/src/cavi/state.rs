//! The state of a CAVI run — every block's Gaussian `q`, the local expectations `E[ω]`, the
//! logistic-softmax factors' `q` — and the coordinate steps on it. Each step maximises the ELBO
//! over its own factor of `q` exactly, so the ELBO never decreases.

use super::generic::{Rule, Sites};
use super::local::{double_bound_terms, local_elbo, local_step};
use super::softmax::SoftmaxQ;
use crate::block::{GaussianBlock, SparseColumn};
use crate::data::Data;
use crate::natural::NaturalParams;
use crate::posterior::BlockPosterior;
use crate::prepared::{
    dense_block, gather_dense, scatter_dense, stack_rows, Block, Prepared, Read,
};
use crate::sparse::QInducing;
use crate::RuntimeError;
use gpm_schedule::{PredictorId, Schedule};
use nalgebra::{DMatrix, DVector};

/// Predictor moments under `q`: per predictor, means and variances at every observation.
pub(super) type Moments = Vec<(Vec<f64>, Vec<f64>)>;

/// Everything an iteration changes, to go back to ([`CaviState::restore`]).
pub(super) struct Snapshot {
    mean: Vec<DVector<f64>>,
    var: Vec<DVector<f64>>,
    dense_cov: Vec<Option<DMatrix<f64>>>,
    posteriors: Vec<BlockPosterior>,
    kls: Vec<f64>,
    e_omega: Vec<Vec<Vec<f64>>>,
    softmax: Vec<SoftmaxQ>,
}

pub(super) struct CaviState<'a> {
    prep: &'a Prepared,
    schedule: &'a Schedule,
    /// Marginal means and variances of every latent (matrix latents column-major).
    pub(super) mean: Vec<DVector<f64>>,
    pub(super) var: Vec<DVector<f64>>,
    /// Per block: a dense block's covariance.
    dense_cov: Vec<Option<DMatrix<f64>>>,
    /// Per block: a sparse block's `Φ = L⁻¹K_mx` and `k̃` at the training inputs.
    features: Vec<Option<(DMatrix<f64>, Vec<f64>)>>,
    /// Per block: its `q` in the form prediction needs.
    pub(super) posteriors: Vec<BlockPosterior>,
    /// Per block: `KL(q ‖ p)`.
    kls: Vec<f64>,
    /// Per dense block, per predictor: the block's design rows.
    designs: Vec<Vec<Option<DMatrix<f64>>>>,
    /// `E[ω]` per factor, auxiliary, observation.
    e_omega: Vec<Vec<Vec<f64>>>,
    softmax: Vec<SoftmaxQ>,
    /// Per latent: whether a dense block holds it (its variance then comes from the block's
    /// covariance, not from its marginals).
    in_dense: Vec<bool>,
    hyper_values: Vec<f64>,
    stack: Vec<f64>,
    vals: Vec<f64>,
    /// Per factor with the generic update: its Gaussian sites.
    pub(super) sites: Vec<Option<Sites>>,
    /// The generic sites' step size; halved by the executor when the ELBO decreases.
    pub(super) rho: f64,
    rule: Rule,
}

impl<'a> CaviState<'a> {
    /// Resume from an earlier run's `q`: every latent's moments, each dense block's covariance
    /// (its posterior) and the generic factors' sites; a part whose size differs keeps its
    /// prior's.
    pub(super) fn warm_start(&mut self, start: &super::CaviResult) {
        let finite = |v: &DVector<f64>| v.iter().all(|x| x.is_finite());
        for (li, (_, m, v)) in start.latents.iter().enumerate() {
            let fits = li < self.mean.len()
                && m.len() == self.mean[li].len()
                && v.len() == self.var[li].len()
                && finite(m)
                && finite(v);
            if fits {
                self.mean[li].copy_from(m);
                self.var[li].copy_from(v);
            }
        }
        for (bi, post) in start.blocks.iter().enumerate() {
            if let (BlockPosterior::Dense { cov, .. }, Some(Some(own))) =
                (post, self.dense_cov.get_mut(bi))
            {
                if cov.shape() == own.shape() && cov.iter().all(|x| x.is_finite()) {
                    own.copy_from(cov);
                }
            }
        }
        for (own, old) in self.sites.iter_mut().zip(&start.sites) {
            if let (Some(own), Some(old)) = (own, old) {
                if own.a.len() == old.a.len() {
                    own.clone_from(old);
                }
            }
        }
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot {
            mean: self.mean.clone(),
            var: self.var.clone(),
            dense_cov: self.dense_cov.clone(),
            posteriors: self.posteriors.clone(),
            kls: self.kls.clone(),
            e_omega: self.e_omega.clone(),
            softmax: self.softmax.clone(),
        }
    }

    pub(super) fn restore(&mut self, s: Snapshot) {
        self.mean = s.mean;
        self.var = s.var;
        self.dense_cov = s.dense_cov;
        self.posteriors = s.posteriors;
        self.kls = s.kls;
        self.e_omega = s.e_omega;
        self.softmax = s.softmax;
    }

    /// Every block at its prior; `E[ω] = 1`.
    pub(super) fn new(
        prep: &'a Prepared,
        schedule: &'a Schedule,
        data: &Data,
        hypers: &crate::kernels::HyperValues,
    ) -> Result<Self, RuntimeError> {
        let mut softmax = Vec::new();
        for fp in &schedule.factors {
            if let Some(cat) = &fp.categorical {
                softmax.push(SoftmaxQ::new(cat, schedule, prep, data, hypers)?);
            }
        }
        crate::memory::check_features(&prep.sparse_sizes(), "CAVI")?;
        let PriorMoments {
            mean,
            var,
            dense_cov,
            features,
            posteriors,
        } = prior_moments(prep)?;
        let nb = prep.blocks.len();
        let designs = prep
            .blocks
            .iter()
            .map(|b| match b {
                Block::Dense {
                    parts, prior_mean, ..
                } => (0..prep.preds.len())
                    .map(|p| prep.dense_design(p, parts, prior_mean.len()))
                    .collect(),
                _ => vec![],
            })
            .collect();
        let e_omega = schedule
            .factors
            .iter()
            .zip(&prep.factors)
            .map(|(fp, pf)| vec![vec![1.0; pf.n]; fp.aux.len()])
            .collect();
        Ok(CaviState {
            prep,
            schedule,
            mean,
            var,
            dense_cov,
            features,
            posteriors,
            kls: vec![0.0; nb],
            designs,
            e_omega,
            softmax,
            in_dense: (0..prep.latents.len())
                .map(|li| {
                    prep.blocks.iter().any(|b| {
                        matches!(b, Block::Dense { parts, .. } if parts.iter().any(|d| d.0 == li))
                    })
                })
                .collect(),
            hyper_values: prep.hypers.clone(),
            stack: Vec::with_capacity(64),
            vals: Vec::new(),
            sites: schedule
                .factors
                .iter()
                .zip(&prep.factors)
                .map(|(fp, pf)| {
                    fp.generic.as_ref().map(|_| Sites {
                        a: vec![0.0; pf.n],
                        b: vec![0.0; pf.n],
                    })
                })
                .collect(),
            rho: 1.0,
            rule: Rule::new(),
        })
    }

    /// Predictor moments under the current `q` (blocks independent).
    pub(super) fn moments(&self) -> Moments {
        let prep = self.prep;
        prep.preds
            .iter()
            .enumerate()
            .map(|(pi, p)| {
                let m = p.eval(&self.mean);
                let mut v = vec![0.0; p.n];
                for t in &p.terms {
                    if self.in_dense[t.latent] {
                        continue;
                    }
                    let z = &self.var[t.latent];
                    for (i, vi) in v.iter_mut().enumerate() {
                        *vi += t.coef
                            * t.coef
                            * match &t.read {
                                Read::Identity => z[i],
                                Read::Column(c, r) => z[c * r + i],
                                Read::Broadcast => z[0],
                                Read::Gather(g) => z[g[i]],
                                Read::Matrix(x) => {
                                    (0..x.ncols()).map(|j| x[(i, j)].powi(2) * z[j]).sum()
                                }
                            };
                    }
                }
                for (block_designs, cov) in self.designs.iter().zip(&self.dense_cov) {
                    if let (Some(Some(phi)), Some(cov)) = (block_designs.get(pi), cov) {
                        let pc = phi * cov;
                        for (i, vi) in v.iter_mut().enumerate() {
                            *vi += pc.row(i).dot(&phi.row(i));
                        }
                    }
                }
                (m, v)
            })
            .collect()
    }

    /// Observation `i`'s slots of factor `f` at the moments `pm` and the current `E[ω]`.
    fn fill(&mut self, f: usize, i: usize, pm: &Moments) {
        let pf = &self.prep.factors[f];
        self.vals.resize(pf.slots.len(), 0.0);
        let e = &self.e_omega[f];
        pf.fill(
            i,
            |p| pm[p].0[i],
            |j| e[j][i],
            &self.hyper_values,
            &mut self.vals,
        );
    }

    /// The class scales the softmax factors learned.
    pub(super) fn learned_scales(&self) -> Vec<(gpm_schedule::HyperId, Vec<f64>)> {
        self.softmax
            .iter()
            .filter_map(SoftmaxQ::learned_scales)
            .collect()
    }

    /// Every factor's local step at the moments `pm`: `q(ω)`, `q(n)`, and the softmax factors.
    pub(super) fn local(&mut self, pm: &Moments) {
        let schedule = self.schedule;
        for (f, fp) in schedule.factors.iter().enumerate() {
            let Some(cp) = fp.cavi.as_ref() else {
                continue;
            };
            // Each observation's step reads its own slots and E[ω] only: the ranges in
            // parallel give the sequential loop's numbers.
            let (pf, hv, e) = (&self.prep.factors[f], &self.hyper_values, &self.e_omega[f]);
            let naux = e.len();
            let ranges = super::chunks::over_observations(pf.n, |range| {
                let (start, mut out) = (range.start, vec![0.0; range.len() * naux]);
                each_filled(pf, range, pm, e, hv, |i, vals, stack| {
                    let m = |p: PredictorId| (pm[p.0].0[i], pm[p.0].1[i]);
                    local_step(cp, vals, &m, stack, &mut |j, v| {
                        out[(i - start) * naux + j] = v
                    });
                });
                out
            });
            let e = &mut self.e_omega[f];
            for (i, row) in ranges
                .iter()
                .flat_map(|r| r.chunks_exact(naux.max(1)))
                .enumerate()
            {
                for (j, v) in row.iter().enumerate() {
                    e[j][i] = *v;
                }
            }
        }
        for sq in &mut self.softmax {
            sq.local_step(&self.mean[sq.latent], &self.var[sq.latent]);
        }
        // The generic factors' sites, a damped step towards their targets.
        for (f, fp) in schedule.factors.iter().enumerate() {
            let Some(Ok(g)) = fp.generic.as_ref().map(|g| g.variational.as_ref()) else {
                continue;
            };
            let pi = g.grad.pred.0;
            let ld = fp
                .log_density
                .as_ref()
                .expect("a generic factor has a log-density");
            for i in 0..self.prep.factors[f].n {
                self.fill(f, i, pm);
                let (a, b) = self.rule.target(
                    g,
                    ld,
                    pm[pi].0[i],
                    pm[pi].1[i],
                    &mut self.vals,
                    &mut self.stack,
                );
                let site = self.sites[f].as_mut().expect("sites of a generic factor");
                site.a[i] += self.rho * (a - site.a[i]);
                site.b[i] += self.rho * (b - site.b[i]);
            }
        }
    }

    /// The generic factors' sites as Gaussian terms of predictor `pi` at observation `i` of
    /// factor `f`: `(a_i, b_i)`, if `f` has sites on `pi`.
    fn site(&self, f: usize, pi: usize) -> Option<&Sites> {
        let g = self.schedule.factors[f].generic.as_ref()?;
        match &g.variational {
            Ok(v) if v.grad.pred.0 == pi => self.sites[f].as_ref(),
            _ => None,
        }
    }

    /// The expected curvature of a GP or sparse column block from every factor, the double
    /// bound and the softmax factors.
    fn gp_terms(&mut self, latent: usize, column: usize, r: usize, pm: &Moments) -> NaturalParams {
        let (prep, schedule) = (self.prep, self.schedule);
        let mut np = NaturalParams::zeros(r);
        for (f, fp) in schedule.factors.iter().enumerate() {
            for cv in &fp.curvature {
                let pi = cv.pred.0;
                let Some(coef) = prep.reads(pi, latent, Some(column)) else {
                    continue;
                };
                for i in 0..prep.factors[f].n {
                    self.fill(f, i, pm);
                    let ai = cv.quad.eval(&self.vals, &mut self.stack);
                    let bi = cv.lin.eval(&self.vals, &mut self.stack);
                    let rest = pm[pi].0[i] - coef * self.mean[latent][column * r + i];
                    np.add(i, ai, bi, coef, rest);
                }
            }
        }
        // Generic factors: their Gaussian sites.
        for f in 0..schedule.factors.len() {
            let Some(Ok(g)) = schedule.factors[f]
                .generic
                .as_ref()
                .map(|g| g.variational.as_ref())
            else {
                continue;
            };
            let pi = g.grad.pred.0;
            let Some(coef) = prep.reads(pi, latent, Some(column)) else {
                continue;
            };
            let site = self.site(f, pi).expect("sites of a generic factor");
            for i in 0..prep.factors[f].n {
                let rest = pm[pi].0[i] - coef * self.mean[latent][column * r + i];
                np.add(i, site.a[i], site.b[i], coef, rest);
            }
        }
        // Double bound: −w·E[κ(η)], w = 1 − γ/E[κ], κ = k0 + k1 η + k2 η².
        for (f, fp) in schedule.factors.iter().enumerate() {
            let Some(cp) = fp.cavi.as_ref() else { continue };
            let Some(pn) = &cp.poisson else { continue };
            for &pred in &cp.double_bound {
                let pi = pred.0;
                let Some(coef) = prep.reads(pi, latent, Some(column)) else {
                    continue;
                };
                for i in 0..prep.factors[f].n {
                    self.fill(f, i, pm);
                    let m = |p: PredictorId| (pm[p.0].0[i], pm[p.0].1[i]);
                    let (ai, bi) = double_bound_terms(pn, pred, &self.vals, &m, &mut self.stack);
                    let rest = pm[pi].0[i] - coef * self.mean[latent][column * r + i];
                    np.add(i, ai, bi, coef, rest);
                }
            }
        }
        // Logistic-softmax: curvature E[ω_ic], linear term (y_ic − γ_ic)/2.
        for sq in self.softmax.iter().filter(|sq| sq.latent == latent) {
            for i in 0..r {
                let y = if sq.labels[i] == column { 1.0 } else { 0.0 };
                np.a[i] += sq.omega[(i, column)];
                np.b[i] += 0.5 * (y - sq.gamma[(i, column)]);
            }
        }
        np
    }

    /// `q` of runtime block `bi` given the local expectations, at the moments `pm`.
    pub(super) fn update_block(&mut self, bi: usize, pm: &Moments) -> Result<(), RuntimeError> {
        let prep = self.prep;
        match &prep.blocks[bi] {
            Block::Gp { latent, column, gp } => {
                let r = gp.len();
                let np = self.gp_terms(*latent, *column, r, pm);
                let mo = GaussianBlock::moments(gp, &np)?;
                self.set_column(*latent, *column, mo.mean.as_slice(), mo.var.as_slice());
                self.kls[bi] = mo.kl;
                self.posteriors[bi] = BlockPosterior::Gp { a: np.a, b: np.b };
            }
            Block::Sparse {
                latent, column, sp, ..
            } => {
                let r = self.features[bi].as_ref().map_or(0, |f| f.1.len());
                let np = self.gp_terms(*latent, *column, r, pm);
                let (phi, kt) = self.features[bi]
                    .as_ref()
                    .expect("features computed at start");
                let q = SparseColumn { sp, phi, kt }.q(&np)?;
                let (m, v) = q.marginals(phi, kt, sp.mean)?;
                self.kls[bi] = q.kl()?;
                self.posteriors[bi] = BlockPosterior::Sparse(q);
                self.set_column(*latent, *column, &m, &v);
            }
            Block::Dense {
                parts,
                prior_mean,
                prior_sd,
            } => {
                let (np, rows) = self.dense_terms(bi, parts, prior_mean.len(), pm);
                let design = stack_rows(rows, prior_mean.len());
                let (mo, cov) = dense_block(design, prior_mean, prior_sd).moments(&np.a, &np.b)?;
                scatter_dense(parts, &mo.mean, &mut self.mean);
                scatter_dense(parts, &mo.var, &mut self.var);
                self.posteriors[bi] = BlockPosterior::Dense {
                    mean: DVector::from_fn(prior_mean.len(), |j, _| mo.mean[j]),
                    cov: cov.clone(),
                };
                self.dense_cov[bi] = Some(cov);
                self.kls[bi] = mo.kl;
            }
        }
        Ok(())
    }

    fn set_column(&mut self, latent: usize, column: usize, m: &[f64], v: &[f64]) {
        let r = m.len();
        for i in 0..r {
            self.mean[latent][column * r + i] = m[i];
            self.var[latent][column * r + i] = v[i];
        }
    }

    /// A dense block's pseudo-observations (one row per observation of every predictor that
    /// reads it), augmented terms and double bound alike, with their design rows.
    fn dense_terms(
        &mut self,
        bi: usize,
        parts: &[(usize, usize, usize)],
        dim: usize,
        pm: &Moments,
    ) -> (NaturalParams, Vec<DMatrix<f64>>) {
        let (prep, schedule) = (self.prep, self.schedule);
        let theta = gather_dense(parts, dim, &self.mean);
        let mut rows = Vec::new();
        let mut np = NaturalParams::default();
        for (f, fp) in schedule.factors.iter().enumerate() {
            for cv in &fp.curvature {
                let pi = cv.pred.0;
                let Some(phi) = self.designs[bi][pi].clone() else {
                    continue;
                };
                let own = &phi * &theta;
                for i in 0..prep.factors[f].n {
                    self.fill(f, i, pm);
                    let ai = cv.quad.eval(&self.vals, &mut self.stack);
                    let bi2 = cv.lin.eval(&self.vals, &mut self.stack);
                    np.push_row(ai, bi2, pm[pi].0[i] - own[i]);
                }
                rows.push(phi);
            }
            // Generic factors: their Gaussian sites.
            if let Some(Ok(g)) = fp.generic.as_ref().map(|g| g.variational.as_ref()) {
                let pi = g.grad.pred.0;
                if let Some(phi) = self.designs[bi][pi].clone() {
                    let own = &phi * &theta;
                    let site = self.site(f, pi).expect("sites of a generic factor");
                    for i in 0..prep.factors[f].n {
                        np.push_row(site.a[i], site.b[i], pm[pi].0[i] - own[i]);
                    }
                    rows.push(phi);
                }
            }
            // Double bound, as for the GP blocks: curvature 2k₂w, linear −k₁w.
            let Some(cp) = fp.cavi.as_ref() else { continue };
            let Some(pn) = &cp.poisson else { continue };
            for &pred in &cp.double_bound {
                let pi = pred.0;
                let Some(phi) = self.designs[bi][pi].clone() else {
                    continue;
                };
                let own = &phi * &theta;
                for i in 0..prep.factors[f].n {
                    self.fill(f, i, pm);
                    let m = |p: PredictorId| (pm[p.0].0[i], pm[p.0].1[i]);
                    let (ai, bi2) = double_bound_terms(pn, pred, &self.vals, &m, &mut self.stack);
                    np.push_row(ai, bi2, pm[pi].0[i] - own[i]);
                }
                rows.push(phi);
            }
        }
        (np, rows)
    }

    /// The ELBO at the optimal local factors for the current `q(latents)`.
    pub(super) fn elbo(&mut self) -> f64 {
        let pm = self.moments();
        let mut elbo = -self.kls.iter().sum::<f64>();
        for sq in &self.softmax {
            elbo += sq.elbo(&self.mean[sq.latent], &self.var[sq.latent]);
        }
        let schedule = self.schedule;
        for (f, fp) in schedule.factors.iter().enumerate() {
            if let (Some(Ok(g)), Some(tape)) = (
                fp.generic.as_ref().map(|g| g.variational.as_ref()),
                fp.log_density.as_ref(),
            ) {
                let pi = g.grad.pred.0;
                for i in 0..self.prep.factors[f].n {
                    self.fill(f, i, &pm);
                    elbo += self.rule.expect(
                        tape,
                        g,
                        pm[pi].0[i],
                        pm[pi].1[i],
                        &mut self.vals,
                        &mut self.stack,
                    );
                }
                continue;
            }
            let Some(cp) = fp.cavi.as_ref() else {
                continue;
            };
            let (pf, hv, e) = (&self.prep.factors[f], &self.hyper_values, &self.e_omega[f]);
            let sums = super::chunks::over_observations(pf.n, |range| {
                let mut sum = 0.0;
                each_filled(pf, range, &pm, e, hv, |i, vals, stack| {
                    let m = |p: PredictorId| (pm[p.0].0[i], pm[p.0].1[i]);
                    sum += local_elbo(cp, vals, &m, stack);
                });
                sum
            });
            elbo += sums.iter().sum::<f64>();
        }
        elbo
    }
}

/// `visit(i, slots, stack)` for every observation `i` of `range`, its slots of factor `pf`
/// filled at the moments `pm` and the expectations `e` (with its own scratch: the ranges of
/// [`super::chunks::over_observations`] run in parallel).
fn each_filled(
    pf: &crate::prepared::PFactor,
    range: std::ops::Range<usize>,
    pm: &Moments,
    e: &[Vec<f64>],
    hv: &[f64],
    mut visit: impl FnMut(usize, &mut [f64], &mut Vec<f64>),
) {
    let (mut vals, mut stack) = (vec![0.0; pf.slots.len()], Vec::with_capacity(64));
    for i in range {
        pf.fill(i, |p| pm[p].0[i], |j| e[j][i], hv, &mut vals);
        visit(i, &mut vals, &mut stack);
    }
}

/// Every block's moments at its prior (`q` starts there), with a dense block's covariance, a
/// sparse block's features and each block's `q` in its own parameters.
struct PriorMoments {
    mean: Vec<DVector<f64>>,
    var: Vec<DVector<f64>>,
    dense_cov: Vec<Option<DMatrix<f64>>>,
    features: Vec<Option<(DMatrix<f64>, Vec<f64>)>>,
    posteriors: Vec<BlockPosterior>,
}

fn prior_moments(prep: &Prepared) -> Result<PriorMoments, RuntimeError> {
    let zeros = || -> Vec<DVector<f64>> {
        prep.latents
            .iter()
            .map(|(_, n, _)| DVector::zeros(*n))
            .collect()
    };
    let (mut mean, mut var) = (zeros(), zeros());
    let nb = prep.blocks.len();
    let mut dense_cov = vec![None; nb];
    let mut features = vec![None; nb];
    let mut posteriors = Vec::with_capacity(nb);
    for (bi, b) in prep.blocks.iter().enumerate() {
        match b {
            Block::Gp { latent, column, gp } => {
                let r = gp.len();
                for i in 0..r {
                    mean[*latent][column * r + i] = gp.mean;
                    var[*latent][column * r + i] = gp.k[(i, i)];
                }
                posteriors.push(BlockPosterior::Gp {
                    a: vec![0.0; r],
                    b: vec![0.0; r],
                });
            }
            Block::Sparse {
                latent,
                column,
                sp,
                inputs,
            } => {
                let (phi, kt) = sp.features(inputs)?;
                let r = kt.len();
                for i in 0..r {
                    mean[*latent][column * r + i] = sp.mean;
                    var[*latent][column * r + i] = kt[i] + phi.column(i).norm_squared();
                }
                features[bi] = Some((phi, kt));
                posteriors.push(BlockPosterior::Sparse(QInducing::prior(sp.m())));
            }
            Block::Dense {
                parts,
                prior_mean,
                prior_sd,
            } => {
                // q starts at the prior; a flat coordinate at N(0, 1) (it has no prior moments).
                let var0 = prior_sd.map(|s| if s.is_finite() { s * s } else { 1.0 });
                scatter_dense(parts, prior_mean, &mut mean);
                scatter_dense(parts, &var0, &mut var);
                dense_cov[bi] = Some(DMatrix::from_diagonal(&var0));
                posteriors.push(BlockPosterior::Dense {
                    mean: DVector::zeros(prior_sd.len()),
                    cov: DMatrix::zeros(prior_sd.len(), prior_sd.len()),
                });
            }
        }
    }
    Ok(PriorMoments {
        mean,
        var,
        dense_cov,
        features,
        posteriors,
    })
}
