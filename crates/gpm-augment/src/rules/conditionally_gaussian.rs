//! A factor no rule augments may still be Gaussian in one of its predictors given the others:
//! `normal(η1, exp(η2))` is `−η2 − (y − η1)² e^(−2η2)/2`, quadratic in `η1` with curvature
//! `e^(−2η2)`. Its latents are then drawn exactly from that Gaussian conditional — the other
//! predictors at their current values, as thesis §7.2.1 draws a collapsed predictor — and only
//! the others take the generic update. Without this split the generic update moves every latent
//! of the factor as one block: on brms's heteroscedastic approximate GP (a mean and a log-scale
//! with 10 basis weights each) that block mixed at bulk ESS 6-13 of 4 000 draws.

use super::{collapse_poly, signs_of, Probe, Refusal};
use crate::plan::Plan;
use crate::poly::Poly;
use crate::tree::T;
use gpm_ir::{FactorForm, Model};

/// The plan of a factor no rule augments ([`Plan::generic`]), with the predictors in which its
/// log-density is Gaussian (given the others) drawn from that conditional: each must read
/// latents that no other predictor of a factor without augmentation reads (`generic`: those
/// factors' indices; an augmented factor adds its Gaussian terms given its auxiliaries to the
/// same conditional), its curvature must be negative everywhere, and at least one predictor must
/// be left to the generic update.
pub fn generic_plan(model: &Model, refusal: &Refusal, generic: &[usize]) -> Plan {
    let mut plan = Plan::generic(refusal);
    let k = refusal.factor;
    let f = &model.factors[k];
    let FactorForm::LogDensity { log_density } = &f.form else {
        return plan;
    };
    if f.predictors.len() < 2 {
        return plan;
    }
    let ell = T::from_sx(log_density);
    let signs = signs_of(model);
    let gaussian: Vec<(String, Poly)> = f
        .predictors
        .iter()
        .filter(|p| reads_alone(model, k, p, generic))
        .filter_map(|p| {
            let poly = collapse_poly(&ell, p, &signs)?;
            let quad = poly.quad.get(&(p.clone(), p.clone()))?;
            let probe = Probe::new(model, &[quad], 12, 0xc0de ^ k as u64);
            probe
                .sign_ok(&T::neg(quad.clone()), true)
                .then(|| (p.clone(), poly))
        })
        .collect();
    if gaussian.is_empty() || gaussian.len() == f.predictors.len() {
        return plan;
    }
    let names: Vec<&str> = gaussian.iter().map(|(p, _)| p.as_str()).collect();
    let others: Vec<&str> = f
        .predictors
        .iter()
        .map(String::as_str)
        .filter(|p| !names.contains(p))
        .collect();
    plan.form = format!(
        "no augmentation: generic update of {}; Gaussian in {} given {} (drawn exactly)",
        others.join(", "),
        names.join(", "),
        others.join(", ")
    );
    for (p, poly) in &gaussian {
        let quad = &poly.quad[&(p.clone(), p.clone())];
        plan.steps.push(format!(
            "Gaussian in {p} given the other predictors: log p = {}·{p}² + … with {} < 0, so the latents {p} reads are drawn from that Gaussian conditional, the others at their current values (thesis §7.2.1); the generic update moves the rest",
            quad, quad
        ));
    }
    plan.collapsed = gaussian;
    plan
}

/// Whether predictor `p` of factor `k` reads latents that no other predictor of a factor without
/// augmentation reads (its block's conditional is then this factor's Gaussian, the augmented
/// factors' Gaussian terms and the latents' prior).
fn reads_alone(model: &Model, k: usize, p: &str, generic: &[usize]) -> bool {
    let latents_of = |name: &str| -> Vec<String> {
        model
            .predictors
            .iter()
            .find(|q| q.name == name)
            .map(|q| q.terms.iter().map(|t| t.latent.clone()).collect())
            .unwrap_or_default()
    };
    let own = latents_of(p);
    !own.is_empty()
        && model.factors.iter().enumerate().all(|(j, g)| {
            !generic.contains(&j)
                || g.predictors
                    .iter()
                    .filter(|q| !(j == k && q.as_str() == p))
                    .all(|q| latents_of(q).iter().all(|l| !own.contains(l)))
        })
}
