//! The Model IR: what `gpm-augment`, `gpm-schedule` and the runtime consume.

use crate::sx::Sx;
pub use gpm_library::HyperPrior;
use gpm_syntax::Span;
use serde::Serialize;

/// A size: a literal or the name of an `int` datum.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub enum Dim {
    /// A literal size.
    Const(usize),
    /// The value of an `int` datum.
    Var(String),
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Const(n) => write!(f, "{n}"),
            Dim::Var(v) => write!(f, "{v}"),
        }
    }
}

/// A shape: scalar, vector or matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Shape {
    /// One value.
    Scalar,
    /// `vector[n]` (also `int[n]`, `real[n]`).
    Vector(Dim),
    /// `matrix[rows, cols]`.
    Matrix(Dim, Dim),
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Scalar => write!(f, "scalar"),
            Shape::Vector(n) => write!(f, "vector[{n}]"),
            Shape::Matrix(r, c) => write!(f, "matrix[{r}, {c}]"),
        }
    }
}

/// Element type of a datum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Elem {
    /// Integers.
    Int,
    /// Reals.
    Real,
}

/// A value constraint on data or hyperparameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ValueSet {
    /// No constraint.
    Any,
    /// One of these integers (labels).
    Set(Vec<i64>),
    /// Between the bounds, inclusive; a bound is a literal or an `int` datum.
    Range {
        /// Lower bound.
        lo: Option<Bound>,
        /// Upper bound.
        hi: Option<Bound>,
    },
}

/// A range bound.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Bound {
    /// A literal.
    Const(f64),
    /// An `int` datum.
    Var(String),
}

/// A declared datum.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataVar {
    /// Name.
    pub name: String,
    /// Element type.
    pub elem: Elem,
    /// Shape.
    pub shape: Shape,
    /// Value constraint, checked against the data when they are loaded.
    pub constraint: ValueSet,
    /// Declaration span.
    pub span: Span,
    /// For transformed data (`let` in the data block): how the value is computed from the
    /// data before it. `None`: given by the user.
    pub derived: Option<crate::transformed::DataExpr>,
}

/// How a hyperparameter gets its value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HyperKind {
    /// Fixed to this value (one per element for a vector).
    Fixed {
        /// The value.
        value: f64,
    },
    /// Learned by type-II maximum likelihood from this initial value.
    Learn {
        /// Initial value.
        init: f64,
    },
    /// Given a prior.
    Prior {
        /// The prior, truncated to the declared range.
        prior: HyperPrior,
    },
}

/// A hyperparameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hyper {
    /// Name.
    pub name: String,
    /// Scalar or vector (ARD lengthscales).
    pub shape: Shape,
    /// Lower bound of the declared range (`in 0..` gives 0), if any.
    pub lower: Option<f64>,
    /// Upper bound of the declared range (`in 0..1` gives 1), if any.
    pub upper: Option<f64>,
    /// Fixed, learned or prior.
    pub kind: HyperKind,
    /// Declaration span.
    pub span: Span,
}

/// A scalar parameter of a kernel or prior: a literal, a hyperparameter, or an expression of them.
pub type Param = Sx;

/// A covariance function: a library kernel with its arguments, or sums, products and scalar
/// variances of kernels.
#[derive(Debug, Clone, PartialEq)]
pub enum Kernel {
    /// A library kernel (`gpm_library::KERNELS`) with one argument per parameter, defaults
    /// filled in.
    Base {
        /// The kernel.
        law: gpm_library::KernelRef,
        /// Its arguments, in the order of its parameters.
        args: Vec<KernelArg>,
    },
    /// `k1 + k2`.
    Sum {
        /// First summand.
        left: Box<Kernel>,
        /// Second summand.
        right: Box<Kernel>,
    },
    /// `k1 * k2`.
    Product {
        /// First factor.
        left: Box<Kernel>,
        /// Second factor.
        right: Box<Kernel>,
    },
    /// `s * k` with `s` a scalar parameter (a variance).
    Scale {
        /// The variance `s`.
        variance: Param,
        /// The kernel it scales.
        kernel: Box<Kernel>,
    },
}

/// A kernel argument: a scalar expression, or (for a lengthscale) one value per input dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum KernelArg {
    /// One value.
    Scalar {
        /// Its expression.
        value: Param,
    },
    /// A `vector[D]` hyperparameter, one lengthscale per input dimension (ARD).
    Ard {
        /// The hyperparameter's name.
        hyper: String,
    },
}

/// The documented JSON of a kernel (docs/cli.md): an object tagged by `type`, a library kernel's
/// arguments under its parameters' names — a lengthscale as a [`KernelArg`], any other
/// parameter as its expression.
impl Serialize for Kernel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        match self {
            Kernel::Base { law, args } => {
                for (p, a) in law.params().iter().zip(args) {
                    match (p.role, a) {
                        (gpm_library::kernel::ParamRole::Lengthscale, a) => {
                            m.serialize_entry(p.name, a)?
                        }
                        (_, KernelArg::Scalar { value }) => m.serialize_entry(p.name, value)?,
                        (_, a) => m.serialize_entry(p.name, a)?,
                    }
                }
                m.serialize_entry("type", law.json_type())?;
            }
            Kernel::Sum { left, right } | Kernel::Product { left, right } => {
                m.serialize_entry("left", left)?;
                m.serialize_entry("right", right)?;
                let tag = if matches!(self, Kernel::Sum { .. }) {
                    "sum"
                } else {
                    "product"
                };
                m.serialize_entry("type", tag)?;
            }
            Kernel::Scale { variance, kernel } => {
                m.serialize_entry("kernel", kernel)?;
                m.serialize_entry("type", "scale")?;
                m.serialize_entry("variance", variance)?;
            }
        }
        m.end()
    }
}

/// Inducing inputs of a sparse GP.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Inducing {
    /// `inducing = M`: `M` points chosen from the inputs by k-means++ (seeded, reproducible).
    Count(usize),
    /// `inducing = Z`: the rows of a data matrix (same columns as the inputs).
    Points(String),
    /// `inducing = adaptive(rho, max)`: chosen online (thesis Appendix A, Algorithm 1): a row
    /// becomes an inducing point when its kernel correlation with every current one is below
    /// `rho`, up to `max` points — as SVI streams its minibatches, or in one pass over the
    /// rows in order for the full-batch methods.
    Adaptive {
        /// The acceptance threshold ρ in (0, 1).
        rho: f64,
        /// The largest number of inducing points.
        max: usize,
    },
}

/// The Gaussian prior of a latent block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "prior", rename_all = "snake_case")]
pub enum LatentPrior {
    /// A Gaussian process over the rows of a data matrix (or the entries of a data vector).
    Gp {
        /// Name of the input datum.
        inputs: String,
        /// Covariance function.
        kernel: Kernel,
        /// Constant prior mean.
        mean: Param,
        /// Sparse approximation (Titsias 2009 / Hensman 2013), if requested.
        inducing: Option<Inducing>,
        /// The Power-EP power of a sparse GP under Gibbs (thesis §7.5, Algorithm 6; Bui et al.
        /// 2017): 1 is FITC (the default), 0 Titsias' variational posterior.
        alpha: f64,
    },
    /// The improper flat prior `flat()` (Stan's default for a parameter with no prior): zero
    /// prior precision. Accepted where every coordinate's conditional is Gaussian given the
    /// auxiliaries (the schedule refuses the generic update and the particle flow for it) and
    /// the data inform every coordinate (the runtime refuses a singular conditional).
    Flat,
    /// Independent normals: `normal(mean, scale)`; hierarchical when `scale` has a prior.
    Normal {
        /// Mean.
        mean: Param,
        /// Standard deviation.
        scale: Param,
    },
}

impl Kernel {
    /// Names of the hyperparameters the kernel reads (each once).
    pub fn hypers(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_hypers(&mut out);
        out
    }

    fn collect_hypers(&self, out: &mut Vec<String>) {
        let param = |p: &Param, out: &mut Vec<String>| {
            for n in p.hypers() {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        };
        match self {
            Kernel::Base { args, .. } => {
                for a in args {
                    match a {
                        KernelArg::Scalar { value } => param(value, out),
                        KernelArg::Ard { hyper } => {
                            if !out.contains(hyper) {
                                out.push(hyper.clone())
                            }
                        }
                    }
                }
            }
            Kernel::Sum { left, right } | Kernel::Product { left, right } => {
                left.collect_hypers(out);
                right.collect_hypers(out);
            }
            Kernel::Scale { variance, kernel } => {
                param(variance, out);
                kernel.collect_hypers(out);
            }
        }
    }
}

impl LatentPrior {
    /// Names of the hyperparameters the prior reads: kernel parameters, means and scales.
    pub fn hypers(&self) -> Vec<String> {
        let (mut out, params): (Vec<String>, Vec<&Param>) = match self {
            LatentPrior::Gp { kernel, mean, .. } => (kernel.hypers(), vec![mean]),
            LatentPrior::Normal { mean, scale } => (Vec::new(), vec![mean, scale]),
            LatentPrior::Flat => (Vec::new(), vec![]),
        };
        for n in params.into_iter().flat_map(Sx::hypers) {
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out
    }
}

/// A Gaussian latent block: a scalar, a vector, or a matrix whose columns are independent
/// latent functions (one per class, say).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Latent {
    /// Name.
    pub name: String,
    /// Shape.
    pub shape: Shape,
    /// Prior.
    pub prior: LatentPrior,
    /// Declaration span.
    pub span: Span,
}

/// How a latent block enters a predictor at observation `i`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "design", rename_all = "snake_case")]
pub enum Design {
    /// `latent[i]`.
    Identity,
    /// A scalar latent, the same at every observation.
    Broadcast,
    /// `Σ_j X[i, j] latent[j]` with `X` a data matrix.
    Matrix {
        /// The data matrix.
        data: String,
    },
    /// `latent[k]` with a constant `k`, the same entry at every observation (`beta[2] * x[i]`).
    Entry {
        /// The entry (0-based).
        index: usize,
    },
    /// `latent[index[i]]` with a 1-based integer datum (random effects by group).
    Gather {
        /// The index datum.
        index: String,
    },
    /// Column `c` (0-based) of a matrix latent at row `i`: `latent[i, c]`.
    Column {
        /// Column.
        column: usize,
    },
}

/// One term `coef · design(latent)` of a predictor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Term {
    /// The latent block.
    pub latent: String,
    /// Constant multiplier.
    pub coef: f64,
    /// Optional per-observation multiplier (a covariate vector `x` in `x .* w`).
    pub scale_by: Option<String>,
    /// How the latent is read at observation `i`.
    pub design: Design,
}

/// A linear predictor `η[i] = Σ_terms coef·design(latent)[i] + offset`, affine in the latents.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Predictor {
    /// Name: the `let` name, the latent's name, or a generated `η1`, `η2` ...
    pub name: String,
    /// Number of observations it is defined at.
    pub len: Dim,
    /// Terms.
    pub terms: Vec<Term>,
    /// Constant offset.
    pub offset: f64,
    /// Where it was written.
    pub span: Span,
}

/// What one likelihood factor says about one observation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "form", rename_all = "snake_case")]
pub enum FactorForm {
    /// `log p(y_i | η_i, θ)`, up to a constant: a scalar expression in predictor, data and hyper
    /// symbols.
    LogDensity {
        /// The log-density.
        log_density: Sx,
    },
    /// A normalised choice among `classes` classes: `p(y_i = k) = w(η_k) / Σ_c w(η_c)`
    /// (the logistic-softmax when `w = logistic`). The expressions use the predictor symbol
    /// `class_predictor` for `η` of one class.
    Categorical {
        /// Label datum (values in `1..classes`).
        label: String,
        /// Number of classes.
        classes: Dim,
        /// The latent matrix whose columns are the class predictors.
        latent: String,
        /// Symbol that stands for the class's predictor in `log_weight`.
        class_predictor: String,
        /// `log w(η)`.
        log_weight: Sx,
        /// Bijective or over-parametrised, scaled or not (thesis §7.4.2-7.4.3).
        link: SoftmaxLink,
    },
}

/// The variant of a logistic-softmax factor (thesis §7.4).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SoftmaxLink {
    /// §7.4.2: the latent matrix has one column fewer than there are classes, and the last
    /// class has the fixed weight `D = σ(0) = 1/2` (`link = "bijective"`).
    pub bijective: bool,
    /// §7.4.3: a vector hyperparameter of class scales θ, one entry per class: the class
    /// weights are `θ_k σ(f_k)` (and `θ_K D` for the fixed class) (`scale = theta`).
    pub scale: Option<String>,
}

/// A library distribution to draw a response from at observation `i`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replicate {
    /// The distribution.
    pub likelihood: gpm_library::LikelihoodRef,
    /// The declared label set of a binary response (`in {-1, 1}`), which its draws take.
    pub labels: Option<Vec<i64>>,
    /// Its parameters, in the order of [`gpm_library::Likelihood::params`].
    pub params: Vec<Sx>,
}

/// One likelihood factor, vectorised over observations `1..n`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Factor {
    /// Number of observations.
    pub n: Dim,
    /// The density.
    pub form: FactorForm,
    /// Predictors it depends on (names of [`Model::predictors`]).
    pub predictors: Vec<String>,
    /// Observation-indexed data it reads (`y` for `y[i]`): the responses and covariates.
    pub data: Vec<String>,
    /// The observed response: the datum on the left of `~`, the label of a categorical
    /// factor, or, for a density formula (`factor(...)`, `target += ...`), the one
    /// observation-indexed datum it reads (`None` when it reads several or none).
    pub response: Option<String>,
    /// Hyperparameters it reads.
    pub hypers: Vec<String>,
    /// The density of an observation, `log p(y_i | θ)`, where the factor's log-density is not
    /// one: a robust statement's loss (`robust(beta = …)`) is what inference follows, the
    /// distribution's density what prediction scores. `None`: the log-density itself.
    pub observation: Option<Sx>,
    /// How to draw a new response (posterior predictive checks): the library distribution of a
    /// `y ~ dist(...)` statement with its parameters. `None` for a density formula, whose
    /// distribution is not known, and for the categorical factor, drawn from its own form.
    pub replicate: Option<Replicate>,
    /// For a heavy-tailed latent prior (`w : vector[D] ~ student_t(nu, 0, s)`, `cauchy`,
    /// `laplace`): the latent whose prior this factor is. The latent itself takes a flat prior
    /// and this factor, one observation per coordinate, the prior's density — so the same
    /// recognizers augment it (a Gaussian scale mixture) as they would a likelihood. Such a
    /// factor is not an observation: no `log_lik`, `y_rep` or prediction. `None`: a likelihood.
    pub prior_of: Option<String>,
    /// The statement as written, for messages.
    pub source: String,
    /// The statement's span.
    pub span: Span,
}

/// A whole lowered model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Model {
    /// Data.
    pub data: Vec<DataVar>,
    /// Hyperparameters.
    pub hypers: Vec<Hyper>,
    /// Gaussian latent blocks.
    pub latents: Vec<Latent>,
    /// Linear predictors.
    pub predictors: Vec<Predictor>,
    /// Likelihood factors.
    pub factors: Vec<Factor>,
}

impl Model {
    /// The datum of this name.
    pub fn datum(&self, name: &str) -> Option<&DataVar> {
        self.data.iter().find(|d| d.name == name)
    }
    /// The hyperparameter of this name.
    pub fn hyper(&self, name: &str) -> Option<&Hyper> {
        self.hypers.iter().find(|d| d.name == name)
    }
    /// The latent block of this name.
    pub fn latent(&self, name: &str) -> Option<&Latent> {
        self.latents.iter().find(|d| d.name == name)
    }
    /// The predictor of this name.
    pub fn predictor(&self, name: &str) -> Option<&Predictor> {
        self.predictors.iter().find(|d| d.name == name)
    }
}
