//! The Gaussian blocks of a model, decided once and data-free: one block per GP latent (a matrix
//! latent's columns are independent GPs and are drawn column by column), and the independent
//! `normal` latents in one joint dense block — split in two when some of them are read by a
//! collapsed predictor, because those are updated in a phase of their own (Gibbs: from the
//! collapsed conditional; CAVI: from the double bound, whose weight is exact only with the other
//! latents held fixed).

use crate::ids::{BlockId, LatentId};
use gpm_ir::{LatentPrior, Model, Shape};
use serde::Serialize;
use std::collections::BTreeSet;

/// What kind of Gaussian block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// A full GP: `N × N` prior covariance, factored once per kernel value.
    FullGp,
    /// A sparse GP with inducing points: the latent values are never formed jointly.
    SparseGp,
    /// Independent `normal` latents drawn jointly given the likelihood's curvature.
    Dense,
}

/// One Gaussian block of the schedule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockSpec {
    /// Its id (its position in [`crate::Schedule::blocks`]).
    pub id: BlockId,
    /// Its kind.
    pub kind: BlockKind,
    /// The latents it holds (one for a GP block).
    pub latents: Vec<LatentId>,
    /// A matrix GP latent: one independent GP per column, drawn one after the other.
    pub per_column: bool,
    /// Whether a collapsed predictor reads it (it is then updated in the collapsed phase).
    pub collapsed: bool,
}

/// The latents read by the collapsed predictors.
pub(crate) fn collapsed_latents(model: &Model, collapsed: &BTreeSet<String>) -> BTreeSet<LatentId> {
    model
        .predictors
        .iter()
        .filter(|p| collapsed.contains(&p.name))
        .flat_map(|p| p.terms.iter())
        .filter_map(|t| model.latents.iter().position(|z| z.name == t.latent))
        .map(LatentId)
        .collect()
}

/// The blocks in the order the runtime forms and a Gibbs sweep visits them: GP latents in
/// declaration order, then the dense block(s), the collapsed part first.
pub(crate) fn blocks(model: &Model, collapsed: &BTreeSet<LatentId>) -> Vec<BlockSpec> {
    let mut out = Vec::new();
    let mut normal = Vec::new();
    for (li, z) in model.latents.iter().enumerate() {
        match &z.prior {
            LatentPrior::Gp { inducing, .. } => out.push(BlockSpec {
                id: BlockId(out.len()),
                kind: if inducing.is_some() {
                    BlockKind::SparseGp
                } else {
                    BlockKind::FullGp
                },
                latents: vec![LatentId(li)],
                per_column: matches!(z.shape, Shape::Matrix(..)),
                collapsed: collapsed.contains(&LatentId(li)),
            }),
            LatentPrior::Normal { .. } => normal.push(LatentId(li)),
        }
    }
    let (head, tail): (Vec<LatentId>, Vec<LatentId>) =
        normal.iter().partition(|l| collapsed.contains(l));
    let groups = if head.is_empty() || tail.is_empty() {
        vec![normal]
    } else {
        vec![head, tail]
    };
    for latents in groups.into_iter().filter(|g| !g.is_empty()) {
        let is_collapsed = latents.iter().any(|l| collapsed.contains(l));
        out.push(BlockSpec {
            id: BlockId(out.len()),
            kind: BlockKind::Dense,
            latents,
            per_column: false,
            collapsed: is_collapsed,
        });
    }
    out
}
