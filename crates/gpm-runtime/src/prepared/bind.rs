//! Binding a schedule to data: each latent's sizes, each predictor's terms as explicit reads,
//! the Gaussian blocks with their priors formed once, each factor's slots. One function per
//! part, in the order [`Prepared::bind`] calls them.

use super::{
    inducing, normal_prior_at, Block, Blocks, PFactor, PPred, PTerm, Prepared, Read, Slot,
};
use crate::data::{Data, Value};
use crate::gaussian::GpBlock;
use crate::kernels::{kernel_matrix, HyperValues};
use crate::RuntimeError;
use gpm_ir::{Design, Dim, Shape};
use gpm_schedule::{BlockKind, BoundPrior, Schedule, Source};
use nalgebra::{DMatrix, DVector};

/// The latents as bound: name, length (matrices flattened column-major) and declared shape.
type Latents = Vec<(String, usize, Shape)>;

impl Prepared {
    pub(super) fn bind(
        schedule: &Schedule,
        data: &Data,
        hypers: &HyperValues,
        blocks_wanted: Blocks,
    ) -> Result<Self, RuntimeError> {
        let (latents, latent_dims) = bind_latents(schedule, data)?;
        let prior_data: Vec<Vec<Vec<f64>>> = schedule
            .priors
            .iter()
            .zip(&latents)
            .map(|(p, (_, len, _))| match p {
                BoundPrior::Normal { data: names, .. } => prior_columns(data, names, *len),
                _ => Ok(vec![]),
            })
            .collect::<Result<_, _>>()?;
        let preds = schedule
            .predictors
            .iter()
            .map(|p| bind_predictor(p, data, &latents))
            .collect::<Result<Vec<_>, _>>()?;
        let with_blocks = !matches!(blocks_wanted, Blocks::None);
        let memory = if with_blocks {
            crate::memory::check_blocks(schedule, data, &latent_dims)?
        } else {
            Default::default()
        };
        let bound = BlockBinding {
            schedule,
            data,
            hypers,
            latents: &latents,
            prior_data: &prior_data,
        };
        let FormedBlocks {
            blocks,
            spec_blocks,
            jitter,
        } = bound.blocks(blocks_wanted)?;
        let collapsed_latents: std::collections::BTreeSet<usize> = schedule
            .blocks
            .iter()
            .filter(|b| b.collapsed)
            .flat_map(|b| b.latents.iter().map(|l| l.0))
            .collect();
        let factors = schedule
            .factors
            .iter()
            .map(|fp| bind_factor(fp, schedule, data, hypers, &latents))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Prepared {
            latents,
            latent_dims,
            preds,
            blocks,
            factors,
            jitter,
            hypers: hypers.scalars.clone(),
            collapsed_latents,
            spec_blocks,
            prior_data,
            memory,
        })
    }
}

/// Each latent's name, length and shape, and its sizes read from the data.
fn bind_latents(
    schedule: &Schedule,
    data: &Data,
) -> Result<(Latents, Vec<Vec<usize>>), RuntimeError> {
    let mut latents = Vec::new();
    let mut latent_dims = Vec::new();
    for z in &schedule.latents {
        let dims = match &z.shape {
            Shape::Scalar => vec![],
            Shape::Vector(n) => vec![dim(n, data)?],
            Shape::Matrix(r, c) => vec![dim(r, data)?, dim(c, data)?],
        };
        latents.push((z.name.clone(), dims.iter().product(), z.shape.clone()));
        latent_dims.push(dims);
    }
    Ok((latents, latent_dims))
}

/// A predictor with each term's read of its latent made explicit.
fn bind_predictor(
    p: &gpm_ir::Predictor,
    data: &Data,
    latents: &Latents,
) -> Result<PPred, RuntimeError> {
    let n = dim(&p.len, data)?;
    let mut terms = Vec::new();
    for t in &p.terms {
        let scale = match &t.scale_by {
            None => None,
            Some(sym) => Some(covariate(data, sym, n)?),
        };
        let li = latents
            .iter()
            .position(|(name, _, _)| *name == t.latent)
            .ok_or_else(|| RuntimeError::Inconsistent(format!("unknown latent {}", t.latent)))?;
        terms.push(PTerm {
            latent: li,
            coef: t.coef,
            read: bind_read(t, data, n, latents[li].1)?,
            scale,
        });
    }
    Ok(PPred {
        name: p.name.clone(),
        n,
        terms,
        offset: p.offset,
    })
}

/// How a term reads its latent (`len` entries) at each of `n` observations.
fn bind_read(t: &gpm_ir::Term, data: &Data, n: usize, len: usize) -> Result<Read, RuntimeError> {
    Ok(match &t.design {
        Design::Identity => Read::Identity,
        Design::Broadcast => Read::Broadcast,
        Design::Matrix { data: x } => Read::Matrix(
            data.matrix(x)
                .cloned()
                .ok_or_else(|| RuntimeError::BadData(format!("`{x}` is not a matrix")))?,
        ),
        Design::Gather { index } => Read::Gather(
            data.vector(index)
                .ok_or_else(|| RuntimeError::MissingData(format!("no index vector `{index}`")))?
                .iter()
                .map(|g| *g as usize - 1)
                .collect(),
        ),
        Design::Column { column } => Read::Column(*column, n),
        // One entry at every observation: a gather with a constant index.
        Design::Entry { index } => {
            if *index >= len {
                return Err(RuntimeError::BadData(format!(
                    "`{}[{}]` is read, but `{}` has {len} entries with these data",
                    t.latent,
                    index + 1,
                    t.latent
                )));
            }
            Read::Gather(vec![*index; n])
        }
    })
}

/// The blocks formed: every runtime block, each schedule block's range of them, and the largest
/// jitter a GP prior needed.
struct FormedBlocks {
    blocks: Vec<Block>,
    spec_blocks: Vec<std::ops::Range<usize>>,
    jitter: f64,
}

/// What forming the blocks reads.
struct BlockBinding<'a> {
    schedule: &'a Schedule,
    data: &'a Data,
    hypers: &'a HyperValues,
    latents: &'a Latents,
    prior_data: &'a [Vec<Vec<f64>>],
}

impl BlockBinding<'_> {
    /// The blocks as the schedule lists them: a GP block per column, a dense block per group
    /// of normal latents (none for test data).
    fn blocks(&self, wanted: Blocks) -> Result<FormedBlocks, RuntimeError> {
        let mut blocks = Vec::new();
        let mut spec_blocks = Vec::new();
        let mut jitter: f64 = 0.0;
        let mut sparse_seen = 0usize;
        for spec in &self.schedule.blocks {
            let first = blocks.len();
            let given = match wanted {
                Blocks::None => {
                    spec_blocks.push(first..first);
                    continue;
                }
                Blocks::Formed(z) => z,
                Blocks::Streaming => None,
            };
            match spec.kind {
                BlockKind::FullGp | BlockKind::SparseGp => {
                    let streaming = matches!(wanted, Blocks::Streaming);
                    let li = spec.latents[0].0;
                    let (gp_blocks, added) =
                        self.gp_blocks(li, given, &mut sparse_seen, streaming)?;
                    jitter = jitter.max(added);
                    blocks.extend(gp_blocks);
                }
                BlockKind::Dense => blocks.push(self.dense_block(&spec.latents)?),
            }
            spec_blocks.push(first..blocks.len());
        }
        Ok(FormedBlocks {
            blocks,
            spec_blocks,
            jitter,
        })
    }

    /// A GP latent's blocks, one per column, with the jitter its prior needed. The `k`-th
    /// sparse GP takes the `k`-th given inducing inputs (`sparse_seen` counts them).
    fn gp_blocks(
        &self,
        li: usize,
        given_inducing: Option<&[DMatrix<f64>]>,
        sparse_seen: &mut usize,
        streaming: bool,
    ) -> Result<(Vec<Block>, f64), RuntimeError> {
        let (schedule, data, hypers) = (self.schedule, self.data, self.hypers);
        let z = &schedule.latents[li];
        let BoundPrior::Gp {
            inputs,
            kernel,
            mean,
            inducing,
            alpha,
        } = &schedule.priors[li]
        else {
            return Err(RuntimeError::Inconsistent(format!(
                "the GP block of `{}` has no GP prior",
                z.name
            )));
        };
        let x = data
            .inputs(inputs)
            .ok_or_else(|| RuntimeError::MissingData(format!("no inputs `{inputs}`")))?;
        let cols = match &z.shape {
            Shape::Matrix(_, c) => dim(c, data)?,
            _ => 1,
        };
        let mean = hypers.eval(mean)?;
        let Some(ind) = inducing else {
            let k = kernel_matrix(kernel, &x, &x, hypers)?;
            let gp = GpBlock::new(k, mean)?;
            let jitter = gp.jitter;
            let blocks = (0..cols)
                .map(|c| Block::Gp {
                    latent: li,
                    column: c,
                    gp: gp.clone(),
                })
                .collect();
            return Ok((blocks, jitter));
        };
        let given = given_inducing.map(|z| z.get(*sparse_seen));
        *sparse_seen += 1;
        let sp = inducing::bind_sparse(
            &inducing::SparseBinding {
                latent: &z.name,
                inputs,
                x: &x,
                data,
                kernel,
                hypers,
                mean,
                alpha: *alpha,
                streaming,
            },
            ind,
            given,
        )?;
        let blocks = (0..cols)
            .map(|c| Block::Sparse {
                latent: li,
                column: c,
                sp: sp.clone(),
                inputs: std::sync::Arc::clone(&x),
            })
            .collect();
        Ok((blocks, sp.jitter))
    }

    /// One dense block of the normal latents `ids`: their priors' means and sds, stacked.
    fn dense_block(&self, ids: &[gpm_schedule::LatentId]) -> Result<Block, RuntimeError> {
        let (mut parts, mut pm, mut ps) = (Vec::new(), Vec::new(), Vec::new());
        for l in ids {
            let z = &self.schedule.latents[l.0];
            let BoundPrior::Normal {
                mean,
                scale,
                data_slot,
                ..
            } = &self.schedule.priors[l.0]
            else {
                return Err(RuntimeError::Inconsistent(format!(
                    "the dense block holds `{}`, which has no normal prior",
                    z.name
                )));
            };
            let len = self.latents[l.0].1;
            let columns = &self.prior_data[l.0];
            let (m, s) = normal_prior_at(self.hypers, (mean, scale), *data_slot, columns, len)?;
            if let Some(bad) = s.iter().chain(&m).find(|v| v.is_nan()) {
                return Err(RuntimeError::BadData(format!(
                    "the prior of `{}` evaluates to {bad} at some coordinate",
                    z.name
                )));
            }
            if let Some(bad) = s.iter().find(|v| !(**v > 0.0)) {
                return Err(RuntimeError::BadData(format!(
                    "the prior scale of `{}` is {bad}, not positive",
                    z.name
                )));
            }
            parts.push((l.0, pm.len(), len));
            pm.extend(m);
            ps.extend(s);
        }
        Ok(Block::Dense {
            parts,
            prior_mean: DVector::from_vec(pm),
            prior_sd: DVector::from_vec(ps),
        })
    }
}

/// A factor's slots bound to predictors, data, hyperparameters and auxiliaries, and for a
/// categorical factor its latent, labels (0-based) and number of classes.
fn bind_factor(
    fp: &gpm_schedule::FactorProgram,
    schedule: &Schedule,
    data: &Data,
    hypers: &HyperValues,
    latents: &Latents,
) -> Result<PFactor, RuntimeError> {
    let n = dim(&fp.n, data)?;
    let mut slots = Vec::new();
    for s in &fp.slots {
        slots.push(match s {
            Source::Predictor(p) => Slot::Pred(p.0),
            Source::Data(d) => datum_slot(data, d)?,
            Source::Hyper(h) if hypers.scalar(*h).is_some() => Slot::Hyper(h.0),
            Source::Hyper(h) => {
                return Err(RuntimeError::MissingData(format!(
                    "no value for the hyperparameter `{}`",
                    schedule.hyper_decls[h.0].name
                )))
            }
            Source::Aux(j) => Slot::Aux(*j),
        });
    }
    let categorical = match &fp.categorical {
        Some(c) => {
            let li = latents
                .iter()
                .position(|l| l.0 == c.latent)
                .ok_or_else(|| RuntimeError::Inconsistent(format!("no latent `{}`", c.latent)))?;
            data.vector(&c.label).map(|y| {
                (
                    li,
                    y.iter().map(|v| (*v as usize).saturating_sub(1)).collect(),
                    latents[li].1 / y.len().max(1),
                )
            })
        }
        None => None,
    };
    Ok(PFactor {
        n,
        slots,
        categorical,
    })
}

/// The data a `normal` prior reads, one value per coordinate (a scalar datum repeated).
fn prior_columns(data: &Data, names: &[String], len: usize) -> Result<Vec<Vec<f64>>, RuntimeError> {
    names
        .iter()
        .map(|n| match (data.vector(n), data.scalar(n)) {
            (Some(v), _) if v.len() == len => Ok(v.to_vec()),
            (Some(v), _) => Err(RuntimeError::BadData(format!(
                "a prior reads `{n}` at each of {len} coordinates, but it has {} values",
                v.len()
            ))),
            (None, Some(x)) => Ok(vec![x; len]),
            (None, None) => Err(RuntimeError::MissingData(format!(
                "a prior reads `{n}`, which has no value"
            ))),
        })
        .collect()
}

fn dim(d: &Dim, data: &Data) -> Result<usize, RuntimeError> {
    match d {
        Dim::Const(n) => Ok(*n),
        Dim::Var(v) => data
            .scalar(v)
            .map(|x| x as usize)
            .ok_or_else(|| RuntimeError::MissingData(format!("no value for the size `{v}`"))),
    }
}

/// A term's per-observation covariate (a vector datum, a matrix column or a scalar), `n` long.
fn covariate(data: &Data, symbol: &str, n: usize) -> Result<Vec<f64>, RuntimeError> {
    let v = match datum_slot(data, &gpm_schedule::DataRef::from_symbol(symbol))? {
        Slot::Vector(v) => v,
        Slot::Const(x) => vec![x; n],
        _ => unreachable!("a datum binds to a vector or a constant"),
    };
    if v.len() != n {
        return Err(RuntimeError::BadData(format!(
            "the covariate `{symbol}` has {} entries, the predictor {n}",
            v.len()
        )));
    }
    Ok(v)
}

/// A datum a slot reads, bound: a vector's entries or a matrix column as a vector, a scalar as
/// a constant.
fn datum_slot(data: &Data, d: &gpm_schedule::DataRef) -> Result<Slot, RuntimeError> {
    Ok(match (d.column, data.values.get(&d.name)) {
        (Some(c), Some(Value::Matrix(m))) if c < m.ncols() => {
            Slot::Vector(m.column(c).iter().copied().collect())
        }
        (Some(c), Some(Value::Matrix(m))) => {
            return Err(RuntimeError::BadData(format!(
                "column {} of `{}` is read, but it has columns 1..{}",
                c + 1,
                d.name,
                m.ncols()
            )))
        }
        (None, Some(Value::Scalar(x))) => Slot::Const(*x),
        (None, Some(Value::Vector(v))) => Slot::Vector(v.clone()),
        _ => {
            return Err(RuntimeError::MissingData(format!(
                "no per-observation datum `{}`",
                d.symbol()
            )))
        }
    })
}
