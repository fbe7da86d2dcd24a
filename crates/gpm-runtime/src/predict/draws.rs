//! Prediction from Gibbs draws: per kept draw, every GP column's values at the test inputs are
//! drawn from its predictive marginals given the draw ([`crate::block::Predictive`]; one
//! marginal draw per point), the other latents are reused as drawn, and the test predictors and
//! likelihoods follow ([`super::accumulate`]).

use super::accumulate::DrawAccumulator;
use super::{Prediction, Setting, TestBlock};
use crate::block::{Belief, GpAtTest, Predictive};
use crate::draws::{Layout, VarKind};
use crate::gibbs::Chain;
use crate::kernels::{kernel_matrix, HyperValues};
use crate::prepared::{Block, Prepared};
use crate::RuntimeError;
use gpm_schedule::LatentId;
use nalgebra::DVector;
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal};

pub(super) fn predict(
    setting: &Setting,
    hypers: &HyperValues,
    chains: &[Chain],
    max_draws: usize,
    seed: u64,
) -> Result<Prediction, RuntimeError> {
    let (schedule, tr, te, at, test, labels) = setting.parts();
    let Some(layout) = chains.first().map(|c| &c.layout) else {
        return Err(RuntimeError::Settings("no chains to predict from".into()));
    };
    let offsets = latent_offsets(tr, layout)?;
    // Sampled hyperparameters: (id, offset in a row, entries: 0 for a scalar).
    let hyper_cols: Vec<(usize, usize, usize)> = layout
        .vars
        .iter()
        .filter_map(|v| match v.kind {
            VarKind::Hyper(h) => Some((h.0, v.offset, v.dims.first().copied().unwrap_or(0))),
            _ => None,
        })
        .collect();
    let first_v = inducing_offsets(tr, layout)?;
    // The draws to use.
    let all: Vec<&Vec<f64>> = chains.iter().flat_map(|c| c.rows.iter()).collect();
    let step = super::draw_step(all.len(), max_draws);
    let used: Vec<&Vec<f64>> = all.iter().step_by(step).copied().collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    // New responses y* have a stream of their own: the test latents' draws stay as they were.
    let mut response_rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x7965_725f_7374_6172);
    let mut acc = DrawAccumulator::new(schedule, te, labels, used.len());
    for row in &used {
        let mut hv = hypers.clone();
        for &(k, col, len) in &hyper_cols {
            match len {
                0 => hv.scalars[k] = row[col],
                n => hv.vectors[k] = row[col..col + n].to_vec(),
            }
        }
        // Test-side latents: the ones not indexed by inputs are reused as drawn.
        let mut lat: Vec<DVector<f64>> = te
            .latents
            .iter()
            .map(|(_, n, _)| DVector::zeros(*n))
            .collect();
        for (k, (first, len)) in offsets
            .iter()
            .enumerate()
            .filter_map(|(k, o)| o.map(|o| (k, o)))
        {
            if te.latents[k].1 == len {
                for j in 0..len {
                    lat[k][j] = row[first + j];
                }
            }
        }
        // Full GP columns first, then sparse ones (the order of the random numbers).
        for (bi, b) in tr.blocks.iter().enumerate() {
            let (Block::Gp { latent, column, gp }, TestBlock::Gp { at: placed, .. }) =
                (b, &at.blocks[bi])
            else {
                continue;
            };
            let rows = gp.len();
            let (first, _) = offsets[*latent].expect("a full GP's latent is in the draws");
            let f = DVector::from_fn(rows, |i, _| row[first + column * rows + i]);
            let m = match resampled(&at.blocks[bi], &hyper_cols, &hv)? {
                // With sampled kernel hyperparameters: the block placed at this draw's values.
                Some(prior) => {
                    let TestBlock::Gp { kernel, inputs, .. } = &at.blocks[bi] else {
                        unreachable!()
                    };
                    GpAtTest::new(&prior, kernel, &inputs.0, &inputs.1, &hv)?
                        .predict(Belief::Draw(&f))?
                }
                None => placed.predict(Belief::Draw(&f))?,
            };
            draw_into(&mut lat[*latent], *column, &m, &mut rng);
        }
        for (bi, b) in tr.blocks.iter().enumerate() {
            let Block::Sparse { sp, .. } = b else {
                continue;
            };
            let v = DVector::from_fn(sp.m(), |k, _| row[first_v[bi] + k]);
            let m = sparse_at_test(tr, at, bi, sp, &v, &hyper_cols, &hv)?;
            let Block::Sparse { latent, column, .. } = b else {
                unreachable!()
            };
            draw_into(&mut lat[*latent], *column, &m, &mut rng);
        }
        acc.add_draw(schedule, te, test, labels, &lat, &hv, &mut response_rng);
    }
    Ok(acc.finish(te, labels))
}

/// Offset and length of each latent in a draw row. A sparse GP's values at the training
/// inputs are not read (its values at the test inputs are drawn from its `v`): a distributed
/// run's draws hold its `v` only.
#[allow(clippy::type_complexity)]
fn latent_offsets(
    tr: &Prepared,
    layout: &Layout,
) -> Result<Vec<Option<(usize, usize)>>, RuntimeError> {
    let mut offsets = Vec::new();
    for (li, (name, len, _)) in tr.latents.iter().enumerate() {
        let only_sparse = tr.blocks.iter().all(|b| match b {
            Block::Sparse { .. } => true,
            Block::Gp { latent, .. } => *latent != li,
            Block::Dense { parts, .. } => parts.iter().all(|p| p.0 != li),
        });
        match layout.find(VarKind::Latent(LatentId(li))) {
            Some(var) => offsets.push(Some((var.offset, *len))),
            None if only_sparse => offsets.push(None),
            None => return Err(RuntimeError::Inconsistent(format!("no draws for `{name}`"))),
        }
    }
    Ok(offsets)
}

/// Where each sparse block's whitened inducing values start in a draw row (0 for the others).
fn inducing_offsets(tr: &Prepared, layout: &Layout) -> Result<Vec<usize>, RuntimeError> {
    let mut first_v = vec![0; tr.blocks.len()];
    for (bi, b) in tr.blocks.iter().enumerate() {
        if let Block::Sparse {
            latent, column, sp, ..
        } = b
        {
            first_v[bi] = layout
                .find(VarKind::Inducing(LatentId(*latent)))
                .map(|v| v.offset + column * sp.m())
                .ok_or_else(|| {
                    RuntimeError::Inconsistent(format!(
                        "no inducing draws for `{}`",
                        tr.latents[*latent].0
                    ))
                })?;
        }
    }
    Ok(first_v)
}

/// A sparse column's predictive marginals at the test inputs given a draw of its whitened
/// inducing values `v`: with sampled kernel hyperparameters, its prior and test features at
/// the draw's values.
#[allow(clippy::too_many_arguments)]
fn sparse_at_test(
    tr: &Prepared,
    at: &super::TestBlocks,
    bi: usize,
    sp: &crate::sparse::SparseGp,
    v: &DVector<f64>,
    hyper_cols: &[(usize, usize, usize)],
    hv: &HyperValues,
) -> Result<crate::block::Marginals, RuntimeError> {
    Ok(match &at.blocks[bi] {
        // With sampled kernel hyperparameters: the prior and test features at this
        // draw's values.
        TestBlock::Sparse {
            kernel, xs, reads, ..
        } if any_sampled(reads, hyper_cols) => {
            let sp2 = crate::sparse::SparseGp::new(kernel, hv, sp.z.clone(), sp.mean)?;
            let (phi, kt) = sp2.features(xs)?;
            crate::block::SparseColumn {
                sp: &sp2,
                phi: &phi,
                kt: &kt,
            }
            .predict(Belief::Draw(v))?
        }
        _ => at.marginals(tr, bi, Belief::Draw(v))?,
    })
}

/// Whether the chains sampled any of the hyperparameters a prior reads.
fn any_sampled(reads: &[gpm_schedule::HyperId], hyper_cols: &[(usize, usize, usize)]) -> bool {
    reads.iter().any(|h| hyper_cols.iter().any(|c| c.0 == h.0))
}

/// A GP block's prior at this draw's hyperparameters, when the chains sampled any it reads.
fn resampled(
    tb: &TestBlock,
    hyper_cols: &[(usize, usize, usize)],
    hv: &HyperValues,
) -> Result<Option<crate::gaussian::GpBlock>, RuntimeError> {
    let TestBlock::Gp {
        kernel,
        mean,
        inputs,
        reads,
        ..
    } = tb
    else {
        return Ok(None);
    };
    if !any_sampled(reads, hyper_cols) {
        return Ok(None);
    }
    let x = &inputs.0;
    Ok(Some(crate::gaussian::GpBlock::new(
        kernel_matrix(kernel, x, x, hv)?,
        hv.eval(mean)?,
    )?))
}

/// One draw of a column's test values from its marginals: `f*_i = m_i + √v_i z_i`.
fn draw_into(
    latent: &mut DVector<f64>,
    column: usize,
    m: &crate::block::Marginals,
    rng: &mut rand_chacha::ChaCha8Rng,
) {
    let rows = m.mean.len();
    for i in 0..rows {
        let z: f64 = StandardNormal.sample(rng);
        latent[column * rows + i] = m.mean[i] + m.var[i].sqrt() * z;
    }
}
