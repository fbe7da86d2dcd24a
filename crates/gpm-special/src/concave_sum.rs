//! `log Σ e^(g)` over the counts `n = 0, 1, 2, …` or `log ∫ e^(g(t)) dt` over the real line, for
//! a `g` that is concave, at a cost that does not grow with where its mass sits or how wide it is.
//!
//! Both the Poisson / negative-binomial sums of a count's certification (a log pmf plus terms
//! linear in the count) and the mixing integrals `∫ p(ω) e^(−ωs) dω` in `t = log ω` (Gamma,
//! inverse-Gamma, Lévy, GIG, inverse-Gaussian densities are log-concave in `t`) have this form,
//! and fixed grids fail them at the edges of the parameter range: a Poisson rate of 10⁹ needs
//! 10⁹ terms, a Gamma of shape 5·10⁴ is narrower in `t` than a 0.01 grid, one of shape 0.005
//! spreads over hundreds of units of `t`.
//!
//! The mode is found by golden-section search, the half-widths (where `g` drops by 1/2: one sd
//! of a normal) by doubling, and the sum runs outward from the mode until the tail is certified
//! negligible: for concave `g` the ratio `r` of consecutive terms only falls, so all terms
//! beyond one are at most it times `r/(1 − r)`. Where the terms are spread over more than
//! [`MAX_EXACT_TERMS`] integers, or on the real line, the sum is the trapezoid rule with a step
//! of an eighth of the narrower half-width: for a summand smooth on the scale of its spread `w`
//! the sum over any grid of step `h` equals the integral to within `e^(−2π²w²/h²)` (Poisson
//! summation), far below rounding here — and the integer sum is the same integral.

use crate::elementary::log_sum_exp;

/// Where the variable lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lattice {
    /// The counts `0, 1, 2, …` (a sum).
    Counts,
    /// The real line (an integral), within `|t| ≤` [`REAL_LIMIT`].
    Reals,
}

/// A count's sum spreading over more integers than this (and clear of `n = 0`) is integrated
/// by the trapezoid rule instead of added term by term.
pub const MAX_EXACT_TERMS: usize = 2_000;

/// The most terms any sum evaluates (reached only by a sum against `n = 0` spread over
/// millions of counts: a negative binomial of tiny shape and huge mean).
pub const MAX_TERMS: usize = 2_000_000;

/// How far below the mode's term (in log) a certified tail bound must fall before a sum stops.
pub const TAIL_LOG_TOLERANCE: f64 = 40.0;

/// On the real line, the range searched: `t = log ω` with `ω` a normal double.
pub const REAL_LIMIT: f64 = 700.0;

/// `log Σₙ e^(g(n))` ([`Lattice::Counts`]) or `log ∫ e^(g(t)) dt` ([`Lattice::Reals`]) for a
/// concave `g` (`−∞` allowed). `None` when `g` fails to evaluate, the mass is not within the
/// searched range, or the sum needs more than [`MAX_TERMS`] terms.
pub fn log_sum_concave(g: &dyn Fn(f64) -> Option<f64>, lattice: Lattice) -> Option<f64> {
    let (lo, hi) = bracket(g, lattice)?;
    let (mode, g_mode) = golden_max(g, lo, hi, lattice)?;
    if !g_mode.is_finite() {
        return None;
    }
    let floor = match lattice {
        Lattice::Counts => 0.0,
        Lattice::Reals => -REAL_LIMIT,
    };
    let first = match lattice {
        Lattice::Counts => 1.0,
        Lattice::Reals => 1e-4,
    };
    // Half-widths: how far on each side `g` takes to drop by 1/2.
    let width = |dir: f64| -> Option<f64> {
        let mut s = first;
        loop {
            let at = mode + dir * s;
            if at < floor || at.abs() > 1e300 || g_mode - g(at)? >= 0.5 {
                return Some(s);
            }
            s *= 2.0;
        }
    };
    let (w_left, w_right) = (width(-1.0)?, width(1.0)?);
    let smooth = match lattice {
        Lattice::Reals => true,
        Lattice::Counts => {
            12.0 * (w_left + w_right) > MAX_EXACT_TERMS as f64 && mode - 12.0 * w_left > 0.0
        }
    };
    let h = if smooth {
        w_left.min(w_right) / 8.0
    } else {
        1.0
    };
    let mut terms = vec![g_mode];
    for side in [1.0, -1.0] {
        let mut prev = g_mode;
        let mut k = 1.0;
        loop {
            let at = mode + side * k * h;
            if at < floor {
                if lattice == Lattice::Reals {
                    // Mass left below the searched range: not certified.
                    return None;
                }
                break;
            }
            if lattice == Lattice::Reals && at > REAL_LIMIT {
                return None;
            }
            let v = g(at)?;
            if v == f64::NEG_INFINITY {
                break;
            }
            if v.is_nan() {
                return None;
            }
            terms.push(v);
            let log_r = v - prev;
            if log_r < 0.0 {
                // Everything beyond `at` is at most e^v r/(1 − r).
                let tail = v + log_r - (-log_r.exp()).ln_1p();
                if tail < g_mode - TAIL_LOG_TOLERANCE {
                    break;
                }
            }
            if terms.len() > MAX_TERMS {
                return None;
            }
            prev = v;
            k += 1.0;
        }
    }
    Some(log_sum_exp(&terms) + h.ln())
}

/// An interval holding the maximiser: doubling away from the start until `g` falls.
fn bracket(g: &dyn Fn(f64) -> Option<f64>, lattice: Lattice) -> Option<(f64, f64)> {
    match lattice {
        Lattice::Counts => {
            let mut top = 1.0f64;
            while g(2.0 * top)? > g(top)? {
                top *= 2.0;
                if top > 1e300 {
                    return None;
                }
            }
            Some((0.0, 2.0 * top))
        }
        Lattice::Reals => {
            let at0 = g(0.0)?;
            let dir = if g(1e-3)? >= at0 { 1.0 } else { -1.0 };
            let (mut near, mut far) = (0.0f64, dir);
            let mut best = at0;
            loop {
                let v = g(far)?;
                // Stop unless `v` is larger (a NaN stops too).
                if v.partial_cmp(&best) != Some(std::cmp::Ordering::Greater) {
                    break;
                }
                best = v;
                near = far;
                far *= 2.0;
                if far.abs() > REAL_LIMIT {
                    return None;
                }
            }
            // The maximiser is within (near − |near|, far) in the search direction.
            let back = near - dir * near.abs().max(1.0);
            Some(if dir > 0.0 { (back, far) } else { (far, back) })
        }
    }
}

/// The maximiser of a concave `g` on `[lo, hi]` (an integer for [`Lattice::Counts`]), and `g`
/// there.
fn golden_max(
    g: &dyn Fn(f64) -> Option<f64>,
    mut lo: f64,
    mut hi: f64,
    lattice: Lattice,
) -> Option<(f64, f64)> {
    let phi = 0.5 * (5f64.sqrt() - 1.0);
    let resolution = match lattice {
        Lattice::Counts => 0.5,
        Lattice::Reals => 1e-9 * (1.0 + lo.abs().max(hi.abs())),
    };
    let mut c = hi - phi * (hi - lo);
    let mut d = lo + phi * (hi - lo);
    let (mut gc, mut gd) = (g(c)?, g(d)?);
    for _ in 0..2000 {
        if hi - lo <= resolution {
            break;
        }
        if gc >= gd {
            hi = d;
            d = c;
            gd = gc;
            c = hi - phi * (hi - lo);
            gc = g(c)?;
        } else {
            lo = c;
            c = d;
            gc = gd;
            d = lo + phi * (hi - lo);
            gd = g(d)?;
        }
    }
    match lattice {
        Lattice::Reals => {
            let m = 0.5 * (lo + hi);
            Some((m, g(m)?))
        }
        Lattice::Counts => {
            let mut best = (lo.floor(), g(lo.floor())?);
            for cand in [lo.floor() + 1.0, hi.floor(), hi.ceil()] {
                let v = g(cand)?;
                if v > best.1 {
                    best = (cand, v);
                }
            }
            Some(best)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elementary::lgamma;

    fn poisson(rate: f64) -> impl Fn(f64) -> Option<f64> {
        move |n: f64| Some(n * rate.ln() - rate - lgamma(n + 1.0))
    }

    #[test]
    fn a_poisson_pmf_sums_to_one_at_every_scale() {
        for rate in [1e-3f64, 0.7, 5.0, 60.0, 3e4, 1e7, 1e12] {
            let v = log_sum_concave(&poisson(rate), Lattice::Counts).unwrap();
            // The log pmf itself carries rounding of order ε·rate·log(rate).
            let tol = 1e-12 + 1e-15 * rate * rate.ln().abs();
            assert!(v.abs() < tol, "rate {rate}: log Σ = {v:e}");
        }
    }

    #[test]
    fn a_tilted_poisson_sum_is_its_moment_generating_function() {
        // Σ Po(n | κ) e^(nx) = e^(κ(e^x − 1)), with the mode far from κ.
        for (kappa, x) in [(50.0f64, -2.0f64), (1e6, -3.0), (1e9, 0.5)] {
            let g = |n: f64| Some(n * kappa.ln() - kappa - lgamma(n + 1.0) + n * x);
            let v = log_sum_concave(&g, Lattice::Counts).unwrap();
            let want: f64 = kappa * x.exp_m1();
            assert!(
                (v - want).abs() < 1e-12 * want.abs().max(1.0) + 1e-10,
                "κ {kappa}, x {x}: {v} vs {want}"
            );
        }
    }

    #[test]
    fn gamma_laplace_transforms_in_log_space_at_extreme_shapes() {
        // ∫ Gamma(ω | a, b) e^(−ωs) dω = (1 + s/b)^(−a), integrated in t = log ω.
        for (a, b, s) in [
            (0.1f64, 0.1f64, 0.7f64),
            (5e4, 5e4, 0.3),
            (2.0, 1e16, 3.0),
            (1.5, 2.0, 0.0),
        ] {
            let g = |t: f64| {
                let w = t.exp();
                Some(a * b.ln() - lgamma(a) + (a - 1.0) * t - b * w - s * w + t)
            };
            let v = log_sum_concave(&g, Lattice::Reals).unwrap();
            let want = -a * (s / b).ln_1p();
            assert!(
                (v - want).abs() < 1e-10,
                "a {a}, b {b}, s {s}: {v} vs {want}"
            );
        }
    }

    #[test]
    fn mass_outside_the_range_is_refused() {
        // A density in t that keeps rising past t = 700, and a Gamma of shape 0.001 whose
        // mass reaches below ω = e^(−700).
        assert!(log_sum_concave(&|t: f64| Some(t), Lattice::Reals).is_none());
        let a = 0.001f64;
        let g = |t: f64| Some(a * a.ln() - lgamma(a) + a * t - a * t.exp());
        assert!(log_sum_concave(&g, Lattice::Reals).is_none());
        assert!(log_sum_concave(&|_| None, Lattice::Counts).is_none());
    }
}
