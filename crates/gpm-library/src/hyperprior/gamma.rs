//! `gamma(shape, rate)`: `p(x) ∝ x^(α−1) e^(−βx)` on `(0, ∞)`.
use super::{on_positive, HyperPriorLaw};
use statrs::distribution::{ContinuousCDF, Gamma as G};

/// The Gamma law with shape `α` and rate `β`.
pub struct Gamma;

impl HyperPriorLaw for Gamma {
    fn log_density(&self, p: &[f64], x: f64) -> f64 {
        on_positive(x, false, || (p[0] - 1.0) * x.ln() - p[1] * x)
    }
    fn d_log_density(&self, p: &[f64], x: f64) -> f64 {
        (p[0] - 1.0) / x - p[1]
    }
    fn statrs(&self, p: &[f64]) -> Option<Box<dyn ContinuousCDF<f64, f64>>> {
        Some(Box::new(G::new(p[0], p[1]).ok()?))
    }
    fn quantile(&self, p: &[f64], u: f64) -> f64 {
        unit_quantile(p[0], u) / p[1]
    }
    fn mean(&self, p: &[f64]) -> Option<f64> {
        Some(p[0] / p[1])
    }
    fn mode(&self, p: &[f64]) -> Option<f64> {
        (p[0] > 1.0).then(|| (p[0] - 1.0) / p[1])
    }
    fn conjugate_gamma(&self, p: &[f64]) -> Option<(f64, f64)> {
        Some((p[0], p[1]))
    }
}

/// The `u` quantile of `Gamma(shape, 1)`, for every shape: bisection on `ln x` of the log of
/// the regularised lower incomplete gamma function. statrs's own inverse returns NaN for small
/// shapes (brms' default `gamma(0.01, 0.01)` gave NaN at every `u`, and the probes that
/// certify augmentations then refused the negative binomial's Pólya-Gamma augmentation), and
/// its `gamma_lr` is 0 below about 1e-15, where such a law's quantiles lie (the 10 % one of
/// `Gamma(0.01, 1)` is near 6e-101): the lower tail is summed here in log space. The inverse
/// Gamma and scaled inverse χ² laws read it too.
pub(super) fn unit_quantile(shape: f64, u: f64) -> f64 {
    if !(shape > 0.0 && shape.is_finite() && (0.0..=1.0).contains(&u)) {
        return f64::NAN;
    }
    if u == 0.0 {
        return 0.0;
    }
    if u == 1.0 {
        return f64::INFINITY;
    }
    let ln_u = u.ln();
    let below = |ln_x: f64| ln_lower_regularized(shape, ln_x) < ln_u;
    // ln x from the smallest positive double up to a point past the upper tail.
    let (mut lo, mut hi) = (-745.0f64, (shape + 40.0 * shape.sqrt() + 800.0).ln());
    if below(hi) {
        return hi.exp();
    }
    if !below(lo) {
        return lo.exp();
    }
    // 200 halvings of a range under 760 wide: far below a double's spacing in ln x.
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if below(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)).exp()
}

/// `ln P(a, x)`, the regularised lower incomplete gamma function at `x = e^ln_x`: below
/// `x = a + 1` its series `x^a e^(−x) / Γ(a+1) · Σ_n x^n / ((a+1)…(a+n))` in log space (DLMF
/// 8.7.1), which holds where `P` underflows; above, statrs's `gamma_lr`.
fn ln_lower_regularized(a: f64, ln_x: f64) -> f64 {
    use statrs::function::gamma::{gamma_lr, ln_gamma};
    let x = ln_x.exp();
    if x >= a + 1.0 {
        return gamma_lr(a, x).ln();
    }
    let (mut sum, mut term) = (1.0f64, 1.0f64);
    for n in 1..10_000 {
        term *= x / (a + n as f64);
        sum += term;
        if term < 1e-17 * sum {
            break;
        }
    }
    a * ln_x - x - ln_gamma(a + 1.0) + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::unit_quantile;
    use statrs::function::gamma::gamma_lr;

    #[test]
    fn the_quantile_inverts_the_cdf_at_every_shape() {
        // scipy.stats.gamma.ppf(0.1, 0.01) = 5.660738147062073e-101 (rate 1).
        let q = unit_quantile(0.01, 0.1);
        assert!((q / 5.660738147062073e-101 - 1.0).abs() < 1e-6, "{q:e}");
        for shape in [0.001, 0.01, 0.3, 1.0, 2.5, 40.0, 1e4] {
            for u in [1e-6, 0.1, 0.5, 0.9, 0.999] {
                let q = unit_quantile(shape, u);
                assert!(q.is_finite() && q >= 0.0, "shape {shape}, u {u}: {q}");
                if q < 1e-300 {
                    // Below the doubles (Gamma(0.001)'s 1e-6 quantile is near 1e-6000): the
                    // law's mass below the smallest double already exceeds u.
                    assert!(super::ln_lower_regularized(shape, 1e-300f64.ln()) >= u.ln());
                    continue;
                }
                let back = super::ln_lower_regularized(shape, q.ln()).exp();
                assert!((back - u).abs() < 1e-9 * u, "shape {shape}, u {u}: {back}");
                if q > 1e-12 {
                    // Where statrs's own function holds, it agrees.
                    assert!((gamma_lr(shape, q) - u).abs() < 1e-9, "shape {shape}, u {u}");
                }
            }
        }
        assert!(unit_quantile(-1.0, 0.5).is_nan());
    }
}
