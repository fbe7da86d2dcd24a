//! Typed indices into the model and the schedule. After the schedule is built nothing is found
//! again by name: a latent is a [`LatentId`], a hyperparameter a [`HyperId`], and so on.

use serde::Serialize;

/// A latent variable: its index in `gpm_ir::Model::latents`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct LatentId(pub usize);

/// A hyperparameter: its index in `gpm_ir::Model::hypers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct HyperId(pub usize);

/// A likelihood factor: its index in [`crate::schedule::Schedule::factors`] (the same as in the model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FactorId(pub usize);

/// A linear predictor: its index in `gpm_ir::Model::predictors` (and in the runtime's bound
/// predictors, which follow the model's order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct PredictorId(pub usize);

/// A Gaussian block: its index in [`crate::schedule::Schedule::blocks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct BlockId(pub usize);
