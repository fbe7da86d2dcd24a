//! [`HyperPrior`]: a law with its parameters, truncated to the declared range.
use super::{lookup, HyperPriorLaw};
use crate::constraint::Constraint;
use serde::ser::{Serialize, SerializeMap, Serializer};

/// Why a prior cannot be built.
#[derive(Debug, Clone, PartialEq)]
pub enum PriorError {
    /// No law of this name.
    Unknown(String),
    /// Parameter `index` is invalid; the message says why.
    Param {
        /// Position of the parameter.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// The parameters together are invalid (`uniform(2, 1)`).
    Params(String),
    /// The declared range and the law's support do not overlap, or the law gives the range no
    /// mass.
    NoMass(String),
}

impl std::fmt::Display for PriorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PriorError::Unknown(n) => write!(f, "unknown prior `{n}`"),
            PriorError::Param { message, .. } => f.write_str(message),
            PriorError::Params(m) | PriorError::NoMass(m) => f.write_str(m),
        }
    }
}

/// How a prior's start value was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriorStart {
    /// The prior's mean.
    Mean,
    /// The prior's mode (it has no mean).
    Mode,
    /// The median of the prior truncated to the declared range (a truncated prior, or one
    /// with neither a mean nor an interior mode).
    TruncatedMedian,
    /// A point inside the range of an improper flat prior.
    FlatRange,
}

impl PriorStart {
    /// In words, for `gpmc check` and the run's report.
    pub fn describe(self) -> &'static str {
        match self {
            PriorStart::Mean => "prior mean",
            PriorStart::Mode => "prior mode; the prior has no mean",
            PriorStart::TruncatedMedian => {
                "prior's median (truncated to the declared range; it has no mean)"
            }
            PriorStart::FlatRange => {
                "point inside the declared range (the prior is flat): its middle, 1 from a one-sided bound, or 0"
            }
        }
    }
}

/// A hyperparameter's prior: a library law, its parameters, and the range `[lower, upper]` it is
/// truncated to (the declared range intersected with the law's support).
#[derive(Debug, Clone)]
pub struct HyperPrior {
    law: &'static dyn HyperPriorLaw,
    params: Vec<f64>,
    lower: f64,
    upper: f64,
}

impl PartialEq for HyperPrior {
    fn eq(&self, o: &Self) -> bool {
        self.law.name() == o.law.name()
            && self.params == o.params
            && self.lower == o.lower
            && self.upper == o.upper
    }
}

/// The parameters, by name, whose size sets the cost of a law's distribution function.
const SHAPE_NAMES: &[&str] = &["shape", "nu", "alpha", "beta"];
/// The largest such parameter accepted.
const MAX_SHAPE: f64 = 1e6;
/// The largest magnitude of any prior parameter (and the inverse, the smallest positive one).
const MAX_MAGNITUDE: f64 = 1e30;

impl HyperPrior {
    /// The law `name` with `params`, truncated to the declared range `range` (`None` for an
    /// unbounded side). Checks the parameters and that the range keeps some of the law's mass.
    pub fn new(
        name: &str,
        params: Vec<f64>,
        range: (Option<f64>, Option<f64>),
    ) -> Result<HyperPrior, PriorError> {
        let law = lookup(name).ok_or_else(|| PriorError::Unknown(name.to_string()))?;
        if params.len() != law.params().len() {
            return Err(PriorError::Params(format!(
                "`{name}` takes {} parameters, got {}",
                law.params().len(),
                params.len()
            )));
        }
        for (index, (spec, v)) in law.params().iter().zip(&params).enumerate() {
            if !spec.kind.contains(*v) {
                let want = spec.kind.describe();
                let message = format!("the `{}` of `{name}` must be {want}, not {v}", spec.name);
                return Err(PriorError::Param { index, message });
            }
        }
        // Magnitudes beyond 10^±30 mean nothing in a prior and overflow its distribution
        // function (statrs panics on `x · rate = ∞`: a Gamma rate of 1e308, a fuzz find).
        for (index, (spec, v)) in law.params().iter().zip(&params).enumerate() {
            if v.abs() > MAX_MAGNITUDE
                || (spec.kind == Constraint::Positive && *v < 1.0 / MAX_MAGNITUDE)
            {
                let message = format!(
                    "the `{}` of `{name}` is {v:e}; prior parameters are refused beyond 10^±30 (write the scale you mean: such a prior is a point mass or flat)",
                    spec.name
                );
                return Err(PriorError::Param { index, message });
            }
        }
        // Shape-like parameters beyond 10⁶ make the law a point mass in all but name, and its
        // distribution function costs time in proportion to them (statrs' incomplete gamma:
        // a shape of 1.8·10¹⁹ never finished).
        for (index, (spec, v)) in law.params().iter().zip(&params).enumerate() {
            if SHAPE_NAMES.contains(&spec.name) && *v > MAX_SHAPE {
                let message = format!(
                    "the `{}` of `{name}` is {v:e}; shape parameters above 10⁶ are refused (such a prior is a point mass: fix the hyperparameter to a value instead)",
                    spec.name
                );
                return Err(PriorError::Param { index, message });
            }
        }
        law.check(&params).map_err(PriorError::Params)?;
        let (slo, shi) = law.support(&params);
        let lower = range.0.map_or(slo, |l| l.max(slo));
        let upper = range.1.map_or(shi, |h| h.min(shi));
        let p = HyperPrior {
            law,
            params,
            lower,
            upper,
        };
        let range_text = p.range_text();
        if lower >= upper {
            return Err(PriorError::NoMass(format!(
                "`{name}` has support {} but the hyperparameter is declared on {}, which it does not overlap",
                interval(slo, shi),
                interval(range.0.unwrap_or(f64::NEG_INFINITY), range.1.unwrap_or(f64::INFINITY)),
            )));
        }
        if let Some(mass) = p.mass() {
            if mass.is_nan() || mass < 1e-12 {
                return Err(PriorError::NoMass(format!(
                    "`{name}` puts (almost) no probability ({mass:.1e}) on the range {range_text}"
                )));
            }
        }
        Ok(p)
    }

    /// The law.
    pub fn law(&self) -> &'static dyn HyperPriorLaw {
        self.law
    }
    /// The law's name.
    pub fn family(&self) -> &'static str {
        self.law.name()
    }
    /// The parameters, in the law's order.
    pub fn params(&self) -> &[f64] {
        &self.params
    }
    /// Lower end of the range (`−∞` when unbounded).
    pub fn lower(&self) -> f64 {
        self.lower
    }
    /// Upper end of the range (`∞` when unbounded).
    pub fn upper(&self) -> f64 {
        self.upper
    }
    /// Whether the range cuts the law's support.
    pub fn is_truncated(&self) -> bool {
        let (slo, shi) = self.law.support(&self.params);
        self.lower > slo || self.upper < shi
    }
    /// Whether the prior is improper (`flat()`).
    pub fn is_improper(&self) -> bool {
        self.law.cdf(&self.params, 0.0).is_none()
    }
    /// `log p(x)` up to a constant; `−∞` outside the range.
    pub fn log_density(&self, x: f64) -> f64 {
        if x.is_nan() || x < self.lower || x > self.upper {
            return f64::NEG_INFINITY;
        }
        self.law.log_density(&self.params, x)
    }
    /// `d log p(x) / dx` inside the range (NaN outside).
    pub fn d_log_density(&self, x: f64) -> f64 {
        if x.is_nan() || x < self.lower || x > self.upper {
            return f64::NAN;
        }
        self.law.d_log_density(&self.params, x)
    }
    /// The probability the law gives the range (`None` for an improper prior).
    fn mass(&self) -> Option<f64> {
        let hi = self.law.cdf(&self.params, self.upper)?;
        Some(hi - self.law.cdf(&self.params, self.lower)?)
    }
    /// The quantile of the truncated prior at `u ∈ (0, 1)`; for an improper prior, a point of
    /// the range that moves with `u` (test points for certification).
    pub fn quantile(&self, u: f64) -> f64 {
        let (lo, hi) = (self.lower, self.upper);
        let (Some(flo), Some(fhi)) = (
            self.law.cdf(&self.params, lo),
            self.law.cdf(&self.params, hi),
        ) else {
            return match (lo.is_finite(), hi.is_finite()) {
                (true, true) => lo + u * (hi - lo),
                (true, false) => lo + u / (1.0 - u),
                (false, true) => hi - u / (1.0 - u),
                (false, false) => 4.0 * (u - 0.5),
            };
        };
        self.law
            .quantile(&self.params, flo + u * (fhi - flo))
            .clamp(lo, hi)
    }
    /// Where a chain starts: the mean of an untruncated prior that has one, else its interior
    /// mode, else the truncated prior's median; for `flat()`, a point inside the range.
    pub fn start(&self) -> (f64, PriorStart) {
        if self.is_improper() {
            let (lo, hi) = (self.lower, self.upper);
            let v = match (lo.is_finite(), hi.is_finite()) {
                (true, true) => 0.5 * (lo + hi),
                (true, false) => lo + 1.0,
                (false, true) => hi - 1.0,
                (false, false) => 0.0,
            };
            return (v, PriorStart::FlatRange);
        }
        if !self.is_truncated() {
            if let Some(m) = self.law.mean(&self.params) {
                return (m, PriorStart::Mean);
            }
            if let Some(m) = self.law.mode(&self.params) {
                if m > self.lower && m < self.upper {
                    return (m, PriorStart::Mode);
                }
            }
        }
        (self.quantile(0.5), PriorStart::TruncatedMedian)
    }
    /// `(shape, rate)` when the prior is an untruncated Gamma (closed-form conditional).
    pub fn conjugate_gamma(&self) -> Option<(f64, f64)> {
        if self.is_truncated() {
            return None;
        }
        self.law.conjugate_gamma(&self.params)
    }
    /// `[lo, ∞)` and the like.
    pub fn range_text(&self) -> String {
        interval(self.lower, self.upper)
    }
}

fn interval(lo: f64, hi: f64) -> String {
    let lo = if lo.is_finite() {
        format!("[{lo}")
    } else {
        "(−∞".into()
    };
    let hi = if hi.is_finite() {
        format!("{hi}]")
    } else {
        "∞)".into()
    };
    format!("{lo}, {hi}")
}

impl std::fmt::Display for HyperPrior {
    /// `cauchy(mu 0, sigma 5) on [0, ∞)`: the range only where it truncates the law.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let args: Vec<String> = (self.law.params().iter().zip(&self.params))
            .map(|(s, v)| format!("{} {v}", s.name))
            .collect();
        write!(f, "{}({})", self.family(), args.join(", "))?;
        if self.is_truncated()
            || (self.is_improper() && self.lower.is_finite() | self.upper.is_finite())
        {
            write!(f, " on {}", self.range_text())?;
        }
        Ok(())
    }
}

impl Serialize for HyperPrior {
    /// `{"family": "gamma", "shape": 2, "rate": 1, "lower": 0, "upper": null}` (an infinite end
    /// is `null`).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("family", self.family())?;
        for (spec, v) in self.law.params().iter().zip(&self.params) {
            m.serialize_entry(spec.name, v)?;
        }
        let finite = |v: f64| v.is_finite().then_some(v);
        m.serialize_entry("lower", &finite(self.lower))?;
        m.serialize_entry("upper", &finite(self.upper))?;
        m.end()
    }
}
