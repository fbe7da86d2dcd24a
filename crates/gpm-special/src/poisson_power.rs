//! `Σ_k k^j p_k(λ)^b`, the Poisson mass raised to a power: the integral `∫ p(y | θ)^(1+β) dy` of
//! the robust (β/γ-divergence) Poisson likelihood (`j = 0`, `b = 1 + β`) and the moments its
//! derivatives need, `d/dλ S_j = b (S_{j+1}/λ − S_j)` (from `d/dλ p_k = p_k (k/λ − 1)`).

/// Relative size of the neglected tails.
const TAIL: f64 = 1e-17;

/// Above this rate the sum is an integral (see [`by_quadrature`]).
const LARGE_RATE: f64 = 1e4;

/// `S_j(λ, b) = Σ_{k ≥ 0} k^j p_k^b`, `p_k = e^{−λ} λ^k / k!`, for an integer `j ≥ 0`, `λ > 0`
/// and `b > 0`; NaN outside that domain.
///
/// Summed outwards from the mode `⌊λ⌋` in the scale of the mode's term (so nothing over- or
/// underflows at any rate), each side stopped when a geometric bound on everything beyond is
/// below `1e-17` of the sum: past the mode the ratio of consecutive terms,
/// `(λ/(k+1))^b ((k+1)/k)^j`, decreases in `k`, and below it `(k/λ)^b ((k−1)/k)^j` decreases as `k`
/// falls, so once a ratio `r` is below one the rest is at most `term · r/(1−r)`. The work is
/// about `2·√(80 λ / b)` terms: a few dozen at everyday rates, about 1800 at `λ = 10⁴`; above
/// that a quadrature of a hundred-odd points at any rate.
pub fn poisson_power_moment(j: f64, rate: f64, b: f64) -> f64 {
    if !(rate > 0.0 && rate.is_finite() && b > 0.0 && b.is_finite())
        || !(j >= 0.0 && j.fract() == 0.0 && j <= 16.0)
    {
        return f64::NAN;
    }
    if rate > LARGE_RATE {
        return by_quadrature(j, rate, b);
    }
    let log_rate = rate.ln();
    let mode = rate.floor();
    // log of the mode's term: b (m log λ − λ − log m!) + j log m.
    let log_term = |k: f64| {
        let power = if j == 0.0 { 0.0 } else { j * k.ln() };
        b * (k * log_rate - rate - crate::elementary::lgamma(k + 1.0)) + power
    };
    // Scale by the mode's term of p^b alone (k^j may be 0 at k = 0, j > 0).
    let scale = b * log_mass_at_mode(mode, rate);
    // Only for the first term past k = 0 when the mode is 0 (rates below one): no cancellation.
    let term_at = |k: f64| (log_term(k) - scale).exp();
    // The mode's term relative to the scale is m^j (0 for m = 0 < j).
    let at_mode = mode.powf(j);
    let mut sum = at_mode;
    // Upwards: term_{k+1} = term_k (λ/(k+1))^b ((k+1)/k)^j; each ratio is used twice, for the
    // next term and for the bound on the tail beyond it.
    let up_ratio = |k: f64| {
        let ln_next = ln_integer(k + 1.0);
        let power = if j == 0.0 {
            0.0
        } else {
            j * (ln_next - ln_integer(k))
        };
        ((log_rate - ln_next) * b + power).exp()
    };
    let (mut k, mut term) = (mode, sum);
    let mut r = up_ratio(k);
    loop {
        // At k = 0 with j > 0 the term is 0^j = 0: restart from the next one.
        term = if term == 0.0 {
            term_at(k + 1.0)
        } else {
            term * r
        };
        k += 1.0;
        sum += term;
        r = up_ratio(k);
        if r < 1.0 && term * r / (1.0 - r) <= TAIL * sum {
            break;
        }
    }
    // Downwards: term_{k−1} = term_k (k/λ)^b ((k−1)/k)^j, to k = 1 (k = 0 adds 0^j when j > 0).
    let down_ratio = |k: f64| {
        let ln_k = ln_integer(k);
        let power = if j == 0.0 {
            0.0
        } else {
            j * (ln_integer(k - 1.0) - ln_k)
        };
        ((ln_k - log_rate) * b + power).exp()
    };
    let last = if j > 0.0 { 1.0 } else { 0.0 };
    let (mut k, mut term) = (mode, at_mode);
    let mut r = if k > last { down_ratio(k) } else { 0.0 };
    while k > last {
        term *= r;
        k -= 1.0;
        sum += term;
        if k <= last {
            break;
        }
        r = down_ratio(k);
        if r < 1.0 && term * r / (1.0 - r) <= TAIL * sum {
            break;
        }
    }
    scale.exp() * sum
}

/// `log k` for a whole `k ≥ 0`, from a table below 2¹⁵ (the direct sums reach `k ≈ 1.4·10⁴`):
/// the logarithms are most of the sums' cost.
fn ln_integer(k: f64) -> f64 {
    static TABLE: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| (0..1usize << 15).map(|k| (k as f64).ln()).collect());
    table.get(k as usize).copied().unwrap_or_else(|| k.ln())
}

/// `S_j` for `λ > 10⁴` as an integral: by Poisson summation `Σ_k f(k) = ∫ f + O(e^{−2π²σ²})` for
/// the smooth bell `f(x) = x^j p_x^b` (`p_x` with `x!` as `Γ(x+1)`) of width `σ = √(λ/b) > 70`,
/// and the trapezoid rule with step `σ/2` integrates it with error `O(e^{−8π²}) ≈ 1e-34` relative,
/// so the work no longer grows with `λ`. `log p_{λ+u}` is taken by Stirling's series in `u`
/// (`−λ g(u/λ) − ½ log 2π(λ+u) − …`, [`relative_entropy_term`]), without the cancellation of its
/// `λ log λ` terms.
fn by_quadrature(j: f64, rate: f64, b: f64) -> f64 {
    let log_f = |u: f64| {
        let x = rate + u;
        b * (-rate * relative_entropy_term(u / rate)
            - 0.5 * (2.0 * std::f64::consts::PI * x).ln()
            - stirling_correction(x))
            + j * x.ln()
    };
    let h = 0.5 * (rate / b).sqrt();
    let scale = log_f(0.0);
    let mut sum = 1.0;
    for side in [1.0, -1.0] {
        for m in 1..400 {
            let u = side * m as f64 * h;
            // The bell is far inside (0, ∞): 40σ < λ for λ > 1600 b.
            let term = (log_f(u) - scale).exp();
            sum += term;
            if term <= TAIL * 1e-1 * sum {
                break;
            }
        }
    }
    h * scale.exp() * sum
}

/// `g(t) = (1+t) log(1+t) − t`, so that `−(λ+u) log(1+u/λ) + u = −λ g(u/λ)`: by its series
/// `Σ_{n≥2} (−t)^n / (n(n−1))` for small `t`, where the direct form would cancel to nothing.
fn relative_entropy_term(t: f64) -> f64 {
    if t.abs() > 0.05 {
        return (1.0 + t) * t.ln_1p() - t;
    }
    // 0.05^16 / 240 < 1e-22: sixteen terms are plenty.
    let (mut power, mut sum) = (t * t, 0.0);
    for n in 2..=16 {
        let n = n as f64;
        sum += power / (n * (n - 1.0));
        power *= -t;
    }
    sum
}

/// `log x! − (x log x − x + ½ log 2πx)` for `x ≥ 30`, Stirling's series to `x⁻⁷` (next term below
/// 1e-16 there).
fn stirling_correction(x: f64) -> f64 {
    let (i1, i2) = (1.0 / x, 1.0 / (x * x));
    i1 * (1.0 / 12.0 - i2 * (1.0 / 360.0 - i2 * (1.0 / 1260.0 - i2 / 1680.0)))
}

/// `log p_m(λ)` at `m = ⌊λ⌋`, without the cancellation of `m log λ − λ − log m!` (each ~`λ log λ`,
/// their sum ~`−½ log 2πλ`): for `m ≥ 30` by Stirling's series, `m log(λ/m) − (λ − m) −
/// ½ log 2πm − 1/(12m) + …`.
fn log_mass_at_mode(m: f64, rate: f64) -> f64 {
    if m < 30.0 {
        return m * rate.ln() - rate - crate::elementary::lgamma(m + 1.0);
    }
    let delta = rate - m;
    m * (delta / m).ln_1p()
        - delta
        - 0.5 * (2.0 * std::f64::consts::PI * m).ln()
        - stirling_correction(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain sum of every term to far past the mass, in log space term by term.
    fn brute(j: f64, rate: f64, b: f64) -> f64 {
        let top = (rate + 60.0 * rate.sqrt() + 200.0) as usize;
        (0..=top)
            .map(|k| {
                let k = k as f64;
                let lp = k * rate.ln() - rate - crate::elementary::lgamma(k + 1.0);
                k.powf(j) * (b * lp).exp()
            })
            .sum()
    }

    #[test]
    fn matches_the_plain_sum_at_small_and_large_rates() {
        for rate in [1e-3, 0.3, 1.0, 2.5, 17.0, 240.0, 5_000.0, 80_000.0] {
            for b in [0.3, 1.0, 1.2, 2.0] {
                for j in [0.0, 1.0, 2.0, 3.0] {
                    let (got, want) = (poisson_power_moment(j, rate, b), brute(j, rate, b));
                    // The plain sum's own error: `lgamma` to ~1e-16 relative of `λ log λ`,
                    // cancelled down to a log-term of order one.
                    let tol = 1e-12 + 4e-16 * b * rate * (rate.ln().abs() + 1.0);
                    assert!(
                        (got - want).abs() <= tol * want,
                        "j={j} λ={rate} b={b}: {got} vs {want}"
                    );
                }
            }
        }
    }

    /// b = 1: the Poisson's own normalisation, mean and second moment.
    #[test]
    fn b_one_gives_the_poisson_moments() {
        for rate in [0.01, 1.7, 33.0, 1e4, 1e7] {
            assert!((poisson_power_moment(0.0, rate, 1.0) - 1.0).abs() < 1e-12);
            assert!((poisson_power_moment(1.0, rate, 1.0) / rate - 1.0).abs() < 1e-12);
            let m2 = poisson_power_moment(2.0, rate, 1.0);
            assert!(
                (m2 / (rate + rate * rate) - 1.0).abs() < 1e-11,
                "λ={rate}: {m2}"
            );
        }
    }

    /// The derivative identity the CAS uses: d S_j/dλ = b (S_{j+1}/λ − S_j).
    #[test]
    fn derivative_identity_holds() {
        for (j, rate, b) in [(0.0, 3.3, 1.2), (1.0, 0.7, 1.5), (2.0, 40.0, 1.05)] {
            let h = 1e-5 * rate;
            let fd = (poisson_power_moment(j, rate + h, b) - poisson_power_moment(j, rate - h, b))
                / (2.0 * h);
            let identity = b
                * (poisson_power_moment(j + 1.0, rate, b) / rate
                    - poisson_power_moment(j, rate, b));
            assert!(
                (fd - identity).abs() < 1e-7 * identity.abs().max(1.0),
                "{fd} vs {identity}"
            );
        }
    }

    #[test]
    fn outside_the_domain_is_nan_and_huge_rates_stay_finite() {
        assert!(poisson_power_moment(0.0, -1.0, 1.2).is_nan());
        assert!(poisson_power_moment(0.0, 1.0, 0.0).is_nan());
        assert!(poisson_power_moment(0.5, 1.0, 1.2).is_nan());
        // Either side of the switch to quadrature the two agree.
        for j in [0.0, 1.0, 2.0] {
            let below = poisson_power_moment(j, LARGE_RATE, 1.4);
            let above = by_quadrature(j, LARGE_RATE, 1.4);
            assert!(
                (below / above - 1.0).abs() < 1e-12,
                "j={j}: {below} vs {above}"
            );
        }
        // Astronomically large rates cost a quadrature of a hundred-odd points, finite.
        assert!(poisson_power_moment(0.0, 1e300, 1.2).is_finite());
        // Large rates: the Gaussian limit (2πλ)^(−β/2) (1+β)^(−1/2) to O(1/λ).
        let (rate, b) = (1e8, 1.3);
        let gauss = (2.0 * std::f64::consts::PI * rate).powf(-(b - 1.0) / 2.0) / b.sqrt();
        let got = poisson_power_moment(0.0, rate, b);
        assert!((got / gauss - 1.0).abs() < 1e-6, "{got} vs {gauss}");
    }
}
