//! Priors of hyperparameters: one file per family implementing [`HyperPriorLaw`], one line in
//! `register!` (which declares the module and lists it in [`HYPER_PRIORS`]). A [`HyperPrior`] is a law with its parameters, truncated to the declared
//! range of its hyperparameter as in Stan (`sigma : real in 0.. ~ cauchy(0, 5)` is a
//! half-Cauchy): its log-density is the law's inside the range and `−∞` outside, which is the
//! truncated density up to a constant because the range does not depend on anything sampled.

mod value;

use statrs::distribution::ContinuousCDF;
pub use value::{HyperPrior, PriorError, PriorStart};

/// What a parameter of a law must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// Any finite number (a location).
    Real,
    /// A finite number `> 0` (a scale, shape, rate or degrees of freedom).
    Positive,
}

/// A parameter of a law: its name in the language (for named arguments) and what it must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    /// Name, as written in `family(name = value)`.
    pub name: &'static str,
    /// Constraint.
    pub kind: ParamKind,
}

pub(crate) const fn real(name: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Real,
    }
}

pub(crate) const fn positive(name: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        kind: ParamKind::Positive,
    }
}

/// A family of priors for a scalar hyperparameter. Parameters arrive as numbers in the order of
/// [`HyperPriorLaw::params`], already checked against their [`ParamKind`] and
/// [`HyperPriorLaw::check`].
pub trait HyperPriorLaw: Send + Sync + std::fmt::Debug {
    /// The name in the language (`cauchy`).
    fn name(&self) -> &'static str;
    /// Its parameters, in positional order.
    fn params(&self) -> &'static [ParamSpec];
    /// Checks beyond each parameter's kind (`uniform` needs `lo < hi`); the message names the
    /// parameters.
    fn check(&self, _p: &[f64]) -> Result<(), String> {
        Ok(())
    }
    /// The closed support `[lo, hi]` (infinite ends for an unbounded side).
    fn support(&self, p: &[f64]) -> (f64, f64);
    /// `log p(x)` up to a constant in `x`; `−∞` outside the support.
    fn log_density(&self, p: &[f64], x: f64) -> f64;
    /// The law as a `statrs` distribution, where `statrs` has it: the distribution and quantile
    /// functions then come from it.
    fn statrs(&self, _p: &[f64]) -> Option<Box<dyn ContinuousCDF<f64, f64>>> {
        None
    }
    /// The distribution function, or `None` for an improper prior (`flat`).
    fn cdf(&self, p: &[f64], x: f64) -> Option<f64> {
        let d = self.statrs(p)?;
        let (lo, hi) = self.support(p);
        Some(if x <= lo {
            0.0
        } else if x >= hi {
            1.0
        } else {
            d.cdf(x)
        })
    }
    /// The quantile function at `u ∈ (0, 1)` (not called for an improper prior).
    fn quantile(&self, p: &[f64], u: f64) -> f64 {
        self.statrs(p).map_or(f64::NAN, |d| d.inverse_cdf(u))
    }
    /// The mean, where it exists.
    fn mean(&self, p: &[f64]) -> Option<f64>;
    /// The mode, where it is a single interior point.
    fn mode(&self, _p: &[f64]) -> Option<f64> {
        None
    }
    /// Parameters the library's tests check the law at (`tests/hyperpriors.rs`: density,
    /// distribution and quantile functions agree, the mean is the density's); empty for `flat`.
    fn example(&self) -> &'static [f64];
    /// `(shape, rate)` when the law is `Gamma(shape, rate)`: the one family whose conditional
    /// given Gamma-conjugate factors is closed form (the schedule's conjugate update).
    fn conjugate_gamma(&self, _p: &[f64]) -> Option<(f64, f64)> {
        None
    }
}

/// Declares each law's module and lists it in [`HYPER_PRIORS`]: one line per law.
macro_rules! register {
    ($($module:ident :: $law:ident),* $(,)?) => {
        $(mod $module;)*
        /// Every hyperparameter prior of the language. Adding one: a file in this folder and a
        /// line in `register!` below (its `example` parameters are what the tests check).
        pub static HYPER_PRIORS: &[&dyn HyperPriorLaw] = &[$(&$module::$law),*];
    };
}

register! {
    gamma::Gamma,
    inv_gamma::InvGamma,
    lognormal::LogNormal,
    normal::Normal,
    half_normal::HalfNormal,
    exponential::Exponential,
    student_t::StudentT,
    cauchy::Cauchy,
    uniform::Uniform,
    beta::Beta,
    weibull::Weibull,
    inv_chi_square::InvChiSquare,
    flat::Flat,
    half_cauchy::HalfCauchy,
}

/// The law of this name.
pub fn lookup(name: &str) -> Option<&'static dyn HyperPriorLaw> {
    HYPER_PRIORS.iter().copied().find(|l| l.name() == name)
}

/// `f(x)` for `x` inside `[0, ∞)` (closed at 0 when `closed`), else `−∞`.
pub(crate) fn on_positive(x: f64, closed: bool, f: impl FnOnce() -> f64) -> f64 {
    if x > 0.0 || (closed && x == 0.0) {
        f()
    } else {
        f64::NEG_INFINITY
    }
}
