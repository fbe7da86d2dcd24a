//! The augmented model's joint density of one observation and its auxiliaries,
//! `log C + ℓ_aug(η, ω) + Σ_a log p(ω_a)` — the integrand the certificate integrates back to
//! the original likelihood — compiled with its derivatives in the predictors and in each `ω`:
//! what NUTS on the augmented model (`--augmented`, thesis §7.3) moves on. Only where every
//! auxiliary is continuous with a closed-form prior density (the scale mixtures' Gamma, Lévy,
//! inverse Gamma …; not the Pólya-Gamma, whose density is an alternating series, nor counts).

use crate::gradient::{Differ, PredictorGradient};
use crate::ids::PredictorId;
use crate::source::Source;
use crate::tape::Tape;
use gpm_augment::{Plan, Role, T};
use gpm_families::MixingLaw;

/// One auxiliary of the augmented joint.
#[derive(Debug, Clone)]
pub struct JointAux {
    /// The factor's slot that holds it.
    pub slot: usize,
    /// `∂(log C + ℓ_aug)/∂ω`.
    pub d_log_density: Tape,
    /// Its prior law (with a closed-form density and its derivative).
    pub law: &'static dyn MixingLaw,
    /// The law's parameters, over the factor's slots.
    pub params: Vec<Tape>,
}

/// The augmented joint density of a factor (module docs).
#[derive(Debug, Clone)]
pub struct AugmentedJoint {
    /// `log C + ℓ_aug(η, ω)` over the factor's slots (each auxiliary's slot holds its `ω`).
    pub log_density: Tape,
    /// Its derivative in each predictor the factor reads.
    pub d_predictors: Vec<PredictorGradient>,
    /// The auxiliaries, in the plan's order.
    pub aux: Vec<JointAux>,
}

/// The augmented joint of a plan (`Ok(None)`: the factor has no auxiliaries, so its original
/// log-density is its joint), or why there is none.
pub(crate) fn augmented_joint(
    plan: &Plan,
    syms: &[(Role, String)],
    slots: &[Source],
    predictors: (&[String], &[PredictorId]),
) -> Result<Option<AugmentedJoint>, String> {
    if let Some(why) = &plan.generic {
        return Err(format!("no augmentation ({why})"));
    }
    if !plan.collapsed.is_empty() {
        return Err("a predictor is drawn from its collapsed conditional".into());
    }
    if plan.aux.is_empty() {
        return Ok(None);
    }
    let slot_of = |r: Role, n: &str| syms.iter().position(|(r2, n2)| *r2 == r && n2 == n);
    // log C is free of the predictors and the auxiliaries: only ℓ_aug is differentiated (log C
    // can hold constants such as `sqrt(0)` whose derivative the CAS must not be asked for: its
    // simplifier, given `0/0`, proves anything).
    let aug = plan.augmented.to_tree();
    let differ = Differ::new(&aug, syms)?;
    let d_predictors = predictors
        .0
        .iter()
        .zip(predictors.1)
        .map(|(name, &pred)| {
            Ok(PredictorGradient {
                pred,
                slots: crate::gradient::predictor_slots(slots, pred),
                d1: differ.tape(&differ.derivative(differ.expr(), name))?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut aux = Vec::new();
    for a in &plan.aux {
        let (law, params) = a
            .prior_family
            .law()
            .ok_or_else(|| format!("`{}`'s prior has no named law", a.name))?;
        if law.is_count() || law.d_log_density(law.example(), 1.0).is_none() {
            return Err(format!(
                "`{}` ~ {} has no closed-form density",
                a.name,
                law.name()
            ));
        }
        aux.push(JointAux {
            slot: slot_of(Role::Aux, &a.name).ok_or("an auxiliary without a slot")?,
            d_log_density: differ.tape(&differ.derivative(differ.expr(), &a.name))?,
            law,
            params: params
                .iter()
                .map(|t| Tape::compile(t, &slot_of))
                .collect::<Result<_, _>>()?,
        });
    }
    let joint = T::add(vec![plan.log_c.clone(), aug]);
    Ok(Some(AugmentedJoint {
        log_density: Tape::compile(&joint, &slot_of)?,
        d_predictors,
        aux,
    }))
}
