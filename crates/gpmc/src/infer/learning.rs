//! Hyperparameters declared `learn(...)`, learned before a run as the schedule says: type-II
//! maximum likelihood on the CAVI ELBO by gradient steps, and a logistic-softmax's class scales
//! by CAVI's closed-form step.

use super::InferError;
use gpm_runtime::kernels::HyperValues;

/// The schedule's learning phase ([`gpm_schedule::Learning`]): type-II maximum likelihood for
/// the hyperparameters declared `learn(init)` — the CAVI ELBO maximised over their logarithms,
/// then a logistic-softmax's class scales in closed form. Models whose augmentation has no
/// closed-form CAVI yet keep the initial values, and the report says so.
pub(super) fn learn_hypers(
    schedule: &gpm_schedule::Schedule,
    data: &gpm_runtime::data::Data,
    hv: HyperValues,
    hypers: &mut [(String, f64, String)],
) -> Result<HyperValues, InferError> {
    let hv = learn_by_gradient(schedule, data, hv, hypers)?;
    learn_class_scales(schedule, data, hv, hypers)
}

/// The class scales CAVI learns in closed form ([`gpm_schedule::Learning::class_scales`]): one
/// CAVI run at the other hyperparameters' values, whose scales the methods then use.
fn learn_class_scales(
    schedule: &gpm_schedule::Schedule,
    data: &gpm_runtime::data::Data,
    mut hv: HyperValues,
    hypers: &mut [(String, f64, String)],
) -> Result<HyperValues, InferError> {
    if schedule.learning.class_scales.is_empty() {
        return Ok(hv);
    }
    let config = gpm_runtime::cavi::CaviConfig {
        tolerance: 1e-10,
        max_iter: 1000,
    };
    let r = gpm_runtime::cavi::run(schedule, data, &hv, &config)?;
    for (id, theta) in r.class_scales {
        if let Some(x) = hypers.get_mut(id.0) {
            x.1 = theta[0];
            x.2 = format!(
                "learned by CAVI in closed form (thesis §7.4.3, ELBO {:.4}), normalised to mean 1: {}",
                r.elbo.last().copied().unwrap_or(f64::NAN),
                theta
                    .iter()
                    .map(|t| format!("{t:.4}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        hv.set_vector(id, theta);
    }
    Ok(hv)
}

/// The `learn()` hyperparameters type-II ML learns along the ELBO's gradient
/// ([`gpm_schedule::Learning::by_gradient`]; those it cannot learn keep their initial values).
fn learn_by_gradient(
    schedule: &gpm_schedule::Schedule,
    data: &gpm_runtime::data::Data,
    hv: HyperValues,
    hypers: &mut [(String, f64, String)],
) -> Result<HyperValues, InferError> {
    use gpm_runtime::learn::Coord;
    let learning = &schedule.learning;
    for id in &learning.unavailable {
        if let Some((_, _, how)) = hypers.get_mut(id.0) {
            *how = "initial value: type-II ML needs closed-form CAVI, not yet available for this augmentation".into();
        }
    }
    let mut coords = Vec::new();
    for &id in &learning.by_gradient {
        if schedule.hyper_steps[id.0].scalar {
            coords.push(Coord::Scalar(id));
        } else {
            let n = hv.vector(id).map_or(0, |v| v.len());
            coords.extend((0..n).map(|k| Coord::Entry(id, k)));
        }
    }
    let learned_here = |k: usize| {
        coords
            .iter()
            .any(|c| matches!(c, Coord::Scalar(x) | Coord::Entry(x, _) if x.0 == k))
    };
    if coords.is_empty() {
        return Ok(hv);
    }
    let learned =
        gpm_runtime::learn::learn(schedule, data, &hv, &coords, learning.max_evaluations)?;
    for (k, (_, v, how)) in hypers.iter_mut().enumerate() {
        let id = gpm_schedule::HyperId(k);
        if let Some(x) = learned.hypers.scalar(id) {
            if coords.contains(&Coord::Scalar(id)) {
                *v = x;
                *how = format!(
                    "learned by type-II ML (ELBO {:.4} after {} evaluations, {} CAVI iterations)",
                    learned.fit.elbo.last().copied().unwrap_or(f64::NAN),
                    learned.evaluations,
                    learned.iterations
                );
            }
        }
        if let Some(vs) = learned.hypers.vector(id).filter(|_| learned_here(k)) {
            *v = vs[0];
            *how = format!("learned by type-II ML (ARD, values {vs:?})");
        }
        if learned.capped && learned_here(k) {
            how.push_str(crate::warnings::CAPPED);
        }
    }
    Ok(learned.hypers)
}
