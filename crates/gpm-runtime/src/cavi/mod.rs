//! Closed-form coordinate-ascent variational inference on the augmented model (thesis ch. 3
//! §3.1 and ch. 5 §3.3.1). The family is `q(latents) Π_i q(ω_i)`, each latent block Gaussian and
//! each `q(ω_i) = π_φ(ω_i | c_i)` with `c_i² = E_q[s_i]`. One iteration updates every `q(ω)`
//! (`E[ω] = −φ'(E s)/φ(E s)`), then every latent block (a Gaussian with the expected curvature).
//!
//! The ELBO of the augmented model at the optimal `q(ω)` is
//! `Σ_i [log C_i + E_q P₀(η_i) + Σ_ω log φ(E_q s_ω(η_i))] − Σ_blocks KL(q ‖ p)` (ch. 5 §3.3.1);
//! each coordinate step maximises it exactly, so the sequence never decreases.

mod chunks;
mod generic;
mod local;
mod softmax;
mod state;

pub(crate) use local::{double_bound_terms, local_elbo, local_step};
pub(crate) use softmax::{softmax_elbo, softmax_local, SoftmaxObs};

use crate::data::Data;
use crate::kernels::HyperValues;
use crate::prepared::Prepared;
use crate::RuntimeError;
use gpm_schedule::{CaviStep, Schedule};
use nalgebra::DVector;
use state::CaviState;

pub use crate::posterior::BlockPosterior;

/// Settings of a CAVI run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaviConfig {
    /// Stop when the ELBO changes by less than this, relative to |ELBO|.
    pub tolerance: f64,
    /// At most this many iterations.
    pub max_iter: usize,
}

/// The variational posterior and the ELBO trace.
#[derive(Debug, Clone)]
pub struct CaviResult {
    /// Latent names with their posterior means and variances (matrix latents column-major).
    pub latents: Vec<crate::posterior::LatentMoments>,
    /// The ELBO after every iteration.
    pub elbo: Vec<f64>,
    /// Whether the tolerance was reached.
    pub converged: bool,
    /// Seconds.
    pub seconds: f64,
    /// The final variational posterior of every block (as [`Prepared::blocks`]), for prediction.
    pub blocks: Vec<BlockPosterior>,
    /// The class scales CAVI learned ([`gpm_schedule::VariationalUpdate::ClassScales`]), by
    /// hyperparameter.
    pub class_scales: Vec<(gpm_schedule::HyperId, Vec<f64>)>,
    /// The generic factors' Gaussian sites, for a run resumed from this one ([`run_from`]).
    sites: Vec<Option<generic::Sites>>,
}

/// One CAVI iteration: the schedule's steps ([`gpm_schedule::CaviStep`]); the ELBO after it.
fn iterate(schedule: &Schedule, prep: &Prepared, q: &mut CaviState) -> Result<f64, RuntimeError> {
    let mut elbo = f64::NAN;
    for step in &schedule.cavi {
        match *step {
            // Every column after fresh local steps (q(ω), q(n) at the current moments:
            // E[ω] at c² = E[s]); each step maximises the ELBO over its factor exactly.
            // Fresh local steps matter for the double bound, whose block weight 1 − γ/E[κ]
            // is the joint optimum over (q(f), q(n)) only at the current γ.
            CaviStep::Block { block } => {
                for bi in prep.spec_blocks[block.0].clone() {
                    let pm = q.moments();
                    q.local(&pm);
                    q.update_block(bi, &pm)?;
                }
            }
            CaviStep::Elbo => elbo = q.elbo(),
        }
    }
    Ok(elbo)
}

/// An ELBO joins the trace, and the progress observer hears of it.
fn record(trace: &mut Vec<f64>, elbo: f64, config: &CaviConfig) {
    trace.push(elbo);
    crate::progress::emit(crate::progress::Event::CaviIteration {
        iteration: trace.len(),
        max_iterations: config.max_iter,
        elbo,
    });
}

/// SQUAREM (Varadhan & Roland 2008, scheme S3) on the latents' moments: CAVI is a fixed-point
/// map `M` that converges linearly, slowly where the likelihood dominates the prior (a GP
/// classifier at a large variance: 158 iterations). From `x₀`, `x₁ = M(x₀)`, `x₂ = M(x₁)`
/// (the current state, of ELBO `e2`), `r = x₁ − x₀`, `v = x₂ − 2x₁ + x₀`, `α = −‖r‖/‖v‖`, the
/// point `x₀ − 2αr + α²v` is mapped once more; that state is kept only if its ELBO is at least
/// `e2`, so the sequence of ELBOs still never decreases and the fixed point is CAVI's own.
/// Returns the new ELBO, or `None` (state back at `x₂`) when the extrapolation does not help.
fn extrapolate(
    schedule: &Schedule,
    prep: &Prepared,
    q: &mut CaviState,
    m: [&[DVector<f64>]; 2],
    v: [&[DVector<f64>]; 2],
    e2: f64,
) -> Result<Option<f64>, RuntimeError> {
    let sq = |a: &[DVector<f64>]| a.iter().map(|x| x.norm_squared()).sum::<f64>();
    let diff = |x2: &[DVector<f64>], x1: &[DVector<f64>], x0: &[DVector<f64>]| {
        let r: Vec<DVector<f64>> = x1.iter().zip(x0).map(|(a, b)| a - b).collect();
        let w: Vec<DVector<f64>> = (0..x0.len())
            .map(|k| &x2[k] - 2.0 * &x1[k] + &x0[k])
            .collect();
        (r, w)
    };
    let (rm, wm) = diff(&q.mean, m[1], m[0]);
    let (rv, wv) = diff(&q.var, v[1], v[0]);
    let (r2, w2) = (sq(&rm) + sq(&rv), sq(&wm) + sq(&wv));
    if !(w2 > 0.0 && r2.is_finite() && w2.is_finite()) {
        return Ok(None);
    }
    let alpha = -(r2 / w2).sqrt();
    // α = −1 is the plain two steps (x₂): nothing to try.
    if alpha > -1.0 - 1e-9 {
        return Ok(None);
    }
    let at = |x0: &DVector<f64>, r: &DVector<f64>, w: &DVector<f64>| {
        x0 - 2.0 * alpha * r + alpha * alpha * w
    };
    let saved = q.snapshot();
    for k in 0..q.mean.len() {
        q.mean[k] = at(&m[0][k], &rm[k], &wm[k]);
        // A variance extrapolated below zero is not a state: keep it positive (the next
        // iteration recomputes every variance from the blocks anyway).
        let floor = q.var[k].map(|x| x * 1e-3);
        q.var[k] = at(&v[0][k], &rv[k], &wv[k]).zip_map(&floor, |x, f| x.max(f));
    }
    match iterate(schedule, prep, q) {
        Ok(e) if e.is_finite() && e >= e2 => Ok(Some(e)),
        Err(e @ RuntimeError::Interrupted(_)) => Err(e),
        _ => {
            q.restore(saved);
            Ok(None)
        }
    }
}

/// Run CAVI: the schedule's iteration ([`gpm_schedule::CaviStep`]) until the ELBO changes by
/// less than the tolerance. Fails when a factor has no closed-form CAVI program.
pub fn run(
    schedule: &Schedule,
    data: &Data,
    hypers: &HyperValues,
    config: &CaviConfig,
) -> Result<CaviResult, RuntimeError> {
    run_from(schedule, data, hypers, config, None)
}

/// [`run`] resumed from an earlier run's `q` (`start`: of the same model and data, at nearby
/// hyperparameters) instead of the prior: every latent's moments, the dense blocks'
/// covariances and the generic factors' sites. Type-II ML evaluates the converged ELBO at a
/// sequence of nearby hyperparameters, and from the last optimum CAVI converges in a fraction
/// of the iterations; one iteration resumed from an optimum is the lower bound whose gradient
/// it follows (`learn`). The optimum reached is the same (the tolerance's worth); only the path
/// to it is shorter.
pub fn run_from(
    schedule: &Schedule,
    data: &Data,
    hypers: &HyperValues,
    config: &CaviConfig,
    start: Option<&CaviResult>,
) -> Result<CaviResult, RuntimeError> {
    let t0 = std::time::Instant::now();
    for fp in &schedule.factors {
        let generic_ok = fp.generic.as_ref().is_some_and(|g| g.variational.is_ok());
        if fp.cavi.is_none() && fp.categorical.is_none() && !generic_ok {
            return Err(RuntimeError::Unsupported(format!(
                "closed-form CAVI is not implemented for the augmentation of factor #{} ({}); use --method gibbs",
                fp.factor + 1,
                fp.cavi_unavailable.as_deref().unwrap_or("no program")
            )));
        }
    }
    let has_generic = schedule.factors.iter().any(|f| f.generic.is_some());
    let prep = Prepared::new(schedule, data, hypers)?;
    let mut q = CaviState::new(&prep, schedule, data, hypers)?;
    if let Some(start) = start {
        q.warm_start(start);
    }
    let mut elbo_trace: Vec<f64> = Vec::new();
    let mut converged = false;
    // Three iterations per SQUAREM cycle (below) when it applies; one otherwise.
    let squarem = !has_generic;
    while elbo_trace.len() < config.max_iter && !converged {
        crate::stop::check("CAVI")?;
        let x0 = squarem.then(|| (q.mean.clone(), q.var.clone()));
        let mut elbo = iterate(schedule, &prep, &mut q)?;
        if let Some((m0, v0)) = x0.filter(|_| elbo_trace.len() + 3 <= config.max_iter) {
            record(&mut elbo_trace, elbo, config);
            let (m1, v1) = (q.mean.clone(), q.var.clone());
            elbo = iterate(schedule, &prep, &mut q)?;
            if let Some(e) = extrapolate(schedule, &prep, &mut q, [&m0, &m1], [&v0, &v1], elbo)? {
                record(&mut elbo_trace, elbo, config);
                elbo = e;
            }
        }
        if !elbo.is_finite() {
            return Err(RuntimeError::Numerical(format!("the ELBO became {elbo}")));
        }
        converged = elbo_trace.last().is_some_and(|last: &f64| {
            (elbo - last).abs() <= config.tolerance * elbo.abs().max(1.0)
        });
        // The generic sites' natural-gradient steps are not coordinate ascent: a decrease
        // halves their step size (the augmented factors' steps are exact and never decrease
        // the ELBO).
        let decreased = elbo_trace
            .last()
            .is_some_and(|last: &f64| elbo < last - config.tolerance * elbo.abs().max(1.0));
        if has_generic && decreased {
            q.rho = (q.rho * 0.5).max(1.0 / 1024.0);
            converged = false;
        }
        record(&mut elbo_trace, elbo, config);
    }
    Ok(CaviResult {
        latents: prep
            .latents
            .iter()
            .enumerate()
            .map(|(k, (n, _, _))| (n.clone(), q.mean[k].clone(), q.var[k].clone()))
            .collect(),
        elbo: elbo_trace,
        converged,
        seconds: t0.elapsed().as_secs_f64(),
        class_scales: q.learned_scales(),
        blocks: q.posteriors,
        sites: q.sites,
    })
}
