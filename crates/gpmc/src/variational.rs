//! A variational fit (CAVI, SVI or Gaussian particle flow) of a checked model, with what every
//! front end reports of it: one JSON summary (the method's settings, the ELBO or free-energy
//! trace, the learned hyperparameters), each block's `q` for prediction and draws, the latents'
//! marginal means and variances, and a one-line account. The CLI writes these to files and the
//! Python package returns them; neither runs a method itself.

use crate::infer::InferError;
use crate::Checked;
use gpm_runtime::cavi::BlockPosterior;
use gpm_runtime::kernels::HyperValues;
use serde_json::json;

/// A variational method's settings ([`crate::method::Method::variational`] builds them from a
/// front end's options).
#[derive(Debug, Clone)]
pub enum Settings {
    /// Coordinate ascent, at most `max_iter` iterations.
    Cavi {
        /// Most iterations.
        max_iter: usize,
    },
    /// Stochastic CAVI on minibatches.
    Svi(gpm_runtime::svi::SviConfig),
    /// Gaussian particle flow.
    Gpf(gpm_runtime::gpf::GpfConfig),
}
pub use gpm_runtime::posterior::LatentMoments;

/// A finished variational fit.
#[derive(Debug, Clone)]
pub struct Fit {
    /// `summary.json` of the run.
    pub summary: serde_json::Value,
    /// Each block's `q` (as the prepared model's blocks).
    pub blocks: Vec<BlockPosterior>,
    /// The hyperparameter values used (learned ones included).
    pub values: HyperValues,
    /// Each hyperparameter: name, value, how it was set.
    pub hypers: Vec<(String, f64, String)>,
    /// Latent names with their marginal means and variances under `q` (not for SVI, whose
    /// latents at every training input are not formed).
    pub latents: Option<Vec<LatentMoments>>,
    /// What happened, in one line.
    pub headline: String,
}

fn hyper_json(hypers: &[(String, f64, String)]) -> Vec<serde_json::Value> {
    hypers
        .iter()
        .map(|(n, v, how)| json!({"name": n, "value": v, "set_by": how}))
        .collect()
}

fn status(converged: bool) -> &'static str {
    if converged {
        "converged"
    } else {
        "stopped (not converged)"
    }
}

/// A fit and, where it stopped before converging, the warning that says so.
type Ran = (Fit, Option<String>);

/// SVI (`svi_progress` at each report).
fn fit_svi(
    c: &Checked,
    d: &gpm_runtime::data::Data,
    config: &gpm_runtime::svi::SviConfig,
    svi_progress: &mut dyn FnMut(&gpm_runtime::svi::SviPoint, usize),
) -> Result<Ran, InferError> {
    let (r, hypers, hv) =
        crate::infer::run_svi(c, d, config, &mut |p, _| svi_progress(p, config.iterations))?;
    let last = r.trace.last().copied();
    let headline = format!(
        "SVI: {} iterations of batch {} ({:.1} epochs) in {:.3} s; ELBO estimate {:.6}",
        config.iterations,
        config.batch,
        last.map_or(0.0, |p| p.epoch),
        r.seconds,
        last.map_or(f64::NAN, |p| p.elbo)
    );
    let summary = json!({
        "model": &c.name,
        "method": "svi",
        "batch": config.batch,
        "iterations": config.iterations,
        "step_schedule": {"delay": config.delay, "forgetting": config.forgetting},
        "hyper_rate": config.hyper_rate,
        "class_batch": config.class_batch,
        "seed": config.seed,
        "trace": r.trace.iter().map(|p| json!({"iteration": p.iteration, "epoch": p.epoch, "seconds": p.seconds, "elbo_estimate": p.elbo})).collect::<Vec<_>>(),
        "seconds": r.seconds,
    });
    let unconverged = None;
    Ok((
        Fit {
            summary,
            blocks: r.blocks,
            values: hv,
            hypers,
            latents: None,
            headline,
        },
        unconverged,
    ))
}

/// The Gaussian particle flow.
fn fit_gpf(
    c: &Checked,
    d: &gpm_runtime::data::Data,
    config: &gpm_runtime::gpf::GpfConfig,
) -> Result<Ran, InferError> {
    let (r, hypers, hv) = crate::infer::run_learned(c, d, config)?;
    let headline = format!(
        "GPF {} after {} steps ({} particles, {} map, {} steps undone) in {:.3} s; ELBO {:.6}",
        status(r.converged),
        r.free_energy.len() - 1,
        r.particles,
        r.map.name(),
        r.rejected,
        r.seconds,
        r.elbo
    );
    let summary = json!({
        "model": &c.name,
        "method": "gpf",
        "converged": r.converged,
        "particles": r.particles,
        "particle_map": r.map.name(),
        "iterations": r.free_energy.len() - 1,
        "rejected_steps": r.rejected,
        "final_step": r.step,
        "free_energy": r.free_energy,
        "elbo": r.elbo,
        "seed": config.seed,
        "seconds": r.seconds,
        "stationarity": r.stationarity.map(|s| json!({"mean_shift_sd": s.mean_shift_sd, "spread_residual": s.spread_residual})),
    });
    let unconverged = (!r.converged).then(|| crate::warnings::flow_unconverged(&r));
    Ok((
        Fit {
            summary,
            blocks: r.blocks,
            values: hv,
            hypers,
            latents: Some(r.latents),
            headline,
        },
        unconverged,
    ))
}

/// CAVI to a relative ELBO change of 10⁻⁹, at most `max_iter` iterations.
fn fit_cavi(c: &Checked, d: &gpm_runtime::data::Data, max_iter: usize) -> Result<Ran, InferError> {
    let config = gpm_runtime::cavi::CaviConfig {
        tolerance: 1e-9,
        max_iter,
    };
    let (r, hypers, hv) = crate::infer::run_learned(c, d, &config)?;
    let headline = format!(
        "CAVI {} after {} iterations in {:.3} s; ELBO {:.6}",
        status(r.converged),
        r.elbo.len(),
        r.seconds,
        r.elbo.last().copied().unwrap_or(f64::NAN)
    );
    let summary = json!({
        "model": &c.name,
        "method": "cavi",
        "converged": r.converged,
        "iterations": r.elbo.len(),
        "elbo": r.elbo,
        "seconds": r.seconds,
    });
    let unconverged = (!r.converged).then(|| crate::warnings::cavi_unconverged(r.elbo.len()));
    Ok((
        Fit {
            summary,
            blocks: r.blocks,
            values: hv,
            hypers,
            latents: Some(r.latents),
            headline,
        },
        unconverged,
    ))
}

/// Run `method`; `svi_progress(point, iterations)` is called at each SVI report.
pub fn fit(
    c: &Checked,
    d: &gpm_runtime::data::Data,
    method: &Settings,
    svi_progress: &mut dyn FnMut(&gpm_runtime::svi::SviPoint, usize),
) -> Result<Fit, InferError> {
    let (mut fit, unconverged) = match method {
        Settings::Svi(config) => fit_svi(c, d, config, svi_progress)?,
        Settings::Gpf(config) => fit_gpf(c, d, config)?,
        Settings::Cavi { max_iter } => fit_cavi(c, d, *max_iter)?,
    };
    let Fit {
        summary,
        hypers,
        latents,
        ..
    } = &mut fit;
    summary["hyperparameters"] = json!(hyper_json(hypers));
    let warnings: Vec<String> =
        crate::warnings::extremes(&crate::magnitudes::extremes(&c.model, d))
            .into_iter()
            .chain(crate::warnings::learned(c, hypers))
            .chain(crate::warnings::held_by_variational(c, hypers))
            .chain(unconverged)
            .chain(crate::warnings::q_overflowed(latents.as_deref()))
            .collect();
    summary["warnings"] = json!(warnings);
    Ok(fit)
}
