//! MCMC diagnostics as in Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), "Rank-
//! normalization, folding, and localization": rank-normalised split-R̂, bulk and tail ESS with
//! Geyer's initial monotone sequence (as Stan and ArviZ compute them), MCSE of the mean.

use serde::Serialize;

/// Posterior summary of one scalar quantity over all chains.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Summary {
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub sd: f64,
    /// Median absolute deviation from the median, scaled by 1.4826 to estimate the sd of a
    /// normal (as `stansummary` reports it): robust where the sd is not.
    pub mad: f64,
    /// 5 % quantile.
    pub q5: f64,
    /// Median.
    pub q50: f64,
    /// 95 % quantile.
    pub q95: f64,
    /// Monte Carlo standard error of the mean.
    pub mcse_mean: f64,
    /// Bulk effective sample size.
    pub ess_bulk: f64,
    /// Tail effective sample size.
    pub ess_tail: f64,
    /// Rank-normalised split-R̂.
    pub rhat: f64,
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

fn var(x: &[f64]) -> f64 {
    let m = mean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() as f64 - 1.0)
}

/// Split every chain in two halves (the paper's §4.1).
fn split(chains: &[&[f64]]) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for c in chains {
        let h = c.len() / 2;
        out.push(c[..h].to_vec());
        out.push(c[c.len() - h..].to_vec());
    }
    out
}

/// Quantile by linear interpolation (numpy's default, type 7).
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Inverse standard normal CDF (Acklam's rational approximation, refined by one Newton step).
fn inv_normal(p: f64) -> f64 {
    let a = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    let b = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    let c = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    let d = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let pl = 0.02425;
    let x = if p < pl {
        let q = (-2.0 * p.ln()).sqrt();
        (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
            / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0)
    } else if p <= 1.0 - pl {
        let q = p - 0.5;
        let r = q * q;
        (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
            / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0)
    };
    let e = 0.5 * statrs::function::erf::erfc(-x / std::f64::consts::SQRT_2) - p;
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (x * x / 2.0).exp();
    x - u / (1.0 + x * u / 2.0)
}

/// Rank-normalise all draws jointly: fractional ranks for ties, Blom's offset (eq. 14).
fn rank_normalize(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let mut all: Vec<(f64, usize, usize)> = Vec::new();
    for (c, ch) in chains.iter().enumerate() {
        for (i, v) in ch.iter().enumerate() {
            all.push((*v, c, i));
        }
    }
    // Ties share their average rank, so the order among equal values does not matter.
    all.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let s = all.len() as f64;
    let mut out: Vec<Vec<f64>> = chains.iter().map(|c| vec![0.0; c.len()]).collect();
    let mut k = 0;
    while k < all.len() {
        let mut j = k;
        while j + 1 < all.len() && all[j + 1].0 == all[k].0 {
            j += 1;
        }
        let rank = (k + j) as f64 / 2.0 + 1.0;
        let z = inv_normal((rank - 0.375) / (s + 0.25));
        for t in &all[k..=j] {
            out[t.1][t.2] = z;
        }
        k = j + 1;
    }
    out
}

fn rhat_basic(chains: &[Vec<f64>]) -> f64 {
    let m = chains.len() as f64;
    let n = chains[0].len() as f64;
    let means: Vec<f64> = chains.iter().map(|c| mean(c)).collect();
    let w = chains.iter().map(|c| var(c)).sum::<f64>() / m;
    let b = n * var(&means);
    let vhat = (n - 1.0) / n * w + b / n;
    (vhat / w).sqrt()
}

/// Autocovariance of one demeaned chain at lag `t` (direct: O(n) per lag, and the ESS needs
/// lags only up to where Geyer's sequence stops, not all n).
fn autocov_at(d: &[f64], t: usize) -> f64 {
    let n = d.len();
    d[..n - t]
        .iter()
        .zip(&d[t..])
        .map(|(a, b)| a * b)
        .sum::<f64>()
        / n as f64
}

/// ESS of (already split) chains, Stan's estimator with Geyer's initial monotone sequence.
fn ess_raw(chains: &[Vec<f64>]) -> f64 {
    let m = chains.len();
    let n = chains[0].len();
    if n < 4 {
        return f64::NAN;
    }
    let means: Vec<f64> = chains.iter().map(|c| mean(c)).collect();
    let demeaned: Vec<Vec<f64>> = chains
        .iter()
        .zip(&means)
        .map(|(c, mu)| c.iter().map(|v| v - mu).collect())
        .collect();
    let acov_sum = |t: usize| demeaned.iter().map(|d| autocov_at(d, t)).sum::<f64>();
    let mean_var = acov_sum(0) / m as f64 * n as f64 / (n as f64 - 1.0);
    let var_plus = mean_var * (n as f64 - 1.0) / n as f64 + if m > 1 { var(&means) } else { 0.0 };
    if !(var_plus > 0.0) {
        return f64::NAN;
    }
    let rho = |t: usize| 1.0 - (mean_var - acov_sum(t) / m as f64) / var_plus;
    let mut rho_hat = vec![0.0; n];
    rho_hat[0] = 1.0;
    rho_hat[1] = rho(1);
    let mut t = 1;
    while t + 2 < n {
        let r1 = rho(t + 1);
        let r2 = rho(t + 2);
        if r1 + r2 < 0.0 {
            break;
        }
        rho_hat[t + 1] = r1;
        rho_hat[t + 2] = r2;
        t += 2;
    }
    let max_t = t;
    // Initial monotone sequence.
    let mut k = 1;
    while k + 2 <= max_t {
        if rho_hat[k + 1] + rho_hat[k + 2] > rho_hat[k - 1] + rho_hat[k] {
            rho_hat[k + 1] = (rho_hat[k - 1] + rho_hat[k]) / 2.0;
            rho_hat[k + 2] = rho_hat[k + 1];
        }
        k += 2;
    }
    let total = (m * n) as f64;
    let tau = -1.0
        + 2.0 * rho_hat[..=max_t.min(n - 1)].iter().sum::<f64>()
        + rho_hat.get(max_t + 1).copied().unwrap_or(0.0);
    let tau = tau.max(1.0 / total.log10());
    total / tau
}

fn valid(chains: &[&[f64]]) -> bool {
    !chains.is_empty()
        && chains
            .iter()
            .all(|c| c.len() >= 4 && c.len() == chains[0].len() && c.iter().all(|v| v.is_finite()))
}

fn constant(chains: &[&[f64]]) -> bool {
    let v0 = chains[0][0];
    chains.iter().all(|c| c.iter().all(|v| *v == v0))
}

/// What the bulk and tail ESS, the mean's ESS and R̂ of one quantity share, made once: its split
/// chains, their rank normalisation and all its draws sorted.
struct Split {
    halves: Vec<Vec<f64>>,
    ranked: Vec<Vec<f64>>,
    sorted: Vec<f64>,
}

impl Split {
    /// `None` where the draws are too few, ragged, not finite or constant (every statistic NaN).
    fn of(chains: &[&[f64]]) -> Option<Split> {
        if !valid(chains) || constant(chains) {
            return None;
        }
        let halves = split(chains);
        let ranked = rank_normalize(&halves);
        let mut sorted: Vec<f64> = chains.iter().flat_map(|c| c.iter().copied()).collect();
        sorted.sort_by(f64::total_cmp);
        Some(Split {
            halves,
            ranked,
            sorted,
        })
    }

    /// The larger of bulk and folded (tail) R̂.
    fn rhat(&self) -> f64 {
        let bulk = rhat_basic(&self.ranked);
        let med = quantile(&self.sorted, 0.5);
        let folded: Vec<Vec<f64>> = self
            .halves
            .iter()
            .map(|c| c.iter().map(|v| (v - med).abs()).collect())
            .collect();
        bulk.max(rhat_basic(&rank_normalize(&folded)))
    }

    fn ess_bulk(&self) -> f64 {
        ess_raw(&self.ranked)
    }

    /// The smaller ESS of the 5 % and 95 % quantile indicators.
    fn ess_tail(&self) -> f64 {
        let (q05, q95) = (quantile(&self.sorted, 0.05), quantile(&self.sorted, 0.95));
        let ind = |q: f64, below: bool| -> Vec<Vec<f64>> {
            self.halves
                .iter()
                .map(|c| {
                    c.iter()
                        .map(|v| if (*v <= q) == below { 1.0 } else { 0.0 })
                        .collect()
                })
                .collect()
        };
        ess_raw(&ind(q05, true)).min(ess_raw(&ind(q95, false)))
    }

    fn ess_mean(&self) -> f64 {
        ess_raw(&self.halves)
    }
}

/// Rank-normalised split-R̂: the larger of bulk and folded (tail) R̂.
pub fn split_rhat(chains: &[&[f64]]) -> f64 {
    Split::of(chains).map_or(f64::NAN, |s| s.rhat())
}

/// Bulk ESS: ESS of the rank-normalised split chains.
pub fn ess_bulk(chains: &[&[f64]]) -> f64 {
    Split::of(chains).map_or(f64::NAN, |s| s.ess_bulk())
}

/// Tail ESS: the smaller ESS of the 5 % and 95 % quantile indicators.
pub fn ess_tail(chains: &[&[f64]]) -> f64 {
    Split::of(chains).map_or(f64::NAN, |s| s.ess_tail())
}

/// ESS of the mean (no rank normalisation), for the MCSE of the mean.
pub fn ess_mean(chains: &[&[f64]]) -> f64 {
    Split::of(chains).map_or(f64::NAN, |s| s.ess_mean())
}

/// Summary of one quantity. Draws beyond about 10¹⁵⁴ in magnitude (a prior sd of 10²⁴⁰ the data
/// do not inform) are summarised on a scale of their own: squares would overflow, the sd came
/// out infinite and R-hat NaN. ESS and R-hat do not depend on the scale; the mean, sd, MAD,
/// quantiles and MCSE are scaled back.
pub fn summarize(chains: &[&[f64]]) -> Summary {
    let scale = chains
        .iter()
        .flat_map(|c| c.iter())
        .filter(|v| v.is_finite())
        .fold(0.0f64, |a, v| a.max(v.abs()));
    if scale > 1e150 {
        let scaled: Vec<Vec<f64>> = chains
            .iter()
            .map(|c| c.iter().map(|v| v / scale).collect())
            .collect();
        let refs: Vec<&[f64]> = scaled.iter().map(|c| c.as_slice()).collect();
        let s = summarize_in_scale(&refs);
        return Summary {
            mean: s.mean * scale,
            sd: s.sd * scale,
            mad: s.mad * scale,
            q5: s.q5 * scale,
            q50: s.q50 * scale,
            q95: s.q95 * scale,
            mcse_mean: s.mcse_mean * scale,
            ..s
        };
    }
    summarize_in_scale(chains)
}

/// [`summarize`] of each column (a column: its draws per chain), the columns in parallel —
/// each summary its column's alone, so the same numbers as one at a time, in order.
pub fn summarize_each(columns: &[Vec<&[f64]>]) -> Vec<Summary> {
    use rayon::prelude::*;
    columns.par_iter().map(|chains| summarize(chains)).collect()
}

/// [`summarize`] of draws whose squares do not overflow.
fn summarize_in_scale(chains: &[&[f64]]) -> Summary {
    let all: Vec<f64> = chains.iter().flat_map(|c| c.iter().copied()).collect();
    let (m, sd) = if all.len() > 1 {
        (mean(&all), var(&all).sqrt())
    } else {
        (f64::NAN, f64::NAN)
    };
    // The split chains, their ranks and the sorted draws made once for the four statistics
    // and the quantiles (sorted here only where there are no statistics).
    let split = Split::of(chains);
    let owned;
    let sorted: &[f64] = match &split {
        Some(s) => &s.sorted,
        None => {
            let mut all = all;
            all.sort_by(f64::total_cmp);
            owned = all;
            &owned
        }
    };
    let stat = |f: fn(&Split) -> f64| split.as_ref().map_or(f64::NAN, f);
    let ess_m = stat(Split::ess_mean);
    let median = quantile(sorted, 0.5);
    let mut deviations: Vec<f64> = sorted.iter().map(|v| (v - median).abs()).collect();
    deviations.sort_by(f64::total_cmp);
    Summary {
        mean: m,
        sd,
        mad: 1.4826 * quantile(&deviations, 0.5),
        q5: quantile(sorted, 0.05),
        q50: quantile(sorted, 0.5),
        q95: quantile(sorted, 0.95),
        mcse_mean: sd / ess_m.sqrt(),
        ess_bulk: stat(Split::ess_bulk),
        ess_tail: stat(Split::ess_tail),
        rhat: stat(Split::rhat),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_near_the_largest_double_are_summarised_without_overflow() {
        let a: Vec<f64> = (0..200)
            .map(|i| 1e250 * ((i * 37 % 101) as f64 - 50.0))
            .collect();
        let b: Vec<f64> = (0..200)
            .map(|i| 1e250 * ((i * 53 % 103) as f64 - 51.0))
            .collect();
        let s = summarize(&[&a, &b]);
        let small: Vec<Vec<f64>> = [&a, &b]
            .iter()
            .map(|c| c.iter().map(|v| v / 1e250).collect())
            .collect();
        let t = summarize(&[&small[0], &small[1]]);
        assert!(s.sd.is_finite() && s.rhat.is_finite(), "{s:?}");
        assert!((s.sd / 1e250 - t.sd).abs() < 1e-12 * t.sd);
        assert!((s.mean / 1e250 - t.mean).abs() < 1e-12 * t.sd);
        assert_eq!((s.rhat, s.ess_bulk), (t.rhat, t.ess_bulk));
    }
}
