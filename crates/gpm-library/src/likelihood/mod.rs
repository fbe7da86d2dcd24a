//! Likelihoods — the distributions a response is drawn from (`y ~ poisson(rate)`): one file per
//! distribution implementing [`Likelihood`], its row in the `register!` signature table (name,
//! parameters, response, example, formula; the macro declares the module and lists it in
//! [`LIKELIHOODS`]).
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

use crate::constraint::Constraint;
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
    /// Reals `> 0` (durations, sizes, concentrations).
    Positive,
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

/// A likelihood's row of the `register!` table — stanc3's signature table: its name, parameter
/// names, response, density as shown, and the parameters the tests check it at.
#[derive(Debug)]
pub struct Signature {
    /// The name in the language (`poisson`).
    pub name: &'static str,
    /// Parameter names, in positional order.
    pub params: &'static [&'static str],
    /// What each parameter must be, in the same order (checked by the lowering where the
    /// argument is a literal or a hyperparameter).
    pub constraints: &'static [Constraint],
    /// What `y` must be.
    pub response: ResponseKind,
    /// The density as shown in the docs and by `gpmc check`.
    pub formula: &'static str,
    /// Parameters the library's own tests check the entry at.
    pub example: &'static [f64],
}

/// The row of the table an entry is registered with (implemented by `register!`, never by hand).
pub trait Registered {
    /// Its row.
    fn signature(&self) -> &'static Signature;
}

/// A distribution of the responses: its file holds the mathematics, its row in `register!` the
/// rest.
pub trait Likelihood: Registered + Send + Sync {
    /// The name in the language (`poisson`).
    fn name(&self) -> &'static str {
        self.signature().name
    }
    /// Parameter names, in positional order.
    fn params(&self) -> &'static [&'static str] {
        self.signature().params
    }
    /// What each parameter must be, in positional order.
    fn constraints(&self) -> &'static [Constraint] {
        self.signature().constraints
    }
    /// What `y` must be.
    fn response(&self) -> ResponseKind {
        self.signature().response
    }
    /// The density as shown in the docs and by `gpmc check`.
    fn formula(&self) -> &'static str {
        self.signature().formula
    }
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
    fn example(&self) -> &'static [f64] {
        self.signature().example
    }
}

/// A parameter's constraint in a row: the one written, or any real.
macro_rules! constraint {
    () => {
        Constraint::Real
    };
    ($c:expr) => {
        $c
    };
}

const POSITIVE: Constraint = Constraint::Positive;

entry_ref!(
    /// A registered likelihood, compared, printed and serialised by name.
    LikelihoodRef,
    Likelihood
);

/// Declares each likelihood's module, gives it its row of the table and lists it in
/// [`LIKELIHOODS`]: one line per entry,
/// `module::Entry = "name"(params) -> Response at [example] "formula"`, a parameter written
/// `"sigma": POSITIVE` where it is constrained (a bare name is any real).
macro_rules! register {
    ($($module:ident :: $entry:ident = $name:literal ( $($param:literal $(: $c:expr)?),* )
        -> $response:ident at [ $($ex:expr),* ] $formula:literal),* $(,)?) => {
        $(
            mod $module;
            registered!($module::$entry, Signature {
                name: $name,
                params: &[$($param),*],
                constraints: &[$(constraint!($($c)?)),*],
                response: ResponseKind::$response,
                formula: $formula,
                example: &[$($ex),*],
            });
        )*
        /// Every likelihood of the language. Adding one: a file in this folder with its
        /// mathematics, and its row below (docs/ARCHITECTURE.md, "Adding a likelihood").
        pub static LIKELIHOODS: &[&dyn Likelihood] = &[$(&$module::$entry),*];
    };
}

#[rustfmt::skip]
register! {
    normal::Normal = "normal"("mu", "sigma": POSITIVE) -> Real at [0.3, 1.7] "-log(sigma) - log(2 pi)/2 - ((y - mu)/sigma)^2 / 2",
    student_t::StudentT = "student_t"("nu": POSITIVE, "mu", "sigma": POSITIVE) -> Real at [5.0, -0.4, 0.8] "lgamma((nu+1)/2) - lgamma(nu/2) - log(nu pi)/2 - log(sigma) - (nu+1)/2 log(1 + ((y-mu)/sigma)^2/nu)",
    lognormal::Lognormal = "lognormal"("mu", "sigma": POSITIVE) -> Positive at [0.4, 0.7] "-log(y) - log(sigma) - log(2 pi)/2 - ((log(y) - mu)/sigma)^2 / 2",
    laplace::Laplace = "laplace"("mu", "b": POSITIVE) -> Real at [0.5, 1.3] "-log(2 b) - abs(y - mu)/b",
    logistic::Logistic = "logistic"("mu", "s": POSITIVE) -> Real at [0.1, 0.6] "-log(s) - z - 2 softplus(-z),  z = (y - mu)/s",
    bernoulli_logit::BernoulliLogit = "bernoulli_logit"("eta") -> Binary at [0.8] "y log logistic(eta) + (1-y) log logistic(-eta)  (labels {0,1});  log logistic(y eta)  (labels {-1,1})",
    binomial_logit::BinomialLogit = "binomial_logit"("n", "eta") -> Count at [12.0, -0.3] "log C(n, y) + y log logistic(eta) + (n-y) log logistic(-eta)",
    poisson::Poisson = "poisson"("rate": POSITIVE) -> Count at [3.7] "y log(rate) - rate - lgamma(y+1)",
    poisson_log::PoissonLog = "poisson_log"("eta") -> Count at [1.2] "y eta - exp(eta) - lgamma(y+1)",
    neg_binomial_logit::NegBinomialLogit = "neg_binomial_logit"("r": POSITIVE, "eta") -> Count at [2.5, 0.7] "lgamma(y+r) - lgamma(r) - lgamma(y+1) + y log logistic(eta) + r log logistic(-eta)",
    neg_binomial_2_log::NegBinomial2Log = "neg_binomial_2_log"("eta", "phi": POSITIVE) -> Count at [1.3, 2.5] "lgamma(y+phi) - lgamma(phi) - lgamma(y+1) + y log logistic(eta - log phi) + phi log logistic(log phi - eta)",
    categorical_logistic_softmax::CategoricalLogisticSoftmax = "categorical_logistic_softmax"("F") -> Category at [0.5, 1.0, 2.0, 1.5] "log logistic(F[y]) - log sum_c logistic(F[c])",
    horseshoe::Horseshoe = "horseshoe"("mu", "tau": POSITIVE) -> Real at [-0.4, 0.8] "log(e^x E1(x)) - log(tau) - log(pi) - log(2 pi)/2, x = ((y - mu)/tau)^2/2",
}

pub use categorical_logistic_softmax::{
    CategoricalLogisticSoftmax, ClassWeights, FIXED_CLASS_WEIGHT,
};

/// The likelihood of this name.
pub fn lookup(name: &str) -> Option<LikelihoodRef> {
    LIKELIHOODS
        .iter()
        .find(|l| l.name() == name)
        .map(|l| LikelihoodRef(*l))
}

#[cfg(test)]
mod tests;
