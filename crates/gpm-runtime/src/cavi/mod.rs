//! Closed-form coordinate-ascent variational inference on the augmented model (thesis ch. 3
//! §3.1 and ch. 5 §3.3.1). The family is `q(latents) Π_i q(ω_i)`, each latent block Gaussian and
//! each `q(ω_i) = π_φ(ω_i | c_i)` with `c_i² = E_q[s_i]`. One iteration updates every `q(ω)`
//! (`E[ω] = −φ'(E s)/φ(E s)`), then every latent block (a Gaussian with the expected curvature).
//!
//! The ELBO of the augmented model at the optimal `q(ω)` is
//! `Σ_i [log C_i + E_q P₀(η_i) + Σ_ω log φ(E_q s_ω(η_i))] − Σ_blocks KL(q ‖ p)` (ch. 5 §3.3.1);
//! each coordinate step maximises it exactly, so the sequence never decreases.

mod generic;
mod local;
mod softmax;
mod state;

pub(crate) use local::{double_bound_terms, local_elbo, local_step};
pub(crate) use softmax::{softmax_elbo, softmax_local, SoftmaxObs};

use crate::data::Data;
use crate::kernels::HyperValues;
use crate::prepared::Prepared;
use crate::sparse::QInducing;
use crate::RuntimeError;
use gpm_schedule::{CaviStep, Schedule};
use nalgebra::{DMatrix, DVector};
use state::CaviState;

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
    pub latents: Vec<(String, DVector<f64>, DVector<f64>)>,
    /// The ELBO after every iteration.
    pub elbo: Vec<f64>,
    /// Whether the tolerance was reached.
    pub converged: bool,
    /// Seconds.
    pub seconds: f64,
    /// The final variational posterior of every block (as [`Prepared::blocks`]), for prediction.
    pub blocks: Vec<BlockPosterior>,
}

/// The variational posterior of one latent block, in the form prediction needs.
#[derive(Debug, Clone)]
pub enum BlockPosterior {
    /// A full GP column: `q(f) ∝ p(f) exp(Σ_i b_i f_i − ½ a_i f_i²)`, kept as its curvature and
    /// linear term (GPML §3.4: predictions need only these and the prior).
    Gp {
        /// Curvature `a`.
        a: Vec<f64>,
        /// Linear term `b`.
        b: Vec<f64>,
    },
    /// A sparse GP column: `q(v)` of the whitened inducing values.
    Sparse(QInducing),
    /// A full GP column represented by particles (Gaussian particle flow): `q(f) = N(m, SSᵀ)`
    /// with `S` the centred particles over `√N` (low rank when there are fewer particles than
    /// values).
    Particles {
        /// Mean `m`.
        mean: DVector<f64>,
        /// `S` (`n × N`).
        spread: DMatrix<f64>,
    },
    /// The dense block: mean and covariance of its coefficients.
    Dense {
        /// Mean.
        mean: DVector<f64>,
        /// Covariance.
        cov: DMatrix<f64>,
    },
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

/// [`run`] starting from the GP latents' moments of an earlier run (`start`: a
/// [`CaviResult::latents`], of the same model and data at nearby hyperparameters) instead of
/// their prior's: type-II ML evaluates the converged ELBO at a sequence of nearby
/// hyperparameters, and from the last optimum CAVI converges in a fraction of the iterations.
/// The optimum reached is the same (the tolerance's worth); only the path to it is shorter.
pub fn run_from(
    schedule: &Schedule,
    data: &Data,
    hypers: &HyperValues,
    config: &CaviConfig,
    start: Option<&[(String, DVector<f64>, DVector<f64>)]>,
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
    let mut q = CaviState::new(&prep, schedule, data)?;
    if let Some(start) = start {
        q.warm_start(start);
    }
    let mut elbo_trace = Vec::new();
    let mut converged = false;
    for _iter in 0..config.max_iter {
        crate::stop::check("CAVI")?;
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
                CaviStep::Elbo => {
                    let elbo = q.elbo();
                    if !elbo.is_finite() {
                        return Err(RuntimeError::Numerical(format!("the ELBO became {elbo}")));
                    }
                    converged = elbo_trace.last().is_some_and(|last: &f64| {
                        (elbo - last).abs() <= config.tolerance * elbo.abs().max(1.0)
                    });
                    // The generic sites' natural-gradient steps are not coordinate ascent: a
                    // decrease halves their step size (the augmented factors' steps are exact
                    // and never decrease the ELBO).
                    let decreased = elbo_trace.last().is_some_and(|last: &f64| {
                        elbo < last - config.tolerance * elbo.abs().max(1.0)
                    });
                    if has_generic && decreased {
                        q.rho = (q.rho * 0.5).max(1.0 / 1024.0);
                        converged = false;
                    }
                    elbo_trace.push(elbo);
                    crate::progress::emit(crate::progress::Event::CaviIteration {
                        iteration: elbo_trace.len(),
                        max_iterations: config.max_iter,
                        elbo,
                    });
                }
            }
        }
        if converged {
            break;
        }
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
        blocks: q.posteriors,
    })
}
