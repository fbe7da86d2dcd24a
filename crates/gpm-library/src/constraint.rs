//! What values a parameter may take — NumPyro's `constraints`, one type for every registry:
//! a likelihood's parameters (`sigma` of `normal` is positive), a kernel's (`gamma` of
//! `gamma_exponential` is in `(0, 2]`), a hyperparameter prior's. The lowering checks a literal
//! against it, and a hyperparameter written as the parameter by the values it can take (its
//! fixed value, or its declared range cut to its prior's support), so that a model that could
//! hand a law a parameter outside its domain is refused before anything runs.

/// The values a parameter may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Constraint {
    /// Any finite number (a location).
    Real,
    /// A finite number `> 0` (a scale, shape, rate or degrees of freedom).
    Positive,
    /// `lo < x < hi`, or `lo < x ≤ hi` when `closed_hi`.
    Interval {
        /// The lower end (excluded).
        lo: f64,
        /// The upper end.
        hi: f64,
        /// Whether `hi` itself is allowed.
        closed_hi: bool,
    },
}

impl Constraint {
    /// `lo < x ≤ hi`.
    pub const fn half_open(lo: f64, hi: f64) -> Constraint {
        Constraint::Interval {
            lo,
            hi,
            closed_hi: true,
        }
    }

    /// The lower and upper ends (infinite where unbounded).
    pub fn ends(self) -> (f64, f64) {
        match self {
            Constraint::Real => (f64::NEG_INFINITY, f64::INFINITY),
            Constraint::Positive => (0.0, f64::INFINITY),
            Constraint::Interval { lo, hi, .. } => (lo, hi),
        }
    }

    /// Whether `x` is allowed.
    pub fn contains(self, x: f64) -> bool {
        if !x.is_finite() {
            return false;
        }
        match self {
            Constraint::Real => true,
            Constraint::Positive => x > 0.0,
            Constraint::Interval { lo, hi, closed_hi } => {
                x > lo && (x < hi || closed_hi && x == hi)
            }
        }
    }

    /// Whether every value strictly inside `(lower, upper)` is allowed (a hyperparameter's
    /// declared range, or its prior's support cut to it; `None` is unbounded).
    pub fn admits_range(self, lower: Option<f64>, upper: Option<f64>) -> bool {
        let (lo, hi) = self.ends();
        lower.unwrap_or(f64::NEG_INFINITY) >= lo && upper.unwrap_or(f64::INFINITY) <= hi
    }

    /// In words, for messages: `positive`, `in (0, 2]`.
    pub fn describe(self) -> String {
        match self {
            Constraint::Real => "finite".into(),
            Constraint::Positive => "positive".into(),
            Constraint::Interval { lo, hi, closed_hi } => {
                format!("in ({lo}, {hi}{}", if closed_hi { "]" } else { ")" })
            }
        }
    }

    /// The range a hyperparameter declared with it must have, as written in a `hyper` block
    /// (`in 0..`, `in 0..2`); `None` for [`Constraint::Real`].
    pub fn declaration(self) -> Option<String> {
        match self {
            Constraint::Real => None,
            Constraint::Positive => Some("in 0..".into()),
            Constraint::Interval { lo, hi, .. } => Some(format!("in {lo}..{hi}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_are_in_or_out_as_declared() {
        let g = Constraint::half_open(0.0, 2.0);
        assert!(g.contains(2.0) && g.contains(1e-9) && !g.contains(0.0) && !g.contains(2.0001));
        let open = Constraint::Interval {
            lo: 0.0,
            hi: 1.0,
            closed_hi: false,
        };
        assert!(!open.contains(1.0) && open.contains(0.5));
        assert!(!Constraint::Positive.contains(0.0) && Constraint::Positive.contains(1e-300));
        assert!(!Constraint::Real.contains(f64::NAN) && !Constraint::Real.contains(f64::INFINITY));
        assert_eq!(g.describe(), "in (0, 2]");
        assert_eq!(open.describe(), "in (0, 1)");
    }

    #[test]
    fn a_range_is_admitted_only_inside() {
        let g = Constraint::half_open(0.0, 2.0);
        assert!(g.admits_range(Some(0.0), Some(2.0)));
        assert!(g.admits_range(Some(0.5), Some(1.0)));
        assert!(!g.admits_range(Some(0.0), None));
        assert!(!g.admits_range(None, Some(2.0)));
        assert!(Constraint::Positive.admits_range(Some(0.0), None));
        assert!(!Constraint::Positive.admits_range(Some(-1.0), Some(3.0)));
        assert!(Constraint::Real.admits_range(None, None));
        assert_eq!(g.declaration().as_deref(), Some("in 0..2"));
    }
}
