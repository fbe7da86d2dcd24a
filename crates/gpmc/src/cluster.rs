//! CAVI and sparse Gibbs of sparse-GP models over shards of the data (issue 33): the calls a
//! distributed engine (the Python package on Dask) makes. The driver [`start`]s from a sample of the rows (the
//! inducing inputs chosen once, by the same k-means++ the single-process run makes on its
//! data), sends the state to every shard, each shard returns [`shard`] statistics of `O(M²)`
//! numbers computed from its own rows, and the driver's [`gpm_runtime::cluster::GlobalState::step`]
//! sums them in shard order into the next state; [`predict`] reads the state at new inputs.
//! Sparse Gibbs goes round by round ([`gibbs_round`] on every shard, [`gibbs_draw`] on the
//! driver; `gpm_runtime::gibbs::ShardChain` says why), and [`predict_draws`] reads its draws.
//! Nothing here holds math: the runtime's CAVI step and prediction do it, on one shard or many.

use crate::infer::{schedule, InferError};
use crate::Checked;
use gpm_runtime::cluster::stream;
use gpm_runtime::cluster::GlobalState;
use gpm_runtime::data::Data;
use gpm_runtime::gibbs::{Chain, RowStreams, ShardChain};
use gpm_runtime::kernels::HyperValues;
use gpm_runtime::prepared::{Block, Prepared};
use gpm_runtime::shard::{InducingStats, ShardStats};
use gpm_schedule::VariationalUpdate;

/// How a distributed fit starts: the hyperparameter values (the learned ones at their start),
/// the state before the first step — the inducing inputs chosen from the sample, `q(v)` at the
/// prior, the hyperparameters to learn — and, per hyperparameter, its value and how it was set
/// (as a single-process fit reports them), with the warnings a single-process fit gives.
#[derive(Debug, Clone)]
pub struct Start {
    /// Hyperparameter values at the start.
    pub hypers: HyperValues,
    /// The state before the first step.
    pub state: GlobalState,
    /// Per hyperparameter: name, starting value, how it is set.
    pub report: Vec<(String, f64, String)>,
    /// What a single-process variational fit warns of (priors held at their start).
    pub warnings: Vec<String>,
}

/// The start of a distributed fit from a `sample` of the rows: the positive scalar `learn()`
/// hyperparameters are learned over the shards as SVI learns them (Adam of step `hyper_rate`
/// on their logarithms, [`gradient`] and `GlobalState::hyper_step`); the others keep their
/// values.
pub fn start(c: &Checked, sample: &Data, hyper_rate: f64) -> Result<Start, InferError> {
    let schedule = schedule(c)?;
    let (hv, mut report) = crate::infer::hyper_values(c);
    let mut learn = Vec::new();
    for (step, x) in schedule.hyper_steps.iter().zip(report.iter_mut()) {
        match step.variational {
            VariationalUpdate::TypeIiMl => {
                learn.push(step.hyper);
                x.2 = LEARNED.into();
            }
            VariationalUpdate::TypeIiMlCaviOnly => {
                return Err(InferError::Schedule(format!(
                    "`{}` is learned (`learn()`) but is not a positive scalar, which only \
                     single-process CAVI learns: give it a value, or fit on one machine",
                    x.0
                )))
            }
            _ => {}
        }
    }
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
    let state =
        GlobalState::prior(&prep.inducing_inputs(), &sizes).learning(&learn, &hv, hyper_rate)?;
    let warnings = crate::warnings::held_by_variational(c, &report);
    Ok(Start {
        hypers: hv,
        state,
        report,
        warnings,
    })
}

/// How a hyperparameter learned over shards is reported.
pub const LEARNED: &str = "learned over the shards: Adam on the ELBO (finite-difference gradient in log θ summed over the shards), alternating with the steps of q(u)";

/// The hyperparameter values at `state` made fixed (the learned ones at their current
/// values), and the state that learns nothing more: what sparse Gibbs over shards starts from
/// after a distributed CAVI fit learned them (single-process Gibbs learns `learn()` ones by
/// CAVI's type-II ML first, too).
pub fn settle(hv: &HyperValues, state: &GlobalState) -> (HyperValues, GlobalState) {
    let mut fixed = state.clone();
    fixed.learning = None;
    (state.hypers(hv), fixed)
}

/// The model bound to `rows` at the fit's inducing inputs and current hyperparameter values
/// (the learned ones where they are now): what every call on a shard, or on the sample the fit
/// started from, reads.
fn bind<'c>(
    c: &'c Checked,
    rows: &Data,
    hv: &HyperValues,
    state: &GlobalState,
) -> Result<(&'c gpm_schedule::Schedule, HyperValues, Prepared), InferError> {
    let schedule = schedule(c)?;
    let hv = state.hypers(hv);
    let prep = Prepared::with_inducing(schedule, rows, &hv, &state.inducing_inputs()?)?;
    Ok((schedule, hv, prep))
}

/// One shard's gradient of its local ELBO terms in the logarithms of the learned
/// hyperparameters, at `state` (its `q(v)`, its hyperparameter values), over its rows `subset`
/// (0-based; `None`: all) — summed over the shards by `GlobalState::hyper_step`.
pub fn gradient(
    c: &Checked,
    rows: &Data,
    hv: &HyperValues,
    state: &GlobalState,
    subset: Option<&[usize]>,
) -> Result<Vec<f64>, InferError> {
    let (schedule, _, prep) = bind(c, rows, hv, state)?;
    Ok(gpm_runtime::svi::shard_gradient(
        &prep,
        schedule,
        &state.q()?,
        &state.learned(),
        subset,
    )?)
}

/// `draws` draws of every sparse block's whitened inducing values from `q(v)` at `state`
/// (seeded), laid out as a single-process run's rows hold them: (column names, rows).
pub fn q_draws(
    c: &Checked,
    sample: &Data,
    hv: &HyperValues,
    state: &GlobalState,
    draws: usize,
    seed: u64,
) -> Result<(Vec<String>, Vec<Vec<f64>>), InferError> {
    let (_, _, prep) = bind(c, sample, hv, state)?;
    let mut layout = gpm_runtime::draws::Layout::default();
    prep.push_inducing(&mut layout);
    let at: Vec<usize> = (0..prep.blocks.len())
        .map(|bi| prep.inducing_offset(&layout, bi))
        .collect::<Option<_>>()
        .ok_or_else(|| InferError::Schedule("a distributed fit's block is not sparse".into()))?;
    let rows = state
        .draws_of_q(draws, seed)?
        .into_iter()
        .map(|vs| {
            let mut row = vec![0.0; layout.width()];
            for (v, &a) in vs.iter().zip(&at) {
                row[a..a + v.len()].copy_from_slice(v.as_slice());
            }
            row
        })
        .collect();
    Ok((crate::infer::column_names(c, &layout), rows))
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
    let (schedule, _, prep) = bind(c, rows, hv, state)?;
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
    let (_, hv, prep) = bind(c, sample, hv, state)?;
    let blocks: Vec<gpm_runtime::cavi::BlockPosterior> = state
        .q()?
        .into_iter()
        .map(gpm_runtime::cavi::BlockPosterior::Sparse)
        .collect();
    crate::infer::predict_variational_bound(c, &prep, sample, test, &hv, &blocks)
}

/// A shard's sampler: the model bound to the shard's rows at the fit's inducing inputs.
fn shard_sampler<'c>(
    c: &'c Checked,
    rows: &Data,
    hv: &HyperValues,
    state: &GlobalState,
) -> Result<gpm_runtime::gibbs::Sampler<'c>, InferError> {
    if state.learning.is_some() {
        return Err(InferError::Schedule(
            "sparse Gibbs over shards samples at fixed hyperparameter values: learn the \
             `learn()` ones first (a distributed CAVI fit) and settle them"
                .into(),
        ));
    }
    let (schedule, hv, prep) = bind(c, rows, hv, state)?;
    Ok(gpm_runtime::gibbs::Sampler::bound(
        schedule, rows, prep, &hv,
    )?)
}

/// What a distributed sparse Gibbs run's draws hold: per round of a sweep, the size `M` of the
/// block it draws and where its `v` goes in a draw row; the row's column names (each sparse
/// latent's `<name>_inducing`, as a single-process run names them).
#[derive(Debug, Clone, PartialEq)]
pub struct GibbsRounds {
    /// Per round, `M`.
    pub sizes: Vec<usize>,
    /// Per round, the offset of its `v` in a draw row.
    pub at: Vec<usize>,
    /// A draw row's column names.
    pub columns: Vec<String>,
}

/// The rounds of a distributed sparse Gibbs sweep, from the `sample` the fit started from
/// ([`start`]); an error saying what to do for a model whose sweep does not split into them.
pub fn gibbs_rounds(
    c: &Checked,
    sample: &Data,
    hv: &HyperValues,
    state: &GlobalState,
) -> Result<GibbsRounds, InferError> {
    let s = shard_sampler(c, sample, hv, state)?;
    let rounds = s.rounds()?;
    let (layout, at) = rounds.layout(&s);
    Ok(GibbsRounds {
        sizes: rounds.sizes(&s),
        at,
        columns: crate::infer::column_names(c, &layout),
    })
}

/// Where a round's random numbers come from: the run's seed, the chain, the sweep (from 0,
/// warm-up included) and the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundKey {
    /// The run's seed.
    pub seed: u64,
    /// The chain.
    pub chain: usize,
    /// The sweep, from 0.
    pub sweep: usize,
    /// The round within the sweep.
    pub round: usize,
}

/// A shard's chain as its previous round returned it, and the `v` the driver drew from that
/// round's statistics.
#[derive(Debug, Clone, Copy)]
pub struct Previous<'a> {
    /// What [`gibbs_round`] returned last for this shard and chain.
    pub chain: &'a [u8],
    /// What [`gibbs_draw`] returned last for this chain.
    pub inducing: &'a [f64],
}

impl RoundKey {
    /// The key as the words of a stream's key.
    pub fn words(&self) -> [u64; 4] {
        [
            self.seed,
            self.chain as u64,
            self.sweep as u64,
            self.round as u64,
        ]
    }
}

/// One shard's part of a round of sparse Gibbs: its chain (the model's start before the first
/// round, `previous = None`) moved by the driver's last `v`, and the round's block's FITC
/// statistics over its rows, whose first is at global position `first_row`: each row's random
/// numbers come from a stream keyed by the key and that position
/// ([`gpm_runtime::gibbs::RowStreams`]), so the draws do not depend on the partitioning.
/// Returns the statistics and the chain to keep.
pub fn gibbs_round(
    c: &Checked,
    rows: &Data,
    hv: &HyperValues,
    state: &GlobalState,
    previous: Option<Previous>,
    key: RoundKey,
    first_row: usize,
) -> Result<(InducingStats, Vec<u8>), InferError> {
    let s = shard_sampler(c, rows, hv, state)?;
    let rounds = s.rounds()?;
    let (mut chain, v) = match previous {
        Some(p) => (
            ShardChain::from_bytes(p.chain)?,
            Some(nalgebra::DVector::from_column_slice(p.inducing)),
        ),
        None => (s.shard_chain(), None),
    };
    let mut rows = RowStreams::new(key.words(), first_row as u64);
    let stats = s.shard_round(&rounds, &mut chain, key.round, v.as_ref(), &mut rows)?;
    Ok((stats, chain.to_bytes()))
}

/// The driver's part of a round: the shards' statistics summed in the order given and the
/// block's whitened inducing values drawn from them.
pub fn gibbs_draw(shards: &[InducingStats], key: RoundKey) -> Result<Vec<f64>, InferError> {
    let mut rng = stream(&key.words());
    Ok(InducingStats::sum(shards)?
        .draw(&mut rng)?
        .as_slice()
        .to_vec())
}

/// Predictions at `test` from a distributed sparse Gibbs run's draws: per chain, per kept
/// sweep, a row laid out as [`GibbsRounds`] says. The `sample` the fit started from stands for
/// the training data, as in [`predict`].
pub fn predict_draws(
    c: &Checked,
    sample: &Data,
    test: &Data,
    hv: &HyperValues,
    state: &GlobalState,
    chains: Vec<Vec<Vec<f64>>>,
    seed: u64,
) -> Result<(String, serde_json::Value), InferError> {
    let s = shard_sampler(c, sample, hv, state)?;
    let (layout, _) = s.rounds()?.layout(&s);
    let mut out = Vec::with_capacity(chains.len());
    for rows in chains {
        if let Some(r) = rows.iter().find(|r| r.len() != layout.width()) {
            return Err(InferError::Schedule(format!(
                "a draw of {} inducing values for a model with {}",
                r.len(),
                layout.width()
            )));
        }
        out.push(Chain::new(layout.clone(), rows, Default::default()));
    }
    let posterior = gpm_runtime::predict::Posterior::Draws {
        chains: &out,
        max_draws: crate::infer::PREDICT_DRAWS,
        seed,
    };
    crate::infer::predict_bound(c, s.prepared(), sample, test, hv, posterior)
}

/// A distributed sparse Gibbs run's `summary.json` parts, as a single-process run has them:
/// `variables` (each inducing value's summary over the chains) and `warnings` (chains that
/// have not mixed: the same thresholds and words, [`crate::warnings::mixing`]). `rows` holds
/// `chains × draws` rows of `columns.len()` values, chain after chain.
pub fn gibbs_summary(
    columns: &[String],
    rows: &[f64],
    chains: usize,
    draws: usize,
) -> Result<serde_json::Value, InferError> {
    if rows.len() != chains * draws * columns.len() {
        return Err(InferError::Schedule(format!(
            "{} values are not {chains} chains × {draws} draws × {} columns",
            rows.len(),
            columns.len()
        )));
    }
    let summaries = crate::infer::summaries_of(columns, columns.len(), rows, chains, draws);
    let warnings: Vec<String> = crate::warnings::mixing(&summaries, chains)
        .into_iter()
        .collect();
    Ok(serde_json::json!({
        "variables": crate::infer::variables_json(&summaries),
        "warnings": warnings,
    }))
}
