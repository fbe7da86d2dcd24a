//! CAVI of sparse-GP models over shards of the data (issue 33): the calls a distributed engine
//! (the Python package on Dask) makes. The driver [`start`]s from a sample of the rows (the
//! inducing inputs chosen once, by the same k-means++ the single-process run makes on its
//! data), sends the state to every shard, each shard returns [`shard`] statistics of `O(M²)`
//! numbers computed from its own rows, and the driver's [`gpm_runtime::cluster::GlobalState::step`]
//! sums them in shard order into the next state; [`predict`] reads the state at new inputs.
//! Nothing here holds math: the runtime's CAVI step and prediction do it, on one shard or many.

use crate::infer::{schedule, InferError};
use crate::Checked;
use gpm_ir::HyperKind;
use gpm_runtime::cluster::GlobalState;
use gpm_runtime::data::Data;
use gpm_runtime::kernels::HyperValues;
use gpm_runtime::prepared::{Block, Prepared};
use gpm_runtime::shard::ShardStats;

/// The hyperparameter values a distributed fit uses (their start values: `learn()` ones are
/// refused, as their type-II ML over shards is not built) and the state before the first step:
/// the inducing inputs chosen from `sample`, `q(v)` at the prior.
pub fn start(c: &Checked, sample: &Data) -> Result<(HyperValues, GlobalState), InferError> {
    if let Some(h) = c
        .model
        .hypers
        .iter()
        .find(|h| matches!(h.kind, HyperKind::Learn { .. }))
    {
        return Err(InferError::Schedule(format!(
            "`{}` is learned (`learn()`), and type-II ML over shards is not built yet: give it a \
             value (`{} : real in 0.. = 1.0;`) or fit on one machine",
            h.name, h.name
        )));
    }
    let schedule = schedule(c)?;
    let (hv, _) = crate::infer::hyper_values(c);
    let prep = Prepared::new(schedule, sample, &hv)?;
    let mut sizes = Vec::new();
    for b in &prep.blocks {
        match b {
            Block::Sparse { sp, .. } => sizes.push(sp.m()),
            _ => {
                return Err(InferError::Schedule(
                    "a distributed fit needs every latent to be a sparse GP (`gp(X, k, \
                     inducing = M)`); fit this model on one machine"
                        .into(),
                ))
            }
        }
    }
    Ok((hv, GlobalState::prior(&prep.inducing_inputs(), &sizes)))
}

/// One shard's statistics for the next step at `state`, from the shard's own rows (`subset`
/// of them for a minibatch step, 0-based; `None`: all).
pub fn shard(
    c: &Checked,
    rows: &Data,
    hv: &HyperValues,
    state: &GlobalState,
    subset: Option<&[usize]>,
) -> Result<ShardStats, InferError> {
    let schedule = schedule(c)?;
    let prep = Prepared::with_inducing(schedule, rows, hv, &state.inducing_inputs()?)?;
    Ok(gpm_runtime::svi::shard_stats(
        &prep,
        schedule,
        &state.q()?,
        subset,
    )?)
}

/// Predictions at `test` from the state (what `predict` of a single-process fit writes): the
/// `sample` the fit started from stands for the training data (sizes and inducing inputs).
pub fn predict(
    c: &Checked,
    sample: &Data,
    test: &Data,
    hv: &HyperValues,
    state: &GlobalState,
) -> Result<(String, serde_json::Value), InferError> {
    let schedule = schedule(c)?;
    let prep = Prepared::with_inducing(schedule, sample, hv, &state.inducing_inputs()?)?;
    let blocks: Vec<gpm_runtime::cavi::BlockPosterior> = state
        .q()?
        .into_iter()
        .map(gpm_runtime::cavi::BlockPosterior::Sparse)
        .collect();
    crate::infer::predict_variational_bound(c, &prep, sample, test, hv, &blocks)
}
