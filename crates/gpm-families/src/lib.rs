//! # gpm-families
//!
//! Owns the mixing laws of the augmentations — Pólya-Gamma, Gamma, inverse Gaussian, GIG, Lévy,
//! inverse Gamma, Poisson, negative binomial, truncated normal, horseshoe — one file each, behind
//! one trait, [`MixingLaw`]: its density (for certification by quadrature), its Laplace transform,
//! the moments CAVI needs of the law tilted by `e^(−ωs)`, and an exact sampler for Gibbs. The same
//! implementation serves certification (`gpm-augment`), the schedule (which names the law of every
//! auxiliary) and the executors (`gpm-runtime`). It must not know about models, symbolic
//! expressions or data: parameters arrive as numbers, in the order of [`MixingLaw::params`].
//!
//! Adding a family: a file here with a unit struct implementing [`MixingLaw`] and its tests
//! (moments, KS, Laplace transform against quadrature of the density), and its row in
//! `register!` (name, parameters, the point its tests check it at).
#![warn(missing_docs)]
// No `unwrap()` outside tests: an error, or an `expect` that states the invariant (issue 51).
#![cfg_attr(not(test), warn(clippy::unwrap_used))]

pub mod inversion;
pub mod polya_gamma_large;
pub mod polya_gamma_sampler;
pub mod polya_gamma_small;

use rand_chacha::ChaCha8Rng;

/// Invalid parameters, or a sampler that did not finish.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct LawError(pub String);

pub(crate) fn bad(what: &str, v: &[f64]) -> LawError {
    LawError(format!("{what} with invalid parameters {v:?}"))
}

/// A law's row of the `register!` table: its name, its parameters' names and the parameters its
/// tests check it at (`tests/laws.rs`: Laplace transform against quadrature of the density,
/// tilted moments, sampler mean).
#[derive(Debug)]
pub struct Signature {
    /// Its name, for people and JSON (`"Pólya-Gamma"`).
    pub name: &'static str,
    /// Its parameters' names, in the order every method takes them.
    pub params: &'static [&'static str],
    /// Parameters its tests check it at.
    pub example: &'static [f64],
}

/// The row of the table a law is registered with (implemented by `register!`, never by hand).
pub trait Registered {
    /// Its row.
    fn signature(&self) -> &'static Signature;
}

/// A law of a scalar auxiliary variable `ω ≥ 0`: its file holds the mathematics, its row in
/// `register!` its name, parameters and test point.
pub trait MixingLaw: Registered + Send + Sync + std::fmt::Debug {
    /// Its name, for people and JSON (`"Pólya-Gamma"`).
    fn name(&self) -> &'static str {
        self.signature().name
    }
    /// Its parameters' names, in the order every method takes them.
    fn params(&self) -> &'static [&'static str] {
        self.signature().params
    }
    /// Parameters its tests check it at.
    fn example(&self) -> &'static [f64] {
        self.signature().example
    }
    /// Whether it is a count (summed, not integrated, when certifying; starts at 0 in Gibbs).
    fn is_count(&self) -> bool {
        false
    }
    /// `log p(ω | params)`, where the density has a closed form (used to certify a Laplace
    /// transform independently of the formula that claims it).
    fn log_density(&self, _params: &[f64], _w: f64) -> Option<f64> {
        None
    }
    /// `d log p(ω | params) / dω` where [`MixingLaw::log_density`] has a closed form (NUTS on
    /// the augmented model moves `log ω` with it).
    fn d_log_density(&self, _params: &[f64], _w: f64) -> Option<f64> {
        None
    }
    /// [`MixingLaw::log_density`] at many points, into `out`; `false` where the law has no
    /// closed-form density. Laws override it to compute their normalising constant once
    /// (certification evaluates thousands of quadrature nodes).
    fn log_densities(&self, params: &[f64], ws: &[f64], out: &mut Vec<f64>) -> bool {
        out.clear();
        for &w in ws {
            match self.log_density(params, w) {
                Some(v) => out.push(v),
                None => return false,
            }
        }
        true
    }
    /// `log E[e^(−ωs)]` in closed form, where known.
    fn log_laplace(&self, _params: &[f64], _s: f64) -> Option<f64> {
        None
    }
    /// Whether its Laplace transform exists at negative `s` (the law has Gaussian tails, so a
    /// tilt `e^(−ωs)` may grow): then CAVI tilts it by any real `s`, else by `s ≥ 0` only.
    fn any_real_tilt(&self) -> bool {
        false
    }
    /// Whether the blocked Gibbs sweep `f | ω`, `ω | f` mixes slowly under this augmentation:
    /// the auxiliary pins `f` down about as tightly as the data do (binary and count data
    /// through Pólya-Gamma variables), so the sweep moves `f` in small steps. A sweep then adds
    /// elliptical slice steps on the marginal posterior of the GP blocks such a factor reads
    /// (`gpm_schedule::marginal_elliptical`). Under the scale mixtures of the robust
    /// regressions the sweep mixes well and the steps only cost (measured: docs/inference.md).
    fn slow_blocked_mixing(&self) -> bool {
        false
    }
    /// Whether the blocked sweep, though not slow, gains from marginal elliptical steps along a
    /// Gaussian fitted to the block's posterior (`gpm_schedule::EllipseReference::Adapted`) —
    /// only where such a fit is made; under the prior's ellipses the steps only cost here.
    fn gains_from_fitted_steps(&self) -> bool {
        false
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
    /// An exact draw. The generator is the executors' own (a counter-based ChaCha8 stream per
    /// chain), named concretely so that drawing costs no virtual call per random number.
    fn sample(&self, rng: &mut ChaCha8Rng, params: &[f64]) -> Result<f64, LawError>;
}

/// Declares each law's module (public: the augmentation names laws by path), gives it its row
/// of the table and lists it in [`LAWS`]: one row per law,
/// `module::Law = "name"(params) at [example]`.
macro_rules! register {
    ($($module:ident :: $law:ident = $name:literal ( $($param:literal),* ) at [ $($ex:expr),* ]),*
        $(,)?) => {
        $(
            pub mod $module;
            impl Registered for $module::$law {
                fn signature(&self) -> &'static Signature {
                    static ROW: Signature = Signature {
                        name: $name,
                        params: &[$($param),*],
                        example: &[$($ex),*],
                    };
                    &ROW
                }
            }
        )*
        /// Every law, for lookups by name (tests, tools).
        pub const LAWS: &[&dyn MixingLaw] = &[$(&$module::$law),*];
    };
}

#[rustfmt::skip]
register! {
    polya_gamma::PolyaGamma = "Pólya-Gamma"("b", "c") at [1.3, 0.7],
    gamma::Gamma = "Gamma"("shape", "rate") at [2.5, 1.7],
    inverse_gaussian::InverseGaussian = "inverse Gaussian"("mean", "shape") at [1.2, 2.0],
    gig::Gig = "generalised inverse Gaussian"("p", "a", "b") at [0.5, 1.3, 0.8],
    levy::Levy = "Lévy"("a") at [0.9],
    inverse_gamma::InverseGamma = "inverse Gamma"("shape", "scale") at [3.5, 2.0],
    poisson::Poisson = "Poisson"("rate") at [3.2],
    negative_binomial::NegativeBinomial = "negative binomial"("shape", "p") at [2.5, 0.4],
    truncated_normal::TruncatedNormal = "truncated normal"("mean") at [0.4],
    horseshoe::Horseshoe = "horseshoe"("c", "s") at [0.7, 0.5],
}

/// `log ∫₀^∞ p(ω) e^(−ω s) dω` by the trapezoid rule in `t = log ω` (the certification of a
/// law's Laplace transform from its density), on a grid fitted to the integrand
/// ([`gpm_special::log_sum_concave`]: every mixing density here is log-concave in `t`). `NaN`
/// when the mass is not within double range.
pub fn log_laplace_quadrature(log_density: &dyn Fn(f64) -> f64, s: f64) -> f64 {
    let g = |t: f64| {
        let w = t.exp();
        Some(log_density(w) + t - w * s)
    };
    gpm_special::log_sum_concave(&g, gpm_special::Lattice::Reals).unwrap_or(f64::NAN)
}

/// [`log_laplace_quadrature`] of a law's own density (`None` where it has none, or where the
/// integral is out of double range).
pub fn law_log_laplace_quadrature(law: &dyn MixingLaw, params: &[f64], s: f64) -> Option<f64> {
    law.log_density(params, 1.0)?;
    let g = |t: f64| {
        let w = t.exp();
        Some(law.log_density(params, w)? + t - w * s)
    };
    gpm_special::log_sum_concave(&g, gpm_special::Lattice::Reals)
}
