//! Likelihoods — the distributions a response is drawn from (`y ~ poisson(rate)`): one file per
//! distribution implementing [`Likelihood`], one line in `register!` (which declares the module
//! and lists it in [`LIKELIHOODS`]).
//!
//! An entry gives its log-density as a [`Formula`]; the lowering turns it into the IR's
//! expression, and from there the CAS and the augmentation recognizers find its augmentation (or
//! the generic update takes it): nothing downstream matches on a likelihood's name. It also
//! gives what the other stages ask of a distribution: the response it takes, a draw for
//! posterior predictive checks, its robust power integral where one is closed form, its mean
//! and variance. The tests at the end of this file check every registered entry at its
//! [`Likelihood::example`]: the density normalises, the power integral is the integral, draws
//! have the mean and variance.

pub mod formula;

pub use formula::{Formula, Func};
use rand::RngCore;

/// What values a likelihood's response takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseKind {
    /// Any real.
    Real,
    /// Binary labels, `{0, 1}` or `{-1, 1}` (declared with `in {...}`).
    Binary,
    /// Non-negative integers.
    Count,
    /// Class labels `1..C`.
    Category,
}

/// The most classes a logistic-softmax likelihood takes (each class is a predictor, certified
/// and lowered one by one: about 17 ms each).
pub const MAX_CLASSES: usize = 1000;

/// The declared label set of a binary response (`y : int[N] in {-1, 1}`), if any.
pub type Labels<'a> = Option<&'a [i64]>;

/// Binary labels: the value drawn for "success" and for "failure" (`{0, 1}` unless the
/// declared set holds −1).
pub fn binary_labels(labels: Labels) -> (f64, f64) {
    let zero = if labels.is_some_and(|l| l.contains(&-1)) {
        -1.0
    } else {
        0.0
    };
    (1.0, zero)
}

/// A distribution of the responses.
pub trait Likelihood: Send + Sync {
    /// The name in the language (`poisson`).
    fn name(&self) -> &'static str;
    /// Parameter names, in positional order.
    fn params(&self) -> &'static [&'static str];
    /// What `y` must be.
    fn response(&self) -> ResponseKind;
    /// The density as shown in the docs and by `gpmc check`.
    fn formula(&self) -> &'static str;
    /// `log p(y | params)`, normalised, in [`formula::y`] and [`formula::p`]; `None` for a
    /// structural distribution the lowering assembles itself (the logistic-softmax).
    fn log_density(&self, labels: Labels) -> Option<Formula>;
    /// `∫ p(y | params)^(1+β) dy` (for discrete responses the sum), where closed form: what
    /// `robust(beta = β)` and `robust(gamma = β)` need.
    fn power_integral(&self, _beta: f64) -> Option<Formula> {
        None
    }
    /// A response drawn at parameters `p` (for the logistic-softmax: the class weights); NaN
    /// where the parameters are outside the distribution's domain, so that a bad draw shows in
    /// the output rather than stopping the run.
    fn draw(&self, p: &[f64], labels: Labels, rng: &mut dyn RngCore) -> f64;
    /// The mean at parameters `p`, where it exists.
    fn mean(&self, p: &[f64], labels: Labels) -> Option<f64>;
    /// The variance at parameters `p`, where it exists.
    fn variance(&self, p: &[f64], labels: Labels) -> Option<f64>;
    /// The position of a number-of-trials parameter (a whole count each response is at most).
    fn trials(&self) -> Option<usize> {
        None
    }
    /// Parameters the library's own tests check the entry at.
    fn example(&self) -> &'static [f64];
}

entry_ref!(
    /// A registered likelihood, compared, printed and serialised by name.
    LikelihoodRef,
    Likelihood
);

/// Declares each likelihood's module and lists it in [`LIKELIHOODS`]: one line per entry.
macro_rules! register {
    ($($module:ident :: $entry:ident),* $(,)?) => {
        $(mod $module;)*
        /// Every likelihood of the language. Adding one: a file in this folder and a line in
        /// `register!` below (docs/ARCHITECTURE.md, "Adding a likelihood").
        pub static LIKELIHOODS: &[&dyn Likelihood] = &[$(&$module::$entry),*];
    };
}

register! {
    normal::Normal,
    student_t::StudentT,
    laplace::Laplace,
    logistic::Logistic,
    bernoulli_logit::BernoulliLogit,
    binomial_logit::BinomialLogit,
    poisson::Poisson,
    poisson_log::PoissonLog,
    neg_binomial_logit::NegBinomialLogit,
    neg_binomial_2_log::NegBinomial2Log,
    categorical_logistic_softmax::CategoricalLogisticSoftmax,
    horseshoe::Horseshoe,
}

pub use categorical_logistic_softmax::CategoricalLogisticSoftmax;

/// The likelihood of this name.
pub fn lookup(name: &str) -> Option<LikelihoodRef> {
    LIKELIHOODS
        .iter()
        .find(|l| l.name() == name)
        .map(|l| LikelihoodRef(*l))
}

#[cfg(test)]
mod tests;
