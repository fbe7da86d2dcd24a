//! The result of recognition: a [`Plan`] per likelihood factor — the auxiliary variables with
//! their conditionals, and the augmented log-likelihood as a quadratic form in the predictors.

use crate::poly::Poly;
use crate::tree::T;
use gpm_families::MixingLaw;

/// The name of the tilted inverse-Laplace law of a CAS-proved completely monotone `φ` (no
/// named law of `gpm_families`): what the plan and the schedule's auxiliary programs call it.
pub const TILTED_LAW: &str = "tilted inverse-Laplace";

/// A distribution family with parameter expressions (in predictors, data, hyperparameters and
/// earlier auxiliary variables).
#[derive(Debug, Clone, PartialEq)]
pub enum Family {
    /// Pólya-Gamma `PG(b, c)`.
    PolyaGamma {
        /// Shape `b > 0`.
        b: T,
        /// Tilt `c` (its absolute value is used).
        c: T,
    },
    /// Gamma with shape and rate.
    Gamma {
        /// Shape.
        shape: T,
        /// Rate.
        rate: T,
    },
    /// Inverse Gaussian with mean and shape.
    InverseGaussian {
        /// Mean.
        mean: T,
        /// Shape λ.
        shape: T,
    },
    /// Generalised inverse Gaussian, density ∝ `x^(p−1) exp(−(a x + b/x)/2)`.
    Gig {
        /// Index `p`.
        p: T,
        /// `a`.
        a: T,
        /// `b`.
        b: T,
    },
    /// Lévy with scale `a`: density `a/(2√π) ω^(−3/2) e^(−a²/(4ω))`, Laplace transform
    /// `e^(−a√s)` (a prior only: tilting it gives the inverse Gaussian).
    Levy {
        /// `a`.
        a: T,
    },
    /// Inverse Gamma with shape and scale (a prior only: tilting it gives a GIG).
    InverseGamma {
        /// Shape.
        shape: T,
        /// Scale.
        scale: T,
    },
    /// Poisson with a rate.
    Poisson {
        /// Rate.
        rate: T,
    },
    /// Negative binomial `NB(k | r, p) = Γ(k+r)/(Γ(r) k!) p^k (1−p)^r`.
    NegativeBinomial {
        /// Shape `r > 0`.
        shape: T,
        /// Success probability `p ∈ [0, 1)`.
        p: T,
    },
    /// The unit normal at `mean` truncated to `(0, ∞)`; `mean = 0` is the half-normal prior of
    /// the probit's auxiliary.
    TruncatedNormal {
        /// Mean of the untruncated normal.
        mean: T,
    },
    /// The horseshoe's mixing law `∝ e^(−sω)/(c + ω)` (`s = 0`: its improper prior).
    Horseshoe {
        /// `c = 1/(2τ²)`.
        c: T,
        /// The tilt `s`.
        s: T,
    },
    /// A completely monotone `φ` with no named mixing law: the exponentially tilted inverse
    /// Laplace transform `π_φ(ω | c) ∝ e^(−c² ω) L⁻¹{φ}(ω)`, sampled by Laplace inversion.
    TiltedLaplace {
        /// `φ(r)` in the symbol `r`.
        phi: T,
        /// The tilt `c²`.
        c2: T,
    },
}

impl Family {
    /// The law and its parameter expressions, in the order of [`MixingLaw::params`] (`None`
    /// for a CAS-proved `φ`, which has no named law). This is the one place a symbolic family
    /// meets its numerical implementation in `gpm-families`.
    pub fn law(&self) -> Option<(&'static dyn MixingLaw, Vec<&T>)> {
        use gpm_families as fam;
        Some(match self {
            Family::PolyaGamma { b, c } => (&fam::polya_gamma::PolyaGamma, vec![b, c]),
            Family::Gamma { shape, rate } => (&fam::gamma::Gamma, vec![shape, rate]),
            Family::InverseGaussian { mean, shape } => {
                (&fam::inverse_gaussian::InverseGaussian, vec![mean, shape])
            }
            Family::Gig { p, a, b } => (&fam::gig::Gig, vec![p, a, b]),
            Family::Levy { a } => (&fam::levy::Levy, vec![a]),
            Family::InverseGamma { shape, scale } => {
                (&fam::inverse_gamma::InverseGamma, vec![shape, scale])
            }
            Family::Poisson { rate } => (&fam::poisson::Poisson, vec![rate]),
            Family::NegativeBinomial { shape, p } => {
                (&fam::negative_binomial::NegativeBinomial, vec![shape, p])
            }
            Family::TruncatedNormal { mean } => {
                (&fam::truncated_normal::TruncatedNormal, vec![mean])
            }
            Family::Horseshoe { c, s } => (&fam::horseshoe::Horseshoe, vec![c, s]),
            Family::TiltedLaplace { .. } => return None,
        })
    }

    /// Whether the variable is a count (summed, not integrated, when certifying).
    pub fn is_count(&self) -> bool {
        self.law().is_some_and(|(law, _)| law.is_count())
    }

    /// The family's name.
    pub fn name(&self) -> &'static str {
        match self.law() {
            Some((law, _)) => law.name(),
            None => TILTED_LAW,
        }
    }
    /// The family as an auxiliary's prior, for people (`PG(1, 0)`, `Gamma(shape = ν/2, rate =
    /// ν/2)`, `Poisson(κ)` …): the one spelling of each prior, read from its value. A prior
    /// that is a special case has its own name (the probit's half-normal, the horseshoe's
    /// improper measure, a CAS-proved `φ` by its inverse Laplace transform).
    pub fn describe_prior(&self) -> String {
        let zero = |t: &T| matches!(t, T::Num(v) if *v == 0.0);
        match self {
            Family::PolyaGamma { b, c } => format!("PG({b}, {c})"),
            Family::Poisson { rate } => format!("Poisson({rate})"),
            Family::NegativeBinomial { shape, p } => format!("NB({shape}, {p})"),
            Family::TruncatedNormal { mean } if zero(mean) => "TN(0) (half-normal)".into(),
            Family::Horseshoe { c, s } if zero(s) => format!("dω / ({c} + ω), improper"),
            Family::TiltedLaplace { phi, c2 } if zero(c2) => format!("L⁻¹{{φ}} with φ(r) = {phi}"),
            _ => self.describe(),
        }
    }

    /// `Name(param = expr, ...)` for people.
    pub fn describe(&self) -> String {
        match self {
            Family::PolyaGamma { b, c } => format!("PG(b = {b}, c = |{c}|)"),
            Family::Gamma { shape, rate } => format!("Gamma(shape = {shape}, rate = {rate})"),
            Family::InverseGaussian { mean, shape } => {
                format!("InverseGaussian(mean = {mean}, shape = {shape})")
            }
            Family::Gig { p, a, b } => format!("GIG(p = {p}, a = {a}, b = {b})"),
            Family::Poisson { rate } => format!("Poisson(rate = {rate})"),
            Family::NegativeBinomial { shape, p } => format!("NB(shape = {shape}, p = {p})"),
            Family::Levy { a } => format!("Lévy(a = {a})"),
            Family::InverseGamma { shape, scale } => {
                format!("InverseGamma(shape = {shape}, scale = {scale})")
            }
            Family::TruncatedNormal { mean } => format!("TN(mean = {mean}, sd = 1) on (0, ∞)"),
            Family::Horseshoe { c, s } => format!("∝ e^(−({s})·ω)/({c} + ω)"),
            Family::TiltedLaplace { phi, c2 } => format!("π_φ(ω | c² = {c2}) with φ(r) = {phi}"),
        }
    }
}

/// An auxiliary variable.
#[derive(Debug, Clone, PartialEq)]
pub struct AuxVar {
    /// Name (unique within the factor): `ω`, `ω2`, `n` ...
    pub name: String,
    /// Its prior as a family (parameters free of the predictors, except the Poisson rate of a
    /// collapsed chain); shown by [`Family::describe_prior`].
    pub prior_family: Family,
    /// Its complete conditional given the predictors (and earlier auxiliaries).
    pub conditional: Family,
    /// Its conditional mean as an expression (for CAVI, with `c²` replaced by `E_q[r]`).
    pub mean: T,
    /// The rule that introduced it.
    pub rule: &'static str,
}

/// The augmentation of one likelihood factor.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Index of the factor in the model.
    pub factor: usize,
    /// One line naming the form recognised.
    pub form: String,
    /// The derivation, step by step, for `gpmc check`.
    pub steps: Vec<String>,
    /// Auxiliary variables, in sampling order.
    pub aux: Vec<AuxVar>,
    /// The augmented log-likelihood given the auxiliaries: a polynomial of degree ≤ 2 in the
    /// predictors with coefficients in data, hyperparameters and auxiliaries.
    pub augmented: Poly,
    /// Predictors whose latents are sampled from their collapsed conditional (the factor before
    /// augmentation is Gaussian in them): `(predictor, polynomial in it)` — thesis §7.2.1.
    pub collapsed: Vec<(String, Poly)>,
    /// Structural payload of a categorical (logistic-softmax) factor, if this is one.
    pub categorical: Option<CategoricalPlan>,
    /// The part of the log-density free of the predictors and of the continuous auxiliaries
    /// (`log C`, in data, hyperparameters and Poisson counts).
    pub log_c: T,
    /// The numerical check of the plan.
    pub certificate: Certificate,
    /// `Some(reason)` when no augmentation was found: the factor is kept as written and the
    /// latents it reads take the generic update (elliptical slice sampling under Gibbs, a
    /// Gaussian factor fitted by quadrature under CAVI); the reason says which atom no rule
    /// applied to.
    pub generic: Option<String>,
}

impl Plan {
    /// The plan of a factor no rule augments: the log-density as written, no auxiliaries.
    pub fn generic(refusal: &Refusal) -> Plan {
        let reason = refusal.reason.clone();
        Plan {
            factor: refusal.factor,
            form: "no augmentation: generic update".into(),
            steps: vec![
                format!("log-density as a sum of atoms: {}", refusal.normal_form),
                format!("no augmentation: {reason}"),
                "the factor is kept as written; the latents it reads take the generic update"
                    .into(),
            ],
            aux: vec![],
            augmented: Poly::of(&T::Num(0.0), 0).expect("a constant is a polynomial"),
            collapsed: vec![],
            categorical: None,
            log_c: T::Num(0.0),
            certificate: Certificate {
                points: 0,
                max_rel_error: 0.0,
                passed: true,
                method: "nothing to certify: the log-density is used as written".into(),
            },
            generic: Some(reason),
        }
    }
}

/// The logistic-softmax chain of thesis ch. 4 for one observation: `λ ~ Gamma(1 + Σ n_c, C)`,
/// `n_c ~ Poisson(λ σ(−η_c))`, `ω_c ~ PG(y_c + n_c, |η_c|)`, linear term `(y_c − n_c)/2`.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoricalPlan {
    /// Label datum.
    pub label: String,
    /// Latent matrix (one column per class).
    pub latent: String,
}

/// Why a factor could not be augmented.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// Index of the factor.
    pub factor: usize,
    /// The atom no rule applied to (or the reason's subject).
    pub atom: String,
    /// The normal form reached: the atoms of the log-density.
    pub normal_form: String,
    /// Why.
    pub reason: String,
}

/// The result of checking a plan numerically.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Certificate {
    /// Points checked.
    pub points: usize,
    /// Largest relative error `|p̂ − p| / p` of the reconstructed density.
    pub max_rel_error: f64,
    /// Whether it is below [`crate::certify::TOLERANCE`].
    pub passed: bool,
    /// How the mixing integrals were computed.
    pub method: String,
}
