//! Priors of hyperparameters: one file per family implementing [`HyperPriorLaw`] (its
//! mathematics), one row in `register!` (its name, parameters, support and test point; the
//! macro declares the module and lists it in [`HYPER_PRIORS`]). A [`HyperPrior`] is a law with its parameters, truncated to the declared
//! range of its hyperparameter as in Stan (`sigma : real in 0.. ~ cauchy(0, 5)` is a
//! half-Cauchy): its log-density is the law's inside the range and `−∞` outside, which is the
//! truncated density up to a constant because the range does not depend on anything sampled.

mod value;

use crate::constraint::Constraint;
use statrs::distribution::ContinuousCDF;
pub use value::{HyperPrior, PriorError, PriorStart};

/// A parameter of a law: its name in the language (for named arguments) and what it must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParamSpec {
    /// Name, as written in `family(name = value)`.
    pub name: &'static str,
    /// What it must be.
    pub kind: Constraint,
}

pub(crate) const fn real(name: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        kind: Constraint::Real,
    }
}

pub(crate) const fn positive(name: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        kind: Constraint::Positive,
    }
}

/// A law's row of the `register!` table — stanc3's signature table: its name and parameters,
/// its support where the parameters do not move it, and the parameters the tests check it at.
#[derive(Debug)]
pub struct Signature {
    /// The name in the language (`cauchy`).
    pub name: &'static str,
    /// Its parameters, in positional order.
    pub params: &'static [ParamSpec],
    /// The closed support, or `None` where it depends on the parameters (`uniform`).
    pub support: Option<(f64, f64)>,
    /// Parameters the library's tests check the law at (density, distribution and quantile
    /// functions agree, the mean is the density's); empty for `flat`.
    pub example: &'static [f64],
    /// The log-density up to a constant, as the docs show it (in `θ`).
    pub formula: &'static str,
}

const POSITIVE: Option<(f64, f64)> = Some((0.0, f64::INFINITY));
const REAL: Option<(f64, f64)> = Some((f64::NEG_INFINITY, f64::INFINITY));
const UNIT: Option<(f64, f64)> = Some((0.0, 1.0));
const BY_PARAMS: Option<(f64, f64)> = None;

/// The row of the table a law is registered with (implemented by `register!`, never by hand).
pub trait Registered {
    /// Its row.
    fn signature(&self) -> &'static Signature;
}

/// A family of priors for a scalar hyperparameter. Parameters arrive as numbers in the order of
/// [`HyperPriorLaw::params`], already checked against their [`Constraint`] and
/// [`HyperPriorLaw::check`]. A law's file holds its mathematics; its name, parameters, support
/// and test point are its row in `register!`.
pub trait HyperPriorLaw: Registered + Send + Sync + std::fmt::Debug {
    /// The name in the language (`cauchy`).
    fn name(&self) -> &'static str {
        self.signature().name
    }
    /// Its parameters, in positional order.
    fn params(&self) -> &'static [ParamSpec] {
        self.signature().params
    }
    /// Checks beyond each parameter's kind (`uniform` needs `lo < hi`); the message names the
    /// parameters.
    fn check(&self, _p: &[f64]) -> Result<(), String> {
        Ok(())
    }
    /// The closed support `[lo, hi]` (infinite ends for an unbounded side): the table's, or the
    /// law's own where it depends on the parameters (`BY_PARAMS`).
    fn support(&self, _p: &[f64]) -> (f64, f64) {
        self.signature()
            .support
            .unwrap_or((f64::NEG_INFINITY, f64::INFINITY))
    }
    /// `log p(x)` up to a constant in `x`; `−∞` outside the support.
    fn log_density(&self, p: &[f64], x: f64) -> f64;
    /// `d log p(x) / dx` inside the support (gradient-based samplers move hyperparameters
    /// with it).
    fn d_log_density(&self, p: &[f64], x: f64) -> f64;
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
    /// Parameters the library's tests check the law at.
    fn example(&self) -> &'static [f64] {
        self.signature().example
    }
    /// The log-density up to a constant, as the docs show it.
    fn formula(&self) -> &'static str {
        self.signature().formula
    }
    /// `(shape, rate)` when the law is `Gamma(shape, rate)`: the one family whose conditional
    /// given Gamma-conjugate factors is closed form (the schedule's conjugate update).
    fn conjugate_gamma(&self, _p: &[f64]) -> Option<(f64, f64)> {
        None
    }
}

/// Declares each law's module, gives it its row of the table (and `Debug` by name) and lists
/// it in [`HYPER_PRIORS`]: one line per law,
/// `module::Law = "name"(params) on SUPPORT at [example] "log-density up to a constant"`.
macro_rules! register {
    ($($module:ident :: $law:ident = $name:literal ( $($param:expr),* ) on $support:ident
        at [ $($ex:expr),* ] $formula:literal),* $(,)?) => {
        $(
            mod $module;
            registered!($module::$law, Signature {
                name: $name,
                params: &[$($param),*],
                support: $support,
                example: &[$($ex),*],
                formula: $formula,
            });
            impl std::fmt::Debug for $module::$law {
                fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str($name)
                }
            }
        )*
        /// Every hyperparameter prior of the language. Adding one: a file in this folder with
        /// its mathematics, and its row below.
        pub static HYPER_PRIORS: &[&dyn HyperPriorLaw] = &[$(&$module::$law),*];
    };
}

#[rustfmt::skip]
register! {
    gamma::Gamma = "gamma"(positive("shape"), positive("rate")) on POSITIVE at [2.5, 1.5] "(shape − 1) log θ − rate θ",
    inv_gamma::InvGamma = "inv_gamma"(positive("shape"), positive("scale")) on POSITIVE at [3.0, 2.0] "−(shape + 1) log θ − scale/θ",
    lognormal::LogNormal = "lognormal"(real("mu"), positive("sigma")) on POSITIVE at [0.3, 0.6] "−log θ − (log θ − mu)²/(2 sigma²)",
    normal::Normal = "normal"(real("mu"), positive("sigma")) on REAL at [1.0, 2.0] "−(θ − mu)²/(2 sigma²)",
    half_normal::HalfNormal = "half_normal"(positive("sigma")) on POSITIVE at [1.5] "−θ²/(2 sigma²)",
    exponential::Exponential = "exponential"(positive("rate")) on POSITIVE at [0.7] "−rate θ",
    student_t::StudentT = "student_t"(positive("nu"), real("mu"), positive("sigma")) on REAL at [4.0, 1.0, 2.0] "−(nu + 1)/2 · log(1 + ((θ − mu)/sigma)²/nu)",
    cauchy::Cauchy = "cauchy"(real("mu"), positive("sigma")) on REAL at [0.5, 1.5] "−log(1 + ((θ − mu)/sigma)²)",
    uniform::Uniform = "uniform"(real("lo"), real("hi")) on BY_PARAMS at [-1.0, 3.0] "0 on [lo, hi], lo < hi",
    beta::Beta = "beta"(positive("alpha"), positive("beta")) on UNIT at [2.0, 3.5] "(alpha − 1) log θ + (beta − 1) log(1 − θ)",
    weibull::Weibull = "weibull"(positive("alpha"), positive("sigma")) on POSITIVE at [1.7, 2.0] "(alpha − 1) log θ − (θ/sigma)^alpha",
    inv_chi_square::InvChiSquare = "inv_chi_square"(positive("nu")) on POSITIVE at [5.0] "−(nu/2 + 1) log θ − 1/(2θ)",
    flat::Flat = "flat"() on REAL at [] "0 (improper: uniform on the declared range)",
    half_cauchy::HalfCauchy = "half_cauchy"(positive("sigma")) on POSITIVE at [2.0] "−log(1 + (θ/sigma)²)",
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
