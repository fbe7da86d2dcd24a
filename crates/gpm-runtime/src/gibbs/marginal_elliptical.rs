//! Elliptical slice steps on a full GP block's marginal posterior
//! ([`gpm_schedule::GibbsStep::MarginalElliptical`]): the ellipse's Gaussian is the block's GP
//! prior `N(μ₀, K)` (each column its own), its likelihood the factors' log-densities as written
//! — the auxiliaries integrated out. Each step leaves `p(f | y, rest)` invariant (Murray, Adams
//! & MacKay 2010); the auxiliaries are redrawn after the steps when the schedule says so, which
//! restores the joint posterior of `(f, ω)`.
//!
//! The prior's Cholesky factor is the chain's (made by the block's draw or its kernel update),
//! so the steps' directions `ν = L z` for all steps come from one triangular matrix product and
//! a step costs a few `O(N)` likelihood evaluations.

use super::{Sampler, State};
use crate::prepared::Block;
use crate::RuntimeError;
use nalgebra::{DMatrix, DVector};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// What a marginal elliptical step does (its [`gpm_schedule::GibbsStep::MarginalElliptical`]).
pub(super) struct Steps<'f> {
    /// The factors whose log-densities are the ellipse's likelihood.
    pub factors: &'f [usize],
    /// How many elliptical slice steps.
    pub steps: usize,
    /// Whether every auxiliary is drawn again given the moved block.
    pub redraw: bool,
}

/// One column of the block: where its values live, its prior mean, and the steps' directions.
struct Column {
    latent: usize,
    offset: usize,
    mean: f64,
    /// `L z` for each step, `rows × steps`.
    directions: DMatrix<f64>,
}

/// The logistic-softmax log-likelihood `Σ_i log w_{y_i} − log Σ_c w_c`, `w_c = θ_c σ(f_ic + δ)`
/// (and the fixed class's `θ_K D` under the bijective link), of the latent matrix `z`
/// (column-major, one column per latent class) moved by `δ` — the factor's density with its
/// auxiliaries integrated out (thesis eq. 7.2, §7.4.2-7.4.3).
pub(super) fn categorical_log_lik(
    z: &[f64],
    cat: &crate::categorical::BoundCategorical,
    theta: &[f64],
    delta: f64,
) -> f64 {
    let n = cat.labels.len();
    let w = cat.weights(theta);
    // Every σ(z + δ) at once, at the widest instruction set (a step's likelihood is `N × C`
    // logistics: two thirds of the 3-class GP's sweep when each was a scalar `exp`).
    let mut sigma = z[..n * cat.columns].to_vec();
    gpm_special::vectorised::<Logistic>(&mut sigma, &[delta]);
    cat.labels
        .iter()
        .enumerate()
        .map(|(i, &y)| {
            w.log_prob_with(
                |k| sigma[k * n + i],
                |k| z[k * n + i] + delta,
                cat.columns,
                y,
            )
        })
        .sum()
}

/// `σ(x + δ)` over a slice ([`gpm_special::logistic_in_place`]).
struct Logistic;

impl gpm_special::SliceMap for Logistic {
    #[inline(always)]
    fn apply(v: &mut [f64], p: &[f64]) {
        gpm_special::logistic_in_place(v, p);
    }
}

impl Sampler<'_> {
    /// `Σ` over `factors` of their log-densities at the current latents, the auxiliaries
    /// integrated out, up to terms free of the latents; `−∞` where not finite. The likelihood
    /// of every elliptical slice step: the generic update's and the marginal steps'.
    pub(super) fn marginal_log_lik(&self, factors: &[usize], state: &State) -> f64 {
        let pv = self.predictors(state);
        let mut stack = Vec::new();
        let mut total = 0.0;
        for &f in factors {
            if let Some(bound) = &self.labels[f] {
                let Some(c) = &self.schedule.factors[f].categorical else {
                    return f64::NEG_INFINITY;
                };
                let z = state.latents[c.latent_id.0].as_slice();
                let theta = crate::categorical::scales(c, &state.vectors);
                total += categorical_log_lik(z, bound, theta, 0.0);
                continue;
            }
            let fp = &self.schedule.factors[f];
            let Some(tape) = fp.log_density_in_predictors.as_ref() else {
                return f64::NEG_INFINITY;
            };
            total +=
                self.prep.factors[f].tape_sum(tape, &pv, &state.aux[f], &state.hypers, &mut stack);
        }
        if total.is_nan() {
            f64::NEG_INFINITY
        } else {
            total
        }
    }

    /// `steps` elliptical slice steps on the block's marginal posterior, then (`redraw`) every
    /// auxiliary drawn given the moved block.
    pub(super) fn marginal_elliptical(
        &self,
        block: gpm_schedule::BlockId,
        how: Steps,
        state: &mut State,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let blocks = self.prep.spec_blocks[block.0].clone();
        if blocks
            .clone()
            .all(|bi| state.ellipse_references[bi].is_some())
        {
            return self.referenced_elliptical(blocks, how, state, rng);
        }
        let mut columns = Vec::new();
        for bi in blocks {
            let (latent, column, prior) = self.gp_column(bi, state)?;
            let rows = prior.len();
            // Standard normals column by column, step by step: the same draws whatever the
            // thread count.
            let z = DMatrix::from_fn(rows, how.steps, |_, _| {
                rng.sample::<f64, _>(rand_distr::StandardNormal)
            });
            columns.push(Column {
                latent,
                offset: column * rows,
                mean: prior.mean,
                directions: crate::linalg::lower_times(prior.chol.l_dirty(), &z),
            });
        }
        // Each column's current value less its prior mean: the point on the ellipse at angle 0.
        let mut current: Vec<DVector<f64>> = columns
            .iter()
            .map(|c| {
                let rows = c.directions.nrows();
                DVector::from_fn(rows, |i, _| state.latents[c.latent][c.offset + i] - c.mean)
            })
            .collect();
        // The current values themselves, restored exactly when a step stays.
        let mut values = current.clone();
        for (c, v) in columns.iter().zip(values.iter_mut()) {
            for i in 0..v.len() {
                v[i] = state.latents[c.latent][c.offset + i];
            }
        }
        let set = |state: &mut State, cos: f64, sin: f64, s: usize, at: &[DVector<f64>]| {
            for (c, x) in columns.iter().zip(at) {
                let out = &mut state.latents[c.latent];
                for i in 0..x.len() {
                    out[c.offset + i] = c.mean + x[i] * cos + c.directions[(i, s)] * sin;
                }
            }
        };
        let restore = |state: &mut State, values: &[DVector<f64>]| {
            for (c, v) in columns.iter().zip(values) {
                state.latents[c.latent]
                    .rows_mut(c.offset, v.len())
                    .copy_from(v);
            }
        };
        let mut log_lik = self.marginal_log_lik(how.factors, state);
        for s in 0..how.steps {
            let moved = super::elliptical::ellipse_step(rng, log_lik, &mut |cos, sin| {
                set(state, cos, sin, s, &current);
                (self.marginal_log_lik(how.factors, state), ())
            });
            if let Some((ll, ())) = moved {
                log_lik = ll;
                for ((c, x), v) in columns
                    .iter()
                    .zip(current.iter_mut())
                    .zip(values.iter_mut())
                {
                    for i in 0..x.len() {
                        v[i] = state.latents[c.latent][c.offset + i];
                        x[i] = v[i] - c.mean;
                    }
                }
            } else {
                restore(state, &values);
                stayed(log_lik)?;
            }
        }
        self.after_steps(how.redraw, state, rng)
    }

    /// Block `bi`'s latent, column and the chain's current GP prior of it.
    fn gp_column<'s>(
        &'s self,
        bi: usize,
        state: &'s State,
    ) -> Result<(usize, usize, &'s crate::gaussian::GpBlock), RuntimeError> {
        let Block::Gp { latent, column, gp } = &self.prep.blocks[bi] else {
            return Err(RuntimeError::Inconsistent(
                "a marginal elliptical step of a block that is not a full GP".into(),
            ));
        };
        Ok((
            *latent,
            *column,
            state.gp_priors[bi].as_deref().unwrap_or(gp),
        ))
    }

    /// After the steps: every auxiliary drawn given the moved block, if the schedule says so.
    fn after_steps(
        &self,
        redraw: bool,
        state: &mut State,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        if redraw {
            let pv = self.predictors(state);
            self.sample_aux(state, &pv, rng)?;
        }
        Ok(())
    }
}

/// A step whose bracket shrank to the current point: fine, unless the current point itself has
/// no finite likelihood (then no step ever moves).
fn stayed(log_lik: f64) -> Result<(), RuntimeError> {
    if log_lik.is_finite() {
        Ok(())
    } else {
        Err(RuntimeError::Numerical(
            "a marginal elliptical step found no point of finite likelihood: the factors' log-density is not finite at the current latents".into(),
        ))
    }
}

/// One column under a fitted reference `N(m, R = L_R L_Rᵀ)`, the step's directions `ν_s = L_R z_s`
/// and what the sliced likelihood needs along the ellipse `f = m + (f₀ − m) cos θ + ν_s sin θ`:
/// with `L` the prior's factor, `L⁻¹(f − μ₀) = r + p₀ cos θ + P_s sin θ` and `L_R⁻¹(f − m) =
/// w₀ cos θ + z_s sin θ`, so each angle costs `O(N)`.
struct RefColumn {
    latent: usize,
    offset: usize,
    /// `N(m, R)`.
    reference: std::sync::Arc<super::EllipseReference>,
    /// `z_s`, `rows × steps`.
    z: DMatrix<f64>,
    /// `ν_s = L_R z_s`.
    directions: DMatrix<f64>,
    /// `P_s = L⁻¹ ν_s`.
    whitened: DMatrix<f64>,
    /// `r = L⁻¹(m − μ₀)`.
    r: DVector<f64>,
    /// `p₀ = L⁻¹(f₀ − m)` at the current point.
    p0: DVector<f64>,
    /// `w₀ = L_R⁻¹(f₀ − m)` at the current point.
    w0: DVector<f64>,
    /// `f₀ − m`.
    d0: DVector<f64>,
}

impl RefColumn {
    /// `log N(f | μ₀, K) − log N(f | m, R)` at angle `(cos, sin)` of step `s`, up to a constant:
    /// `−½‖r + p₀ cos + P_s sin‖² + ½‖w₀ cos + z_s sin‖²`.
    fn log_ratio(&self, cos: f64, sin: f64, s: usize) -> f64 {
        let (p, z) = (self.whitened.column(s), self.z.column(s));
        let mut total = 0.0;
        for i in 0..self.r.len() {
            let prior = self.r[i] + self.p0[i] * cos + p[i] * sin;
            let reference = self.w0[i] * cos + z[i] * sin;
            total += reference * reference - prior * prior;
        }
        0.5 * total
    }

    /// Move the current point to the accepted angle.
    fn accept(&mut self, cos: f64, sin: f64, s: usize) {
        let (p, z, nu) = (
            self.whitened.column(s),
            self.z.column(s),
            self.directions.column(s),
        );
        for i in 0..self.r.len() {
            self.p0[i] = self.p0[i] * cos + p[i] * sin;
            self.w0[i] = self.w0[i] * cos + z[i] * sin;
            self.d0[i] = self.d0[i] * cos + nu[i] * sin;
        }
    }
}

impl Sampler<'_> {
    /// The marginal elliptical steps along the columns' fitted references
    /// ([`super::ellipse_reference`]): generalised elliptical slice sampling, the sliced
    /// likelihood the factors' log-density times `N(f | μ₀, K) / N(f | m, R)`.
    fn referenced_elliptical(
        &self,
        blocks: std::ops::Range<usize>,
        how: Steps,
        state: &mut State,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let mut columns = Vec::new();
        for bi in blocks {
            let (latent, column, prior) = self.gp_column(bi, state)?;
            let reference = state.ellipse_references[bi]
                .clone()
                .expect("checked by the caller");
            let rows = prior.len();
            let offset = column * rows;
            // Standard normals column by column, step by step, as under the prior.
            let z = DMatrix::from_fn(rows, how.steps, |_, _| {
                rng.sample::<f64, _>(rand_distr::StandardNormal)
            });
            let l = prior.chol.l_dirty();
            let directions = crate::linalg::lower_times(&reference.factor, &z);
            let whitened = crate::linalg::solve_lower(l, directions.clone());
            let centre = &reference.mean;
            let d0 = DVector::from_fn(rows, |i, _| state.latents[latent][offset + i] - centre[i]);
            let mut shift = centre.clone();
            shift.add_scalar_mut(-prior.mean);
            columns.push(RefColumn {
                latent,
                offset,
                r: crate::linalg::solve_lower_vec(l, &shift),
                p0: crate::linalg::solve_lower_vec(l, &d0),
                w0: crate::linalg::solve_lower_vec(&reference.factor, &d0),
                d0,
                reference,
                z,
                directions,
                whitened,
            });
        }
        let set = |state: &mut State, columns: &[RefColumn], cos: f64, sin: f64, s: usize| {
            for c in columns {
                let out = &mut state.latents[c.latent];
                for i in 0..c.d0.len() {
                    out[c.offset + i] =
                        c.reference.mean[i] + c.d0[i] * cos + c.directions[(i, s)] * sin;
                }
            }
        };
        // The current values, restored exactly when a step stays.
        let mut values: Vec<DVector<f64>> = columns
            .iter()
            .map(|c| {
                state.latents[c.latent]
                    .rows(c.offset, c.d0.len())
                    .into_owned()
            })
            .collect();
        let ratio = |columns: &[RefColumn], cos: f64, sin: f64, s: usize| -> f64 {
            columns.iter().map(|c| c.log_ratio(cos, sin, s)).sum()
        };
        // Angle 0 of any step: the current point.
        let mut log_lik = self.marginal_log_lik(how.factors, state) + ratio(&columns, 1.0, 0.0, 0);
        for s in 0..how.steps {
            let moved = super::elliptical::ellipse_step(rng, log_lik, &mut |cos, sin| {
                set(state, &columns, cos, sin, s);
                let ll = self.marginal_log_lik(how.factors, state);
                let total = if ll.is_finite() {
                    ll + ratio(&columns, cos, sin, s)
                } else {
                    f64::NEG_INFINITY
                };
                (total, (cos, sin))
            });
            match moved {
                Some((ll, (cos, sin))) => {
                    log_lik = ll;
                    for (c, v) in columns.iter_mut().zip(values.iter_mut()) {
                        c.accept(cos, sin, s);
                        v.copy_from(&state.latents[c.latent].rows(c.offset, v.len()));
                    }
                }
                None => {
                    for (c, v) in columns.iter().zip(&values) {
                        state.latents[c.latent]
                            .rows_mut(c.offset, v.len())
                            .copy_from(v);
                    }
                    stayed(log_lik)?;
                }
            }
        }
        self.after_steps(how.redraw, state, rng)
    }
}
