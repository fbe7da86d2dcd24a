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
    let tr = gpm_runtime::prepared::Prepared::new(schedule(c)?, train, hypers)?;
    predict_variational_bound(c, &tr, train, test, hypers, blocks)
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
