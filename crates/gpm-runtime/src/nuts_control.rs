//! NUTS's user-facing controls under Stan's names (`adapt_delta`, `max_treedepth`), read by
//! the run settings ([`crate::gibbs::GibbsConfig`]) and applied by [`crate::nuts`]; in a file
//! of their own so that neither of those imports the other for them.

/// The largest tree depth unless the run says otherwise (Stan's default: at most 2¹⁰ − 1
/// leapfrog steps a draw).
pub const MAX_DEPTH: u64 = 10;

/// The mass matrix warm-up adapts (Stan's `metric`, nutpie's `low_rank_modified_mass_matrix`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Metric {
    /// A diagonal mass matrix from the draws' variances (Stan's `diag_e`, the default).
    #[default]
    Diag,
    /// The diagonal times a low-rank correction along the directions where the draws' and the
    /// gradients' covariances disagree most (nutpie's low-rank modified mass matrix, Seyboldt
    /// et al. 2024): what a posterior with strongly correlated parameters (a collinear
    /// regression) needs; each leapfrog step costs O(d·k) more for rank k.
    LowRank,
}

impl Metric {
    /// The metric named `name` (`diag`, `low-rank`), or what the names are.
    pub fn parse(name: &str) -> Result<Metric, String> {
        match name {
            "diag" | "diag_e" => Ok(Metric::Diag),
            "low-rank" | "low_rank" => Ok(Metric::LowRank),
            other => Err(format!(
                "unknown metric `{other}`: use `diag` (a diagonal mass matrix, the default) or \
                 `low-rank` (diagonal plus a low-rank correction, for correlated parameters)"
            )),
        }
    }
}

/// The user's control of NUTS, under Stan's names (`adapt_delta`, `max_treedepth`): a higher
/// target acceptance makes the adapted step smaller (fewer divergences on hard curvature), a
/// deeper tree lets a draw travel further in a long, narrow posterior; the metric decides
/// whether warm-up learns correlations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NutsControl {
    /// The target mean acceptance probability of warm-up's step-size adaptation, in (0, 1).
    pub adapt_delta: f64,
    /// The largest tree depth: at most 2^depth − 1 leapfrog steps a draw.
    pub max_depth: u64,
    /// The mass matrix adapted in warm-up.
    pub metric: Metric,
}

/// The deepest tree a run may ask for (2³⁰ leapfrog steps a draw is already days).
pub const MAX_TREEDEPTH: u64 = 30;

impl NutsControl {
    /// A control with Stan's defaults where `None`; a value out of range is refused with
    /// what is allowed (`adapt_delta` in (0, 1), `max_treedepth` from 1 to [`MAX_TREEDEPTH`]).
    pub fn new(adapt_delta: Option<f64>, max_treedepth: Option<u64>) -> Result<Self, String> {
        let default = NutsControl::default();
        let adapt_delta = adapt_delta.unwrap_or(default.adapt_delta);
        if !(adapt_delta > 0.0 && adapt_delta < 1.0) {
            return Err(format!("adapt_delta must be in (0, 1), got {adapt_delta}"));
        }
        let max_depth = max_treedepth.unwrap_or(default.max_depth);
        if !(1..=MAX_TREEDEPTH).contains(&max_depth) {
            return Err(format!(
                "max_treedepth must be from 1 to {MAX_TREEDEPTH}, got {max_depth}"
            ));
        }
        Ok(NutsControl {
            adapt_delta,
            max_depth,
            metric: Metric::Diag,
        })
    }
}

impl NutsControl {
    /// This control with `metric` (named as [`Metric::parse`] reads it; `None`: diagonal).
    pub fn with_metric(self, metric: Option<&str>) -> Result<Self, String> {
        let metric = metric.map(Metric::parse).transpose()?.unwrap_or_default();
        Ok(NutsControl { metric, ..self })
    }
}

impl Default for NutsControl {
    fn default() -> Self {
        NutsControl {
            adapt_delta: 0.8,
            max_depth: MAX_DEPTH,
            metric: Metric::Diag,
        }
    }
}
