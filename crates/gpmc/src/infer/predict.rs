//! Predictions at test points from a run's posterior — Gibbs draws or a variational fit — as
//! `predictions.csv` and the test metrics; the runtime's `predict` does the math.

use super::*;

/// The response datum and label set of each factor whose response ([`gpm_ir::Factor::response`])
/// has a finite label set (for predictive probabilities): a `{…}` set, or the classes `1..C` of a
/// categorical factor.
pub fn label_sets(c: &Checked, data: &gpm_runtime::data::Data) -> Vec<Option<(String, Vec<f64>)>> {
    c.model
        .factors
        .iter()
        .map(|f| {
            if let gpm_ir::FactorForm::Categorical { label, classes, .. } = &f.form {
                let k = match classes {
                    gpm_ir::Dim::Const(k) => *k,
                    gpm_ir::Dim::Var(v) => data.scalar(v)? as usize,
                };
                return Some((label.clone(), (1..=k).map(|x| x as f64).collect()));
            }
            let d = f.response.as_ref()?;
            match &c.model.datum(d)?.constraint {
                gpm_ir::ValueSet::Set(s) => {
                    Some((d.clone(), s.iter().map(|v| *v as f64).collect()))
                }
                _ => None,
            }
        })
        .collect()
}

/// Most Gibbs draws prediction averages over (evenly thinned).
pub const PREDICT_DRAWS: usize = 1000;

/// Predictions at test points from a Gibbs run: `predictions.csv` and the test metrics.
pub fn predict(
    c: &Checked,
    train: &gpm_runtime::data::Data,
    test: &gpm_runtime::data::Data,
    r: &InferResult,
    seed: u64,
) -> Result<(String, serde_json::Value), InferError> {
    predict_with(c, train, test, r, seed, PREDICT_DRAWS)
}

/// [`predict`] from at most about `max_draws` of the draws (all of them with `usize::MAX`:
/// draws read back from files are thinned as they are read).
pub fn predict_with(
    c: &Checked,
    train: &gpm_runtime::data::Data,
    test: &gpm_runtime::data::Data,
    r: &InferResult,
    seed: u64,
    max_draws: usize,
) -> Result<(String, serde_json::Value), InferError> {
    let tr = gpm_runtime::prepared::Prepared::new(schedule(c)?, train, &r.values)?;
    let posterior = gpm_runtime::predict::Posterior::Draws {
        chains: &r.chains,
        max_draws,
        seed,
    };
    predict_bound(c, &tr, train, test, &r.values, posterior)
}

/// Predictions at `test` from a posterior, with the training side already bound (a
/// distributed fit's, whose inducing inputs were chosen once for all shards:
/// [`crate::cluster`]).
pub fn predict_bound(
    c: &Checked,
    tr: &gpm_runtime::prepared::Prepared,
    train: &gpm_runtime::data::Data,
    test: &gpm_runtime::data::Data,
    hypers: &HyperValues,
    posterior: gpm_runtime::predict::Posterior,
) -> Result<(String, serde_json::Value), InferError> {
    crate::data::check_test_against(&c.model, train, test)?;
    let schedule = schedule(c)?;
    let labels = label_sets(c, test);
    let sets: Vec<Option<Vec<f64>>> = labels
        .iter()
        .map(|l| l.as_ref().map(|l| l.1.clone()))
        .collect();
    let p = gpm_runtime::predict::predict(tr, schedule, train, test, hypers, posterior, &sets)?;
    Ok(prediction_outputs(&p, &labels, test))
}

/// Predictions at test points from a variational posterior (CAVI or SVI): `predictions.csv` and
/// the test metrics, the densities by adaptive Gauss-Hermite quadrature.
pub fn predict_variational(
    c: &Checked,
    train: &gpm_runtime::data::Data,
    test: &gpm_runtime::data::Data,
    hypers: &HyperValues,
    blocks: &[gpm_runtime::cavi::BlockPosterior],
) -> Result<(String, serde_json::Value), InferError> {
    let tr = bind_posterior(c, train, hypers, blocks)?;
    predict_variational_bound(c, &tr, train, test, hypers, blocks)
}

/// The model bound to the training data as a variational posterior saw it: with the inducing
/// inputs its `q` carries (those an SVI run chose online, `inducing = adaptive(…)`), else with
/// those the binding chooses from the data.
pub fn bind_posterior(
    c: &Checked,
    train: &gpm_runtime::data::Data,
    hypers: &HyperValues,
    blocks: &[gpm_runtime::cavi::BlockPosterior],
) -> Result<gpm_runtime::prepared::Prepared, InferError> {
    use gpm_runtime::cavi::BlockPosterior;
    use gpm_runtime::prepared::{Block, Prepared};
    let schedule = schedule(c)?;
    let prep = Prepared::new(schedule, train, hypers)?;
    if !blocks
        .iter()
        .any(|b| matches!(b, BlockPosterior::Sparse(q) if q.inputs.is_some()))
    {
        return Ok(prep);
    }
    // One matrix per sparse latent, in the blocks' order (a matrix latent's columns share it).
    let (mut seen, mut inducing) = (Vec::new(), Vec::new());
    for (b, post) in prep.blocks.iter().zip(blocks) {
        if let Block::Sparse { latent, sp, .. } = b {
            if !seen.contains(latent) {
                seen.push(*latent);
                inducing.push(match post {
                    BlockPosterior::Sparse(q) => q.inputs.clone().unwrap_or_else(|| sp.z.clone()),
                    _ => sp.z.clone(),
                });
            }
        }
    }
    Ok(Prepared::with_inducing(schedule, train, hypers, &inducing)?)
}

/// A sampler of the model as a variational posterior saw it ([`bind_posterior`]), for draws
/// from `q`.
pub fn posterior_sampler<'c>(
    c: &'c Checked,
    train: &gpm_runtime::data::Data,
    hypers: &HyperValues,
    blocks: &[gpm_runtime::cavi::BlockPosterior],
) -> Result<gpm_runtime::gibbs::Sampler<'c>, InferError> {
    let prep = bind_posterior(c, train, hypers, blocks)?;
    Ok(gpm_runtime::gibbs::Sampler::bound(
        schedule(c)?,
        train,
        prep,
        hypers,
    )?)
}

/// [`predict_variational`] with the training side already bound (a distributed fit's, whose
/// inducing inputs were chosen once for all shards: [`crate::cluster`]).
pub fn predict_variational_bound(
    c: &Checked,
    tr: &gpm_runtime::prepared::Prepared,
    train: &gpm_runtime::data::Data,
    test: &gpm_runtime::data::Data,
    hypers: &HyperValues,
    blocks: &[gpm_runtime::cavi::BlockPosterior],
) -> Result<(String, serde_json::Value), InferError> {
    let posterior = gpm_runtime::predict::Posterior::Variational(blocks);
    predict_bound(c, tr, train, test, hypers, posterior)
}
