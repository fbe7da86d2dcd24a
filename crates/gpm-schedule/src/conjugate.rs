//! Hyperparameters with a Gamma prior conjugate to every factor that reads them: their
//! `Gamma(shape + Σ k, rate + Σ q)` conditional, compiled to tapes.

use crate::error::ScheduleError;
use crate::ids::HyperId;
use crate::program::{FactorProgram, HyperProgram};
use crate::source::Source;
use crate::tape::Tape;
use crate::trees::family_trees;
use gpm_augment::{Plan, Role};
use gpm_ir::Model;
use std::collections::BTreeSet;

/// Hyperparameters read by a latent block's prior (kernel, mean, scale).
fn latent_hypers(model: &Model) -> BTreeSet<String> {
    model
        .latents
        .iter()
        .flat_map(|z| z.prior.hypers())
        .collect()
}

pub(crate) fn conjugate_hypers(
    model: &Model,
    factors: &[FactorProgram],
    plans: &[Plan],
) -> Result<Vec<HyperProgram>, ScheduleError> {
    let in_latents = latent_hypers(model);
    let mut out = Vec::new();
    for (hi, h) in model.hypers.iter().enumerate() {
        let gpm_ir::HyperKind::Prior { prior } = &h.kind else {
            continue;
        };
        // Only an untruncated Gamma prior has the closed-form Gamma conditional.
        let Some((shape, rate)) = prior.conjugate_gamma() else {
            continue;
        };
        if in_latents.contains(&h.name) || h.shape != gpm_ir::Shape::Scalar {
            continue;
        }
        // Auxiliary variables must not depend on it (their conditionals would change).
        let in_aux = plans.iter().any(|p| {
            p.aux.iter().any(|a| {
                family_trees(&a.conditional)
                    .iter()
                    .any(|t| t.mentions(Role::Hyper, Some(&h.name)))
            })
        });
        if in_aux {
            continue;
        }
        let mut stats = Vec::new();
        let mut ok = true;
        for (fi, fp) in factors.iter().enumerate() {
            if !model.factors[fp.factor].hypers.contains(&h.name) {
                continue;
            }
            match gpm_augment::conjugate::gamma_stats(model, fp.factor, &h.name) {
                Some(st) => {
                    let slot_of = |r: Role, n: &str| {
                        fp.slots.iter().position(|s| match (r, s) {
                            (Role::Predictor, Source::Predictor(p)) => {
                                model.predictors[p.0].name == n
                            }
                            (Role::Data, Source::Data(d)) => d.symbol() == n,
                            (Role::Hyper, Source::Hyper(x)) => model.hypers[x.0].name == n,
                            _ => false,
                        })
                    };
                    let err = |message: String| ScheduleError::Factor {
                        factor: fp.factor,
                        message,
                    };
                    stats.push((
                        fi,
                        Tape::compile(&st.k, &slot_of).map_err(err)?,
                        Tape::compile(&st.q, &slot_of).map_err(err)?,
                    ));
                }
                None => ok = false,
            }
        }
        if ok && !stats.is_empty() {
            out.push(HyperProgram {
                hyper: HyperId(hi),
                name: h.name.clone(),
                shape,
                rate,
                prior: prior.clone(),
                stats,
            });
        }
    }
    Ok(out)
}
