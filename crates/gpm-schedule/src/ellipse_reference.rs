//! The Gaussian whose ellipses a GP block's marginal elliptical steps follow
//! ([`crate::steps::GibbsStep::MarginalElliptical`]): a value of the schedule that the steps carry and
//! the marginal-elliptical planner chooses, in a file of its own so that neither imports the
//! other.

use serde::Serialize;

/// The Gaussian whose ellipses the marginal elliptical steps follow.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "reference", rename_all = "snake_case")]
pub enum EllipseReference {
    /// The block's GP prior `N(μ₀, K)`: the likelihood sliced is the factors' alone.
    Prior,
    /// A Gaussian `N(m, c²Σ)` fitted to each column's posterior during warm-up (generalised
    /// elliptical slice sampling, Nishihara, Murray & Adams 2014): `m` the mean of the sweep's
    /// conditional means `E[f | ω]` over a window, `Σ = (K⁻¹ + diag ā)⁻¹` the conditional
    /// covariance at the window's mean curvature, refitted in doubling windows
    /// ([`crate::slice_scheme::SliceScheme::window_ends`]) and frozen when warm-up ends; the likelihood
    /// sliced is `N(f | μ₀, K) Π p(y | f) / N(f | m, c²Σ)`. Before the first window ends, the
    /// prior's ellipses.
    Adapted {
        /// `c`: the reference's sds are the fitted ones times `c`.
        inflation: f64,
        /// Sweeps before the first fit.
        first_window: usize,
    },
}

impl EllipseReference {
    /// The reference of every marginal elliptical step (measured: docs/inference.md).
    pub fn adapted() -> Self {
        EllipseReference::Adapted {
            inflation: ADAPTED_INFLATION,
            first_window: 25,
        }
    }

    /// For people: the `gpmc check` text.
    pub fn describe(&self) -> String {
        match *self {
            EllipseReference::Prior => "its GP prior's ellipses".into(),
            EllipseReference::Adapted {
                inflation,
                first_window,
            } => format!(
                "ellipses of a Gaussian fitted to its posterior during warm-up (the mean of the \
                 conditional means, the conditional covariance at the mean curvature{}; refitted \
                 in doubling windows from sweep {first_window}, frozen after warm-up; the \
                 prior's before)",
                if inflation == 1.0 {
                    String::new()
                } else {
                    format!(", sds times {inflation}")
                }
            ),
        }
    }
}

/// `c` of [`EllipseReference::Adapted`]: measured 1 / 1.3 / 1.6 on the bench's GP classifier
/// (155–250 / 134–164 / 127–146 min-ESS per second, seeds 2–4) and Poisson GP (1 814–1 963 /
/// 1 604–1 699 / 1 068–1 368): a wider ellipse only shrinks more.
pub const ADAPTED_INFLATION: f64 = 1.0;
