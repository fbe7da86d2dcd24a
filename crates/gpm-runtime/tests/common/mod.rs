//! Helpers shared by the runtime's integration tests.

/// Two-sample Kolmogorov-Smirnov statistic.
pub fn ks_two_sample(mut a: Vec<f64>, mut b: Vec<f64>) -> f64 {
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (n, m) = (a.len(), b.len());
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < n && j < m {
        if a[i] <= b[j] {
            i += 1;
        } else {
            j += 1;
        }
        d = d.max((i as f64 / n as f64 - j as f64 / m as f64).abs());
    }
    d
}
