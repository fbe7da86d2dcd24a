//! # gpm-families
//!
//! Owns the mixing laws of the augmentations — Pólya-Gamma, Gamma, inverse Gaussian, GIG,
//! Lévy, inverse Gamma, Poisson, negative binomial — one file each, behind one trait,
//! [`MixingLaw`]: its density (for certification by quadrature), its Laplace transform, the
//! moments CAVI needs of the law tilted by `e^(−ωs)`, and an exact sampler for Gibbs. The same
//! implementation serves certification (`gpm-augment`), the schedule (which names the law of
//! every auxiliary) and the executors (`gpm-runtime`). It must not know about models, symbolic
//! expressions or data: parameters arrive as numbers, in the order of [`MixingLaw::params`].
//!
//! Adding a family: a file here with a unit struct implementing [`MixingLaw`] and its tests
//! (moments, KS, Laplace transform against quadrature of the density), and a line in [`LAWS`].
#![warn(missing_docs)]

pub mod gamma;
pub mod gig;
pub mod inverse_gamma;
pub mod inverse_gaussian;
pub mod inversion;
pub mod levy;
pub mod negative_binomial;
pub mod poisson;
pub mod polya_gamma;
pub mod polya_gamma_sampler;

use rand::RngCore;

/// Invalid parameters, or a sampler that did not finish.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct LawError(pub String);

pub(crate) fn bad(what: &str, v: &[f64]) -> LawError {
    LawError(format!("{what} with invalid parameters {v:?}"))
}

/// A law of a scalar auxiliary variable `ω ≥ 0`.
pub trait MixingLaw: Send + Sync + std::fmt::Debug {
    /// Its name, for people and JSON (`"Pólya-Gamma"`).
    fn name(&self) -> &'static str;
    /// Its parameters' names, in the order every method takes them.
    fn params(&self) -> &'static [&'static str];
    /// Whether it is a count (summed, not integrated, when certifying; starts at 0 in Gibbs).
    fn is_count(&self) -> bool {
        false
    }
    /// `log p(ω | params)`, where the density has a closed form (used to certify a Laplace
    /// transform independently of the formula that claims it).
    fn log_density(&self, _params: &[f64], _w: f64) -> Option<f64> {
        None
    }
    /// `log E[e^(−ωs)]` in closed form, where known.
    fn log_laplace(&self, _params: &[f64], _s: f64) -> Option<f64> {
        None
    }
    /// Whether [`MixingLaw::tilted`] has a closed form for this law (decided when the schedule
    /// is built, so that CAVI is refused up front rather than failing at run time).
    fn has_tilted(&self) -> bool {
        false
    }
    /// For CAVI: `(E[ω], log φ(s))` under the law tilted by `e^(−ωs)`, with `φ` its Laplace
    /// transform normalised to `φ(0) = 1` (thesis ch. 5 §3.3.1: `E[ω] = −φ'(s)/φ(s)`).
    fn tilted(&self, _params: &[f64], _s: f64) -> Option<(f64, f64)> {
        None
    }
    /// An exact draw.
    fn sample(&self, rng: &mut dyn RngCore, params: &[f64]) -> Result<f64, LawError>;
}

/// Every law, for lookups by name (tests, tools).
pub const LAWS: &[&dyn MixingLaw] = &[
    &polya_gamma::PolyaGamma,
    &gamma::Gamma,
    &inverse_gaussian::InverseGaussian,
    &gig::Gig,
    &levy::Levy,
    &inverse_gamma::InverseGamma,
    &poisson::Poisson,
    &negative_binomial::NegativeBinomial,
];

/// `log ∫₀^∞ p(ω) e^(−ω s) dω` by the trapezoid rule in `t = log ω` (the certification of a
/// law's Laplace transform from its density).
pub fn log_laplace_quadrature(log_density: &dyn Fn(f64) -> f64, s: f64) -> f64 {
    let (lo, hi, h) = (-40.0, 40.0, 0.01);
    let n = ((hi - lo) / h) as usize;
    let mut terms = Vec::with_capacity(n + 1);
    for k in 0..=n {
        let t = lo + k as f64 * h;
        let w = t.exp();
        let v = log_density(w) + t - w * s;
        let half = if k == 0 || k == n { 0.5f64.ln() } else { 0.0 };
        terms.push(v + half);
    }
    gpm_special::log_sum_exp(&terms) + h.ln()
}
