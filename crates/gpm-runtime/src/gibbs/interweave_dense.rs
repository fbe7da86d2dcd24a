//! The non-centred move of a dense block's prior hyperparameters (its scales and means) after
//! the block's generic update ([`gpm_schedule::DenseScaleUpdate::interweave`]).
//!
//! The centred move samples a scale `s` given the weights `θ` (`log N(θ | m, s²)`): where the
//! data inform `θ` weakly, `s` and `θ` form a funnel and the chain crawls. This move holds the
//! standardised weights `z = (θ − m)/s` instead and slice samples the hyperparameters from
//! `p(h) Π p(y | θ = m_h + s_h z)` — the factors' original log-densities, the auxiliaries
//! integrated out — moving `θ` with them, then draws every auxiliary again given the new `θ`:
//! an exact update of `(h, ω)` given `z`. Alternating the two is the ancillarity-sufficiency
//! interweaving of Yu & Meng (2011), which mixes where either form alone is slow.
//!
//! Where the schedule names latents that hold the level ([`gpm_schedule::DenseScaleUpdate::level`]:
//! flat priors beside the scaled weights), those are shifted with the move so that
//! `L = θ_a + A θ_s` stays put ([`LevelShear`]).

use super::*;

impl<'a> Sampler<'a> {
    pub(super) fn interweave_dense(
        &self,
        d: &SlicedDense,
        state: &mut State,
        rng: &mut ChaCha8Rng,
    ) -> Result<(), RuntimeError> {
        let Block::Dense {
            parts,
            prior_mean,
            prior_sd,
        } = &self.prep.blocks[d.block]
        else {
            return Err(RuntimeError::Inconsistent(
                "a non-centred scale move of a block that is not dense".into(),
            ));
        };
        let dim = prior_mean.len();
        let (m0, s0) = match &state.dense_priors[d.block] {
            Some((m, s)) => (m.clone(), s.clone()),
            None => (prior_mean.clone(), prior_sd.clone()),
        };
        let theta = gather_dense(parts, dim, &state.latents);
        // A flat coordinate has no scale to standardise by: it stays where it is.
        let z = DVector::from_fn(dim, |j, _| {
            if s0[j].is_finite() {
                (theta[j] - m0[j]) / s0[j]
            } else {
                theta[j]
            }
        });
        let moved = |hv: &HyperValues| -> Result<DVector<f64>, RuntimeError> {
            let (m, s) = self.dense_prior(parts, hv)?;
            let mut t = DVector::from_fn(dim, |j, _| {
                if s0[j].is_finite() {
                    m[j] + s[j] * z[j]
                } else {
                    z[j]
                }
            });
            if let Some(shear) = &d.level {
                shear.hold(&theta, &mut t);
            }
            Ok(t)
        };
        let (aux, hypers, latents) = (
            &state.aux.clone(),
            &state.hypers.clone(),
            state.latents.clone(),
        );
        let log_lik = |hv: &HyperValues| -> Result<f64, RuntimeError> {
            let mut at = latents.clone();
            scatter_dense(parts, &moved(hv)?, &mut at);
            self.interwoven_log_lik(&d.interweave, &at, aux, hypers)
        };
        let current = self.hyper_values(state);
        self.slice_update(&d.hypers, d.joint, state, &log_lik, rng)?;
        let hv = self.hyper_values(state);
        if hv == current {
            // Not moved: the weights, their prior and the auxiliaries stand as they are.
            return Ok(());
        }
        scatter_dense(parts, &moved(&hv)?, &mut state.latents);
        state.dense_priors[d.block] = Some(self.dense_prior(parts, &hv)?);
        let pv = self.predictors(state);
        self.sample_aux(state, &pv, rng)
    }
}

/// The level the non-centred move holds: `θ_a ← θ_a − A(θ_s' − θ_s)` for the level latents'
/// coordinates `a`, with `A = (Φ_aᵀΦ_a)⁻¹Φ_aᵀΦ_s` from the observation factors' design
/// ([`gpm_schedule::DenseScaleUpdate::level`]; data only, so computed once when bound).
#[derive(Debug, Clone)]
pub(super) struct LevelShear {
    /// The level latents' coordinates in the block.
    level: Vec<usize>,
    /// The other coordinates.
    rest: Vec<usize>,
    /// `A`, `level × rest`.
    map: DMatrix<f64>,
}

impl LevelShear {
    /// Bind the schedule's level latents to the block's design rows in the observation factors
    /// among `factors` (a prior factor's row reads its own coordinate, not the data).
    pub(super) fn bind(
        schedule: &Schedule,
        prep: &Prepared,
        block: usize,
        level: &[gpm_schedule::LatentId],
        factors: &[usize],
    ) -> Result<Option<LevelShear>, RuntimeError> {
        let Block::Dense { parts, .. } = &prep.blocks[block] else {
            return Ok(None);
        };
        if level.is_empty() {
            return Ok(None);
        }
        let dim: usize = parts.iter().map(|p| p.2).sum();
        let (mut at, mut rest) = (Vec::new(), Vec::new());
        for &(li, off, len) in parts {
            let coords = off..off + len;
            if level.iter().any(|l| l.0 == li) {
                at.extend(coords);
            } else {
                rest.extend(coords);
            }
        }
        let mut rows = Vec::new();
        for &fi in factors.iter().filter(|&&f| !schedule.factors[f].is_prior) {
            for slot in &schedule.factors[fi].slots {
                if let gpm_schedule::Source::Predictor(p) = slot {
                    rows.extend(prep.dense_design(p.0, parts, dim));
                }
            }
        }
        let phi = stack_rows(rows, dim);
        let (pa, ps) = (
            phi.select_columns(at.iter()),
            phi.select_columns(rest.iter()),
        );
        // The move is exact for any fixed `A`; where the level latents' columns are collinear
        // or absent from the observation factors, `A = 0` (no shift) is the exact fallback —
        // the plain non-centred move.
        let Some(chol) = (pa.transpose() * &pa).cholesky() else {
            return Ok(None);
        };
        let map = chol.solve(&(pa.transpose() * ps));
        Ok(Some(LevelShear {
            level: at,
            rest,
            map,
        }))
    }

    /// Shift the level coordinates of the moved `t` by what the other coordinates' change from
    /// `theta` adds to their projection.
    fn hold(&self, theta: &DVector<f64>, t: &mut DVector<f64>) {
        let delta = DVector::from_fn(self.rest.len(), |k, _| {
            t[self.rest[k]] - theta[self.rest[k]]
        });
        let shift = &self.map * delta;
        for (r, &j) in self.level.iter().enumerate() {
            t[j] -= shift[r];
        }
    }
}
