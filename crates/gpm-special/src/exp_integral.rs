//! The exponential integrals `E_n(x) = ∫₁^∞ e^(−xt) t^(−n) dt` (n = 1, 2), scaled by `e^x` so
//! that they neither under- nor overflow: the horseshoe's marginal density is
//! `e^s E₁(s) / (π τ √(2π))` with `s = β²/(2τ²)` (Carvalho, Polson & Scott 2010, Theorem 1),
//! and its mixing law's moments and sampler read `E₁` and `E₂`.

/// Euler–Mascheroni constant.
const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// `e^x E_n(x)` for `x > 1` by the continued fraction of `E_n` (modified Lentz; Numerical
/// Recipes §6.3), which converges in a handful of terms there.
fn scaled_continued_fraction(n: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut b = x + n;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..10_000 {
        let i = i as f64;
        let an = -i * (n - 1.0 + i);
        b += 2.0;
        d = 1.0 / (an * d + b);
        c = b + an / c;
        let del = c * d;
        h *= del;
        if (del - 1.0).abs() < 1e-16 {
            break;
        }
    }
    h
}

/// `E₁(x)` for `0 < x ≤ 1` by its power series `−γ − ln x − Σ_k (−x)^k / (k·k!)`.
fn e1_series(x: f64) -> f64 {
    let mut sum = 0.0;
    let mut term = 1.0;
    for k in 1..60 {
        let k = k as f64;
        term *= -x / k;
        let add = term / k;
        sum += add;
        if add.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    -EULER_GAMMA - x.ln() - sum
}

/// `e^x E₁(x)` for `x > 0` (`+∞` at 0, NaN below): `≈ −ln x − γ` near 0, `≈ 1/x` for large `x`.
pub fn e1_scaled(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        f64::NAN
    } else if x == 0.0 {
        f64::INFINITY
    } else if x <= 1.0 {
        x.exp() * e1_series(x)
    } else if x.is_infinite() {
        0.0
    } else {
        scaled_continued_fraction(1.0, x)
    }
}

/// `e^x E₂(x) = 1 − x e^x E₁(x)` for `x ≥ 0`, without the cancellation of that form for
/// large `x` (the continued fraction there).
pub fn e2_scaled(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        f64::NAN
    } else if x == 0.0 {
        1.0
    } else if x <= 1.0 {
        1.0 - x * e1_scaled(x)
    } else if x.is_infinite() {
        0.0
    } else {
        scaled_continued_fraction(2.0, x)
    }
}

/// `log(e^x E₁(x))`: the log of the horseshoe's marginal kernel at `x = β²/(2τ²)`.
pub fn log_e1_scaled(x: f64) -> f64 {
    e1_scaled(x).ln()
}

/// `log E₁(x)`, finite for every finite `x > 0`.
pub fn log_e1(x: f64) -> f64 {
    log_e1_scaled(x) - x
}

/// The `x > t` with `E₁(x) = e^(log_ratio) E₁(t)` (`log_ratio ≤ 0`): the inverse of the
/// survival function of the law `∝ e^(−x)/x` on `(t, ∞)`, by Newton's method on `log E₁` in
/// `log x`, safeguarded by bisection inside a bracket.
pub fn e1_inverse_from(t: f64, log_ratio: f64) -> f64 {
    if !(t > 0.0 && t.is_finite() && log_ratio <= 0.0) {
        return f64::NAN;
    }
    let target = log_e1(t) + log_ratio;
    let g = |y: f64| log_e1(y.exp()) - target;
    // Bracket in y = ln x: g(lo) ≥ 0 ≥ g(hi); log E₁ falls at least like −x − ln x.
    let lo0 = t.ln();
    let (mut lo, mut hi) = (lo0, lo0 + 1.0);
    while g(hi) > 0.0 {
        lo = hi;
        hi += 1.0 + (hi - lo0);
    }
    // `e^x E₁(x)` once per step gives both g and its slope,
    // d/dy log E₁(e^y) = −x e^(−x) / E₁(x) = −1 / (e^x E₁(x)).
    let g_and_slope = |y: f64| {
        let x = y.exp();
        let scaled = e1_scaled(x);
        (scaled.ln() - x - target, -1.0 / scaled)
    };
    let stop = crate::root::Stop {
        f_tol: 1e-15,
        x_tol: 1e-15,
        relative_to_hi: false,
        max_steps: 200,
        x_max: f64::INFINITY,
    };
    let y = crate::root::newton(g_and_slope, (lo, hi), 0.5 * (lo + hi), false, stop);
    y.exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tabulated values (Abramowitz & Stegun table 5.1; E₁(1) = 0.219383934395520).
    #[test]
    fn e1_matches_tables() {
        let e1 = |x: f64| e1_scaled(x) * (-x).exp();
        for (x, want) in [
            (0.01, 4.037_929_576_538_113),
            (0.5, 0.559_773_594_776_160_8),
            (1.0, 0.219_383_934_395_520_3),
            (2.0, 0.048_900_510_708_061_1),
            (10.0, 4.156_968_929_685_324e-6),
        ] {
            assert!((e1(x) - want).abs() < 1e-13 * want, "E1({x}) = {}", e1(x));
        }
        // Both sides of the switch at x = 1 agree.
        let a = 1.0f64;
        let series = a.exp() * e1_series(a);
        assert!((series - scaled_continued_fraction(1.0, a)).abs() < 1e-14);
        // Large x: e^x E₁(x) = 1/x (1 − 1/x + 2/x² − ...).
        let x = 1e6;
        assert!((e1_scaled(x) * x - (1.0 - 1.0 / x + 2.0 / (x * x))).abs() < 1e-15);
    }

    #[test]
    fn e2_is_the_recurrence_without_cancellation() {
        for x in [0.001, 0.3, 1.0, 1.5, 4.0, 30.0] {
            let direct = 1.0 - x * e1_scaled(x);
            assert!((e2_scaled(x) - direct).abs() < 1e-12, "{x}");
        }
        // Large x: e^x E₂(x) = 1/x (1 − 2/x + 6/x² ...), where 1 − x e^x E₁ loses every digit.
        let x = 1e7;
        assert!((e2_scaled(x) * x - (1.0 - 2.0 / x)).abs() < 1e-12);
    }

    #[test]
    fn the_inverse_inverts() {
        for t in [1e-9, 1e-3, 0.4, 1.0, 7.0, 300.0] {
            for lr in [-1e-6, -0.1, -1.0, -5.0, -40.0] {
                let x = e1_inverse_from(t, lr);
                assert!(x >= t, "{t} {lr}");
                let back = log_e1(x) - log_e1(t);
                assert!(
                    (back - lr).abs() < 1e-10 * (1.0 + lr.abs()),
                    "{t} {lr}: {back}"
                );
            }
        }
    }
}
