//! Conjugate hyperparameter blocks: a hyperparameter `θ` with a Gamma(α, β) prior whose every
//! likelihood atom is `k·log θ` or `−θ·q` (with `k`, `q` free of `θ`) has the complete
//! conditional `Gamma(α + Σ_i k_i, β + Σ_i q_i)` — e.g. the noise precision of a Gaussian
//! likelihood, `½ log τ − τ (y − η)²/2`. Found from the atoms of the log-density, not from the
//! distribution's name.

use crate::atoms::{atomize, Signs};
use crate::norm::normalize;
use crate::poly::Poly;
use crate::tree::{Role, T};
use gpm_ir::{FactorForm, Model, SxFunc};

/// The statistics `k` (coefficient of `log θ`) and `q` (minus the coefficient of `θ`) of one
/// factor at one observation, as expressions in the predictors, data and other hyperparameters.
#[derive(Debug, Clone, PartialEq)]
pub struct GammaStats {
    /// Coefficient of `log θ`.
    pub k: T,
    /// Minus the coefficient of `θ` (must be ≥ 0).
    pub q: T,
}

fn hide(t: &T, h: &str) -> T {
    match t {
        T::Sym(Role::Predictor, n) => T::Sym(Role::Data, format!("\u{1}{n}")),
        T::Sym(Role::Hyper, n) if n == h => T::Sym(Role::Predictor, n.clone()),
        T::Add(v) => T::add(v.iter().map(|u| hide(u, h)).collect()),
        T::Mul(v) => T::mul(v.iter().map(|u| hide(u, h)).collect()),
        T::Pow(a, b) => T::pow(hide(a, h), hide(b, h)),
        T::Call(f, v) => T::Call(*f, v.iter().map(|u| hide(u, h)).collect()),
        other => other.clone(),
    }
}

fn unhide(t: &T) -> T {
    match t {
        T::Sym(Role::Data, n) if n.starts_with('\u{1}') => {
            T::Sym(Role::Predictor, n[1..].to_string())
        }
        T::Add(v) => T::add(v.iter().map(unhide).collect()),
        T::Mul(v) => T::mul(v.iter().map(unhide).collect()),
        T::Pow(a, b) => T::pow(unhide(a), unhide(b)),
        T::Call(f, v) => T::Call(*f, v.iter().map(unhide).collect()),
        other => other.clone(),
    }
}

/// The Gamma statistics of factor `k` in hyperparameter `h`, or `None` when the factor is not
/// Gamma-conjugate in it (or is categorical).
pub fn gamma_stats(model: &Model, k: usize, h: &str) -> Option<GammaStats> {
    let FactorForm::LogDensity { log_density } = &model.factors[k].form else {
        return None;
    };
    let mut signs = Signs::default();
    signs.positive_hypers.insert(h.to_string());
    for hy in &model.hypers {
        if hy.lower.is_some_and(|l| l >= 0.0) {
            signs.positive_hypers.insert(hy.name.clone());
        }
    }
    let atoms = atomize(&normalize(&T::from_sx(log_density), &signs), &signs);
    let theta = T::sym(Role::Hyper, h);
    let mut ks = Vec::new();
    let mut qs = Vec::new();
    for a in atoms {
        if !a.mentions(Role::Hyper, Some(h)) {
            continue;
        }
        // k · log θ
        let (coef, core): (Vec<T>, Vec<T>) = match &a {
            T::Mul(v) => v
                .iter()
                .cloned()
                .partition(|u| !u.mentions(Role::Hyper, Some(h))),
            other => (vec![], vec![other.clone()]),
        };
        if core.len() == 1 && core[0] == T::call(SxFunc::Log, theta.clone()) {
            ks.push(T::mul(coef));
            continue;
        }
        // −θ · q: a polynomial of degree 1 in θ with no constant term.
        let p = Poly::of(&hide(&a, h), 1)?;
        let lin = p.lin.get(h)?;
        if p.c0 != T::Num(0.0) || lin.mentions(Role::Hyper, Some(h)) {
            return None;
        }
        qs.push(T::neg(unhide(lin)));
    }
    if ks.is_empty() && qs.is_empty() {
        return None;
    }
    Some(GammaStats {
        k: T::add(if ks.is_empty() { vec![T::Num(0.0)] } else { ks }),
        q: T::add(if qs.is_empty() { vec![T::Num(0.0)] } else { qs }),
    })
}
